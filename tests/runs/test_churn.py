"""Churning commands (issue 31 item 1: caching never makes a loop slower), through the real CLI.

A command whose world changes before every run (a commit before each `llm_ro` REPORT, a source edit
before each lint) misses every time: each miss is traced and recorded for a hit that never comes.
Its family (the command as the loop writes it) keeps a ledger of its recent runs; once the cache
has cost it more than its hits saved over at least three misses, a miss of it runs directly,
untraced and not recorded, for a while (``runs/ledger.py``). A lookup still serves what still holds.

No timing is asserted: a traced miss's overhead is always above zero and these families have no
hits (or hits that save 0.4 s each), so the verdicts do not depend on the machine's speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actioncache import Cache
from actioncache.runs import log

PY = sys.executable
USE = ("--mode", "use")
CHEAP_TTL_S = 86400.0  # cost.CHEAP_TTL_S (modules imported in the tests: each fails alone on old code)

# Prints the state it reads and marks each real run in $RUNS_DIR. It sleeps 0.15 s, so it is never
# judged cheaper fresh than a hit (a cheap command is not cached at all: test_cost.py); "slow": 0.6 s
# (an LLM call's stand-in: no LLM runs here), so a hit of it saves far more than a miss costs.
REPORT = """\
import os, sys, time
time.sleep(0.6 if sys.argv[1:] == ["slow"] else 0.15)
open(os.path.join(os.environ["RUNS_DIR"], f"{os.getpid()}.{time.time_ns()}"), "w").close()
print("state", open("state.txt").read().strip())
"""


@pytest.fixture
def loop(ex, strace):
    """The `ex` environment without ACTIONCACHE_CHEAP_MS (which turns the cost judgements off). A
    verdict lasts the time its window of runs took (seconds here): ACTIONCACHE_CHURN_MIN_S makes it
    last 10 minutes, so that the runs after it are judged under it whatever the machine's speed
    (the period's own rule has its test, without it)."""
    ex.env.pop("ACTIONCACHE_CHEAP_MS", None)
    ex.env["ACTIONCACHE_CHURN_MIN_S"] = "600"
    (ex.work / "report.py").write_text(REPORT)
    return ex


def set_state(ex, value: str) -> None:
    path = ex.work / "state.txt"
    path.write_text(value + "\n")
    future = time.time() + 2  # a new mtime whatever the clock's granularity (the read-set keys it)
    os.utime(path, (future, future))


def outcomes(ex) -> list[str]:
    with Cache(ex.url) as cache:
        records = [r for r in log.records(cache, log.RUN_LOG_PREFIX) if r.get("outcome") != "tail"]
    return [r["outcome"] for r in sorted(records, key=lambda r: r["at"])]


def verdicts(ex) -> list[Path]:
    folder = ex.sidecar("cheap")
    return sorted(folder.iterdir()) if folder.is_dir() else []


def report(ex, *args: str, explain: bool = False) -> subprocess.CompletedProcess:
    flags = ("--explain",) if explain else ()
    return ex.run(*USE, *flags, "--", PY, "report.py", *args)


def test_a_command_that_misses_every_time_stops_being_recorded_and_still_runs(loop):
    ex = loop
    for i in range(3):
        set_state(ex, f"s{i}")
        out = report(ex)
        assert out.returncode == 0 and out.stdout == f"state s{i}\n".encode(), out.stderr
    entries_before = ex.candidates()
    assert entries_before == 3  # three misses, each traced and recorded
    assert len(verdicts(ex)) == 1  # the third judged the family churning

    for i in range(3, 6):
        set_state(ex, f"s{i}")
        out = report(ex)
        assert out.returncode == 0 and out.stdout == f"state s{i}\n".encode(), out.stderr
    assert ex.runs() == 6  # every run ran the command: nothing was replayed
    assert ex.candidates() == entries_before  # the churning misses were not recorded
    said = ex.run(*USE, "--summary", "--", PY, "report.py").stderr.decode()
    assert "miss, not recorded (churning" in said and "recorded again in " in said, said  # and says until when
    assert ex.runs() == 7
    assert outcomes(ex) == ["miss"] * 3 + ["unrecorded"] * 4

    block = subprocess.run([PY, "-m", "actioncache", "stats", "--json", "--since", "1h"], env=ex.env, cwd=ex.work,
                           capture_output=True, timeout=60)
    stats = json.loads(block.stdout)
    assert stats["unrecorded"] == 4 and stats["misses"] == 7 and stats["hits"] == 0
    text = subprocess.run([PY, "-m", "actioncache", "stats", "--since", "1h"], env=ex.env, cwd=ex.work,
                          capture_output=True, timeout=60).stdout.decode()
    assert "4 misses ran directly, not recorded" in text


def test_a_churning_command_still_gets_its_hits(loop):
    """The verdict changes what a miss does, never what a lookup serves: a state recorded before
    the verdict is measured, then replayed."""
    ex = loop
    for i in range(3):
        set_state(ex, f"s{i}")
        report(ex)
    assert len(verdicts(ex)) == 1
    # s2 was recorded (the third miss), and its file is as it was: its entry still holds.
    out = report(ex)  # the first lookup of a new entry runs it once more, untraced (the measuring run)
    assert out.stdout == b"state s2\n"
    out = report(ex)
    assert out.returncode == 0 and out.stdout == b"state s2\n"
    assert ex.runs() == 4  # the last one was a replay
    assert outcomes(ex)[-2:] == ["measured", "hit"]
    set_state(ex, "s9")  # a change: a miss, which the verdict runs directly
    assert report(ex).stdout == b"state s9\n"
    assert outcomes(ex)[-1] == "unrecorded"


def test_a_command_whose_hits_repay_its_misses_is_not_judged_churning(loop):
    ex = loop
    for i in range(3):
        set_state(ex, f"s{i}")
        report(ex, "slow")  # a traced miss
        report(ex, "slow")  # the measuring run
        for _ in range(2):
            assert report(ex, "slow").stdout == f"state s{i}\n".encode()  # hits, each saving ~0.6 s
    assert outcomes(ex).count("hit") == 6
    assert verdicts(ex) == []  # its hits saved more than its misses cost
    set_state(ex, "s3")
    report(ex, "slow")
    assert outcomes(ex)[-1] == "miss" and ex.candidates() == 4  # still traced and recorded


def test_the_verdict_lasts_its_windows_time_and_each_renewal_twice_as_long(loop):
    """A period is the time the window's runs took (about as many runs go unrecorded as the window
    held; at least a second), doubled at each renewal; the verdict file expires as a day-old cheap
    verdict does. Judged at the end of a run, somewhere between two clock readings here, and its
    expiry kept in whole seconds: the bounds below allow for both."""
    ex = loop
    ex.env.pop("ACTIONCACHE_CHURN_MIN_S")
    started = time.time()
    for i in range(3):
        set_state(ex, f"s{i}")
        report(ex)
    after3 = time.time()
    (verdict,) = verdicts(ex)
    expiry1 = verdict.stat().st_mtime + CHEAP_TTL_S
    period1_at_least, period1_at_most = expiry1 - after3, expiry1 - started + 1.0
    assert period1_at_most >= 1.0 and period1_at_least <= after3 - started + 1.0  # at most the window's time
    os.utime(verdict, (time.time() - CHEAP_TTL_S - 1,) * 2)  # the period is over
    set_state(ex, "s3")
    began = time.time()
    out = report(ex, explain=True)
    after4 = time.time()
    assert outcomes(ex)[-1] == "miss" and ex.candidates() == 4, out.stderr  # looked at again: traced, recorded
    assert b"churning" in out.stderr  # and judged again, still missing
    expiry2 = verdict.stat().st_mtime + CHEAP_TTL_S
    period2_at_least, period2_at_most = expiry2 - after4, expiry2 - began + 1.0
    assert period2_at_most >= 2 * period1_at_least - 1.0  # twice the first (its window held one run more)
    assert period2_at_least <= 2 * (after4 - started) + 1.0


def test_a_set_threshold_turns_the_judgement_off(loop):
    """ACTIONCACHE_CHEAP_MS (tests, tuning: every command judged by that threshold alone) records
    every miss, as before."""
    ex = loop
    for i in range(5):
        set_state(ex, f"s{i}")
        ex.run(*USE, "--", PY, "report.py", extra_env={"ACTIONCACHE_CHEAP_MS": "0"})
    assert verdicts(ex) == []
    assert outcomes(ex) == ["miss"] * 5 and ex.candidates() == 5


def test_a_churn_verdict_is_per_command_not_per_tool(loop):
    """Another command of the same tool (other arguments) is judged on its own runs."""
    ex = loop
    for i in range(3):
        set_state(ex, f"s{i}")
        report(ex)
    (ex.work / "other.py").write_text(REPORT)
    set_state(ex, "s9")
    ex.run(*USE, "--", PY, "other.py")
    assert outcomes(ex)[-1] == "miss"  # traced and recorded: its own ledger has one miss


def test_a_shared_store_keeps_the_verdict_as_an_entry(loop):
    """On a store other than a SQLite file (Redis here: the loop's machines share it) the verdict
    is an entry of the store, and the full command judges and honours it."""
    import uuid

    from services import redis_url, require_redis

    require_redis()
    ex = loop
    url = redis_url(query=f"prefix=churn-{uuid.uuid4().hex[:12]}")
    try:
        for i in range(5):
            set_state(ex, f"s{i}")
            out = ex.run(*USE, "--store", url, "--", PY, "report.py")
            assert out.returncode == 0 and out.stdout == f"state s{i}\n".encode(), out.stderr
        assert ex.runs() == 5
        with Cache(url) as cache:
            marks = cache.store.find(pattern="cache:runs:cheap:*") + cache.store.find(pattern="runs:cheap:*")
            outcomes = sorted((r["at"], r["outcome"]) for r in log.records(cache, log.RUN_LOG_PREFIX))
        assert len(marks) == 1
        assert [o for _, o in outcomes] == ["miss"] * 3 + ["unrecorded"] * 2
    finally:
        with Cache(url) as cache:
            cache.store.drop()  # the namespace and everything in it
