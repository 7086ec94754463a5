"""The failure response of the built-in actions: ``success: false`` with ``error`` and a
machine-readable ``error_type`` (TEA's names for the cache, ratelimit, ltm and storage families).

The shape and the list of ``error_type`` values live in :mod:`actioncache.actions`, beside the
plug-in contract, so every face's actions (and a third party's) answer the same way.
"""

from __future__ import annotations

from ...actions import ERROR_TYPES, bad_count, failure, typed

__all__ = ["ERROR_TYPES", "bad_count", "failure", "typed"]
