"""An in-process store: a dict, a lock, and a heap on the expiry time.

``memory://`` opens a fresh private store; ``memory://NAME`` opens the process-wide store of
that name, so two ``Cache`` objects in one process can share one.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
import uuid
from collections import OrderedDict, deque
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

from ._eviction import EvictionConfig, eviction_config, eviction_from_query, too_large
from ._url import check_fields, query_options
from .base import Entry, glob_literal_prefix, select_keys

_NAMED: dict[str, MemoryStore] = {}
_NAMED_LOCK = threading.Lock()


class MemoryStore:
    """With ``max_size_bytes``, the bytes of keys and values are kept under the limit (see
    ``stores/_eviction.py``): LRU through an ordered dict moved on each read, LFU through a heap of
    read counts re-checked when popped, TTL through the expiry heap."""

    # Two objects with one URL are two stores (an unnamed memory:// each time; a named one is one
    # object already): counters go by the object (_stats.store_identity).
    shared_by_url = False

    def __init__(self, url: str = "memory://", *, max_size_bytes: int | str | None = None,
                 eviction: str | None = None) -> None:
        self.url = url
        self.eviction: EvictionConfig | None = eviction_config(max_size_bytes, eviction)
        self._bytes = 0
        self._recency: OrderedDict[str, None] | None = OrderedDict() if self.eviction else None
        self._reads: dict[str, int] = {}
        self._read_heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()
        self._entries: dict[str, Entry] = {}
        # (expires_at, key, created_at): stale heap items are skipped when popped.
        self._expiry_heap: list[tuple[float, str, float]] = []
        self._counters: dict[str, float] = {}
        self._leases: dict[str, tuple[str, float]] = {}
        self._rate_logs: dict[str, deque[float]] = {}  # take_rate_slot: each limiter's grant times
        self._lock = threading.RLock()

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "memory", base_dir: Any = None) -> str:
        """``memory://``: a memory store takes no fields."""
        check_fields("memory", fields, ())
        return "memory://"

    @classmethod
    def from_url(cls, url: str, **options: Any) -> MemoryStore:
        parts = urlsplit(url)
        query = query_options("memory", url, parts, ("max_size_bytes", "eviction"), "options: max_size_bytes=, eviction=")
        limit = eviction_from_query(query, options)
        sized = {} if limit is None else {"max_size_bytes": limit.max_size_bytes, "eviction": limit.policy}
        name = parts.netloc + parts.path.strip("/")
        if not name:
            return cls(url, **sized)
        with _NAMED_LOCK:
            store = _NAMED.get(name)
            if store is None:
                store = _NAMED[name] = cls(url, **sized)
            return store

    def get(self, key: str) -> Entry | None:
        entry = self._entries.get(key)
        if entry is not None and self._recency is not None:
            self._note_read(key)
        return entry

    def _note_read(self, key: str) -> None:
        if self.eviction.policy == "lfu":  # type: ignore[union-attr]
            self._reads[key] = self._reads.get(key, 0) + 1
        else:
            try:
                self._recency.move_to_end(key)  # type: ignore[union-attr]
            except KeyError:  # removed by another thread since the read
                pass

    def put(self, entry: Entry) -> None:
        refusal = too_large(self.eviction, _size(entry), "memory store") if self.eviction is not None else None
        if refusal:
            self.delete(entry.key)  # never leave the older value under this key
            raise refusal
        with self._lock:
            old = self._entries.get(entry.key)
            self._entries[entry.key] = entry
            if isinstance(entry.expires_at, (int, float)) and entry.expires_at == entry.expires_at:
                heapq.heappush(self._expiry_heap, (entry.expires_at, entry.key, entry.created_at))
            if self.eviction is not None:
                self._bytes += _size(entry) - (_size(old) if old is not None else 0)
                self._recency[entry.key] = None  # type: ignore[index]
                self._recency.move_to_end(entry.key)  # type: ignore[union-attr]
                self._reads[entry.key] = 0
                heapq.heappush(self._read_heap, (0, next(self._seq), entry.key))
                if self._bytes > self.eviction.max_size_bytes:
                    self._cull(self.eviction, entry.key)

    def _cull(self, limit: EvictionConfig, written: str) -> None:
        """Remove victims (lock held) until the store holds at most the target; the entry just
        written is never its own write's victim."""
        now = time.time()
        while self._bytes > limit.target_bytes and len(self._entries) > 1:
            victim = self._victim(limit.policy, now, written)
            if victim is None:
                return
            self._drop(victim)

    def _victim(self, policy: str, now: float, written: str) -> str | None:
        if policy == "lfu":
            heap, kept, found = self._read_heap, None, None
            while heap:
                reads, _, key = heapq.heappop(heap)
                current = self._reads.get(key)
                if current is None or key not in self._entries:
                    continue  # stale: the entry is gone
                if current != reads:  # read since it was pushed: back in at its true count
                    heapq.heappush(heap, (current, next(self._seq), key))
                    continue
                if key == written:  # never its own write's victim: set aside, put back below
                    kept = (reads, next(self._seq), key)
                    continue
                found = key
                break
            if kept is not None:
                heapq.heappush(heap, kept)
            if found is not None:
                return found
        if policy == "ttl":
            heap = self._expiry_heap
            while heap:
                expires_at, key, created_at = heapq.heappop(heap)
                current = self._entries.get(key)
                if current is not None and current.created_at == created_at and current.expires_at == expires_at:
                    if key == written:
                        kept = (expires_at, key, created_at)
                        victim = self._victim("ttl", now, written)
                        heapq.heappush(heap, kept)
                        return victim
                    return key
        for key in self._recency:  # type: ignore[union-attr]  # least recent first (LRU; the others' fallback)
            if key != written:
                return key
        return None

    def _drop(self, key: str) -> Entry | None:
        """Remove ``key`` and its bookkeeping (lock held)."""
        entry = self._entries.pop(key, None)
        if self.eviction is not None:
            self._recency.pop(key, None)  # type: ignore[union-attr]
            self._reads.pop(key, None)
            if entry is not None:
                self._bytes -= _size(entry)
        return entry

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._drop(key) is not None

    def delete_many(self, keys: Iterable[str]) -> int:
        with self._lock:
            return sum(self._drop(k) is not None for k in keys)

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        prefix = glob_literal_prefix(pattern) if pattern is not None else ""
        with self._lock:
            rows = [(k, e.metadata) for k, e in self._entries.items() if k.startswith(prefix)]
        return select_keys(rows, pattern, metadata_filter, limit)

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        deleted = 0
        with self._lock:
            heap = self._expiry_heap
            while heap and heap[0][0] <= now and (limit is None or deleted < limit):
                expires_at, key, created_at = heapq.heappop(heap)
                current = self._entries.get(key)
                # Only the heap item of the live version may delete it.
                if current is not None and current.created_at == created_at and current.expires_at == expires_at:
                    self._drop(key)
                    deleted += 1
        return deleted

    def count(self) -> int:
        return len(self._entries)

    def size_bytes(self) -> int:
        if self.eviction is not None:  # what the limit counts: keys and values
            return self._bytes
        return sum(len(e.value) for e in list(self._entries.values()))

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        with self._lock:
            for name, delta in deltas.items():
                self._counters[name] = self._counters.get(name, 0) + delta

    def counters(self, prefix: str = "") -> dict[str, float]:
        with self._lock:
            return {k: v for k, v in self._counters.items() if k.startswith(prefix)}

    def take_rate_slot(self, name: str, limit: int, window_s: float) -> float:
        """One rate-limit check (``stores/ratelimit.py``): 0.0 when a grant of ``name`` was taken (at
        most ``limit`` in any ``window_s``), else the seconds until one frees. In-process, so timed
        by the monotonic clock."""
        now = time.monotonic()
        with self._lock:
            log = self._rate_logs.get(name)
            if log is None:
                log = self._rate_logs[name] = deque()
            floor = now - window_s
            while log and log[0] <= floor:
                log.popleft()
            if len(log) < limit:
                log.append(now)
                return 0.0
            return max(0.001, log[-limit] + window_s - now)

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        now = time.time()
        with self._lock:
            held = self._leases.get(name)
            if held is not None and held[1] > now:
                return None
            token = uuid.uuid4().hex
            self._leases[name] = (token, now + ttl_s)
            return token

    def renew_lease(self, name: str, token: str, ttl_s: float) -> bool:
        with self._lock:
            held = self._leases.get(name)
            if held is None or held[0] != token:
                return False
            self._leases[name] = (token, time.time() + ttl_s)
            return True

    def release_lease(self, name: str, token: str) -> None:
        with self._lock:
            held = self._leases.get(name)
            if held is not None and held[0] == token:
                del self._leases[name]

    def close(self) -> None:
        pass


def _size(entry: Entry) -> int:
    # A planted entry's value may not be bytes (the core removes it as corrupt): count what it has.
    value = entry.value
    return len(entry.key) + (len(value) if isinstance(value, (bytes, bytearray, memoryview, str)) else 0)
