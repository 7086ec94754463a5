"""Compact JSON encoders built once.

``json.JSONEncoder.encode`` builds a new C encoder on every call, which costs more than encoding
the small dicts a cache writes (arguments, values, metadata). Everything that writes JSON on a
hot path (keys, the codec, the stores' metadata) uses one of these instead. A leaf module: the
core and the stores may both import it.
"""

from __future__ import annotations

import json
from typing import Any, Callable


def compact_encoder(*, sort_keys: bool = False, default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """``separators=(",", ":")``, ``ensure_ascii=False``, NaN allowed; circular data raises RecursionError."""
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None:  # pure-Python json (PyPy etc.)
        return json.JSONEncoder(sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False,
                                default=default, allow_nan=True).encode
    encode_string = json.encoder.encode_basestring

    def fail(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    c_encode = c_make_encoder(None, default or fail, encode_string, None, ":", ",", sort_keys, False, True)

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return encode_string(value)
        return "".join(c_encode(value, 0))

    return encode


dumps_compact = compact_encoder()


def utf8_json(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes. A lone surrogate (a file name decoded with ``surrogateescape``)
    is written as its 3-byte form: ``json.loads`` reads bytes with ``surrogatepass``, so it comes
    back as the same lone code unit (``\\u`` escapes would merge two of them into one character)."""
    return dumps_compact(value).encode("utf-8", "surrogatepass")


class ParseMemo:
    """A bounded map from JSON text (``str`` or ``bytes``) to what parsing it gave, for texts that
    come back again and again (a hit's value and metadata). Keyed by the exact text, so it cannot
    go stale. Texts over ``max_text`` are not kept; when the kept texts would pass ``max_total``
    (in characters or bytes) the memo starts over. Safe under threads (a racing insert may lose
    its place, never give a wrong answer).

    Other keys work too when the kept value carries what proves it current (the hit path keeps
    an entry's verdict under its store key, with the entry itself to compare by identity):
    ``size`` then says what the item weighs."""

    __slots__ = ("items", "get", "held", "max_text", "max_total")

    def __init__(self, max_text: int, max_total: int) -> None:
        self.items: dict[str | bytes, Any] = {}
        self.get = self.items.get  # bound once: it runs on every hit
        self.held = 0
        self.max_text = max_text
        self.max_total = max_total

    def keep(self, text: str | bytes, value: Any, size: int | None = None) -> None:
        if size is None:
            size = len(text)
        if size > self.max_text:
            return
        if self.held + size > self.max_total:
            self.items.clear()
            self.held = 0
        self.items[text] = value
        self.held += size
