"""``command.exec_cached`` and ``policy.current``, called as the agent runtime calls them.

The runtime is given as a ``SimpleNamespace(cache=..., store=..., settings=...)`` (the shape
``register_actions`` receives; the brief's stand-in until the runtime is wired), with a real Cache.
"""

from __future__ import annotations

import sys
import types

import pytest

from actioncache import Cache
from actioncache.policy import ENV_VARS
from actioncache.runs.actions import register_actions

COUNT = "import sys; open('n.txt','a').write('x'); print(len(open('n.txt').read())); sys.exit(int(sys.argv[1]))"
# A run that leaves a mark named by the clock (outside the model) in marks/: a fresh run would leave
# its own, so a hit may stand for it, and the marks count the real runs. (COUNT appends: never cached.)
MARK = "import os, time; open(f'marks/{os.getpid()}.{time.time_ns()}', 'w').close(); print('ok')"


@pytest.fixture
def actions(tmp_path, monkeypatch, sqlite_url):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACTIONCACHE_CHEAP_MS", "0")  # cache even quick commands (test_cost.py tests the rule)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    cache = Cache(sqlite_url, cleanup_probability=0.0)
    registry: dict = {}
    engine = types.SimpleNamespace(cache=cache, store=cache.store, settings={"cache_policy": {"mode": "use"}})
    register_actions(registry, engine)
    yield registry, engine
    cache.close()


def test_exec_cached_hits_the_second_time(actions, tmp_path):
    registry, _ = actions
    run = registry["command.exec_cached"]
    (tmp_path / "marks").mkdir()
    first = run({}, command=[sys.executable, "-c", MARK])
    second = run({}, command=[sys.executable, "-c", MARK])
    assert (first["_cache_hit"], second["_cache_hit"]) == (False, True)
    assert first["stdout"] == second["stdout"] == "ok\n" and second["success"]
    assert len(list((tmp_path / "marks").iterdir())) == 1


def test_exec_cached_never_replays_an_append(actions):
    """COUNT appends to n.txt and prints its length: a replay would print 1 where a fresh run prints 2."""
    registry, _ = actions
    run = registry["command.exec_cached"]
    results = [run({}, command=[sys.executable, "-c", COUNT, "0"]) for _ in range(2)]
    assert [(r["stdout"], r["_cache_hit"]) for r in results] == [("1\n", False), ("2\n", False)]


def test_exec_cached_never_caches_a_failure(actions):
    registry, engine = actions
    run = registry["command.exec_cached"]
    results = [run({}, command=[sys.executable, "-c", COUNT, "2"]) for _ in range(2)]
    assert [r["stdout"] for r in results] == ["1\n", "2\n"]
    assert all(not r["success"] and r["exit_code"] == 2 for r in results)
    assert engine.cache.store.find(pattern="runs:fail:*")


def test_exec_cached_respects_the_phase_guard(actions):
    registry, _ = actions
    run = registry["command.exec_cached"]
    args = {"command": [sys.executable, "-c", COUNT, "0"], "scope": "llm_ro", "scopes": "verify,read,llm_ro", "phase": "PLAN"}
    assert [run({}, **args)["stdout"] for _ in range(2)] == ["1\n", "2\n"]


def test_bad_arguments_are_errors_not_exceptions(actions):
    registry, _ = actions
    assert "not a cache mode" in registry["command.exec_cached"]({}, command="true", mode="sometimes")["error"]
    assert "non-empty" in registry["command.exec_cached"]({}, command=[])["error"]


def test_policy_current_reports_settings(actions):
    registry, _ = actions
    current = registry["policy.current"]({})
    assert current["mode"] == "use" and current["scopes"] == ["read", "verify"]
