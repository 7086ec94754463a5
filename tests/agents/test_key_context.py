"""Declared key context: what an action reads from settings or the environment enters its
cache.wrap key, so a changed model or server is a miss, never the old model's answer.

``chat_server`` is a protocol stand-in for an OpenAI-compatible server (no model runs here);
``echo_server`` is a real local HTTP server."""

from __future__ import annotations

import json

import pytest

from actioncache.agents import load_agent
from actioncache.agents.key_context import declare_key_context

LLM_NODE = """
  - name: t
    uses: cache.wrap
    with:
      action: llm.call
      args: {prompt: "{{ state.text }}"}
    output: r
"""


def run_llm(write_agent, sqlite_url, settings: dict, text: str = "hello", name: str = "agent.yaml") -> dict:
    path = write_agent("name: llm_agent\nsettings: " + json.dumps(settings) + "\nnodes:" + LLM_NODE, name=name)
    with load_agent(path, store=sqlite_url) as agent:
        return agent.invoke({"text": text})["r"]


def test_changing_settings_llm_model_is_a_miss(write_agent, sqlite_url, chat_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url + "/v1")
    first = run_llm(write_agent, sqlite_url, {"llm": {"model": "model-a"}})
    again = run_llm(write_agent, sqlite_url, {"llm": {"model": "model-a"}})
    other = run_llm(write_agent, sqlite_url, {"llm": {"model": "model-b"}})
    assert first["_cache_hit"] is False and again["_cache_hit"] is True
    assert other["_cache_hit"] is False and other["result"]["model"] == "model-b"
    assert other["_cache_key"] != first["_cache_key"]
    assert [r["body"]["model"] for r in chat_server.requests] == ["model-a", "model-b"]


def test_changing_openai_base_url_is_a_miss(write_agent, sqlite_url, chat_server, second_chat_server, monkeypatch):
    monkeypatch.setenv("ACTIONCACHE_LLM_MODEL", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url + "/v1")
    first = run_llm(write_agent, sqlite_url, {})
    monkeypatch.setenv("OPENAI_BASE_URL", second_chat_server.url + "/v1")
    moved = run_llm(write_agent, sqlite_url, {})
    assert first["_cache_hit"] is False and moved["_cache_hit"] is False
    assert len(chat_server.requests) == 1 and len(second_chat_server.requests) == 1


@pytest.mark.parametrize("variable", ["ACTIONCACHE_LLM_MODEL", "OPENAI_MODEL"])
def test_changing_the_model_variable_is_a_miss(write_agent, sqlite_url, chat_server, monkeypatch, variable):
    monkeypatch.delenv("ACTIONCACHE_LLM_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url + "/v1")
    monkeypatch.setenv(variable, "one")
    assert run_llm(write_agent, sqlite_url, {})["_cache_hit"] is False
    assert run_llm(write_agent, sqlite_url, {})["_cache_hit"] is True
    monkeypatch.setenv(variable, "two")
    assert run_llm(write_agent, sqlite_url, {})["_cache_hit"] is False


@pytest.mark.parametrize("field, before, after", [
    ("temperature", 0, 0.7), ("top_p", 1, 0.5), ("max_tokens", 10, 20), ("seed", 1, 2), ("stop", ["x"], ["y"]),
    ("response_format", {"type": "text"}, {"type": "json_object"}),
    ("tools", [{"type": "function", "function": {"name": "a"}}], [{"type": "function", "function": {"name": "b"}}]),
    ("base_url", "A", "B"),
])
def test_every_sampling_setting_changes_the_key(write_agent, sqlite_url, chat_server, second_chat_server,
                                                monkeypatch, field, before, after):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    urls = {"A": chat_server.url + "/v1", "B": second_chat_server.url + "/v1"}
    if field == "base_url":
        before, after = urls[before], urls[after]
    base = {"model": "m", "base_url": urls["A"]}
    first = run_llm(write_agent, sqlite_url, {"llm": {**base, field: before}})
    same = run_llm(write_agent, sqlite_url, {"llm": {**base, field: before}})
    changed = run_llm(write_agent, sqlite_url, {"llm": {**base, field: after}})
    assert (first["_cache_hit"], same["_cache_hit"], changed["_cache_hit"]) == (False, True, False)
    if field != "base_url":
        assert chat_server.requests[-1]["body"][field] == after  # settings.llm values are sent, not only keyed


def test_a_custom_key_under_another_model_is_not_a_hit(write_agent, sqlite_url, chat_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url + "/v1")
    node = "\n  - {name: t, uses: cache.wrap, with: {action: llm.call, key: 'greeting', args: {prompt: hi}}, output: r}\n"
    results = []
    for model in ("model-a", "model-a", "model-b", "model-b"):
        path = write_agent(f"name: a\nsettings: {{llm: {{model: {model}}}}}\nnodes:" + node)
        with load_agent(path, store=sqlite_url) as agent:
            results.append(agent.invoke()["r"])
    assert [r["_cache_hit"] for r in results] == [False, True, False, True]
    assert {r["_cache_key"] for r in results} == {"cache:a:greeting"}
    assert results[3]["result"]["model"] == "model-b"


def test_http_request_keys_on_headers_and_never_stores_secrets_in_clear(agent_from, echo_server):
    agent = agent_from(f"""
        nodes:
          - name: h
            uses: cache.wrap
            with:
              action: http.request
              args: {{url: "{echo_server.url}/x", headers: "{{{{ state.headers }}}}"}}
            output: r
    """)
    first = agent.invoke({"headers": {"Accept-Language": "en", "Authorization": "Bearer sk-very-secret"}})["r"]
    again = agent.invoke({"headers": {"Accept-Language": "en", "Authorization": "Bearer sk-very-secret"}})["r"]
    french = agent.invoke({"headers": {"Accept-Language": "fr", "Authorization": "Bearer sk-very-secret"}})["r"]
    other_user = agent.invoke({"headers": {"Accept-Language": "en", "Authorization": "Bearer sk-other"}})["r"]
    assert [r["_cache_hit"] for r in (first, again, french, other_user)] == [False, True, False, False]
    for key in agent.store.find(pattern="cache:*"):
        entry = agent.store.get(key)
        assert "sk-very-secret" not in key and "sk-very-secret" not in json.dumps(dict(entry.metadata))
        assert entry.metadata["_cache_context"]  # only the context's hash is kept


def test_a_python_action_declares_its_own_context(agent_from):
    region = {"name": "eu"}
    calls = []

    def price(state, item):
        calls.append(region["name"])
        return {"price": 1, "region": region["name"]}

    declare_key_context(price, lambda args: {"region": region["name"]})
    agent = agent_from("nodes:\n  - {name: p, uses: cache.wrap, with: {action: shop.price, args: {item: x}}, output: r}\n",
                       actions={"shop.price": price})
    assert agent.invoke()["r"]["_cache_hit"] is False
    assert agent.invoke()["r"]["_cache_hit"] is True
    region["name"] = "us"
    assert agent.invoke()["r"]["result"]["region"] == "us" and calls == ["eu", "us"]


def test_a_failing_context_turns_caching_off(agent_from):
    def work(state):
        return {"ok": True}

    declare_key_context(work, lambda args: 1 / 0)
    agent = agent_from("nodes:\n  - {name: p, uses: cache.wrap, with: {action: demo.w, args: {}}, output: r}\n",
                       actions={"demo.w": work})
    r = agent.invoke()["r"]
    assert r["success"] is True and "key context failed" in r["_cache_error"]
    assert agent.invoke()["r"]["_cache_hit"] is False and agent.store.find(pattern="cache:*") == []
