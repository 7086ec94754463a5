"""The session scratchpad: a key-object store an LLM writes to instead of its context window.

Why it is built this way:

* Items are ordinary store entries (``scratch:{session}:{storageKey}``, value = the core codec's
  plain-JSON bytes), so every backend works and ``actioncache get`` can show one.
* Each item has its own small index entry (``scratch-index:{session}:{storageKey}``) holding its
  metadata, so a write puts two entries and never rewrites anything that grows with the session:
  it costs the same at item 10 and item 10,000. ``list`` reads the index entries, never the data.
* The quota counts every stored byte (data, metadata, keys, index entry) in one store counter per
  session, added to atomically (``add_counters``): a writer reserves its bytes before the item
  lands, so the quota holds without relying on the session lease, even for a writer that stalls
  past it. The index entry goes first and is re-checked after the item's put (a fencing check), and
  before a refusal the counter is recounted from the index, repairing what expiry or a crash left.
* The session marker (``scratch-session:{session}``) says when the session was last used; writes
  and reads (at most once a minute) refresh it. Items and index entries have no fixed expiry: a
  session lives as long as it is used (a 7-day expiry counted from each write deleted the week-1
  notes of a session used every day), and an idle one goes with the orphan sweep, and writers sweep for orphans on their own, at most
  hourly across every process (a store lease that is left to expire is the rate limit).
* Readers take no lock: a store ``put`` is an atomic upsert, so a concurrent reader sees an
  update whole or not at all.
* Isolation: every lookup is built from this pad's own session id, and a key whose session part
  is another session's is refused before the store is asked, so no key reaches another session.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import json
import logging
import math
import time
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

from ..errors import LeaseLostError
from ..records import Records
from ..stores.base import CacheStore, Entry, entry_problem, open_store
from .cleanup import DEFAULT_ORPHAN_AGE_S, DEFAULT_SWEEP_S, cleanup_orphans, forget_session
from .errors import (
    CorruptItemError,
    InvalidArgumentError,
    InvalidKeyError,
    ItemNotFoundError,
    ItemTooLargeError,
    QuotaExceededError,
    ScratchpadBusyError,
    store_guard,
)
from .items import (
    JSON_FORMAT,
    ORPHAN_SWEEP_LEASE,
    StorageKey,
    check_custom_metadata,
    check_part_id,
    check_session_id,
    compact_json,
    decode_data,
    encode_data,
    index_store_key,
    item_metadata,
    item_store_key,
    new_id,
    own_key_pattern,
    parse_key,
    public_metadata,
    session_lease,
    session_store_key,
    truncate_description,
    usage_counter,
)
from .listing import (
    DEFAULT_LIST_BUDGET,
    MIN_LIST_BUDGET,
    SCAN_LIMIT,
    ItemPage,
    ListFilter,
    decode_cursor,
    encode_cursor,
    walk,
)

log = logging.getLogger("actioncache.scratchpad")

MB = 1024 * 1024
DEFAULT_ITEM_LIMIT = 5 * MB
DEFAULT_SESSION_QUOTA = 50 * MB
# How long a session's marker outlives its last use (the core's expiry cleanup then removes the
# marker, and the next orphan sweep the session's items, judged by their write times). Items and
# index entries themselves never expire on a date: a session in use keeps them.
DEFAULT_RETENTION_S = 7 * 24 * 3600.0
# What the session marker holds: 3 = items without a fixed expiry (2 had a 7-day expiry per write).
_LAYOUT = 3
ITEM_TYPE = "scratchpad_item"
INDEX_TYPE = "scratchpad_index"
SESSION_TYPE = "scratchpad_session"
# A session marks itself used at most this often (reads included), so reading costs no write each time.
_TOUCH_EVERY_S = 60.0
# Bytes counted per item beyond its keys, value and public metadata: the two entries' type tags,
# timestamps and the core's bookkeeping fields (records.Records: _cache_type, _cache_created_at and
# _cache_expires_at as ISO text; _cache_key, a copy of each key, is counted with the keys).
_ENTRY_OVERHEAD = 460
# store -> when this process may next try an orphan sweep on it.
_next_sweep: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


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
        orphan_age_s: float = DEFAULT_ORPHAN_AGE_S,
        orphan_sweep_s: float | None = DEFAULT_SWEEP_S,
        list_budget_bytes: int = DEFAULT_LIST_BUDGET,
        keep_idle_s: float | None = None,
    ) -> None:
        self.store: CacheStore = open_store(store)
        self.records = Records(self.store)
        self.session_id = check_session_id(session_id)
        if item_limit_bytes <= 0 or session_quota_bytes <= 0:
            raise ValueError("item_limit_bytes and session_quota_bytes must be positive")
        self.item_limit_bytes = int(item_limit_bytes)
        if int(list_budget_bytes) < MIN_LIST_BUDGET:
            raise ValueError(f"list_budget_bytes must be at least {MIN_LIST_BUDGET}: one item's view is up to 500 "
                             "bytes and a list answer's envelope up to about 1 KB")
        # What one scratchpad_list tool answer may hold, in bytes of JSON (the Python list() has none
        # unless asked).
        self.list_budget_bytes = int(list_budget_bytes)
        self.session_quota_bytes = int(session_quota_bytes)
        self.retention_s = float(retention_s)
        self.lease_ttl_s = float(lease_ttl_s)
        self.lease_wait_s = float(lease_wait_s)
        self._prefix = item_store_key(self.session_id, "")
        self._own_key_re = own_key_pattern(self.session_id)
        self._index_key = session_store_key(self.session_id)
        self.orphan_age_s = float(orphan_age_s)
        self.orphan_sweep_s = None if orphan_sweep_s is None else float(orphan_sweep_s)
        # A session kept longer than the sweep's age when idle (a named MCP session): written in the
        # marker, so every process's sweep honours it.
        self.keep_idle_s = None if keep_idle_s is None else float(keep_idle_s)
        self._touched_until = 0.0
        self._layout_checked = False

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

    # --- the index: one small entry per item ----------------------------------------------

    def _index_prefix(self) -> str:
        return index_store_key(self.session_id, "")

    def _store_keys(self) -> list[str]:
        """Every store key under this session's item prefix, well-formed or not."""
        return self.records.find(self._prefix)

    def _storage_keys(self, filters: ListFilter) -> list[str]:
        """This session's indexed storage keys that pass the task and turn filters, sorted; one
        prefix scan, nothing read. (An item whose index entry a failure lost is indexed again by
        the next recount: usage() or a refusal.)"""
        own = f"{self.session_id}_" + (f"{filters.task_id}_" if filters.task_id is not None else "")
        keys = (k[len(self._index_prefix()):] for k in self.records.find(self._index_prefix() + own))
        parsed = ((key, self._own_key_re.fullmatch(key)) for key in keys)
        return sorted(key for key, match in parsed if match is not None and filters.matches_key(*match.groups()))

    def _index_entry(self, storage_key: str) -> dict[str, Any] | None:
        """One item's index metadata (with the private ``_bytes``/``_expires``), or None.

        A missing or unreadable index entry is rebuilt from the item's own entry, so a damaged
        index costs one extra read, never a failing call.
        """
        entry = self.store.get(index_store_key(self.session_id, storage_key))
        meta = _index_meta(entry)
        if meta is None:
            meta = self._metadata_of_entry(storage_key)
        if meta is None or float(meta.get("_expires") or time.time() + 1) <= time.time():
            return None
        return meta

    def _metadata_of_entry(self, storage_key: str) -> dict[str, Any] | None:
        """Rebuild an item's index metadata from its own entry (repairs a lost or damaged index entry)."""
        entry = self.store.get(item_store_key(self.session_id, storage_key))
        if entry is None or entry_problem(entry) is not None or entry.is_expired(time.time()):
            return None
        meta = public_metadata(entry.metadata)
        if "storageKey" not in meta or "dataSize" not in meta:
            key = parse_key(storage_key)
            meta = item_metadata(key, "(metadata unreadable)", max(0, len(entry.value) - 1),
                                 entry.created_at, entry.created_at, None)
            meta["corrupt"] = True
        meta["_bytes"] = self._stored_size(storage_key, len(entry.value), meta)
        if entry.expires_at is not None:
            meta["_expires"] = entry.expires_at
        return meta

    def _current_items(self) -> dict[str, dict[str, Any]]:
        """This session's items (storage key -> index metadata): the index entries, plus any item
        whose index entry a store failure or a foreign writer lost (marked ``_unindexed``). Only a
        recount (usage, a refusal) pays this scan; it puts such items back in the index."""
        now = time.time()
        items: dict[str, dict[str, Any]] = {}
        index_keys = self.records.find(self._index_prefix())
        for index_key in index_keys:
            storage_key = index_key[len(self._index_prefix()):]
            meta = _index_meta(self.store.get(index_key))
            if meta is None:
                meta = self._metadata_of_entry(storage_key)
            if meta is not None and float(meta.get("_expires") or now + 1) > now:
                items[storage_key] = meta
        for store_key in self._store_keys():
            storage_key = store_key[len(self._prefix):]
            if storage_key in items or not _is_own_key(storage_key, self.session_id):
                continue
            meta = self._metadata_of_entry(storage_key)
            if meta is not None:
                items[storage_key] = {**meta, "_unindexed": True}
        return items

    def _stored_size(self, storage_key: str, value_bytes: int, meta: Mapping[str, Any]) -> int:
        """Every byte an item occupies in the store: its key, value and metadata, and its index
        entry's key, value and metadata (what the quota counts; a backend's own overhead aside)."""
        public = compact_json(public_metadata(meta)).encode("utf-8")
        keys = len(item_store_key(self.session_id, storage_key)) + len(index_store_key(self.session_id, storage_key))
        return 2 * keys + value_bytes + 2 * len(public) + _ENTRY_OVERHEAD

    def touch(self) -> None:
        """Mark the session as used now (a store write), so no orphan sweep takes it for idle:
        ``actioncache mcp --session NAME`` does it at start, before its own sweep."""
        with store_guard("touch"):
            self._touch(time.time(), force=True)

    def _touch(self, now: float, force: bool = False) -> None:
        """Mark the session as used (reads count too); at most once per ``_TOUCH_EVERY_S`` per pad."""
        if not force and now < self._touched_until:
            return
        if not self._layout_checked:
            self._upgrade_layout()
        keep_idle_s = self.keep_idle_s
        if keep_idle_s is None:
            keep_idle_s = self._kept_idle_s()
        marker: dict[str, Any] = {"_scratch_session": self.session_id, "_scratch_last_access": now}
        if keep_idle_s is not None:
            marker["_scratch_keep_idle_s"] = keep_idle_s
        ttl = max(self.retention_s, keep_idle_s or 0.0)
        self.records.put_raw(self._index_key, JSON_FORMAT + b'{"layout":%d}' % _LAYOUT, kind=SESSION_TYPE,
                             ttl_s=ttl, metadata=marker, now=now)
        self._touched_until = now + _TOUCH_EVERY_S

    def _kept_idle_s(self) -> float | None:
        """How long the session asked to be kept when idle, as its marker says: a pad made without
        ``keep_idle_s`` (a plain ``Scratchpad(store, id)`` reading a named MCP session) rewrites the
        marker when it touches the session, and must carry that request on, not drop it (the session
        would then go with the next 24-hour sweep). The protection belongs to the session, not to the
        process that happens to use it."""
        marker = self.store.get(self._index_key)
        if marker is None:
            return None
        kept = marker.metadata.get("_scratch_keep_idle_s")
        if isinstance(kept, (int, float)) and not isinstance(kept, bool) and math.isfinite(kept) and kept > 0:
            return float(kept)
        return None

    def _upgrade_layout(self) -> None:
        """Once per pad: a session written by an older version (marker layout 2) has items and index
        entries that expire 7 days after their write; they lose that expiry here, so a session in use
        never loses an item to a date."""
        self._layout_checked = True
        marker = self.store.get(self._index_key)
        if marker is None or bytes(marker.value) != JSON_FORMAT + b'{"layout":2}':
            return
        now = time.time()
        for key in self.records.find(self._prefix) + self.records.find(self._index_prefix()):
            entry = self.store.get(key)
            if entry is not None and entry.expires_at is not None and not entry.is_expired(now):
                self.records.write(entry.replace(expires_at=None))
        for key in self.records.find(self._index_prefix()):
            entry = self.store.get(key)
            meta = _index_meta(entry)
            if entry is not None and meta is not None and "_expires" in meta:
                meta.pop("_expires")
                value = JSON_FORMAT + compact_json(meta).encode("utf-8")
                self.records.write(entry.replace(value=value))

    # --- the quota: one atomic counter per session --------------------------------------------

    def _counter(self) -> float | None:
        """The session's byte counter as stored, or None when it cannot be a byte count (negative,
        fractional, not a finite number): damaged, like a bad marker or index entry, and recounted."""
        name = usage_counter(self.session_id)
        used = self.store.counters(name).get(name, 0.0)
        if not isinstance(used, (int, float)) or isinstance(used, bool) or not math.isfinite(used):
            return None
        return float(used) if used >= 0 and float(used).is_integer() else None

    def _used_bytes(self) -> float:
        """The counter, recounted first when it is damaged: a planted -1e12 turned the quota off
        (every write fit) and showed the model a negative usedBytes. The caller holds the lock."""
        used = self._counter()
        if used is None:
            log.warning("scratchpad byte counter of session %s is damaged; recounting", self.session_id)
            return float(self._recount("")[0])
        return used

    def _reserve(self, delta: int) -> None:
        """Add ``delta`` bytes to the session's counter; past the quota, give them back and refuse.

        The counter is added to atomically by every writer, so the check holds without any lock:
        a writer that stalls past its lease has already put its index entry (which a recount
        sees) or not yet reserved anything, and two writers never both squeeze past the quota.
        """
        if delta <= 0:
            return
        name = usage_counter(self.session_id)
        self.store.add_counters({name: delta})
        used = self._used_bytes()
        if used > self.session_quota_bytes:
            self.store.add_counters({name: -delta})
            raise self._quota_error(delta, used - delta)

    def _quota_error(self, adds: int, holds: float) -> QuotaExceededError:
        """The refusal of a write that adds ``adds`` bytes to a session holding ``holds``: the
        same two numbers ``usage()["usedBytes"]`` and the tool answers show, so the model can check
        ``holds + adds > quota`` byte for byte."""
        holds = int(holds)
        return QuotaExceededError(
            f"session quota exceeded: this write adds {adds:,} bytes ({_human(adds)}) but the session already "
            f"holds {holds:,} of its {self.session_quota_bytes:,}-byte quota ({_human(holds)} of "
            f"{_human(self.session_quota_bytes)}; data, metadata and keys all count, as usedBytes shows). "
            "Delete items you no longer need (list, then delete), merge small items into one, "
            "or store a shorter version; nothing was written.",
            {"usedBytes": holds, "neededBytes": adds, "quotaBytes": self.session_quota_bytes},
        )

    def _recount(self, own: str) -> tuple[int, dict[str, dict[str, Any]]]:
        """Set the counter to the bytes of the live index entries (this write's included) and
        return it with those items: repairs what expiry, a crash or a hand-removed item left
        counted. Runs before a refusal and in usage() (under the session lock, as writes), never
        on a write that fits, so a write costs the same at item 10 and item 10,000."""
        stored = set(self._store_keys())
        counted: dict[str, dict[str, Any]] = {}
        for storage_key, meta in self._current_items().items():
            if meta.pop("_unindexed", False):
                # An item whose index entry was lost: indexed again, so list shows it again.
                self._put_index(parse_key(storage_key), meta, time.time())
                counted[storage_key] = meta
            elif storage_key == own or item_store_key(self.session_id, storage_key) in stored:
                counted[storage_key] = meta
            else:
                # An index entry whose item is gone (removed by hand, lost in a crash): dropped. A
                # writer stalled between its index entry and its item finds that out (_confirm).
                self.store.delete(index_store_key(self.session_id, storage_key))
        actual = sum(int(meta.get("_bytes", 0)) for meta in counted.values())
        name = usage_counter(self.session_id)
        current = self.store.counters(name).get(name, 0.0)
        if isinstance(current, (int, float)) and not isinstance(current, bool) and math.isfinite(current):
            self.store.add_counters({name: actual - current})
        return actual, counted

    def _release(self, delta: int) -> None:
        if delta > 0:
            self.store.add_counters({usage_counter(self.session_id): -delta})

    # --- the session lock -------------------------------------------------------------------

    @contextmanager
    def _session_lock(self) -> Iterator[None]:
        """Cross-process mutual exclusion for this session's writers, with a bounded wait.

        It keeps two writers of one key apart; the quota does not depend on it (see _reserve).
        """
        # Short waits between tries (2 ms doubling to 50 ms): writers of one session queue often.
        with self.records.lease(session_lease(self.session_id), self.lease_ttl_s, self.lease_wait_s,
                                first_delay_s=0.002, max_delay_s=0.05, strict=True) as held:
            if not held:
                raise ScratchpadBusyError(
                    f"another writer kept session {self.session_id!r} busy for over {self.lease_wait_s:.0f}s; "
                    "retry the call in a moment"
                )
            try:
                yield
            except LeaseLostError as exc:  # every write under the lock is fenced (records.Records.lease)
                raise ScratchpadBusyError(
                    f"this write was not stored: the writer was paused past its session lease "
                    f"({self.lease_ttl_s:.0f}s) and another writer took session {self.session_id!r}; retry the call"
                ) from exc

    # --- writes -------------------------------------------------------------------------------

    def _check_item_size(self, size: int) -> None:
        if size > self.item_limit_bytes:
            raise ItemTooLargeError(
                f"data is {_human(size)} as JSON, over the {_human(self.item_limit_bytes)} limit per item. "
                "Split it into chunks under the limit and write each chunk as its own item "
                "(e.g. descriptions 'part 1/3', 'part 2/3', ...), or store a shorter summary."
            )

    def _put_item(self, key: StorageKey, data: bytes, meta: dict[str, Any], now: float) -> None:
        stored = {**meta, "_scratch_session": self.session_id, "_scratch_updated": now}
        self.records.put_raw(item_store_key(self.session_id, str(key)), JSON_FORMAT + data, kind=ITEM_TYPE,
                             metadata=stored, now=now)

    def _put_index(self, key: StorageKey, meta: Mapping[str, Any], now: float) -> None:
        value = JSON_FORMAT + compact_json(dict(meta)).encode("utf-8")
        self.records.put_raw(index_store_key(self.session_id, str(key)), value, kind=INDEX_TYPE,
                             metadata={"_scratch_session": self.session_id}, now=now)

    def _confirm(self, key: StorageKey, meta: Mapping[str, Any], size: int, now: float) -> None:
        """The fencing check after the item is put: if this writer stalled past its lease and a
        recount dropped its index entry meanwhile, its bytes are no longer counted: count them
        again, or take the item back when they no longer fit. One read per write."""
        if self.store.get(index_store_key(self.session_id, str(key))) is not None:
            return
        self._put_index(key, {**meta, "_bytes": size, "_written": now}, now)
        try:
            self._reserve(size)
        except QuotaExceededError:
            self.store.delete(item_store_key(self.session_id, str(key)))
            self.store.delete(index_store_key(self.session_id, str(key)))
            raise

    def _undo_index(self, key: StorageKey, old: Mapping[str, Any] | None) -> None:
        """Put back what a refused or failed write changed in the index (best effort). A new item
        goes with its index entry: a put that failed may still have landed, and an item left
        without an index entry would be missing from list until the next recount."""
        try:
            if old is not None:
                self._put_index(key, old, time.time())
            else:
                self.store.delete(item_store_key(self.session_id, str(key)))
                self.store.delete(index_store_key(self.session_id, str(key)))
        except Exception as exc:  # noqa: BLE001 - a failing store may refuse this too; list repairs it
            log.debug("undoing the index entry of %s failed: %s", key, exc)

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
        """Reserve the bytes, put the item's index entry, then the item: a constant number of
        store calls at item 10 or item 10,000.

        ``build_metadata(old_metadata_or_None, now)`` makes the new item's metadata (and may refuse).
        The index entry goes first so that it always covers the stored item; a crash in between
        leaves an index entry without an item, which list drops and the quota over-counts (never
        lets it be passed).
        """
        with store_guard(op), self._session_lock():
            now = time.time()
            old = self._index_entry(str(key))
            meta = build_metadata(old, now)
            size = self._stored_size(str(key), len(encoded) + 1, meta)
            old_size = int(old.get("_bytes", 0)) if old else 0
            # The index entry goes before the reservation, so a recount by another writer while
            # this one stalls still sees these bytes.
            self._put_index(key, {**meta, "_bytes": size, "_written": now}, now)
            try:
                try:
                    self._reserve(size - old_size)
                except QuotaExceededError:
                    used, _ = self._recount(str(key))  # counts this write's new size, not its old one
                    if used > self.session_quota_bytes:
                        self._release(size - old_size)
                        raise self._quota_error(size - old_size, used - size + old_size) from None
                self._put_item(key, encoded, meta, now)
                self._confirm(key, meta, size, now)
            except LeaseLostError:
                # Paused past the session lease: the next writer may have written this key since,
                # so nothing is undone (an undo would delete or overwrite its item).
                raise
            except BaseException:
                self._undo_index(key, old)
                raise
            self._release(old_size - size)
            self._touch(now)
        self._maybe_sweep_orphans(now)
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

        Writing to a key that exists (same task and turn ids) replaces it: last write wins, and
        the returned metadata says so (``replaced``: the earlier item's description and dataSize).
        """
        key = StorageKey(
            self.session_id,
            check_part_id(task_id, "task_id") if task_id is not None else new_id(),
            check_part_id(turn_id, "turn_id") if turn_id is not None else new_id(),
        )
        description = truncate_description(description)
        custom = check_custom_metadata(metadata)
        encoded = self._encode(data)
        earlier: list[dict[str, Any]] = []

        def build(old: dict[str, Any] | None, now: float) -> dict[str, Any]:
            if old is not None:
                earlier.append(old)
            return item_metadata(key, description, len(encoded), now, now, custom)

        meta = self._commit("write", key, encoded, build)
        if earlier:
            meta["replaced"] = {"description": earlier[0].get("description"), "dataSize": earlier[0].get("dataSize")}
        return meta

    def update(
        self,
        key: str,
        data: Any,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Replace an item's data, keeping its session, task and turn ids.

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
            meta = self._index_entry(str(parsed))
            deleted = self.store.delete(item_store_key(self.session_id, str(parsed)))
            indexed = self.store.delete(index_store_key(self.session_id, str(parsed)))
            if not deleted and meta is None:
                raise self._not_found(parsed)
            if meta is not None and (indexed or deleted):  # only the deleter that removed it gives the bytes back
                self._release(int(meta.get("_bytes", 0)))
            self._touch(time.time())
        return public_metadata(meta or {"storageKey": str(parsed)})

    def end_session(self) -> int:
        """Delete every item of this session, its index and its marker; returns how many items went."""
        with store_guard("end_session"), self._session_lock():
            deleted = forget_session(self.store, self.session_id)
        return deleted

    # --- reads ------------------------------------------------------------------------------

    def read(self, key: str) -> dict[str, Any]:
        """The one call that returns data: ``{**metadata, "data": value}``."""
        parsed = self._own_key(key)
        with store_guard("read"):
            entry = self.store.get(item_store_key(self.session_id, str(parsed)))
        if entry is None:
            raise self._not_found(parsed)
        with store_guard("read"):
            self._touch(time.time())  # reading is using the session: it is not an orphan
        try:
            data = decode_data(entry.value, str(parsed))
        except CorruptItemError:
            log.warning("scratchpad item %s of session %s does not decode", parsed, self.session_id)
            raise
        meta = public_metadata(entry.metadata)
        meta.setdefault("storageKey", str(parsed))
        meta["data"] = data
        return meta

    def list(
        self,
        *,
        task_id: str | None = None,
        turn_id: str | None = None,
        text: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        budget_bytes: int | None = None,
        view: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> ItemPage:
        """Items' metadata in storage-key order, without loading any data: an :class:`ItemPage`
        (a list, with ``next_cursor`` and ``total``).

        Without arguments: every item of the session. Filters: ``task_id``, ``turn_id`` (exact)
        and ``text`` (in the description, case-insensitive). Paging: ``limit`` items and/or
        ``budget_bytes`` of compact JSON (``{"items": [...], "nextCursor": "..."}``) per page; pass
        ``page.next_cursor`` as ``cursor`` for the next page (it carries the filters). A paged call
        reads at most ``listing.SCAN_LIMIT`` index entries once it has an item (``EMPTY_SCAN_LIMIT``
        while it has none), so a page may be short while ``next_cursor`` is set; ``remaining`` then
        says how many candidates are after it. ``view`` is how each item is shown and measured (default: its whole
        metadata; the tool face passes ``items.llm_view``). The walk's guarantee is in
        :mod:`actioncache.scratchpad.listing`.
        """
        filters = ListFilter.of(task_id, turn_id, text)
        after = ""
        if cursor is not None:
            suffix, filters = decode_cursor(cursor, self.session_id, filters)
            after = f"{self.session_id}_{suffix}"
        for name, value in (("limit", limit), ("budget_bytes", budget_bytes)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise InvalidArgumentError(f"{name} must be a positive whole number, not {value!r}")
        paged = cursor is not None or limit is not None or budget_bytes is not None
        with store_guard("list"):
            keys = self._storage_keys(filters)
            items, next_cursor = walk(
                keys, after, filters, self._index_entry, view or public_metadata,
                lambda key: encode_cursor(self.session_id, key[len(self.session_id) + 1:], filters),
                limit=limit, budget_bytes=budget_bytes, scan_limit=SCAN_LIMIT if paged else None)
            self._touch(time.time())
        remaining = 0
        if next_cursor is not None:
            last, _ = decode_cursor(next_cursor, self.session_id, filters)
            remaining = len(keys) - bisect.bisect_right(keys, f"{self.session_id}_{last}")
        return ItemPage(items, next_cursor, len(keys), remaining)

    def used_bytes(self) -> int:
        """The bytes the session quota counts now (one counter read): data, metadata and keys of
        every item. A write is refused exactly when ``used_bytes()`` plus what it adds passes
        ``session_quota_bytes`` (after a recount, which only ever lowers this number)."""
        with store_guard("usage"):
            used = self._counter()
            if used is None:
                with self._session_lock():
                    used = self._used_bytes()
            return int(used)

    def usage(self) -> dict[str, Any]:
        """How much of the quota this session uses: ``usedBytes`` is what the quota counts, to
        the byte (a write that adds N bytes is refused exactly when ``usedBytes + N`` passes
        ``quotaBytes``); ``dataBytes`` is the items' data alone. Recounts the session (as a
        refusal does), so it reads every index entry and waits for the session's writers."""
        with store_guard("usage"), self._session_lock():
            used, items = self._recount("")
            self._touch(time.time())
        return {
            "sessionId": self.session_id,
            "items": len(items),
            "usedBytes": used,
            "storedBytes": used,  # the same number under its earlier name
            "dataBytes": sum(int(m.get("dataSize", 0)) for m in items.values()),
            "quotaBytes": self.session_quota_bytes,
            "itemLimitBytes": self.item_limit_bytes,
        }

    def cleanup_orphans(self, older_than: float | _dt.timedelta = DEFAULT_ORPHAN_AGE_S) -> dict[str, Any]:
        """Store-wide: delete the items of every session idle longer than ``older_than``."""
        return cleanup_orphans(self.store, older_than)

    def _maybe_sweep_orphans(self, now: float) -> None:
        """Orphan cleanup that runs without anyone calling it: after a write, at most once per
        ``orphan_sweep_s`` across every process on the store (a store lease that is never
        released is the rate limit), and never failing the write that triggered it."""
        if self.orphan_sweep_s is None or now < _next_sweep.get(self.store, 0.0):
            return
        _next_sweep[self.store] = now + self.orphan_sweep_s
        try:
            # Taken and never released: the lease lapsing is the rate limit across processes.
            if self.store.acquire_lease(ORPHAN_SWEEP_LEASE, self.orphan_sweep_s) is not None:
                cleanup_orphans(self.store, self.orphan_age_s, now=now)
        except Exception as exc:  # noqa: BLE001 - best effort: the next sweep tries again
            log.warning("scratchpad orphan cleanup failed: %s", exc)

    def handle_tool_call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run one LLM tool call against this pad; returns the JSON answer (never raises)."""
        from .tools import handle_tool_call

        return handle_tool_call(self, name, arguments)


def _index_meta(entry: Entry | None) -> dict[str, Any] | None:
    """An index entry's metadata, or None when it is missing or not a readable JSON object."""
    if entry is None or entry_problem(entry) is not None or entry.value[:1] != JSON_FORMAT:
        return None
    try:
        meta = json.loads(bytes(entry.value[1:]).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(meta, dict) or "storageKey" not in meta:
        return None
    if entry.expires_at is not None:
        meta.setdefault("_expires", entry.expires_at)
    return meta


def _is_own_key(storage_key: str, session_id: str) -> bool:
    try:
        return parse_key(storage_key).session_id == session_id
    except InvalidKeyError:
        return False


def _parse_iso(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
