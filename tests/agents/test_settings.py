"""settings: ${VAR} expansion, ltm backends -> store URLs, settings.cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from actioncache.agents import AgentDefinitionError
from actioncache.agents.settings import expand_env, ltm_store_url


def test_expand_env_with_defaults():
    env = {"HOST": "db.local", "EMPTY": ""}
    assert expand_env({"a": "${HOST}:1", "b": ["${MISSING:-fallback}", "${EMPTY:-x}"], "c": 3}, env=env) == \
        {"a": "db.local:1", "b": ["fallback", "x"], "c": 3}
    with pytest.raises(AgentDefinitionError, match=r"settings.ltm.path uses \$\{NOPE\} but NOPE is not set"):
        expand_env({"ltm": {"path": "${NOPE}"}}, env=env)


@pytest.mark.parametrize("ltm, url", [
    ({"backend": "sqlite", "path": "c.db"}, "sqlite:///base/c.db"),
    ({"backend": "sqlite", "path": "/abs/c.db"}, "sqlite:///abs/c.db"),
    ({"backend": "memory"}, "memory://"),
    ({"backend": "duckdb", "path": "c.duckdb"}, "duckdb:///base/c.duckdb"),
    ({"backend": "turso", "path": "t.db"}, "libsql+file:///base/t.db"),
    ({"backend": "firestore", "project": "p", "collection": "c"}, "firestore://p/c"),
    ({"backend": "redis", "host": "h", "port": 1, "db": 2}, "redis://h:1/2"),
    ({"backend": "postgres", "user": "u", "password": "p@ss", "database": "d"}, "postgresql://u:p%40ss@127.0.0.1:5432/d"),
    ({"backend": "blob-sqlite", "uri": "s3://bucket/c.db"}, "blob-sqlite+s3://bucket/c.db"),
    ({"url": "redis://127.0.0.1:6379/0"}, "redis://127.0.0.1:6379/0"),
])
def test_ltm_backends_map_to_store_urls(ltm, url):
    assert ltm_store_url(ltm, Path("/base")) == url


def test_unknown_backend_and_key_are_clear():
    with pytest.raises(AgentDefinitionError, match=r"unknown backend 'sqlit' \(did you mean 'sqlite'"):
        ltm_store_url({"backend": "sqlit"}, Path("."))
    with pytest.raises(AgentDefinitionError, match=r"settings.ltm: unknown key 'pth' \(did you mean 'path'"):
        ltm_store_url({"backend": "sqlite", "pth": "x"}, Path("."))


def test_agent_store_from_settings_relative_to_the_yaml_file(agent_from, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_DB", "sub/agent.db")
    (tmp_path / "sub").mkdir()
    agent = agent_from("""
        settings:
          ltm: {backend: sqlite, path: "${AGENT_DB}"}
          cache: {cleanup_probability: 0.0, default_ttl_days: 2}
        nodes:
          - {name: w, uses: cache.wrap, with: {action: storage.hash, args: {path: "{{ agent_dir }}/agent.yaml"}}, output: r}
    """, store=None)
    assert agent.store.url.endswith(f"{tmp_path}/sub/agent.db")
    assert agent.settings["ltm"]["path"] == "sub/agent.db"
    assert agent.cache.default_ttl_seconds == 2 * 86400
    assert agent.invoke()["r"]["success"] is True
    assert (tmp_path / "sub" / "agent.db").exists()


def test_no_ltm_means_the_default_store(agent_from, tmp_path):
    agent = agent_from("nodes:\n  - {name: a, uses: cache.stats}\n", store=None)
    assert agent.store.url.endswith(f"{tmp_path}/default.db")  # conftest points $ACTIONCACHE_URL here


def test_ltm_size_limit_goes_into_the_store_url(agent_from, tmp_path):
    limited = ltm_store_url({"backend": "sqlite", "path": "c.db", "max_size_bytes": "20KB", "eviction": "lfu"},
                            Path("/base"))
    assert limited == "sqlite:///base/c.db?max_size_bytes=20KB&eviction=lfu"
    assert ltm_store_url({"url": "memory://?x=1", "max_size_bytes": 1000}, Path("/base")) == \
        "memory://?x=1&max_size_bytes=1000"
