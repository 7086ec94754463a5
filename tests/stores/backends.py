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


# name -> factory. Backend engineers: add yours (keep the names short; they are test ids).
BACKENDS: dict[str, Factory] = {
    "memory": memory_store,
    "sqlite": sqlite_store,
}

# Backends whose store objects can be opened again from their URL by another process
# (used by the cross-process tests).
SHAREABLE: set[str] = {"sqlite"}
