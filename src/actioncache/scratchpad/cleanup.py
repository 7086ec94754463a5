"""Store-wide removal of abandoned scratchpad sessions.

A crashed agent never calls ``end_session``; its items are found here through the session marker
entries (``scratch-session:*``, touched by every write and, at most once a minute, by reads) and,
for sessions whose marker a crash lost, by the items' own write times. Writers run it on their own
(``Scratchpad(orphan_sweep_s=...)``, default hourly), so nobody has to call it.
"""

from __future__ import annotations

import datetime as _dt
import math
import time
from typing import Any, Iterable

from ..records import Records
from ..stores.base import CacheStore, Entry, entry_problem, open_store
from .errors import store_guard
from .items import (
    ITEM_PREFIX,
    SESSION_PREFIX,
    index_store_key,
    item_store_key,
    session_lease,
    session_store_key,
    usage_counter,
)

DEFAULT_ORPHAN_AGE_S = 24 * 3600.0
DEFAULT_SWEEP_S = 3600.0  # how often writers sweep for orphans, store-wide


def forget_session(store: CacheStore, session: str) -> int:
    """Delete a session's items, index entries and marker and zero its byte counter; returns the item count.

    The caller holds the session's lease.
    """
    records = Records(store)
    items = records.find(item_store_key(session, ""))
    deleted = store.delete_many(items) if items else 0
    index = records.find(index_store_key(session, ""))
    if index:
        store.delete_many(index)
    store.delete(session_store_key(session))
    name = usage_counter(session)
    used = store.counters(name).get(name, 0.0)
    if used:
        store.add_counters({name: -used})
    return deleted


def _seconds(value: float | _dt.timedelta) -> float:
    return value.total_seconds() if isinstance(value, _dt.timedelta) else float(value)


def cleanup_orphans(store: CacheStore | str | None, older_than: float | _dt.timedelta = DEFAULT_ORPHAN_AGE_S,
                    *, now: float | None = None, keep: Iterable[str] = ()) -> dict[str, Any]:
    """Delete every scratchpad session (items and index) unused for ``older_than`` (24 h), or for
    longer when the session's marker asks it (``Scratchpad(keep_idle_s=...)``: named MCP sessions).

    Sessions are found through their index entries; items whose session has no index (a crash
    between the item and its index) are judged by their own write time. A session whose lease is
    held right now is being written to, so it is skipped, and so is every session named in
    ``keep`` (the one a server is starting, whatever its age).
    """
    kept = {keep} if isinstance(keep, str) else set(keep)
    store = open_store(store)
    records = Records(store)
    age = _seconds(older_than)
    cutoff = (time.time() if now is None else now) - age
    sessions: dict[str, float] = {}
    with store_guard("cleanup_orphans"):
        for index_key in records.find(SESSION_PREFIX):
            sessions[index_key[len(SESSION_PREFIX):]] = _last_access(store.get(index_key), age)
        by_session: dict[str, list[str]] = {}
        for item_key in records.find(ITEM_PREFIX):
            session = item_key[len(ITEM_PREFIX):].split(":", 1)[0]
            by_session.setdefault(session, []).append(item_key)
        for session, keys in by_session.items():
            if session not in sessions:
                newest = 0.0
                for key in keys:
                    entry = store.get(key)
                    if entry is not None and entry_problem(entry) is None:
                        newest = max(newest, _number(entry.metadata.get("_scratch_updated"), entry.created_at))
                sessions[session] = newest
        removed_sessions, removed_items = [], 0
        for session, last in sorted(sessions.items()):
            if last > cutoff or session in kept:
                continue
            with records.lease(session_lease(session), 30.0, strict=True) as held:
                if not held:
                    continue  # a writer holds it right now: not idle
                # Look again under the lease: a write may have landed since the scan.
                index = store.get(session_store_key(session))
                if index is not None and _last_access(index, age) > cutoff:
                    continue
                removed_items += forget_session(store, session)
                removed_sessions.append(session)
    return {"success": True, "deleted_sessions": removed_sessions, "deleted_items": removed_items}


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float(default)


def _last_access(marker: Entry | None, age: float) -> float:
    """When a session was last used, from its marker, moved later by how much longer than ``age``
    the session asked to be kept when idle (``_scratch_keep_idle_s``: a named MCP session is kept 7
    days, not 24 hours); a malformed marker counts as used long ago."""
    if marker is None or entry_problem(marker) is not None:
        return 0.0
    last = _number(marker.metadata.get("_scratch_last_access"), marker.created_at)
    keep = _number(marker.metadata.get("_scratch_keep_idle_s"), 0.0)
    return last + max(0.0, keep - age) if math.isfinite(keep) else last
