"""The LLM judge verifier against a local HTTP server speaking the OpenAI chat protocol.

No LLM runs here, so the server is a stand-in: it answers YES or NO by a rule, or too slowly.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from actioncache.semantic import HashingEmbedder, LLMJudgeVerifier, SemanticCache
from actioncache.stores.memory import MemoryStore


class _Judge(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = body["messages"][-1]["content"]
        if "slow" in question:
            time.sleep(1.5)
        answer = "NO" if "berlin" in question.lower() else "YES"
        if "garbage" in question:
            payload = b"not json"
        else:
            payload = json.dumps({"choices": [{"message": {"content": answer}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def judge_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_the_judge_confirms_or_rejects_and_fails_safe(judge_url):
    judge = LLMJudgeVerifier(base_url=judge_url, timeout_s=0.5)
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.2, verifier=judge, verify_margin=2.0)
    sc.store("weather report please", ["weather"])
    assert sc.lookup("the weather report please") is not None  # judged YES
    sc2 = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.2, verifier=judge, verify_margin=2.0,
                        guard=None)
    sc2.store("weather report for berlin", ["berlin"])
    assert sc2.lookup("weather report for munich") is None  # judged NO (the stored side names berlin)
    sc3 = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.2, verifier=judge, verify_margin=2.0)
    sc3.store("slow weather report", ["slow"])
    assert sc3.lookup("slow weather report please") is None  # timed out: a miss
    sc3.store("garbage weather report", ["x"])
    assert sc3.lookup("garbage weather report please") is None  # unreadable reply: a miss
    assert sc3.stats()["verifier_rejections"] == 2


def test_an_unreachable_judge_is_a_miss_and_a_missing_url_is_a_clear_error(monkeypatch):
    judge = LLMJudgeVerifier(base_url="http://127.0.0.1:9/v1", timeout_s=0.5)
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.2, verifier=judge, verify_margin=2.0)
    sc.store("restart the server", ["restart"])
    assert sc.lookup("restart the server now") is None
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
        LLMJudgeVerifier()
