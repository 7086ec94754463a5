"""A rate limiter shared through a store: at most ``limit`` grants of ``name`` in any window of
``window_s`` seconds (a sliding log: the exact rule, never a burst of twice the limit at a
window's edge), across every process that uses the store.

One call, :func:`take`, answers a check: ``0.0`` when a grant was taken, else how many seconds
until the oldest grant in the window leaves it (when a caller may try again). A store may answer
it natively in one round trip (``take_rate_slot(name, limit, window_s)``: Redis and Valkey do,
with one script on the server's clock); on any other store the log is a store entry holding the
grant times, read and rewritten under the store's lease on the name (the rewrite fenced by the
lease's token: a check paused past the lease writes nothing and grants nothing): four store calls, whatever
the limit (the lease slots this replaces tried up to ``limit`` leases per check once the limit was
reached: 137 ms per check at 600 per minute on Redis).

Why not the ``limits`` package itself: its storages are Redis, Memcached, MongoDB and memory, and
a limiter here must live in whatever store the agent uses (SQLite, PostgreSQL, Firestore...);
bench/bench_backends.py measures a check against ``limits`` (moving window) on the same Redis.
"""

from __future__ import annotations

import struct
import time
from typing import Any

from .base import CacheStore, Entry

__all__ = ["LOG_PREFIX", "take"]

# The log entry and the lease that guards it: "ratelimit:" + the limiter's name (records.KEYSPACE).
LOG_PREFIX = "ratelimit:"
_LEASE_TTL_S = 5.0  # a holder that dies mid-check frees the log after this
_LEASE_WAIT_S = 1.0  # how long a check waits for another process's check to end
_GRANT = struct.Struct("<d")


def take(store: CacheStore, name: str, limit: int, window_s: float) -> float:
    """Take one of ``limit`` grants in ``window_s`` seconds of the limiter ``name``: ``0.0`` when
    taken, else the seconds until one frees. A store error propagates (the caller decides)."""
    native = getattr(store, "take_rate_slot", None)
    if native is not None:
        return float(native(name, int(limit), float(window_s)))
    return _take_in_log(store, name, int(limit), float(window_s))


def _now(store: Any) -> float:
    server_time = getattr(store, "server_time", None)
    return float(server_time()) if server_time is not None else time.time()


def _take_in_log(store: CacheStore, name: str, limit: int, window_s: float) -> float:
    key = LOG_PREFIX + name
    deadline = time.monotonic() + _LEASE_WAIT_S
    delay = 0.001
    while True:
        token = store.acquire_lease(key, _LEASE_TTL_S)
        if token is not None:
            break
        if time.monotonic() >= deadline:
            return delay  # another process is checking: try again shortly
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    try:
        now = _now(store)
        entry = store.get(key)
        grants = _grants(entry.value) if entry is not None and type(entry.value) is bytes else []
        floor = now - window_s
        grants = [t for t in grants if floor < t <= now + window_s]  # a garbled or far-future time is dropped
        if len(grants) >= limit:
            return max(0.001, grants[-limit] + window_s - now)
        grants.append(now)
        value = b"".join(_GRANT.pack(t) for t in grants[-limit:])
        log = Entry(key, value, {"_cache_type": "ratelimit_log", "_cache_action": "ratelimit"}, now, now + window_s)
        fenced = getattr(store, "put_fenced", None)
        if fenced is None:  # a third-party store without fencing
            store.put(log)
        elif not fenced(log, key, token):
            # Paused past the lease: another check rewrote the log meanwhile, and this log would
            # drop its grants. Not written, not granted: try again shortly.
            return 0.001
        return 0.0
    finally:
        store.release_lease(key, token)


def _grants(value: bytes) -> list[float]:
    usable = len(value) - len(value) % _GRANT.size
    return sorted(t for (t,) in _GRANT.iter_unpack(value[:usable]) if t == t)

