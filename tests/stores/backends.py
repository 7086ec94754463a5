"""One factory per backend: each returns a fresh, empty store for one test.

The conformance suite (test_conformance.py) runs against every entry of BACKENDS. A backend
engineer adds a factory here; the suite itself does not change. Factories that need a server
call services.require(...) (skip locally, fail under CI=true).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Callable

from actioncache.stores.base import CacheStore, open_store

Factory = Callable[[Path], CacheStore]


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def memory_store(tmp_path: Path) -> CacheStore:
    return open_store("memory://")


def sqlite_store(tmp_path: Path) -> CacheStore:
    return open_store(f"sqlite:///{tmp_path}/conformance.db")


def _server_store(name: str, base_url: str, option: str) -> CacheStore:
    """A store on a shared server, isolated by a unique Redis prefix / PostgreSQL table, removed at exit."""
    import atexit
    from urllib.parse import urlsplit

    import services

    services.require(name, urlsplit(base_url).hostname or "127.0.0.1", urlsplit(base_url).port or 0)
    store = open_store(f"{base_url}{'&' if '?' in base_url else '?'}{option}={unique('ac_')}")
    atexit.register(lambda: _quietly(store.drop))
    return store


def _quietly(fn: Callable[[], object]) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - best-effort tidy-up of a shared server at exit
        pass


def redis_store(tmp_path: Path) -> CacheStore:
    import services

    return _server_store("redis", services.REDIS_URL, "prefix")


def postgres_store(tmp_path: Path) -> CacheStore:
    import services

    return _server_store("postgres", services.POSTGRES_URL, "table")


def _blob(protocol: str) -> Factory:
    """blob-sqlite on one object store (emulator, local dir or fsspec memory), at a unique path."""

    def factory(tmp_path: Path) -> CacheStore:
        from .cloud_stores import blob_url, open_blob

        return open_blob(blob_url(protocol, tmp_path, unique("c")))

    return factory


def firestore_store(tmp_path: Path) -> CacheStore:
    from .cloud_stores import open_firestore

    return open_firestore(unique("c"))


def duckdb_store(tmp_path: Path) -> CacheStore:
    import services

    services.require_module("duckdb", "duckdb")
    return open_store(f"duckdb:///{tmp_path}/conformance.duckdb")


def libsql_store(tmp_path: Path) -> CacheStore:
    """libSQL embedded (a local file through the libsql package); remote Turso is tested in test_turso.py."""
    import services

    services.require_module("libsql", "turso")
    return open_store(f"libsql+file:///{tmp_path}/conformance.db")


# name -> factory. Backend engineers: add yours (keep the names short; they are test ids).
BACKENDS: dict[str, Factory] = {
    "memory": memory_store,
    "sqlite": sqlite_store,
    "duckdb": duckdb_store,
    "libsql": libsql_store,
    "redis": redis_store,
    "postgres": postgres_store,
    "blob-s3": _blob("s3"),
    "blob-gs": _blob("gs"),
    "blob-az": _blob("az"),
    "blob-file": _blob("file"),
    "blob-memory": _blob("memory"),
    "firestore": firestore_store,
}

# Backends whose store objects can be opened again from their URL by another process
# (used by the cross-process tests).
SHAREABLE: set[str] = {"redis", "postgres", "sqlite"}
