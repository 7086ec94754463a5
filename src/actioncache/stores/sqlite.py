"""The embedded default: one SQLite file in WAL mode.

Why it is shaped this way:

* WAL lets readers run while one writer commits, across processes, and a reader never sees a
  half-written row. The read path is a single autocommit SELECT: no write transaction.
* A connection per thread (sqlite3 objects are not thread-safe to share), re-created after
  ``fork`` (a connection must never cross a fork; the inherited ones are left untouched).
* ``expires_at`` is indexed so cleanup deletes the oldest expired rows without a table scan.
* The connection opens lazily: a missing directory, a locked or garbage file surfaces as a
  :class:`StoreError` on first use, which the cache core turns into a fresh run.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import quote, urlsplit

from .. import _lean, config
from .._json import dumps_compact
from ..errors import StoreURLError
from ._errors import StoreErrors
from ._eviction import eviction_config, eviction_from_query
from ._fork import track_for_fork
from ._sql import Dialect, SQLStore, is_json_number, pushable, sqlite_targets
from ._url import check_fields, file_url, local_file, query_options
from .base import Entry

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key         TEXT PRIMARY KEY,
    value       BLOB NOT NULL,
    metadata    TEXT NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL,
    action      TEXT,
    accessed_at REAL,
    hits        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS entries_expires_at ON entries(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_action ON entries(action) WHERE action IS NOT NULL;
CREATE TABLE IF NOT EXISTS counters (
    name   TEXT PRIMARY KEY,
    value  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    name        TEXT PRIMARY KEY,
    token       TEXT NOT NULL,
    expires_at  REAL NOT NULL
);
"""

_UPSERT = (
    "INSERT INTO entries(key, value, metadata, created_at, expires_at, action, accessed_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value, metadata = excluded.metadata, "
    "created_at = excluded.created_at, expires_at = excluded.expires_at, action = excluded.action, "
    "accessed_at = excluded.accessed_at, hits = 0"
)
# Files created before size limits existed lack the read-tracking columns.
_MIGRATIONS = {
    "accessed_at": "ALTER TABLE entries ADD COLUMN accessed_at REAL",
    "hits": "ALTER TABLE entries ADD COLUMN hits INTEGER NOT NULL DEFAULT 0",
}
# Size limits: the bytes held (key + value + metadata), kept by triggers so a put reads one row
# instead of summing the table; the indexes give the next victim of each policy without a scan.
# Bytes, not characters: length() of TEXT counts characters, so the key and metadata are cast to
# BLOB (a key or metadata in a script of several bytes a character would otherwise count a third
# or a quarter of what it holds).
_ENTRY_BYTES = "length(CAST({0}.key AS BLOB)) + length({0}.value) + length(CAST({0}.metadata AS BLOB))"
_BYTE_TRIGGERS = ("entries_bytes_insert", "entries_bytes_update", "entries_bytes_delete")
# Triggers written by an older version counted characters: dropped with the total they kept, which
# EVICTION_SCHEMA then sums again and counts on with the triggers it makes.
_STALE_TRIGGERS = ("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ("
                   + ", ".join(f"'{name}'" for name in _BYTE_TRIGGERS) + ") AND sql NOT LIKE '%AS BLOB%'")
EVICTION_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS totals (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    f"INSERT OR IGNORE INTO totals(name, value) "
    f"SELECT 'bytes', coalesce(sum({_ENTRY_BYTES.format('entries')}), 0) FROM entries",
    f"CREATE TRIGGER IF NOT EXISTS entries_bytes_insert AFTER INSERT ON entries BEGIN "
    f"UPDATE totals SET value = value + {_ENTRY_BYTES.format('NEW')} WHERE name = 'bytes'; END",
    f"CREATE TRIGGER IF NOT EXISTS entries_bytes_update AFTER UPDATE OF key, value, metadata ON entries BEGIN "
    f"UPDATE totals SET value = value + {_ENTRY_BYTES.format('NEW')} - ({_ENTRY_BYTES.format('OLD')}) "
    f"WHERE name = 'bytes'; END",
    f"CREATE TRIGGER IF NOT EXISTS entries_bytes_delete AFTER DELETE ON entries BEGIN "
    f"UPDATE totals SET value = value - ({_ENTRY_BYTES.format('OLD')}) WHERE name = 'bytes'; END",
    "CREATE INDEX IF NOT EXISTS entries_accessed_at ON entries(accessed_at)",
    "CREATE INDEX IF NOT EXISTS entries_hits ON entries(hits, accessed_at)",
]
# The next victims of each policy (rowid and the bytes each holds), a batch at a time, each through
# an index; length() of a value reads its size from the record header, not the value itself.
_VICTIM_COLUMNS = f"SELECT rowid, {_ENTRY_BYTES.format('entries')} FROM entries"
# The entry just written is never its own write's victim (key <> ?).
_VICTIMS = {
    "lru": [f"{_VICTIM_COLUMNS} WHERE key <> ? ORDER BY accessed_at LIMIT ?"],
    "lfu": [f"{_VICTIM_COLUMNS} WHERE key <> ? ORDER BY hits, accessed_at LIMIT ?"],
    "ttl": [f"{_VICTIM_COLUMNS} WHERE expires_at IS NOT NULL AND key <> ? ORDER BY expires_at LIMIT ?",
            f"{_VICTIM_COLUMNS} WHERE key <> ? ORDER BY accessed_at LIMIT ?"],
}
_TOUCH = "UPDATE entries SET accessed_at = max(coalesce(accessed_at, 0), ?), hits = hits + ? WHERE key = ?"
# Four columns and no JSON function: the metadata text is parsed once per distinct text in
# Python (stores.base.LazyMetadata shares the parse), which costs a hit less than SQLite's
# json_valid/json_extract/json_type on every read.
_GET = "SELECT value, metadata, created_at, expires_at FROM entries WHERE key = ?"
_DELETE_EXPIRED = (
    "DELETE FROM entries WHERE rowid IN "
    "(SELECT rowid FROM entries WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?)"
)

# Metadata fields promoted to an indexed column: invalidation by action must not scan.
_ACTION_FIELD = "_cache_action"


class SQLiteDialect(Dialect):
    """SQLite's SQL, spoken by the SQLite store and (through another driver) the libSQL store."""

    get = _GET
    put = put_tracked = _UPSERT  # a write is also a use (LRU) and starts its read count again (LFU)
    touch = _TOUCH
    delete_expired = _DELETE_EXPIRED
    victims = _VICTIMS
    victim_id = "rowid"
    no_limit = -1
    begin = "BEGIN IMMEDIATE"
    length = "length"
    counters_select = "SELECT name, value FROM {counters} WHERE substr(name, 1, ?) = ?"

    def __init__(self, nul_key_refusal: str | None = None) -> None:
        # libSQL's driver cuts text parameters at NUL, so a key holding one would be written and
        # read as its prefix: another key's entry. There such keys are refused: never stored, never found.
        self.nul_key_refusal = nul_key_refusal
        self.text_holds_nul = nul_key_refusal is None

    def prefix_params(self, prefix: str) -> tuple[Any, ...]:
        return (len(prefix), prefix)

    def put_params(self, entry: Entry, tracked: bool) -> tuple[Any, ...]:
        action = entry.metadata.get(_ACTION_FIELD)
        return (entry.key, sqlite3.Binary(entry.value), dumps_compact(dict(entry.metadata)), entry.created_at,
                entry.expires_at, action if isinstance(action, str) else None, time.time())

    def entry_bytes(self, entry: Entry, params: tuple[Any, ...]) -> int:
        # The key and metadata as UTF-8 bytes, as the triggers count them (not characters).
        return (len(params[0].encode("utf-8", "surrogatepass")) + len(params[1])
                + len(params[2].encode("utf-8", "surrogatepass")))

    def field_clause(self, name: str, wanted: Any) -> tuple[str, list[Any]] | None:
        """The promoted action column, else ``json_extract``."""
        if not pushable(name, wanted):
            return None
        if name == _ACTION_FIELD and isinstance(wanted, str):
            return "action = ?", [wanted]
        if isinstance(wanted, str) or is_json_number(wanted):
            # json_valid first: one row of malformed metadata (a foreign writer) must not fail the query.
            return "CASE WHEN json_valid(metadata) THEN json_extract(metadata, ?) END = ?", ['$."' + name + '"', wanted]
        return None


SQLITE = SQLiteDialect()


def create_schema(conn: Any, eviction: bool) -> None:
    """The tables (and, for a size limit, the byte total's triggers), and the columns a file made
    by an older version lacks. ``conn`` is a sqlite3 connection or one shaped like it."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    migrate(conn)
    if eviction:
        # In one transaction, so the first total counts every entry once.
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute(_STALE_TRIGGERS).fetchone()[0]:
                for name in _BYTE_TRIGGERS:
                    conn.execute(f"DROP TRIGGER IF EXISTS {name}")
                conn.execute("DELETE FROM totals WHERE name = 'bytes'")
            for statement in EVICTION_SCHEMA:
                conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def migrate(conn: Any) -> None:
    """Add the columns a file made by an older version lacks (a read-only file keeps its shape)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(entries)").fetchall()}
    for column, statement in _MIGRATIONS.items():
        if column not in have:
            try:
                conn.execute(statement)
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc) and "readonly" not in str(exc):
                    raise


# SQLITE_CANTOPEN, as SQLite (and libSQL, for a local file) words it.
CANNOT_OPEN = "the path must name a database file (not a directory) this process may create, read and write"


def sqlite_hint(timeout: float) -> Callable[[BaseException], str | None]:
    def hint(exc: BaseException) -> str | None:
        text = str(exc)
        if "not a database" in text or "malformed" in text:
            return "the file is not a healthy SQLite database; move it aside (nothing is deleted) or point to a new path"
        if "locked" in text or "busy" in text:
            return f"another process held the lock longer than the busy timeout ({timeout}s); raise ?timeout= in the URL"
        if "readonly" in text:
            return "the file or its directory is read-only; choose a writable path"
        if "unable to open" in text:
            return CANNOT_OPEN
        return None  # the driver's message, in the same line, is all there is to say

    return hint


def _positive_seconds(value: Any) -> float:
    """The lock wait in seconds: a finite number >= 0 (``?timeout=abc`` or ``-1`` is a bad URL)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if isinstance(value, bool) or not 0.0 <= seconds < float("inf"):
        raise StoreURLError(f"SQLite timeout must be a number of seconds >= 0 (how long a writer waits "
                            f"for a lock; default 5), not {value!r}")
    return seconds


class SQLiteStore(SQLStore):
    _driver_errors = (sqlite3.Error,)

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0, synchronous: str = "NORMAL",
                 max_size_bytes: int | str | None = None, eviction: str | None = None) -> None:
        self.path = Path(path)
        self.timeout = _positive_seconds(timeout)
        self._init_sql(SQLITE, StoreErrors(f"SQLite store {self.path}", sqlite3.Error, sqlite_hint(self.timeout)),
                       eviction_config(max_size_bytes, eviction))
        self.url = file_url("sqlite", self.path)
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise StoreURLError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.synchronous = synchronous.upper()
        self._init_connections()
        self._schema_ready = False
        self.read_only = False  # set when the file turns out not writable by this process (see _connect)
        track_for_fork(self)

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "sqlite", base_dir: Any = None) -> str:
        """``sqlite:///abs/path.db`` from ``path`` (default: ``actioncache.db`` in the user cache dir)."""
        given = check_fields("sqlite", fields, ("path",))
        path = (local_file(given["path"], base_dir) if "path" in given
                else config.user_cache_dir() / config.DEFAULT_FILENAME)
        return file_url("sqlite", path)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SQLiteStore:
        parts = urlsplit(url)
        path = sqlite_targets(url).paths[0]  # what an untrusted agent's store is checked by: the one reading
        query = query_options("sqlite", url, parts, ("timeout", "synchronous", "max_size_bytes", "eviction"),
                              "options: timeout= (seconds), synchronous=, max_size_bytes=, eviction=")
        if "timeout" in query:
            options.setdefault("timeout", query["timeout"])
        if "synchronous" in query:
            options.setdefault("synchronous", query["synchronous"])
        limit = eviction_from_query(query, options)
        if limit is not None:
            options.update(max_size_bytes=limit.max_size_bytes, eviction=limit.policy)
        return cls(path, **options)

    # --- connections --------------------------------------------------------------------

    def _init_connections(self) -> None:
        super()._init_connections()
        self._directory_noted = False  # this object's opens are counted (_lean.store_opening)

    def _connect(self) -> sqlite3.Connection:
        if not self._directory_noted:
            # The directory that holds the file gets its mtime back when this process lets go of
            # it (close): opening and closing the store makes and removes its -wal and -shm there,
            # and a command that lists the directory's parent sees that mtime (_lean.store_closed).
            self._directory_noted = True
            _lean.store_opening(str(self.path))
        with self.errors.opening(f"SQLite store at {self.path}"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path), timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if not self._schema_ready:
                try:
                    self._prepare_file(conn)
                except sqlite3.OperationalError as exc:
                    # A read-only mount of a cleanly closed file says "unable to open database
                    # file" (WAL needs its -shm beside it), not "readonly": ask the file system.
                    writable = os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)
                    if ("readonly" not in str(exc) and writable) or not self.path.exists():
                        raise
                    conn.close()
                    conn = self._connect_read_only()
                self._schema_ready = True
            elif self.read_only:
                conn.close()
                conn = self._connect_read_only()
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        return conn

    def close(self) -> None:
        super().close()
        if self._directory_noted and os.getpid() == self._pid:
            self._directory_noted = False
            _lean.store_closed(str(self.path))

    def _connect_read_only(self) -> sqlite3.Connection:
        """A file this process may not write (another user's cache, a read-only mount) still serves
        hits: open it read-only; every write then fails as a store error, which the core reports
        while the action's result is returned."""
        self.read_only = True
        uri = "file:" + quote("/" + str(self.path).lstrip("/")) + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("SELECT 1 FROM entries LIMIT 1").fetchall()
        except sqlite3.OperationalError:
            # A WAL file without its -shm beside it cannot be opened read-only while others may
            # write; nobody can write this directory, so reading it as immutable is safe.
            conn.close()
            conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        return conn

    def _prepare_file(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL and create the schema, retrying while another process does the same.

        SQLite does not call the busy handler for a journal-mode change, so two processes
        opening a new file at once can see "database is locked" here however long the busy
        timeout is; retry until the timeout instead.
        """
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                create_schema(conn, self.eviction is not None)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def integrity_check(self) -> str:
        return str(self._run("integrity_check", lambda c: c.execute("PRAGMA integrity_check").fetchone()[0]))
