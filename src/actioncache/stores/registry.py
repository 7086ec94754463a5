"""The store registry: URL scheme → the module that opens it, and the extra that installs it.

Modules import lazily, so an extra that is not installed costs nothing until a URL asks for it.
"""

from __future__ import annotations

import importlib
from typing import Any
from urllib.parse import urlsplit

from ..errors import MissingStoreExtraError, StoreURLError
from .base import CacheStore

# scheme -> "module:factory". Modules import lazily so an extra that is not installed costs
# nothing until a URL asks for it.
_REGISTRY: dict[str, str] = {
    "memory": "actioncache.stores.memory:MemoryStore.from_url",
    "sqlite": "actioncache.stores.sqlite:SQLiteStore.from_url",
    "duckdb": "actioncache.stores.duckdb:DuckDBStore.from_url",
    "libsql": "actioncache.stores.turso:TursoStore.from_url",
    "libsql+file": "actioncache.stores.turso:TursoStore.from_url",
    "turso": "actioncache.stores.turso:TursoStore.from_url",
    "firestore": "actioncache.stores.firestore:FirestoreStore.from_url",
    "redis": "actioncache.stores.redis:RedisStore.from_url",
    "rediss": "actioncache.stores.redis:RedisStore.from_url",
    "postgresql": "actioncache.stores.postgres:PostgresStore.from_url",
    "postgres": "actioncache.stores.postgres:PostgresStore.from_url",
    "blob-sqlite": "actioncache.stores.blob_sqlite:BlobSQLiteStore.from_url",
}

# Which extra provides a scheme, for the error message when its module cannot import.
_EXTRA_FOR_SCHEME = {
    "duckdb": "duckdb",
    "libsql": "turso",
    "libsql+file": "turso",
    "turso": "turso",
    "firestore": "firestore",
    "redis": "redis",
    "rediss": "redis",
    "postgresql": "postgres",
    "postgres": "postgres",
    "blob-sqlite": "s3|gcs|azure",
}


def register_store(scheme: str, target: str) -> None:
    """Map a URL scheme to ``"module:callable"``; the callable takes the URL and returns a store."""
    _REGISTRY[scheme.lower()] = target


def registered_schemes() -> list[str]:
    return sorted(_REGISTRY)


def _scheme_of(url: str) -> str:
    scheme = urlsplit(url).scheme.lower()
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
            f"not a store URL: {url!r}. Use a URL such as 'sqlite:///abs/path.db' or 'memory://'; "
            f"known schemes: {', '.join(registered_schemes())}"
        )
    scheme = _scheme_of(url)
    from ._eviction import check_size_limit_supported

    check_size_limit_supported(scheme, url, options)
    target = _REGISTRY.get(scheme)
    if target is None:
        raise StoreURLError(
            f"unknown store scheme {scheme!r} in {url!r}; known schemes: {', '.join(registered_schemes())}"
        )
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        from ..extras import missing

        extra = _EXTRA_FOR_SCHEME.get(scheme, scheme)
        raise missing(f"the {scheme!r} store", extra, exc, MissingStoreExtraError) from exc
    factory: Any = module
    for part in attr.split("."):
        factory = getattr(factory, part)
    return factory(url, **options)
