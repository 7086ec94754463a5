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
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar
from urllib.parse import parse_qs, urlsplit

import duckdb

from .._json import dumps_compact
from ..errors import StoreError, StoreURLError
from ._sql import file_path, find_query, is_json_number, pushable
from .base import Entry, LazyMetadata, select_keys
from ._fork import track_for_fork

MEMORY = ":memory:"
T = TypeVar("T")

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

_ACTION_FIELD = "_cache_action"
_NUMBER_TYPES = "('BIGINT', 'UBIGINT', 'DOUBLE')"
_BATCH = 500


def _json_path(name: str) -> str:
    # DuckDB reads a quoted JSON path label with backslash escapes.
    return '$."' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _field_clause(name: str, wanted: Any) -> tuple[str, list[Any]] | None:
    """DuckDB's metadata test for ``find``: type and value, so 1, true and "1" stay apart."""
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


class DuckDBStore:
    """A :class:`~actioncache.stores.base.CacheStore` in one DuckDB database.

    ``path`` is an absolute file path or ``":memory:"``. ``read_only=True`` opens the file for
    reading only, so several processes may read it at once, while no process writes it.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        text = str(path)
        self.path = text if text == MEMORY else str(Path(text))
        self.read_only = bool(read_only)
        self.url = "duckdb:///" + (MEMORY if self.path == MEMORY else self.path.lstrip("/"))
        if self.read_only:
            self.url += "?read_only=true"
        self._write_lock = _write_lock_for(self.path)
        self._open_lock = threading.Lock()
        self._db: duckdb.DuckDBPyConnection | None = None
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._local = threading.local()
        self._pid = os.getpid()
        self._forked_from: int | None = None
        track_for_fork(self)  # the fork registry calls our after_fork in a child

    @classmethod
    def from_url(cls, url: str, **options: Any) -> "DuckDBStore":
        """``duckdb:///abs/path.duckdb``, ``duckdb:///:memory:``; option ``?read_only=true``."""
        parts = urlsplit(url)
        path = file_path(parts, url, "duckdb:///abs/path.duckdb (or duckdb:///:memory:)")
        if path == "/" + MEMORY:
            path = MEMORY
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        unknown = set(query) - {"read_only"}
        if unknown:
            raise StoreURLError(f"duckdb URL {url!r}: unknown option(s) {sorted(unknown)}; the only option is read_only=true")
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

    def _database(self) -> duckdb.DuckDBPyConnection:
        if self._forked_from is not None:
            raise StoreError(
                f"DuckDB store {self.path}: this process was forked from process {self._forked_from}, which "
                "owns the database; DuckDB is for one process: use the store in the parent only, or use "
                "sqlite:///... or postgresql://... where several processes share a cache"
            )
        with self._open_lock:
            if self._db is None:
                try:
                    if self.path != MEMORY:
                        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                    db = duckdb.connect(self.path, read_only=self.read_only)
                    if not self.read_only:
                        with self._write_lock:  # another store on this file may be creating it too
                            for statement in SCHEMA:
                                db.execute(statement)
                except duckdb.Error as exc:
                    raise self._error("open", exc) from exc
                except OSError as exc:
                    raise StoreError(f"cannot open DuckDB store at {self.path}: {exc}") from exc
                self._db = db
            return self._db

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        try:
            return self._local.cursor
        except AttributeError:
            pass
        db = self._database()
        with self._open_lock:
            cursor = db.cursor()
            self._cursors.append(cursor)
        self._local.cursor = cursor
        return cursor

    def _error(self, op: str, exc: BaseException) -> StoreError:
        text = str(exc)
        if "lock" in text.lower() and ("conflicting" in text.lower() or "could not set" in text.lower()):
            hint = ("DuckDB lets one process open a file for writing and another process has it open; "
                    "use DuckDB from one process, open it with ?read_only=true where no process writes, "
                    "or use sqlite:///... or postgresql://... for several processes")
        elif "read-only" in text.lower() or "read only" in text.lower():
            hint = "the store is open read-only (?read_only=true); drop that option to write"
        elif "different configuration" in text.lower():
            hint = "this process already opened the file with other options (read_only); open it one way"
        elif "not a valid duckdb database" in text.lower() or "corrupt" in text.lower():
            hint = "the file is not a healthy DuckDB database; move it aside (nothing is deleted) or point to a new path"
        else:
            hint = "see the DuckDB error above"
        return StoreError(f"DuckDB store {self.path}: {op} failed: {text} ({hint})")

    def _read(self, op: str, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._cursor().execute(sql, list(params)).fetchall()
        except duckdb.Error as exc:
            raise self._error(op, exc) from exc

    def _write(self, op: str, work: Callable[[duckdb.DuckDBPyConnection], T], *, transaction: bool = False) -> T:
        """Run ``work(cursor)`` under the write lock, as one transaction if asked.

        Without ``transaction`` each statement commits on its own, which is enough when the work
        is one statement, or when a reader may see its steps apart (the lock keeps writers out):
        every DuckDB statement costs a fixed overhead, and BEGIN/COMMIT are two more.
        """
        cursor = self._cursor()
        with self._write_lock:
            try:
                if not transaction:
                    return work(cursor)
                cursor.execute("BEGIN TRANSACTION")
                try:
                    result = work(cursor)
                    cursor.execute("COMMIT")
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
                return result
            except duckdb.Error as exc:
                raise self._error(op, exc) from exc

    def _write_one(self, op: str, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        return self._write(op, lambda cursor: cursor.execute(sql, params).fetchall())

    # --- protocol -----------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        rows = self._read("get", _GET, [key])
        if not rows:
            return None
        value, metadata, created_at, expires_at = rows[0]
        return Entry(key, value, LazyMetadata(metadata), created_at, expires_at)

    def put(self, entry: Entry) -> None:
        action = entry.metadata.get(_ACTION_FIELD)
        params = [
            bytes(entry.value),
            dumps_compact(dict(entry.metadata)),
            float(entry.created_at),
            None if entry.expires_at is None else float(entry.expires_at),
            action if isinstance(action, str) else None,
            entry.key,
        ]

        def upsert(cursor: duckdb.DuckDBPyConnection) -> None:
            # No transaction needed: a reader between the two statements sees no row, as before.
            if not cursor.execute(_UPDATE, params).fetchone()[0]:
                cursor.execute(_INSERT, params)

        self._write("put", upsert)

    def delete(self, key: str) -> bool:
        return self.delete_many([key]) > 0

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        if not keys:
            return 0
        return self._write("delete", lambda cursor: _delete_keys(cursor, keys), transaction=len(keys) > _BATCH)

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        columns = "key, metadata" if metadata_filter else "key, NULL"
        sql, params = find_query(f"SELECT {columns} FROM entries", pattern, metadata_filter, _field_clause)
        return select_keys(self._read("find", sql, params), pattern, metadata_filter, limit)

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        select = EXPIRED_KEYS + ("" if limit is None else f" LIMIT {max(0, int(limit))}")

        def work(cursor: duckdb.DuckDBPyConnection) -> int:
            # The keys cannot change between the two statements: writers wait on the lock.
            return _delete_keys(cursor, [row[0] for row in cursor.execute(select, [float(now)]).fetchall()])

        return self._write("cleanup", work)

    def count(self) -> int:
        return int(self._read("count", "SELECT count(*) FROM entries")[0][0])

    def size_bytes(self) -> int:
        return int(self._read("size", "SELECT coalesce(sum(octet_length(value)), 0) FROM entries")[0][0])

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        if not deltas:
            return
        upsert = ("INSERT INTO counters(name, value) VALUES (?, ?) "
                  "ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value")
        rows = [[name, float(delta)] for name, delta in deltas.items()]
        self._write("counters", lambda cursor: cursor.executemany(upsert, rows), transaction=len(rows) > 1)

    def counters(self, prefix: str = "") -> dict[str, float]:
        rows = self._read("counters", "SELECT name, value FROM counters WHERE starts_with(name, ?)", [prefix])
        return {name: value for name, value in rows}

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        token = uuid.uuid4().hex
        now = time.time()
        # Only a lease that has run out is taken over; RETURNING tells whether this call won.
        upsert = ("INSERT INTO leases(name, token, expires_at) VALUES (?, ?, ?) "
                  "ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at "
                  "WHERE leases.expires_at <= ? RETURNING token")
        rows = self._write_one("lease", upsert, [name, token, now + float(ttl_s), now])
        return token if rows and rows[0][0] == token else None

    def renew_lease(self, name: str, token: str, ttl_s: float) -> bool:
        rows = self._write_one("lease", "UPDATE leases SET expires_at = ? WHERE name = ? AND token = ? RETURNING token",
                               [time.time() + float(ttl_s), name, token])
        return bool(rows)

    def release_lease(self, name: str, token: str) -> None:
        self._write_one("lease", "DELETE FROM leases WHERE name = ? AND token = ?", [name, token])

    def close(self) -> None:
        if os.getpid() != self._pid:
            return
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


def _delete_keys(cursor: duckdb.DuckDBPyConnection, keys: list[str]) -> int:
    deleted = 0
    for start in range(0, len(keys), _BATCH):
        chunk = keys[start : start + _BATCH]
        deleted += int(cursor.execute(f"DELETE FROM entries WHERE key IN ({','.join('?' * len(chunk))})", chunk).fetchone()[0])
    return deleted


def _parse_bool(text: str, url: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise StoreURLError(f"{url!r}: read_only must be true or false, not {text!r}")
