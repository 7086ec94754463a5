"""A near cache: hot entries of a shared store (Redis, Valkey, a Redis Cluster, PostgreSQL) kept
in the process, dropped the moment any process changes them.

``redis://host:6379/0?near=on`` or ``postgresql://...?near=on`` (options ``near_max_entries``,
default 10,000; ``near_max_value_bytes``, default 64 KiB; ``near_max_age_s``, default 1 s) wraps the
store in :class:`NearCache`. A read served from the process costs a dict lookup, not a round trip.

How a copy is dropped. Every write (put, fenced put, delete, cleanup, from any process, with a near
cache or not) says which key changed: the Redis store publishes it on the namespace's channel in
the script that writes; on PostgreSQL a trigger on the table notifies at commit (LISTEN/NOTIFY).
Each near cache listens on a connection of its own (``store.invalidation_feed``) and drops the
key's copy when the message arrives. The staleness bound (docs/backends.md, "Near cache"):

* a change reaches every near cache within the delivery of one message (well under a
  millisecond on loopback, a network round trip elsewhere): until then a process may serve the
  value the store held before the change;
* while the listening connection is not subscribed (starting, lost, reconnecting) the near cache
  is empty and every read goes to the store; a connection that breaks empties it;
* whatever happens to the messages (a connection that died without a word), no copy is served
  more than ``near_max_age_s`` after it was read from the store.

A copy read from the store while a change was on its way is not kept: a read is kept only if no
invalidation arrived between its start and its end.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable, Mapping, Protocol

from ..errors import StoreError, StoreURLError
from ._url import prefixed_options
from .base import CacheStore, Entry

__all__ = ["InvalidationFeed", "ListeningFeed", "NEAR_DEFAULTS", "NearCache", "near_options"]

NEAR_DEFAULTS: dict[str, float] = {"max_entries": 10_000, "max_value_bytes": 64 * 1024, "max_age_s": 1.0}


class InvalidationFeed(Protocol):
    """What a shared store hands a near cache (``store.invalidation_feed(on_change)``): it calls
    ``on_change(key)`` for each changed key and ``on_change(None)`` when it cannot tell (its
    connection was lost or is new); ``live`` says whether it is listening now."""

    @property
    def live(self) -> bool: ...

    def close(self) -> None: ...


# How long a listener waits for a message before it looks whether it was closed: what closing a
# near cache (a Cache over Redis or PostgreSQL with near=on) waits for at most. At 0.5 s every
# close paid up to half a second; a listener that wakes ten times a second costs nothing measurable.
LISTEN_POLL_S = 0.1


class ListeningFeed:
    """An :class:`InvalidationFeed` on a thread and a connection of its own. A store's feed
    implements :meth:`listen_once`: connect, subscribe, call ``ready()`` once subscribed, then hand
    each changed key (None: "all") to ``changed`` until ``closed`` is set; any exception ends the
    session. Around it: a lost or new session is ``on_change(None)``, ``live`` is False until the
    next one is ready, and sessions start again with a growing pause (up to 2 s)."""

    def __init__(self, on_change: Callable[[str | None], None]) -> None:
        self.live = False
        self._on_change = on_change
        self.closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="actioncache-near-cache", daemon=True)
        self._thread.start()

    def listen_once(self, ready: Callable[[], None], changed: Callable[[str | None], None]) -> None:
        raise NotImplementedError

    def _ready(self) -> None:
        self._on_change(None)  # nothing heard before this: start empty
        self.live = True

    def _run(self) -> None:
        delay = 0.05
        while not self.closed.is_set():
            try:
                self.listen_once(self._ready, self._on_change)
                delay = 0.05
            except Exception:  # noqa: BLE001 - any failure: stop serving copies, listen again
                delay = min(delay * 2, 2.0)
            finally:
                self.live = False
                self._on_change(None)
            self.closed.wait(delay)

    def close(self) -> None:
        self.closed.set()
        self.live = False
        self._thread.join(timeout=2)


class _DeferredFeed:
    """The feed of a store that could not be reached when the near cache was made (its first
    LISTEN or trigger install failed): not live, so every read goes to the store, while a thread
    makes the real feed again with a growing pause (up to 2 s) until it works or is closed. A
    ``Cache`` over a server that is down at start-up still constructs and runs uncached."""

    def __init__(self, make: Callable[[Callable[[str | None], None]], InvalidationFeed],
                 on_change: Callable[[str | None], None]) -> None:
        self._make, self._on_change = make, on_change
        self._real: InvalidationFeed | None = None
        self.closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="actioncache-near-cache", daemon=True)
        self._thread.start()

    @property
    def live(self) -> bool:
        real = self._real
        return real is not None and real.live

    def _run(self) -> None:
        delay = 0.05
        while not self.closed.wait(delay):
            try:
                real = self._make(self._on_change)
            except Exception:  # noqa: BLE001 - still unreachable: try again later
                delay = min(delay * 2, 2.0)
                continue
            if self.closed.is_set():
                real.close()
            else:
                self._real = real
            return

    def close(self) -> None:
        self.closed.set()
        self._thread.join(timeout=2)
        if self._real is not None:
            self._real.close()


def near_options(query: dict[str, str], options: dict[str, Any], where: str) -> dict[str, float] | None:
    """The ``near=on`` and ``near_*`` options (removed from ``query`` and ``options``), or None (off)."""
    return prefixed_options(query, options, "near", NEAR_DEFAULTS, where, on_by_default=False)


class NearCache:
    """``CacheStore`` over a shared store, with hot entries kept in this process (module docstring)."""

    def __init__(self, store: Any, *, max_entries: float = 10_000, max_value_bytes: float = 64 * 1024,
                 max_age_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        feed = getattr(store, "invalidation_feed", None)
        if feed is None:
            raise StoreURLError(f"the store {getattr(store, 'url', store)!r} cannot tell a near cache what changed; "
                                "a near cache runs over Redis, Valkey, a Redis Cluster or PostgreSQL")
        self.store: CacheStore = store
        self.url = store.url
        self.max_entries = int(max_entries)
        self.max_value_bytes = int(max_value_bytes)
        self.max_age_s = float(max_age_s)
        self._clock = clock
        self._near: dict[str, tuple[Entry, float]] = {}
        self._lock = threading.Lock()
        self._changes = 0  # invalidations seen: a read that saw one arrive is not kept
        try:
            self._feed: InvalidationFeed = feed(self._changed)
        except StoreError:  # the server is down or hung now: start uncached, listen once it answers
            self._feed = _DeferredFeed(feed, self._changed)

    def _changed(self, key: str | None) -> None:
        with self._lock:
            self._changes += 1
            if key is None:
                self._near.clear()
            else:
                self._near.pop(key, None)

    # --- reads ----------------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        item = self._near.get(key)
        if item is not None and item[1] > self._clock() and self._feed.live:
            return item[0]
        return self._read_through(key)

    def _read_through(self, key: str) -> Entry | None:
        changes = self._changes
        live = self._feed.live
        read_at = self._clock()
        entry = self.store.get(key)
        if entry is None or not live or type(entry.value) is not bytes or len(entry.value) > self.max_value_bytes:
            return entry
        with self._lock:
            if self._changes == changes and self._feed.live:  # nothing changed while we read
                near = self._near
                if len(near) >= self.max_entries and key not in near:
                    del near[next(iter(near))]  # the oldest copy makes room
                near[key] = (entry, read_at + self.max_age_s)
        return entry

    # --- writes: through to the store, this process's copy dropped at once ---------------------

    def _forget(self, keys: Iterable[str]) -> None:
        with self._lock:
            self._changes += 1
            for key in keys:
                self._near.pop(key, None)

    def put(self, entry: Entry) -> None:
        self._forget((entry.key,))
        self.store.put(entry)
        self._forget((entry.key,))

    def put_fenced(self, entry: Entry, lease: str, token: str) -> bool:
        self._forget((entry.key,))
        try:
            return bool(self.store.put_fenced(entry, lease, token))
        finally:
            self._forget((entry.key,))

    def delete(self, key: str) -> bool:
        self._forget((key,))
        return self.store.delete(key)

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        self._forget(keys)
        return self.store.delete_many(keys)

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        return self.store.delete_expired(now, limit)  # each removed key is published by the store

    # --- the rest of the protocol: the store's own -----------------------------------------------

    def find(self, pattern: str | None = None, metadata_filter: Mapping[str, Any] | None = None,
             limit: int | None = None) -> list[str]:
        return self.store.find(pattern, metadata_filter, limit)

    def count(self) -> int:
        return self.store.count()

    def size_bytes(self) -> int:
        return self.store.size_bytes()

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        self.store.add_counters(deltas)

    def counters(self, prefix: str = "") -> dict[str, float]:
        return self.store.counters(prefix)

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        return self.store.acquire_lease(name, ttl_s)

    def release_lease(self, name: str, token: str) -> None:
        self.store.release_lease(name, token)

    def drop(self) -> None:
        """The store's ``drop()`` (every near cache on it forgets everything), this one's copies first."""
        self._changed(None)
        self.store.drop()  # type: ignore[attr-defined]

    def health(self) -> dict[str, Any]:
        inner = getattr(self.store, "health", None)
        out = dict(inner()) if callable(inner) else {}
        out["near"] = {"listening": self._feed.live, "entries": len(self._near), "max_age_s": self.max_age_s}
        return out

    def __getattr__(self, name: str) -> Any:
        # The store's optional methods (server_time, renew_lease, wait_lease, drop, take_rate_slot...).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.store, name)

    def close(self) -> None:
        self._feed.close()
        with self._lock:
            self._near.clear()
        self.store.close()
