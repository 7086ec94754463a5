"""DuckDB: one database file (or ``:memory:``) owned by one process.

Why it is shaped this way:

* DuckDB lets exactly one process open a file for writing (it takes an OS lock on the file).
  A second process gets a :class:`StoreError` that says so and names the alternatives; the
  cache core turns it into a fresh run, never a failed action. This backend is for one
  process (many threads), or for several processes that only read (``?read_only=true``).
* One database instance per store; each thread gets its own cursor of that instance
  (``con.cursor()``), because a DuckDB connection is not safe to share between threads.
* Writes are serialized by a lock per database file inside the process. DuckDB's optimistic
  MVCC would otherwise abort one of two threads that upsert the same key at once
  ("Conflict on update"); DuckDB commits one writer at a time anyway, so the lock costs little.
* Reads run without that lock, under DuckDB's snapshot isolation: a reader never sees a
  half-written entry.
* ``expires_at`` has an ART index; DuckDB uses it for the highly selective
  ``expires_at <= now`` of cleanup (an "Index Scan" in ``EXPLAIN ANALYZE``).
* Metadata is a ``JSON`` column and ``find`` tests fields in SQL (``json_type`` and
  ``json_extract_string``), so only matching rows leave the database.
* A DuckDB instance does not survive ``fork``: in a forked child the store refuses every call
  with a :class:`StoreError` (and keeps the inherited handles alive, since freeing them crashes).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

import duckdb

from .._json import dumps_compact
from ..errors import StoreError, StoreURLError
from ._errors import StoreErrors
from ._eviction import eviction_config, eviction_from_query, too_large
from ._fork import track_for_fork
from ._sql import Dialect, SQLStore, duckdb_targets, is_json_number, pushable
from ._url import check_fields, file_url, local_file, query_options
from .base import Entry
from .redaction import redact_url

MEMORY = ":memory:"

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS entries (
        key         VARCHAR PRIMARY KEY,
        value       BLOB NOT NULL,
        metadata    JSON NOT NULL,
        created_at  DOUBLE NOT NULL,
        expires_at  DOUBLE,
        action      VARCHAR
    )""",
    "CREATE INDEX IF NOT EXISTS entries_expires_at ON entries(expires_at)",
    "CREATE TABLE IF NOT EXISTS counters (name VARCHAR PRIMARY KEY, value DOUBLE NOT NULL)",
    "CREATE TABLE IF NOT EXISTS leases (name VARCHAR PRIMARY KEY, token VARCHAR NOT NULL, expires_at DOUBLE NOT NULL)",
]

# A put is UPDATE, then INSERT when no row was there, both under the file's write lock (which
# every writer of the file holds: DuckDB admits one writing process, and in this process the lock
# is per file). Measured here, that is 1.5-3x faster than INSERT ... ON CONFLICT DO UPDATE, whose
# conflict handling re-checks both ART indexes.
_UPDATE = "UPDATE entries SET value = ?, metadata = ?, created_at = ?, expires_at = ?, action = ? WHERE key = ?"
_INSERT = "INSERT INTO entries(value, metadata, created_at, expires_at, action, key) VALUES (?, ?, ?, ?, ?, ?)"
# Metadata stays JSON text until a field is asked for: parsing it in Python (LazyMetadata) costs
# microseconds, DuckDB's json functions cost more than the lookup itself.
_GET = "SELECT value, metadata, created_at, expires_at FROM entries WHERE key = ?"
# Oldest expired keys first. The range scan sits in a materialized CTE because DuckDB plans a
# filter under ORDER BY ... LIMIT as a sequential scan; on its own, a selective
# ``expires_at <= ?`` is answered from the ART index (DuckDB still prefers a columnar scan
# when a large share of the rows has expired, which is then the cheaper plan).
EXPIRED_KEYS = (
    "WITH expired AS MATERIALIZED (SELECT key, expires_at FROM entries WHERE expires_at <= ?) "
    "SELECT key FROM expired ORDER BY expires_at"
)

# Size limits (stores/_eviction.py). DuckDB has no triggers, so this store keeps the byte total
# itself, in the same transaction as each write: every writer of a file is in one process (DuckDB
# locks the file) and holds the file's write lock. Files whose ``totals`` table exists are tracked
# by every store of this process that opens them, limit or not, so the total never drifts.
_ENTRY_BYTES = "strlen(key) + octet_length(value) + strlen(CAST(metadata AS VARCHAR))"
_EVICTION_SCHEMA = [
    "ALTER TABLE entries ADD COLUMN IF NOT EXISTS accessed_at DOUBLE",
    "ALTER TABLE entries ADD COLUMN IF NOT EXISTS hits BIGINT DEFAULT 0",
    "CREATE TABLE IF NOT EXISTS totals (name VARCHAR PRIMARY KEY, value BIGINT NOT NULL)",
    f"INSERT INTO totals SELECT 'bytes', coalesce(sum({_ENTRY_BYTES}), 0) FROM entries ON CONFLICT DO NOTHING",
]
# Victims: a columnar top-N over one column (DuckDB answers ORDER BY ... LIMIT with a scan, not its
# ART index), paid once per cull, which brings the store down to 90% of its limit.
_VICTIMS = {
    "lru": [f"SELECT key, {_ENTRY_BYTES} FROM entries WHERE key <> ? ORDER BY accessed_at NULLS FIRST LIMIT ?"],
    "lfu": [f"SELECT key, {_ENTRY_BYTES} FROM entries WHERE key <> ? ORDER BY coalesce(hits, 0), "
            "accessed_at NULLS FIRST LIMIT ?"],
    "ttl": [f"SELECT key, {_ENTRY_BYTES} FROM entries WHERE expires_at IS NOT NULL AND key <> ? "
            "ORDER BY expires_at LIMIT ?",
            f"SELECT key, {_ENTRY_BYTES} FROM entries WHERE key <> ? ORDER BY accessed_at NULLS FIRST LIMIT ?"],
}
_TOUCH = ("UPDATE entries SET accessed_at = greatest(coalesce(accessed_at, 0), ?), hits = coalesce(hits, 0) + ? "
          "WHERE key = ?")
_tracked_files: set[str] = set()

_ACTION_FIELD = "_cache_action"
_NUMBER_TYPES = "('BIGINT', 'UBIGINT', 'DOUBLE')"
_BATCH = 500


def _json_path(name: str) -> str:
    # DuckDB reads a quoted JSON path label with backslash escapes.
    return '$."' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


class DuckDBDialect(Dialect):
    """DuckDB's SQL. Its put (UPDATE, then INSERT) and byte total are the store's own (below)."""

    get = _GET
    touch = _TOUCH
    victims = _VICTIMS
    cull_batch = 256
    begin = "BEGIN TRANSACTION"

    def field_clause(self, name: str, wanted: Any) -> tuple[str, list[Any]] | None:
        """Type and value, so 1, true and "1" stay apart."""
        if not pushable(name, wanted):
            return None
        if name == _ACTION_FIELD and isinstance(wanted, str):
            return "action = ?", [wanted]
        path = _json_path(name)
        if isinstance(wanted, bool):
            return "json_type(metadata, ?) = 'BOOLEAN' AND json_extract_string(metadata, ?) = ?", [
                path, path, "true" if wanted else "false"]
        if isinstance(wanted, str):
            return "json_type(metadata, ?) = 'VARCHAR' AND json_extract_string(metadata, ?) = ?", [path, path, wanted]
        if is_json_number(wanted):
            return (f"json_type(metadata, ?) IN {_NUMBER_TYPES} "
                    "AND TRY_CAST(json_extract_string(metadata, ?) AS DOUBLE) = ?"), [path, path, float(wanted)]
        if wanted is None:
            return "json_type(metadata, ?) = 'NULL'", [path]
        return None  # objects and arrays: select_keys compares them exactly


DUCKDB = DuckDBDialect()


def _hint(exc: BaseException) -> str | None:
    text = str(exc).lower()
    if "lock" in text and ("conflicting" in text or "could not set" in text):
        return ("DuckDB lets one process open a file for writing and another process has it open; "
                "use DuckDB from one process, open it with ?read_only=true where no process writes, "
                "or use sqlite:///... or postgresql://... for several processes")
    if "read-only" in text or "read only" in text:
        return "the store is open read-only (?read_only=true); drop that option to write"
    if "different configuration" in text:
        return "this process already opened the file with other options (read_only); open it one way"
    if "not a valid duckdb database" in text or "corrupt" in text:
        return "the file is not a healthy DuckDB database; move it aside (nothing is deleted) or point to a new path"
    return None  # the driver's message, in the same line, is all there is to say


# DuckDB objects a forked child inherited; held so that they are never destroyed in the child.
_inherited_handles: list[Any] = []

# One write lock per database file in this process: two stores on one file share DuckDB's
# instance (its own cache) and so must share the lock too.
_write_locks: dict[str, threading.Lock] = {}
_write_locks_guard = threading.Lock()


def _write_lock_for(path: str) -> threading.Lock:
    if path == MEMORY:
        return threading.Lock()  # every :memory: store is its own database
    with _write_locks_guard:
        return _write_locks.setdefault(os.path.realpath(path), threading.Lock())


class DuckDBStore(SQLStore):
    """A :class:`~actioncache.stores.base.CacheStore` in one DuckDB database.

    ``path`` is an absolute file path or ``":memory:"``. ``read_only=True`` opens the file for
    reading only, so several processes may read it at once, while no process writes it.
    """

    _driver_errors = (duckdb.Error,)

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False,
                 max_size_bytes: int | str | None = None, eviction: str | None = None) -> None:
        limit = eviction_config(max_size_bytes, eviction)
        if limit is not None and read_only:
            raise StoreURLError("a read-only DuckDB store cannot enforce max_size_bytes: it never writes")
        text = str(path)
        self.path = text if text == MEMORY else str(Path(text))
        self._init_sql(DUCKDB, StoreErrors(f"DuckDB store {self.path}", duckdb.Error, _hint), limit)
        self.read_only = bool(read_only)
        self.url = file_url("duckdb", self.path)
        if self.read_only:
            self.url += "?read_only=true"
        self._write_lock = _write_lock_for(self.path)
        # Which database this is, for the size-tracking set: every :memory: store is its own.
        self._file_id = f"{MEMORY}{id(self)}" if self.path == MEMORY else os.path.realpath(self.path)
        self._open_lock = threading.Lock()
        self._init_running()
        self._db: duckdb.DuckDBPyConnection | None = None
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._local = threading.local()
        self._pid = os.getpid()
        self._forked_from: int | None = None
        track_for_fork(self)  # the fork registry calls our after_fork in a child

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "duckdb", base_dir: Any = None) -> str:
        """``duckdb:///abs/path.duckdb`` from ``path`` (default ``actioncache.duckdb``)."""
        given = check_fields("duckdb", fields, ("path",))
        return file_url("duckdb", local_file(given.get("path", "actioncache.duckdb"), base_dir))

    @classmethod
    def from_url(cls, url: str, **options: Any) -> DuckDBStore:
        """``duckdb:///abs/path.duckdb``, ``duckdb:///:memory:``; option ``?read_only=true``."""
        parts = urlsplit(url)
        opened = duckdb_targets(url).paths  # what an untrusted agent's store is checked by: the one reading
        path = opened[0] if opened else MEMORY
        query = query_options("duckdb", url, parts, ("read_only", "max_size_bytes", "eviction"),
                              "options: read_only=true, max_size_bytes=, eviction=")
        limit = eviction_from_query(query, options)
        if limit is not None:
            options.update(max_size_bytes=limit.max_size_bytes, eviction=limit.policy)
        if "read_only" in query:
            options.setdefault("read_only", _parse_bool(query["read_only"], url))
        return cls(path, **options)

    # --- connections --------------------------------------------------------------------

    def after_fork(self) -> None:
        # A DuckDB instance does not survive a fork (using the inherited one crashes the child,
        # and DuckDB's instance cache would hand the child the parent's file without its lock).
        # The child's copy of this store refuses every call; the parent's is untouched. The
        # inherited handles are kept, never closed nor freed: their destructors crash a child.
        _inherited_handles.append((self._db, self._cursors, self._local))
        self._forked_from = self._pid
        self._pid = os.getpid()
        self._db = None
        self._cursors = []
        self._local = threading.local()
        self._open_lock = threading.Lock()
        self._init_running()

    def _database(self) -> duckdb.DuckDBPyConnection:
        if self._forked_from is not None:
            raise StoreError(
                f"DuckDB store {self.path}: this process was forked from process {self._forked_from}, which "
                "owns the database; DuckDB is for one process: use the store in the parent only, or use "
                "sqlite:///... or postgresql://... where several processes share a cache"
            )
        with self._open_lock:
            if self._db is None:
                with self.errors.opening(f"DuckDB store at {self.path}"):
                    if self.path != MEMORY:
                        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                    db = duckdb.connect(self.path, read_only=self.read_only)
                    if not self.read_only:
                        with self._write_lock:  # another store on this file may be creating it too
                            for statement in SCHEMA:
                                db.execute(statement)
                            if self.eviction is not None:
                                db.execute("BEGIN TRANSACTION")
                                for statement in _EVICTION_SCHEMA:
                                    db.execute(statement)
                                db.execute("COMMIT")
                            tables = {row[0] for row in db.execute("SHOW TABLES").fetchall()}
                            if "totals" in tables:
                                _tracked_files.add(self._file_id)
                self._db = db
            return self._db

    def _conn(self) -> Any:
        """This thread's cursor of the store's one database instance."""
        try:
            return self._local.conn
        except AttributeError:
            pass
        db = self._database()
        with self._open_lock:
            cursor = db.cursor()
            self._cursors.append(cursor)
        self._local.conn = cursor
        return cursor

    # --- protocol -----------------------------------------------------------------------

    def put(self, entry: Entry) -> None:
        self._put(entry, None)

    def put_fenced(self, entry: Entry, lease: str, token: str) -> bool:
        """Store ``entry`` only while ``token`` is the current grant of ``lease``: the check and the
        write are one transaction, under the file's write lock."""
        return self._put(entry, (lease, token))

    def _put(self, entry: Entry, fence: tuple[str, str] | None) -> bool:
        action = entry.metadata.get(_ACTION_FIELD)
        params = [
            bytes(entry.value),
            dumps_compact(dict(entry.metadata)),
            float(entry.created_at),
            None if entry.expires_at is None else float(entry.expires_at),
            action if isinstance(action, str) else None,
            entry.key,
        ]

        def held(cursor: duckdb.DuckDBPyConnection) -> bool:
            return fence is None or self._holds(cursor, *fence)

        def upsert(cursor: duckdb.DuckDBPyConnection) -> None:
            # No transaction needed: a reader between the two statements sees no row, as before.
            if not _first(cursor.execute(_UPDATE, params).fetchone()):
                cursor.execute(_INSERT, params)

        if not self._tracks_size():
            if fence is None:
                self._run("put", upsert, write=True)
                return True

            def fenced(cursor: duckdb.DuckDBPyConnection) -> bool:
                if not held(cursor):
                    return False
                upsert(cursor)
                return True

            return self._run("put", fenced, transaction=True, retry=False)
        value, metadata = bytes(entry.value), str(params[1])
        size = len(entry.key.encode("utf-8", "surrogatepass")) + len(value) + len(metadata.encode("utf-8", "surrogatepass"))
        refusal = too_large(self.eviction, size, self.errors.where)
        if refusal:
            def drop_older(cursor: duckdb.DuckDBPyConnection) -> None:
                if held(cursor):  # never leave the older value under this key (nor remove a newer holder's)
                    _delete_keys(cursor, [entry.key], True)

            self._run("delete", drop_older, transaction=True)
            raise refusal

        def tracked(cursor: duckdb.DuckDBPyConnection) -> bool:
            if not held(cursor):
                return False
            old = cursor.execute(f"SELECT {_ENTRY_BYTES} FROM entries WHERE key = ?", [entry.key]).fetchall()
            upsert(cursor)
            cursor.execute("UPDATE entries SET accessed_at = ?, hits = 0 WHERE key = ?", [time.time(), entry.key])
            cursor.execute("UPDATE totals SET value = value + ? WHERE name = 'bytes'",
                           [size - (int(old[0][0]) if old else 0)])
            if self.eviction is not None:
                self._cull(cursor, self.eviction, entry.key)
            return True

        return self._run("put", tracked, transaction=True)

    def _tracks_size(self) -> bool:
        """Whether this file keeps a byte total (known once the database is open)."""
        if self._db is None and not self.read_only:
            self._database()
        return self._file_id in _tracked_files

    def _touch(self, conn: Any, rows: list[tuple[float, int, str]]) -> None:
        if rows:
            conn.executemany(_TOUCH, [list(row) for row in rows])

    def _delete_where(self, conn: Any, column: str, ids: list[Any]) -> int:
        return _delete_keys(conn, ids, tracked=self._file_id in _tracked_files)

    def delete(self, key: str) -> bool:
        return self.delete_many([key]) > 0

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        if not keys:
            return 0
        tracked = self._tracks_size()
        return self._run("delete", lambda cursor: _delete_keys(cursor, keys, tracked), write=True,
                         transaction=tracked or len(keys) > _BATCH)

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        select = EXPIRED_KEYS + ("" if limit is None else f" LIMIT {max(0, int(limit))}")

        def work(cursor: duckdb.DuckDBPyConnection) -> int:
            # The keys cannot change between the two statements: writers wait on the lock.
            return _delete_keys(cursor, [row[0] for row in cursor.execute(select, [float(now)]).fetchall()],
                                tracked)

        tracked = self._tracks_size()
        return self._run("cleanup", work, write=True, transaction=tracked)

    def close(self) -> None:
        if os.getpid() != self._pid:
            return
        self._wait_idle()  # closing a cursor another thread is using crashes DuckDB
        with self._open_lock:
            cursors, self._cursors = self._cursors, []
            db, self._db = self._db, None
        for handle in [*cursors, db]:
            if handle is not None:
                try:
                    handle.close()
                except duckdb.Error:
                    pass
        self._local = threading.local()


def _first(row: tuple[Any, ...] | None) -> Any:
    """The first column of a row a statement always returns."""
    if row is None:
        raise StoreError("DuckDB returned no row where one was expected")
    return row[0]


def _delete_keys(cursor: duckdb.DuckDBPyConnection, keys: list[str], tracked: bool = False) -> int:
    """Delete ``keys``; on a size-tracked file also take their bytes off the total (same transaction)."""
    deleted = 0
    for start in range(0, len(keys), _BATCH):
        chunk = keys[start : start + _BATCH]
        marks = ",".join("?" * len(chunk))
        if tracked:
            freed = _first(cursor.execute(f"SELECT coalesce(sum({_ENTRY_BYTES}), 0) FROM entries WHERE key IN ({marks})",
                                          chunk).fetchone())
            cursor.execute("UPDATE totals SET value = value - ? WHERE name = 'bytes'", [int(freed)])
        deleted += int(_first(cursor.execute(f"DELETE FROM entries WHERE key IN ({marks})", chunk).fetchone()))
    return deleted


def _parse_bool(text: str, url: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise StoreURLError(f"{redact_url(url)!r}: read_only must be true or false, not {text!r}")
