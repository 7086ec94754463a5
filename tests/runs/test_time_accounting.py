"""Time saved, counted by one rule for every outcome (issue 31), through the real CLI.

Each exec process's cost is its own wall time, from the fork that started it to its end (its tail
record and the end of the process included); the command's own time (``fresh_ms``) is what it would
have cost run directly: a replay's entry's, an untraced run's own, a traced run's figure from its
trace (``trace.command_ms``), 0 for a command that could not start. A hit saves fresh - its cost;
any other run costs its ``overhead_ms`` = its cost - fresh. No timing is asserted here: only that
every outcome carries the fields and that they add up.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from actioncache import Cache
from actioncache.runs import log

PY = sys.executable
USE = ("--mode", "use")


def all_records(url: str) -> list[dict]:
    with Cache(url) as cache:
        return [*log.records(cache, log.RUN_LOG_PREFIX), *log.records(cache, log.FAIL_LOG_PREFIX)]


def stats_json(ex) -> dict:
    out = subprocess.run([PY, "-m", "actioncache", "stats", "--json", "--since", "1h"], env=ex.env, cwd=ex.work,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def assert_adds_up(records: list[dict], stats: dict) -> None:
    """Every run timed; stats' totals are the sums of the records' parts, and time saved is what the
    hits saved less every run's overhead (tails included)."""
    runs = [r for r in records if r.get("outcome") != "tail"]
    for record in runs:
        assert record["fresh_ms"] >= 0, record
        if record.get("hit"):
            assert record["hit_ms"] > 0 and record["saved_ms"] == round(record["fresh_ms"] - record["hit_ms"], 3)
        else:
            assert record["overhead_ms"] >= 0, record  # every outcome, not only those that looked up
    saved = sum(r["saved_ms"] for r in runs if r.get("hit"))
    overhead = sum(r.get("overhead_ms", 0.0) for r in records)
    assert stats["runs"] == len(runs)
    assert abs(stats["overhead_s"] - overhead / 1000) <= 0.002
    assert abs(stats["saved_by_hits_s"] - saved / 1000) <= 0.002
    assert abs(stats["time_saved_s"] - (saved - overhead) / 1000) <= 0.002
    assert abs(stats["time_saved_s"] - (stats["saved_by_hits_s"] - stats["overhead_s"])) <= 0.002
    by_tool = [b for action, b in stats["by_action"].items() if action.startswith("exec:")]
    assert sum(b["runs"] for b in by_tool) == stats["runs"]
    assert abs(sum(b["time_saved_s"] for b in by_tool) - stats["time_saved_s"]) <= 0.001 * len(by_tool)


def test_every_outcome_is_timed_and_the_parts_add_up(ex, strace):
    """With ACTIONCACHE_CHEAP_MS=0 (the fixture): a miss, a hit, a failure, a phase-blocked run, a
    non-cacheable run, a command that cannot start."""
    (ex.work / "actioncache.toml").write_text('non_cacheable_tools = ["ls"]\n')
    ex.trust(ex.work)
    assert b"miss" in ex.run(*USE, "--summary", "--", "cat", "good.sh").stderr
    assert ex.run(*USE, "--", "cat", "good.sh").returncode == 0  # the hit (fast path)
    assert ex.run(*USE, "--", PY, "tool.py", "fail").returncode == 3
    blocked = ex.run(*USE, "--scope", "llm_ro", "--scopes", "verify,read,llm_ro", "--phase", "BUILD", "--", "cat",
                     "good.sh")
    assert b"never cached in phase BUILD" in blocked.stderr
    assert b"non_cacheable_tools" in ex.run(*USE, "--summary", "--", "ls").stderr
    assert ex.run(*USE, "--", "no-such-tool-here").returncode == 127
    records = all_records(ex.url)
    by = {}
    for record in records:
        by.setdefault(record["outcome"], []).append(record)
    (miss,), (hit,), fails = by["miss"], by["hit"], by["fail"]
    assert len(fails) == 2 and len(by["fresh"]) == 2, records

    # The miss ran traced: its own time is the trace's figure, below the traced time, and what strace
    # added (the traced time less that) is overhead, with the rest of the process.
    assert miss["fresh_from"] == "trace" and miss["fresh_ms"] < miss["duration_ms"], miss
    assert miss["overhead_ms"] >= miss["duration_ms"] - miss["fresh_ms"]
    # The hit saves against the same figure (no measuring run under ACTIONCACHE_CHEAP_MS=0): not the traced time.
    assert hit["fresh_ms"] == miss["fresh_ms"]
    failed = next(r for r in fails if r["tool"] == "python3" or r["tool"].startswith("python"))
    assert failed["fresh_from"] == "trace" and failed["fresh_ms"] < failed["duration_ms"]
    assert failed["overhead_ms"] >= failed["duration_ms"] - failed["fresh_ms"]
    missing = next(r for r in fails if r["tool"] == "no-such-tool-here")
    assert missing["fresh_ms"] == 0 and missing["overhead_ms"] > 0  # nothing ran: the whole process is overhead
    # The runs that never look up (phase-blocked, non_cacheable_tools) are timed too: their command
    # ran untraced, so its own time is that run's.
    for fresh in by["fresh"]:
        assert "fresh_from" not in fresh and fresh["fresh_ms"] > 0 and fresh["overhead_ms"] > 0, fresh
    # Every run through the full command (all but the fast path's) has its tail counted.
    full = [r for r in records if r["outcome"] != "tail" and not r.get("fast")]
    assert len(by["tail"]) == len(full), records
    assert_adds_up(records, stats_json(ex))


def test_the_measuring_run_counts_how_far_the_misses_figure_was_off(ex, strace):
    """Default threshold: miss (traced, its figure from the trace), the measuring run (untraced: the
    command's own time; the miss's figure less that is counted in its overhead, once), a hit."""
    env = {k: v for k, v in ex.env.items() if k != "ACTIONCACHE_CHEAP_MS"}
    for _ in range(3):
        subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--", "sleep", "0.3"], cwd=ex.work, env=env,
                       capture_output=True, timeout=120, check=True)
    records = all_records(ex.url)
    (miss,) = [r for r in records if r["outcome"] == "miss"]
    (measured,) = [r for r in records if r["outcome"] == "measured"]
    (hit,) = [r for r in records if r["outcome"] == "hit"]
    assert miss["fresh_from"] == "trace" and miss["fresh_ms"] < miss["duration_ms"]
    assert measured["fresh_ms"] == measured["duration_ms"]  # untraced: its own run
    assert measured["estimate_error_ms"] == round(miss["fresh_ms"] - measured["fresh_ms"], 3)
    assert measured["overhead_ms"] - measured["estimate_error_ms"] >= 0  # its own process's excess, and the error
    assert hit["fresh_ms"] == measured["fresh_ms"]
    ex.env = env
    assert_adds_up(records, stats_json(ex))


def test_a_record_the_store_refuses_is_kept_and_counted(ex, strace):
    """The store is locked (another writer, ``timeout=0``): the run still goes on uncached, and its
    record waits in the hit journal until the store takes it; stats count it meanwhile, once."""
    assert ex.run(*USE, "--", "cat", "good.sh").returncode == 0  # the store exists
    locked = {"ACTIONCACHE_URL": ex.url + "?timeout=0"}
    holder = sqlite3.connect(ex.db)
    try:
        holder.execute("BEGIN IMMEDIATE")  # a writer holds the lock; readers still read (WAL)
        ran = ex.run(*USE, "--", "cat", "bad.sh", extra_env=locked)
        assert ran.returncode == 0 and ran.stdout == (ex.work / "bad.sh").read_bytes()
        assert b"kept in the hit journal" in ran.stderr, ran.stderr
        pending = [r for r in all_records(ex.url) if r.get("tool") == "cat" and r["outcome"] != "tail"]
        assert len(pending) == 2 and pending[-1]["overhead_ms"] >= 0, pending
    finally:
        holder.rollback()
        holder.close()
    assert b"miss" in ex.run(*USE, "--summary", "--", "cat", "bad.sh").stderr  # a full run: it folds the journal
    records = all_records(ex.url)
    assert [r["outcome"] for r in records if r["outcome"] != "tail"] == ["miss", "fresh", "miss"]
    assert_adds_up(records, stats_json(ex))
