from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from actioncache import Cache

pytest_plugins = ["leftovers"]  # a run under scripts/test.sh fails if it left data behind


@pytest.fixture(autouse=True)
def _isolated_default_store(tmp_path, monkeypatch):
    """No test touches the user's real cache: the default store is a file in tmp_path, and the user
    cache directory (where exec keeps its notes) is one of tmp_path's."""
    monkeypatch.setenv("ACTIONCACHE_URL", f"sqlite:///{tmp_path}/default.db")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    from actioncache import cache as cache_module

    cache_module.set_default_cache(None)
    yield
    cache_module.set_default_cache(None)


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/cache.db"


@pytest.fixture
def cache(sqlite_url) -> Cache:
    c = Cache(sqlite_url, cleanup_probability=0.0)
    yield c
    c.close()


@pytest.fixture
def src_env() -> dict[str, str]:
    """Environment for subprocesses that must import this checkout's actioncache."""
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env
