"""Turso / libSQL through the maintained ``libsql`` package (pip ``libsql``, Hrana v3).

Three ways to run, picked by the URL:

* ``libsql+file:///abs/path.db``: an embedded libSQL file on this machine (SQLite's format, WAL).
* ``libsql+file:///abs/replica.db?sync_url=libsql://host&authToken=...``: an embedded replica.
  Reads are answered from the local file; writes go to the primary; the local copy pulls the
  primary's changes on open, every ``sync_interval`` seconds if given, and on :meth:`TursoStore.sync`.
* ``libsql://host?authToken=...`` (or ``turso://host``): every statement goes to the server.
  ``libsql://`` means HTTPS; ``?tls=0`` talks plain HTTP to a local ``sqld``.

The token may also come from ``$TURSO_AUTH_TOKEN`` (or ``$LIBSQL_AUTH_TOKEN``), which keeps it
out of URLs, logs and shell history; the store's ``url`` never shows it.

libSQL speaks SQLite's SQL, so this store is a sibling of the SQLite store on the shared
:class:`~actioncache.stores._sql.SQLStore`: the same dialect (statements, schema), another
connection model (embedded, replica or remote) and its own error hints. Every write is one
statement or one transaction, so it stays atomic over a remote stream too. The deprecated
``libsql-client`` package (Hrana v1 only) is not used.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import urlencode, urlsplit

import libsql

from ..errors import StoreURLError
from ._errors import StoreErrors
from ._eviction import eviction_config, eviction_from_query
from ._fork import track_for_fork
from ._sql import SQLStore, libsql_targets
from ._url import check_fields, file_url, local_file, query_options, with_query
from .base import redact_url
from .sqlite import CANNOT_OPEN, SQLiteDialect, create_schema

TOKEN_ENV_VARS = ("TURSO_AUTH_TOKEN", "LIBSQL_AUTH_TOKEN")
# libsql raises its own Error for SQL problems and ValueError for I/O, locks and HTTP.
_DRIVER_ERRORS = (libsql.Error, ValueError)
LIBSQL = SQLiteDialect(nul_key_refusal="libSQL cannot hold a NUL character in a key ({key!r}); that result is not cached")
_OPTIONS = {"authToken", "auth_token", "sync_url", "sync_interval", "timeout", "tls", "max_size_bytes", "eviction"}


class _Cursor:
    """The part of ``sqlite3.Cursor`` the SQLite store uses, over a libsql cursor (which cannot be iterated)."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    def fetchone(self) -> Any:
        try:
            return self._cursor.fetchone()
        except _DRIVER_ERRORS as exc:
            raise sqlite3.OperationalError(str(exc)) from exc

    def fetchall(self) -> list[Any]:
        try:
            return list(self._cursor.fetchall())
        except _DRIVER_ERRORS as exc:
            raise sqlite3.OperationalError(str(exc)) from exc

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class _Connection:
    """A libsql connection shaped like ``sqlite3.Connection`` for the SQLite store's methods.

    libsql errors become ``sqlite3.OperationalError`` (which the store already maps to
    :class:`StoreError`), and ``memoryview`` parameters become ``bytes`` (libsql takes only bytes).
    ``lock``, when given, serializes statements for a connection that threads share.
    """

    def __init__(self, conn: Any, lock: threading.Lock | None = None) -> None:
        self._conn = conn
        self._lock = lock

    def execute(self, sql: str, params: Iterable[Any] = ()) -> _Cursor:
        args = tuple(bytes(p) if isinstance(p, memoryview) else p for p in params)
        try:
            if self._lock is None:
                return _Cursor(self._conn.execute(sql, args))
            with self._lock:
                return _Cursor(self._conn.execute(sql, args))
        except _DRIVER_ERRORS as exc:
            raise sqlite3.OperationalError(str(exc)) from exc

    def sync(self) -> None:
        try:
            self._conn.sync()
        except _DRIVER_ERRORS as exc:
            raise sqlite3.OperationalError(str(exc)) from exc

    def close(self) -> None:
        try:
            self._conn.close()
        except _DRIVER_ERRORS as exc:
            raise sqlite3.OperationalError(str(exc)) from exc


class TursoStore(SQLStore):
    """A :class:`~actioncache.stores.base.CacheStore` on libSQL: embedded file, embedded replica, or remote.

    ``database`` is a local path (embedded, or the replica's file when ``sync_url`` is given) or a
    remote URL (``libsql://``, ``https://``, ``http://``).
    """

    _driver_errors = (sqlite3.Error,)

    def __init__(
        self,
        database: str | os.PathLike[str],
        *,
        auth_token: str | None = None,
        sync_url: str | None = None,
        sync_interval: float | None = None,
        timeout: float = 5.0,
        max_size_bytes: int | str | None = None,
        eviction: str | None = None,
    ) -> None:
        database = str(database)
        self.remote = database.startswith(("libsql://", "https://", "http://", "wss://", "ws://"))
        if (max_size_bytes is not None or eviction is not None) and (self.remote or sync_url):
            raise StoreURLError("size limits apply to a local libSQL file (libsql+file:///path.db); a remote or "
                                "replicated database is shared, and its size is the server's to manage")
        self.path = Path("/" if self.remote else database)
        self.timeout = float(timeout)
        self.synchronous = "NORMAL"
        self.database = database
        self.sync_url = sync_url
        self.sync_interval = sync_interval
        self.auth_token = auth_token if auth_token is not None else _token_from_env()
        if self.remote:
            self.url = redact_url(database)
        else:
            self.url = file_url("libsql+file", self.path)
            if sync_url:
                self.url += "?" + urlencode({"sync_url": sync_url})
        self._init_sql(LIBSQL, StoreErrors(f"libSQL store {self.url}", sqlite3.Error, self._hint),
                       eviction_config(max_size_bytes, eviction))
        self._local_file = not self.remote and not sync_url  # a plain embedded file, no replication
        self._init_connections()
        self._schema_ready = False
        track_for_fork(self)

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "turso", base_dir: Any = None) -> str:
        """``libsql+file:///abs/path.db`` from ``path``, or ``url`` (``libsql://HOST``) with ``auth_token``."""
        given = check_fields("libSQL", fields, ("path", "url", "auth_token"))
        if "url" in given and "path" not in given:
            token = {"authToken": given["auth_token"]} if "auth_token" in given else {}
            return with_query(str(given["url"]), token)
        if "path" not in given or "url" in given:
            raise StoreURLError("the libSQL store needs url: libsql://... (a server) or path: ./local.db "
                                "(a local file), one of the two")
        if "auth_token" in given:
            raise StoreURLError("the libSQL store's auth_token: is for a server; give url: libsql://HOST with it")
        return file_url("libsql+file", local_file(given["path"], base_dir))

    @classmethod
    def from_url(cls, url: str, **options: Any) -> TursoStore:
        """Parse ``libsql+file:///path``, ``libsql://host``, ``turso://host`` and their options.

        Options: ``authToken`` (or ``auth_token``), ``sync_url`` and ``sync_interval`` (seconds,
        embedded replica only), ``timeout`` (seconds a local writer waits for a lock), ``tls=0``
        (plain HTTP to a local sqld).
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        query = query_options("libSQL", url, parts, _OPTIONS, f"known: {', '.join(sorted(_OPTIONS))}")
        token = query.get("authToken", query.get("auth_token"))
        if token is not None:
            options.setdefault("auth_token", token)
        if "timeout" in query:
            options.setdefault("timeout", _number(query["timeout"], "timeout", url))
        limit = eviction_from_query(query, options)
        if limit is not None:
            options.update(max_size_bytes=limit.max_size_bytes, eviction=limit.policy)
        if scheme == "libsql+file":
            path = libsql_targets(url).paths[0]  # what an untrusted agent's store is checked by: the one reading
            if "tls" in query:
                raise StoreURLError(f"{redact_url(url)!r}: tls= applies to remote URLs only (libsql://host?tls=0)")
            if "sync_url" in query:
                options.setdefault("sync_url", _remote_database(query["sync_url"], None, url))
            if "sync_interval" in query:
                if "sync_url" not in query:
                    raise StoreURLError(f"{redact_url(url)!r}: sync_interval needs sync_url (an embedded replica)")
                options.setdefault("sync_interval", _number(query["sync_interval"], "sync_interval", url))
            return cls(path, **options)
        if scheme in ("libsql", "turso"):
            if not parts.hostname:
                raise StoreURLError(
                    f"libSQL URL {redact_url(url)!r} names no server; use libsql://HOST?authToken=... for a remote "
                    "database or libsql+file:///abs/path.db for a local file"
                )
            if "sync_url" in query or "sync_interval" in query:
                raise StoreURLError(
                    f"{redact_url(url)!r}: sync_url makes an embedded replica and needs a local file: "
                    "libsql+file:///abs/replica.db?sync_url=libsql://HOST"
                )
            base = f"libsql://{parts.netloc.rpartition('@')[2]}{parts.path.rstrip('/')}"
            return cls(_remote_database(base, query.get("tls"), url), **options)
        raise StoreURLError(f"not a libSQL URL: {redact_url(url)!r}; use libsql+file:///abs/path.db or libsql://HOST")

    # --- connections --------------------------------------------------------------------

    def _init_connections(self) -> None:
        super()._init_connections()
        # An embedded replica is one libsql database object; its threads share one connection.
        self._shared: _Connection | None = None
        self._shared_lock = threading.Lock()

    def _conn(self) -> Any:
        if not self.sync_url:
            return super()._conn()
        try:
            return self._local.conn
        except AttributeError:
            pass
        conn = self._local.conn = self._replica()
        return conn

    def _replica(self) -> _Connection:
        with self._shared_lock:
            if self._shared is None:
                self._shared = _Connection(self._open(), threading.Lock())
            return self._shared

    def _connect(self) -> _Connection:
        return _Connection(self._open())

    def _open(self) -> Any:
        kwargs: dict[str, Any] = {"timeout": self.timeout}
        if self.auth_token:
            kwargs["auth_token"] = self.auth_token
        if self.sync_url:
            kwargs["sync_url"] = self.sync_url
            if self.sync_interval is not None:
                kwargs["sync_interval"] = self.sync_interval
        # libsql.connect itself raises the driver's errors, not the adapter's.
        with self.errors.opening(f"libSQL store at {self.path}", also=_DRIVER_ERRORS):
            if not self.remote:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            raw = libsql.connect(self.database, isolation_level=None, **kwargs)
            conn = _Connection(raw)
            if self.sync_url:
                conn.sync()  # start from the primary's current state
            if not self._schema_ready:
                if self._local_file and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                create_schema(conn, self.eviction is not None)
                self._schema_ready = True
            if self._local_file:
                # As the SQLite store: WAL with NORMAL sync survives a crash of the process; libSQL's
                # default FULL fsyncs on every commit (measured here: 4.1 ms vs 0.5 ms per put).
                conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        return raw

    def _hint(self, exc: BaseException) -> str | None:
        text = str(exc)
        lowered = text.lower()
        if "401" in text or "unauthorized" in lowered or "auth" in lowered and "token" in lowered:
            return "the server refused the auth token; pass ?authToken=... or set $TURSO_AUTH_TOKEN"
        reaches_server = self.remote or bool(self.sync_url)  # a plain local file has no server to reach
        if reaches_server and any(s in lowered for s in ("http", "connect", "dns", "hrana", "sync error", "tls")):
            return (f"cannot reach the libSQL server ({self.sync_url or self.database}); check the host, the "
                    "network and the token; libsql:// means HTTPS, add ?tls=0 for a plain-HTTP sqld")
        if "locked" in lowered or "busy" in lowered:
            return f"another writer held the lock longer than the timeout ({self.timeout}s); raise ?timeout= in the URL"
        if "not a database" in lowered or "malformed" in lowered:
            return "the file is not a healthy libSQL/SQLite database; move it aside (nothing is deleted) or point to a new path"
        if "readonly" in lowered or "read-only" in lowered:
            return "the file or its directory is read-only; choose a writable path"
        if "unable to open" in lowered and not reaches_server:
            return CANNOT_OPEN
        return None  # the driver's message, in the same line, is all there is to say

    def sync(self) -> None:
        """Pull the primary's changes into an embedded replica now (nothing to do otherwise)."""
        if self.sync_url:
            with self.errors("sync"):
                self._replica().sync()

    def close(self) -> None:
        with self._shared_lock:
            shared, self._shared = self._shared, None
        if shared is not None and os.getpid() == self._pid:
            try:
                shared.close()
            except sqlite3.Error:
                pass
        super().close()


def _token_from_env() -> str | None:
    for name in TOKEN_ENV_VARS:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _remote_database(base: str, tls: str | None, url: str) -> str:
    """The URL libsql.connect takes: ``libsql://`` (HTTPS) as is, or ``http://`` when ``tls=0``."""
    if tls is None or tls.strip().lower() in ("1", "true", "yes", "on"):
        return base
    if tls.strip().lower() in ("0", "false", "no", "off"):
        return "http://" + base.split("://", 1)[1]
    raise StoreURLError(f"{redact_url(url)!r}: tls must be 0 or 1, not {tls!r}")


def _number(text: str, name: str, url: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise StoreURLError(f"{redact_url(url)!r}: {name} must be a number of seconds, not {text!r}") from None
    if value < 0:
        raise StoreURLError(f"{redact_url(url)!r}: {name} must not be negative")
    return value
