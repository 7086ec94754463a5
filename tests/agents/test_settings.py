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


def test_ltm_url_and_another_backend_are_refused():
    with pytest.raises(AgentDefinitionError, match=r"settings.ltm: give url: or backend: with its fields, not both "
                                                   r"\(url: opens a 'sqlite' store, backend: says 'redis'\)"):
        ltm_store_url({"url": "sqlite:///tmp/c.db", "backend": "redis"}, Path("."))
    # A backend naming the URL's own store is fine (docs: backend: turso with url: libsql://HOST).
    assert ltm_store_url({"url": "libsql://db.example", "backend": "turso"}, Path(".")) == "libsql://db.example"
    assert ltm_store_url({"url": "postgresql://h/d", "backend": "postgres"}, Path(".")) == "postgresql://h/d"


@pytest.mark.parametrize("fields, message", [
    ({"port": "\u00b2"}, r"port: must be a whole number >= 1 and <= 65535, not '\u00b2'"),
    ({"port": "\u0666\u0663\u0667\u0669"}, r"port: must be a whole number"),
    ({"db": "\u00b9"}, r"db: must be a whole number >= 0"),
    ({"host": "127.0.0.1:6379"}, r"host: must be a host name or address .*; give the port as port:, not in host"),
])
def test_ltm_field_mistakes_name_the_field(fields, message):
    with pytest.raises(AgentDefinitionError, match=message):
        ltm_store_url({"backend": "redis", **fields}, Path("."))


def test_blob_sqlite_files_whose_names_differ_after_a_hash_are_two_stores(agent_from, tmp_path):
    """uri: file:///dir/tenant#1.db and ...#2.db are two files: '#' does not cut the name short."""
    def agent(tenant: str) -> str:
        return f"""
            name: tenant{tenant}
            settings:
              ltm: {{backend: blob-sqlite, uri: "file://{tmp_path}/tenant#{tenant}?.db"}}
            nodes:
              - {{name: r, uses: ltm.retrieve, with: {{key: shared}}, output: r}}
              - {{name: w, uses: ltm.store, with: {{key: shared, value: "{tenant}'s secret"}}, output: w}}
        """
    first, second = agent_from(agent("1"), store=None), agent_from(agent("2"), store=None)
    assert first.invoke()["r"]["found"] is False
    assert second.invoke()["r"]["found"] is False  # not the first tenant's value
    assert first.invoke()["r"]["value"] == "1's secret" and second.invoke()["r"]["value"] == "2's secret"
    first.close(), second.close()  # uploads the pending writes
    assert (tmp_path / "tenant#1?.db").exists() and (tmp_path / "tenant#2?.db").exists()


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


def test_ltm_size_limit_already_in_the_url_is_not_appended_twice():
    url = "memory://?max_size_bytes=20KB&eviction=lfu"
    assert ltm_store_url({"url": url, "max_size_bytes": 20_000, "eviction": "LFU"}, Path("/base")) == url
    assert ltm_store_url({"url": "memory://?max_size_bytes=20KB", "eviction": "ttl"}, Path("/base")) == \
        "memory://?max_size_bytes=20KB&eviction=ttl"
    with pytest.raises(AgentDefinitionError, match="settings.ltm: max_size_bytes is given twice") as caught:
        ltm_store_url({"url": "memory://?max_size_bytes=20KB", "max_size_bytes": "1MB"}, Path("/base"))
    assert "'20KB'" in str(caught.value) and "'1MB'" in str(caught.value) and "give max_size_bytes once" in str(caught.value)
