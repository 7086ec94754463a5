"""A local HTTP server speaking the OpenAI and Anthropic wire protocols: a protocol stand-in.

No LLM runs on this machine, so the SDK tests and the integration benchmark talk to this server
instead: real HTTP on loopback, the real JSON bodies and server-sent-event streams the SDKs parse
(``/v1/chat/completions``, ``/v1/responses``, ``/v1/messages``). Every answer embeds a running call
number, so a cache hit (same text as before) is told apart from a fresh call (a new number).

A user message containing ``INTERRUPT`` makes a stream send two events and then drop the
connection without ending the chunked body: the client sees a broken stream, as when a provider
fails mid-answer. ``TRUNCATE`` ends the body cleanly but without the stream's final event.
``FAILSTATUS`` makes a Responses answer report ``status: failed``.

``requests`` keeps what each call sent (path with its query, headers), so a test can tell which
server a request reached and as whom.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator


class StandIn:
    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.bodies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> StandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def count(self, path: str) -> int:
        return self.calls.get(path, 0)

    def next_number(self, path: str, body: dict[str, Any], target: str = "", headers: Any = None) -> int:
        with self._lock:
            self.calls[path] = self.calls.get(path, 0) + 1
            self.bodies.append(body)
            self.requests.append({"target": target, "headers": {k.lower(): v for k, v in (headers or {}).items()}})
            return sum(self.calls.values())


def _last_text(body: dict[str, Any]) -> str:
    items = body.get("messages") or body.get("input") or ""
    if isinstance(items, str):
        return items
    content = items[-1].get("content", "") if items else ""
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


def _chat(n: int, body: dict[str, Any], text: str) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    model, cid, created = body.get("model", "m"), f"chatcmpl-{n}", int(time.time())
    usage = {"prompt_tokens": 7, "completion_tokens": len(text.split()), "total_tokens": 7 + len(text.split())}
    whole = {"id": cid, "object": "chat.completion", "created": created, "model": model,
             "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                          "finish_reason": "stop", "logprobs": None}], "usage": usage}

    def chunks() -> Iterator[dict[str, Any]]:
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
        for word in _words(text):
            yield {**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": usage}

    return whole, chunks()


def _responses(n: int, body: dict[str, Any], text: str) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    rid, mid = f"resp_{n}", f"msg_{n}"
    usage = {"input_tokens": 7, "output_tokens": len(text.split()), "total_tokens": 7 + len(text.split()),
             "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
    message = {"type": "message", "id": mid, "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}
    whole = {"id": rid, "object": "response", "created_at": time.time(), "model": body.get("model", "m"),
             "status": "completed", "output": [message], "parallel_tool_calls": True, "tool_choice": "auto",
             "tools": [], "usage": usage, "error": None, "incomplete_details": None, "instructions": None,
             "metadata": {}, "temperature": body.get("temperature"), "top_p": None}
    if "FAILSTATUS" in text:  # a response the provider reports as failed
        whole.update(status="failed", error={"code": "server_error", "message": "failed"})

    def events() -> Iterator[dict[str, Any]]:
        seq = iter(range(1000))
        yield {"type": "response.created", "sequence_number": next(seq),
               "response": {**whole, "status": "in_progress", "output": [], "usage": None}}
        for word in _words(text):
            yield {"type": "response.output_text.delta", "sequence_number": next(seq), "item_id": mid,
                   "output_index": 0, "content_index": 0, "delta": word, "logprobs": []}
        yield {"type": "response.completed", "sequence_number": next(seq), "response": whole}

    return whole, events()


def _messages(n: int, body: dict[str, Any], text: str) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    mid, model = f"msg_{n}", body.get("model", "m")
    usage = {"input_tokens": 7, "output_tokens": len(text.split())}
    whole = {"id": mid, "type": "message", "role": "assistant", "model": model,
             "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
             "usage": usage}

    def events() -> Iterator[dict[str, Any]]:
        yield {"type": "message_start", "message": {**whole, "content": [], "stop_reason": None,
                                                    "usage": {"input_tokens": 7, "output_tokens": 0}}}
        yield {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        for word in _words(text):
            yield {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word}}
        yield {"type": "content_block_stop", "index": 0}
        yield {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
               "usage": {"output_tokens": usage["output_tokens"]}}
        yield {"type": "message_stop"}

    return whole, events()


_ROUTES = {"/v1/chat/completions": _chat, "/v1/responses": _responses, "/v1/messages": _messages}


def _handler(standin: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body leave at once, as from a real server

        def handle(self) -> None:
            try:
                super().handle()
            except ConnectionError:  # a client that closed its kept-alive connection
                pass

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?", 1)[0]  # query parameters (Azure's api-version) are not routes
            route = _ROUTES.get(path)
            if route is None:
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            n = standin.next_number(path, body, self.path, dict(self.headers.items()))
            prompt = _last_text(body)
            whole, stream = route(n, body, f"answer {n} to {prompt} from {body.get('model')}")
            if not body.get("stream"):
                self._send_json(200, whole)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for i, event in enumerate(stream):
                if "INTERRUPT" in prompt and i == 2:
                    self.wfile.flush()
                    self.connection.shutdown(2)  # drop it: no final chunk, the client sees a broken body
                    self.close_connection = True
                    return
                if "TRUNCATE" in prompt and i == 2:
                    break
                head = f"event: {event['type']}\n" if "type" in event else ""
                self._chunk(f"{head}data: {json.dumps(event)}\n\n".encode())
            if path == "/v1/chat/completions" and "TRUNCATE" not in prompt:
                self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
