"""Helpers for the agent tests: write YAML to a temp dir, load it on a fresh SQLite store,
and real local HTTP servers (http.server) for http.request and llm.call."""

from __future__ import annotations

import json
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import pytest

from actioncache.agents import load_agent


@pytest.fixture
def write_agent(tmp_path: Path) -> Callable[..., Path]:
    def write(text: str, name: str = "agent.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def agent_from(write_agent, sqlite_url) -> Callable[..., Any]:
    """Load YAML text (dedented) from a file in tmp_path on the test's SQLite store."""
    loaded = []

    def load(text: str, **options: Any) -> Any:
        options.setdefault("store", sqlite_url)
        agent = load_agent(write_agent(text), **options)
        loaded.append(agent)
        return agent

    yield load
    for agent in loaded:
        agent.close()


class _Server:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.requests = []  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.httpd.requests  # type: ignore[attr-defined]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _EchoHandler(BaseHTTPRequestHandler):
    """A real HTTP server: echoes method, path, headers and body as JSON; /status/N answers N."""

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8") if length else ""
        self.server.requests.append({"method": self.command, "path": self.path, "body": body})  # type: ignore[attr-defined]
        status = int(self.path.split("/status/")[1]) if self.path.startswith("/status/") else 200
        payload = json.dumps({"method": self.command, "path": self.path, "body": body,
                              "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = _answer


class ChatCompletionsStandIn(BaseHTTPRequestHandler):
    """A protocol stand-in for an OpenAI-compatible server (no real model runs on this machine):
    it speaks POST /v1/chat/completions and answers with the last user message reversed."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length))
        self.server.requests.append({"path": self.path, "body": request,  # type: ignore[attr-defined]
                                     "authorization": self.headers.get("Authorization")})
        if self.path != "/v1/chat/completions":
            self.send_error(404, "not found")
            return
        content = request["messages"][-1]["content"][::-1]
        payload = json.dumps({
            "id": f"chatcmpl-{len(self.server.requests)}", "object": "chat.completion",  # type: ignore[attr-defined]
            "model": request["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def echo_server():
    server = _Server(_EchoHandler)
    yield server
    server.close()


@pytest.fixture
def chat_server():
    server = _Server(ChatCompletionsStandIn)
    yield server
    server.close()


@pytest.fixture
def second_chat_server():
    """Another OpenAI-compatible protocol stand-in, for tests that switch servers."""
    server = _Server(ChatCompletionsStandIn)
    yield server
    server.close()


class _RedirectHandler(BaseHTTPRequestHandler):
    """A real HTTP server that answers every request with a 302 to ``server.target``."""

    def log_message(self, *args: Any) -> None:
        pass

    def _redirect(self) -> None:
        self.server.requests.append({"path": self.path, "authorization": self.headers.get("Authorization")})  # type: ignore[attr-defined]
        self.send_response(302)
        self.send_header("Location", self.server.target)  # type: ignore[attr-defined]
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _redirect


@pytest.fixture
def redirect_server():
    """Redirects to ``server.httpd.target`` (set it in the test)."""
    server = _Server(_RedirectHandler)
    yield server
    server.close()
