"""Where the tests find the real servers (ports agree with scripts/services.d/), and the rule
for an unreachable one: skip locally, fail under CI=true (DESIGN.md, "Real components")."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest


def _published() -> dict[str, str]:
    """The addresses `scripts/services.sh start` wrote for this run (test.sh sets the run directory;
    by hand it is .ci/.state of this checkout)."""
    run_dir = os.environ.get("ACTIONCACHE_TEST_RUN_DIR") or str(Path(__file__).resolve().parents[1] / ".ci" / ".state")
    try:
        lines = (Path(run_dir) / "services.env").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    return dict(line.split("=", 1) for line in lines if "=" in line)


_PUBLISHED = _published()


def _address(name: str, default: str) -> str:
    return os.environ.get(name) or _PUBLISHED.get(name) or default


# Each run of scripts/test.sh has servers of its own (free ports, its own Redis, its own PostgreSQL
# database); the defaults are the machine's servers, for a pytest run without scripts/services.sh.
REDIS_URL = _address("ACTIONCACHE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
POSTGRES_URL = _address("ACTIONCACHE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
S3_ENDPOINT = _address("ACTIONCACHE_TEST_S3_ENDPOINT", "http://127.0.0.1:5555")
GCS_ENDPOINT = _address("ACTIONCACHE_TEST_GCS_ENDPOINT", "http://127.0.0.1:9023")
AZURITE_BLOB_PORT = int(_address("ACTIONCACHE_TEST_AZURITE_PORT", "10000"))
# Redis Cluster seeds, Sentinel and Valkey: empty when scripts/services.sh did not start them.
REDIS_CLUSTER_URL = _address("ACTIONCACHE_TEST_REDIS_CLUSTER_URL", "")
REDIS_CLUSTER_PORTS = [int(p) for p in _address("ACTIONCACHE_TEST_REDIS_CLUSTER_PORTS", "").split()]
REDIS_SENTINEL_URL = _address("ACTIONCACHE_TEST_REDIS_SENTINEL_URL", "")
VALKEY_URL = _address("ACTIONCACHE_TEST_VALKEY_URL", "")
FIRESTORE_HOST = _address("ACTIONCACHE_TEST_FIRESTORE_HOST", "127.0.0.1:8086")
_redis = urlsplit(REDIS_URL)
REDIS_HOST, REDIS_PORT = _redis.hostname or "127.0.0.1", _redis.port or 6379
_postgres = urlsplit(POSTGRES_URL)
POSTGRES_HOST, POSTGRES_PORT = _postgres.hostname or "127.0.0.1", _postgres.port or 5432


def redis_url(db: int = 15, query: str = "") -> str:
    """This run's Redis, database `db`, with an optional query string (`prefix=...`)."""
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/{db}" + (f"?{query}" if query else "")


def require_redis() -> None:
    require("redis", REDIS_HOST, REDIS_PORT)


def require_postgres() -> None:
    require("postgresql", POSTGRES_HOST, POSTGRES_PORT)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def require(name: str, host: str, port: int) -> None:
    """Skip (locally) or fail (CI=true) when a server is not reachable."""
    if port_open(host, port):
        return
    message = f"{name} is not reachable at {host}:{port}; start it with scripts/services.sh start"
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def require_program(name: str, installer: str) -> str:
    """The path of a program on PATH; skip (locally) or fail (CI=true) when it is missing."""
    import shutil

    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed; {installer} installs it"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


def require_module(module: str, extra: str) -> None:
    """Skip (locally) or fail (CI=true) when `module` is not installed. Found, not imported: importing
    sentence_transformers (torch, transformers) to learn that it is there took most of a minute of a
    test's set-up on a loaded machine, for tests that then use the ONNX model; a test that uses the
    module imports it and fails if it is broken."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package of a dotted name is missing, or no spec
        found = False
    if not found:
        message = f"{module} is not installed; pip install 'actioncache[{extra}]'"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
