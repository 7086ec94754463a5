"""Where a :class:`~actioncache.replay.PlanCache` keeps its plans: keys, entries, trust and history.

Storage layout (any :class:`~actioncache.CacheStore`; values JSON through the core codec)::

    plan:{namespace}:{signature digest}:p:{plan id}     one completed plan (newest id sorts last)
    plan:{namespace}:{signature digest}:incomplete      how many runs of this task did not complete

Metadata on each entry: ``_plan_namespace``, ``_plan_signature`` (the digest), ``_plan_id``, and
the core's bookkeeping (``_cache_type="plan"``, ``_cache_created_at``, ``_cache_expires_at``, ...:
entries are written through :class:`~actioncache.records.Records`), so ``cache.invalidate(
metadata_filter={"_plan_namespace": "default"})`` or the CLI can find them. Every store call of
plan replay is here; the rules (what to record, which plan to serve) are in :mod:`.plan_cache`.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any, Iterator, NoReturn

from ..errors import CodecError
from ..records import Records, ema
from ..stores.base import CacheStore
from .models import PlanSignature
from .validation import FallbackReason, ReplayFallback

log = logging.getLogger("actioncache.replay")

INITIAL_TRUST = 1.0
KEY_PREFIX = "plan:"
PLAN_TYPE = "plan"


class PlanStore:
    """The plans of one namespace of ``store``, with their trust moved by an EMA (``alpha``)."""

    def __init__(self, store: CacheStore, namespace: str, *, ttl_s: float, alpha: float, trust_floor: float) -> None:
        self.store = store
        self.records = Records(store)
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
        keys = self.records.find(self.prefix(sig), "p:*", metadata_filter={"_plan_namespace": self.namespace})
        return sorted(keys, reverse=True)

    def _put(self, key: str, body: dict[str, Any], sig: PlanSignature, now: float, plan_id: str | None) -> None:
        self.records.put(key, body, kind=PLAN_TYPE, ttl_s=self.ttl_s, now=now, metadata={
            "_plan_namespace": self.namespace, "_plan_signature": sig.digest, "_plan_id": plan_id})

    def put_plan(self, sig: PlanSignature, body: dict[str, Any], now: float, history: int) -> None:
        """Store a completed plan; keep the newest ``history`` ones and forget incomplete runs."""
        self._put(self.prefix(sig) + "p:" + body["plan_id"], body, sig, now, body["plan_id"])
        stale = self.plan_keys(sig)[history:]
        stale.append(self.prefix(sig) + "incomplete")
        self.store.delete_many(stale)

    def note_incomplete(self, sig: PlanSignature, now: float) -> None:
        key = self.prefix(sig) + "incomplete"
        found = self.records.get(key)
        runs = 0
        if found is not None:
            try:
                runs = int(found.value.get("runs", 0))
            except (AttributeError, TypeError, ValueError):
                runs = 0
        self._put(key, {"runs": runs + 1, "signature": sig.to_dict()}, sig, now, None)

    def plans(self, sig: PlanSignature) -> Iterator[tuple[str, dict[str, Any], ReplayFallback | None]]:
        """The live plans for ``sig``, newest first; a corrupt one is removed and yielded as broken."""
        try:
            now = time.time()
            for key in self.plan_keys(sig):
                entry = self.store.get(key)
                if entry is None or entry.is_expired(now):
                    continue
                try:
                    body = self.records.codec.decode(entry.value)
                    if not isinstance(body, dict):
                        raise CodecError("a plan entry must hold a JSON object")
                except CodecError as exc:
                    self.store.delete(key)
                    yield key, {}, ReplayFallback(FallbackReason.CORRUPT_PLAN,
                                                  f"plan {key} could not be decoded ({exc}); removed")
                    continue
                yield key, body, None
        except Exception as exc:
            raise ReplayFallback(FallbackReason.STORE_ERROR, f"{type(exc).__name__}: {exc}") from exc

    def no_plan(self, sig: PlanSignature) -> NoReturn:
        """Raise why there is no plan to serve: runs were seen but none completed, or none at all."""
        try:
            marker = self.store.get(self.prefix(sig) + "incomplete")
        except Exception as exc:
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
        return key, self.records.codec.decode(entry.value) if entry is not None else None

    def adjust_trust(self, key: str, body: dict[str, Any], *, success: bool,
                     deltas: Counter[str]) -> dict[str, Any] | None:
        """Move the plan's trust by the EMA; below the floor it is deleted. Store errors are counted."""
        trust = ema(float(body.get("trust", INITIAL_TRUST)), float(success), self.alpha)
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
                self.records.rewrite(old, body)
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
            body = self.records.codec.decode(entry.value)
            out.append({"plan_id": body.get("plan_id"), "trust": body.get("trust"), "recorded_at": body.get("recorded_at"),
                        "actions": len(body.get("actions", [])), "replays": body.get("replays", 0),
                        "failures": body.get("failures", 0)})
        return out

    def delete(self, sig: PlanSignature | None = None) -> int:
        """Delete one task's entries (plans, incomplete-run count), or the whole namespace's."""
        keys = self.records.find(self.prefix(sig), metadata_filter={"_plan_namespace": self.namespace})
        return self.store.delete_many(keys)
