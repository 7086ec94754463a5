"""``actioncache stats --since``: hits, misses, failures and time saved per tool, from the run log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._time import iso_utc
from .log import FAIL_LOG_PREFIX, RUN_LOG_PREFIX, parse_since, records

if TYPE_CHECKING:
    from ..cache import Cache

COUNTS = ("runs", "hits", "misses", "failures", "audits", "audit_mismatches", "phase_blocked")


def _bucket() -> dict[str, Any]:
    return {**dict.fromkeys(COUNTS, 0), "time_saved_s": 0.0}


def _add(bucket: dict[str, Any], record: dict[str, Any]) -> None:
    bucket["runs"] += 1
    outcome = record.get("outcome")
    if record.get("hit"):
        bucket["hits"] += 1
        bucket["time_saved_s"] += float(record.get("saved_ms") or 0) / 1000.0
    elif record.get("lookup"):
        bucket["misses"] += 1
    if outcome == "fail":
        bucket["failures"] += 1
    if record.get("audited"):
        bucket["audits"] += 1
        bucket["audit_mismatches"] += int(bool(record.get("mismatch")))
    if record.get("phase_blocked"):
        bucket["phase_blocked"] += 1


def stats_since(cache: Cache, since: str | float) -> dict[str, Any]:
    """Totals and ``by_tool`` buckets of ``runs``, ``hits``, ``misses``, ``failures``, ``time_saved_s``,
    ``audits``, ``audit_mismatches`` and ``phase_blocked`` for ``actioncache exec`` runs since ``since``.
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
    for bucket in (totals, *by_tool.values()):
        bucket["time_saved_s"] = round(bucket["time_saved_s"], 3)
        looked = bucket["hits"] + bucket["misses"]
        bucket["hit_rate"] = round(bucket["hits"] / looked, 4) if looked else 0.0
    return {"success": True, "since": iso_utc(start), **totals, "by_tool": by_tool}


def format_since(result: dict[str, Any]) -> str:
    """The ``--since`` table for people (``actioncache stats --since 1h``)."""
    if not result.get("success"):
        return f"runs since: error: {result.get('error')}"
    headers = ("tool", "runs", "hits", "misses", "fails", "time saved")
    rows = [("TOTAL", *_cells(result))] + [(tool, *_cells(b)) for tool, b in sorted(result["by_tool"].items())]
    widths = [max(len(str(r[i])) for r in (headers, *rows)) for i in range(len(headers))]
    lines = [f"exec runs since {result['since']}",
             "  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def _cells(bucket: dict[str, Any]) -> tuple[Any, ...]:
    return bucket["runs"], bucket["hits"], bucket["misses"], bucket["failures"], f"{bucket['time_saved_s']:.1f}s"


def format_block(result: dict[str, Any]) -> str:
    """The agent-loop statistics block, as a loop prints it at the end of a run::

        Cache Statistics:
          Hits: 42
          Misses: 8
          Time Saved: 18.3s (18342ms)
    """
    if not result.get("success"):
        return f"Cache Statistics:\n  error: {result.get('error')}"
    saved_ms = round(float(result["time_saved_s"]) * 1000)
    lines = ["Cache Statistics:", f"  Hits: {result['hits']}", f"  Misses: {result['misses']}",
             f"  Time Saved: {saved_ms / 1000:.1f}s ({saved_ms}ms)"]
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
        from ..config import missing_store_file
        from ..stores.base import redact_url

        missing = missing_store_file(args.store, redact_url(args.store))
        if missing:  # a read must not create a store: a mistyped path is an error that names it
            print(f"actioncache loop-stats: error: {missing}", file=sys.stderr)
            return 1
    cache = open_cache(args.store, config)
    try:
        result = stats_since(cache, args.since)
    finally:
        cache.close()
    print(format_block(result))
    return 0 if result.get("success") else 1
