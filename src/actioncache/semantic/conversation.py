"""Requests as a prompt or as a conversation: what part of a conversation the cache compares.

A conversation is a list of ``{"role": ..., "content": ...}`` messages (OpenAI's chat format).
Its **last message** is the request: it is embedded and compared like a prompt. **Every message
before it** is the context, and must be the same for a hit (after the prompt normalization:
Unicode NFKC, case-folded, whitespace collapsed; roles included). "Yes, cancel it" after a chat
about a gym membership therefore never answers "Yes, cancel it" after a chat about a streaming
subscription, and an identical conversation (or one whose last message is reworded) still hits.

A plain prompt is a request with an empty context; it never matches a conversation's entry with
a non-empty context, and a one-message conversation is the same as its prompt.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True, slots=True)
class Request:
    text: str  # the request compared by meaning (the last message)
    context: str  # the earlier messages, rendered "role: content" one a line ("" for a prompt)
    context_hash: str  # "" for no context


def normalize_prompt(prompt: str) -> str:
    """The exact-match form of a prompt: Unicode NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", prompt).casefold().split())


def as_request(prompt: str | Sequence[Mapping[str, Any]]) -> Request:
    """A prompt or a conversation as a :class:`Request`; a clear error for anything else."""
    if isinstance(prompt, str):
        _check_text(prompt, "prompt is empty; pass the user's request text")
        return Request(prompt, "", "")
    if not isinstance(prompt, Sequence) or isinstance(prompt, (bytes, bytearray)) or not prompt:
        raise TypeError(
            "prompt must be a string or a non-empty list of {'role': ..., 'content': ...} messages, "
            f"not {type(prompt).__name__}"
        )
    rendered = []
    for number, message in enumerate(prompt, 1):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str) or not isinstance(message.get("content"), str):
            raise TypeError(f"message {number} must be a mapping with string 'role' and 'content', got {message!r:.80}")
        rendered.append(f"{normalize_prompt(message['role'])}: {normalize_prompt(message['content'])}")
    last = prompt[-1]["content"]
    _check_text(last, "the conversation's last message is empty; it is the request the cache compares")
    context = "\n".join(rendered[:-1])
    digest = hashlib.sha256(context.encode("utf-8")).hexdigest() if context else ""
    return Request(last, context, digest)


def _check_text(text: str, message: str) -> None:
    if not text.strip():
        raise ValueError(message)
