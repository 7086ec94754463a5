"""Cache events: the one public seam for observers (metrics, tracing, logging).

    def log_event(event: CacheEvent) -> None:
        print(event.kind, event.action, event.value)

    remove = cache.add_observer(log_event)   # every Cache.wrap/awrap/@cached call now reports
    remove()                                 # and stops

An observer is any callable taking one :class:`CacheEvent`. It runs synchronously on the caller's
thread, so it must be quick; an observer that raises is logged and skipped, never the user's
action. A cache without observers pays one attribute check per event.

Kinds (``event.kind``) are the names ``Cache.stats()`` counts, plus ``lookup``:

* ``hits``: ``value`` 1; ``metadata`` is a read-only view of the hit entry's metadata without its key (``_cache_duration_ms`` is what
  the original call took, so the time saved; integrations add their own fields, e.g. token usage).
* ``lookup``: ``value`` is the store read's latency in seconds (hit or miss).
* ``misses``, ``stores``, ``errors``, ``failures``, ``uncacheable``, ``corrupt``, ``policy_bypass``,
  ``invalidated``, ``cleanup_deleted`` and any other counter: ``value`` is the count added.

``action`` is the action name (``None`` for cache-wide work such as cleanup). Events never carry a
key: key text can hold user data, so it stays out of metric labels by construction.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

from ._log import log


class CacheEvent(NamedTuple):
    kind: str
    action: str | None
    value: float = 1
    metadata: Mapping[str, Any] | None = None


Observer = Callable[[CacheEvent], None]


def notify(observers: list[Observer], event: CacheEvent) -> None:
    """Call every observer with ``event``; one that raises is logged, never propagated."""
    for observer in tuple(observers):
        try:
            observer(event)
        except Exception as exc:  # noqa: BLE001 - an observer never fails the user's action
            log.warning("cache observer %r failed on %s: %s", observer, event.kind, exc)
