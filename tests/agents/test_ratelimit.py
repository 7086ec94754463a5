"""``ratelimit.wrap``: N requests per window per named limiter, shared through the store by every
process, waiting or failing as configured; and TEA's composition cache.wrap -> ratelimit.wrap ->
llm.call, where a hit costs no rate-limit slot.

``chat_server`` is a protocol stand-in for an OpenAI-compatible server (no model runs here)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from stores.private_servers import private_redis  # noqa: F401 - fixture

from actioncache.agents import load_agent
from actioncache.agents.actions.ratelimit import window


def limited(limit: dict, action: str = "demo.w", args: dict | None = None) -> str:
    with_ = {"action": action, "args": args or {}, **limit}
    return "nodes:\n  - {name: l, uses: ratelimit.wrap, with: " + json.dumps(with_) + ", output: r}\n"


def counting(calls):
    def work(state, **kwargs):
        calls.append(kwargs)
        return {"success": True, "n": len(calls)}

    return work


@given(rate=st.floats(min_value=0.01, max_value=10_000, allow_nan=False), per_second=st.booleans())
def test_window_keeps_the_exact_rate(rate, per_second):
    slots, window_s = window(None if per_second else rate, rate if per_second else None)
    assert slots >= 1 and window_s > 0
    per = 1.0 if per_second else 60.0
    assert slots / window_s == pytest.approx(rate / per)


@pytest.mark.parametrize("rpm, rps, message", [
    (None, None, "give rpm:"), (0, None, "positive"), (-1, None, "positive"), ("ten", None, "positive"),
])
def test_bad_limits_are_validation_errors(agent_from, rpm, rps, message):
    limit = {k: v for k, v in (("rpm", rpm), ("rps", rps)) if v is not None}
    r = agent_from(limited(limit), actions={"demo.w": counting([])}).invoke()["r"]
    assert r["success"] is False and r["error_type"] == "validation_error" and message in r["error"]


@pytest.mark.parametrize("limit", [{"rpm": 1e8}, {"rps": 10_001}, {"rpm": 10_001}])
def test_a_rate_above_the_maximum_is_a_validation_error_not_a_hang(agent_from, limit):
    """rpm: 1e8 once built 10^8 slot names (an untrusted agent could hang the run)."""
    calls = []
    r = agent_from(limited(limit), actions={"demo.w": counting(calls)}).invoke()["r"]
    assert r["success"] is False and r["error_type"] == "validation_error" and "maximum of 10000" in r["error"]
    assert calls == []


@pytest.mark.parametrize("rate", [float("inf"), float("nan"), 1e300])
def test_window_refuses_rates_without_a_finite_slot_count(rate):
    with pytest.raises(ValueError):
        window(rate, None)


def test_args_not_a_mapping_is_a_validation_error_before_taking_a_slot(agent_from):
    calls = []
    agent = agent_from("nodes:\n  - {name: l, uses: ratelimit.wrap, with: {action: demo.w, args: [1, 2], limiter: one, "
                       "rpm: 1, on_limit: fail}, output: r}\n", actions={"demo.w": counting(calls)})
    r = agent.invoke()["r"]
    assert r["success"] is False and r["error_type"] == "validation_error" and "args" in r["error"]
    assert calls == []
    # the one slot of limiter 'one' (same store) is still free: the bad call took none
    ok = agent_from(limited({"limiter": "one", "rpm": 1, "on_limit": "fail"}), actions={"demo.w": counting(calls)})
    assert ok.invoke()["r"]["success"] is True and len(calls) == 1


def test_fail_mode_refuses_past_the_limit_without_running(agent_from):
    calls = []
    agent = agent_from(limited({"limiter": "api", "rpm": 2, "on_limit": "fail"}), actions={"demo.w": counting(calls)})
    results = [agent.invoke()["r"] for _ in range(3)]
    assert [r["success"] for r in results] == [True, True, False]
    assert results[0]["result"] == {"success": True, "n": 1} and results[0]["_ratelimit_limiter"] == "api"
    assert results[2]["error_type"] == "ratelimit_timeout" and "'api' (2 per 60s)" in results[2]["error"]
    assert len(calls) == 2


def test_wait_mode_waits_for_a_slot(agent_from):
    calls = []
    agent = agent_from(limited({"rps": 4}), actions={"demo.w": counting(calls)})
    results = [agent.invoke()["r"] for _ in range(5)]
    assert all(r["success"] for r in results) and len(calls) == 5
    assert results[-1]["_ratelimit_waited_ms"] > 0  # the fifth request had to wait for a slot to free


def test_a_timeout_shorter_than_the_wait_fails(agent_from):
    agent = agent_from(limited({"rpm": 1, "timeout": 0.05}), actions={"demo.w": counting([])})
    assert agent.invoke()["r"]["success"] is True
    r = agent.invoke()["r"]
    assert r["success"] is False and r["error_type"] == "ratelimit_timeout" and "within timeout 0.05s" in r["error"]


def test_limits_from_settings_and_limiters_are_independent(agent_from):
    calls = []
    agent = agent_from("settings: {rate_limiters: {a: {rpm: 1}}}\nnodes:\n"
                       "  - {name: x, uses: ratelimit.wrap, with: {action: demo.w, limiter: a, on_limit: fail}, output: x}\n"
                       "  - {name: y, uses: ratelimit.wrap, with: {action: demo.w, limiter: b, rpm: 1, on_limit: fail}, output: y}\n",
                       actions={"demo.w": counting(calls)})
    first, second = agent.invoke(), agent.invoke()
    assert first["x"]["success"] and first["y"]["success"]
    assert second["x"]["error_type"] == "ratelimit_timeout" and second["y"]["error_type"] == "ratelimit_timeout"


def test_the_limiter_is_shared_by_every_process_on_the_store(write_agent, sqlite_url, src_env):
    """Another process takes the only slot; this process then finds the limiter full."""
    path = write_agent(limited({"limiter": "shared", "rpm": 1, "on_limit": "fail"}, action="cache.stats"))
    script = ("import json, sys; from actioncache.agents import load_agent\n"
              "a = load_agent(sys.argv[1], store=sys.argv[2]); print(json.dumps(a.invoke()['r']['success'])); a.close()\n")
    other = subprocess.run([sys.executable, "-c", script, str(path), sqlite_url], env=src_env,
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout) is True
    with load_agent(path, store=sqlite_url) as agent:
        r = agent.invoke()["r"]
    assert r["success"] is False and r["error_type"] == "ratelimit_timeout"


def test_a_failing_store_runs_the_action_unlimited(agent_from, private_redis):
    """A store that fails: a private Redis server, stopped after the agent connected."""
    calls = []
    agent = agent_from(limited({"rpm": 1}), actions={"demo.w": counting(calls)},
                       store=private_redis.url + "?prefix=ratelimit-outage")
    private_redis.stop()
    try:
        r = agent.invoke()["r"]
    finally:
        private_redis.start()
    assert r["success"] is True and "ran unlimited" in r["_ratelimit_error"] and len(calls) == 1


def test_action_errors_pass_through(agent_from):
    def boom(state):
        raise RuntimeError("kaput")

    r = agent_from(limited({"rpm": 10}, action="demo.boom"), actions={"demo.boom": boom}).invoke()["r"]
    assert r["success"] is False and r["error_type"] == "action_error" and "kaput" in r["error"]


TEA_AGENT = """
name: translator
settings:
  llm: {{model: "{model}"}}
  rate_limiters: {{openai: {{rpm: 1}}}}
nodes:
  - name: translate
    uses: cache.wrap
    with:
      action: ratelimit.wrap
      args:
        action: llm.call
        limiter: openai
        on_limit: fail
        args: {{prompt: "{{{{ state.text }}}}"}}
    output: r
"""


def test_cache_around_ratelimit_around_llm_a_hit_costs_no_slot(write_agent, sqlite_url, chat_server, monkeypatch):
    """TEA's composition against chat_server, a protocol stand-in for an OpenAI-compatible server.
    The limiter allows one request per minute: the miss takes it, hits pass without it, and the
    next miss finds it taken (and is not cached)."""
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url + "/v1")

    def run(text: str, model: str = "m1") -> dict:
        path = write_agent(TEA_AGENT.format(model=model))
        with load_agent(path, store=sqlite_url) as agent:
            return agent.invoke({"text": text})["r"]

    miss = run("hello")
    hits = [run("hello") for _ in range(3)]
    assert miss["_cache_hit"] is False and miss["result"]["result"]["content"] == "olleh"
    assert all(h["_cache_hit"] is True and h["result"]["result"]["content"] == "olleh" for h in hits)
    assert len(chat_server.requests) == 1
    limited_miss = run("another text")
    assert limited_miss["success"] is False and limited_miss["error_type"] == "action_error"
    assert limited_miss["result"]["error_type"] == "ratelimit_timeout"
    assert len(chat_server.requests) == 1
    assert run("another text")["_cache_hit"] is False  # the refusal was not cached
    # the wrapped llm.call's context passes through ratelimit.wrap: another model is a miss
    assert run("hello", model="m2")["_cache_hit"] is False
