"""Size limits: the options every evicting store reads, and the batched record of reads.

A store with ``max_size_bytes`` keeps the bytes it holds (key + value + metadata of every entry)
under that limit by removing entries in the order the policy names:

* ``lru``: least recently read (or written) first;
* ``lfu``: fewest reads first (ties: least recently written);
* ``ttl``: soonest to expire first; entries without an expiry last.

When a put takes the store over the limit, the store removes entries until it holds at most
``CULL_TO`` of the limit, so a full cache culls once per several puts instead of on every put
(diskcache culls in the same amortised way). Finding the next victim uses an index on the
eviction order: never a scan of every entry.

Reads must not turn into writes (a hit is a read), so LRU/LFU stores note the keys they served in
memory (:class:`AccessLog`) and write them as one batch at most every ``ACCESS_FLUSH_S`` seconds,
before every cull, and on close. A read seen only by another process reaches the order up to
that much later.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Iterable, Mapping

from .._record import record
from ..errors import EntryTooLargeError, StoreURLError

POLICIES = ("lru", "lfu", "ttl")
CULL_TO = 0.9
ACCESS_FLUSH_S = 1.0
ACCESS_FLUSH_KEYS = 1000


@record(frozen=True)
class EvictionConfig:
    max_size_bytes: int
    policy: str = "lru"

    @property
    def target_bytes(self) -> int:
        return int(self.max_size_bytes * CULL_TO)

    @property
    def tracks_reads(self) -> bool:
        return self.policy in ("lru", "lfu")


def cull(excess: int, batches: list[Callable[[], Iterable[tuple[Any, int]]]],
         delete: Callable[[list[Any]], object]) -> None:
    """Remove victims until ``excess`` bytes are freed. Each of ``batches`` (in the policy's order)
    returns the next few victims as (id, bytes); ``delete`` removes the chosen ids. One loop for
    every SQL store: only the statements differ."""
    for next_batch in batches:
        while excess > 0:
            chosen = []
            for ident, size in next_batch():
                chosen.append(ident)
                excess -= int(size)
                if excess <= 0:
                    break
            if not chosen:
                break
            delete(chosen)


def too_large(limit: EvictionConfig | None, size: int, where: str) -> EntryTooLargeError | None:
    """The error to raise for an entry of ``size`` bytes that cannot be kept under ``limit`` (None:
    it fits); ``where`` names the store. Storing it would first evict everything else and then the
    entry itself: refuse it instead, leaving the rest."""
    if limit is None or size <= limit.max_size_bytes:
        return None
    return EntryTooLargeError(f"{where}: an entry of {size} bytes is larger than the store's max_size_bytes "
                              f"({limit.max_size_bytes}); it is not cached (raise max_size_bytes to cache it)",
                              size, limit.max_size_bytes)


def eviction_config(max_size_bytes: Any = None, eviction: Any = None) -> EvictionConfig | None:
    """The checked size limit (None: no limit). Text values come from URL queries and YAML."""
    if max_size_bytes is None or max_size_bytes == "":
        if eviction not in (None, ""):
            raise StoreURLError(f"eviction={eviction!r} needs max_size_bytes= (the size to keep the store under)")
        return None
    size = _size(max_size_bytes)
    policy = "lru" if eviction in (None, "") else str(eviction).lower()
    if policy not in POLICIES:
        raise StoreURLError(f"eviction must be one of {', '.join(POLICIES)}, not {eviction!r}")
    return EvictionConfig(size, policy)


_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def _size(value: Any) -> int:
    if isinstance(value, bool):
        raise StoreURLError(f"max_size_bytes must be a number of bytes, not {value!r}")
    if isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = text[len(digits):]
        if unit not in _UNITS:
            raise StoreURLError(f"max_size_bytes={value!r}: unknown unit {unit!r}; use bytes or KB/MB/GB/KiB/MiB/GiB")
        try:
            value = float(digits) * _UNITS[unit]
        except ValueError:
            raise StoreURLError(f"max_size_bytes={value!r} is not a size; e.g. 1000000, 500MB or 1GiB") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 1:
        raise StoreURLError(f"max_size_bytes must be a positive, finite number of bytes, not {value!r}")
    return int(value)


def eviction_from_query(query: Mapping[str, str], options: dict[str, Any]) -> EvictionConfig | None:
    """The limit from keyword options, else from a store URL's ``?max_size_bytes=&eviction=``."""
    return eviction_config(options.pop("max_size_bytes", query.get("max_size_bytes")),
                           options.pop("eviction", query.get("eviction")))


class AccessLog:
    """Keys a store served since the last flush, with their last read time and read count."""

    __slots__ = ("_pending", "_lock", "_due")

    def __init__(self) -> None:
        self._pending: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._due = time.monotonic() + ACCESS_FLUSH_S

    def record(self, key: str, now: float) -> bool:
        """Note one read of ``key``; True when the batch is due to be written."""
        seen = self._pending.get(key)
        if seen is None:
            self._pending[key] = [now, 1]
        else:
            seen[0] = now
            seen[1] += 1
        return len(self._pending) >= ACCESS_FLUSH_KEYS or time.monotonic() >= self._due

    def drain(self) -> list[tuple[float, int, str]]:
        """The pending reads as (last read, count, key) rows, emptied for the next batch."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._due = time.monotonic() + ACCESS_FLUSH_S
        return [(seen[0], int(seen[1]), key) for key, seen in pending.items()]


# The stores that enforce max_size_bytes themselves. Redis evicts by the server's own
# maxmemory-policy; object stores and Firestore have no eviction order to keep.
SIZE_LIMITED_SCHEMES = {"memory", "sqlite", "libsql+file", "postgresql", "postgres", "duckdb"}
# volatile-*, never allkeys-*: the store's index keys (the sorted set, the index sets) carry no TTL,
# so volatile-* never evicts them, while allkeys-* may, and invalidation then misses entries.
_REDIS_EVICTION = ("Redis evicts by the server's own policy: set `maxmemory` and `maxmemory-policy volatile-lru` "
                   "(or volatile-lfu / volatile-ttl; noeviction refuses writes instead) in redis.conf or with "
                   "CONFIG SET. Not allkeys-*: it may evict the store's own index keys, which carry no TTL, "
                   "after which invalidation misses entries and old values keep being served")
_ELSEWHERE = {"redis": _REDIS_EVICTION, "rediss": _REDIS_EVICTION}


LIMIT_OPTIONS = ("max_size_bytes", "eviction")


def _same_limit(name: str, a: Any, b: Any) -> bool:
    """Whether two spellings of option ``name`` mean one limit (``1MB`` and ``1000000``; ``LRU`` and ``lru``)."""
    try:
        if name == "max_size_bytes":
            return _size(a) == _size(b)
        return str(a).strip().lower() == str(b).strip().lower()
    except StoreURLError:
        return str(a) == str(b)  # a bad value is reported by the store, naming it


def limits_to_add(url: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Of the size-limit ``options`` (given as keywords or YAML fields), those ``url``'s query does
    not already give. An option the URL gives twice with two values, or the URL and ``options``
    with two values, is refused naming both: which one should win is not ours to guess."""
    from urllib.parse import parse_qsl, urlsplit

    given: dict[str, tuple[str, Any]] = {}
    pairs = parse_qsl(urlsplit(url).query, keep_blank_values=True) if "?" in url else []
    sources = [("the URL", name, value) for name, value in pairs]
    sources += [("the keyword", name, value) for name, value in options.items() if value is not None]
    added: dict[str, Any] = {}
    for where, name, value in sources:
        if name not in LIMIT_OPTIONS:
            continue
        if name in given:
            first_where, first = given[name]
            if not _same_limit(name, first, value):
                also = "and then" if where == first_where else f"and {where} says"
                raise StoreURLError(f"{name} is given twice with two values: {first_where} says {first!r} {also} "
                                    f"{value!r}; give {name} once (in the URL or as an option)")
            continue
        given[name] = (where, value)
        if where == "the keyword":
            added[name] = value
    return added


def check_size_limit_supported(scheme: str, url: str, options: Mapping[str, Any]) -> None:
    """Refuse a size limit on a store that would not enforce it (silently growing is worse), and a
    limit given twice with two values (see :func:`limits_to_add`)."""
    limits_to_add(url, {name: options.get(name) for name in LIMIT_OPTIONS})
    if scheme in SIZE_LIMITED_SCHEMES:
        return
    asked = options.get("max_size_bytes") is not None or options.get("eviction") is not None
    if not asked and "?" in url:
        from urllib.parse import parse_qs, urlsplit

        query = parse_qs(urlsplit(url).query)
        asked = "max_size_bytes" in query or "eviction" in query
    if asked:
        how = _ELSEWHERE.get(scheme, f"use one of: {', '.join(sorted(SIZE_LIMITED_SCHEMES))}")
        raise StoreURLError(f"the {scheme!r} store does not enforce max_size_bytes/eviction; {how}")
