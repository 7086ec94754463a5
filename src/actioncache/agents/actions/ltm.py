"""``ltm.*``: TEA's long-term-memory actions, dict in and dict out, over the agent's store.

They share the store (and codec) with ``cache.*``, so an agent can read what the cache keeps,
but never write or delete in a key space another face owns (``records.KEYSPACE``: ``cache:``,
``lease:``, ``semantic:``...): an LTM key chosen by an LLM must not plant a cache hit. Values
are encoded by the cache's codec (JSON by default); a store failure is a ``success: false``
result, never an exception.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from ..._time import resolve_ttl
from ...actions import ActionTable, Engine, bad_arg
from ...keys import canonical_json, sha256_hex
from ...records import KEYSPACE, Records, space_of
from .failures import bad_count, failure

_MISSING = object()  # ltm.store without value: (None is a value one may store)


def reserved_key_problem(action: str, key: str) -> str | None:
    """Why ``key`` may not be written by ``action``: it lies in a key space a face owns."""
    prefix = space_of(key)
    if prefix is None:
        return None
    return (f"{action} key {key!r} is in the {prefix!r} key space, which holds {KEYSPACE[prefix].holds}; "
            f"LTM may read it but not write it: choose a key that starts with none of "
            f"{', '.join(sorted(KEYSPACE))}")


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def failed(exc: Exception, **extra: Any) -> dict[str, Any]:
        return failure("cache_error", f"{type(exc).__name__}: {exc}", **extra)

    def store(state: Mapping[str, Any], key: str | None = None, value: Any = _MISSING,
              metadata: Mapping[str, Any] | None = None, ttl_seconds: float | None = None) -> dict[str, Any]:
        if not isinstance(key, str) or not key or value is _MISSING:
            return failure("validation_error", "ltm.store needs key: (a non-empty string) and value: (null is a value)",
                           stored=False, key=key)
        problem = (reserved_key_problem("ltm.store", key) or bad_arg("ltm.store key", key, "string")
                   or bad_arg("ltm.store metadata", metadata, "mapping"))
        if problem:
            return failure("validation_error", problem, stored=False, key=key)
        try:
            ttl_s = None if ttl_seconds is None else resolve_ttl(ttl_seconds)
        except ValueError as exc:  # the core's one TTL check: a number of seconds, > 0, at most 100 years
            return failure("validation_error", f"ltm.store {exc} (leave it out to keep the entry)", stored=False, key=key)
        try:
            # kind=None: the metadata is the agent's own, stored as given (TEA's contract:
            # ltm.retrieve and ltm.search give back exactly the metadata ltm.store was given).
            Records(engine.store, engine.cache.codec).put(key, value, kind=None, metadata=metadata,
                                                          ttl_s=ttl_s)
        except Exception as exc:  # noqa: BLE001
            return failed(exc, stored=False, key=key)
        return {"success": True, "stored": True, "key": key, "content_hash": sha256_hex(canonical_json(value))}

    def read(key: str) -> tuple[bool, Any, dict[str, Any]]:
        entry = engine.store.get(key)
        if entry is None or entry.is_expired(time.time()):
            return False, None, {}
        return True, engine.cache.codec.decode(entry.value), dict(entry.metadata)

    def retrieve(state: Mapping[str, Any], key: str | None = None, default: Any = None) -> dict[str, Any]:
        if not isinstance(key, str) or not key:
            return failure("validation_error", f"ltm.retrieve needs key: the key to read, not {key!r}",
                           found=False, value=default)
        try:
            found, value, metadata = read(key)
        except Exception as exc:  # noqa: BLE001
            return failed(exc, found=False, value=default)
        return {"success": True, "found": found, "value": value if found else default,
                "metadata": metadata if found else None}

    def delete(state: Mapping[str, Any], key: str | None = None) -> dict[str, Any]:
        problem = (bad_arg("ltm.delete key", key, "string", optional=False) or (None if key else "ltm.delete key must not be empty")
                   or reserved_key_problem("ltm.delete", key or ""))
        if problem or key is None:
            return failure("validation_error", problem or "ltm.delete key is required", deleted=False, key=key)
        try:
            return {"success": True, "deleted": bool(engine.store.delete(key)), "key": key}
        except Exception as exc:  # noqa: BLE001
            return failed(exc, deleted=False, key=key)

    def search(state: Mapping[str, Any], query: str | None = None, pattern: str | None = None,
               metadata_filter: Mapping[str, Any] | None = None, limit: int = 10) -> dict[str, Any]:
        """Keys by glob ``pattern`` and metadata equality; ``query`` keeps those whose key or
        JSON value contains it (case-insensitive)."""
        problem = (bad_count(limit, "ltm.search limit") or bad_arg("ltm.search query", query, "string")
                   or bad_arg("ltm.search pattern", pattern, "string")
                   or bad_arg("ltm.search metadata_filter", metadata_filter, "mapping"))
        if problem:
            return failure("validation_error", problem, results=[], count=0)
        try:
            keys = engine.store.find(pattern=pattern, metadata_filter=metadata_filter,
                                     limit=None if query else limit)
            results = []
            needle = query.lower() if query else None
            for key in keys:
                found, value, metadata = read(key)
                if not found:
                    continue
                if needle and needle not in key.lower() and needle not in canonical_json(value).lower():
                    continue
                results.append({"key": key, "value": value, "metadata": metadata})
                if len(results) >= limit:
                    break
        except Exception as exc:  # noqa: BLE001
            return failed(exc, results=[], count=0)
        return {"success": True, "results": results, "count": len(results)}

    registry["ltm.store"] = store
    registry["ltm.retrieve"] = retrieve
    registry["ltm.delete"] = delete
    registry["ltm.search"] = search
