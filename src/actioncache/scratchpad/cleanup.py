"""Store-wide removal of abandoned scratchpad sessions (seed 004, user story 3, scenario 3).

A crashed agent never calls ``end_session``; its items are found here through the session index
entries (``scratch-session:*``) and, for items whose index a crash lost, by the items' own keys.
"""

from __future__ import annotations

import datetime as _dt
import time
from typing import Any

from ..stores.base import CacheStore, escape_glob, open_store
from .errors import store_guard
from .items import ITEM_PREFIX, SESSION_PREFIX, item_store_key, session_store_key

DEFAULT_ORPHAN_AGE_S = 24 * 3600.0


def _seconds(value: float | _dt.timedelta) -> float:
    return value.total_seconds() if isinstance(value, _dt.timedelta) else float(value)


def cleanup_orphans(store: CacheStore | str | None, older_than: float | _dt.timedelta = DEFAULT_ORPHAN_AGE_S,
                    *, now: float | None = None) -> dict[str, Any]:
    """Delete every scratchpad session (items and index) with no write for ``older_than`` (24 h).

    Sessions are found through their index entries; items whose session has no index (a crash
    between the item and its index) are judged by their own write time. A session whose lease is
    held right now is being written to, so it is skipped.
    """
    store = open_store(store)
    cutoff = (time.time() if now is None else now) - _seconds(older_than)
    sessions: dict[str, float] = {}
    with store_guard("cleanup_orphans"):
        for index_key in store.find(pattern=escape_glob(SESSION_PREFIX) + "*"):
            entry = store.get(index_key)
            if entry is not None:
                sessions[index_key[len(SESSION_PREFIX):]] = float(entry.metadata.get("_scratch_last_access") or entry.created_at)
        by_session: dict[str, list[str]] = {}
        for item_key in store.find(pattern=escape_glob(ITEM_PREFIX) + "*"):
            session = item_key[len(ITEM_PREFIX):].split(":", 1)[0]
            by_session.setdefault(session, []).append(item_key)
        for session, keys in by_session.items():
            if session not in sessions:
                newest = 0.0
                for key in keys:
                    entry = store.get(key)
                    if entry is not None:
                        newest = max(newest, float(entry.metadata.get("_scratch_updated") or entry.created_at))
                sessions[session] = newest
        removed_sessions, removed_items = [], 0
        for session, last in sorted(sessions.items()):
            if last > cutoff:
                continue
            lease = store.acquire_lease(f"scratchpad:{session}", 30.0)
            if lease is None:
                continue  # a writer holds it right now: not idle
            try:
                # Look again under the lease: a write may have landed since the scan.
                index = store.get(session_store_key(session))
                if index is not None and float(index.metadata.get("_scratch_last_access") or 0) > cutoff:
                    continue
                prefix = item_store_key(session, "")
                removed_items += store.delete_many(store.find(pattern=escape_glob(prefix) + "*"))
                store.delete(session_store_key(session))
                removed_sessions.append(session)
            finally:
                store.release_lease(f"scratchpad:{session}", lease)
    return {"success": True, "deleted_sessions": removed_sessions, "deleted_items": removed_items}
