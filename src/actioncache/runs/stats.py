"""exec's statistics: ``actioncache stats --since`` per tool from the run log, and the agent loop's
statistics block (``actioncache loop-stats``). Without ``--since`` exec's counts are the store's
counters (``cost.count_run``), shown with every other action's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._time import iso_utc
from .cost import counts_of, is_run
from .log import FAIL_LOG_PREFIX, RUN_LOG_PREFIX, parse_since, records

if TYPE_CHECKING:
    from ..cache import Cache

COUNTS = ("runs", "hits", "misses", "stores", "failures", "errors", "uncached_cheap", "unrecorded", "audits",
          "audit_mismatches", "phase_blocked")


def _bucket() -> dict[str, Any]:
    return {**dict.fromkeys(COUNTS, 0), "time_saved_ms": 0.0, "hit_cost_ms": 0.0, "overhead_ms": 0.0}


def _add(bucket: dict[str, Any], record: dict[str, Any]) -> None:
    """One run-log record, with the arithmetic of the store's counters (``cost.counts_of``)."""
    bucket["runs"] += int(is_run(record))
    for name, delta in counts_of(record).items():
        bucket[name] = bucket.get(name, 0) + delta
    if record.get("audited"):
        bucket["audits"] += 1
        bucket["audit_mismatches"] += int(bool(record.get("mismatch")))


def finish(bucket: dict[str, Any]) -> dict[str, Any]:
    """Counters as ``actioncache stats`` shows them (the core's ``finish_counts`` shape, plus the
    hit cost and the overhead in seconds, and what the hits saved before the overhead)."""
    out = {k: (int(v) if k in COUNTS else v) for k, v in bucket.items()}
    net = float(out.pop("time_saved_ms", 0.0) or 0.0)
    hit_cost = float(out.pop("hit_cost_ms", 0.0) or 0.0)
    overhead = float(out.pop("overhead_ms", 0.0) or 0.0)
    out["time_saved_s"] = round(net / 1000.0, 3)
    out["hit_cost_s"] = round(hit_cost / 1000.0, 3)
    out["overhead_s"] = round(overhead / 1000.0, 3)
    out["saved_by_hits_s"] = round((net + overhead) / 1000.0, 3)
    looked = out.get("hits", 0) + out.get("misses", 0)
    out["hit_rate"] = round(out.get("hits", 0) / looked, 4) if looked else 0.0
    return out


def stats_since(cache: Cache, since: str | float) -> dict[str, Any]:
    """The exec runs since ``since`` from the run log (and the hit journal): totals and ``by_tool``
    buckets of runs, hits, misses, stores, failures, ``uncached_cheap``, ``time_saved_s`` (net:
    what the hits saved less the overhead of the other runs), ``saved_by_hits_s``, ``hit_cost_s``,
    ``overhead_s``, audits and ``phase_blocked``: the same arithmetic as the store's counters.
    """
    try:
        start = parse_since(since)
    except ValueError as exc:
        return {"success": False, "error": str(exc)}
    totals = _bucket()
    by_tool: dict[str, dict[str, Any]] = {}
    try:
        for prefix in (RUN_LOG_PREFIX, FAIL_LOG_PREFIX):
            for record in records(cache, prefix, start):
                _add(totals, record)
                _add(by_tool.setdefault(str(record.get("tool")), _bucket()), record)
    except Exception as exc:  # noqa: BLE001 - a store error is reported, not raised
        return {"success": False, "error": f"cannot read the run log: {exc}"}
    return {"success": True, "since": iso_utc(start), **finish(totals),
            "by_tool": {tool: finish(bucket) for tool, bucket in by_tool.items()}}


def with_seconds(report: dict[str, Any]) -> dict[str, Any]:
    """``Cache.stats()`` with exec's timing counters (``hit_cost_ms``, ``overhead_ms``; integers
    there) as seconds beside ``time_saved_s``, in the totals and in every ``exec:`` action."""
    def convert(bucket: dict[str, Any]) -> dict[str, Any]:
        out = dict(bucket)
        if "hit_cost_ms" in out or "overhead_ms" in out:
            hit_cost = float(out.pop("hit_cost_ms", 0) or 0)
            overhead = float(out.pop("overhead_ms", 0) or 0)
            out["hit_cost_s"] = round(hit_cost / 1000.0, 3)
            out["overhead_s"] = round(overhead / 1000.0, 3)
            out["saved_by_hits_s"] = round(float(out.get("time_saved_s") or 0.0) + overhead / 1000.0, 3)
        return out

    out = convert(report)
    out["by_action"] = {name: convert(b) for name, b in report.get("by_action", {}).items()}
    return out


def format_block(result: dict[str, Any]) -> str:
    """The agent-loop statistics block, as a loop prints it at the end of a run::

        Cache Statistics:
          Hits: 42
          Misses: 8
          Time Saved: 18.3s (18342ms)
          Hit Cost: 1.1s (1092ms, 26ms a hit)
          Overhead: 2.4s (2410ms: misses and commands not worth caching)

    Time Saved is net: what the hits saved (each hit: the command's fresh run time less the hit's
    own cost) less the overhead the other runs paid for going through the cache.
    """
    if not result.get("success"):
        return f"Cache Statistics:\n  error: {result.get('error')}"
    saved_ms = round(float(result["time_saved_s"]) * 1000)
    hit_ms = round(float(result.get("hit_cost_s") or 0.0) * 1000)
    overhead_ms = round(float(result.get("overhead_s") or 0.0) * 1000)
    per_hit = f", {hit_ms / result['hits']:.0f}ms a hit" if result["hits"] else ""
    lines = ["Cache Statistics:", f"  Hits: {result['hits']}", f"  Misses: {result['misses']}",
             f"  Time Saved: {saved_ms / 1000:.1f}s ({saved_ms}ms)",
             f"  Hit Cost: {hit_ms / 1000:.1f}s ({hit_ms}ms{per_hit})",
             f"  Overhead: {overhead_ms / 1000:.1f}s ({overhead_ms}ms: misses and commands not worth caching)"]
    if result.get("uncached_cheap"):
        lines.append(f"  Not Cached (faster fresh than a hit): {result['uncached_cheap']}")
    if result.get("unrecorded"):
        lines.append(f"  Misses Not Recorded (entries kept changing): {result['unrecorded']}")
    if result.get("failures"):
        lines.append(f"  Failures: {result['failures']}")
    if result.get("phase_blocked"):
        lines.append(f"  Phase Blocked: {result['phase_blocked']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``actioncache loop-stats [--since WHEN] [--store URL]``: the block, for a loop's last line."""
    import os
    import sys

    from .._usage import HelpfulParser

    parser = HelpfulParser(prog="actioncache loop-stats", description="The Cache Statistics block "
                                     "for the exec runs since WHEN (from the run log).")
    parser.add_argument("--since", metavar="WHEN", default=os.environ.get("CACHE_LOOP_STARTED") or "1d",
                        help="30m, 2h, 7d or an ISO time (default $CACHE_LOOP_STARTED, else 1d)")
    parser.add_argument("--store", metavar="URL", help="store URL (default: $ACTIONCACHE_URL, else the loop "
                        "config's store, else the user cache dir)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from ..policy import PolicyError, load_config
    from .log import parse_since
    from .runner import open_cache

    try:
        parse_since(args.since)
    except ValueError as exc:  # a bad argument: exit 2, before anything is printed
        parser.error(str(exc))
    try:
        config = load_config()
    except PolicyError as exc:
        print(f"actioncache loop-stats: error: {exc}", file=sys.stderr)
        return 2
    if args.store:
        from ..stores.base import redact_url
        from ..stores.registry import missing_store_file

        missing = missing_store_file(args.store, redact_url(args.store))
        if missing:  # a read must not create a store: a mistyped path is an error that names it
            print(f"actioncache loop-stats: error: {missing}", file=sys.stderr)
            return 1
    from ..errors import StoreURLError

    try:
        cache = open_cache(args.store, config)
    except StoreURLError as exc:  # a URL no store takes: say which and why (it names the fix)
        print(f"actioncache loop-stats: error: {exc}", file=sys.stderr)
        return 2
    try:
        result = stats_since(cache, args.since)
    finally:
        cache.close()
    print(format_block(result))
    return 0 if result.get("success") else 1
