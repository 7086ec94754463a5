"""The SQL backends' shared part: :class:`SQLStore` (the data methods, once) over a :class:`Dialect`.

SQLite, libSQL/Turso, DuckDB and PostgreSQL are each a dialect (the statements that differ and a
few knobs) plus a connection model (how connections open, survive ``fork`` and run a
transaction), which is where each backend's real complexity lives and stays in its own module.
The helpers below narrow a glob to an index range on the key and build the ``find`` query from a
glob and a metadata filter with one dialect hook for the JSON field test. The exact ``find``
semantics are still decided by :func:`actioncache.stores.base.select_keys`; the SQL only narrows
the candidates.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from ..errors import StoreError, StoreURLError
from ._errors import StoreErrors
from ._eviction import AccessLog, EvictionConfig, cull, too_large
from .base import BuiltEntries, Entry, LazyMetadata, glob_literal_prefix, select_keys
from .redaction import redact_url
from .registry import Targets

# A field test: (metadata field name, wanted value) -> (SQL condition, its parameters), or None
# when the dialect cannot narrow on that value in SQL (the exact filter still applies after).
FieldClause = Callable[[str, Any], "tuple[str, list[Any]] | None"]

_SURROGATES_START, _SURROGATES_END = 0xD800, 0xDFFF


def upper_bound(prefix: str) -> str | None:
    """The smallest valid string greater than every string starting with ``prefix``.

    Code point order equals UTF-8 byte order, so this bound works for every backend that
    compares text bytewise. Surrogates cannot be encoded, so the bound skips over them.
    """
    while prefix:
        last = ord(prefix[-1])
        if last < 0x10FFFF:
            following = last + 1
            if _SURROGATES_START <= following <= _SURROGATES_END:
                following = _SURROGATES_END + 1
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None


def key_range(pattern: str | None, mark: str = "?") -> tuple[list[str], list[Any]]:
    """Conditions (``key >= ?``, ``key < ?``) that confine a glob to its literal prefix's range."""
    if pattern is None:
        return [], []
    prefix = glob_literal_prefix(pattern)
    if not prefix:
        return [], []
    where, params = [f"key >= {mark}"], [prefix]
    upper = upper_bound(prefix)
    if upper is not None:
        where.append(f"key < {mark}")
        params.append(upper)
    return where, params


def is_json_number(value: Any) -> bool:
    """True for an int or float that JSON would write as a number (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Characters a JSON path label may not hold in every dialect (quotes and escapes are read
# differently by SQLite, libSQL and DuckDB; ``*`` is a wildcard in DuckDB), plus control characters.
_UNSAFE_LABEL = frozenset('"\\*[].$\'') | frozenset(chr(c) for c in range(32))
# Integers beyond 2**53 lose precision in some dialects' JSON functions (libSQL reads 2**63-1 as a float).
_EXACT_INT = 2**53


def pushable(name: str, wanted: Any) -> bool:
    """Whether a dialect's JSON-path test of ``name == wanted`` agrees with :func:`select_keys`.

    Only plain field names and values every dialect compares exactly are pushed into SQL; any
    other filter (a name with a quote, backslash or ``*``, an empty name, text holding NUL, an
    integer beyond 2**53) is left to the exact match in Python over the candidate rows. The SQL
    only ever narrows, so this costs speed on odd filters, never a wrong answer.
    """
    if not name or any(c in _UNSAFE_LABEL for c in name):
        return False
    if isinstance(wanted, str):
        return "\0" not in wanted
    if isinstance(wanted, int) and not isinstance(wanted, bool):
        return -_EXACT_INT <= wanted <= _EXACT_INT
    if isinstance(wanted, float):
        return wanted == wanted and abs(wanted) < _EXACT_INT
    return wanted is None or isinstance(wanted, bool)


def find_query(
    select: str,
    pattern: str | None,
    metadata_filter: Mapping[str, Any] | None,
    field_clause: FieldClause,
) -> tuple[str, list[Any]]:
    """``select`` (``SELECT key, metadata FROM entries``) narrowed by the glob's key range and by
    whatever metadata tests the dialect can express."""
    where, params = key_range(pattern)
    for name, wanted in (metadata_filter or {}).items():
        clause = field_clause(name, wanted)
        if clause is not None:
            where.append(clause[0])
            params.extend(clause[1])
    if where:
        select += " WHERE " + " AND ".join(where)
    return select, params


def file_path(parts: SplitResult, url: str, form: str) -> str:
    """The absolute path a file-database URL names (``scheme:///abs/path``; four slashes too).

    ``url`` is shown redacted in error messages, ``form`` is the form to suggest.
    """
    shown = redact_url(url)
    if "#" in url:  # urlsplit ends the path there: ``c#d.db`` would open ``c``, another file than named
        raise StoreURLError(f"{shown!r} holds a '#', which ends a URL's path there; percent-encode '#' in the "
                            f"file name as %23: {form}")
    if parts.netloc not in ("", "localhost"):
        raise StoreURLError(f"{shown!r} has a host part; use three slashes and an absolute path: {form}")
    path = unquote(parts.path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")  # scheme:////abs/path (four slashes) names the same file
    if not path or path == "/":
        raise StoreURLError(f"{shown!r} names no file; use {form}")
    return path


def sqlite_targets(url: str) -> Targets:
    """What ``sqlite://`` opens: the file (and its -wal/-shm/-journal beside it); ``from_url`` opens this path."""
    return Targets((file_path(urlsplit(url), url, "sqlite:///abs/path.db"),))


DUCKDB_MEMORY = ":memory:"


def duckdb_targets(url: str) -> Targets:
    """What ``duckdb://`` opens: the file, or nothing for ``duckdb:///:memory:``."""
    path = file_path(urlsplit(url), url, "duckdb:///abs/path.duckdb (or duckdb:///:memory:)")
    return Targets(() if path == "/" + DUCKDB_MEMORY else (path,))


def libsql_targets(url: str) -> Targets:
    """What a libSQL URL opens: ``libsql+file://`` its file (and the host of ``?sync_url=``, an
    embedded replica's primary); ``libsql://``/``turso://`` the host."""
    parts = urlsplit(url)
    if parts.scheme.lower() == "libsql+file":
        path = file_path(parts, url, "libsql+file:///abs/path.db")
        sync = [value for name, value in parse_qsl(parts.query) if name == "sync_url"]
        return Targets((path,), tuple((urlsplit(sync[-1]).hostname or sync[-1]).lower() for _ in sync[-1:]))
    if not parts.hostname:
        raise StoreURLError(f"{redact_url(url)!r} names no host; use libsql://HOST or turso://HOST")
    return Targets((), (parts.hostname.lower(),))


# --- the shared SQL store ----------------------------------------------------------------

T = TypeVar("T")
BATCH = 500  # keys per DELETE ... IN (...)
FENCE_ROW = "\x1ffence"  # the leases table's row that counts grants (no lease may take this name)


class Dialect:
    """What differs between SQL engines in the statements :class:`SQLStore` runs.

    Statements are written once, in SQLite's spelling: ``?`` marks and ``{entries}``,
    ``{counters}``, ``{leases}``, ``{totals}`` for the tables; :meth:`statement` turns them into
    the driver's form (PostgreSQL: ``%s`` and quoted, schema-qualified names). A backend's
    dialect sets the statements that differ (``get``, ``put``, ``delete_expired``, the victims of
    each eviction policy ...) and the few knobs below.
    """

    # The engine's clock as epoch seconds (leases are then timed by the server, so clients with
    # skewed clocks agree); None: the client's clock, passed as a parameter.
    server_now: str | None = None
    # What LIMIT takes for "no limit" in ``delete_expired``.
    no_limit: Any = None
    begin = "BEGIN"
    # The byte length of a blob.
    length = "octet_length"
    # Whether text can hold NUL. When not, no key holding one can have been stored, so a read of
    # one finds nothing; ``nul_key_refusal`` (formatted with ``key``) refuses a write of one
    # before the driver cuts it at the NUL (None: the driver's own error says so).
    text_holds_nul = True
    nul_key_refusal: str | None = None
    # Size limits: victims of each policy (``key <> ?`` and ``LIMIT ?``) a batch at a time, as
    # (``victim_id``, bytes) rows; ``lock_total`` makes culls of concurrent writers take turns.
    cull_batch = 32
    victim_id = "key"
    lock_total = ""
    # Appended to the fenced write's lease check: PostgreSQL locks the lease row (FOR SHARE) so no
    # new grant can commit between the check and the write. SQLite, libSQL and DuckDB write one
    # transaction at a time, which gives the same guarantee.
    lock_lease = ""
    victims: Mapping[str, Sequence[str]] = {}
    get = ""
    put = ""
    put_tracked = ""
    touch = ""
    delete_expired = ""
    counters_select = "SELECT name, value FROM {counters} WHERE starts_with(name, ?)"

    def statement(self, text: str) -> Any:
        return text.format(entries="entries", counters="counters", leases="leases", totals="totals")

    def prefix_params(self, prefix: str) -> tuple[Any, ...]:
        """Parameters of ``counters_select`` for counters whose names start with ``prefix``."""
        return (prefix,)

    def put_params(self, entry: Entry, tracked: bool) -> tuple[Any, ...]:
        """Parameters of ``put`` (``put_tracked`` when ``tracked``) for ``entry``."""
        raise NotImplementedError

    def entry_bytes(self, entry: Entry, params: tuple[Any, ...]) -> int:
        """What ``entry`` counts against a size limit (key + value + metadata, as the totals count it)."""
        raise NotImplementedError

    def entry(self, key: str, row: Sequence[Any]) -> Entry:
        """The entry a ``get`` row holds."""
        value, metadata, created_at, expires_at = row
        return Entry(key, value, LazyMetadata(metadata), created_at, expires_at)

    def field_clause(self, name: str, wanted: Any) -> tuple[str, list[Any]] | None:
        """The SQL test of one metadata field for ``find`` (None: left to the exact match)."""
        return None

    def find(self, pattern: str | None, metadata_filter: Mapping[str, Any] | None) -> tuple[Any, list[Any]] | None:
        """The ``find`` query (key, metadata-or-NULL rows narrowed by the glob and filter); None: no key can match."""
        # Metadata sits after the value in each row: reading it walks a large value's overflow
        # pages, so a find that filters on keys only does not select it.
        columns = "key, metadata" if metadata_filter else "key, NULL"
        return find_query(f"SELECT {columns} FROM entries", pattern, metadata_filter, self.field_clause)

    def found(self, rows: list[Any]) -> Iterable[tuple[str, Any]]:
        """``find``'s rows as (key, metadata text) for :func:`select_keys`."""
        return rows


class SQLStore:
    """The :class:`~actioncache.stores.base.CacheStore` data methods, once, for every SQL backend.

    A backend is a :class:`Dialect` plus a connection model. The connection model provides
    ``self._local.conn`` (this thread's connection: ``execute(sql, params)`` returns something with
    ``fetchone``/``fetchall``/``rowcount``; ``self._local.reader``, what :meth:`get` reads with, is
    made from it by :meth:`_reader` and must be dropped with it), ``_conn()`` (opens it), :meth:`_run` when BEGIN/COMMIT
    does not fit (PostgreSQL retries on a new connection), ``after_fork`` and ``close``. What a
    backend does differently beyond that (DuckDB's UPDATE-then-INSERT put and hand-kept byte
    total, PostgreSQL's LISTEN/NOTIFY leases) it overrides in its own module.
    """

    dialect: Dialect
    errors: StoreErrors
    eviction: EvictionConfig | None
    _access: AccessLog | None
    _local: Any
    # The exceptions the driver raises (what the hit path catches without a context manager).
    _driver_errors: tuple[type[BaseException], ...] = ()

    def _init_sql(self, dialect: Dialect, errors: StoreErrors, eviction: EvictionConfig | None) -> None:
        self.dialect = dialect
        self.errors = errors
        self.eviction = eviction
        self._access = AccessLog() if eviction is not None and eviction.tracks_reads else None
        # Read on every hit: kept on the store, one attribute away.
        self._nul_unstorable = not dialect.text_holds_nul
        self._entry = dialect.entry
        self._built = BuiltEntries()  # an unchanged row gives back the same entry (a repeat hit's fast path)
        q = dialect.statement
        now = dialect.server_now
        expiry = "?" if now is None else f"{now} + ?"
        self._sql_get = q(dialect.get)
        self._sql_put = q(dialect.put)
        self._sql_put_tracked = q(dialect.put_tracked)
        self._sql_delete = q("DELETE FROM {entries} WHERE key = ?")
        self._sql_delete_expired = q(dialect.delete_expired)
        self._sql_count = q("SELECT count(*) FROM {entries}")
        self._sql_size = q(f"SELECT coalesce(sum({dialect.length}(value)), 0) FROM {{entries}}")
        self._sql_total = q("SELECT value FROM {totals} WHERE name = 'bytes'")
        self._sql_total_locked = q("SELECT value FROM {totals} WHERE name = 'bytes'" + dialect.lock_total)
        self._sql_counters = q(dialect.counters_select)
        # Only a lease that has run out is taken over; RETURNING says whether this call won.
        self._sql_acquire = q(
            "INSERT INTO {leases} (name, token, expires_at) VALUES (?, ?, " + expiry + ") "
            "ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at "
            "WHERE {leases}.expires_at <= " + ("?" if now is None else now) + " RETURNING token")
        self._sql_renew = q("UPDATE {leases} SET expires_at = " + expiry + " WHERE name = ? AND token = ? RETURNING token")
        self._sql_release = q("DELETE FROM {leases} WHERE name = ? AND token = ?")
        # The fencing number: one row of the leases table (a name no lease may take) whose
        # expires_at counts the grants, bumped atomically before each grant.
        self._sql_fence = q(
            "INSERT INTO {leases} (name, token, expires_at) VALUES (?, '', 1) "
            "ON CONFLICT (name) DO UPDATE SET expires_at = {leases}.expires_at + 1 RETURNING expires_at")
        self._sql_holds = q("SELECT 1 FROM {leases} WHERE name = ? AND token = ? AND expires_at > "
                            + ("?" if now is None else now) + dialect.lock_lease)
        self._sql_victims = {policy: [q(s) for s in statements] for policy, statements in dialect.victims.items()}
        self._sql_touch = q(dialect.touch)

    # --- the default connection model: one connection per thread ---------------------------
    # (SQLite and libSQL use it as is; PostgreSQL keeps its connections in a weak set and
    # retries on a new one; DuckDB opens one database and gives each thread a cursor of it.)

    def _init_connections(self) -> None:
        self._local = threading.local()
        self._pid = os.getpid()
        self._conns: Any = self._connection_set()
        self._conn_lock = threading.Lock()
        # Statements running now (through _run), so close() waits for them: closing a connection
        # another thread is using crashes the native drivers (DuckDB, libSQL) — a dropped Cache's
        # counters are written by a background thread while its owner may be closing the store.
        self._init_running()

    def _init_running(self) -> None:
        self._running = 0
        self._idle = threading.Condition()

    def _wait_idle(self) -> None:
        """Until no statement runs through _run (at most 10 s): then connections may be closed."""
        with self._idle:
            self._idle.wait_for(lambda: self._running == 0, timeout=10)

    def _connection_set(self) -> Any:
        return set()

    def after_fork(self) -> None:
        # The parent's connections belong to the parent. Start over without touching them
        # (closing them here could disturb the parent's locks).
        self._init_connections()

    def _connect(self) -> Any:
        raise NotImplementedError

    def _conn(self) -> Any:
        try:
            return self._local.conn
        except AttributeError:
            pass
        conn = self._local.conn = self._connect()
        with self._conn_lock:
            self._conns.add(conn)
        return conn

    def close(self) -> None:
        if os.getpid() != self._pid:
            return
        if self._access is not None:
            try:
                self._flush_access()
            except Exception:  # noqa: BLE001 - closing must not fail over a lost read order
                pass
        self._wait_idle()
        with self._conn_lock:
            conns, self._conns = list(self._conns), self._connection_set()
        for conn in conns:
            try:
                conn.close()
            except self._driver_errors:
                pass
        self._local = threading.local()

    # Held around every write when set (DuckDB: the file's write lock).
    _write_lock: Any = None

    def _run(self, op: str, work: Callable[[Any], T], *, write: bool = False, transaction: bool = False,
             retry: bool = True) -> T:
        """``work(conn)`` on this thread's connection, in one transaction if asked, errors translated.

        ``retry=False`` marks work that must not run twice (a lost commit reply would count twice).
        Every statement but the hit path's runs here, so the translation is a plain try (no
        context manager to enter and leave per call).
        """
        conn = self._conn()
        lock = self._write_lock if write or transaction else None
        with self._idle:
            self._running += 1
        if lock is not None:
            lock.acquire()
        try:
            if not transaction:
                return work(conn)
            conn.execute(self.dialect.begin)
            try:
                result = work(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return result
        except self.errors.catch as exc:
            raise self.errors.error(op, exc) from exc
        finally:
            if lock is not None:
                lock.release()
            with self._idle:
                self._running -= 1
                if not self._running:
                    self._idle.notify_all()

    def _read_failed(self, op: str, exc: BaseException, work: Callable[[Any], T]) -> T:
        """The hit path's driver error: translated (PostgreSQL first retries on a new connection)."""
        raise self.errors.error(op, exc) from exc

    # --- reads ------------------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        # The hit path: one SELECT on this thread's connection, errors caught without a context
        # manager (a try costs nothing until it raises; a with block is two calls per read).
        if self._nul_unstorable and "\0" in key:
            return None
        try:
            reader = self._local.reader
        except AttributeError:
            reader = None
        if reader is None:  # this thread's first call, or its connection was dropped
            row = self._run("get", lambda c: self._read_on(c, key))
        else:
            try:
                row = reader.execute(self._sql_get, (key,)).fetchone()
            except self._driver_errors as exc:
                row = self._read_failed("get", exc, lambda c: self._read_on(c, key))
        if row is None:
            return None
        if self._access is not None and self._access.record(key, time.time()):
            self._flush_access()
        built = self._built.get(key)  # the entry built for this very row (BuiltEntries)
        if built is not None and built[0] == row:
            entry: Entry = built[1]
            return entry
        return self._built.keep(key, row, self._entry(key, row))

    def _read_on(self, conn: Any, key: str) -> Any:
        """The hit path's SELECT on ``conn``; what it ran on serves this thread's next reads."""
        reader = self._local.reader = self._reader(conn)
        return reader.execute(self._sql_get, (key,)).fetchone()

    def _reader(self, conn: Any) -> Any:
        """What the hit path's SELECT runs on: the connection itself (PostgreSQL: a kept cursor)."""
        return conn

    def find(self, pattern: str | None = None, metadata_filter: Mapping[str, Any] | None = None,
             limit: int | None = None) -> list[str]:
        query = self.dialect.find(pattern, metadata_filter)
        if query is None:
            return []
        statement, params = query
        rows = self._run("find", lambda c: c.execute(statement, params).fetchall())
        return select_keys(self.dialect.found(rows), pattern, metadata_filter, limit)

    def count(self) -> int:
        return int(self._run("count", lambda c: c.execute(self._sql_count).fetchone()[0]))

    def size_bytes(self) -> int:
        if self.eviction is not None:  # what the limit counts: key + value + metadata
            return int(self._run("size", lambda c: c.execute(self._sql_total).fetchone()[0]))
        return int(self._run("size", lambda c: c.execute(self._sql_size).fetchone()[0]))

    def counters(self, prefix: str = "") -> dict[str, float]:
        params = self.dialect.prefix_params(prefix)
        rows = self._run("counters", lambda c: c.execute(self._sql_counters, params).fetchall())
        return dict(rows)

    # --- writes -----------------------------------------------------------------------------

    def put(self, entry: Entry) -> None:
        refusal = self.dialect.nul_key_refusal
        if refusal is not None and "\0" in entry.key:
            raise StoreError(refusal.format(key=entry.key))
        limit = self.eviction
        if limit is None:
            params = self.dialect.put_params(entry, False)
            self._run("put", lambda c: c.execute(self._sql_put, params), write=True)
            return
        params = self.dialect.put_params(entry, True)
        too_big = too_large(limit, self.dialect.entry_bytes(entry, params), self.errors.where)
        if too_big:
            self.delete(entry.key)  # never leave the older value under this key
            raise too_big

        def put_and_cull(conn: Any) -> None:
            conn.execute(self._sql_put_tracked, params)
            self._cull(conn, limit, entry.key)

        self._run("put", put_and_cull, transaction=True, retry=False)

    def _holds(self, conn: Any, lease: str, token: str) -> bool:
        """Inside a transaction: whether ``token`` is the current, unexpired grant of ``lease``."""
        params: tuple[Any, ...] = (lease, token) if self.dialect.server_now is not None else (lease, token, time.time())
        return conn.execute(self._sql_holds, params).fetchone() is not None

    def put_fenced(self, entry: Entry, lease: str, token: str) -> bool:
        """Store ``entry`` only while ``token`` is the current grant of ``lease`` (checked in the
        transaction that writes); False, nothing written, when the lease was lost (expired, taken
        over, released)."""
        refusal = self.dialect.nul_key_refusal
        if refusal is not None and "\0" in entry.key:
            raise StoreError(refusal.format(key=entry.key))
        limit = self.eviction
        params = self.dialect.put_params(entry, limit is not None)
        if limit is not None:
            too_big = too_large(limit, self.dialect.entry_bytes(entry, params), self.errors.where)
            if too_big:
                def drop_older(conn: Any) -> None:
                    if self._holds(conn, lease, token):  # never remove a newer holder's value
                        conn.execute(self._sql_delete, (entry.key,))

                self._run("put", drop_older, transaction=True, retry=False)
                raise too_big

        def put_if_held(conn: Any) -> bool:
            if not self._holds(conn, lease, token):
                return False
            if limit is None:
                conn.execute(self._sql_put, params)
            else:
                conn.execute(self._sql_put_tracked, params)
                self._cull(conn, limit, entry.key)
            return True

        return self._run("put", put_if_held, transaction=True, retry=False)

    def _cull(self, conn: Any, limit: EvictionConfig, written: str) -> None:
        """Inside a put's transaction: when over the limit, remove victims down to the target."""
        total = conn.execute(self._sql_total_locked).fetchone()
        if total is None or total[0] <= limit.max_size_bytes:
            return
        if self._access is not None:
            self._touch(conn, self._access.drain())
        batch = self.dialect.cull_batch
        # The entry just written is never its own write's victim (key <> ?).
        cull(int(total[0]) - limit.target_bytes,
             [self._victims_of(conn, victims, written, batch) for victims in self._sql_victims[limit.policy]],
             lambda ids: self._delete_where(conn, self.dialect.victim_id, ids))

    @staticmethod
    def _victims_of(conn: Any, statement: Any, written: str, batch: int) -> Callable[[], list[Any]]:
        """The next batch of one policy's victims, read when the cull asks for it."""
        return lambda: list(conn.execute(statement, (written, batch)).fetchall())

    def _touch(self, conn: Any, rows: list[tuple[float, int, str]]) -> None:
        for row in rows:  # one statement per key: not every driver has executemany
            conn.execute(self._sql_touch, row)

    def _flush_access(self) -> None:
        """Write the batched reads. A batch that cannot be written (busy, read-only) is dropped:
        the order is then a little less exact, and the read that triggered it still hits."""
        rows = self._access.drain() if self._access is not None else []
        if rows:
            try:
                self._run("touch", lambda c: self._touch(c, rows), transaction=True, retry=False)
            except StoreError:
                pass

    def _delete_where(self, conn: Any, column: str, ids: list[Any]) -> int:
        """Delete the entries whose ``column`` (``key``, or the victims' id) is one of ``ids``."""
        marks = ",".join("?" * len(ids))
        return int(conn.execute(f"DELETE FROM entries WHERE {column} IN ({marks})", ids).rowcount)

    def delete(self, key: str) -> bool:
        if self._nul_unstorable and "\0" in key:
            return False
        return int(self._run("delete", lambda c: c.execute(self._sql_delete, (key,)).rowcount, write=True)) > 0

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = [key for key in keys if not (self._nul_unstorable and "\0" in key)]
        deleted = 0
        for start in range(0, len(keys), BATCH):
            chunk = keys[start:start + BATCH]
            deleted += self._run("delete", lambda c: self._delete_where(c, "key", chunk), write=True)
        return deleted

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        params = (now, self.dialect.no_limit if limit is None else int(limit))
        return int(self._run("cleanup", lambda c: c.execute(self._sql_delete_expired, params).rowcount, write=True))

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        if not deltas:
            return
        # One statement: atomic without a transaction, one round trip on a remote database, and
        # sorted so concurrent flushes lock rows in one order and never deadlock.
        rows = sorted((name, float(delta)) for name, delta in deltas.items())
        statement = self.dialect.statement(
            "INSERT INTO {counters} (name, value) VALUES " + ", ".join(["(?, ?)"] * len(rows))
            + " ON CONFLICT (name) DO UPDATE SET value = {counters}.value + excluded.value")
        params = [part for row in rows for part in row]
        # Not retried: a commit whose reply was lost would be counted twice.
        self._run("counters", lambda c: c.execute(statement, params), write=True, retry=False)

    # --- leases -----------------------------------------------------------------------------

    def _expiry(self, ttl_s: float) -> float:
        return float(ttl_s) if self.dialect.server_now is not None else time.time() + float(ttl_s)

    def _next_fence(self) -> int:
        rows = self._run("lease", lambda c: c.execute(self._sql_fence, (FENCE_ROW,)).fetchall(), write=True,
                         retry=False)
        return int(rows[0][0])

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        """A token ``"<fencing number>:<random hex>"`` when the lease was free, else None; the
        number grows with every grant on this store (across names, releases and expiries)."""
        if name == FENCE_ROW:
            raise StoreError(f"{self.errors.where}: the lease name {name!r} is reserved (it keeps the fencing number)")
        token = f"{self._next_fence()}:{os.urandom(16).hex()}"  # not uuid: it imports platform, ~3 ms a run
        if self.dialect.server_now is not None:
            params: tuple[Any, ...] = (name, token, float(ttl_s))
        else:
            now = time.time()
            params = (name, token, now + float(ttl_s), now)
        rows = self._run("lease", lambda c: c.execute(self._sql_acquire, params).fetchall(), write=True, retry=False)
        return token if rows and rows[0][0] == token else None

    def renew_lease(self, name: str, token: str, ttl_s: float) -> bool:
        params = (self._expiry(ttl_s), name, token)
        return bool(self._run("lease", lambda c: c.execute(self._sql_renew, params).fetchall(), write=True,
                              retry=False))

    def release_lease(self, name: str, token: str) -> None:
        self._run("lease", lambda c: c.execute(self._sql_release, (name, token)), write=True)
