"""The ``_cache_*`` bookkeeping fields every stored entry carries, written once for every face."""

from __future__ import annotations

from typing import Any, Mapping

from ._time import iso_utc
from .stores.base import FRESH_UNTIL, Entry

__all__ = ["DURATION", "FRESH_UNTIL", "entry_metadata", "fresh_until"]

# FRESH_UNTIL (stores.base): metadata of an entry written with a stale window, the time (epoch s) it
# stops being fresh. The entry itself lives on (its expires_at) for stale_ttl_s more, so cleanup and
# server-side expiry (Redis) keep it while it may still be served stale. entry_problem refuses one
# that is not a time: the entry is corrupt, never fresh until its window closes.
DURATION = "_cache_duration_ms"  # how long the run that stored an entry took: a hit saves that


def entry_metadata(key: str, action: str | None, kind: str, now: float, ttl_s: float | None,
                   extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``_cache_*`` bookkeeping every stored entry carries, over the caller's own fields."""
    meta: dict[str, Any] = dict(extra or {})
    meta["_cache_type"] = kind
    meta["_cache_key"] = key
    if action is not None:
        meta["_cache_action"] = action
    meta["_cache_created_at"] = iso_utc(now)
    if ttl_s is not None:
        meta["_cache_expires_at"] = iso_utc(now + ttl_s)
    return meta


def stored_by(action: str, kind: str) -> dict[str, str]:
    """The metadata filter of the entries ``action`` stored as ``kind`` (``entry_metadata``'s fields)."""
    wanted: dict[str, str] = {}
    wanted["_cache_type"] = kind
    wanted["_cache_action"] = action
    return wanted


def fresh_until(entry: Entry) -> float | None:
    """When an entry written with a stale window stops being fresh (None: no such window); for an
    entry that passed ``entry_problem``, which refuses a fresh-until that is not a time."""
    value = entry.metadata.get(FRESH_UNTIL)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
