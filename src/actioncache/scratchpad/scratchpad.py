"""The session scratchpad: a key-object store an LLM writes to instead of its context window.

Why it is built this way:

* Items are ordinary store entries (``scratch:{session}:{storageKey}``, value = the core codec's
  plain-JSON bytes), so every backend works and ``actioncache get`` can show one.
* Each session has one index entry (``scratch-session:{session}``) holding every item's metadata.
  ``list`` and the quota check read that one entry instead of the items or a scan of the store.
* Writers of one session take a cross-process store lease around "check quota, put index, put
  item" (bounded wait), so two writers can never both squeeze past the quota. The index is put
  first, so it always covers every stored item (a crash can only make it over-count), and it is
  reconciled with the keys really stored before any quota refusal and whenever it is missing or
  corrupt.
* Readers take no lock: a store ``put`` is an atomic upsert, so a concurrent reader sees an
  update whole or not at all.
* Isolation: every lookup is built from this pad's own session id, and a key whose session part
  is another session's is refused before the store is asked, so no key reaches another session.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

from ..errors import StoreError
from ..stores.base import CacheStore, Entry, escape_glob, open_store
from .cleanup import DEFAULT_ORPHAN_AGE_S, cleanup_orphans
from .errors import (
    CorruptItemError,
    InvalidKeyError,
    ItemNotFoundError,
    ItemTooLargeError,
    QuotaExceededError,
    ScratchpadBusyError,
    store_guard,
)
from .items import (
    JSON_FORMAT,
    StorageKey,
    check_custom_metadata,
    check_part_id,
    check_session_id,
    decode_data,
    encode_data,
    item_metadata,
    item_store_key,
    new_id,
    parse_key,
    public_metadata,
    session_store_key,
    truncate_description,
)

log = logging.getLogger("actioncache.scratchpad")

MB = 1024 * 1024
DEFAULT_ITEM_LIMIT = 5 * MB
DEFAULT_SESSION_QUOTA = 50 * MB
# Backstop expiry on items and indexes: if nobody ever calls end_session or cleanup_orphans,
# the core's expiry cleanup (cache.cleanup / `actioncache cleanup`) still removes them.
DEFAULT_RETENTION_S = 7 * 24 * 3600.0
ITEM_TYPE = "scratchpad_item"
SESSION_TYPE = "scratchpad_session"


def _human(n: float) -> str:
    return f"{n / MB:.2f} MB" if n >= 100 * 1024 else f"{n / 1024:.1f} KB"


class Scratchpad:
    """One session's scratchpad over any :class:`CacheStore` (or store URL).

    ``write``/``update``/``list``/``delete`` return metadata only; ``read`` is the one call that
    returns data. Errors are :class:`~actioncache.scratchpad.errors.ScratchpadError` subclasses
    whose messages tell an LLM what to do; the tool face (:meth:`handle_tool_call`) turns them
    into JSON answers and never raises.
    """

    def __init__(
        self,
        store: CacheStore | str | None,
        session_id: str,
        item_limit_bytes: int = DEFAULT_ITEM_LIMIT,
        session_quota_bytes: int = DEFAULT_SESSION_QUOTA,
        *,
        retention_s: float = DEFAULT_RETENTION_S,
        lease_ttl_s: float = 15.0,
        lease_wait_s: float = 10.0,
    ) -> None:
        self.store: CacheStore = open_store(store)
        self.session_id = check_session_id(session_id)
        if item_limit_bytes <= 0 or session_quota_bytes <= 0:
            raise ValueError("item_limit_bytes and session_quota_bytes must be positive")
        self.item_limit_bytes = int(item_limit_bytes)
        self.session_quota_bytes = int(session_quota_bytes)
        self.retention_s = float(retention_s)
        self.lease_ttl_s = float(lease_ttl_s)
        self.lease_wait_s = float(lease_wait_s)
        self._prefix = item_store_key(self.session_id, "")
        self._index_key = session_store_key(self.session_id)

    def __repr__(self) -> str:
        return f"Scratchpad(session_id={self.session_id!r}, store={getattr(self.store, 'url', self.store)!r})"

    # --- keys -------------------------------------------------------------------------------

    def _own_key(self, key: Any) -> StorageKey:
        parsed = parse_key(key)
        if parsed.session_id != self.session_id:
            # Refused before any lookup: this session cannot learn whether the key exists.
            raise ItemNotFoundError(
                f"no item {key} in this session (the key names session {parsed.session_id!r}; "
                "only this session's items are visible). Call list to see the keys you can use."
            )
        return parsed

    def _not_found(self, key: StorageKey) -> ItemNotFoundError:
        return ItemNotFoundError(
            f"no item {key} in this session; call list to see the stored keys "
            "(if list still shows this one, its data was lost: delete it)"
        )

    # --- the session index ------------------------------------------------------------------

    def _read_index(self) -> dict[str, dict[str, Any]] | None:
        """The session index, or None when it is missing or unreadable (then the caller reconciles)."""
        entry = self.store.get(self._index_key)
        if entry is None:
            return None
        try:
            items = json.loads(entry.value[1:].decode("utf-8"))["items"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            items = None
        if not isinstance(items, dict):
            log.warning("scratchpad index of session %s is corrupt; rebuilding it from the items", self.session_id)
            return None
        return items

    def _store_keys(self) -> list[str]:
        """Every store key under this session's prefix, well-formed or not."""
        return self.store.find(pattern=escape_glob(self._prefix) + "*")

    def _stored_keys(self) -> list[str]:
        """The storage keys of this session's items (a foreign entry under the prefix is ignored)."""
        out = []
        for store_key in self._store_keys():
            key = store_key[len(self._prefix):]
            try:
                if parse_key(key).session_id == self.session_id:
                    out.append(key)
            except InvalidKeyError:
                continue
        return out

    def _metadata_of_entry(self, storage_key: str) -> dict[str, Any] | None:
        """Rebuild an item's metadata from its own entry (used only to repair the index)."""
        entry = self.store.get(item_store_key(self.session_id, storage_key))
        if entry is None or entry.is_expired(time.time()):
            return None
        meta = public_metadata(entry.metadata)
        if "storageKey" not in meta or "dataSize" not in meta:
            key = parse_key(storage_key)
            meta = item_metadata(key, "(metadata unreadable)", max(0, len(entry.value) - 1),
                                 entry.created_at, entry.created_at, None)
            meta["corrupt"] = True
        if entry.expires_at is not None:
            meta["_expires"] = entry.expires_at
        return meta

    def _current_items(self, reconcile: bool = False) -> dict[str, dict[str, Any]]:
        """This session's items and their metadata (with the private ``_expires``).

        Normally one read of the index: O(1) store calls however big the store is. With
        ``reconcile`` (or when the index is missing or corrupt) it is checked against the keys
        really stored, a prefix scan that on some backends walks the whole store: that repairs the
        index after a crash between its put and the item's, or after items were removed behind it.
        """
        index = self._read_index()
        now = time.time()
        if index is not None and not reconcile:
            return {k: m for k, m in index.items() if float(m.get("_expires") or now + 1) > now}
        index = index or {}
        items: dict[str, dict[str, Any]] = {}
        for key in self._stored_keys():
            meta = index.get(key) or self._metadata_of_entry(key)
            if meta is not None and float(meta.get("_expires") or now + 1) > now:
                items[key] = meta
        return items

    def _write_index(self, items: Mapping[str, Mapping[str, Any]], now: float) -> None:
        # An empty session keeps an empty index: a missing one would make the next write scan.
        value = JSON_FORMAT + json.dumps({"items": items}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self.store.put(Entry(
            self._index_key,
            value,
            {
                "_cache_type": SESSION_TYPE,
                "_scratch_session": self.session_id,
                "_scratch_last_access": now,
                "_scratch_bytes": sum(int(m.get("dataSize", 0)) for m in items.values()),
                "_scratch_items": len(items),
            },
            now,
            now + self.retention_s,
        ))

    @contextmanager
    def _session_lock(self) -> Iterator[None]:
        """Cross-process mutual exclusion for this session's writers, with a bounded wait."""
        name = f"scratchpad:{self.session_id}"
        deadline = time.monotonic() + self.lease_wait_s
        delay = 0.002
        while True:
            token = self.store.acquire_lease(name, self.lease_ttl_s)
            if token is not None:
                break
            if time.monotonic() >= deadline:
                raise ScratchpadBusyError(
                    f"another writer kept session {self.session_id!r} busy for over {self.lease_wait_s:.0f}s; "
                    "retry the call in a moment"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            try:
                self.store.release_lease(name, token)
            except (StoreError, OSError):
                pass  # the lease expires on its own after lease_ttl_s

    # --- writes -------------------------------------------------------------------------------

    def _check_item_size(self, size: int) -> None:
        if size > self.item_limit_bytes:
            raise ItemTooLargeError(
                f"data is {_human(size)} as JSON, over the {_human(self.item_limit_bytes)} limit per item. "
                "Split it into chunks under the limit and write each chunk as its own item "
                "(e.g. descriptions 'part 1/3', 'part 2/3', ...), or store a shorter summary."
            )

    def _check_quota(self, items: Mapping[str, Mapping[str, Any]], key: str, size: int) -> None:
        used = sum(int(m.get("dataSize", 0)) for k, m in items.items() if k != key)
        if used + size > self.session_quota_bytes:
            raise QuotaExceededError(
                f"session quota exceeded: this write needs {_human(size)} but the session already holds "
                f"{_human(used)} of its {_human(self.session_quota_bytes)} quota in {len(items)} items. "
                "Delete items you no longer need (list, then delete), merge small items into one, "
                "or store a shorter version; nothing was written."
            )

    def _put_item(self, key: StorageKey, data: bytes, meta: dict[str, Any], now: float) -> None:
        stored = dict(meta)
        stored.update({"_cache_type": ITEM_TYPE, "_scratch_session": self.session_id, "_scratch_updated": now})
        self.store.put(Entry(item_store_key(self.session_id, str(key)), JSON_FORMAT + data, stored,
                             now, now + self.retention_s))

    def _encode(self, data: Any) -> bytes:
        encoded = encode_data(data)
        self._check_item_size(len(encoded))
        return encoded

    def _commit(
        self,
        op: str,
        key: StorageKey,
        encoded: bytes,
        build_metadata: Callable[[dict[str, Any] | None, float], dict[str, Any]],
    ) -> dict[str, Any]:
        """Under the session lock: check the quota, put the index, then the item.

        ``build_metadata(old_metadata_or_None, now)`` makes the new item's metadata (and may refuse).
        The index goes first so that it always covers every stored item: a crash in between leaves
        an entry without an item, which only over-counts the quota (never lets it be passed) and is
        dropped by the reconcile that runs before any refusal.
        """
        with store_guard(op), self._session_lock():
            now = time.time()
            items = self._current_items()
            old = items.get(str(key))
            meta = build_metadata(old, now)
            try:
                self._check_quota(items, str(key), len(encoded))
            except QuotaExceededError:
                items = self._current_items(reconcile=True)
                self._check_quota(items, str(key), len(encoded))
            before = dict(items)
            items[str(key)] = {**meta, "_expires": now + self.retention_s}
            self._write_index(items, now)
            try:
                self._put_item(key, encoded, meta, now)
            except BaseException:
                self._write_index(before, now)  # best effort; a failing store may refuse this too
                raise
        return dict(meta)

    def write(
        self,
        data: Any,
        description: str,
        task_id: str | None = None,
        turn_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store ``data`` (any JSON value) as a new item; returns its metadata, never the data.

        Writing to a key that exists (same task and turn ids) replaces it: last write wins.
        """
        key = StorageKey(
            self.session_id,
            check_part_id(task_id, "task_id") if task_id is not None else new_id(),
            check_part_id(turn_id, "turn_id") if turn_id is not None else new_id(),
        )
        description = truncate_description(description)
        custom = check_custom_metadata(metadata)
        encoded = self._encode(data)
        return self._commit("write", key, encoded,
                            lambda old, now: item_metadata(key, description, len(encoded), now, now, custom))

    def update(
        self,
        key: str,
        data: Any,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Replace an item's data (FR-013), keeping its session, task and turn ids.

        The description and custom metadata stay unless new ones are given; ``timestamp`` becomes
        the time of this update and ``createdAt`` keeps the first write's time.
        """
        parsed = self._own_key(key)
        new_description = truncate_description(description) if description is not None else None
        custom = check_custom_metadata(metadata)
        encoded = self._encode(data)

        def updated(old: dict[str, Any] | None, now: float) -> dict[str, Any]:
            if old is None:
                raise ItemNotFoundError(f"no item {parsed} in this session to update; use write to create it")
            created = _parse_iso(old.get("createdAt") or old.get("timestamp")) or now
            return item_metadata(parsed, new_description or str(old.get("description", "")), len(encoded), now,
                                 created, custom if metadata is not None else old.get("metadata"))

        return self._commit("update", parsed, encoded, updated)

    def delete(self, key: str) -> dict[str, Any]:
        """Remove one item (a corrupt one too); returns the deleted item's metadata."""
        parsed = self._own_key(key)
        with store_guard("delete"), self._session_lock():
            now = time.time()
            items = self._current_items()
            deleted = self.store.delete(item_store_key(self.session_id, str(parsed)))
            meta = items.pop(str(parsed), None)
            if not deleted and meta is None:
                raise self._not_found(parsed)
            self._write_index(items, now)
        return public_metadata(meta or {"storageKey": str(parsed)})

    def end_session(self) -> int:
        """Delete every item of this session and its index (FR-012); returns how many items went."""
        with store_guard("end_session"), self._session_lock():
            keys = self._store_keys()
            deleted = self.store.delete_many(keys) if keys else 0
            self.store.delete(self._index_key)
        return deleted

    # --- reads ------------------------------------------------------------------------------

    def read(self, key: str) -> dict[str, Any]:
        """The one call that returns data: ``{**metadata, "data": value}`` (FR-006)."""
        parsed = self._own_key(key)
        with store_guard("read"):
            entry = self.store.get(item_store_key(self.session_id, str(parsed)))
        if entry is None:
            raise self._not_found(parsed)
        try:
            data = decode_data(entry.value, str(parsed))
        except CorruptItemError:
            log.warning("scratchpad item %s of session %s does not decode", parsed, self.session_id)
            raise
        meta = public_metadata(entry.metadata)
        meta.setdefault("storageKey", str(parsed))
        meta["data"] = data
        return meta

    def list(self) -> list[dict[str, Any]]:
        """Every item's metadata, oldest first, without loading any data (FR-007)."""
        with store_guard("list"):
            items = self._current_items()
        public = (public_metadata(m) for m in items.values())
        return sorted(public, key=lambda m: (m.get("createdAt") or m.get("timestamp") or "", m["storageKey"]))

    def usage(self) -> dict[str, Any]:
        """How much of the quota this session uses."""
        items = self.list()
        used = sum(int(m.get("dataSize", 0)) for m in items)
        return {
            "sessionId": self.session_id,
            "items": len(items),
            "usedBytes": used,
            "quotaBytes": self.session_quota_bytes,
            "itemLimitBytes": self.item_limit_bytes,
        }

    def cleanup_orphans(self, older_than: float | _dt.timedelta = DEFAULT_ORPHAN_AGE_S) -> dict[str, Any]:
        """Store-wide: delete the items of every session idle longer than ``older_than``."""
        return cleanup_orphans(self.store, older_than)

    def handle_tool_call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run one LLM tool call against this pad; returns the JSON answer (never raises)."""
        from .tools import handle_tool_call

        return handle_tool_call(self, name, arguments)


def _parse_iso(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
