"""What exec costs and saves, counted once (issue 31 items 1-3, issue 28 item 5), through the real CLI.

* a command whose fresh run is cheaper than a hit is not cached (and --explain, stats say so);
* time saved = the command's fresh (untraced) time less the hit's own cost, net of the overhead of
  the other runs, in the store's counters, ``stats --json``, ``stats --since`` and the seed's block;
* ``non_cacheable_tools: [git_push]`` matches ``git push``; editing the cache's config is a miss;
* ``llm_ro`` hits take the fast path, keyed by the HEAD commit read as git reads it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache import Cache
from actioncache.runs import log
from actioncache.runs.stats import format_block, stats_since

PY = sys.executable
USE = ("--mode", "use")
CHEAP_ENV = "ACTIONCACHE_CHEAP_MS"  # cost.CHEAP_ENV (modules imported in the tests: each fails alone on old code)
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


def imported(result: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.decode("utf-8", "replace").splitlines()
            if line.startswith("import time:") and "|" in line}


def stats_json(ex, *args: str) -> dict:
    out = subprocess.run([PY, "-m", "actioncache", "stats", "--json", *args], env=ex.env, cwd=ex.work,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# --- 3. the seed's config as its users write it ------------------------------------------------------------


@pytest.fixture
def fake_git(ex, tmp_path) -> Path:
    """A `git` that marks its runs in $RUNS_DIR (conftest; the real one is not needed to match names)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = bin_dir / "git"
    git.write_text(f"#!{PY}\nimport os, sys, time\n"
                   "open(os.path.join(os.environ['RUNS_DIR'], f'{os.getpid()}.{time.time_ns()}'), 'w').close()\n"
                   "print('git', *sys.argv[1:])\n")
    git.chmod(0o755)
    ex.env["PATH"] = f"{bin_dir}{os.pathsep}{ex.env['PATH']}"
    return git


def test_git_push_in_non_cacheable_tools_matches_git_push(ex, strace, fake_git):
    (ex.work / ".actioncache.yml").write_text("non_cacheable_tools: [git_push]\n")
    for args in (("push", "origin", "main"), ("-C", ".", "push"), ("push",)):
        first = ex.run(*USE, "--summary", "--", "git", *args)
        ex.run(*USE, "--", "git", *args)
        assert b"git push" in first.stderr and b"non_cacheable_tools" in first.stderr, first.stderr
    assert ex.runs() == 6  # every git push ran, none replayed
    ex.run(*USE, "--", "git", "log")
    ex.run(*USE, "--", "git", "log")
    assert ex.runs() == 7  # git log is still cached


def test_a_non_cacheable_command_runs_without_opening_the_store_and_is_counted(ex, strace, fake_git):
    """An outside tester timed a `git push` listed in non_cacheable_tools at ~0.25 s through the cache
    (5 ms alone): the full command opened the store to count it. It now becomes the command as mode
    off does, after one line in the hit journal."""
    (ex.work / ".actioncache.yml").write_text("non_cacheable_tools: [git_push]\n")
    time.sleep(2.1)  # past the config memo's racy window (a config changed in the last 2 s is read again)
    ex.run(*USE, "--", "git", "log")  # the store exists, and the config's memo
    ex.run(*USE, "--", "git", "log")
    before = ex.runs()
    run = subprocess.run([PY, "-X", "importtime", "-m", "actioncache", "exec", *USE, "--summary", "--", "git", "push"],
                         cwd=ex.work, env=ex.env, capture_output=True, timeout=60)
    assert run.returncode == 0 and ex.runs() == before + 1  # it ran
    assert b"git push is in non_cacheable_tools" in run.stderr
    assert "_sqlite3" not in imported(run) and "actioncache.runs.runner" not in imported(run)
    journal = ex.sidecar("exec-hits.jsonl").read_text().splitlines()
    record = json.loads(journal[-1])
    assert record["uncacheable"].startswith("git push is in non_cacheable_tools") and record["overhead_ms"] > 0
    assert record["hit"] is False and record["lookup"] is False


@settings(max_examples=200, deadline=None)
@given(tool=st.sampled_from(["git", "/usr/bin/git", "kubectl"]),
       sub=st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8),
       before=st.lists(st.sampled_from(["-C", ".", "--no-pager", "-c", "x=y", "--git-dir=.git"]), max_size=4),
       after=st.lists(st.text("abc-./", max_size=5), max_size=3), joiner=st.sampled_from(("_", "-", " ")))
def test_an_entry_matches_its_subcommand_wherever_options_put_it(tool, sub, before, after, joiner):
    from actioncache.runs import naming

    name = os.path.basename(tool)
    command = [tool, *before, sub, *after]
    assert naming.match([f"{name}{joiner}{sub}"], command) == (f"{name}{joiner}{sub}", f"{name} {sub}")
    assert naming.match([f"{name}_*"], command, glob=lambda p, n: fnmatch.fnmatchcase(n, p))
    assert naming.match(["other_tool"], command) is None


def test_editing_the_caches_own_config_is_a_miss(ex, strace):
    config = ex.work / "actioncache.toml"
    config.write_text("max_cache_age_hours = 100\n")
    args = (*USE, "--summary", "--", PY, "tool.py", "runs")
    assert b": miss;" in ex.run(*args).stderr
    assert b": hit;" in ex.run(*args).stderr
    config.write_text("max_cache_age_hours = 100\n# a comment is a change too\n")
    assert b": miss;" in ex.run(*args).stderr and ex.runs() == 2
    time.sleep(2.1)  # a config changed in the last 2 s is racy: the hit path leaves it to the full command
    ex.run(*args)  # the full command leaves a memo of the new config (with its digest)
    fast = subprocess.run([PY, "-X", "importtime", "-m", "actioncache", "exec", *args], cwd=ex.work, env=ex.env,
                          capture_output=True, timeout=60)
    assert b": hit;" in fast.stderr and ex.runs() == 2
    assert "actioncache.runs.hitpath" in imported(fast) and "actioncache.policy" not in imported(fast)


# --- 1. hits worth taking: cheap commands are not cached ---------------------------------------------------


def test_a_command_faster_fresh_than_a_hit_is_not_cached(ex, strace):
    from actioncache.runs import cost

    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}  # the measured rule, not the override
    with Cache(ex.url) as cache:
        cost.add_hit_costs(cache.store, [60_000.0])  # hits here cost a minute: every quick command is cheap

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-m", "actioncache", "exec", *USE, *args, "--", "cat", "good.sh"], cwd=ex.work,
                              env=env, capture_output=True, timeout=120)

    # Traced, it ran faster than a hit costs: strace only slows a command, so it is cheap untraced
    # too, judged on that run (no measuring run, nothing stored).
    judged = run("--summary")
    assert b"not cached: cat runs in at most" in judged.stderr and b"(traced), less than a hit costs" \
        in judged.stderr and b"cat: cheap_miss;" in judged.stderr, judged.stderr
    assert judged.stdout == (ex.work / "good.sh").read_bytes()
    assert ex.entries() == []  # its output is not kept
    verdicts = list(ex.sidecar("cheap").iterdir())
    assert len(verdicts) == 1
    for _ in range(2):
        later = run("--summary")  # the hit path becomes the command, as mode off does
        assert later.stdout == (ex.work / "good.sh").read_bytes() and b"cat: cheap" in later.stderr
    explained = run("--explain")
    assert b"cheap: cat ran in" in explained.stderr and b"not cached" in explained.stderr
    report = stats_json(ex)
    assert report["by_action"]["exec:cat"]["uncached_cheap"] == 4 and report["by_action"]["exec:cat"]["hits"] == 0


def test_an_untraced_run_judged_cheap_says_its_own_time_not_a_traced_bound(ex):
    # With ACTIONCACHE_TRACE=off the run that judged the command cheap was not traced: its time is
    # the command's own, and the note said "at most ... (traced)" all the same.
    from actioncache.runs import cost

    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV} | {"ACTIONCACHE_TRACE": "off"}
    with Cache(ex.url) as cache:
        cost.add_hit_costs(cache.store, [60_000.0])
    judged = subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--summary", "--", "cat", "good.sh"],
                            cwd=ex.work, env=env, capture_output=True, timeout=120)
    assert b"not cached: cat runs in " in judged.stderr and b"cat: cheap_miss;" in judged.stderr, judged.stderr
    assert b"(traced)" not in judged.stderr and b"at most" not in judged.stderr, judged.stderr


def test_a_quick_command_that_cannot_be_recorded_is_judged_cheap_too(ex, strace):
    # `git status` after a commit rewrites .git/index, which it read: never recordable, so it was never
    # judged either, and every run was traced for nothing (an outside tester's loop traced it 21 times).
    from actioncache.runs import cost

    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}
    with Cache(ex.url) as cache:
        cost.add_hit_costs(cache.store, [60_000.0])  # hits here cost a minute: every quick command is cheap
    (ex.work / "count").write_text("0\n")
    bump = ["sh", "-c", "cat count; echo 1 >> count"]  # it changes a file it read: unrecordable

    def run() -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--summary", "--", *bump], cwd=ex.work,
                              env=env, capture_output=True, timeout=120)

    first = run()
    assert b"sh: cheap_miss;" in first.stderr, first.stderr
    second = run()
    assert b"sh: cheap" in second.stderr and b"changed" not in second.stderr, second.stderr  # run directly
    assert second.stdout == b"0\n1\n" and (ex.work / "count").read_text() == "0\n1\n1\n"  # it really ran
    assert ex.entries() == []


def test_expired_cheap_verdicts_are_removed_when_one_is_written(ex, strace):
    """A cheap verdict lives a day; the folder beside the store held every one ever written (one per
    key: a command whose arguments change every call left one per call). Writing a verdict now
    removes those older than any can live, and nothing younger."""
    from actioncache.runs import cost

    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}
    with Cache(ex.url) as cache:
        cost.add_hit_costs(cache.store, [60_000.0])
    folder = ex.sidecar("cheap")
    folder.mkdir(parents=True)
    old, young = folder / ("0" * 64), folder / ("1" * 64)
    for path, age in ((old, cost.CHEAP_TTL_S + 120), (young, cost.CHEAP_TTL_S - 120)):
        path.write_text("{}")
        os.utime(path, (time.time() - age, time.time() - age))
    done = subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--", "cat", "good.sh"], cwd=ex.work, env=env,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in folder.iterdir())
    assert old.name not in names and young.name in names and len(names) == 2, names


def test_a_recorded_command_is_judged_cheap_on_its_measuring_run(ex, strace):
    """An entry stored without a lookup (mode record) is timed untraced by its first lookup, and a
    command faster than a hit loses its entry there."""
    from actioncache.runs import cost

    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}
    with Cache(ex.url) as cache:
        cost.add_hit_costs(cache.store, [60_000.0])  # hits here cost a minute: every quick command is cheap

    def run(mode: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-m", "actioncache", "exec", "--mode", mode, *args, "--", "cat", "good.sh"],
                              cwd=ex.work, env=env, capture_output=True, timeout=120)

    assert b"cat: record;" in run("record", "--summary").stderr  # traced and stored, no lookup
    judged = run("use", "--explain")  # the first lookup runs it again, untraced: that is its fresh time
    assert b"not cached: cat runs in" in judged.stderr and b"(traced)" not in judged.stderr
    assert b"less than a hit costs (60000 ms, the average of the hits timed on this store)" in judged.stderr
    assert judged.stdout == (ex.work / "good.sh").read_bytes() and ex.entries() == []


def test_a_command_slower_than_a_hit_is_measured_then_cached(ex, strace):
    from actioncache.runs import cost

    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}
    with Cache(ex.url) as cache:
        cost.add_hit_costs(cache.store, [0.001])  # hits here cost nothing: every command is worth caching

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--summary", "--", *command],
                              cwd=ex.work, env=env, capture_output=True, timeout=120)

    outcomes = [run("cat", "good.sh").stderr for _ in range(4)]
    assert [b": miss;" in outcomes[0], b": measured;" in outcomes[1], b": hit;" in outcomes[2],
            b": hit;" in outcomes[3]] == [True] * 4, outcomes
    # A command that prints something else each time, its inputs unchanged, is not cached at all.
    with Cache(ex.url) as cache:  # (the hits above were timed: hits cost nothing here again)
        cost.write_json(cache.store, cost.HIT_COST_KEY, {"hit_ms": 0.001, "n": 1, "cpu_ms": 0.001, "cpu_n": 1},
                         None, "exec_cost")
    clock = (PY, "-c", "import time; time.sleep(0.3); print(time.time_ns())")
    assert b": miss;" in run(*clock).stderr
    differs = run(*clock)
    assert b"printed something else than the first" in differs.stderr
    assert b": miss;" in run(*clock).stderr


# --- 2. honest time saved ----------------------------------------------------------------------------------


def test_time_saved_is_fresh_time_less_hit_cost_net_of_overhead(tmp_path):
    """The arithmetic, on run-log records as exec writes them: one miss, two hits, one cheap run."""
    from actioncache.runs import cost

    records = [
        {"tool": "llm", "lookup": True, "hit": False, "outcome": "miss", "fresh_ms": 1000.0, "overhead_ms": 200.0},
        {"tool": "llm", "lookup": True, "hit": True, "outcome": "hit", "fresh_ms": 1000.0, "hit_ms": 30.0,
         "saved_ms": 970.0},
        {"tool": "llm", "lookup": True, "hit": True, "outcome": "hit", "fresh_ms": 1000.0, "hit_ms": 50.0,
         "saved_ms": 950.0},
        {"tool": "cat", "lookup": True, "hit": False, "outcome": "cheap", "overhead_ms": 20.0},
    ]
    with Cache(f"sqlite:///{tmp_path}/s.db") as cache:
        for record in records:
            assert log.append(cache, log.RUN_LOG_PREFIX, record) is None
            cost.count_run(cache, record)
        since = stats_since(cache, "1h")
        counters = cache.stats()
    assert (since["hits"], since["misses"], since["uncached_cheap"]) == (2, 1, 1)
    assert since["saved_by_hits_s"] == 1.92 and since["hit_cost_s"] == 0.08 and since["overhead_s"] == 0.22
    assert since["time_saved_s"] == 1.7  # 970 + 950 - 200 - 20 ms
    assert since["by_tool"]["cat"]["time_saved_s"] == -0.02  # a cheap run still costs its start-up
    # The store's counters carry the same figures (one counting system, two views).
    assert counters["by_action"]["exec:llm"]["time_saved_s"] == 1.72 and counters["hits"] == 2
    assert counters["by_action"]["exec:llm"]["hit_cost_ms"] == 80
    block = format_block(since).splitlines()
    assert block[:4] == ["Cache Statistics:", "  Hits: 2", "  Misses: 1", "  Time Saved: 1.7s (1700ms)"]
    assert block[4] == "  Hit Cost: 0.1s (80ms, 40ms a hit)"
    assert block[5].startswith("  Overhead: 0.2s (220ms")


def test_a_hit_reports_its_own_cost_and_saves_less_than_the_run_took(ex, strace):
    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}
    for _ in range(4):  # miss, measuring run, two hits (fast path)
        subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--", "sleep", "0.5"], cwd=ex.work, env=env,
                       capture_output=True, timeout=120, check=True)
    with Cache(ex.url) as cache:
        hits = [r for r in log.records(cache, log.RUN_LOG_PREFIX) if r.get("hit")]
    assert len(hits) == 2
    for hit in hits:
        assert hit["fast"] and hit["hit_ms"] > 0 and hit["fresh_ms"] >= 500
        assert hit["saved_ms"] == pytest.approx(hit["fresh_ms"] - hit["hit_ms"], abs=0.01)


def test_a_full_run_counts_what_it_costs_after_its_record(ex, strace):
    """A miss goes on after its record is timed (writing it, counting, closing the store, exiting):
    that tail is counted as overhead, in a record of its own that is not a run."""
    first = ex.run(*USE, "--summary", "--", "cat", "good.sh")  # a miss through the full command
    assert b"cat: miss" in first.stderr and first.stdout == (ex.work / "good.sh").read_bytes()
    with Cache(ex.url) as cache:
        found = list(log.records(cache, log.RUN_LOG_PREFIX))
        since = stats_since(cache, "1h")
    miss = [r for r in found if r.get("outcome") == "miss"]
    tail = [r for r in found if r.get("outcome") == "tail"]
    assert len(miss) == 1 and len(tail) == 1, found
    assert tail[0]["key"] == miss[0]["key"] and tail[0]["tool"] == "cat" and tail[0]["overhead_ms"] > 0
    assert since["runs"] == 1 and since["misses"] == 1
    total = miss[0]["overhead_ms"] + tail[0]["overhead_ms"]
    assert since["overhead_s"] == round(total / 1000, 3) and since["time_saved_s"] == round(-total / 1000, 3)


def test_mode_off_becomes_the_command_without_loading_subprocess(ex):
    """Mode off (the default) only restores the signals Python ignores, then becomes the command:
    nothing of runs.process (subprocess, threading, typing) or of signal (enum) is loaded for it."""
    off = subprocess.run([PY, "-X", "importtime", "-m", "actioncache", "exec", "--mode", "off", "--", "cat",
                          "good.sh"], cwd=ex.work, env=ex.env, capture_output=True, timeout=60)
    assert off.returncode == 0 and off.stdout == (ex.work / "good.sh").read_bytes()
    modules = imported(off)
    assert "actioncache.runs.hitpath" in modules
    assert not modules & {"subprocess", "threading", "typing", "signal", "enum", "actioncache.runs.process"}, \
        sorted(modules & {"subprocess", "threading", "typing", "signal", "enum", "actioncache.runs.process"})
    piped = subprocess.run(f"{PY} -m actioncache exec --mode off -- yes | head -c 4", shell=True, cwd=ex.work,
                           env=ex.env, capture_output=True, timeout=60)
    assert piped.stdout == b"y\ny\n"  # SIGPIPE is the command's again: `yes` stops when head does


# --- 4 (issue 28 item 5). one statistics view ---------------------------------------------------------------


def test_stats_show_exec_hits_and_misses_with_everything_else(ex, strace):
    with Cache(ex.url) as cache:  # something besides exec in the same store
        cache.wrap("double", lambda x: {"success": True, "v": x * 2}, {"x": 1})
        cache.wrap("double", lambda x: {"success": True, "v": x * 2}, {"x": 1})
    for _ in range(3):
        ex.run(*USE, "--", PY, "tool.py", "runs")  # miss, then hits (the fast path: journal only)
    report = stats_json(ex)
    assert report["by_action"][f"exec:{os.path.basename(PY)}"]["hits"] == 2
    assert report["hits"] == 3 and report["misses"] == 2  # exec's 2 hits + 1 miss, double's 1 hit + 1 miss
    assert "double" in report["by_action"] and "runs_since" not in report
    narrowed = stats_json(ex, "--since", "1h")
    assert narrowed["hits"] == 2 and narrowed["misses"] == 1 and narrowed["not_narrowed"] == ["double"]
    assert all(a.startswith("exec:") for a in narrowed["by_action"])
    assert stats_json(ex, "--since", "2999-01-01T00:00:00Z")["hits"] == 0
    table = subprocess.run([PY, "-m", "actioncache", "stats"], env=ex.env, cwd=ex.work, capture_output=True,
                           timeout=60, check=True).stdout.decode()
    assert "hit cost" in table and "exec: time saved is net" in table


# --- 1. llm_ro on the fast path ----------------------------------------------------------------------------


def test_llm_ro_hits_take_the_fast_path_and_a_commit_misses(ex, strace):
    env = {**ex.env, **GIT_ENV, "CACHE_PHASE": "REPORT", "CACHE_SCOPE": "verify,read,llm_ro"}
    subprocess.run(["git", "init", "-q"], cwd=ex.work, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "one"], cwd=ex.work, env=env, check=True)
    args = [PY, "-X", "importtime", "-m", "actioncache", "exec", *USE, "--summary", "--scope", "llm_ro", "--",
            PY, "tool.py", "runs"]

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(args, cwd=ex.work, env=env, capture_output=True, timeout=120)

    first = run()
    hit = run()
    assert b": hit;" in hit.stderr and hit.stdout == first.stdout
    assert "actioncache.runs.hitpath" in imported(hit)
    assert not imported(hit) & {"subprocess", "actioncache.policy", "actioncache.cache"}, "not the fast path"
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "two"], cwd=ex.work, env=env, check=True)
    assert b": miss;" in run().stderr and ex.runs() == 2
    blocked = subprocess.run(args, cwd=ex.work, env={**env, "CACHE_PHASE": "BUILD"}, capture_output=True,
                             timeout=120)
    assert b"never cached in phase BUILD" in blocked.stderr and ex.runs() == 3


def test_head_is_read_as_git_reads_it(tmp_path, monkeypatch):
    """lean.git_head against `git rev-parse HEAD`: empty repo, commits, packed refs, a worktree,
    a detached HEAD, no repository; whenever it is sure, it agrees with git."""
    from actioncache import _lean as lean

    env = {**os.environ, **GIT_ENV}
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str, cwd: Path = repo) -> str:
        out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    def agrees(where: Path) -> None:
        sure, head = lean.git_head(str(where))
        assert sure, where
        assert (head or "") == git("rev-parse", "--verify", "-q", "HEAD", cwd=where)

    git("init", "-q")
    agrees(repo)  # no commit yet
    git("commit", "-q", "--allow-empty", "-m", "one")
    agrees(repo)
    (repo / "sub").mkdir()
    agrees(repo / "sub")
    git("pack-refs", "--all")
    agrees(repo)
    git("commit", "-q", "--allow-empty", "-m", "two")  # a loose ref beside a packed one
    agrees(repo)
    git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    agrees(tmp_path / "wt")
    git("checkout", "-q", "--detach", "HEAD~1")
    agrees(repo)
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    assert lean.git_head(str(tmp_path)) == (False, None)  # git decides when GIT_DIR says where


# --- what a hit costs: the end of its process, and the load of the moment (issue 31, honest time saved) ----


def test_a_hits_cost_includes_the_end_of_its_process(ex, strace):
    """A hit times itself from its fork to its last instant; the kernel's teardown of its memory and
    the caller's wake-up come after, a fifth of a hit here. The measuring run times that end on a
    hit-shaped process, and every fast-path hit's cost (and time saved) carries it."""
    from actioncache.runs import cost

    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}
    with Cache(ex.url) as cache:
        cost.add_hit_costs(cache.store, [0.001])  # hits here cost nothing: `sleep` is worth caching
    for _ in range(4):  # miss, measuring run, two hits (fast path)
        subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--", "sleep", "0.3"], cwd=ex.work, env=env,
                       capture_output=True, timeout=120, check=True)
    with Cache(ex.url) as cache:
        assert cost.exit_cpu_ms(cache.store) is not None  # timed by the measuring run
        pending = stats_since(cache, "1h")  # the hits still in the journal
        hits = [r for r in log.records(cache, log.RUN_LOG_PREFIX) if r.get("hit")]
        assert log.fold_journal(cache) is None
        folded = stats_since(cache, "1h")  # the same hits in the run log: the same figures
    assert len(hits) == 2
    for hit in hits:
        assert hit["fast"] and hit["exit_ms"] > 0 and hit["hit_ms"] > hit["exit_ms"]
        assert hit["saved_ms"] == pytest.approx(hit["fresh_ms"] - hit["hit_ms"], abs=0.01)
    assert pending["hit_cost_s"] == folded["hit_cost_s"] == round(sum(h["hit_ms"] for h in hits) / 1000, 3)
    assert pending["time_saved_s"] == folded["time_saved_s"]
    report = stats_json(ex)  # the store's counters: the settled cost, beside the time saved
    assert report["by_action"]["exec:sleep"]["hit_cost_s"] == pytest.approx(pending["hit_cost_s"], abs=0.002)


def test_a_cheap_runs_overhead_includes_the_end_of_its_process(tmp_path):
    """A cheap run ends its Python process by an exec: that teardown is the loop's too."""
    from actioncache.runs import cost

    cheap = {"tool": "cat", "outcome": "cheap", "overhead_ms": 40.0, "cpu_ms": 20.0}
    settled = cost.settle(cheap, 3.0)
    assert settled["exit_ms"] == 6.0 and settled["overhead_ms"] == 46.0  # at its own stretch (40 / 20)
    assert cost.settle(settled, 3.0) == settled  # settled once
    assert cost.settle({"tool": "cat", "outcome": "cheap", "overhead_ms": 40.0}, 3.0)["overhead_ms"] == 40.0


@settings(max_examples=60, deadline=None)
@given(cpu=st.floats(1.0, 200.0), end=st.floats(0.5, 20.0), fresh=st.floats(0.1, 2000.0),
       stretch=st.floats(1.0, 12.0), hit_stretch=st.floats(1.0, 12.0))
def test_a_command_cheaper_than_a_hit_never_reports_time_saved(tmp_path_factory, cpu, end, fresh, stretch,
                                                                hit_stretch):
    """The verdict compares a fresh run with a hit's cost at the load of the same moment; a command it
    caches whose fresh time is below a hit's settled cost reports no time saved (never a gain)."""
    from actioncache.runs import cost

    path = tmp_path_factory.mktemp("verdict") / "s.db"
    with Cache(f"sqlite:///{path}") as cache:
        cost.add_hit_costs(cache.store, [cpu * hit_stretch], [cpu])
        known = cost.read_json(cache.store, cost.HIT_COST_KEY)
        cost.write_json(cache.store, cost.HIT_COST_KEY, {**known, "exit_cpu_ms": end, "exit_n": 1}, None, "exec_cost")
        # The load of this moment, as a hit-shaped process met it (its stretch, and its end then).
        cheap, hit = cost.cheap_verdict(cache.store, fresh, None, cost.Probe(stretch, end * stretch))
        # A command whose time grows with the load as a hit's does gets the same verdict at every load.
        same, _ = cost.cheap_verdict(cache.store, fresh / stretch * 7.0, None, cost.Probe(7.0, end * 7.0))
        # Without a probe: this process's own stretch, with the store's figure for the end.
        scaled_cheap, scaled = cost.cheap_verdict(cache.store, fresh, stretch)
    assert hit.ms == pytest.approx((cpu + end) * stretch, abs=0.001 * stretch)  # (the store keeps 3 decimals)
    assert hit.source == "probed" and cheap == (fresh < hit.ms)
    assert scaled.source == "scaled" and scaled.ms == pytest.approx(hit.ms, abs=0.001 * stretch)
    if abs(fresh - hit.ms) > 0.01:  # (not on the boundary itself, where floats may round either way)
        assert same == cheap
    wall = cpu * hit_stretch
    record = {"tool": "t", "hit": True, "fresh_ms": fresh, "hit_ms": wall, "cpu_ms": cpu, "saved_ms": fresh - wall}
    settled = cost.settle(record, end)
    assert settled["saved_ms"] == pytest.approx(fresh - settled["hit_ms"], abs=0.002)
    if fresh <= settled["hit_ms"]:
        assert cost.counts_of(settled)["time_saved_ms"] <= 0.0


def test_the_verdict_uses_the_load_of_its_moment(ex, strace):
    """Hits timed on a quiet machine (their CPU time) against a fresh run timed now: --explain says
    what a hit costs now and where the figure comes from."""
    from actioncache.runs import cost

    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}
    with Cache(ex.url) as cache:
        cost.add_hit_costs(cache.store, [0.002], [0.001])  # hits here cost nothing: `sleep` is worth caching

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-m", "actioncache", "exec", *USE, *args, "--", "sleep", "0.2"], cwd=ex.work,
                              env=env, capture_output=True, timeout=120)

    assert run().returncode == 0  # the miss
    judged = run("--explain")
    assert b"measured: sleep runs in" in judged.stderr, judged.stderr
    assert b"ms of CPU a hit on this store x" in judged.stderr and b"the load a hit-shaped process met just now, +" \
        in judged.stderr and b"ms for its end: cached" in judged.stderr
    with Cache(ex.url) as cache:
        measured = [r for r in log.records(cache, log.RUN_LOG_PREFIX) if r.get("outcome") == "measured"]
    assert len(measured) == 1 and measured[0]["hit_now_ms"] > 0


def test_a_command_judged_cheap_under_a_set_threshold_is_keyed_anew_without_it(ex, strace):
    """ACTIONCACHE_CHEAP_MS is part of the environment the key holds: the verdict it led to lasts
    while it is set, and the message says so (an outside tester read "for a day" and saw the
    command recorded as soon as the variable was unset)."""
    judged = ex.run(*USE, "--explain", "--", "cat", "good.sh", extra_env={CHEAP_ENV: "1000000"})
    assert b"runs directly for a day while this environment lasts" in judged.stderr, judged.stderr
    env = {k: v for k, v in ex.env.items() if k != CHEAP_ENV}
    unset = subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--summary", "--", "cat", "good.sh"], cwd=ex.work,
                           env={**env, CHEAP_ENV: ""}, capture_output=True, timeout=120)
    assert unset.stdout == (ex.work / "good.sh").read_bytes()
    assert b"cat: cheap;" not in unset.stderr, unset.stderr  # another key: judged again, not run by the verdict


def test_a_hit_journal_an_earlier_version_left_beside_the_store_is_still_counted(ex, strace):
    # The hit journal moved from beside the store to the user cache directory; the hits an earlier
    # version journaled there, not yet folded, are folded by the next full run and counted.
    for _ in range(3):
        assert ex.run(*USE, "--", "cat", "good.sh").returncode == 0  # a miss, then hits on the hit path
    journal = ex.sidecar("exec-hits.jsonl")
    legacy = Path(f"{ex.db}-exec-hits.jsonl")
    legacy.write_bytes(journal.read_bytes())  # as the earlier version left it
    hits = sum(1 for line in journal.read_text().splitlines() if json.loads(line).get("hit"))
    journal.unlink()
    assert hits >= 1
    (ex.work / "other.sh").write_text("echo other\n")
    ex.run(*USE, "--", "cat", "other.sh")  # a full run folds the journals
    assert not legacy.exists()
    assert stats_json(ex)["by_action"]["exec:cat"]["hits"] == hits
