"""Every option of a cached call, checked before anything runs: a configuration mistake raises at
the call with the fix, and never turns into a silent miss or a wrong hit.

:class:`StoreOptions` is how a fresh result is stored, once checked.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, NamedTuple

from ._time import MAX_TTL_SECONDS
from .errors import ConfigError

__all__ = ["DEFAULT_MAX_VALUE_BYTES", "StoreOptions", "check_lock_timeout", "check_max_value_bytes", "check_metadata",
           "check_probability", "check_stale_ttl"]

# Results bigger than this (encoded) are returned and not cached: 64 MiB. Cache(max_value_bytes=...)
# raises or lowers it; None lifts it (the store's own limit then applies: Redis 512 MB, SQLite 1 GB).
DEFAULT_MAX_VALUE_BYTES = 64 * 1024 * 1024


class StoreOptions(NamedTuple):
    """How a fresh result is stored (``stale_ttl_s``: how long it may be served stale after ``ttl_s``)."""

    ttl_s: float
    cache_type: str
    metadata: Mapping[str, Any] | None
    cleanup_probability: float
    cleanup_limit: int
    stale_ttl_s: float = 0.0


def check_max_value_bytes(limit: Any) -> int | None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
        raise ConfigError(f"max_value_bytes must be a positive number of bytes or None (no limit), not {limit!r}")
    return limit


def check_lock_timeout(seconds: Any) -> float:
    """``lock_timeout_s`` checked before anything runs: how long a lease lasts without renewal."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
        raise ConfigError(f"lock_timeout_s must be a finite number of seconds > 0 (how long a lease lasts "
                         f"unless its holder renews it), not {seconds!r}")
    return float(seconds)


def check_stale_ttl(stale_ttl_seconds: Any, ttl_s: float) -> float:
    """``stale_ttl_seconds`` checked before anything runs: None or 0 is no stale window."""
    if stale_ttl_seconds is None:
        return 0.0
    if isinstance(stale_ttl_seconds, bool) or not isinstance(stale_ttl_seconds, (int, float)) \
            or not math.isfinite(stale_ttl_seconds) or stale_ttl_seconds < 0:
        raise ConfigError(f"stale_ttl_seconds must be a finite number of seconds ≥ 0, not {stale_ttl_seconds!r}")
    if ttl_s + stale_ttl_seconds > MAX_TTL_SECONDS:
        raise ConfigError(f"ttl + stale_ttl_seconds must stay within {MAX_TTL_SECONDS:g} s")
    return float(stale_ttl_seconds)


def check_probability(p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ConfigError(f"cleanup_probability must be between 0.0 and 1.0, not {p!r}")
    return float(p)


def check_metadata(metadata: Any) -> None:
    """``metadata=`` checked at the call, so every store behaves alike: a JSON object (string keys;
    str, numbers, bools, None, lists and dicts; no NaN or infinity), as the stores keep it."""
    if not isinstance(metadata, Mapping):
        raise ConfigError(f"metadata must be a dict of JSON values, not {type(metadata).__name__}")
    for name in metadata:
        if not isinstance(name, str):
            raise ConfigError(f"metadata field names must be strings, not {type(name).__name__} {name!r}")
    try:
        json.dumps(metadata, allow_nan=False)
        return
    except (TypeError, ValueError):
        pass
    for name, value in metadata.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"metadata field {name!r} is not JSON ({type(value).__name__}: {exc}); every store keeps "
                             f"metadata as JSON: pass str, numbers (finite), bools, None, lists or dicts") from None
