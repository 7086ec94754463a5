"""An in-process store: a dict, a lock, and a heap on the expiry time.

``memory://`` opens a fresh private store; ``memory://NAME`` opens the process-wide store of
that name, so two ``Cache`` objects in one process can share one.
"""

from __future__ import annotations

import heapq
import threading
import time
import uuid
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

from .base import Entry, glob_literal_prefix, select_keys

_NAMED: dict[str, "MemoryStore"] = {}
_NAMED_LOCK = threading.Lock()


class MemoryStore:
    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._entries: dict[str, Entry] = {}
        # (expires_at, key, created_at): stale heap items are skipped when popped.
        self._expiry_heap: list[tuple[float, str, float]] = []
        self._counters: dict[str, float] = {}
        self._leases: dict[str, tuple[str, float]] = {}
        self._lock = threading.RLock()

    @classmethod
    def from_url(cls, url: str, **_: Any) -> "MemoryStore":
        name = urlsplit(url).netloc + urlsplit(url).path.strip("/")
        if not name:
            return cls(url)
        with _NAMED_LOCK:
            store = _NAMED.get(name)
            if store is None:
                store = _NAMED[name] = cls(url)
            return store

    def get(self, key: str) -> Entry | None:
        return self._entries.get(key)

    def put(self, entry: Entry) -> None:
        with self._lock:
            self._entries[entry.key] = entry
            if isinstance(entry.expires_at, (int, float)) and entry.expires_at == entry.expires_at:
                heapq.heappush(self._expiry_heap, (entry.expires_at, entry.key, entry.created_at))

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._entries.pop(key, None) is not None

    def delete_many(self, keys: Iterable[str]) -> int:
        with self._lock:
            return sum(self._entries.pop(k, None) is not None for k in keys)

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
                    del self._entries[key]
                    deleted += 1
        return deleted

    def count(self) -> int:
        return len(self._entries)

    def size_bytes(self) -> int:
        return sum(len(e.value) for e in list(self._entries.values()))

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        with self._lock:
            for name, delta in deltas.items():
                self._counters[name] = self._counters.get(name, 0) + delta

    def counters(self, prefix: str = "") -> dict[str, float]:
        with self._lock:
            return {k: v for k, v in self._counters.items() if k.startswith(prefix)}

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        now = time.time()
        with self._lock:
            held = self._leases.get(name)
            if held is not None and held[1] > now:
                return None
            token = uuid.uuid4().hex
            self._leases[name] = (token, now + ttl_s)
            return token

    def release_lease(self, name: str, token: str) -> None:
        with self._lock:
            held = self._leases.get(name)
            if held is not None and held[0] == token:
                del self._leases[name]

    def close(self) -> None:
        pass
