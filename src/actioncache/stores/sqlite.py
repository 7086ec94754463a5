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
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Mapping
from urllib.parse import parse_qs, quote, unquote, urlsplit

from .._json import dumps_compact
from ..errors import StoreError, StoreURLError
from ._fork import track_for_fork
from ._sql import find_query, is_json_number, pushable
from ._eviction import AccessLog, EvictionConfig, cull, eviction_config, eviction_from_query, too_large
from .base import CORRUPT_METADATA, Entry, LazyMetadata, select_keys

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
_ENTRY_BYTES = "length({0}.key) + length({0}.value) + length({0}.metadata)"
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
_CULL_BATCH = 32
_TOUCH = "UPDATE entries SET accessed_at = max(coalesce(accessed_at, 0), ?), hits = hits + ? WHERE key = ?"
# The duration is pre-read by SQLite so a hit can count time saved without parsing metadata.
# Metadata that is not a JSON object (a foreign writer) is flagged, never an error of the read.
_GET = (
    "SELECT value, metadata, created_at, expires_at, "
    "CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$._cache_duration_ms') END, "
    "CASE WHEN json_valid(metadata) THEN json_type(metadata) = 'object' ELSE 0 END "
    "FROM entries WHERE key = ?"
)
_DELETE_EXPIRED = (
    "DELETE FROM entries WHERE rowid IN "
    "(SELECT rowid FROM entries WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?)"
)

# Metadata fields promoted to an indexed column: invalidation by action must not scan.
_ACTION_FIELD = "_cache_action"
_BATCH = 500


def _field_clause(name: str, wanted: Any) -> tuple[str, list[Any]] | None:
    """SQLite's metadata test for ``find``: the promoted action column, else ``json_extract``."""
    if not pushable(name, wanted):
        return None
    if name == _ACTION_FIELD and isinstance(wanted, str):
        return "action = ?", [wanted]
    if isinstance(wanted, str) or is_json_number(wanted):
        # json_valid first: one row of malformed metadata (a foreign writer) must not fail the query.
        return "CASE WHEN json_valid(metadata) THEN json_extract(metadata, ?) END = ?", ['$."' + name + '"', wanted]
    return None


class SQLiteStore:
    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0, synchronous: str = "NORMAL",
                 max_size_bytes: int | str | None = None, eviction: str | None = None) -> None:
        self.path = Path(path)
        self.eviction: EvictionConfig | None = eviction_config(max_size_bytes, eviction)
        self._access: AccessLog | None = AccessLog() if self.eviction and self.eviction.tracks_reads else None
        self.url = "sqlite:///" + str(self.path).lstrip("/")
        self.timeout = float(timeout)
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise StoreURLError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.synchronous = synchronous.upper()
        self._local = threading.local()
        self._pid = os.getpid()
        self._all_connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        self._schema_ready = False
        self.read_only = False  # set when the file turns out not writable by this process (see _connect)
        track_for_fork(self)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> "SQLiteStore":
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise StoreURLError(
                f"sqlite URL {url!r} has a host part; use three slashes and an absolute path: sqlite:///abs/path.db"
            )
        path = unquote(parts.path)
        if not path or path == "/":
            raise StoreURLError(f"sqlite URL {url!r} names no file; use sqlite:///abs/path.db")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        for name in ("timeout", "synchronous"):
            if name in query:
                options.setdefault(name, float(query[name]) if name == "timeout" else query[name])
        limit = eviction_from_query(query, options)
        if limit is not None:
            options.update(max_size_bytes=limit.max_size_bytes, eviction=limit.policy)
        return cls(path, **options)

    # --- connections --------------------------------------------------------------------

    def after_fork(self) -> None:
        # The parent's connections belong to the parent. Start over without touching them
        # (closing them here could disturb the parent's locks).
        self._pid = os.getpid()
        self._local = threading.local()
        self._all_connections = []
        self._conn_lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        try:
            return self._local.conn
        except AttributeError:
            conn = self._local.conn = self._connect()
            return conn

    def _connect(self) -> sqlite3.Connection:
        try:
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
        except sqlite3.DatabaseError as exc:
            raise self._error("open", exc) from exc
        except OSError as exc:
            raise StoreError(f"cannot open SQLite store at {self.path}: {exc}") from exc
        with self._conn_lock:
            self._all_connections.append(conn)
        return conn

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
                conn.executescript(SCHEMA)
                self.migrate(conn)
                if self.eviction is not None:
                    self._prepare_eviction(conn)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    @staticmethod
    def _prepare_eviction(conn: Any) -> None:
        """The size bookkeeping, made in one transaction so the first total counts every entry once."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in EVICTION_SCHEMA:
                conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @staticmethod
    def migrate(conn: Any) -> None:
        """Add the columns a file made by an older version lacks (a read-only file keeps its shape)."""
        have = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
        for column, statement in _MIGRATIONS.items():
            if column not in have:
                try:
                    conn.execute(statement)
                except sqlite3.OperationalError as exc:
                    if "duplicate column" not in str(exc) and "readonly" not in str(exc):
                        raise

    def _error(self, op: str, exc: BaseException) -> StoreError:
        text = str(exc)
        if "not a database" in text or "malformed" in text:
            hint = "the file is not a healthy SQLite database; move it aside (nothing is deleted) or point to a new path"
        elif "locked" in text or "busy" in text:
            hint = f"another process held the lock longer than the busy timeout ({self.timeout}s); raise ?timeout= in the URL"
        elif "readonly" in text:
            hint = "the file or its directory is read-only; choose a writable path"
        else:
            hint = "see the SQLite error above"
        return StoreError(f"SQLite store {self.path}: {op} failed: {text} ({hint})")

    def _run(self, op: str, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._conn().execute(sql, tuple(params))
        except sqlite3.Error as exc:
            raise self._error(op, exc) from exc

    # --- protocol -----------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        try:
            try:
                conn = self._local.conn
            except AttributeError:
                conn = self._conn()
            row = conn.execute(_GET, (key,)).fetchone()
        except sqlite3.Error as exc:
            raise self._error("get", exc) from exc
        if row is None:
            return None
        value, metadata, created_at, expires_at, duration_ms, is_object = row
        preset = {"_cache_duration_ms": duration_ms, CORRUPT_METADATA: not is_object}
        if self._access is not None and self._access.record(key, time.time()):
            self._flush_access()
        return Entry(key, value, LazyMetadata(metadata, preset), created_at, expires_at)

    def put(self, entry: Entry) -> None:
        action = entry.metadata.get(_ACTION_FIELD)
        row = (
            entry.key,
            sqlite3.Binary(entry.value),
            dumps_compact(dict(entry.metadata)),
            entry.created_at,
            entry.expires_at,
            action if isinstance(action, str) else None,
            time.time(),
        )
        if self.eviction is None:
            self._run("put", _UPSERT, row)
            return
        problem = too_large(self.eviction, len(row[0]) + len(row[1]) + len(row[2]))
        if problem:
            self._run("put", "DELETE FROM entries WHERE key = ?", (entry.key,))  # never leave the older value
            raise StoreError(f"SQLite store {self.path}: {problem}")
        self._write("put", lambda conn: (conn.execute(_UPSERT, row), self._cull(conn, self.eviction, entry.key)))

    # --- size limits ----------------------------------------------------------------------

    def _write(self, op: str, body: Any) -> None:
        """Run ``body(conn)`` in one write transaction."""
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                body(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._error(op, exc) from exc

    def _cull(self, conn: Any, limit: EvictionConfig, written: str) -> None:
        """Inside a put's transaction: when over the limit, remove victims down to the target."""
        total = conn.execute("SELECT value FROM totals WHERE name = 'bytes'").fetchone()
        if total is None or total[0] <= limit.max_size_bytes:
            return
        if self._access is not None:
            self._touch(conn, self._access.drain())
        cull(total[0] - limit.target_bytes,
             [lambda q=victims: conn.execute(q, (written, _CULL_BATCH)) for victims in _VICTIMS[limit.policy]],
             lambda rowids: conn.execute(f"DELETE FROM entries WHERE rowid IN ({','.join('?' * len(rowids))})", rowids))

    @staticmethod
    def _touch(conn: Any, rows: list[tuple[float, int, str]]) -> None:
        for row in rows:  # one statement per key: libSQL's connection has no executemany
            conn.execute(_TOUCH, row)

    def _flush_access(self) -> None:
        """Write the batched reads. A batch that cannot be written (the file is busy or read-only)
        is dropped: the order is then a little less exact, and the read that triggered it still hits."""
        rows = self._access.drain() if self._access is not None else []
        if rows:
            try:
                self._write("touch", lambda conn: self._touch(conn, rows))
            except StoreError:
                pass

    def delete(self, key: str) -> bool:
        return self._run("delete", "DELETE FROM entries WHERE key = ?", (key,)).rowcount > 0

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        deleted = 0
        conn = self._conn()
        try:
            for start in range(0, len(keys), _BATCH):
                chunk = keys[start : start + _BATCH]
                marks = ",".join("?" * len(chunk))
                deleted += conn.execute(f"DELETE FROM entries WHERE key IN ({marks})", chunk).rowcount
        except sqlite3.Error as exc:
            raise self._error("delete", exc) from exc
        return deleted

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        # Metadata sits after the value in each row: reading it walks a large value's overflow
        # pages, so a find that filters on keys only does not select it.
        select = "SELECT key, metadata FROM entries" if metadata_filter else "SELECT key, NULL FROM entries"
        sql, params = find_query(select, pattern, metadata_filter, _field_clause)
        return select_keys(self._run("find", sql, params), pattern, metadata_filter, limit)

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        return self._run("cleanup", _DELETE_EXPIRED, (now, -1 if limit is None else int(limit))).rowcount

    def count(self) -> int:
        return int(self._run("count", "SELECT count(*) FROM entries").fetchone()[0])

    def size_bytes(self) -> int:
        if self.eviction is not None:  # what the limit counts: key + value + metadata
            return int(self._run("size", "SELECT value FROM totals WHERE name = 'bytes'").fetchone()[0])
        return int(self._run("size", "SELECT coalesce(sum(length(value)), 0) FROM entries").fetchone()[0])

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        if not deltas:
            return
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT INTO counters(name, value) VALUES (?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                    list(deltas.items()),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._error("counters", exc) from exc

    def counters(self, prefix: str = "") -> dict[str, float]:
        rows = self._run(
            "counters",
            "SELECT name, value FROM counters WHERE substr(name, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return {name: value for name, value in rows}

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        token = uuid.uuid4().hex
        now = time.time()
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT expires_at FROM leases WHERE name = ?", (name,)).fetchone()
                if row is not None and row[0] > now:
                    conn.execute("ROLLBACK")
                    return None
                conn.execute(
                    "INSERT INTO leases(name, token, expires_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at",
                    (name, token, now + ttl_s),
                )
                conn.execute("COMMIT")
                return token
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._error("lease", exc) from exc

    def renew_lease(self, name: str, token: str, ttl_s: float) -> bool:
        statement = "UPDATE leases SET expires_at = ? WHERE name = ? AND token = ?"
        return self._run("lease", statement, (time.time() + float(ttl_s), name, token)).rowcount > 0

    def release_lease(self, name: str, token: str) -> None:
        self._run("lease", "DELETE FROM leases WHERE name = ? AND token = ?", (name, token))

    def integrity_check(self) -> str:
        return str(self._run("integrity_check", "PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        if os.getpid() != self._pid:
            return
        if self._access is not None:
            try:
                self._flush_access()
            except Exception:  # noqa: BLE001 - closing must not fail over a lost read order
                pass
        with self._conn_lock:
            conns, self._all_connections = self._all_connections, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()
