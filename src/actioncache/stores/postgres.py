"""PostgreSQL: a shared cache in a database many processes and machines already trust.

One table per store (``?table=`` in the URL, default ``actioncache``; ``?schema=`` to put it in
another schema) plus ``<table>_counters`` and ``<table>_leases``:

* ``key text COLLATE "C" PRIMARY KEY``: byte order, so a glob's literal prefix becomes an
  index range (``LIKE 'prefix%'``) and the rest is matched with fnmatch in Python.
* ``metadata jsonb`` with a GIN index (``jsonb_path_ops``) for ``metadata @> filter``, plus an
  ``action`` column with a b-tree index: invalidating one action never scans the table.
* ``expires_at double precision`` with a partial index: cleanup deletes the oldest expired rows
  (``FOR UPDATE SKIP LOCKED``, so concurrent cleaners do not queue behind each other).
* ``INSERT … ON CONFLICT DO UPDATE``: every put is one atomic upsert; readers see the old row or
  the new one, never a mix (MVCC).
* Leases are rows timed by the server's clock (``clock_timestamp()``), so clients with skewed
  clocks agree on when a lease lapses.

Connections: one per thread, opened lazily (a ``Cache`` over a server that is down still
constructs), autocommit, dropped after a connection error and re-made on the next call, and
never shared across ``fork``. Every query is parameterized; identifiers are quoted by psycopg.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import uuid
import weakref
from typing import Any, Callable, Iterable, Mapping, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import StoreError, StoreURLError
from ._eviction import AccessLog, EvictionConfig, cull, eviction_config, too_large
from ._sql import key_range
from .base import Entry, LazyMetadata, glob_tokens, redact_secrets, redact_url, select_keys, url_secrets

try:
    import psycopg
    from psycopg import sql
    from psycopg.types.json import Jsonb
except ImportError as exc:  # pragma: no cover - exercised when the extra is missing
    raise ImportError(f"psycopg (version 3) is not installed ({exc})") from exc

T = TypeVar("T")

# jsonb keeps a number's digits but not its notation: Python writes 1e300 as ``1e+300``, which
# jsonb reads back as the integer 10**300, and an exact match (or get) would then see an int.
# A float that large is integral, so it is written as its exact digits plus ``.0``, which reads
# back as the same float. Smaller floats already keep a decimal point (1e-05 reads back as 0.00001).
_EXPONENT_FLOAT = 1e16


def _big_float(value: Any) -> bool:
    return isinstance(value, float) and _EXPONENT_FLOAT <= abs(value) < float("inf")


def _holds_big_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_big_float(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_big_float(v) for v in value)
    return _big_float(value)


def _json_key(key: Any) -> str:
    # json.dumps turns a non-text key into text (True -> "true"); do the same.
    return json.dumps(key if isinstance(key, str) else next(iter(json.loads(json.dumps({key: None})))))


def _jsonb_text(value: Any) -> str:
    """JSON text for a jsonb column that reads back as ``value`` (see ``_EXPONENT_FLOAT``)."""
    if not _holds_big_float(value):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_key(k)}:{_jsonb_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_jsonb_text(v) for v in value) + "]"
    return f"{int(value)}.0"


# jsonb cannot hold NUL. In metadata a NUL is stored as U+E000 U+E001, and U+E000 itself (a
# private-use character) as U+E000 U+E000, so both read back exactly and a filter escaped the same
# way matches. Escaping works on json.dumps text (ASCII, so every such character is a \u escape;
# an escaped backslash is matched first so "\\u0000" is left alone); reading works on jsonb's
# text output, where U+E000 appears as itself.
_NUL_ESCAPE = re.compile(r"\\\\|\\u0000|\\ue000")
_NUL_UNESCAPE = re.compile("\ue000([\ue000\ue001])")


def _escape_nul(json_text: str) -> str:
    return _NUL_ESCAPE.sub(lambda m: {"\\u0000": "\\ue000\\ue001", "\\ue000": "\\ue000\\ue000"}.get(m[0], m[0]), json_text)


def _unescape_nul(jsonb_text: str) -> str:
    if "\ue000" not in jsonb_text:
        return jsonb_text
    return _NUL_UNESCAPE.sub(lambda m: "\ue000" if m[1] == "\ue000" else "\\u0000", jsonb_text)


def _jsonb_dumps(value: Any) -> str:
    """What a jsonb column gets for ``value``: big floats and NUL made to survive (see above)."""
    return _escape_nul(_jsonb_text(value))


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
_ACTION_FIELD = "_cache_action"
_BATCH = 500
_OUR_OPTIONS = ("table", "schema", "synchronous_commit")
_SYNC_COMMIT = ("off", "local", "remote_write", "on", "remote_apply")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {entries} (
    key         text COLLATE "C" PRIMARY KEY,
    value       bytea NOT NULL,
    metadata    jsonb NOT NULL,
    created_at  double precision NOT NULL,
    expires_at  double precision,
    action      text
);
CREATE INDEX IF NOT EXISTS {expires_idx} ON {entries} (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS {action_idx} ON {entries} (action) WHERE action IS NOT NULL;
CREATE INDEX IF NOT EXISTS {meta_idx} ON {entries} USING gin (metadata jsonb_path_ops);
CREATE TABLE IF NOT EXISTS {counters} (name text PRIMARY KEY, value double precision NOT NULL);
CREATE TABLE IF NOT EXISTS {leases} (name text PRIMARY KEY, token text NOT NULL, expires_at double precision NOT NULL);
"""
# Size limits (stores/_eviction.py): the bytes held, kept in a one-row table by a trigger so a put
# reads one row instead of summing the table; indexes give each policy's next victims.
_ENTRY_BYTES = "octet_length({0}.key) + octet_length({0}.value) + octet_length({0}.metadata::text)"
_EVICTION_SCHEMA = [
    "ALTER TABLE {entries} ADD COLUMN IF NOT EXISTS accessed_at double precision",
    "ALTER TABLE {entries} ADD COLUMN IF NOT EXISTS hits bigint NOT NULL DEFAULT 0",
    "CREATE TABLE IF NOT EXISTS {totals} (name text PRIMARY KEY, value bigint NOT NULL)",
    "CREATE OR REPLACE FUNCTION {bytes_fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "IF TG_OP <> 'INSERT' THEN UPDATE {totals} SET value = value - (" + _ENTRY_BYTES.format("OLD") + ") "
    "WHERE name = 'bytes'; END IF; "
    "IF TG_OP <> 'DELETE' THEN UPDATE {totals} SET value = value + (" + _ENTRY_BYTES.format("NEW") + ") "
    "WHERE name = 'bytes'; END IF; RETURN NULL; END $$",
    # Made before the first total is summed, in the same transaction: the trigger's lock holds off
    # every other writer until both are there, so no write is counted twice or missed.
    "CREATE OR REPLACE TRIGGER {bytes_trigger} AFTER INSERT OR DELETE OR UPDATE OF key, value, metadata "
    "ON {entries} FOR EACH ROW EXECUTE FUNCTION {bytes_fn}()",
    "INSERT INTO {totals} (name, value) SELECT 'bytes', coalesce(sum(" + _ENTRY_BYTES.format("{entries}") + "), 0) "
    "FROM {entries} ON CONFLICT (name) DO NOTHING",
    "CREATE INDEX IF NOT EXISTS {accessed_idx} ON {entries} (accessed_at NULLS FIRST)",
    "CREATE INDEX IF NOT EXISTS {hits_idx} ON {entries} (hits, accessed_at NULLS FIRST)",
]
_VICTIM_COLUMNS = "SELECT key, " + _ENTRY_BYTES.format("{entries}") + " FROM {entries}"
# The entry just written is never its own write's victim (key <> %s).
_VICTIMS = {
    "lru": [_VICTIM_COLUMNS + " WHERE key <> %s ORDER BY accessed_at NULLS FIRST LIMIT %s"],
    "lfu": [_VICTIM_COLUMNS + " WHERE key <> %s ORDER BY hits, accessed_at NULLS FIRST LIMIT %s"],
    "ttl": [_VICTIM_COLUMNS + " WHERE expires_at IS NOT NULL AND key <> %s ORDER BY expires_at LIMIT %s",
            _VICTIM_COLUMNS + " WHERE key <> %s ORDER BY accessed_at NULLS FIRST LIMIT %s"],
}
_CULL_BATCH = 32

_SERVER_NOW = "extract(epoch from clock_timestamp())"


def glob_to_like(pattern: str) -> str:
    """A LIKE pattern (escape character ``\\``) matching every key the glob matches (a superset).

    ``*`` becomes ``%``; ``?`` and a bracket set become ``_`` (one character, as in fnmatch);
    LIKE's own wildcards and the escape character in literal text are escaped.
    """
    out: list[str] = []
    for kind, text in glob_tokens(pattern):
        if kind == "lit":
            out.append("\\" + text if text in "%_\\" else text)
        elif kind != "star":
            out.append("_")
        elif not (out and out[-1] == "%"):
            out.append("%")
    return "".join(out)


class PostgresStore:
    """The ``CacheStore`` protocol over one PostgreSQL table (see the module docstring)."""

    def __init__(self, conninfo: str, *, table: str = "actioncache", schema: str | None = None,
                 synchronous_commit: str = "off", url: str | None = None,
                 max_size_bytes: int | str | None = None, eviction: str | None = None) -> None:
        self.eviction: EvictionConfig | None = eviction_config(max_size_bytes, eviction)
        self._access: AccessLog | None = AccessLog() if self.eviction and self.eviction.tracks_reads else None
        for what, name in (("table", table), ("schema", schema)):
            if name is not None and not _IDENTIFIER.match(name):
                raise StoreURLError(
                    f"PostgreSQL {what} name {name!r} is not allowed; use 1-48 letters, digits or '_', "
                    "starting with a letter or '_' (e.g. ?table=actioncache)"
                )
        if synchronous_commit not in _SYNC_COMMIT:
            raise StoreURLError(
                f"synchronous_commit={synchronous_commit!r} is not a PostgreSQL setting; use one of {', '.join(_SYNC_COMMIT)}"
            )
        self.conninfo = conninfo
        self.url = redact_url(url or conninfo)  # shown by stats and logs: never the password
        self._secrets = url_secrets(url or conninfo)  # scrubbed from libpq's messages, which may quote them
        self.table = table
        self.schema = schema
        # A cache entry lost to a server crash is a miss, not lost data: by default a commit does
        # not wait for its WAL flush (still atomic and consistent; ~10x faster writes).
        self.synchronous_commit = synchronous_commit
        self._where = f"PostgreSQL at {self.url} (table {table!r})"

        def ident(name: str) -> sql.Composable:
            return sql.Identifier(schema, name) if schema else sql.Identifier(name)

        names = {
            "entries": ident(table),
            "counters": ident(table + "_counters"),
            "leases": ident(table + "_leases"),
            "expires_idx": sql.Identifier(table + "_expires_at"),
            "action_idx": sql.Identifier(table + "_action"),
            "meta_idx": sql.Identifier(table + "_metadata"),
            "totals": ident(table + "_totals"),
            "bytes_fn": ident(table + "_count_bytes"),
            "bytes_trigger": sql.Identifier(table + "_count_bytes"),
            "accessed_idx": sql.Identifier(table + "_accessed_at"),
            "hits_idx": sql.Identifier(table + "_hits"),
        }
        self._names = names
        q = self._q
        self._sql_get = q("SELECT value, metadata::text, created_at, expires_at FROM {entries} WHERE key = %s")
        self._sql_put = q(
            "INSERT INTO {entries} (key, value, metadata, created_at, expires_at, action) "
            "VALUES (%s, %b, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
            "metadata = excluded.metadata, created_at = excluded.created_at, "
            "expires_at = excluded.expires_at, action = excluded.action"
        )
        # With a size limit, a write is also a use (LRU) and starts its read count again (LFU).
        # Entries written by caches without a limit keep accessed_at NULL: they are culled first.
        self._sql_put_tracked = q(
            "INSERT INTO {entries} (key, value, metadata, created_at, expires_at, action, accessed_at) "
            "VALUES (%s, %b, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
            "metadata = excluded.metadata, created_at = excluded.created_at, "
            "expires_at = excluded.expires_at, action = excluded.action, accessed_at = excluded.accessed_at, hits = 0"
        )
        self._sql_touch = q("UPDATE {entries} SET accessed_at = greatest(coalesce(accessed_at, 0), %s), "
                            "hits = hits + %s WHERE key = %s")
        self._sql_delete_expired = q(
            "DELETE FROM {entries} WHERE key IN (SELECT key FROM {entries} WHERE expires_at IS NOT NULL "
            "AND expires_at <= %s ORDER BY expires_at LIMIT %s FOR UPDATE SKIP LOCKED)"
        )
        self._sql_lease = q(
            "INSERT INTO {leases} (name, token, expires_at) VALUES (%s, %s, " + _SERVER_NOW + " + %s) "
            "ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at "
            "WHERE {leases}.expires_at <= " + _SERVER_NOW + " RETURNING token"
        )
        self._local = threading.local()
        self._pid = os.getpid()
        # Weak: a thread that ends takes its connection with it (psycopg closes it when freed).
        self._conns: "weakref.WeakSet[psycopg.Connection[Any]]" = weakref.WeakSet()
        self._conns_lock = threading.Lock()
        self._schema_ready = False

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(**self._names)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> "PostgresStore":
        """``postgresql://user[:pass]@host:port/db?table=NAME&schema=NAME&synchronous_commit=off``
        (other query options go to libpq)."""
        parts = urlsplit(url)
        theirs: list[tuple[str, str]] = []
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name in _OUR_OPTIONS or name in ("max_size_bytes", "eviction"):
                options.setdefault(name, value)
            else:
                theirs.append((name, value))
        if not any(name == "connect_timeout" for name, _ in theirs):
            theirs.append(("connect_timeout", "5"))
        conninfo = urlunsplit(parts._replace(scheme="postgresql", query=urlencode(theirs)))
        return cls(conninfo, url=url, **options)

    # --- connections --------------------------------------------------------------------

    def _error(self, op: str, exc: BaseException) -> StoreError:
        if isinstance(exc, psycopg.OperationalError):
            hint = ("is PostgreSQL running and reachable, and do the user, password and database in the "
                    "URL exist? start the server or fix the URL")
        elif isinstance(exc, psycopg.errors.InsufficientPrivilege):
            hint = "the user may not create or write the table; grant it or choose ?schema= the user owns"
        elif isinstance(exc, psycopg.DataError) and ("0x00" in str(exc) or "\\u0000" in str(exc)):
            hint = "PostgreSQL text cannot hold NUL characters; remove them from keys"
        else:
            hint = "see the PostgreSQL error above"
        message = redact_secrets(" ".join(str(exc).split()), self._secrets)
        return StoreError(f"{self._where}: {op} failed: {message} ({hint})")

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.conninfo, autocommit=True)
        try:
            conn.execute("SELECT set_config('synchronous_commit', %s, false)", (self.synchronous_commit,))
            if not self._schema_ready:
                # Concurrent first opens of one table from many processes must not race on DDL.
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                                 (f"actioncache:{self.schema}.{self.table}",))
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(self._q(statement))
                    if self.eviction is not None:
                        for statement in _EVICTION_SCHEMA:
                            conn.execute(self._q(statement))
                self._schema_ready = True
        except BaseException:
            conn.close()
            raise
        with self._conns_lock:
            self._conns.add(conn)
        return conn

    def _conn(self) -> psycopg.Connection[Any]:
        if os.getpid() != self._pid:
            # A connection never crosses a fork: the child starts over, leaving the parent's alone.
            self._pid = os.getpid()
            self._local = threading.local()
            self._conns = weakref.WeakSet()
            self._conns_lock = threading.Lock()
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._local.conn = self._connect()
        return conn

    def _drop_conn(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._conns_lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except psycopg.Error:
                pass

    def _run(self, op: str, work: Callable[[psycopg.Connection[Any]], T], *, retry: bool = True) -> T:
        """Run ``work`` on this thread's connection; a connection that went stale (server restart)
        is replaced and, for idempotent work, tried once more; dropped tables are re-created."""
        for attempt in (0, 1):
            fresh = getattr(self._local, "conn", None) is None
            try:
                return work(self._conn())
            except psycopg.Error as exc:
                conn = getattr(self._local, "conn", None)
                # psycopg marks a connection that lost its server "broken"; a statement error
                # (a timeout, a constraint) leaves it usable and is not retried.
                broken = conn is None or conn.broken or conn.closed
                if broken:
                    self._drop_conn()
                if broken and retry and attempt == 0 and not fresh:
                    continue
                if isinstance(exc, psycopg.errors.UndefinedTable) and attempt == 0 and self._schema_ready:
                    # Someone dropped the tables under us: make them again on a new connection.
                    self._schema_ready = False
                    self._drop_conn()
                    continue
                raise self._error(op, exc) from exc
        raise AssertionError("unreachable")

    # --- protocol -----------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        if "\0" in key:
            return None  # PostgreSQL text cannot hold NUL: no such key can have been stored
        row = self._run("get", lambda c: c.execute(self._sql_get, (key,)).fetchone())
        if row is None:
            return None
        value, metadata, created_at, expires_at = row
        if self._access is not None and self._access.record(key, time.time()):
            self._flush_access()
        return Entry(key, value, LazyMetadata(_unescape_nul(metadata)), created_at, expires_at)

    def put(self, entry: Entry) -> None:
        meta = dict(entry.metadata)
        action = meta.get(_ACTION_FIELD)
        params = (entry.key, bytes(entry.value), Jsonb(meta, dumps=_jsonb_dumps), entry.created_at, entry.expires_at,
                  action if isinstance(action, str) and "\0" not in action else None)
        limit = self.eviction
        if limit is None:
            self._run("put", lambda c: c.execute(self._sql_put, params))
            return
        params = (*params, time.time())
        problem = too_large(limit, len(entry.key.encode()) + len(params[1]) + len(json.dumps(meta).encode()))
        if problem:
            self.delete(entry.key)  # never leave the older value under this key
            raise StoreError(f"{self._where}: {problem}")

        def put_and_cull(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                conn.execute(self._sql_put_tracked, params)
                # FOR UPDATE: one culler at a time; the others' puts wait here, then see its result.
                total = conn.execute(self._q("SELECT value FROM {totals} WHERE name = 'bytes' FOR UPDATE")).fetchone()
                if total is None or total[0] <= limit.max_size_bytes:
                    return
                if self._access is not None:
                    self._touch(conn, self._access.drain())
                delete = self._q("DELETE FROM {entries} WHERE key = ANY(%s)")
                cull(total[0] - limit.target_bytes,
                     [lambda q=self._q(victims): conn.execute(q, (entry.key, _CULL_BATCH)).fetchall()
                      for victims in _VICTIMS[limit.policy]],
                     lambda keys: conn.execute(delete, (keys,)))

        self._run("put", put_and_cull, retry=False)

    def _touch(self, conn: psycopg.Connection[Any], rows: list[tuple[float, int, str]]) -> None:
        if rows:
            conn.cursor().executemany(self._sql_touch, rows)

    def _flush_access(self) -> None:
        """Write the batched reads; a batch that cannot be written is dropped (the order is then a
        little less exact, and the read that triggered it still hits)."""
        rows = self._access.drain() if self._access is not None else []
        if rows:
            try:
                self._run("touch", lambda c: self._touch(c, rows), retry=False)
            except StoreError:
                pass

    def delete(self, key: str) -> bool:
        if "\0" in key:
            return False
        return self._run("delete", lambda c: c.execute(self._q("DELETE FROM {entries} WHERE key = %s"),
                                                       (key,)).rowcount) > 0

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        statement = self._q("DELETE FROM {entries} WHERE key = ANY(%s)")
        deleted = 0
        for start in range(0, len(keys), _BATCH):
            chunk = keys[start:start + _BATCH]
            deleted += self._run("delete", lambda c: c.execute(statement, (chunk,)).rowcount)
        return deleted

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        if pattern is not None and "\0" in pattern:
            return []  # PostgreSQL text cannot hold NUL, so no stored key can match
        where: list[sql.Composable] = []
        params: list[Any] = []
        if pattern is not None:
            where.append(sql.SQL("key LIKE %s ESCAPE '\\'"))
            params.append(glob_to_like(pattern))
            # An explicit range on the literal prefix uses the primary key even in a generic
            # (prepared) plan, where the planner cannot look inside the LIKE parameter.
            conditions, bounds = key_range(pattern, mark="%s")
            where.extend(sql.SQL(c) for c in conditions)
            params.extend(bounds)
        if metadata_filter:
            action = metadata_filter.get(_ACTION_FIELD)
            if isinstance(action, str) and "\0" not in action:  # the action column holds no NUL
                where.append(sql.SQL("action = %s"))
                params.append(action)
            # Containment narrows through the GIN index; it is looser than equality (1 matches
            # 1.0, an array contains its members), so metadata_matches below decides.
            where.append(sql.SQL("metadata @> %s"))
            params.append(Jsonb(dict(metadata_filter), dumps=_jsonb_dumps))
        columns = "key, metadata::text" if metadata_filter else "key, NULL"
        statement = self._q(f"SELECT {columns} FROM {{entries}}")
        if where:
            statement = statement + sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where)
        rows = self._run("find", lambda c: c.execute(statement, params).fetchall())
        rows = [(key, None if meta is None else _unescape_nul(meta)) for key, meta in rows]
        return select_keys(rows, pattern, metadata_filter, limit)

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        return self._run("cleanup", lambda c: c.execute(self._sql_delete_expired, (now, limit)).rowcount)

    def count(self) -> int:
        return int(self._run("count", lambda c: c.execute(self._q("SELECT count(*) FROM {entries}")).fetchone()[0]))

    def size_bytes(self) -> int:
        if self.eviction is not None:  # what the limit counts: key + value + metadata
            statement = self._q("SELECT value FROM {totals} WHERE name = 'bytes'")
            return int(self._run("size", lambda c: c.execute(statement).fetchone()[0]))
        statement = self._q("SELECT coalesce(sum(octet_length(value)), 0) FROM {entries}")
        return int(self._run("size", lambda c: c.execute(statement).fetchone()[0]))

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        if not deltas:
            return
        statement = self._q(
            "INSERT INTO {counters} (name, value) VALUES (%s, %s) "
            "ON CONFLICT (name) DO UPDATE SET value = {counters}.value + excluded.value"
        )
        # Sorted, so concurrent flushes lock rows in one order and never deadlock.
        rows = sorted((name, float(delta)) for name, delta in deltas.items())

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(statement, rows)

        # Not retried: a commit whose reply was lost would be counted twice.
        self._run("counters", work, retry=False)

    def counters(self, prefix: str = "") -> dict[str, float]:
        statement = self._q("SELECT name, value FROM {counters} WHERE starts_with(name, %s)")
        return {name: value for name, value in self._run("counters", lambda c: c.execute(statement, (prefix,)).fetchall())}

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        token = uuid.uuid4().hex
        row = self._run("lease", lambda c: c.execute(self._sql_lease, (name, token, float(ttl_s))).fetchone(),
                        retry=False)
        return token if row is not None and row[0] == token else None

    def server_time(self) -> float:
        """The server's clock (epoch seconds): the one clock expiry is judged by (see the core)."""
        return float(self._run("time", lambda c: c.execute("SELECT " + _SERVER_NOW).fetchone()[0]))

    def renew_lease(self, name: str, token: str, ttl_s: float) -> bool:
        statement = self._q("UPDATE {leases} SET expires_at = " + _SERVER_NOW + " + %s "
                            "WHERE name = %s AND token = %s RETURNING token")
        row = self._run("lease", lambda c: c.execute(statement, (float(ttl_s), name, token)).fetchone(), retry=False)
        return row is not None

    def _lease_channel(self, name: str) -> str:
        # A channel name is an identifier (at most 63 bytes): a digest of the table and lease name.
        return "ac_" + hashlib.sha256(f"{self.schema}.{self.table}:{name}".encode()).hexdigest()[:40]

    def wait_lease(self, name: str, timeout_s: float) -> None:
        """Block until the lease on ``name`` is released (LISTEN/NOTIFY) or ``timeout_s`` passes."""
        channel = self._lease_channel(name)
        held = self._q("SELECT 1 FROM {leases} WHERE name = %s")

        def wait(conn: psycopg.Connection[Any]) -> None:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            try:
                if conn.execute(held, (name,)).fetchone() is not None:  # still held: wait to be told
                    for _ in conn.notifies(timeout=timeout_s, stop_after=1):
                        pass
            finally:
                conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(channel)))

        self._run("lease", wait, retry=False)

    def release_lease(self, name: str, token: str) -> None:
        statement = self._q("WITH gone AS (DELETE FROM {leases} WHERE name = %s AND token = %s RETURNING 1) "
                            "SELECT pg_notify(%s, 'released') FROM gone")
        self._run("lease", lambda c: c.execute(statement, (name, token, self._lease_channel(name))))

    def drop(self) -> None:
        """Drop this store's tables (everything it holds). For tests and for retiring a cache."""
        tables = self._q("DROP TABLE IF EXISTS {entries}, {counters}, {leases}, {totals}")
        function = self._q("DROP FUNCTION IF EXISTS {bytes_fn}()")
        self._run("drop", lambda c: (c.execute(tables), c.execute(function)))
        self._schema_ready = False

    def close(self) -> None:
        if os.getpid() != self._pid:
            return
        if self._access is not None:
            self._flush_access()
        with self._conns_lock:
            conns, self._conns = list(self._conns), weakref.WeakSet()
        for conn in conns:
            try:
                conn.close()
            except psycopg.Error:
                pass
        self._local = threading.local()
