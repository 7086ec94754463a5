"""``llm.call``: OpenAI-compatible chat completions over HTTP (any server that speaks the protocol).

Base URL, key and model come from the node's parameters, then ``settings.llm``
(``base_url``/``api_key``/``model``), then ``$OPENAI_BASE_URL``, ``$OPENAI_API_KEY`` and
``$ACTIONCACHE_LLM_MODEL``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from .http import send

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def register(registry: Any, engine: Any) -> None:
    def call(state: Mapping[str, Any], messages: list[dict[str, Any]] | None = None, prompt: str | None = None,
             model: str | None = None, temperature: float | None = None, max_tokens: int | None = None,
             base_url: str | None = None, api_key: str | None = None, timeout: float = 120,
             extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        llm_settings = (engine.settings or {}).get("llm") or {}
        if messages is None:
            if prompt is None:
                return {"success": False, "error": "llm.call needs messages: [{role, content}, ...] or prompt: text"}
            messages = [{"role": "user", "content": prompt}]
        model = model or llm_settings.get("model") or os.environ.get("ACTIONCACHE_LLM_MODEL")
        if not model:
            return {"success": False, "error": "llm.call needs a model: pass model:, set settings.llm.model or $ACTIONCACHE_LLM_MODEL"}
        base = (base_url or llm_settings.get("base_url") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        key = api_key or llm_settings.get("api_key") or os.environ.get("OPENAI_API_KEY")
        body: dict[str, Any] = {"model": model, "messages": messages, **dict(extra or {})}
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        status, _, raw, error = send(base + "/chat/completions", "POST", headers, json.dumps(body).encode("utf-8"), timeout)
        if error:
            return {"success": False, "status": status, "error": f"{error}: {raw[:500].decode('utf-8', 'replace')}".rstrip(": ")}
        try:
            reply = json.loads(raw)
            choice = reply["choices"][0]
            content = choice["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return {"success": False, "status": status, "error": f"not a chat-completions response ({exc!r})"}
        return {"success": True, "content": content, "model": reply.get("model", model),
                "finish_reason": choice.get("finish_reason"), "usage": reply.get("usage") or {}, "id": reply.get("id")}

    registry["llm.call"] = call
