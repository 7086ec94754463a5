"""``actioncache mcp``'s stdio transport, driven with raw JSON-RPC lines over a real subprocess's
stdin/stdout (what a client whose JSON holds a lone surrogate sends; the SDK's own client cannot
produce it), and stopped with the signals a terminal or a supervisor sends."""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest

from actioncache.scratchpad import Scratchpad
from actioncache.stores.base import open_store

pytestmark = pytest.mark.usefixtures("mcp_sdk")

# How long a test waits for an answer before it calls the server hung (not a timing assertion: the
# old server never answered at all).
HUNG_S = 60.0


class RawClient:
    def __init__(self, src_env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "actioncache", "mcp", *args], env=src_env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.banner = self.proc.stderr.readline().decode() if self.proc.stderr else ""

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.lines.get(timeout=HUNG_S)))
        except queue.Empty:
            raise AssertionError(f"no answer in {HUNG_S:.0f} s: the server left a request unanswered") from None

    def initialize(self) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
        assert self.answer()["id"] == 1
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _call(request_id: int | str, tool: str, arguments_json: str) -> str:
    """A tools/call line whose arguments are the raw JSON text given (escapes kept as written)."""
    return ('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
            % (json.dumps(request_id), tool, arguments_json))


def test_every_request_gets_an_answer_lone_surrogates_and_deep_nesting(tmp_path, src_env):
    """A lone surrogate escape (half an emoji) or data nested hundreds of levels deep got no answer
    at all: the client waited forever. Now a surrogate becomes U+FFFD and the call runs; what cannot
    be read is a JSON-RPC error with the request's id."""
    url = f"sqlite:///{tmp_path}/mcp.db"
    client = RawClient(src_env, "--store", url, "--session", "sur")
    try:
        client.initialize()
        client.send(_call(2, "scratchpad_write", r'{"data":"x \ud83d y","description":"split emoji \ud83d here"}'))
        written = client.answer()
        client.send(_call(3, "scratchpad_list", r'{"text":"\udc00"}'))
        listed = client.answer()
        answers = {}
        for request_id, depth in (("d200", 200), ("d5000", 5000), ("d100000", 100_000)):
            client.send(_call(request_id, "scratchpad_write",
                              '{"data":' + '{"a":' * depth + "1" + "}" * depth + ',"description":"deep"}'))
            answers[request_id] = client.answer()
        # The id after the deep part: found without parsing what is above it.
        client.send('{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"data":' + "[" * 100_000
                    + "]" * 100_000 + '}},"id":"late"}')
        late = client.answer()
        client.send(_call(9, "scratchpad_list", "{}"))
        after = client.answer()
    finally:
        client.close()
    assert written["id"] == 2 and written["result"]["isError"] is False
    assert listed["id"] == 3 and listed["result"]["isError"] is False
    for request_id, answer in {**answers, "late": late}.items():
        assert answer["id"] == request_id
        assert answer["error"]["code"] == -32600 and "nested too deeply" in answer["error"]["message"]
    assert after["id"] == 9 and after["result"]["isError"] is False
    store = open_store(url)
    try:
        item = Scratchpad(store, "sur").read(json.loads(written["result"]["content"][0]["text"])["item"]["storageKey"])
        assert item["data"] == "x \ufffd y" and item["description"] == "split emoji \ufffd here"
    finally:
        store.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_stops_a_serving_server_and_ends_its_anonymous_session(tmp_path, src_env, sig):
    """With the client's stdin still open, SIGTERM and Ctrl-C did nothing (the server kept running
    until stdin closed); SIGHUP killed it without ending its anonymous session."""
    url = f"sqlite:///{tmp_path}/mcp.db"
    src_env.pop("ACTIONCACHE_SESSION", None)
    client = RawClient(src_env, "--store", url)
    try:
        session = re.search(r"session (mcp-\w+)", client.banner).group(1)  # type: ignore[union-attr]
        client.initialize()
        client.send(_call(2, "scratchpad_write", '{"data":1,"description":"anonymous item"}'))
        assert client.answer()["result"]["isError"] is False
        client.proc.send_signal(sig)
        try:
            code = client.proc.wait(timeout=HUNG_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{sig.name} did not stop the server while its stdin was open") from None
        assert code == 0
        store = open_store(url)
        try:
            assert Scratchpad(store, session).list() == []
        finally:
            store.close()
    finally:
        client.close()
