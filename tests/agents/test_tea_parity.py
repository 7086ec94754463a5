"""The Edge Agent's cache behaviours (TEA-BUILTIN-010 and 010.1), through real agents on SQLite:
agent-scoped keys, the agent-name resolution order, the opt-out, and ``error_type`` on every
failure response of the cache actions."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stores.private_servers import private_redis  # noqa: F401 - fixture

from actioncache import Cache
from actioncache.agents import AgentDefinitionError, load_agent
from actioncache.keys import canonical_json


def counting(calls):
    def work(state, **kwargs):
        calls.append(kwargs)
        return {"success": True, "data": kwargs}

    return work


def wrap_node(with_: dict) -> str:
    return "  - name: w\n    uses: cache.wrap\n    with: " + json.dumps(with_) + "\n    output: r\n"


# --- agent name resolution (settings.name > name > file stem > unknown_agent) ------------------

@pytest.mark.parametrize("header, expected", [
    ("name: top\nsettings: {name: from_settings}\n", "from_settings"),
    ("name: top\nsettings: {}\n", "top"),
    ("name: top\nsettings: {name: ''}\n", "top"),
    ("name: top\nsettings: {name: null}\n", "top"),
    ("settings: {name: ''}\n", "my_file"),
    ("", "my_file"),
])
def test_agent_name_resolution_order(write_agent, sqlite_url, header, expected):
    path = write_agent(header + "nodes:\n" + wrap_node({"action": "demo.w", "args": {"a": 1}}), name="my_file.yaml")
    with load_agent(path, store=sqlite_url, actions={"demo.w": counting([])}) as agent:
        assert agent.agent_name == expected
        key = agent.invoke()["r"]["_cache_key"]
    assert key.startswith(f"cache:{expected}:demo.w:")


def test_an_agent_given_as_text_without_a_name_is_unknown_agent(sqlite_url):
    text = "nodes:\n" + wrap_node({"action": "demo.w", "args": {}})
    with load_agent(text, store=sqlite_url, actions={"demo.w": counting([])}) as agent:
        assert agent.invoke()["r"]["_cache_key"].startswith("cache:unknown_agent:demo.w:")


def test_settings_name_may_come_from_the_environment(write_agent, sqlite_url, monkeypatch):
    monkeypatch.setenv("AGENT_NAME", "env_named")
    path = write_agent("settings: {name: '${AGENT_NAME}'}\nnodes:\n" + wrap_node({"action": "demo.w", "args": {}}))
    with load_agent(path, store=sqlite_url, actions={"demo.w": counting([])}) as agent:
        assert agent.invoke()["r"]["_cache_key"].startswith("cache:env_named:")


# --- the prefix on every key strategy, and the opt-out ----------------------------------------

def test_args_key_is_cache_agent_action_hash(agent_from):
    calls = []
    agent = agent_from("name: my_agent\nnodes:\n" + wrap_node({"action": "demo.w", "args": {"text": "hello"}}),
                       actions={"demo.w": counting(calls)})
    first = agent.invoke()["r"]
    digest = hashlib.sha256(canonical_json({"text": "hello"}).encode()).hexdigest()
    assert first["_cache_key"] == f"cache:my_agent:demo.w:{digest}"
    assert first["_cache_key"].split(":") == ["cache", "my_agent", "demo.w", digest]
    second = agent.invoke()["r"]
    assert second["_cache_hit"] is True and second["_cache_key"] == first["_cache_key"] and len(calls) == 1


def test_sha256_key_is_prefixed(agent_from):
    agent = agent_from("name: my_agent\nnodes:\n" + wrap_node(
        {"action": "demo.w", "key_strategy": "sha256", "key_source": "content", "args": {"content": "hello world"}}),
        actions={"demo.w": counting([])})
    expected = hashlib.sha256(b"hello world").hexdigest()
    assert agent.invoke()["r"]["_cache_key"] == f"cache:my_agent:demo.w:{expected}"


def test_file_content_key_is_prefixed_and_follows_the_content(agent_from, tmp_path):
    calls = []
    (tmp_path / "a.txt").write_text("same")
    (tmp_path / "b.txt").write_text("same")
    agent = agent_from("name: my_agent\nnodes:\n" + wrap_node(
        {"action": "demo.w", "key_strategy": "file_content", "key_source": "file", "args": {"file": "{{ state.f }}"}}),
        actions={"demo.w": counting(calls)})
    first = agent.invoke({"f": str(tmp_path / "a.txt")})["r"]
    moved = agent.invoke({"f": str(tmp_path / "b.txt")})["r"]
    assert first["_cache_key"].startswith("cache:my_agent:demo.w:")
    assert moved["_cache_hit"] is True and moved["_cache_key"] == first["_cache_key"] and len(calls) == 1
    missing = agent.invoke({"f": str(tmp_path / "gone.txt")})["r"]
    assert missing["success"] is True and "no cache key" in missing["_cache_error"] and len(calls) == 2


@pytest.mark.parametrize("key, expected", [
    ("custom:key", "cache:my_agent:custom:key"),
    ("plain", "cache:my_agent:plain"),
    ("cache:short", "cache:my_agent:short"),
    ("cache:custom:key", "cache:custom:key"),  # TEA: cache:a:b is taken as already scoped
])
def test_custom_keys_get_the_agent_prefix_as_in_tea(agent_from, key, expected):
    agent = agent_from("name: my_agent\nnodes:\n" + wrap_node({"action": "demo.w", "key": key, "args": {}}),
                       actions={"demo.w": counting([])})
    assert agent.invoke()["r"]["_cache_key"] == expected


@pytest.mark.parametrize("extra, expected_prefix", [
    ({}, "cache:demo.w:"),
    ({"key": "shared-key"}, "cache:shared-key"),
    ({"key_strategy": "sha256", "key_source": "text"}, "cache:demo.w:"),
])
def test_key_prefix_false_shares_entries_across_agents(write_agent, sqlite_url, extra, expected_prefix):
    calls = []
    node = {"action": "demo.w", "key_prefix": False, "args": {"text": "x"}, **extra}
    keys = []
    for name in ("one", "two"):
        path = write_agent(f"name: {name}\nnodes:\n" + wrap_node(node), name=f"{name}.yaml")
        with load_agent(path, store=sqlite_url, actions={"demo.w": counting(calls)}) as agent:
            keys.append(agent.invoke()["r"])
    assert keys[0]["_cache_key"].startswith(expected_prefix) and "one" not in keys[0]["_cache_key"]
    assert keys[1]["_cache_hit"] is True and keys[1]["_cache_key"] == keys[0]["_cache_key"] and len(calls) == 1


def test_two_agents_on_one_store_never_collide(write_agent, sqlite_url):
    calls = []
    results = []
    for name in ("one", "two"):
        path = write_agent(f"name: {name}\nnodes:\n" + wrap_node({"action": "demo.w", "args": {"q": 1}}), name=f"{name}.yaml")
        with load_agent(path, store=sqlite_url, actions={"demo.w": counting(calls)}) as agent:
            results.append(agent.invoke()["r"])
    assert [r["_cache_hit"] for r in results] == [False, False] and len(calls) == 2
    assert results[0]["_cache_key"].replace("cache:one:", "cache:two:") == results[1]["_cache_key"]


def test_cache_wrap_from_python_has_no_prefix(sqlite_url):
    with Cache(sqlite_url) as cache:
        key = cache.wrap("demo.w", lambda text: {"text": text}, {"text": "hello"})["_cache_key"]
    digest = hashlib.sha256(canonical_json({"text": "hello"}).encode()).hexdigest()
    assert key == f"cache:demo.w:{digest}"


# Text YAML can carry as it is: letters, digits, marks, punctuation, symbols and spaces of any script.
NAME_FORBIDDEN = ":*?[]\\"  # refused in agent names (keys and invalidation globs stay unambiguous)
YAML_TEXT = st.characters(categories=["L", "M", "N", "P", "S", "Zs"], exclude_characters="{}%\ufeff")


@settings(max_examples=40, deadline=None)
@given(name=st.text(YAML_TEXT, min_size=1, max_size=20).filter(lambda s: not any(c in NAME_FORBIDDEN or c.isspace() for c in s)),
       args=st.dictionaries(st.text(YAML_TEXT, max_size=5), st.integers() | st.text(YAML_TEXT, max_size=8), max_size=4))
def test_prefixed_keys_are_deterministic_for_any_agent_name_and_args(name, args):
    """The prefixed args key is exactly cache:{name}:{action}:{sha256(canonical args)}, whatever the name."""
    node = "  - name: w\n    uses: cache.wrap\n    with: " + json.dumps({"action": "demo.w", "args": args}, ensure_ascii=False) + "\n    output: r\n"
    text = "settings: " + json.dumps({"name": name}, ensure_ascii=False) + "\nnodes:\n" + node
    with load_agent(text, store="memory://", actions={"demo.w": lambda state, **kw: {"ok": True}}) as agent:
        key = agent.invoke()["r"]["_cache_key"]
    assert key == f"cache:{name}:demo.w:{hashlib.sha256(canonical_json(args).encode()).hexdigest()}"


@pytest.mark.parametrize("header", ['name: "a:x"\n', 'settings: {name: "b*"}\n', 'name: "b?"\n', 'name: "b[c]"\n',
                                    'name: "my agent"\n', 'name: "a\\tb"\n', 'name: "a\\x01b"\n', 'name: "a\\\\b"\n'])
def test_agent_names_that_would_collide_or_glob_are_refused(header):
    """``a:x`` + key ``k`` and ``a`` + key ``x:k`` would both be ``cache:a:x:k``; ``b*`` would
    invalidate agent ``b``'s entries. Such names are refused at load, naming the fix."""

    with pytest.raises(AgentDefinitionError) as info:
        load_agent(header + "nodes:\n  - {name: s, uses: cache.stats}\n", store="memory://")
    assert "agent name" in str(info.value) and "settings.name" in str(info.value)


def test_a_file_name_that_would_glob_is_refused(write_agent, sqlite_url):
    path = write_agent("nodes:\n  - {name: s, uses: cache.stats}\n", name="b*.yaml")

    with pytest.raises(AgentDefinitionError, match="the file name"):
        load_agent(path, store=sqlite_url)
    write_agent("settings: {name: b_star}\nnodes:\n  - {name: s, uses: cache.stats}\n", name="b*.yaml")
    load_agent(path, store=sqlite_url).close()


# --- invalidation by agent -------------------------------------------------------------------

def test_invalidate_one_agents_entries_by_pattern(write_agent, sqlite_url):
    for name in ("agent1", "agent2"):
        path = write_agent(f"name: {name}\nnodes:\n" + wrap_node({"action": "demo.w", "args": {"q": "{{ state.q }}"}}),
                           name=f"{name}.yaml")
        with load_agent(path, store=sqlite_url, actions={"demo.w": counting([])}) as agent:
            agent.invoke({"q": 1})
            agent.invoke({"q": 2})
    with Cache(sqlite_url) as cache:
        cache.wrap("demo.w", lambda: {"shared": True}, {})  # an old-style, unprefixed entry
    path = write_agent("name: admin\nnodes:\n  - {name: i, uses: cache.invalidate, with: {pattern: 'cache:agent1:*'}, output: r}\n"
                       "  - {name: j, uses: cache.invalidate, with: {pattern: 'cache:*:demo.w:*'}, output: s}\n",
                       name="admin.yaml")
    with load_agent(path, store=sqlite_url) as agent:
        state = agent.invoke()
    assert state["r"]["deleted_count"] == 2 and all(k.startswith("cache:agent1:") for k in state["r"]["deleted_keys"])
    assert state["s"]["deleted_count"] == 2 and all(k.startswith("cache:agent2:") for k in state["s"]["deleted_keys"])
    with Cache(sqlite_url) as cache:
        assert cache.store.find(pattern="cache:demo.w:*")  # the unprefixed entry is untouched


def test_get_and_invalidate_find_the_agent_scoped_custom_key(agent_from):
    agent = agent_from("""
        name: my_agent
        nodes:
          - {name: w, uses: cache.wrap, with: {action: demo.w, key: "doc-1", args: {}}, output: r}
          - {name: g, uses: cache.get, with: {key: "doc-1"}, output: g}
          - {name: i, uses: cache.invalidate, with: {key: "doc-1"}, output: i}
          - {name: h, uses: cache.get, with: {key: "doc-1"}, output: h}
    """, actions={"demo.w": counting([])})
    state = agent.invoke()
    assert state["g"]["found"] is True and state["g"]["key"] == "cache:my_agent:doc-1"
    assert state["i"]["deleted_keys"] == ["cache:my_agent:doc-1"]
    assert state["h"]["found"] is False


def test_old_unprefixed_keys_stay_readable(agent_from, sqlite_url):
    with Cache(sqlite_url) as cache:
        old = cache.wrap("demo.w", lambda: {"data": "old"}, {})["_cache_key"]
    agent = agent_from(f"name: my_agent\nnodes:\n  - {{name: g, uses: cache.get, with: {{key: '{old}'}}, output: g}}\n")
    got = agent.invoke()["g"]
    assert got["found"] is True and got["value"] == {"data": "old"}


# --- error_type on every failure response ----------------------------------------------------

def test_unknown_action_named_at_run_time_is_action_not_found(agent_from):
    agent = agent_from("nodes:\n" + wrap_node({"action": "{{ state.which }}", "args": {}}))
    r = agent.invoke({"which": "nonexistent.action"})["r"]
    assert r["success"] is False and r["error_type"] == "action_not_found" and "nonexistent.action" in r["error"]
    limited = agent_from("nodes:\n  - {name: l, uses: ratelimit.wrap, with: {action: '{{ state.which }}', rpm: 5}, output: r}\n")
    r = limited.invoke({"which": "nope.nope"})["r"]
    assert r["success"] is False and r["error_type"] == "action_not_found"


@pytest.mark.parametrize("options, message", [
    ({"ttl_seconds": -5}, "ttl_seconds"), ({"ttl_seconds": "abc"}, "ttl_seconds"),
    ({"key_strategy": "custom"}, "needs key"), ({"key_strategy": "zzz"}, "unknown key_strategy"),
    ({"key_strategy": "file_content"}, "key_source"), ({"cleanup_probability": 5}, "cleanup_probability"),
    ({"args": [1, 2]}, "args"),
])
def test_bad_cache_wrap_options_are_validation_errors_and_nothing_runs(agent_from, options, message):
    calls = []
    agent = agent_from("nodes:\n" + wrap_node({"action": "demo.w", "args": {"a": 1}, **options}),
                       actions={"demo.w": counting(calls)})
    r = agent.invoke()["r"]
    assert r["success"] is False and r["error_type"] == "validation_error" and message in r["error"], r
    assert calls == []


def test_ltm_store_of_null_is_a_value_not_a_missing_one(agent_from):
    agent = agent_from("nodes:\n  - {name: s, uses: ltm.store, with: {key: k, value: null}, output: r}\n"
                       "  - {name: g, uses: ltm.retrieve, with: {key: k, default: 7}, output: g}\n")
    state = agent.invoke()
    assert state["r"]["success"] is True and state["g"]["found"] is True and state["g"]["value"] is None


def test_a_raising_or_failing_action_is_action_error(agent_from):
    def boom(state):
        raise ValueError("Test error")

    agent = agent_from("nodes:\n" + wrap_node({"action": "demo.boom", "args": {}}), actions={"demo.boom": boom})
    r = agent.invoke()["r"]
    assert r["success"] is False and r["error_type"] == "action_error" and "Test error" in r["error"]
    agent = agent_from("nodes:\n" + wrap_node({"action": "demo.no", "args": {}}),
                       actions={"demo.no": lambda state: {"success": False, "error": "nope"}})
    r = agent.invoke()["r"]
    assert r["success"] is False and r["error_type"] == "action_error" and r["error"] == "nope"


@pytest.mark.parametrize("uses, with_", [
    ("cache.get", {}),
    ("cache.get", {"key": None}),
    ("cache.get", {"key": ""}),
    ("cache.invalidate", {}),
    ("cache.invalidate", {"key": None, "pattern": None}),
    ("storage.hash", {"path": None}),
    ("storage.hash", {"path": ""}),
    ("storage.hash", {"path": "agent.yaml", "algorithm": "crc"}),
    ("ltm.store", {"key": "k"}),
    ("ltm.store", {"value": 1}),
    ("ltm.retrieve", {}),
    ("cache.invalidate", {"pattern": 5}),
    ("cache.cleanup", {"limit": "abc"}),
    ("cache.cleanup", {"limit": -1}),
    ("ltm.search", {"limit": "x"}),
])
def test_missing_parameters_are_validation_error(agent_from, uses, with_):
    agent = agent_from(f"nodes:\n  - {{name: s, uses: {uses}, with: {json.dumps(with_)}, output: r}}\n")
    r = agent.invoke()["r"]
    assert r["success"] is False and r["error_type"] == "validation_error" and r["error"]


def test_hashing_a_missing_file_is_file_error(agent_from, tmp_path):
    agent = agent_from(f"nodes:\n  - {{name: s, uses: storage.hash, with: {{path: '{tmp_path}/none.txt'}}, output: r}}\n")
    r = agent.invoke()["r"]
    assert r["success"] is False and r["error_type"] == "file_error"


def test_a_failing_store_is_cache_error(agent_from, private_redis):
    """A store that fails: a private Redis server, stopped after the agent connected."""
    agent = agent_from("""
        nodes:
          - {name: g, uses: cache.get, with: {key: k}, output: g}
          - {name: i, uses: cache.invalidate, with: {pattern: "cache:*"}, output: i}
          - {name: c, uses: cache.cleanup, output: c}
          - {name: l, uses: ltm.retrieve, with: {key: k}, output: l}
    """, store=private_redis.url + "?prefix=tea-parity")
    private_redis.stop()
    try:
        state = agent.invoke()
    finally:
        private_redis.start()
    for name in ("g", "i", "c", "l"):
        assert state[name]["success"] is False and state[name]["error_type"] == "cache_error", name


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_custom_keys_keep_separate_entries_on_each_backend(write_agent, tmp_path, backend):
    """TEA's cache.wrap integration flow (hit, miss, separate keys) on a real SQLite and DuckDB file."""
    pytest.importorskip(backend) if backend == "duckdb" else None
    calls = []
    path = write_agent(f"name: flow\nsettings: {{ltm: {{backend: {backend}, path: ./c.{backend}}}}}\nnodes:\n"
                       "  - {name: w, uses: cache.wrap, with: {action: demo.w, key: '{{ state.key }}', ttl_seconds: 300,"
                       " args: {value: '{{ state.value }}'}}, output: r}\n")
    with load_agent(path, actions={"demo.w": counting(calls)}) as agent:
        first = agent.invoke({"key": "key1", "value": "value1"})["r"]
        second = agent.invoke({"key": "key2", "value": "value2"})["r"]
        again = agent.invoke({"key": "key1", "value": "value1"})["r"]
    assert (first["_cache_hit"], second["_cache_hit"], again["_cache_hit"]) == (False, False, True)
    assert again["result"] == first["result"] and again["_cache_key"] == "cache:flow:key1" and len(calls) == 2


def test_custom_strategy_and_namespace_keys_are_prefixed(agent_from):
    agent = agent_from("""
        name: my_agent
        settings: {cache: {namespace: team}}
        nodes:
          - {name: c, uses: cache.wrap, with: {action: demo.w, key_strategy: custom, key: "doc-{{ state.n }}", args: {}}, output: c}
          - {name: a, uses: cache.wrap, with: {action: demo.w, args: {n: "{{ state.n }}"}}, output: a}
    """, actions={"demo.w": counting([])})
    state = agent.invoke({"n": 1})
    assert state["c"]["_cache_key"] == "cache:my_agent:doc-1"
    assert state["a"]["_cache_key"].startswith("cache:my_agent:team/demo.w:")
