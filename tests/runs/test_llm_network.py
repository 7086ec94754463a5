"""An LLM call over the network in the ``llm_ro`` scope: the trace never vouches for the network, so
such a call is cached by the request it is sent (docs/agent-loops.md, "LLM calls over the network").

No LLM runs here: the model is a stand-in, a real HTTP server on the loopback (``http.server``) that
answers every request with a new answer and counts the requests, as a sampling model would."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

CLIENT = """import os, sys, urllib.request
prompt = open("PROMPT.md", "rb").read()
with urllib.request.urlopen(urllib.request.Request(os.environ["MODEL_URL"], data=prompt), timeout=10) as answer:
    sys.stdout.write(answer.read().decode())
"""


class _Model(BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self) -> None:
        type(self).calls += 1
        length = int(self.headers.get("Content-Length") or 0)
        prompt = self.rfile.read(length).decode()
        body = f"REPORT #{type(self).calls}: {len(prompt.split())} words read\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def model() -> Iterator[tuple[str, type[_Model]]]:
    handler = type("Model", (_Model,), {"calls": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def repo(ex):
    (ex.work / ".git").rmdir()
    git_env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(ex.work.parent)}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=ex.work, env={**ex.env, **git_env}, check=True, capture_output=True)

    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "one")
    (ex.work / "PROMPT.md").write_text("Summarize the state of the build.\n")
    (ex.work / "report.py").write_text(CLIENT)
    return git


LLM_RO = ("--mode", "use", "--scope", "llm_ro", "--scopes", "verify,read,llm_ro", "--phase", "REPORT", "--summary")


def test_traced_an_llm_call_is_not_cached_and_the_message_names_the_fix(ex, strace, model, repo):
    url, handler = model
    for _ in range(2):
        result = ex.run(*LLM_RO, "--", "python3", "report.py", extra_env={"MODEL_URL": url})
        assert result.returncode == 0, result.stderr
    assert handler.calls == 2  # the network answer is never replayed on the trace's word
    message = result.stderr.decode()
    assert "used the network" in message and "--input" in message and "ACTIONCACHE_TRACE=off" in message
    read = ex.run("--mode", "use", "--scope", "read", "--", "python3", "report.py", extra_env={"MODEL_URL": url})
    assert b"ACTIONCACHE_TRACE=off" not in read.stderr  # the hint is for LLM calls, not for every scope


def test_an_llm_call_keyed_by_its_request_hits_and_misses_when_the_request_changes(ex, model, repo):
    url, handler = model
    env = {"MODEL_URL": url, "ACTIONCACHE_TRACE": "off"}

    def report(*flags: str) -> bytes:
        result = ex.run(*flags, "--input", "PROMPT.md", "--", "python3", "report.py", extra_env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    first = report(*LLM_RO)
    assert report(*LLM_RO) == first and handler.calls == 1  # the same request: the first answer, replayed
    (ex.work / "PROMPT.md").write_text("Summarize the state of the tests.\n")
    assert report(*LLM_RO) != first and handler.calls == 2  # another prompt: asked again
    repo("commit", "-q", "--allow-empty", "-m", "two")
    assert report(*LLM_RO) and handler.calls == 3  # another commit (llm_ro keys the git HEAD): asked again
    building = [flag if flag != "REPORT" else "BUILD" for flag in LLM_RO]
    report(*building)
    report(*building)
    assert handler.calls == 5  # a phase that advances state is never cached
