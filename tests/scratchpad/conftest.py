"""Fixtures: a fresh store per backend (the factories of tests/stores/backends.py: memory, SQLite,
and the real Redis and PostgreSQL servers, which skip locally and fail under CI=true when down)."""

from __future__ import annotations

import time
import uuid

import pytest
from stores.backends import BACKENDS

from actioncache.scratchpad import Scratchpad
from actioncache.stores.base import Entry

# The scratchpad uses only the store protocol, which tests/stores/ proves for every backend; here it
# runs on the embedded ones and on the two servers this machine runs.
SCRATCH_BACKENDS = [name for name in ("memory", "sqlite", "redis", "postgres") if name in BACKENDS]


def new_session(prefix: str = "s") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=SCRATCH_BACKENDS)
def store(request, tmp_path):
    s = BACKENDS[request.param](tmp_path)
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path):
    s = BACKENDS["sqlite"](tmp_path)
    yield s
    s.close()


@pytest.fixture
def mcp_sdk() -> None:
    """The MCP SDK is in the [mcp] extra: skip without it locally, fail under CI=true."""
    import services

    services.require_module("mcp", "mcp")


@pytest.fixture
def pad(store) -> Scratchpad:
    return Scratchpad(store, new_session())


def item_cost(store, data, description: str) -> int:
    """The bytes one item of ``data`` and ``description`` occupies against a session quota: the
    quota counts every stored byte (data, metadata, keys, index entry), not only the data."""
    probe = Scratchpad(store, new_session())
    probe.write(data, description)
    cost = probe.usage()["storedBytes"]
    probe.end_session()
    return cost


def age_session(store, session: str, seconds: float) -> None:
    """Make a session look last used ``seconds`` ago, as its marker would after that long."""
    marker = store.get(f"scratch-session:{session}")
    meta = dict(marker.metadata)
    meta["_scratch_last_access"] = time.time() - seconds
    store.put(Entry(marker.key, marker.value, meta, marker.created_at, marker.expires_at))
