"""What faces store: records over a store, without hand-building entries.

The faces (runs, semantic, replay, scratchpad, agents) keep their own data in the same store as
the cache. :class:`Records` gives them the core's rules for it in one place:

* ``put`` writes a value with the ``_cache_*`` bookkeeping every entry carries (type, key,
  action, created/expires as ISO text) and an expiry; ``put_raw`` does the same for bytes a face
  encodes itself.
* ``get`` reads one: expired is absent; stored content that cannot be served (malformed fields,
  an undecodable value) is absent and removed, never an exception.
* ``lease`` is cross-process mutual exclusion with bounded backoff (no face spins by hand).
* :func:`ema` is the one moving average (the replay and semantic faces learn thresholds with it).

:data:`KEYSPACE` is the table of every key prefix in a store, and who owns it: a new face adds
its prefix here (``tests/test_records.py`` checks that no two prefixes overlap).
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, NamedTuple

from ._flight import LEASE_PREFIX
from ._flow import entry_metadata
from ._stats import STATS_PREFIX
from .codec import Codec, make_codec
from .keys import KEY_PREFIX
from .stores.base import CacheStore, Entry, entry_problem

__all__ = ["DEFAULT_EMA_ALPHA", "KEYSPACE", "Record", "Records", "Space", "ema", "space_of"]

log = logging.getLogger("actioncache")

DEFAULT_EMA_ALPHA = 0.2


class Space(NamedTuple):
    owner: str
    holds: str


# Every key prefix in a store. Faces define their prefix constants beside their code and must
# match this table (tests/test_records.py checks it).
KEYSPACE: Mapping[str, Space] = {
    KEY_PREFIX: Space("core", "action and function results (wrap, @cached, exec manifests)"),
    LEASE_PREFIX: Space("core", "cross-process single-flight leases"),
    STATS_PREFIX: Space("core", "shared counters (Cache.stats)"),
    "semantic:": Space("semantic", "semantic cache entries"),
    "plan:": Space("replay", "recorded plans and their signatures"),
    "replay:": Space("replay", "plan-cache counters"),
    "runs:log:": Space("runs", "the exec run log"),
    "runs:fail:": Space("runs", "the exec fail log"),
    "scratch:": Space("scratchpad", "scratchpad items"),
    "scratch-session:": Space("scratchpad", "scratchpad session records"),
    "scratch-index:": Space("scratchpad", "scratchpad listing index"),
    "scratchpad-bytes:": Space("scratchpad", "scratchpad usage counters"),
    "ratelimit:": Space("agents", "ratelimit.wrap leases"),
}


def space_of(key: str) -> str | None:
    """The KEYSPACE prefix a key falls in (the longest that matches), or None."""
    best = None
    for prefix in KEYSPACE:
        if key.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


class Record(NamedTuple):
    value: Any
    entry: Entry


class Records:
    """One face's view of a store: put/get with expiry, decoding and corrupt-entry removal; leases."""

    def __init__(self, store: CacheStore, codec: Codec | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.codec = codec if codec is not None else make_codec(None, None)
        self.clock = clock

    def put(self, key: str, value: Any, *, kind: str, ttl_s: float | None = None, action: str | None = None,
            metadata: Mapping[str, Any] | None = None) -> Entry:
        """Encode and store ``value`` (raises on an unencodable value or a failing store: the face decides)."""
        return self.put_raw(key, self.codec.encode(value), kind=kind, ttl_s=ttl_s, action=action, metadata=metadata)

    def put_raw(self, key: str, data: bytes, *, kind: str, ttl_s: float | None = None, action: str | None = None,
                metadata: Mapping[str, Any] | None = None) -> Entry:
        now = self.clock()
        entry = Entry(key, data, entry_metadata(key, action, kind, now, ttl_s, metadata), now,
                      None if ttl_s is None else now + ttl_s)
        self.store.put(entry)
        return entry

    def get(self, key: str) -> Record | None:
        """The live record under ``key``, or None (absent, expired, or corrupt and now removed).

        A store error propagates: the face knows whether a failed read is a miss or an error.
        """
        entry = self.store.get(key)
        if entry is None or entry.is_expired(self.clock()):
            return None
        problem = entry_problem(entry)
        if problem is None:
            try:
                return Record(self.codec.decode(entry.value), entry)
            except Exception as exc:  # noqa: BLE001 - any undecodable value is corrupt
                problem = str(exc) or type(exc).__name__
        log.warning("removing corrupt entry %r: %s", key, problem)
        try:
            self.store.delete(key)
        except Exception as exc:  # noqa: BLE001 - the next write replaces it anyway
            log.debug("removing corrupt entry %r failed: %s", key, exc)
        return None

    @contextmanager
    def lease(self, name: str, ttl_s: float, wait_s: float = 0.0) -> Iterator[bool]:
        """``with records.lease("ratelimit:x", 30, wait_s=5) as held:`` mutual exclusion across
        processes. Waits up to ``wait_s`` with backoff (10 ms doubling to 250 ms); ``held`` is
        False when the wait ran out or the store has no leases, and the body decides what then."""
        deadline = time.monotonic() + wait_s
        delay = 0.01
        token = None
        while True:
            try:
                token = self.store.acquire_lease(name, ttl_s)
            except Exception as exc:  # noqa: BLE001 - no lease support or store down
                log.debug("lease on %s failed: %s", name, exc)
                break
            if token is not None or time.monotonic() >= deadline:
                break
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.25)
        try:
            yield token is not None
        finally:
            if token is not None:
                try:
                    self.store.release_lease(name, token)
                except Exception as exc:  # noqa: BLE001 - the lease expires on its own
                    log.debug("releasing lease on %s failed: %s", name, exc)


def ema(old: float | None, new: float, alpha: float = DEFAULT_EMA_ALPHA) -> float:
    """Exponential moving average: ``new`` when there is no ``old``, else ``old + alpha * (new - old)``."""
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], not {alpha!r}")
    return float(new) if old is None else float(old) + alpha * (float(new) - float(old))
