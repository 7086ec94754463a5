"""The shape of ``PlanCache.stats()``, built from flat counters.

Counters are flat names so the store can add them up across processes (``add_counters``):
``retrievals``, ``hits``, ``fallback:{reason}``, ``stop:{reason}``, ``invalidate:{reason}``, ``action:{type}:replayed`` /
``action:{type}:missed``, ... This module turns them into the nested view users read.
"""

from __future__ import annotations

from typing import Any, Mapping

TOTALS = ("retrievals", "hits", "partial_hits", "fallbacks", "recorded", "rejected_incomplete", "reports",
          "dropped_untrusted", "store_errors", "invalidations", "invalidated")


def shape_metrics(raw: Mapping[str, float]) -> dict[str, Any]:
    """Nest flat counters: totals, ``hit_rate``, reasons, and per action type replayed/missed/hit_rate."""
    out: dict[str, Any] = {name: int(raw.get(name, 0)) for name in TOTALS}
    out["hit_rate"] = round(out["hits"] / out["retrievals"], 4) if out["retrievals"] else 0.0
    out["fallback_reasons"], out["stop_reasons"], out["invalidate_reasons"], out["actions"] = {}, {}, {}, {}
    for name, value in raw.items():
        group, _, rest = name.partition(":")
        if group == "fallback":
            out["fallback_reasons"][rest] = int(value)
        elif group == "stop":
            out["stop_reasons"][rest] = int(value)
        elif group == "invalidate":
            out["invalidate_reasons"][rest] = int(value)
        elif group == "action":
            kind, _, counter = rest.rpartition(":")
            out["actions"].setdefault(kind, {"replayed": 0, "missed": 0})[counter] = int(value)
    for bucket in out["actions"].values():
        seen = bucket["replayed"] + bucket["missed"]
        bucket["hit_rate"] = round(bucket["replayed"] / seen, 4) if seen else 0.0
    return out
