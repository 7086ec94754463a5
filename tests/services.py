"""Where the tests find the real servers (ports agree with scripts/services.d/), and the rule
for an unreachable one: skip locally, fail under CI=true (DESIGN.md, "Real components")."""

from __future__ import annotations

import os
import socket

import pytest

REDIS_URL = os.environ.get("ACTIONCACHE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
POSTGRES_URL = os.environ.get("ACTIONCACHE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
S3_ENDPOINT = os.environ.get("ACTIONCACHE_TEST_S3_ENDPOINT", "http://127.0.0.1:5555")
GCS_ENDPOINT = os.environ.get("ACTIONCACHE_TEST_GCS_ENDPOINT", "http://127.0.0.1:9023")
AZURITE_BLOB_PORT = int(os.environ.get("ACTIONCACHE_TEST_AZURITE_PORT", "10000"))
FIRESTORE_HOST = os.environ.get("ACTIONCACHE_TEST_FIRESTORE_HOST", "127.0.0.1:8086")


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
    try:
        __import__(module)
    except ImportError:
        message = f"{module} is not installed; pip install 'actioncache[{extra}]'"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
