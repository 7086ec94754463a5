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
  clocks agree on when a lease lapses; a release notifies the waiters (LISTEN/NOTIFY).

The data methods are :class:`~actioncache.stores._sql.SQLStore`'s over this module's dialect.
Connections: one per thread, opened lazily (a ``Cache`` over a server that is down still
constructs) on a thread of their own that the caller waits for at most ``connect_timeout_s``
(libpq cannot give up sooner than 2 s; a connection that arrives later is kept for the next
call, or closed with the store), autocommit, dropped after a connection error and re-made on the next call (an
idempotent call is tried once more), and never shared across ``fork`` (the fork registry). Every
query is parameterized; identifiers are quoted by psycopg.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ..errors import StoreError, StoreURLError
from ._errors import StoreErrors
from ._eviction import eviction_config
from ._fork import track_for_fork
from ._sql import Dialect, SQLStore, key_range
from ._url import check_fields, check_userinfo, host_part, positive_number, userinfo, whole_number
from .base import Entry, LazyMetadata, glob_tokens, redact_secrets, redact_url, url_secrets
from .breaker import CircuitBreaker, breaker_health, breaker_options
from .near import LISTEN_POLL_S, ListeningFeed, NearCache, near_options
from .registry import Targets

try:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict
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


def _one(row: Any) -> Any:
    """The first column of a row a statement always returns."""
    if row is None:
        raise StoreError("PostgreSQL returned no row where one was expected")
    return row[0]


# libpq connection parameters that name a file libpq reads.
_FILE_PARAMS = ("passfile", "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
_ACTION_FIELD = "_cache_action"
_OUR_OPTIONS = ("table", "schema", "synchronous_commit", "connect_timeout_s", "read_timeout_s", "write_timeout_s")
# libpq's connect_timeout is whole seconds, at least 2 (docs/backends.md, "Timeouts"): the default.
# It bounds the connect running in the background, not the caller (see connect_timeout_s).
DEFAULT_CONNECT_TIMEOUT_S = 2
# How long a call waits for a new connection: the connect runs on a thread of its own, so a
# server that accepts and never answers (or a blackholed address) costs a call this, not libpq's
# 2 s. The same budget as a hit path's read: a call never waits longer for the store than a read
# may take. A connect that finishes later is kept for the next call (or closed with the store).
DEFAULT_CONNECT_WAIT_S = 0.2
# A connection that finished after its caller gave up and then sat unused this long is not handed
# out (a proxy or the server may have dropped it meanwhile): it is closed and a new one made.
_LATE_CONNECTION_MAX_AGE_S = 60.0
# How long one statement may wait for the server before the connection is given up (client side:
# a hung server enforces no statement_timeout): a hit path's read (short: it decides what a hung
# server costs a call, and a timeout there opens the breaker), and every other statement (writes
# may wait for another writer's row lock, cleanup and DDL for a table lock). A value's bytes add
# time at _BYTES_PER_S.
DEFAULT_READ_TIMEOUT_S = 0.2
DEFAULT_WRITE_TIMEOUT_S = 2.0
_BYTES_PER_S = 20 * 1024 * 1024
# A read timeout closes the connection, and a new one waits up to connect_timeout_s on a hung
# server: the first timeout opens the breaker, rather than paying that again on every call.
PG_BREAKER = {"timeouts": 1}


class _Connecting:
    """One connect running on a thread of its own (:meth:`PostgresStore._wait_for_connection`)."""

    __slots__ = ("done", "conn", "error", "claimed", "abandoned", "finished_at")

    def __init__(self) -> None:
        self.done = False  # set under the store's _connect_lock, with conn or error
        self.conn: psycopg.Connection[Any] | None = None
        self.error: BaseException | None = None
        self.claimed = True  # a caller is waiting for it (the one that started it)
        self.abandoned = False  # the store was closed: the connection, when it comes, is closed
        self.finished_at = 0.0


class _TimedConnection(psycopg.Connection[Any]):
    """A connection whose every wait for the server ends after ``timeout_s`` (None: no limit):
    psycopg waits without a limit, so a server that accepts and never answers would hold the
    caller for ever. A wait cut short leaves a statement in flight: the connection is closed (the
    store makes a new one)."""

    timeout_s: float | None = None

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        if timeout is None and self.timeout_s is not None:
            try:
                return super().wait(gen, interval, self.timeout_s)
            except psycopg.errors.OperationalError as exc:
                if type(exc).__name__ != "_WaitTimeout":  # psycopg's own (private) class: matched by name
                    raise
                self.close()
                raise psycopg.errors.ConnectionTimeout(
                    f"no answer from the server within {self.timeout_s:g} s") from None
        return super().wait(gen, interval, timeout)
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
_SERVER_NOW = "extract(epoch from clock_timestamp())"
# A near cache's feed (stores/near.py): made by the first near cache on a table, then every write of
# the table, by any client, says which key changed when it commits (a key too long for a
# notification says "all": the payload holds at most 8000 bytes).
_NEAR_SCHEMA = [
    "CREATE OR REPLACE FUNCTION {near_fn}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "DECLARE changed text := CASE WHEN TG_OP = 'DELETE' THEN OLD.key ELSE NEW.key END; "
    "BEGIN PERFORM pg_notify(TG_ARGV[0], CASE WHEN octet_length(changed) > 7000 THEN '' ELSE changed END); "
    "RETURN NULL; END $$",
    "CREATE OR REPLACE TRIGGER {near_trigger} AFTER INSERT OR UPDATE OR DELETE ON {entries} "
    "FOR EACH ROW EXECUTE FUNCTION {near_fn}({channel})",
]


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


def _ident(schema: str | None, name: str) -> sql.Composable:
    return sql.Identifier(schema, name) if schema else sql.Identifier(name)


# What a store of table T names its other relations (tables and indexes share one namespace per
# schema): a table whose name ends with one of these could be another store's table or index, so
# it is refused (tables ``t`` and ``t_leases`` would share a leases table).
RESERVED_SUFFIXES = ("_counters", "_leases", "_totals", "_expires_at", "_action", "_metadata", "_accessed_at",
                     "_hits")


class PostgresDialect(Dialect):
    """PostgreSQL's SQL for one table (and its ``_counters``, ``_leases``, ``_totals``)."""

    server_now = _SERVER_NOW
    text_holds_nul = False  # keys holding NUL cannot be stored; the driver's error says so on put
    lock_total = " FOR UPDATE"  # one culler at a time; the others' puts wait, then see its result
    lock_lease = " FOR SHARE"  # a fenced write holds its lease row: no new grant commits in between
    get = "SELECT value, metadata::text, created_at, expires_at FROM {entries} WHERE key = ?"
    put = ("INSERT INTO {entries} (key, value, metadata, created_at, expires_at, action) "
           "VALUES (?, %b, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
           "metadata = excluded.metadata, created_at = excluded.created_at, "
           "expires_at = excluded.expires_at, action = excluded.action")
    # With a size limit, a write is also a use (LRU) and starts its read count again (LFU).
    # Entries written by caches without a limit keep accessed_at NULL: they are culled first.
    put_tracked = ("INSERT INTO {entries} (key, value, metadata, created_at, expires_at, action, accessed_at) "
                   "VALUES (?, %b, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                   "metadata = excluded.metadata, created_at = excluded.created_at, "
                   "expires_at = excluded.expires_at, action = excluded.action, "
                   "accessed_at = excluded.accessed_at, hits = 0")
    touch = ("UPDATE {entries} SET accessed_at = greatest(coalesce(accessed_at, 0), ?), "
             "hits = hits + ? WHERE key = ?")
    delete_expired = ("DELETE FROM {entries} WHERE key IN (SELECT key FROM {entries} WHERE expires_at IS NOT NULL "
                      "AND expires_at <= ? ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)")
    victims = _VICTIMS

    def __init__(self, table: str, schema: str | None) -> None:
        self.names = {
            "entries": _ident(schema, table),
            "counters": _ident(schema, table + "_counters"),
            "leases": _ident(schema, table + "_leases"),
            "expires_idx": sql.Identifier(table + "_expires_at"),
            "action_idx": sql.Identifier(table + "_action"),
            "meta_idx": sql.Identifier(table + "_metadata"),
            "totals": _ident(schema, table + "_totals"),
            "bytes_fn": _ident(schema, table + "_count_bytes"),
            "bytes_trigger": sql.Identifier(table + "_count_bytes"),
            "accessed_idx": sql.Identifier(table + "_accessed_at"),
            "hits_idx": sql.Identifier(table + "_hits"),
            "near_fn": _ident(schema, table + "_near_notify"),
            "near_trigger": sql.Identifier(table + "_near"),
        }

    def statement(self, text: str) -> sql.Composed:
        return sql.SQL(text.replace("?", "%s")).format(**self.names)

    def put_params(self, entry: Entry, tracked: bool) -> tuple[Any, ...]:
        meta = dict(entry.metadata)
        action = meta.get(_ACTION_FIELD)
        params = (entry.key, bytes(entry.value), Jsonb(meta, dumps=_jsonb_dumps), entry.created_at, entry.expires_at,
                  action if isinstance(action, str) and "\0" not in action else None)
        return (*params, time.time()) if tracked else params

    def entry_bytes(self, entry: Entry, params: tuple[Any, ...]) -> int:
        return len(entry.key.encode()) + len(params[1]) + len(json.dumps(dict(entry.metadata)).encode())

    def entry(self, key: str, row: Sequence[Any]) -> Entry:
        value, metadata, created_at, expires_at = row
        return Entry(key, value, LazyMetadata(_unescape_nul(metadata)), created_at, expires_at)

    def find(self, pattern: str | None, metadata_filter: Mapping[str, Any] | None) -> tuple[Any, list[Any]] | None:
        if pattern is not None and "\0" in pattern:
            return None  # PostgreSQL text cannot hold NUL, so no stored key can match
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
            # 1.0, an array contains its members), so metadata_matches decides.
            where.append(sql.SQL("metadata @> %s"))
            params.append(Jsonb(dict(metadata_filter), dumps=_jsonb_dumps))
        columns = "key, metadata::text" if metadata_filter else "key, NULL"
        statement = sql.SQL(f"SELECT {columns} FROM {{entries}}").format(**self.names)
        if where:
            statement = statement + sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where)
        return statement, params

    def found(self, rows: list[Any]) -> Iterable[tuple[str, Any]]:
        return [(key, None if meta is None else _unescape_nul(meta)) for key, meta in rows]


def _hint(exc: BaseException) -> str | None:
    if isinstance(exc, psycopg.OperationalError):
        return ("is PostgreSQL running and reachable, and do the user, password and database in the "
                "URL exist? start the server or fix the URL")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return "the user may not create or write the table; grant it or choose ?schema= the user owns"
    if isinstance(exc, psycopg.DataError) and ("0x00" in str(exc) or "\\u0000" in str(exc)):
        return "PostgreSQL text cannot hold NUL characters; remove them from keys"
    return None  # the driver's message, in the same line, is all there is to say


def _server_down(exc: BaseException) -> bool:
    """A failure that says the server is unreachable or hung (the breaker counts it); an error
    the server answered with (a constraint, a NUL refusal) means it is there."""
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) or not isinstance(exc, psycopg.Error)


class PostgresStore(SQLStore):
    """The ``CacheStore`` protocol over one PostgreSQL table (see the module docstring)."""

    _driver_errors = (psycopg.Error,)

    def __init__(self, conninfo: str, *, table: str = "actioncache", schema: str | None = None,
                 synchronous_commit: str = "off", url: str | None = None,
                 max_size_bytes: int | str | None = None, eviction: str | None = None,
                 read_timeout_s: float | str = DEFAULT_READ_TIMEOUT_S,
                 write_timeout_s: float | str = DEFAULT_WRITE_TIMEOUT_S, breaker: Mapping[str, float] | None = None,
                 connect_timeout_s: float | str = DEFAULT_CONNECT_WAIT_S) -> None:
        for what, name in (("table", table), ("schema", schema)):
            if name is not None and not _IDENTIFIER.match(name):
                raise StoreURLError(
                    f"PostgreSQL {what} name {name!r} is not allowed; use 1-48 letters, digits or '_', "
                    "starting with a letter or '_' (e.g. ?table=actioncache)"
                )
        reserved = next((suffix for suffix in RESERVED_SUFFIXES if table.endswith(suffix)), None)
        if reserved is not None:
            raise StoreURLError(
                f"PostgreSQL table name {table!r} ends with {reserved!r}, a name the store of table "
                f"{table[:-len(reserved)]!r} gives one of its own tables or indexes (its namespace would "
                f"overlap another cache's); choose a table name not ending in {', '.join(RESERVED_SUFFIXES)}"
            )
        if synchronous_commit not in _SYNC_COMMIT:
            raise StoreURLError(
                f"synchronous_commit={synchronous_commit!r} is not a PostgreSQL setting; use one of {', '.join(_SYNC_COMMIT)}"
            )
        self.conninfo = conninfo
        self.url = redact_url(url or conninfo)  # shown by stats and logs: never the password
        self.table = table
        self.schema = schema
        # A cache entry lost to a server crash is a miss, not lost data: by default a commit does
        # not wait for its WAL flush (still atomic and consistent; ~10x faster writes).
        self.synchronous_commit = synchronous_commit
        where = f"PostgreSQL at {self.url} (table {table!r})"
        self.read_timeout_s = positive_number(read_timeout_s, "read_timeout_s", where)
        self.write_timeout_s = positive_number(write_timeout_s, "write_timeout_s", where)
        self.connect_timeout_s = positive_number(connect_timeout_s, "connect_timeout_s", where)
        options: dict[str, Any] = dict(breaker) if breaker is not None else breaker_options({}, {}, where, **PG_BREAKER)
        self.breaker = CircuitBreaker(where, **options) if options else None
        # libpq's messages may quote the URL's secrets: they are scrubbed.
        errors = StoreErrors(where, psycopg.Error, _hint, secrets=url_secrets(url or conninfo), one_line=True,
                             breaker=self.breaker, down=_server_down)
        dialect = PostgresDialect(table, schema)
        self._init_sql(dialect, errors, eviction_config(max_size_bytes, eviction))
        self._names = dialect.names
        self._sql_delete_keys = self._q("DELETE FROM {entries} WHERE key = ANY(%s)")
        self._init_connections()
        self._schema_ready = False
        track_for_fork(self)

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(**self._names)

    def _connection_set(self) -> weakref.WeakSet[psycopg.Connection[Any]]:
        # Weak: a thread that ends takes its connection with it (psycopg closes it when freed).
        return weakref.WeakSet()

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "postgresql", base_dir: Any = None) -> str:
        """``postgresql://[user[:password]@]host:port/database`` from those fields."""
        given = check_fields("postgres", fields, ("host", "port", "database", "user", "password"))
        port = whole_number("postgres", "port", given.get("port", 5432), 1, 65535)
        where = host_part("postgres", given.get("host", "127.0.0.1"), port)
        database = quote(str(given.get("database", "postgres")), safe="")
        return f"postgresql://{userinfo(given.get('user'), given.get('password'))}{where}/{database}"

    @classmethod
    def from_url(cls, url: str, **options: Any) -> PostgresStore | NearCache:
        """``postgresql://user[:pass]@host:port/db?table=NAME&schema=NAME&synchronous_commit=off``
        (other query options go to libpq)."""
        conninfo, near, _ = cls._conninfo(url, options)
        store = cls(conninfo, url=url, **options)
        return store if near is None else NearCache(store, **near)

    @staticmethod
    def _conninfo(url: str, options: dict[str, Any]) -> tuple[str, dict[str, Any] | None, dict[str, Any]]:
        """(the libpq conninfo ``url`` connects with, the near cache's options, libpq's reading of
        the conninfo); the store's own options go into ``options``."""
        parts = urlsplit(url)
        check_userinfo("PostgreSQL", url, parts)
        theirs: list[tuple[str, str]] = []
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        options.setdefault("breaker", breaker_options(query, options, f"PostgreSQL URL {redact_url(url)!r}",
                                                      **PG_BREAKER))
        near = near_options(query, options, f"PostgreSQL URL {redact_url(url)!r}")
        for name, value in query.items():
            if name in _OUR_OPTIONS or name in ("max_size_bytes", "eviction"):
                options.setdefault(name, value)
            else:
                theirs.append((name, value))
        if not any(name == "connect_timeout" for name, _ in theirs):
            theirs.append(("connect_timeout", str(DEFAULT_CONNECT_TIMEOUT_S)))
        conninfo = urlunsplit(parts._replace(scheme="postgresql", query=urlencode(theirs)))
        if not parts.netloc and (not parts.path or parts.path.startswith("/")):
            # No host in the URL (postgresql:///db?host=/run/postgresql): urlunsplit drops the
            # empty authority ("postgresql:/db"), which libpq does not read as a URI at all.
            conninfo = "postgresql://" + urlunsplit(("", "", parts.path, urlencode(theirs), parts.fragment))
        try:  # libpq's own parser: an option it does not know fails here, not on every call later
            params = conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            # libpq's message may quote a piece of the password (a space, '?' or '#' in it)
            raise StoreURLError(f"PostgreSQL URL {redact_url(url)!r}: "
                                f"{redact_secrets(str(exc).strip(), url_secrets(url))}; options: "
                                f"{', '.join(sorted(_OUR_OPTIONS))}, max_size_bytes, eviction, or a libpq "
                                f"connection parameter (connect_timeout, sslmode, application_name...)") from None
        return conninfo, near, dict(params)

    @classmethod
    def targets(cls, url: str) -> Targets | None:
        """What the conninfo :meth:`from_url` connects with makes libpq open: its hosts (``host``,
        ``hostaddr``), socket directories and the files its options name (``sslcert``, ``passfile``
        ...). None (cannot say) when libpq would pick the host itself (no host: ``$PGHOST`` or the
        default socket) or read it from a service file (``service=``)."""
        _, _, params = cls._conninfo(url, {})
        if params.get("service"):
            return None
        paths = [str(params[name]) for name in _FILE_PARAMS if params.get(name) and params[name] != "system"]
        hosts: list[str] = []
        sockets: list[str] = []
        for name in ("host", "hostaddr"):
            for host in str(params.get(name) or "").split(","):
                host = host.strip()
                if host.startswith("/"):
                    sockets.append(host)  # a socket directory
                elif host.startswith("@"):
                    return None  # an abstract socket: no file to judge
                elif host:
                    hosts.append(host.lower())
        if not hosts and not sockets:
            return None
        return Targets((*paths, *sockets), tuple(hosts))

    # --- connections --------------------------------------------------------------------

    def _init_connections(self) -> None:
        super()._init_connections()
        # Connects running on threads of their own, or finished and not yet taken
        # (_wait_for_connection). After a fork the parent's are the parent's: forgotten, not closed.
        self._connecting: list[_Connecting] = []
        self._connect_lock = threading.Lock()
        self._connect_done = threading.Condition(self._connect_lock)

    def _wait_for_connection(self) -> psycopg.Connection[Any]:
        """A new connection, waited for at most ``connect_timeout_s``.

        libpq cannot give up a connect sooner than 2 s (its ``connect_timeout`` is whole seconds,
        at least 2), and a server that accepts and never answers, or an address that drops every
        packet, holds a connect that long. So the connect runs on a thread of its own and the
        caller waits for it no longer than ``connect_timeout_s``, then fails with a timeout (the
        breaker counts it; the call runs uncached). The connect goes on: when it ends, its
        connection is kept for the next caller (a caller takes a finished one before it starts
        another, and waits for an unfinished one nobody waits for rather than start a second), or
        closed if the store was closed meanwhile. So no caller ever waits on libpq's timeout, no
        connection is left open unowned, and at most one connect runs per caller waiting."""
        deadline = time.monotonic() + self.connect_timeout_s
        stale: list[psycopg.Connection[Any]] = []
        with self._connect_done:
            mine = self._claim_connect(stale)
            while not mine.done:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    mine.claimed = False  # the next caller waits for it, or takes it once it ends
                    break
                self._connect_done.wait(remaining)
            else:
                self._connecting.remove(mine)
        for conn in stale:
            _close_quietly(conn)
        if not mine.done:
            raise psycopg.errors.ConnectionTimeout(
                f"no connection to the server within {self.connect_timeout_s:g} s (connect_timeout_s); the "
                "connect goes on in the background and a later call takes its connection if it succeeds")
        if mine.conn is None:
            assert mine.error is not None
            raise mine.error
        return mine.conn

    def _claim_connect(self, stale: list[psycopg.Connection[Any]]) -> _Connecting:
        """(Under _connect_lock.) A connect for this caller: one that finished while nobody waited
        for it, else one running that nobody waits for, else a new one on a thread of its own.
        Finished ones that failed are forgotten, and ones too old or closed go to ``stale``."""
        for connecting in list(self._connecting):
            if connecting.done and not connecting.claimed:
                self._connecting.remove(connecting)
                conn = connecting.conn
                if conn is None:
                    continue  # it failed after its caller gave up; that caller counted a timeout
                if conn.closed or time.monotonic() - connecting.finished_at > _LATE_CONNECTION_MAX_AGE_S:
                    stale.append(conn)
                    continue
                self._connecting.append(connecting)
                connecting.claimed = True
                return connecting
        for connecting in self._connecting:
            if not connecting.claimed:
                connecting.claimed = True
                return connecting
        connecting = _Connecting()
        self._connecting.append(connecting)
        threading.Thread(target=self._connect_in_background, args=(connecting,),
                         name="actioncache-postgres-connect", daemon=True).start()
        return connecting

    def _connect_in_background(self, connecting: _Connecting) -> None:
        conn: psycopg.Connection[Any] | None = None
        error: BaseException | None = None
        try:
            conn = self._open_connection()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller that waits for it
            error = exc
        with self._connect_done:
            connecting.conn, connecting.error = conn, error
            connecting.done = True
            connecting.finished_at = time.monotonic()
            abandoned = connecting.abandoned
            self._connect_done.notify_all()
        if abandoned and conn is not None:
            _close_quietly(conn)

    def _open_connection(self) -> psycopg.Connection[Any]:
        """(On the connect's own thread.) libpq's connect, then the session's setting."""
        conn = _TimedConnection.connect(self.conninfo, autocommit=True)
        try:
            conn.timeout_s = self.write_timeout_s  # every wait bounded: this thread always ends
            conn.execute("SELECT set_config('synchronous_commit', %s, false)", (self.synchronous_commit,))
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect(self) -> psycopg.Connection[Any]:
        conn = self._wait_for_connection()
        try:
            if not self._schema_ready:
                # Concurrent first opens of one table from many processes must not race on DDL
                # (this may wait for another process's, within write_timeout_s).
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
            if not isinstance(self._sql_get, str):
                # psycopg turns a composed statement into text on every execute: the hit path
                # and the write path run theirs as text made once (the table names never change)
                for name in ("_sql_get", "_sql_put", "_sql_put_tracked"):
                    setattr(self, name, getattr(self, name).as_string(conn))
        except BaseException:
            conn.close()
            raise
        return conn

    def get(self, key: str) -> Entry | None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.timeout_s = self.read_timeout_s  # the hit path's own, short timeout
        breaker = self.breaker
        if breaker is None or getattr(self._local, "reader", None) is None:
            return super().get(key)  # a first read on this thread goes through _run, which checks
        breaker.before()  # an open breaker skips the server at once, even on the hit path
        try:
            entry = super().get(key)
        except StoreError:
            raise
        except BaseException:
            breaker.abandon()
            raise
        breaker.success()
        return entry

    def health(self) -> dict[str, Any]:
        """The circuit breaker's state (``Cache.stats()["store_health"]``)."""
        return breaker_health(self.breaker)

    def put(self, entry: Entry) -> None:
        if len(entry.value) < _BYTES_PER_S // 10:
            return super().put(entry)
        self._local.extra_s = len(entry.value) / _BYTES_PER_S  # a big value takes longer to send
        try:
            super().put(entry)
        finally:
            self._local.extra_s = 0.0

    def put_fenced(self, entry: Entry, lease: str, token: str) -> bool:
        if len(entry.value) < _BYTES_PER_S // 10:
            return super().put_fenced(entry, lease, token)
        self._local.extra_s = len(entry.value) / _BYTES_PER_S
        try:
            return super().put_fenced(entry, lease, token)
        finally:
            self._local.extra_s = 0.0

    def _conn(self) -> psycopg.Connection[Any]:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            self._local.reader = None  # a cursor of the closed connection
            conn = self._local.conn = self._connect()
            with self._conn_lock:
                self._conns.add(conn)
        return conn

    def close(self) -> None:
        if os.getpid() == self._pid:
            # Connects still running close their connection when they end; finished ones not
            # taken are closed here.
            with self._connect_lock:
                pending, self._connecting = self._connecting, []
                for connecting in pending:
                    connecting.abandoned = True
                finished = [c.conn for c in pending if c.done and c.conn is not None]
            for conn in finished:
                _close_quietly(conn)
        super().close()

    def _drop_conn(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = self._local.reader = None
        if conn is not None:
            with self._conn_lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except psycopg.Error:
                pass

    def _run(self, op: str, work: Callable[[psycopg.Connection[Any]], T], *, write: bool = False,
             transaction: bool = False, retry: bool = True) -> T:
        """Run ``work`` on this thread's connection (in a transaction if asked); a connection that
        went stale (server restart) is replaced and, for idempotent work, tried once more; dropped
        tables are re-created. The breaker is checked first and told how it went."""
        breaker = self.breaker
        if breaker is None:
            return self._run_once(op, work, transaction, retry)
        breaker.before()
        try:
            result = self._run_once(op, work, transaction, retry)
        except StoreError:
            raise  # counted where it was made (errors.failed)
        except BaseException:
            breaker.abandon()
            raise
        breaker.success()
        return result

    def _run_once(self, op: str, work: Callable[[psycopg.Connection[Any]], T], transaction: bool, retry: bool) -> T:
        for attempt in (0, 1):
            fresh = getattr(self._local, "conn", None) is None
            try:
                conn = self._conn()
                conn.timeout_s = (self.read_timeout_s if op == "get" else  # type: ignore[attr-defined]  # _TimedConnection
                                  self.write_timeout_s + getattr(self._local, "extra_s", 0.0))
                if not transaction:
                    return work(conn)
                with conn.transaction():
                    return work(conn)
            except psycopg.Error as exc:
                if isinstance(exc, psycopg.errors.ConnectionTimeout):
                    self._drop_conn()  # a hung server: trying again would wait as long again
                    raise self.errors.failed(op, exc) from exc
                if not self._recover(exc, retry and attempt == 0 and not fresh, attempt == 0):
                    raise self.errors.failed(op, exc) from exc
        raise AssertionError("unreachable")

    def _recover(self, exc: psycopg.Error, may_retry: bool, first: bool) -> bool:
        """After ``exc``: drop a broken connection; True when the work should run again."""
        conn = getattr(self._local, "conn", None)
        # psycopg marks a connection that lost its server "broken"; a statement error
        # (a timeout, a constraint) leaves it usable and is not retried.
        broken = conn is None or conn.broken or conn.closed
        if broken:
            self._drop_conn()
        if broken and may_retry:
            return True
        if isinstance(exc, psycopg.errors.UndefinedTable) and first and self._schema_ready:
            # Someone dropped the tables under us: make them again on a new connection.
            self._schema_ready = False
            self._drop_conn()
            return True
        return False

    def _read_failed(self, op: str, exc: BaseException, work: Callable[[Any], T]) -> T:
        self._local.reader = None  # the next read makes its cursor on whatever connection is current
        if isinstance(exc, psycopg.errors.ConnectionTimeout):
            self._drop_conn()
        elif isinstance(exc, psycopg.Error) and self._recover(exc, True, True):
            return self._run_once(op, work, False, True)
        raise self.errors.failed(op, exc) from exc

    # --- what differs from the shared SQL store --------------------------------------------

    def _reader(self, conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
        # One cursor kept per connection, in binary: psycopg's conn.execute makes a new cursor per
        # call, and the text format has the value's bytes hex-encoded and the times as decimal text.
        # Measured on a hit's SELECT of four columns: 0.8x the time of conn.execute's.
        return conn.cursor(binary=True)

    def _touch(self, conn: psycopg.Connection[Any], rows: list[tuple[float, int, str]]) -> None:
        if rows:
            conn.cursor().executemany(self._sql_touch, rows)

    def _delete_where(self, conn: psycopg.Connection[Any], column: str, ids: list[Any]) -> int:
        return int(conn.execute(self._sql_delete_keys, (ids,)).rowcount)

    def server_time(self) -> float:
        """The server's clock (epoch seconds): the one clock expiry is judged by (see the core)."""
        return float(self._run("time", lambda c: _one(c.execute("SELECT " + _SERVER_NOW).fetchone())))

    def _lease_channel(self, name: str) -> str:
        # A channel name is an identifier (at most 63 bytes): a digest of the table and lease name.
        return "ac_" + hashlib.sha256(f"{self.schema}.{self.table}:{name}".encode()).hexdigest()[:40]

    def _near_channel(self) -> str:
        return "ac_near_" + hashlib.sha256(f"{self.schema}.{self.table}".encode()).hexdigest()[:40]

    def invalidation_feed(self, on_change: Callable[[str | None], None]) -> _NotifyFeed:
        """Listen for the keys every writer of this table changes (a near cache's feed): a trigger
        on the table notifies at each commit (made here, once per table)."""
        channel = self._near_channel()

        def install(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"actioncache:{self.schema}.{self.table}",))
                for statement in _NEAR_SCHEMA:
                    conn.execute(sql.SQL(statement).format(**self._names, channel=sql.Literal(channel)))

        self._run("near cache", install, retry=False)
        return _NotifyFeed(self.conninfo, channel, on_change)

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
        functions = self._q("DROP FUNCTION IF EXISTS {bytes_fn}(), {near_fn}()")
        notify = "SELECT pg_notify(%s, '')"  # near caches: forget everything
        self._run("drop", lambda c: (c.execute(tables), c.execute(functions), c.execute(notify, (self._near_channel(),))))
        self._schema_ready = False


def _close_quietly(conn: psycopg.Connection[Any]) -> None:
    try:
        conn.close()
    except psycopg.Error:
        pass


# How often a listener asks the server whether its connection still lives: the listener wakes every
# LISTEN_POLL_S to see whether it was closed, but a query each time would be ten a second per process.
_LISTEN_PING_S = 0.5


class _NotifyFeed(ListeningFeed):
    """The table's near-cache channel (LISTEN), as a near cache's feed (``stores/near.py``)."""

    def __init__(self, conninfo: str, channel: str, on_change: Callable[[str | None], None]) -> None:
        self._conninfo, self._channel = conninfo, channel
        super().__init__(on_change)

    def listen_once(self, ready: Callable[[], None], changed: Callable[[str | None], None]) -> None:
        with psycopg.connect(self._conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
            ready()
            pinged = time.monotonic()
            while not self.closed.is_set():
                for note in conn.notifies(timeout=LISTEN_POLL_S):
                    changed(note.payload or None)
                if time.monotonic() - pinged >= _LISTEN_PING_S:
                    conn.execute("SELECT 1")  # a connection that died says so here
                    pinged = time.monotonic()
