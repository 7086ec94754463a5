"""Requests as a prompt or as a conversation: what part of a conversation the cache compares.

A conversation is a list of ``{"role": ..., "content": ...}`` messages (OpenAI's chat format).
Its **last message** is the request; **every message before it** is the context. Both are
compared by meaning (``guard/context.py``): the conversation is searched by its *key text*, the
user's turns that ask or state something (greetings and thanks left out) followed by the request,
so "next friday please" after "I need a flight to Paris" is found by what it means in full; then
the request is checked against the stored one like a prompt, and the two contexts are checked
against each other by the same rules. "Yes, cancel it" after a chat about a gym membership
therefore never answers "Yes, cancel it" after a chat about a streaming subscription, while a
reworded or chattier history with the same facts still hits. The exact-match key stays exact:
every message, roles included, in its exact-match form.

A plain prompt is a request with an empty context; it never matches a conversation's entry with
a non-empty context, and a one-message conversation is the same as its prompt when that message
is the user's (another role is part of the context). ``content`` may be a string, ``None`` or
OpenAI's list of parts (text parts are joined; other parts are refused).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .guard.code import exact_form
from .guard.context import key_text


@dataclass(frozen=True, slots=True)
class Request:
    text: str  # the request compared by meaning (the last message)
    context: str  # the earlier messages, rendered "role: content" one a line ("" for a prompt)
    context_hash: str  # "" for no context
    turns: tuple[tuple[str, str], ...] = ()  # the earlier messages as (role, text), as typed

    @property
    def key_text(self) -> str:
        """What the request is searched by: the user's turns that say something, then the request."""
        return key_text(self.turns, self.text)


def normalize_prompt(prompt: str) -> str:
    """The exact-match form of a prompt: Unicode NFKC, whitespace collapsed, prose case-folded, and
    code as typed: flags, paths, identifiers and quoted strings keep their case (``guard.code``)."""
    return exact_form(prompt)


def as_request(prompt: str | Sequence[Mapping[str, Any]]) -> Request:
    """A prompt or a conversation as a :class:`Request`; a clear error for anything else."""
    if isinstance(prompt, str):
        _check_text(prompt, "prompt is empty or only whitespace; pass the user's request text")
        return Request(prompt, "", "")
    if isinstance(prompt, (bytes, bytearray)):
        raise TypeError("prompt must be a string, not bytes; decode it first (prompt.decode('utf-8'))")
    if not isinstance(prompt, Sequence) or not prompt:
        raise TypeError(
            "prompt must be a string or a non-empty list of {'role': ..., 'content': ...} messages, "
            f"not {_kind(prompt)}"
        )
    messages = [_message(number, message) for number, message in enumerate(prompt)]
    rendered = [f"{normalize_prompt(role)}: {normalize_prompt(content)}" for role, content in messages]
    role, last = messages[-1]
    _check_text(last, f"the conversation's last message (index {len(messages) - 1}) has no text; it is the request the cache compares")
    lines = rendered[:-1]
    if normalize_prompt(role) != "user":
        # The request's own role counts: a system's or assistant's "delete my account" is not the
        # user's, and never answers (or is stored as) a plain prompt.
        lines.append(f"(request from {normalize_prompt(role)})")
    context = "\n".join(lines)
    digest = hashlib.sha256(context.encode("utf-8")).hexdigest() if context else ""
    turns = tuple(messages[:-1])
    if normalize_prompt(role) != "user":
        # Who asks is part of the history: compared exactly, like a system prompt.
        turns += (("(request role)", normalize_prompt(role)),)
    return Request(last, context, digest, turns)


def _kind(value: Any) -> str:
    return "an empty list" if isinstance(value, Sequence) and not value else type(value).__name__


def _message(number: int, message: Any) -> tuple[str, str]:
    """``(role, text)`` of one message: ``content`` a string, ``None`` (no text) or OpenAI's list of
    parts, whose text parts are joined; any other part (an image, audio) is refused."""
    if not isinstance(message, Mapping):
        raise TypeError(f"messages[{number}] must be a mapping with 'role' and 'content', not {type(message).__name__}")
    for field in ("role", "content"):
        if field not in message:
            raise ValueError(f"messages[{number}] has no {field!r}; every message needs 'role' and 'content' (content may be None)")
    role, content = message["role"], message["content"]
    if not isinstance(role, str) or not role.strip():
        raise ValueError(f"messages[{number}]'s 'role' must be a non-empty string such as 'user', got {role!r:.80}")
    if content is None:
        return role, ""
    if isinstance(content, str):
        return role, content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts = []
        for part in content:
            if not (isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise ValueError(
                    f"messages[{number}] has a content part of type {kind!r}; the semantic cache compares text only: "
                    "pass text parts ({'type': 'text', 'text': ...}) or leave the others out of the request"
                )
            texts.append(part["text"])
        return role, "\n".join(texts)
    raise ValueError(
        f"messages[{number}]'s 'content' must be a string, None or a list of text parts, not {type(content).__name__}"
    )


def _check_text(text: str, message: str) -> None:
    if not text.strip():
        raise ValueError(message)
