"""Where a :class:`~actioncache.replay.PlanCache` keeps its plans: keys, entries, trust and history.

Storage layout (any :class:`~actioncache.CacheStore`; values JSON through the core codec)::

    plan:{namespace}:{signature digest}:p:{plan id}     one completed plan (newest id sorts last)
    plan:{namespace}:{signature digest}:incomplete      how many runs of this task did not complete

Metadata on each entry: ``_cache_type="plan"``, ``_plan_namespace``, ``_plan_signature`` (the
digest), ``_plan_id``, ``_cache_created_at``, ``_cache_expires_at``, so ``cache.invalidate(
metadata_filter={"_plan_namespace": "default"})`` or the CLI can find them. Every store call of
plan replay is here; the rules (what to record, which plan to serve) are in :mod:`.plan_cache`.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any, Iterator, NoReturn

from .._time import iso_utc
from ..codec import JSONCodec
from ..errors import CodecError
from ..stores.base import CacheStore, Entry, escape_glob
from .models import PlanSignature
from .validation import FallbackReason, ReplayFallback

log = logging.getLogger("actioncache.replay")

INITIAL_TRUST = 1.0
KEY_PREFIX = "plan:"
_codec = JSONCodec()


class PlanStore:
    """The plans of one namespace of ``store``, with their trust moved by an EMA (``alpha``)."""

    def __init__(self, store: CacheStore, namespace: str, *, ttl_s: float, alpha: float, trust_floor: float) -> None:
        self.store = store
        self.namespace = namespace
        self.ttl_s = ttl_s
        self.alpha = alpha
        self.trust_floor = trust_floor

    def prefix(self, sig: PlanSignature | None = None) -> str:
        """The key prefix of one task's entries (of the namespace's when ``sig`` is None)."""
        base = f"{KEY_PREFIX}{self.namespace}:"
        return base if sig is None else f"{base}{sig.digest}:"

    def plan_keys(self, sig: PlanSignature) -> list[str]:
        """Keys of the stored plans for ``sig``, newest first (plan ids sort by time)."""
        keys = self.store.find(pattern=escape_glob(self.prefix(sig)) + "p:*",
                               metadata_filter={"_plan_namespace": self.namespace})
        return sorted(keys, reverse=True)

    def _metadata(self, sig: PlanSignature, now: float, **extra: Any) -> dict[str, Any]:
        return {"_cache_type": "plan", "_plan_namespace": self.namespace, "_plan_signature": sig.digest,
                "_cache_created_at": iso_utc(now), "_cache_expires_at": iso_utc(now + self.ttl_s), **extra}

    def put_plan(self, sig: PlanSignature, body: dict[str, Any], now: float, history: int) -> None:
        """Store a completed plan; keep the newest ``history`` ones and forget incomplete runs."""
        key = self.prefix(sig) + "p:" + body["plan_id"]
        self.store.put(Entry(key, _codec.encode(body), self._metadata(sig, now, _plan_id=body["plan_id"]),
                             created_at=now, expires_at=now + self.ttl_s))
        stale = self.plan_keys(sig)[history:]
        stale.append(self.prefix(sig) + "incomplete")
        self.store.delete_many(stale)

    def note_incomplete(self, sig: PlanSignature, now: float) -> None:
        key = self.prefix(sig) + "incomplete"
        entry = self.store.get(key)
        runs = 0
        if entry is not None:
            try:
                runs = int(_codec.decode(entry.value).get("runs", 0))
            except (CodecError, AttributeError, TypeError, ValueError):
                runs = 0
        self.store.put(Entry(key, _codec.encode({"runs": runs + 1, "signature": sig.to_dict()}),
                             self._metadata(sig, now, _plan_id=None), created_at=now, expires_at=now + self.ttl_s))

    def plans(self, sig: PlanSignature) -> Iterator[tuple[str, dict[str, Any], ReplayFallback | None]]:
        """The live plans for ``sig``, newest first; a corrupt one is removed and yielded as broken."""
        try:
            now = time.time()
            for key in self.plan_keys(sig):
                entry = self.store.get(key)
                if entry is None or entry.is_expired(now):
                    continue
                try:
                    body = _codec.decode(entry.value)
                    if not isinstance(body, dict):
                        raise CodecError("a plan entry must hold a JSON object")
                except CodecError as exc:
                    self.store.delete(key)
                    yield key, {}, ReplayFallback(FallbackReason.CORRUPT_PLAN,
                                                  f"plan {key} could not be decoded ({exc}); removed")
                    continue
                yield key, body, None
        except Exception as exc:  # noqa: BLE001
            raise ReplayFallback(FallbackReason.STORE_ERROR, f"{type(exc).__name__}: {exc}") from exc

    def no_plan(self, sig: PlanSignature) -> NoReturn:
        """Raise why there is no plan to serve: runs were seen but none completed, or none at all."""
        try:
            marker = self.store.get(self.prefix(sig) + "incomplete")
        except Exception as exc:  # noqa: BLE001
            raise ReplayFallback(FallbackReason.STORE_ERROR, f"{type(exc).__name__}: {exc}") from exc
        if marker is not None and not marker.is_expired(time.time()):
            raise ReplayFallback(FallbackReason.PLAN_NOT_COMPLETED,
                                 f"runs of this task were seen but none completed ({sig.url_pattern})")
        raise ReplayFallback(FallbackReason.NO_PLAN, f"no completed plan for {sig.url_pattern} / {sig.goal!r}")

    def newest(self, sig: PlanSignature) -> tuple[str, dict[str, Any]]:
        """The newest decodable plan for ``sig``, or a fallback saying why there is none."""
        for key, body, broken in self.plans(sig):
            if broken is None:
                return key, body
        self.no_plan(sig)

    def plan(self, sig: PlanSignature, plan_id: str) -> tuple[str, dict[str, Any] | None]:
        key = self.prefix(sig) + "p:" + plan_id
        entry = self.store.get(key)
        return key, _codec.decode(entry.value) if entry is not None else None

    def adjust_trust(self, key: str, body: dict[str, Any], *, success: bool,
                     deltas: Counter[str]) -> dict[str, Any] | None:
        """Move the plan's trust by the EMA; below the floor it is deleted. Store errors are counted."""
        trust = self.alpha * float(success) + (1.0 - self.alpha) * float(body.get("trust", INITIAL_TRUST))
        body = {**body, "trust": trust, "replays": int(body.get("replays", 0)) + 1,
                "failures": int(body.get("failures", 0)) + (not success)}
        dropped = trust < self.trust_floor
        try:
            if dropped:
                self.store.delete(key)
                deltas["dropped_untrusted"] += 1
                log.info("replay: plan %s dropped (trust %.3f < %.2f)", body.get("plan_id"), trust, self.trust_floor)
            else:
                old = self.store.get(key)
                if old is None:
                    return None  # deleted meanwhile (by another process's drop or trim)
                self.store.put(Entry(key, _codec.encode(body), dict(old.metadata),
                                     created_at=old.created_at, expires_at=old.expires_at))
        except Exception as exc:  # noqa: BLE001
            log.warning("replay: could not update trust of %s: %s", body.get("plan_id"), exc)
            deltas["store_errors"] += 1
            return None
        return {"plan_id": body.get("plan_id"), "trust": round(trust, 6), "dropped": dropped}

    def history(self, sig: PlanSignature) -> list[dict[str, Any]]:
        """The plans kept for ``sig``, newest first: id, trust, recorded_at, action count."""
        out = []
        for key in self.plan_keys(sig):
            entry = self.store.get(key)
            if entry is None:
                continue
            body = _codec.decode(entry.value)
            out.append({"plan_id": body.get("plan_id"), "trust": body.get("trust"), "recorded_at": body.get("recorded_at"),
                        "actions": len(body.get("actions", [])), "replays": body.get("replays", 0),
                        "failures": body.get("failures", 0)})
        return out

    def delete(self, sig: PlanSignature | None = None) -> int:
        """Delete one task's entries (plans, incomplete-run count), or the whole namespace's."""
        keys = self.store.find(pattern=escape_glob(self.prefix(sig)) + "*",
                               metadata_filter={"_plan_namespace": self.namespace})
        return self.store.delete_many(keys)
