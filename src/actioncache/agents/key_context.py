"""Declared key context: the inputs an action reads besides its arguments.

``cache.wrap`` keys on the wrapped action's arguments. An action that also reads settings or the
environment (``llm.call`` takes its model and server from ``settings.llm`` or ``$OPENAI_BASE_URL``)
would otherwise replay one model's answer for another: a wrong hit. Such an action declares a
context function ``context(args) -> dict`` of every such input that changes its answer; cache.wrap
folds it into the key (hashed, never in clear) and records only its hash in the metadata.

    def call(state, prompt): ...
    declare_key_context(call, lambda args: {"model": current_model()})
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..keys import canonical_json, sha256_hex

KeyContext = Callable[[Mapping[str, Any]], Mapping[str, Any]]

_ATTRIBUTE = "key_context"
# Header names whose values are credentials: they enter a context as a hash only.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key",
                            "x-goog-api-key", "x-auth-token"})


def declare_key_context(fn: Callable[..., Any], context: KeyContext) -> Callable[..., Any]:
    """Attach ``context`` to the action ``fn`` (returns ``fn``)."""
    setattr(fn, _ATTRIBUTE, context)
    return fn


def key_context_of(fn: Callable[..., Any], args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The declared context for a call with ``args``, or None when ``fn`` declares none."""
    context = getattr(fn, _ATTRIBUTE, None)
    if context is None:
        return None
    return dict(context(args))


def context_digest(context: Mapping[str, Any]) -> str:
    return sha256_hex(canonical_json(context))


def secret_digest(value: Any) -> str:
    """A secret as it may appear in a context: its SHA-256, never the value."""
    return "sha256:" + sha256_hex(str(value))


def headers_context(headers: Mapping[str, Any] | None) -> dict[str, str]:
    """Request headers by lower-case name; credential values hashed."""
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        lowered = str(name).lower()
        out[lowered] = secret_digest(value) if lowered in SECRET_HEADERS else str(value)
    return out
