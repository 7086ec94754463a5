"""Seed 000's three YAML examples (and the verifier) end to end: through `actioncache run` in a
subprocess and through load_agent(...).invoke(...); the second run is a visible cache hit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from actioncache.agents import load_agent

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
REPORT = str(EXAMPLES / "data" / "report.txt")


@pytest.fixture
def example_env(src_env, tmp_path):
    env = dict(src_env)
    env["ACTIONCACHE_URL"] = f"sqlite:///{tmp_path}/examples.db"
    env["ACTIONCACHE_EXAMPLE_DELAY_S"] = "0.2"
    env.pop("OPENAI_BASE_URL", None)
    return env


def cli(env, *args):
    proc = subprocess.run([sys.executable, "-m", "actioncache", "run", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_document_extraction_and_invalidation_through_the_cli(example_env):
    agent, data = str(EXAMPLES / "document_extraction.yaml"), json.dumps({"file_path": REPORT})
    first, err1 = cli(example_env, agent, "--input", data)
    second, err2 = cli(example_env, agent, "--input", data)
    assert first["extraction_result"]["_cache_hit"] is False and "Cache miss" in err1
    assert second["extraction_result"]["_cache_hit"] is True and "Cache hit! Created at:" in err2
    assert second["data"] == first["data"] == {"title": "Quarterly report", "words": 47, "lines": 5,
                                                "agent_name": "report-reader"}
    assert second["extraction_result"]["_cache_key"].startswith("cache:document_extraction_agent:docs.extract:")
    managed, _ = cli(example_env, str(EXAMPLES / "cache_management.yaml"))
    assert managed["deleted"] == 1
    assert managed["invalidation_result"]["deleted_keys"] == [second["extraction_result"]["_cache_key"]]
    third, _ = cli(example_env, agent, "--input", data)
    assert third["extraction_result"]["_cache_hit"] is False


def test_document_extraction_through_load_agent(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIONCACHE_EXAMPLE_DELAY_S", "0.2")
    copy = tmp_path / "renamed.txt"
    copy.write_bytes(Path(REPORT).read_bytes())
    with load_agent(EXAMPLES / "document_extraction.yaml", store=f"sqlite:///{tmp_path}/c.db") as agent:
        first = agent.invoke({"file_path": REPORT})
        second = agent.invoke({"file_path": str(copy)})  # same content, other name: still a hit
        assert first["extraction_result"]["_cache_hit"] is False
        assert second["extraction_result"]["_cache_hit"] is True
        assert agent.cache.stats()["time_saved_s"] >= 0.2
        managed = load_agent(EXAMPLES / "cache_management.yaml", cache=agent.cache).invoke()
        assert managed["deleted"] == 1


def test_llm_translation_through_the_cli_against_a_stand_in(example_env, chat_server):
    """chat_server is a protocol stand-in for an OpenAI-compatible server."""
    example_env["OPENAI_BASE_URL"] = chat_server.url + "/v1"
    agent = str(EXAMPLES / "llm_translation.yaml")
    data = json.dumps({"text": "hola", "target_language": "French"})
    first, _ = cli(example_env, agent, "--input", data)
    second, _ = cli(example_env, agent, "--input", data)
    assert first["translation_result"]["result"]["content"] == "aloh :hcnerF ot etalsnarT"
    assert first["translation_result"]["_cache_hit"] is False and second["translation_result"]["_cache_hit"] is True
    assert len(chat_server.requests) == 1 and chat_server.requests[0]["body"]["model"] == "gpt-4o"


def test_llm_translation_through_load_agent(tmp_path, chat_server, monkeypatch):
    """chat_server is a protocol stand-in for an OpenAI-compatible server."""
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url + "/v1")
    with load_agent(EXAMPLES / "llm_translation.yaml", store=f"sqlite:///{tmp_path}/c.db") as agent:
        hits = [agent.invoke({"model": "local"})["translation_result"]["_cache_hit"] for _ in range(2)]
    assert hits == [False, True] and chat_server.requests[0]["body"]["model"] == "local"


def test_llm_example_script_skips_without_a_server(example_env):
    proc = subprocess.run([sys.executable, str(EXAMPLES / "llm_translation.py")], env=example_env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "skipped, set OPENAI_BASE_URL" in proc.stdout


def test_llm_example_script_runs_twice_with_a_server(example_env, chat_server):
    """chat_server is a protocol stand-in for an OpenAI-compatible server."""
    example_env["OPENAI_BASE_URL"] = chat_server.url + "/v1"
    proc = subprocess.run([sys.executable, str(EXAMPLES / "llm_translation.py"), "abc", "German"], env=example_env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "run 1: _cache_hit=False" in proc.stdout and "run 2: _cache_hit=True" in proc.stdout


def test_cached_verifier_branches_and_hits(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFY_CACHE_DB", str(tmp_path / "verify.db"))
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    with load_agent(EXAMPLES / "verify_command.yaml") as agent:
        assert agent.store.url.endswith(f"{tmp_path}/verify.db")
        first = agent.invoke({"file_path": REPORT})
        second = agent.invoke({"file_path": REPORT})
        failed = agent.invoke({"file_path": str(empty)})
    assert (first["verdict"], first["from_cache"]) == ("pass", False)
    assert (second["verdict"], second["from_cache"]) == ("pass", True)
    assert failed["verdict"] == "fail" and "from_cache" not in failed


def test_quickstart_shows_a_miss_then_a_hit(src_env):
    env = dict(src_env, ACTIONCACHE_EXAMPLE_DELAY_S="0.2", PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "quickstart.sh")], env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "installing" not in proc.stdout  # this checkout is importable: nothing to install
    first, second = proc.stdout.index("_cache_hit=false"), proc.stdout.index("_cache_hit=true")
    assert first < second and "docs.extract" in proc.stdout[second:]
