"""The built-in actions, each through a real agent on a real SQLite store."""

from __future__ import annotations

import hashlib
import json
import re
import sys

import pytest

from actioncache.agents import AgentDefinitionError, NodeError


def one_node(agent_from, uses, with_, **options):
    """An agent of one node that puts the action's result at state['r']."""
    text = "nodes:\n  - name: step\n    uses: " + uses + "\n    with: " + json.dumps(with_) + "\n    output: r\n"
    return agent_from(text, **options)


def test_cache_wrap_passes_every_option_through(agent_from, tmp_path):
    calls = []

    def work(state, n):
        calls.append(n)
        return {"n": n, "seen_input": state["input"]}

    agent = agent_from("""
        nodes:
          - name: w
            uses: cache.wrap
            with:
              action: demo.work
              key: "custom-{{ state.input }}"
              ttl_seconds: 120
              ttl_days: 1
              metadata: {team: docs}
              lock: true
              lock_timeout_s: 5
              cleanup_probability: 0.0
              cleanup_limit: 2
              args: {n: "{{ state.n }}"}
            output: r
          - name: g
            uses: cache.get
            with: {key: "custom-{{ state.input }}", include_metadata: true}
            output: g
    """, actions={"demo.work": work})
    state = agent.invoke({"input": "a", "n": 4})
    assert state["r"] == {"success": True, "result": {"n": 4, "seen_input": "a"}, "_cache_hit": False,
                          "_cache_key": "cache:agent:custom-a"}  # scoped to the agent (agent.yaml), as in TEA
    meta = state["g"]["metadata"]
    assert meta["team"] == "docs" and meta["_cache_action"] == "demo.work" and meta["_cache_type"] == "action_result"
    entry = agent.store.get("cache:agent:custom-a")
    assert 119 <= entry.expires_at - entry.created_at <= 121
    again = agent.invoke({"input": "a", "n": 5})
    assert again["r"]["_cache_hit"] is True and again["r"]["result"]["n"] == 4 and calls == [4]


def test_cache_wrap_passes_scope_to_the_policy_layer(agent_from, monkeypatch):
    calls = []
    agent = one_node(agent_from, "cache.wrap", {"action": "demo.v", "args": {}, "scope": "verify"},
                     actions={"demo.v": lambda state: calls.append(1) or {"ok": True}})
    monkeypatch.setenv("ACTIONCACHE_MODE", "off")
    off = agent.invoke()["r"]
    assert off["_cache_hit"] is False and "mode is off" in off["_cache_bypass"]
    monkeypatch.setenv("ACTIONCACHE_MODE", "use")
    agent.invoke()
    assert agent.invoke()["r"]["_cache_hit"] is True and len(calls) == 2


@pytest.mark.parametrize("option, value, expect_calls", [("skip_cache", True, 2), ("cache_enabled", False, 2)])
def test_skip_cache_and_cache_enabled(agent_from, option, value, expect_calls):
    calls = []
    agent = one_node(agent_from, "cache.wrap", {"action": "demo.c", "args": {}, option: value},
                     actions={"demo.c": lambda state: calls.append(1) or {"ok": True}})
    agent.invoke()
    second = agent.invoke()["r"]
    assert len(calls) == expect_calls and second["_cache_hit"] is False


def test_cache_wrap_key_strategies(agent_from, tmp_path):
    doc = tmp_path / "a.txt"
    doc.write_text("same content")
    moved = tmp_path / "b.txt"
    moved.write_text("same content")
    agent = one_node(agent_from, "cache.wrap", {"action": "file.read", "key_strategy": "file_content",
                                                "key_source": "path", "args": {"path": "{{ state.p }}"}})
    first = agent.invoke({"p": str(doc)})["r"]
    renamed = agent.invoke({"p": str(moved)})["r"]
    assert first["_cache_hit"] is False and renamed["_cache_hit"] is True
    assert first["_cache_key"] == renamed["_cache_key"]


def test_cache_wrap_does_not_cache_failures(agent_from, tmp_path):
    agent = one_node(agent_from, "cache.wrap", {"action": "file.read", "args": {"path": str(tmp_path / "missing")}})
    first = agent.invoke()["r"]
    assert first["success"] is False and "cannot read" in first["error"]
    assert agent.invoke()["r"]["_cache_hit"] is False


def test_cache_wrap_unknown_option_suggests(agent_from):
    # Found when the agent loads (the with: keys against the action's options), before any node runs.
    with pytest.raises(AgentDefinitionError, match=r"node 'step': action 'cache.wrap' has no option 'ttl_day' \(did you mean 'ttl_days'"):
        one_node(agent_from, "cache.wrap", {"action": "file.read", "args": {}, "ttl_day": 3})


def test_cache_wrap_unknown_action_at_run_time_names_the_node(agent_from):
    agent = one_node(agent_from, "cache.wrap", {"action": "{{ state.which }}", "args": {}})
    r = agent.invoke({"which": "file.reed"})["r"]  # TEA: a response with error_type, not an exception
    assert r["success"] is False and r["error_type"] == "action_not_found"
    assert re.match(r"node 'step': unknown action 'file.reed' \(did you mean 'file.read'", r["error"])


def test_namespace_setting_separates_agents_on_one_store(agent_from, sqlite_url):
    text = """
        settings: {cache: {namespace: NS}}
        nodes:
          - {name: w, uses: cache.wrap, with: {action: demo.one, args: {}}, output: r}
    """
    fn = {"demo.one": lambda state: {"v": 1}}
    a = agent_from(text.replace("NS", "alpha"), actions=fn).invoke()["r"]
    b = agent_from(text.replace("NS", "beta"), actions=fn).invoke()["r"]
    assert a["_cache_key"].startswith("cache:agent:alpha/demo.one:") and b["_cache_key"].startswith("cache:agent:beta/demo.one:")
    assert b["_cache_hit"] is False


def test_cache_invalidate_get_cleanup_stats(agent_from):
    agent = agent_from("""
        nodes:
          - {name: w1, uses: cache.wrap, with: {action: demo.a, args: {i: 1}}, output: w1}
          - {name: w2, uses: cache.wrap, with: {action: demo.a, args: {i: 2}}, output: w2}
          - {name: w3, uses: cache.wrap, with: {action: demo.b, args: {}, ttl_seconds: 0.001}, output: w3}
          - {name: look, uses: cache.get, with: {key: "{{ state.w1._cache_key }}"}, output: look}
          - {name: by_meta, uses: cache.invalidate, with: {metadata_filter: {_cache_action: demo.a}}, output: inv}
          - {name: clean, uses: cache.cleanup, with: {limit: 10}, output: clean}
          - {name: stats, uses: cache.stats, output: stats}
    """, actions={"demo.a": lambda state, i: {"i": i}, "demo.b": lambda state: {"b": True}})
    import time as _time

    state = agent.invoke()
    assert state["look"]["found"] is True and state["look"]["value"] == {"i": 1}
    assert state["inv"]["deleted_count"] == 2
    assert sorted(state["inv"]["deleted_keys"]) == sorted([state["w1"]["_cache_key"], state["w2"]["_cache_key"]])
    _time.sleep(0.01)
    assert agent.invoke({})["clean"]["deleted_count"] >= 0
    assert state["stats"]["success"] is True and state["stats"]["misses"] >= 3


def test_cache_invalidate_by_action_and_pattern(agent_from):
    agent = agent_from("""
        nodes:
          - {name: w, uses: cache.wrap, with: {action: demo.a, args: {i: 1}}}
          - {name: by_action, uses: cache.invalidate, with: {action: demo.a}, output: inv}
          - {name: w2, uses: cache.wrap, with: {action: demo.a, args: {i: 2}}}
          - {name: by_pattern, uses: actions.cache_invalidate, with: {pattern: "cache:agent:demo.a:*"}, output: inv2}
    """, actions={"demo.a": lambda state, i: {"i": i}})
    state = agent.invoke()
    assert state["inv"]["deleted_count"] == 1 and state["inv2"]["deleted_count"] == 1


def test_storage_hash_action(agent_from, tmp_path):
    doc = tmp_path / "d.bin"
    doc.write_bytes(b"abc" * 100)
    r = one_node(agent_from, "storage.hash", {"path": str(doc), "algorithm": "blake2b"}).invoke()["r"]
    assert r == {"success": True, "hash": hashlib.blake2b(b"abc" * 100).hexdigest(), "algorithm": "blake2b",
                 "size_bytes": 300, "path": str(doc)}
    missing = one_node(agent_from, "storage.hash", {"path": str(tmp_path / "nope")}).invoke()["r"]
    assert missing["success"] is False and "no such file" in missing["error"]


def test_ltm_store_retrieve_search_delete(agent_from):
    agent = agent_from("""
        nodes:
          - {name: s1, uses: ltm.store, with: {key: "doc:1", value: {title: Alpha report}, metadata: {kind: doc}}, output: s1}
          - {name: s2, uses: ltm.store, with: {key: "doc:2", value: {title: Beta}, metadata: {kind: doc}}}
          - {name: s3, uses: ltm.store, with: {key: "note:1", value: "alpha note", metadata: {kind: note}}}
          - {name: r, uses: ltm.retrieve, with: {key: "doc:1"}, output: r}
          - {name: miss, uses: ltm.retrieve, with: {key: "doc:9", default: 0}, output: miss}
          - {name: q, uses: ltm.search, with: {query: alpha}, output: q}
          - {name: p, uses: ltm.search, with: {pattern: "doc:*", metadata_filter: {kind: doc}, limit: 1}, output: p}
          - {name: d, uses: ltm.delete, with: {key: "doc:1"}, output: d}
          - {name: gone, uses: ltm.retrieve, with: {key: "doc:1"}, output: gone}
    """)
    state = agent.invoke()
    assert state["s1"]["success"] and state["s1"]["stored"] and len(state["s1"]["content_hash"]) == 64
    assert state["r"] == {"success": True, "found": True, "value": {"title": "Alpha report"}, "metadata": {"kind": "doc"}}
    assert state["miss"] == {"success": True, "found": False, "value": 0, "metadata": None}
    assert sorted(r["key"] for r in state["q"]["results"]) == ["doc:1", "note:1"] and state["q"]["count"] == 2
    assert state["p"]["count"] == 1 and state["p"]["results"][0]["key"].startswith("doc:")
    assert state["d"]["deleted"] is True and state["gone"]["found"] is False


def test_ltm_cannot_plant_or_delete_in_a_key_space_another_face_owns(agent_from, tmp_path):
    """An LLM-chosen LTM key must not become a cache hit (cache:), a lease or a counter."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    agent = agent_from(f"""
        settings: {{ltm: {{url: "{url}"}}}}
        nodes:
          - {{name: plant, uses: ltm.store, with: {{key: "cache:extract:deadbeef", value: {{planted: true}}}}, output: plant}}
          - {{name: lease, uses: ltm.store, with: {{key: "lease:cache:x", value: 1}}, output: lease}}
          - {{name: drop, uses: ltm.delete, with: {{key: "stats:hits"}}, output: drop}}
          - {{name: ok, uses: ltm.store, with: {{key: "notes:cache:x", value: 1}}, output: ok}}
    """)
    state = agent.invoke()
    for name in ("plant", "lease", "drop"):
        assert state[name]["success"] is False and state[name]["error_type"] == "validation_error"
    assert "'cache:' key space" in state["plant"]["error"] and "choose a key" in state["plant"]["error"]
    assert state["ok"]["success"] is True
    from actioncache import Cache

    served = Cache(url).wrap("extract", lambda: {"planted": False}, {}, key="extract:deadbeef")
    assert served["result"] == {"planted": False} and not served["_cache_hit"]


def test_file_write_and_read(agent_from, tmp_path):
    target = tmp_path / "out" / "note.txt"
    agent = agent_from(f"""
        nodes:
          - {{name: w, uses: file.write, with: {{path: "{target}", content: "héllo"}}, output: w}}
          - {{name: a, uses: file.write, with: {{path: "{target}", content: " more", mode: append}}, output: a}}
          - {{name: r, uses: actions.file_read, with: {{path: "{target}"}}, output: r}}
          - {{name: j, uses: file.write, with: {{path: "{tmp_path}/x.json", content: {{k: 1}}}}, output: j}}
    """)
    state = agent.invoke()
    assert state["w"] == {"success": True, "path": str(target), "size_bytes": len("héllo".encode())}
    assert state["r"]["content"] == "héllo more" and state["r"]["success"] is True
    assert json.loads((tmp_path / "x.json").read_text()) == {"k": 1}


def test_command_run_argv_string_shell_exit_codes_and_timeout(agent_from):
    py = sys.executable
    ok = one_node(agent_from, "command.run", {"command": [py, "-c", "import sys; print('out'); print('err', file=sys.stderr)"]}).invoke()["r"]
    assert ok["success"] is True and ok["exit_code"] == 0 and ok["stdout"] == "out\n" and ok["stderr"] == "err\n"
    failing = one_node(agent_from, "command.run", {"command": f"{py} -c 'raise SystemExit(3)'"}).invoke()["r"]
    assert failing["success"] is False and failing["exit_code"] == 3 and failing["error"] == "exit code 3"
    no_shell = one_node(agent_from, "command.run", {"command": "echo $HOME"}).invoke()["r"]
    assert no_shell["stdout"] == "$HOME\n"
    shell = one_node(agent_from, "command.run", {"command": "echo $((2+3))", "shell": True}).invoke()["r"]
    assert shell["stdout"] == "5\n"
    slow = one_node(agent_from, "command.run", {"command": [py, "-c", "import time; time.sleep(5)"], "timeout": 0.3}).invoke()["r"]
    assert slow["success"] is False and slow["timed_out"] is True and slow["exit_code"] is None
    missing = one_node(agent_from, "command.run", {"command": ["/no/such/program"]}).invoke()["r"]
    assert missing["success"] is False and "cannot run" in missing["error"]


def test_cached_verifier_caches_only_passing_runs(agent_from, tmp_path):
    marker = tmp_path / "runs.txt"
    script = f"import sys; open({str(marker)!r}, 'a').write('x'); sys.exit(int(sys.argv[1]))"
    agent = one_node(agent_from, "cache.wrap", {"action": "command.run",
                                                "args": {"command": [sys.executable, "-c", script, "{{ state.code }}"]}})
    for _ in range(2):
        agent.invoke({"code": "1"})
    assert marker.read_text() == "xx"
    for _ in range(2):
        last = agent.invoke({"code": "0"})["r"]
    assert marker.read_text() == "xxx" and last["_cache_hit"] is True


def test_http_request_against_a_local_server(agent_from, echo_server):
    agent = one_node(agent_from, "http.request", {"url": echo_server.url + "/items", "method": "POST",
                                                  "params": {"q": "a b"}, "json": {"k": 1},
                                                  "headers": {"X-Test": "yes"}})
    r = agent.invoke()["r"]
    assert r["success"] is True and r["status"] == 200
    assert r["json"]["method"] == "POST" and r["json"]["path"] == "/items?q=a+b"
    assert json.loads(r["json"]["body"]) == {"k": 1} and r["json"]["headers"]["x-test"] == "yes"
    bad = one_node(agent_from, "http.request", {"url": echo_server.url + "/status/404"}).invoke()["r"]
    assert bad["success"] is False and bad["status"] == 404 and "HTTP 404" in bad["error"]
    refused = one_node(agent_from, "http.request", {"url": "file:///etc/passwd"}).invoke()["r"]
    assert refused["success"] is False and "only http:// and https://" in refused["error"]


def test_llm_call_speaks_chat_completions(agent_from, chat_server, monkeypatch):
    """chat_server is a protocol stand-in for an OpenAI-compatible server (no model runs here)."""
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    agent = agent_from("""
        nodes:
          - name: t
            uses: cache.wrap
            with:
              action: llm.call
              key_strategy: args
              args:
                model: test-model
                temperature: 0
                messages: [{role: user, content: "{{ state.text }}"}]
            output: r
    """)
    first = agent.invoke({"text": "hello"})["r"]
    second = agent.invoke({"text": "hello"})["r"]
    assert first["result"]["content"] == "olleh" and first["result"]["usage"]["total_tokens"] == 6
    assert first["_cache_hit"] is False and second["_cache_hit"] is True
    assert len(chat_server.requests) == 1
    sent = chat_server.requests[0]
    assert sent["authorization"] == "Bearer sk-test"
    assert sent["body"] == {"model": "test-model", "temperature": 0, "messages": [{"role": "user", "content": "hello"}]}


def test_llm_call_settings_model_from_env_and_errors(agent_from, chat_server, monkeypatch):
    """chat_server is a protocol stand-in for an OpenAI-compatible server."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("ACTIONCACHE_LLM_MODEL", "env-model")
    agent = agent_from(f"""
        settings: {{llm: {{base_url: "{chat_server.url}/v1"}}}}
        nodes:
          - {{name: t, uses: llm.call, with: {{prompt: abc}}, output: r}}
    """)
    r = agent.invoke()["r"]
    assert r["success"] is True and r["content"] == "cba" and r["model"] == "env-model"
    wrong_path = one_node(agent_from, "llm.call", {"prompt": "x", "model": "m", "base_url": chat_server.url}).invoke()["r"]
    assert wrong_path["success"] is False and wrong_path["status"] == 404
    monkeypatch.delenv("ACTIONCACHE_LLM_MODEL")
    no_model = one_node(agent_from, "llm.call", {"prompt": "x", "base_url": chat_server.url}).invoke()["r"]
    assert no_model["success"] is False and "needs a model" in no_model["error"]


def test_an_action_that_raises_names_the_node(agent_from):
    def boom(state):
        raise RuntimeError("kaput")

    agent = one_node(agent_from, "demo.boom", {}, actions={"demo.boom": boom})
    with pytest.raises(NodeError, match="node 'step': action 'demo.boom' failed: RuntimeError: kaput"):
        agent.invoke()
    with pytest.raises(AgentDefinitionError, match="node 'step': action 'file.read' has no option 'pth'"):
        one_node(agent_from, "file.read", {"pth": "x"})  # at load time, from the action's signature

    def picky(state, **options):  # takes any option, so only the call can tell
        raise TypeError(f"picky() got an unexpected keyword argument {next(iter(options))!r}")

    agent = one_node(agent_from, "demo.picky", {"pth": "x"}, actions={"demo.picky": picky})
    with pytest.raises(NodeError, match="node 'step': action 'demo.picky' was called with the wrong with: parameters"):
        agent.invoke()


def test_yaml_infinite_ttl_is_refused_before_the_action_runs(agent_from):
    ran = []
    agent = agent_from("""
        nodes:
          - name: w
            uses: cache.wrap
            with: {action: demo.work, args: {}, ttl_days: .inf}
            output: r
    """, actions={"demo.work": lambda state: ran.append(1) or {"ok": True}})
    r = agent.invoke({})["r"]  # a bad option is the node's input: validation_error, not a crash
    assert r["success"] is False and r["error_type"] == "validation_error" and "ttl_days" in r["error"]
    assert ran == []
