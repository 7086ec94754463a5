"""The store registry: one table, URL scheme → the callable that opens it and the extra that installs it.

Modules import lazily, so an extra that is not installed costs nothing until a URL asks for it.
Third-party stores register with :func:`register_store` or an ``actioncache.stores`` entry point.
Each store owns its URL grammar both ways: ``from_url`` reads it, ``url_from_fields`` (beside it on
the same class or module) writes it from named fields, which is how an agent's ``settings.ltm:
{backend: NAME, ...}`` becomes a URL (:func:`url_from_fields`).
"""

from __future__ import annotations

import importlib
import os
import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple
from urllib.parse import urlsplit

from .._log import log
from ..errors import MissingStoreExtraError, StoreURLError
from .redaction import redact_url

if TYPE_CHECKING:  # annotations only: base re-exports this module's names, so it must not import base back
    from .base import CacheStore

__all__ = ["ENTRY_POINT_GROUP", "Backend", "Targets", "field_backends", "open_store", "register_store",
           "registered_schemes", "registered_stores", "scheme_of", "store_targets", "url_from_fields"]


ENTRY_POINT_GROUP = "actioncache.stores"


class Backend(NamedTuple):
    """How to open one URL scheme: ``target`` is ``"module:callable"`` (the callable takes the URL
    and options and returns a store); ``extra`` is the pip extra that installs its dependency;
    ``fields``: the scheme is also a backend name the store builds a URL for from named fields
    (``url_from_fields`` beside the callable), listed without importing the store."""

    target: str
    extra: str | None = None
    fields: bool = False


# The one table: scheme -> backend. Modules import lazily, so an extra that is not installed
# costs nothing until a URL asks for it. Each backend's from_url owns its URL grammar.
_BACKENDS: dict[str, Backend] = {
    "memory": Backend("actioncache.stores.memory:MemoryStore.from_url", None, True),
    "sqlite": Backend("actioncache.stores.sqlite:SQLiteStore.from_url", None, True),
    "duckdb": Backend("actioncache.stores.duckdb:DuckDBStore.from_url", "duckdb", True),
    "libsql": Backend("actioncache.stores.turso:TursoStore.from_url", "turso", True),
    "libsql+file": Backend("actioncache.stores.turso:TursoStore.from_url", "turso"),
    "turso": Backend("actioncache.stores.turso:TursoStore.from_url", "turso", True),
    "firestore": Backend("actioncache.stores.firestore:FirestoreStore.from_url", "firestore", True),
    "redis": Backend("actioncache.stores.redis:RedisStore.from_url", "redis", True),
    "rediss": Backend("actioncache.stores.redis:RedisStore.from_url", "redis", True),
    "valkey": Backend("actioncache.stores.redis:RedisStore.from_url", "redis", True),
    "valkeys": Backend("actioncache.stores.redis:RedisStore.from_url", "redis", True),
    **{f"{base}+{topology}": Backend("actioncache.stores.redis:RedisStore.from_url", "redis")
       for base in ("redis", "rediss", "valkey", "valkeys") for topology in ("cluster", "sentinel")},
    "postgresql": Backend("actioncache.stores.postgres:PostgresStore.from_url", "postgres", True),
    "postgres": Backend("actioncache.stores.postgres:PostgresStore.from_url", "postgres", True),
    "blob-sqlite": Backend("actioncache.stores.blob_sqlite:BlobSQLiteStore.from_url", "s3|gcs|azure", True),
}
_entry_points_loaded = False


class Targets(NamedTuple):
    """What a store URL makes its store open: local ``paths`` (absolute, as the store will open
    them, before symlinks are resolved) and network ``hosts``. Each built-in scheme's function
    below is the one its ``from_url`` takes its path or hosts from, so a check of these (untrusted
    agents: ``agents/trust.py``) judges what is actually opened."""

    paths: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    # The store also connects to addresses it learns at run time (a Redis Cluster's nodes and
    # redirects, the master a Sentinel names): those cannot be judged before they are known, so a
    # check of ``hosts`` does not cover everything the store reaches.
    learned: bool = False


# scheme -> "module:callable" taking the URL and returning its Targets (the function the store's
# own from_url uses). A scheme without one (a third-party store) cannot say: store_targets gives None.
_TARGETS: dict[str, str] = {
    "memory": "actioncache.stores.registry:_no_targets",
    "sqlite": "actioncache.stores._sql:sqlite_targets",
    "duckdb": "actioncache.stores._sql:duckdb_targets",
    "libsql+file": "actioncache.stores._sql:libsql_targets",
    "libsql": "actioncache.stores._sql:libsql_targets",
    "turso": "actioncache.stores._sql:libsql_targets",
    "blob-sqlite": "actioncache.stores.blob_sqlite:blob_sqlite_targets",
    "postgresql": "actioncache.stores.postgres:PostgresStore.targets",
    "postgres": "actioncache.stores.postgres:PostgresStore.targets",
    **{scheme: "actioncache.stores.redis:RedisStore.targets"
       for base in ("redis", "rediss", "valkey", "valkeys") for scheme in (base, base + "+cluster", base + "+sentinel")},
}


def _no_targets(url: str) -> Targets:
    return Targets()


def store_targets(url: str) -> Targets | None:
    """The files and hosts the store ``url`` names would open, as its own URL parser reads them;
    None when its scheme cannot say (Firestore, blob stores in the cloud, third-party stores). A
    bad URL raises the :class:`StoreURLError` opening it would raise; a missing driver, the
    :class:`MissingStoreExtraError`."""
    if "://" not in url:
        raise StoreURLError(f"not a store URL: {redact_url(url)!r}")
    scheme = urlsplit(url).scheme.lower()
    target = _TARGETS.get(scheme) or _TARGETS.get(scheme_of(url))
    if target is None:
        return None
    function = _resolve(scheme, Backend(target, _BACKENDS[scheme_of(url)].extra))
    targets: Targets | None = function(url)
    return targets
# RFC 3986: what urlsplit() reads back as the scheme of 'scheme://...'.
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_TARGET = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


#: The schemes whose store is one local database file.
FILE_SCHEMES = ("sqlite", "duckdb", "libsql+file")


def store_file(url: str) -> str | None:
    """The local database file a file-backed store URL (``sqlite:``, ``duckdb:``, ``libsql+file:``)
    makes its store open, read by that store's own parser (:func:`store_targets`), so every reader
    of a store URL (the CLI's checks, exec's secret and own files) names the file the store opens.
    None for another scheme, an in-memory database, an embedded replica (its first open fetches
    the file from its server) and a URL the store refuses (it opens no file)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in FILE_SCHEMES or "sync_url=" in parts.query:
        return None
    try:
        targets = store_targets(url)
    except StoreURLError:
        return None
    return targets.paths[0] if targets is not None and targets.paths else None


def missing_store_file(url: str, shown_url: str) -> str | None:
    """Why a reading command must not open ``url`` (a store file that is not there), or None;
    the message quotes ``shown_url``, the URL redacted by the caller (its query may hold a token)."""
    path = store_file(url)
    if path is None or os.path.exists(path):
        return None
    return (f"no store at {path}: nothing was ever cached there. Check --store or $ACTIONCACHE_URL "
            f"(the store URL was {shown_url})")


def register_store(scheme: str, target: str, *, extra: str | None = None, clobber: bool = False,
                   fields: bool = False) -> None:
    """Map a URL scheme to ``"module:callable"``; the callable takes the URL and returns a store.

    ``extra`` names the actioncache extra an ImportError should point at (``pip install
    'actioncache[extra]'``); leave it out for a store in a package of your own, and the error
    names that package's module instead. A scheme that is already
    registered is refused unless ``clobber=True`` (replacing ``sqlite`` by accident would send
    every default cache elsewhere). Third-party packages can instead declare an entry point in the
    ``actioncache.stores`` group (name: the scheme, value: ``"module:callable"``). ``fields=True``
    lists the scheme among the backend names :func:`url_from_fields` accepts (the store then has a
    ``url_from_fields`` beside the callable; one that has it works unlisted too).
    """
    name = scheme.lower() if isinstance(scheme, str) else ""
    if not _SCHEME.fullmatch(name):
        raise ValueError(f"a store scheme is what a URL starts with: a letter, then letters, digits, '+', '-' or "
                         f"'.' (e.g. 'mystore'), not {scheme!r}")
    if name.startswith("blob-sqlite+"):
        raise ValueError(f"{scheme!r} cannot be registered: every 'blob-sqlite+...' URL opens the blob-sqlite store "
                         f"(the part after '+' names the object store); choose another scheme")
    if not isinstance(target, str) or not _TARGET.fullmatch(target):
        raise ValueError(f"target must be 'module:callable' with dotted Python names, e.g. "
                         f"'mypkg.store:MyStore.from_url', not {target!r}")
    _load_entry_points()  # an installed entry point counts as registered, whenever this is called
    current = _BACKENDS.get(name)
    if current is not None and not clobber and current.target != target:
        raise ValueError(f"store scheme {name!r} is already registered to {current.target}; "
                         f"pass clobber=True to replace it")
    _BACKENDS[name] = Backend(target, extra, fields)


def registered_schemes() -> list[str]:
    _load_entry_points()
    return sorted(_BACKENDS)


def registered_stores() -> Mapping[str, Backend]:
    """A read-only view of the table: scheme -> :class:`Backend`."""
    _load_entry_points()
    return MappingProxyType(_BACKENDS)


def field_backends() -> list[str]:
    """The backend names :func:`url_from_fields` builds a URL for (``settings.ltm``'s ``backend:``)."""
    return sorted(name for name, backend in _BACKENDS.items() if backend.fields)


def url_from_fields(backend: str, fields: Mapping[str, Any], *,
                    base_dir: str | os.PathLike[str] | None = None) -> str:
    """The URL of the store ``backend`` names, written by that store from ``fields``.

    ``backend`` is a scheme (``sqlite``, ``redis``, ``postgres``, …); ``fields`` its named parts
    (``path``, ``host``, ``port``, ``user``, …; ``url`` with additions such as ``auth_token``);
    relative paths are taken from ``base_dir`` (default: the working directory). An unknown
    backend, or a field the store does not take, is a :class:`StoreURLError` naming the fix.
    """
    name = str(backend).lower()
    if name not in _BACKENDS:
        _load_entry_points()
    entry = _BACKENDS.get(name)
    if entry is None:
        import difflib  # only when a name is misspelled
        close = difflib.get_close_matches(name, field_backends(), n=3, cutoff=0.6)
        hint = " (did you mean " + " or ".join(repr(c) for c in close) + "?)" if close else ""
        raise StoreURLError(f"unknown backend {name!r}{hint}; known backends: {', '.join(field_backends())}, "
                            "or give url: with any store URL")
    factory = _resolve(name, entry)
    # Beside the callable: on a classmethod's class, else in the callable's module (already imported).
    owner = getattr(factory, "__self__", None) or importlib.import_module(entry.target.partition(":")[0])
    writer = getattr(owner, "url_from_fields", None)
    if writer is None:
        raise StoreURLError(f"the {name!r} store takes no fields; give its whole URL (url: {name}://...)")
    written: str = writer(fields, scheme=name, base_dir=base_dir)
    return written


def _load_entry_points() -> None:
    """Add the schemes installed packages declare (group ``actioncache.stores``); built-ins win."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    try:
        from importlib.metadata import entry_points

        found = entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # noqa: BLE001 - broken package metadata must not break the built-in stores
        log.warning("reading %s entry points failed: %s", ENTRY_POINT_GROUP, exc)
        return
    for point in found:
        _BACKENDS.setdefault(point.name.lower(), Backend(point.value))


def scheme_of(url: str) -> str:
    """The registry's scheme of ``url`` (``blob-sqlite+s3://`` is ``blob-sqlite``), lower case."""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:  # e.g. an unbalanced '[' in a password: the parser's words may quote a piece of it
        raise StoreURLError(
            f"{redact_url(url)!r} is not a valid URL (its host part does not parse); "
            "percent-encode special characters in a "
            "password (e.g. '[' as %5B)"
        ) from None
    if scheme.startswith("blob-sqlite+"):
        return "blob-sqlite"
    return scheme


def open_store(url: str | CacheStore | None = None, **options: Any) -> CacheStore:
    """Open the store a URL names (``sqlite:///abs/path.db``, ``memory://``, ``redis://…``, …).

    ``None`` means ``$ACTIONCACHE_URL``, else a SQLite file in the user cache directory.
    A store object passes through unchanged.
    """
    if url is not None and not isinstance(url, str):
        return url
    if url is None:
        from .. import config

        url = config.default_store_url()
    if "://" not in url:
        raise StoreURLError(
            f"not a store URL: {redact_url(url)!r}. Use a URL such as 'sqlite:///abs/path.db' or 'memory://'; "
            f"known schemes: {', '.join(registered_schemes())}"
        )
    scheme = scheme_of(url)
    from ._eviction import check_size_limit_supported

    check_size_limit_supported(scheme, url, options)
    backend = _BACKENDS.get(scheme)
    if backend is None:
        _load_entry_points()  # only for a scheme the built-ins do not know: start-up stays cheap
        backend = _BACKENDS.get(scheme)
    if backend is None:
        if not scheme:  # urlsplit reads no scheme from e.g. 'my_store://': '_' may not appear in one
            raise StoreURLError(
                f"{redact_url(url)!r} does not start with a valid URL scheme ({url.split('://', 1)[0]!r}: a scheme is "
                f"a letter, then letters, digits, '+', '-' or '.'); known schemes: {', '.join(registered_schemes())}"
            )
        raise StoreURLError(
            f"unknown store scheme {scheme!r} in {redact_url(url)!r}; known schemes: {', '.join(registered_schemes())}"
        )
    store: CacheStore = _resolve(scheme, backend)(url, **options)
    return store


def _resolve(scheme: str, backend: Backend) -> Any:
    """The callable ``backend.target`` names, imported; an error names the extra or the registration."""
    module_name, _, attr = backend.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        from ..extras import missing

        if backend.extra is None and not module_name.startswith("actioncache."):
            # a third-party store without an actioncache extra: the advice is its own package
            raise MissingStoreExtraError(
                f"the {scheme!r} store is registered to {backend.target}, but {module_name!r} cannot be imported "
                f"({exc}); install the package that provides it, or fix the registration"
            ) from exc
        raise missing(f"the {scheme!r} store", backend.extra or scheme, exc, MissingStoreExtraError) from exc
    factory: Any = module
    try:
        for part in attr.split("."):
            factory = getattr(factory, part)
    except AttributeError:
        raise StoreURLError(f"the {scheme!r} store is registered to {backend.target}, but {module_name!r} has no "
                            f"{attr!r}; fix the registration (register_store or the package's entry point)") from None
    if not callable(factory):
        raise StoreURLError(f"the {scheme!r} store is registered to {backend.target}, which is not callable")
    return factory
