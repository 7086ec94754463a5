"""``llm.call``: OpenAI-compatible chat completions over HTTP (any server that speaks the protocol).

Each request field comes from the node's parameters, then ``settings.llm``; the model falls back to
``$ACTIONCACHE_LLM_MODEL`` then ``$OPENAI_MODEL``, the server to ``$OPENAI_BASE_URL``, the key to
``$OPENAI_API_KEY``. Everything that shapes the request except the messages and the key (model,
server, sampling, tools, response format, seed, stop) is the action's declared key context, so
``cache.wrap`` over ``llm.call`` misses when any of it changes. A failure carries ``error_type``:
``validation_error`` (no messages or model), ``llm_error`` (the server failed or its answer is not a
chat completion).
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from ...actions import ActionTable, Engine, failure
from ..key_context import declare_key_context
from .http import send

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Request fields taken from the node, else settings.llm (the body's optional fields).
REQUEST_FIELDS = ("temperature", "top_p", "max_tokens", "tools", "response_format", "seed", "stop")
MODEL_ENV = ("ACTIONCACHE_LLM_MODEL", "OPENAI_MODEL")


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def settings() -> Mapping[str, Any]:
        return (getattr(engine, "settings", None) or {}).get("llm") or {}

    def resolve(args: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """(base URL, request body without messages) exactly as a call with ``args`` sends them."""
        llm = settings()
        model = args.get("model") or llm.get("model") or next((os.environ[n] for n in MODEL_ENV if os.environ.get(n)), None)
        base = (args.get("base_url") or llm.get("base_url") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        body: dict[str, Any] = {"model": model, **dict(args.get("extra") or {})}
        for name in REQUEST_FIELDS:
            value = args[name] if args.get(name) is not None else llm.get(name)
            if value is not None:
                body[name] = value
        return str(base).rstrip("/"), body

    def call(state: Mapping[str, Any], messages: list[dict[str, Any]] | None = None, prompt: str | None = None,
             model: str | None = None, temperature: float | None = None, top_p: float | None = None,
             max_tokens: int | None = None, tools: list[Any] | None = None, response_format: Any = None,
             seed: int | None = None, stop: Any = None, base_url: str | None = None, api_key: str | None = None,
             timeout: float = 120, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        if messages is None:
            if prompt is None:
                return failure("validation_error", "llm.call needs messages: [{role, content}, ...] or prompt: text")
            messages = [{"role": "user", "content": prompt}]
        base, body = resolve({"model": model, "temperature": temperature, "top_p": top_p, "max_tokens": max_tokens,
                              "tools": tools, "response_format": response_format, "seed": seed, "stop": stop,
                              "base_url": base_url, "extra": extra})
        if not body["model"]:
            return failure("validation_error", "llm.call needs a model: pass model:, set settings.llm.model, "
                                               "$ACTIONCACHE_LLM_MODEL or $OPENAI_MODEL")
        body["messages"] = messages
        key = api_key or settings().get("api_key")
        trust = getattr(engine, "trust", None)
        check_redirect = None
        if trust is not None and not trust.trusted:
            env_base = os.environ.get("OPENAI_BASE_URL")
            agent_chose_base = bool(base_url or settings().get("base_url"))
            if not key and os.environ.get("OPENAI_API_KEY") and agent_chose_base:
                trust.check_secret_destination(base, "OPENAI_API_KEY", env_base)
            users_hosts = [env_base] if env_base else []  # its origin, not just its host
            trust.check_url(base, "llm.call request", implicitly_allowed=users_hosts)
            check_redirect = lambda target: trust.check_url(target, f"llm.call redirect from {base}",  # noqa: E731
                                                            implicitly_allowed=users_hosts)
        key = key or os.environ.get("OPENAI_API_KEY")
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        status, _, raw, error = send(base + "/chat/completions", "POST", headers, json.dumps(body).encode("utf-8"), timeout,
                                     check_redirect)
        if error:
            return failure("llm_error", f"{error}: {raw[:500].decode('utf-8', 'replace')}".rstrip(": "), status=status)
        try:
            reply = json.loads(raw)
            choice = reply["choices"][0]
            content = choice["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return failure("llm_error", f"not a chat-completions response ({exc!r})", status=status)
        return {"success": True, "content": content, "model": reply.get("model", body["model"]),
                "finish_reason": choice.get("finish_reason"), "usage": reply.get("usage") or {}, "id": reply.get("id")}

    def context(args: Mapping[str, Any]) -> dict[str, Any]:
        base, body = resolve(args)
        return {"base_url": base, **body}

    registry["llm.call"] = declare_key_context(call, context)
