"""Odd argument types and values reach every built-in action as the node's input: each answers the
failure shape (``success: false``, ``error_type: validation_error``) instead of raising or acting."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from actioncache import Cache
from actioncache.agents import load_agent


def one_node(agent_from, uses, with_, **options):
    text = "nodes:\n  - name: step\n    uses: " + uses + "\n    with: " + json.dumps(with_) + "\n    output: r\n"
    return agent_from(text, **options)


@pytest.mark.parametrize("ttl", ["-5", "0", ".nan", ".inf", "1.0e+300", "'abc'", "true"])
def test_ltm_store_refuses_a_ttl_the_core_refuses(agent_from, ttl):
    agent = agent_from(f"""
        nodes:
          - {{name: s, uses: ltm.store, with: {{key: k, value: 1, ttl_seconds: {ttl}}}, output: s}}
          - {{name: r, uses: ltm.retrieve, with: {{key: k}}, output: r}}
    """)
    state = agent.invoke({})
    assert state["s"]["success"] is False and state["s"]["error_type"] == "validation_error"
    assert "ttl_seconds" in state["s"]["error"] and state["s"]["stored"] is False
    assert state["r"]["found"] is False  # nothing was written


def test_ltm_store_with_a_good_ttl_stores_an_entry_the_cache_reads(agent_from):
    agent = agent_from("""
        nodes:
          - {name: s, uses: ltm.store, with: {key: k, value: 7, ttl_seconds: 3600}, output: s}
    """)
    agent.invoke({})
    assert agent.cache.get("k")["value"] == 7


@pytest.mark.parametrize("ttl", [-1, 0, math.inf, math.nan, 1e300, True])
def test_records_refuse_an_expiry_no_store_can_hold(ttl):
    from actioncache.records import Records

    cache = Cache("memory://")
    with pytest.raises(ValueError, match="ttl_seconds"):
        Records(cache.store, cache.codec).put("k", 1, kind=None, ttl_s=ttl)
    assert cache.store.get("k") is None


def test_cache_wrap_checks_every_ttl_given_also_the_overridden_ones():
    cache = Cache("memory://")
    with pytest.raises(ValueError, match="ttl_days"):
        cache.wrap("a", lambda: 1, {}, ttl_hours=1, ttl_days=math.inf)


def test_cache_wrap_string_false_never_caches(agent_from):
    counter = itertools.count()
    agent = agent_from("""
        nodes:
          - {name: a, uses: cache.wrap, with: {action: t.tick, cache_enabled: 'false'}, output: a}
          - {name: b, uses: cache.wrap, with: {action: t.tick, cache_enabled: 'false'}, output: b}
    """, actions={"t.tick": lambda state: {"n": next(counter)}})
    state = agent.invoke({})
    assert state["b"]["_cache_hit"] is False
    assert (state["a"]["result"]["n"], state["b"]["result"]["n"]) == (0, 1)


def test_cache_wrap_string_booleans_mean_what_they_say(agent_from):
    agent = agent_from("""
        name: sb
        nodes:
          - {name: a, uses: cache.wrap, with: {action: t.one, skip_cache: 'false'}, output: a}
          - {name: b, uses: cache.wrap, with: {action: t.one, skip_cache: 'False'}, output: b}
          - {name: c, uses: cache.wrap, with: {action: t.one, key_prefix: 'false'}, output: c}
    """, actions={"t.one": lambda state: {"v": 1}})
    state = agent.invoke({})
    assert state["b"]["_cache_hit"] is True and "_cache_bypass" not in state["b"]
    assert state["c"]["_cache_key"].startswith("cache:t.one:")  # not cache:sb:...


@pytest.mark.parametrize("option", ["cache_enabled: 'nope'", "skip_cache: 1", "lock: 'maybe'",
                                    "serve_stale_on_error: []", "key_prefix: 'off please'",
                                    "ttl_days: .inf", "ttl_hours: 1, ttl_days: .inf", "cleanup_limit: -3",
                                    "scope: 5"])
def test_cache_wrap_refuses_an_unusable_option_before_running(agent_from, option):
    ran = []
    agent = agent_from(f"""
        nodes:
          - {{name: w, uses: cache.wrap, with: {{action: t.run, {option}}}, output: r}}
    """, actions={"t.run": lambda state: ran.append(1) or {"ok": True}})
    result = agent.invoke({})["r"]
    name = option.split(":")[0] if "ttl_hours" not in option else "ttl_days"
    assert result["success"] is False and result["error_type"] == "validation_error"
    assert name in result["error"] and not ran


def test_cache_wrap_unknown_scope_runs_fresh_as_in_python(agent_from):
    """Any scope name is allowed (the policy enables the ones it lists); one not enabled runs fresh."""
    agent = agent_from("""
        nodes:
          - {name: w, uses: cache.wrap, with: {action: t.run, scope: no_such_scope}, output: r}
    """, actions={"t.run": lambda state: {"ok": True}})
    result = agent.invoke({})["r"]
    python = Cache("memory://").wrap("t.run", lambda: {"ok": True}, {}, scope="no_such_scope")
    assert result["success"] is True and result["_cache_key"] is python["_cache_key"] is None


@pytest.mark.parametrize("uses, with_, bad, hint", [
    ("cache.wrap", "{action: ltm.retrieve, args: {key: z}, ttl_second: 5}", "ttl_second", "ttl_seconds"),
    ("ltm.store", "{key: k, valeu: 5}", "valeu", "value"),
    ("file.read", "{pth: x}", "pth", "path"),
])
def test_a_misspelled_option_stops_the_agent_at_load_before_any_node_runs(write_agent, tmp_path, uses, with_,
                                                                           bad, hint):
    from actioncache.agents import AgentDefinitionError
    from actioncache.agents.cli import main

    marker = tmp_path / "side_effect.txt"
    path = write_agent(f"""
        settings: {{ltm: {{backend: memory}}}}
        nodes:
          - {{name: first, uses: file.write, with: {{path: {marker}, content: ran}}}}
          - {{name: n, uses: {uses}, with: {with_}, output: r}}
    """)
    with pytest.raises(AgentDefinitionError, match=rf"node 'n': action '{uses}' has no option '{bad}' \(did you mean '{hint}'"):
        load_agent(path)
    assert main([str(path)]) == 2
    assert not marker.exists()
