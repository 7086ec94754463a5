"""The YAML actions semantic.lookup/store/feedback (through register_actions, as the runtime calls
them) and the interactive demo driven through its standard input."""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

from actioncache import open_store
from actioncache.semantic.actions import register_actions

DEMO = Path(__file__).resolve().parents[2] / "examples" / "memory_agent_demo.py"


def _engine(sqlite_url, **semantic):
    return types.SimpleNamespace(cache=None, store=open_store(sqlite_url),
                                 settings={"semantic": {"embedder": "hashing", **semantic}})


def test_actions_store_lookup_feedback_until_eviction(sqlite_url):
    registry: dict = {}
    register_actions(registry, _engine(sqlite_url, threshold=0.5))
    assert set(registry) == {"semantic.lookup", "semantic.store", "semantic.feedback"}
    state: dict = {}
    assert registry["semantic.lookup"](state, prompt="Check stock of bolts") == {
        "success": True, "hit": False, "entry_id": None, "actions": None}
    stored = registry["semantic.store"](state, prompt="Check stock of bolts", actions=["Tool: InventoryCheck"])
    assert stored["success"] and len(stored["entry_id"]) == 32
    hit = registry["semantic.lookup"](state, prompt="check stock of bolts")
    assert hit["hit"] and hit["exact"] and hit["actions"] == ["Tool: InventoryCheck"] and hit["entry_id"] == stored["entry_id"]
    results = [registry["semantic.feedback"](state, entry_id=stored["entry_id"], success=False) for _ in range(5)]
    assert [round(r["score"], 4) for r in results[:4]] == [0.7, 0.49, 0.343, 0.2401]
    assert results[-1] == {"success": True, "updated": True, "evicted": True, "score": None}
    assert registry["semantic.lookup"](state, prompt="Check stock of bolts")["hit"] is False


def test_actions_respect_namespaces_and_report_bad_input(sqlite_url):
    registry: dict = {}
    register_actions(registry, _engine(sqlite_url))
    registry["semantic.store"]({}, prompt="Read my inbox", actions=["mail:alice"], namespace="alice")
    assert registry["semantic.lookup"]({}, prompt="Read my inbox", namespace="bob")["hit"] is False
    assert registry["semantic.lookup"]({}, prompt="Read my inbox", namespace="alice")["hit"] is True
    bad = registry["semantic.lookup"]({}, prompt="", namespace="alice")
    assert bad["success"] is False and "empty" in bad["error"]
    unknown = registry["semantic.feedback"]({}, entry_id="f" * 32, success=True)
    assert unknown["success"] is False and unknown["updated"] is False
    # A success that is not a bool ("no" would be truthy) is bad input, not a success.
    stored = registry["semantic.store"]({}, prompt="Archive the thread", actions=["mail:archive"])
    wrong = registry["semantic.feedback"]({}, entry_id=stored["entry_id"], success="no")
    assert wrong["success"] is False and wrong["error_type"] == "validation_error" and "success must be a bool" in wrong["error"]
    assert registry["semantic.feedback"]({}, entry_id=stored["entry_id"], success=False)["score"] == 0.7


def _run_demo(lines, src_env, store_url):
    env = dict(src_env)
    env.pop("OPENAI_BASE_URL", None)  # the rule-based planner, no network
    return subprocess.run(
        [sys.executable, str(DEMO), "--embedder", "hashing", "--store", store_url],
        input="\n".join(lines) + "\n", env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout


def test_demo_miss_feedback_eviction_and_replanning(src_env, sqlite_url):
    prompt = "What is the weather in Paris?"
    lines = [prompt, "y"] + [prompt, "n"] * 5 + [prompt, "y", "quit"]
    out = _run_demo(lines, src_env, sqlite_url)
    assert out.count("CACHE MISS") == 2 and out.count("CACHE HIT") == 5
    assert re.findall(r"Score now (\d\.\d\d)", out) == ["1.00", "0.70", "0.49", "0.34", "0.24", "1.00"]
    assert "EVICTED" in out
    first, second = re.findall(r"Stored as entry (\w+):", out)
    assert first != second
    # The re-plan is a different sequence of tool calls than the evicted one.
    plans = re.findall(r"Stored as entry \w+:\n  1\. (.*)", out)
    assert plans[0] != plans[1] and all(p.startswith("Tool: WeatherLookup") for p in plans)
    assert out.rstrip().endswith("Bye.")


def test_demo_remembers_across_runs_on_a_durable_store(src_env, sqlite_url):
    _run_demo(["How many widgets are in stock?", "y", "exit"], src_env, sqlite_url)
    out = _run_demo(["How many widgets are in stock?", "y", "exit"], src_env, sqlite_url)
    assert "CACHE HIT" in out and "InventoryCheck" in out


def test_actions_through_the_agent_runtime(tmp_path):
    """A YAML agent: look up, plan on a miss (store), give feedback; a second run hits."""
    from actioncache import agents

    spec = """
name: semantic_agent
settings:
  semantic: {embedder: hashing, threshold: 0.5, namespace: tenant1}
nodes:
  - name: recall
    uses: semantic.lookup
    with: {prompt: "{{ state.prompt }}"}
    output: recalled
    goto:
      - if: state.recalled.hit
        to: feedback
  - name: remember
    uses: semantic.store
    with: {prompt: "{{ state.prompt }}", actions: ["Tool: WeatherLookup, Input: Paris"]}
    output: stored
  - name: feedback
    uses: semantic.feedback
    with:
      entry_id: "{{ state.recalled.entry_id or state.stored.entry_id }}"
      success: true
    output: rated
"""
    url = f"sqlite:///{tmp_path}/agent.db"
    first = agents.load_agent(spec, store=url)
    try:
        miss = first.invoke({"prompt": "What is the weather in Paris?"})
    finally:
        first.close()
    assert miss["recalled"]["hit"] is False and miss["stored"]["success"] and miss["rated"]["score"] == 1.0
    second = agents.load_agent(spec, store=url)
    try:
        hit = second.invoke({"prompt": "what is the weather in paris?"})
    finally:
        second.close()
    assert hit["recalled"]["hit"] is True and hit["recalled"]["entry_id"] == miss["stored"]["entry_id"]
    assert hit["recalled"]["actions"] == ["Tool: WeatherLookup, Input: Paris"]
    assert "stored" not in hit


def test_yaml_reference_documents_every_semantic_parameter():
    import inspect

    reference = (Path(__file__).resolve().parents[2] / "YAML_REFERENCE.md").read_text(encoding="utf-8")
    registry: dict = {}
    register_actions(registry, types.SimpleNamespace(cache=None, store=None, settings={}))
    for name, fn in registry.items():
        start = reference.index(f"### {name}\n")
        end = reference.find("\n### ", start + 1)
        section = reference[start:end if end > 0 else None]
        documented = {m for line in section.splitlines() if line.startswith("| `")
                      for m in re.findall(r"`([a-z_]+)`", line.split("|")[1])}
        params = set(inspect.signature(fn).parameters) - {"state", "_"}
        assert documented == params, name


def test_demo_falls_back_to_rules_when_the_llm_is_unreachable(src_env, sqlite_url):
    env = dict(src_env, OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # nothing listens on port 9
    out = subprocess.run(
        [sys.executable, str(DEMO), "--embedder", "hashing", "--store", sqlite_url],
        input="What is the weather in Oslo?\ny\nquit\n", env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    assert "LLM planner" in out and "using the rule-based planner" in out
    assert "Tool: WeatherLookup, Input: 'Oslo'" in out


class _DeterministicLLM:
    """A local HTTP server speaking OpenAI's chat protocol (no LLM runs here: a stand-in).

    At temperature 0 it always plans the same; only being told that a plan failed changes its answer.
    ``"calls": null`` is what some models send when they call no tool."""

    def __init__(self, reply_for):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[list[dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body["messages"])
                content = json.dumps(reply_for(body["messages"]))
                payload = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()


def _demo_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("memory_agent_demo", DEMO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_llm_planner_survives_calls_null():
    llm = _DeterministicLLM(lambda messages: {"calls": None, "answer": "It is sunny."})
    try:
        planner = _demo_module().LLMPlanner(llm.url, "", "test-model")
        assert planner.plan("What is the weather in Paris?") == ["Direct Answer: It is sunny."]
    finally:
        llm.close()


def test_demo_tells_the_planner_what_failed_after_an_eviction(monkeypatch, capsys):
    def reply(messages):
        told = any("did not work" in m["content"] for m in messages)
        return {"calls": [{"tool": "WeatherLookup", "input": "Paris, France" if told else "Paris"}], "answer": None}

    llm = _DeterministicLLM(reply)
    demo = _demo_module()
    prompt = "What is the weather in Paris?"
    lines = [prompt, "y"] + [prompt, "n"] * 5 + [prompt, "y", "quit"]
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(readline=iter([line + "\n" for line in lines] + [""]).__next__))
    try:
        from actioncache.semantic import HashingEmbedder, SemanticCache

        cache = SemanticCache(open_store("memory://"), embedder=HashingEmbedder(), namespace="demo")
        assert demo.run(cache, demo.LLMPlanner(llm.url, "", "test-model")) == 0
    finally:
        llm.close()
    out = capsys.readouterr().out
    assert "EVICTED" in out and "1 earlier plan(s) for this request failed" in out
    first, second = llm.requests
    assert len(first) == 2 and "Input: 'Paris'" in second[-1]["content"]
    plans = re.findall(r"Stored as entry \w+:\n  1\. (.*)", out)
    assert plans[0].startswith("Tool: WeatherLookup, Input: 'Paris'") and "Paris, France" in plans[1]


class _OneVectorPerCity:
    """A stand-in embedder (no model here): requests naming the same city get the same vector, so
    two wordings of one request hit each other."""

    name, dim = "one-vector-per-city", 4

    def embed(self, texts):
        import numpy as np

        return np.array([[1.0, 0, 0, 0] if "paris" in t.lower() else [0, 1.0, 0, 0] for t in texts], dtype=np.float32)


def test_demo_tells_the_planner_what_failed_after_an_eviction_on_another_wording(monkeypatch, capsys):
    """The plan is stored for one wording and evicted through a hit on another: asking the first
    wording again must still tell the planner that plan failed."""
    def reply(messages):
        told = any("did not work" in m["content"] for m in messages)
        return {"calls": [{"tool": "WeatherLookup", "input": "Paris, France" if told else "Paris"}], "answer": None}

    llm = _DeterministicLLM(reply)
    demo = _demo_module()
    stored, reworded = "What is the weather in Paris?", "How is the weather in Paris?"
    lines = [stored, "y"] + [reworded, "n"] * 5 + [stored, "y", "quit"]
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(readline=iter([line + "\n" for line in lines] + [""]).__next__))
    try:
        from actioncache.semantic import SemanticCache

        cache = SemanticCache(open_store("memory://"), embedder=_OneVectorPerCity(), namespace="demo", threshold=0.9)
        assert demo.run(cache, demo.LLMPlanner(llm.url, "", "test-model")) == 0
    finally:
        llm.close()
    out = capsys.readouterr().out
    assert out.count("CACHE HIT") >= 1 and "EVICTED" in out
    assert "1 earlier plan(s) for this request failed" in out
    assert "Paris, France" in re.findall(r"Stored as entry \w+:\n  1\. (.*)", out)[-1]
