"""Old spellings kept working: each warns once per process with a DeprecationWarning that names
the new spelling (the public names of the contract are never deprecated; only the drift around
them: ``default_ttl_seconds`` for ``default_ttl``, ``metrics()`` for ``stats()``, ...)."""

from __future__ import annotations

import warnings

__all__ = ["deprecated"]

_said: set[tuple[str, str]] = set()


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn, once per process, that ``old`` is spelled ``new`` now (it keeps working)."""
    if (old, new) in _said:
        return
    _said.add((old, new))
    warnings.warn(f"{old} is deprecated: use {new} (the old spelling keeps working)", DeprecationWarning,
                  stacklevel=stacklevel)
