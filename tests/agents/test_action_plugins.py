"""The action plug-in contract (``actioncache.actions``): the typed engine an action module receives,
the one hook name, the faces declared in the entry-point group, ``cache.wrap`` taking every
``Cache.wrap`` option, and the one failure shape of every built-in action family."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from actioncache import Cache
from actioncache.actions import ERROR_TYPES, Engine, TrustRules
from actioncache.agents.actions.cache import WRAP_OPTIONS
from actioncache.agents.registry import BUILTIN_MODULES

ROOT = Path(__file__).resolve().parents[2]


def test_an_agent_is_an_engine(agent_from):
    agent = agent_from("nodes:\n  - {name: a, uses: cache.stats}\n")
    assert isinstance(agent, Engine)
    assert isinstance(agent.trust, TrustRules)
    assert agent.store is agent.cache.store


PLUGIN = '''
from actioncache.actions import ActionTable, Engine, failure


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def describe(state, key="k"):
        if not isinstance(key, str):
            return failure("validation_error", "key: must be a string")
        engine.cache.store.delete("probe:" + key)
        return {"success": True, "agent": engine.agent_name, "trusted": engine.trust.trusted,
                "node": engine.current_node, "store_url": engine.store.url,
                "llm_model": (engine.settings.get("llm") or {}).get("model"),
                "has_cache_wrap": "cache.wrap" in engine.registry,
                "wrapped": engine.registry.resolve("actions.cache_stats")[0]}

    registry["tool.describe"] = describe
'''


def test_a_third_party_module_uses_the_typed_engine_through_an_entry_point(tmp_path, src_env):
    """A package declaring an ``actioncache.actions`` entry point (a real dist-info on sys.path) gets
    the engine the protocol promises, in a trusted and an untrusted agent, under cache.wrap too."""
    (tmp_path / "third_party_tools.py").write_text(PLUGIN)
    info = tmp_path / "third_party_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: third-party-tools\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[actioncache.actions]\ntools = third_party_tools\n")
    (tmp_path / "agent.yaml").write_text(
        "name: plug\nsettings: {llm: {model: m1}}\nnodes:\n"
        "  - {name: d, uses: tool.describe, output: d}\n"
        "  - {name: w, uses: cache.wrap, with: {action: tool.describe, args: {key: x}}, output: w}\n")
    env = dict(src_env)
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    code = ("import json; from actioncache.agents import load_agent\n"
            "for trusted in (True, False):\n"
            f"    with load_agent({str(tmp_path / 'agent.yaml')!r}, store='memory://', trusted=trusted) as agent:\n"
            "        out = agent.invoke({})\n"
            "        print(json.dumps([out['d'], out['w']['result'], out['w']['_cache_key']]))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    trusted, untrusted = (json.loads(line) for line in done.stdout.splitlines())
    assert trusted[0] == {"success": True, "agent": "plug", "trusted": True, "node": "d", "store_url": "memory://",
                          "llm_model": "m1", "has_cache_wrap": True, "wrapped": "cache.stats"}
    assert trusted[1]["node"] == "w" and trusted[2].startswith("cache:plug:tool.describe:")
    assert untrusted[0]["trusted"] is False


def test_an_imported_module_has_the_same_hook(agent_from, tmp_path):
    (tmp_path / "mine.py").write_text(PLUGIN)
    agent = agent_from("imports: [{path: mine.py}]\nnodes:\n  - {name: d, uses: tool.describe, with: {key: 3}, output: d}\n")
    assert agent.invoke({})["d"] == {"success": False, "error": "key: must be a string",
                                     "error_type": "validation_error"}


def test_the_package_declares_its_faces_in_the_entry_point_group():
    """The faces' action modules are in the ``actioncache.actions`` group, as a third party's are;
    the runtime's own list names the same modules (a checkout that is not installed has no entry points)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = project["project"]["entry-points"]["actioncache.actions"]
    assert set(declared.values()) == set(BUILTIN_MODULES)
    for module in BUILTIN_MODULES:
        assert callable(__import__(module, fromlist=["x"]).register_actions)


# --- cache.wrap takes every Cache.wrap option ------------------------------------------------

# A value for each keyword-only option of Cache.wrap. A new option makes the first test fail until it
# gets a sample here: then the second shows YAML passes it through (never silently dropped).
SAMPLES = {
    "key": "k-{{ state.n }}", "key_strategy": "args", "key_source": None, "ttl_seconds": 60, "ttl_hours": 1,
    "ttl_days": 1, "skip_cache": False, "cache_enabled": True, "cleanup_probability": 0.0, "cleanup_limit": 1,
    "metadata": {"team": "docs"}, "scope": None, "lock": True, "lock_timeout_s": 5, "stale_ttl_seconds": 30,
    "serve_stale_on_error": True, "ttl": 60,
}


def test_cache_wrap_options_are_cache_wraps_keyword_options():
    keyword_only = [name for name, p in inspect.signature(Cache.wrap).parameters.items()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert set(SAMPLES) == set(keyword_only), "give the new Cache.wrap option a sample value here"
    assert set(WRAP_OPTIONS) == set(keyword_only) | {"key_prefix"}


@pytest.mark.parametrize("option", sorted(SAMPLES))
def test_cache_wrap_accepts_every_cache_wrap_option(agent_from, option):
    calls = []
    agent = agent_from(
        "nodes:\n  - name: w\n    uses: cache.wrap\n    with: " + json.dumps(
            {"action": "demo.work", "args": {"n": "{{ state.n }}"}, option: SAMPLES[option]}) + "\n    output: r\n",
        actions={"demo.work": lambda state, n: calls.append(n) or {"n": n}})
    first, second = agent.invoke({"n": 1})["r"], agent.invoke({"n": 1})["r"]
    assert first["success"] is True and first["result"] == {"n": 1}, first
    assert second["success"] is True and second["_cache_hit"] is True and calls == [1], (option, second)


# --- one failure shape ---------------------------------------------------------------------

FAILURES = [
    ("cache.wrap", {"action": "{{ 'no.such' ~ '_action' }}"}, "action_not_found"),  # known only at run time
    ("cache.get", {"key": ""}, "validation_error"),
    ("ratelimit.wrap", {"action": "cache.stats", "rpm": -1}, "validation_error"),
    ("ltm.retrieve", {"key": ""}, "validation_error"),
    ("storage.hash", {"path": ""}, "validation_error"),
    ("file.read", {"path": "/no/such/file.txt"}, "file_error"),
    ("file.write", {"path": "x.txt", "content": "x", "mode": "sideways"}, "validation_error"),
    ("command.run", {"command": []}, "validation_error"),
    ("command.run", {"command": [sys.executable, "-c", "raise SystemExit(3)"]}, "command_error"),
    ("http.request", {"url": "ftp://example.com/x"}, "validation_error"),
    ("http.request", {"url": "http://127.0.0.1:9/x", "timeout": 2}, "http_error"),
    ("llm.call", {"model": "m"}, "validation_error"),
    ("command.exec_cached", {"command": []}, "validation_error"),
    ("policy.current", {}, None),
    ("semantic.feedback", {"entry_id": "no-such-entry", "success": True}, "not_found"),
    ("plan.record", {"actions": []}, "validation_error"),
    ("scratchpad.read", {"key": "nope", "session_id": "s"}, None),
    ("scratchpad.write", {}, "validation_error"),
]


@pytest.mark.parametrize("uses, with_, error_type", FAILURES, ids=[f"{u}-{t}" for u, _, t in FAILURES])
def test_every_action_family_fails_in_one_shape(agent_from, uses, with_, error_type, tmp_path):
    if uses.startswith("semantic."):
        pytest.importorskip("numpy", reason="the semantic face needs numpy: pip install 'actioncache[semantic]'")
    agent = agent_from("settings: {semantic: {embedder: hashing}}\nnodes:\n  - name: step\n    uses: " + uses
                       + "\n    with: " + json.dumps(with_) + "\n    output: r\n")
    out = agent.invoke({})["r"]
    if error_type is None and out.get("success") is not False:
        return  # this call succeeds (or fails in a way the family decides); any failure has the shape
    assert out["success"] is False, out
    assert isinstance(out["error"], str) and out["error"], out
    assert out["error_type"] in ERROR_TYPES, out
    if error_type is not None:
        assert out["error_type"] == error_type, out
