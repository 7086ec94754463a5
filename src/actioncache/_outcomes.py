"""What a lookup or a run of the miss path produced: :class:`Lookup`, :class:`Outcome`, and the one
rule for a result that reports failure (:func:`is_failure`: never cached)."""

from __future__ import annotations

from typing import Any, NamedTuple

from .stores.base import Entry

__all__ = ["NOTHING", "Lookup", "Outcome", "is_failure", "new_hit"]


class Lookup(NamedTuple):
    """A read: a fresh ``hit``; or a miss, with ``stale`` set (and the decoded value) when the entry
    is past its TTL but inside its stale window."""

    hit: bool
    value: Any = None
    entry: Entry | None = None
    error: str | None = None
    stale: bool = False


NOTHING = Lookup(False)  # nothing stored under the key
_tuple_new = tuple.__new__


def new_hit(value: Any, entry: Entry) -> Lookup:
    """A fresh hit, built without NamedTuple's Python-level ``__new__`` (it sits on the hit path)."""
    hit: Lookup = _tuple_new(Lookup, (True, value, entry, None, False))
    return hit


class Outcome(NamedTuple):
    """How a miss path ended: a hit found on the way (another thread, task or process computed
    it), or a fresh run (``ok``, its value, and ``problem``: why it was not stored, if it was not)."""

    hit: bool
    ok: bool
    value: Any
    entry: Entry | None = None
    problem: str | None = None


def is_failure(result: Any) -> bool:
    """A result the action reported as failed (a dict with ``success: false``): never cached."""
    return isinstance(result, dict) and result.get("success") is False
