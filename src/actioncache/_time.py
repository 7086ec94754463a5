"""Time helpers shared by the core and the faces: TTL arguments and the one timestamp spelling.

Near a leaf: it imports only the errors and the deprecation notice (leaves themselves).
"""

from __future__ import annotations

import time
from typing import Any

from .errors import ConfigError

__all__ = ["DEFAULT_TTL_SECONDS", "MAX_TTL_SECONDS", "face_ttl", "iso_utc", "resolve_ttl", "seconds_of"]

DEFAULT_TTL_SECONDS = 60 * 86400.0
# The longest TTL: 100 years. Longer (or infinite) expiries are not times every store can hold.
MAX_TTL_SECONDS = 36500 * 86400.0


def resolve_ttl(
    ttl_seconds: float | None = None, ttl_hours: float | None = None, ttl_days: float | None = None,
    default: float = DEFAULT_TTL_SECONDS, *, ttl: Any = None, ttl_name: str = "ttl",
    where: str = "", unset: str = "to skip caching use cache_enabled=False",
) -> float:
    """``ttl`` (seconds, or a ``datetime.timedelta``: the one spelling every face takes), else
    ``ttl_seconds`` over ``ttl_hours`` over ``ttl_days`` (The Edge Agent's spellings); the default
    is 60 days. ``ttl`` together with one of the others is refused: which one was meant?

    The one check every TTL passes before anything runs: a number, positive, finite and at most
    :data:`MAX_TTL_SECONDS` (100 years), so the expiry it gives is a time every store can hold.
    ``inf``, ``nan``, ``1e300`` or YAML ``.inf`` are refused here, never after the action ran.
    ``where`` prefixes the messages with the face that was given the TTL; ``unset`` is the advice
    for a TTL that is not positive.
    """
    prefix = f"{where}: " if where else ""
    if ttl is not None:
        given = [name for name, value in (("ttl_seconds", ttl_seconds), ("ttl_hours", ttl_hours),
                                          ("ttl_days", ttl_days)) if value is not None]
        if given:
            raise ConfigError(f"a TTL given twice: {ttl_name}= and {given[0]}=; give one "
                             f"({ttl_name}= takes seconds or a timedelta)")
        spellings: tuple[tuple[Any, str, float], ...] = ((seconds_of(ttl), ttl_name, 1.0),)
    else:
        spellings = ((ttl_seconds, "ttl_seconds", 1.0), (ttl_hours, "ttl_hours", 3600.0), (ttl_days, "ttl_days", 86400.0))
    resolved: float | None = None
    for value, unit, scale in spellings:
        if value is None:
            continue  # every one given is checked, also those a higher one overrides
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{prefix}{unit} must be a number, not {_short(value)}")
        if value != value:  # nan compares unequal to itself
            raise ConfigError(f"{prefix}{unit} must be a number of {_UNITS.get(unit, 'seconds')}, not nan")
        if value <= 0:
            raise ConfigError(f"{prefix}{unit} must be positive (got {_short(ttl if ttl is not None else value)}); {unset}")
        if value > MAX_TTL_SECONDS / scale:  # an int too large for a float compares fine here
            raise ConfigError(
                f"{prefix}{unit} must be at most {MAX_TTL_SECONDS / scale:g} (100 years), not {_short(value)}; "
                f"for an entry that lives as long as possible use ttl_days={MAX_TTL_SECONDS // 86400:g}"
            )
        if resolved is None:
            resolved = float(value) * scale
    return default if resolved is None else resolved


_UNITS = {"ttl_hours": "hours", "ttl_days": "days"}


def face_ttl(ttl: Any, ttl_seconds: Any, where: str, unset: str = "for the default lifetime leave it out") -> float | None:
    """The lifetime a face (SemanticCache, the LLM adapters, the MCP proxy...) was given: ``ttl=``
    in seconds or a ``timedelta`` (the one spelling, as in the core), ``ttl_seconds=`` its older,
    deprecated spelling; None when neither is given (the face's own default applies)."""
    if ttl_seconds is not None:
        from ._deprecated import deprecated

        if ttl is not None:
            raise ConfigError(f"{where}: a TTL given twice: ttl= and ttl_seconds=; give ttl= (seconds or a timedelta)")
        deprecated(f"{where}(ttl_seconds=...)", f"{where}(ttl=...) (seconds or a timedelta)", stacklevel=4)
        ttl = ttl_seconds
    if ttl is None:
        return None
    return resolve_ttl(ttl=ttl, where=where, unset=unset)


def seconds_of(value: Any) -> Any:
    """A duration as seconds: a ``datetime.timedelta`` is converted, anything else is returned as
    it is (for the caller's own check, which names what is wrong with it)."""
    import datetime

    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "..."


def iso_utc(ts: float) -> str:
    """``2026-11-22T03:24:26.641721Z``: ISO 8601, UTC, microseconds (written twice per stored entry)."""
    seconds, micros = divmod(round(ts * 1_000_000), 1_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{micros:06d}Z"
