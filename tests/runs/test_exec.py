"""``actioncache exec`` through the real CLI, with real shellcheck and a counting Python tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actioncache import Cache
from actioncache.runs.stats import stats_since

from .summaries import USE

PY = sys.executable


def use(*args: str) -> tuple[str, ...]:
    return (*USE, *args)


# --- verify scope with real shellcheck -------------------------------------------------------------


def test_unchanged_file_hits_and_replays_shellcheck(ex, shellcheck):
    first = ex.run(*use("--", "shellcheck", "good.sh"))
    second = ex.run(*use("--", "shellcheck", "good.sh"))
    assert first.returncode == second.returncode == 0
    assert b"shellcheck: miss" in first.stderr and b"shellcheck: hit" in second.stderr
    assert ex.tool_stats("shellcheck")["hits"] == 1


def test_edit_misses_again(ex, shellcheck):
    ex.run(*use("--", "shellcheck", "good.sh"))
    (ex.work / "good.sh").write_text('#!/bin/sh\necho "hello again $1"\n')
    again = ex.run(*use("--", "shellcheck", "good.sh"))
    assert b"shellcheck: miss" in again.stderr
    assert ex.candidates() == 2  # one key (same command line), two pasts


def test_the_working_directory_is_part_of_the_key(ex, shellcheck):
    ex.run(*use("--", "shellcheck", "good.sh"))
    other = ex.work / "other"
    other.mkdir()
    (other / "good.sh").write_text((ex.work / "good.sh").read_text())
    # Issue 12: a relative path means another file in another directory, so the same command line
    # there is another key (a bare `ls` must not replay another directory's listing).
    assert b"shellcheck: miss" in ex.run(*use("--", "shellcheck", "good.sh"), cwd=other).stderr
    assert b"shellcheck: hit" in ex.run(*use("--", "shellcheck", "good.sh"), cwd=other).stderr


def test_failing_run_is_never_cached_and_goes_to_the_fail_log(ex, shellcheck):
    runs = [ex.run(*use("--", "shellcheck", "bad.sh")) for _ in range(2)]
    assert [r.returncode for r in runs] == [1, 1]
    assert runs[0].stdout == runs[1].stdout and b"SC2154" in runs[1].stdout
    assert all(b"shellcheck: fail" in r.stderr for r in runs)
    assert ex.entries() == []
    assert len(ex.entries("runs:fail:*")) == 2
    listing = ex.run("--failures")
    assert listing.stdout.count(b"shellcheck  exit 1  exec:shellcheck:") == 2


# --- replay -------------------------------------------------------------------------------------


def test_hit_replays_stdout_stderr_and_exit_code_byte_for_byte(ex):
    first = ex.run(*use("--", PY, "tool.py", "bytes"))
    second = ex.run("--mode", "use", "--", PY, "tool.py", "bytes")
    assert ex.runs() == 1
    assert second.stdout == first.stdout == b"out\x00\xff\xfe binary\r\n"
    assert second.stderr == b"err \xe2\x98\x83 line\n"
    assert second.returncode == first.returncode == 0


def test_tool_failure_exit_code_passes_through_uncached(ex):
    first = ex.run(*use("--", PY, "tool.py", "fail"))
    second = ex.run(*use("--", PY, "tool.py", "fail"))
    assert first.returncode == second.returncode == 3
    assert ex.runs() == 2


def test_missing_tool_is_127_and_logged(ex):
    result = ex.run(*use("--", "no-such-tool-xyz", "good.sh"))
    assert result.returncode == 127
    assert b"cannot run 'no-such-tool-xyz'" in result.stderr
    assert len(ex.entries("runs:fail:*")) == 1


# --- modes -----------------------------------------------------------------------------------------


def test_mode_off_by_default_runs_and_opens_no_store(ex):
    for _ in range(2):
        assert ex.run("--", PY, "tool.py", "runs").returncode == 0
    assert ex.runs() == 2
    assert not ex.db.exists()
    ex.run("--mode", "use", "--", PY, "tool.py", "runs")
    assert ex.db.exists()


def test_record_then_use(ex):
    ex.run("--mode", "record", "--", PY, "tool.py", "runs")
    second = ex.run("--mode", "record", "--", PY, "tool.py", "runs")
    assert ex.runs() == 2
    replay = ex.run("--mode", "use", "--", PY, "tool.py", "runs")
    assert ex.runs() == 2 and replay.stdout == second.stdout  # the second run's mark


def test_force_fresh_and_its_alias_run_and_refresh(ex):
    first = ex.run("--mode", "use", "--", PY, "tool.py", "runs")
    fresh = ex.run("--mode", "use", "--force-no-cache", "--", PY, "tool.py", "runs")
    assert ex.runs() == 2 and fresh.stdout != first.stdout
    assert ex.run("--cache-mode", "use", "--", PY, "tool.py", "runs").stdout == fresh.stdout  # the refreshed entry


def test_modes_and_scopes_are_inherited_by_subprocesses(ex):
    # A loop exports CACHE_MODE/CACHE_SCOPE once; a verifier script it starts runs actioncache exec.
    script = ex.work / "verifier.sh"
    script.write_text(f'#!/bin/sh\nexec "{PY}" -m actioncache exec --scope read -- "{PY}" tool.py runs\n')
    loop = 'export CACHE_MODE=use CACHE_SCOPE=verify,read; sh verifier.sh; sh verifier.sh'
    done = subprocess.run(["sh", "-c", loop], cwd=ex.work, env=ex.env, capture_output=True, timeout=120)
    assert done.returncode == 0 and ex.runs() == 1
    not_enabled = 'export CACHE_MODE=use CACHE_SCOPE=verify; sh verifier.sh'
    subprocess.run(["sh", "-c", not_enabled], cwd=ex.work, env=ex.env, capture_output=True, timeout=120)
    assert ex.runs() == 2


def test_cache_skip_is_deprecated_use(ex):
    result = ex.run("--", PY, "tool.py", "runs", extra_env={"CACHE_SKIP": "1"})
    ex.run("--", PY, "tool.py", "runs", extra_env={"CACHE_SKIP": "1"})
    assert b"CACHE_SKIP=1 is deprecated" in result.stderr
    assert ex.runs() == 1


def test_bad_mode_in_the_environment_is_a_clear_error(ex):
    result = ex.run("--", PY, "tool.py", "runs", extra_env={"CACHE_MODE": "sometimes"})
    assert result.returncode == 2 and b"not a cache mode" in result.stderr
    assert ex.runs() == 0


def test_scope_list_on_scope_flag_names_the_fix(ex):
    result = ex.run("--scope", "verify,read", "--", PY, "tool.py", "runs")
    assert result.returncode == 2 and b"--cache-scope verify,read" in result.stderr


# --- read and llm_ro scopes -----------------------------------------------------------------------


def test_read_scope_misses_after_touch(ex):
    ex.run(*use("--scope", "read", "--", "cat", "good.sh"))
    assert b"cat: hit" in ex.run(*use("--scope", "read", "--", "cat", "good.sh")).stderr
    stat = os.stat(ex.work / "good.sh")
    os.utime(ex.work / "good.sh", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert b"cat: miss" in ex.run(*use("--scope", "read", "--", "cat", "good.sh")).stderr


def test_a_touch_misses_only_when_the_tool_looked_at_the_times(ex, shellcheck):
    # shellcheck stats the file by path: its stat data (mtime included) is what it observed (issue 28)
    ex.run(*use("--", "shellcheck", "good.sh"))
    stat = os.stat(ex.work / "good.sh")
    os.utime(ex.work / "good.sh", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert b"shellcheck: miss" in ex.run(*use("--", "shellcheck", "good.sh")).stderr
    # cat only opens and reads it (its fstat of the open file counts by content): a touch still hits
    ex.run(*use("--", "cat", "good.sh"))
    os.utime(ex.work / "good.sh", ns=(stat.st_atime_ns, stat.st_mtime_ns + 9_000_000_000))
    assert b"cat: hit" in ex.run(*use("--", "cat", "good.sh")).stderr


def test_llm_ro_refused_in_build_even_when_enabled(ex):
    args = ("--mode", "use", "--scope", "llm_ro", "--scopes", "verify,read,llm_ro", "--phase", "BUILD",
            "--", PY, "tool.py", "runs")
    first, second = ex.run(*args), ex.run(*args)
    assert ex.runs() == 2 and second.stdout != first.stdout
    assert b"never cached in phase BUILD" in first.stderr
    assert ex.entries() == []
    assert ex.tool_stats(os.path.basename(PY))["phase_blocked"] == 2


def test_llm_ro_in_report_is_keyed_by_git_head(ex):
    env = {"CACHE_MODE": "use", "CACHE_SCOPE": "verify,read,llm_ro", "CACHE_PHASE": "REPORT",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    os.rmdir(ex.work / ".git")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=ex.work, env={**ex.env, **env}, check=True, capture_output=True)

    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "one")
    args = ("--scope", "llm_ro", "--", PY, "tool.py", "runs")
    ex.run(*args, extra_env=env)
    ex.run(*args, extra_env=env)
    assert ex.runs() == 1
    git("commit", "-q", "--allow-empty", "-m", "two")
    ex.run(*args, extra_env=env)
    assert ex.runs() == 2


@pytest.mark.parametrize("name", ["CACHE_PHASE", "ACTIONCACHE_PHASE", "CACHE_SCOPE"])
def test_a_step_that_reads_its_phase_or_scopes_is_answered_for_its_own(ex, strace, name):
    # An outside tester's step chose its prompt by $CACHE_PHASE: ANALYZE and REVIEW replayed REPORT's
    # answer, as the policy variables were left out of the key. Only those that must share entries
    # across values (the mode: record, then use) are left out now.
    (ex.work / "phase.sh").write_text(f'#!/bin/sh\necho "analysis for ${{{name}}}"\n')
    (ex.work / "phase.sh").chmod(0o755)
    values = ("REPORT", "ANALYZE", "REVIEW") if "PHASE" in name else ("verify,read,llm_ro", "verify,llm_ro,read,x")
    base = {"CACHE_MODE": "use", "CACHE_SCOPE": "verify,read,llm_ro"}
    for value in (*values, *values):
        done = ex.run("--scope", "llm_ro", "--", "./phase.sh", extra_env={**base, "CACHE_PHASE": "REPORT", name: value})
        assert done.returncode == 0 and done.stdout == f"analysis for {value}\n".encode(), done.stderr
    assert len(ex.entries()) == len(values)  # one per value, each hit once it was recorded


# --- inputs, directories, stdin -----------------------------------------------------------------------


def test_without_tracing_a_directory_argument_is_keyed_by_its_tree(ex):
    src = ex.work / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("x = 1\n")
    args = ("--mode", "use", "--", PY, "tool.py", "runs", "src")
    off = {"ACTIONCACHE_TRACE": "off"}
    first = ex.run(*args, extra_env=off)
    assert b"read-sets off (ACTIONCACHE_TRACE=off)" in first.stderr
    ex.run(*args, extra_env=off)
    assert ex.runs() == 1
    (src / "pkg" / "__pycache__").mkdir()
    (src / "pkg" / "__pycache__" / "a.pyc").write_bytes(b"noise")  # skipped by the tree hash
    ex.run(*args, extra_env=off)
    assert ex.runs() == 1
    (src / "pkg" / "a.py").write_text("x = 2\n")
    ex.run(*args, extra_env=off)
    assert ex.runs() == 2


def test_traced_directory_argument_counts_only_if_read(ex, strace):
    # The counting tool never opens src/: with a read-set, editing it changes nothing it saw.
    src = ex.work / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("x = 1\n")
    args = ("--mode", "use", "--", PY, "tool.py", "runs", "src")
    ex.run(*args)
    ex.run(*args)
    assert ex.runs() == 1
    (src / "pkg" / "a.py").write_text("x = 2\n")
    ex.run(*args)
    assert ex.runs() == 1


def test_input_flag_adds_a_file_the_command_line_does_not_name(ex):
    (ex.work / "rules.txt").write_text("v1")
    args = ("--mode", "use", "--input", "rules.txt", "--", PY, "tool.py", "runs")
    ex.run(*args)
    ex.run(*args)
    (ex.work / "rules.txt").write_text("v2")
    ex.run(*args)
    assert ex.runs() == 2


def test_stdin_is_keyed_and_fed(ex):
    args = ("--mode", "use", "--stdin", "--", PY, "tool.py", "stdin")
    assert ex.run(*args, stdin=b"abc").stdout == b"ABC"
    assert ex.run(*args, stdin=b"abc").stdout == b"ABC"
    assert ex.run(*args, stdin=b"xyz").stdout == b"XYZ"
    assert ex.runs() == 2


# --- config file ------------------------------------------------------------------------------------


def test_config_non_cacheable_tools_always_run(ex, shellcheck):
    (ex.work / "actioncache.toml").write_text('mode = "use"\nnon_cacheable_tools = ["shellcheck", "python*"]\n')
    ex.trust(ex.work)
    for _ in range(2):
        result = ex.run("--summary", "--", "shellcheck", "good.sh")
        assert result.returncode == 0 and b"not cached (shellcheck is in non_cacheable_tools)" in result.stderr
        ex.run("--", PY, "tool.py", "runs")
    assert ex.runs() == 2
    assert ex.entries() == []


def test_yaml_config_sets_mode_and_store_once_trusted(ex):
    (ex.work / ".actioncache.yml").write_text("mode: use\nstore: .ac/cache.db\n")
    ex.trust(ex.work)
    env = {k: v for k, v in ex.env.items() if k != "ACTIONCACHE_URL"}
    for _ in range(2):
        subprocess.run([PY, "-m", "actioncache", "exec", "--", PY, "tool.py", "runs"], cwd=ex.work, env=env,
                       capture_output=True, timeout=120, check=True)
    assert ex.runs() == 1
    assert (ex.work / ".ac" / "cache.db").exists()


def test_the_kill_switch_is_named_where_a_run_says_caching_is_off(ex):
    # With `cache_settings.enabled: false` and CACHE_MODE=use exported, the summary said "set
    # CACHE_MODE=use or record": the one setting that was already so (an outside tester).
    (ex.work / ".actioncache.yml").write_text("cache_settings:\n  enabled: false\n")
    ex.trust(ex.work)
    for summary in (ex.run("--summary", "--", "cat", "tool.py"), ex.run("--explain", "--", "cat", "tool.py")):
        assert b"cache_settings.enabled is false in " in summary.stderr, summary.stderr
        assert b"set CACHE_MODE=use" not in summary.stderr, summary.stderr


def test_the_store_commands_read_the_store_the_loop_config_names(ex):
    # An outside tester's loop kept `store:` in its config: exec and loop-stats used it, while `stats`
    # said "no store at ~/.cache/actioncache/actioncache.db", `invalidate` failed the same way and
    # `cleanup` cleaned the default store. Every store command takes the store exec takes.
    (ex.work / ".actioncache.yml").write_text("mode: use\nstore: .ac/cache.db\n")
    ex.trust(ex.work)
    env = {k: v for k, v in ex.env.items() if k != "ACTIONCACHE_URL"}

    def cli(*args: str, cwd: Path = ex.work) -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-m", "actioncache", *args], cwd=cwd, env=env, capture_output=True, timeout=120)

    for _ in range(2):
        assert cli("exec", "--", PY, "tool.py", "runs").returncode == 0
    assert ex.runs() == 1
    stats = cli("stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["by_action"][f"exec:{os.path.basename(PY)}"]["hits"] == 1
    dropped = cli("invalidate", "--action", f"exec:{os.path.basename(PY)}")
    assert dropped.returncode == 0, dropped.stderr
    assert cli("exec", "--", PY, "tool.py", "runs").returncode == 0
    assert ex.runs() == 2  # the entry was gone: the tool ran again
    assert not (Path(env["XDG_CACHE_HOME"]) / "actioncache" / "actioncache.db").exists()  # the default: untouched
    # An entry an earlier version stored under the bare tool name goes with the same command.
    from actioncache.records import Records
    from actioncache.runs.manifest import ENTRY_TYPE

    with Cache(f"sqlite:///{ex.work / '.ac' / 'cache.db'}") as cache:
        Records(cache.store, cache.codec).put_raw("exec:old", b"{}", kind=ENTRY_TYPE, action="cat")
    assert cli("invalidate", "--action", "exec:cat").stdout.strip() == b"deleted 1 entry"
    elsewhere = ex.work.parent / "elsewhere"
    elsewhere.mkdir()
    assert b"no store at" in cli("stats", cwd=elsewhere).stderr  # outside the project: the default, as exec


# --- audits and stats -------------------------------------------------------------------------------


def test_audit_rerun_replaces_a_stale_entry_and_counts_the_mismatch(ex):
    first = ex.run("--mode", "use", "--", PY, "tool.py", "runs")  # caches the first run's mark
    audited = ex.run("--mode", "use", "--audit-rate", "1", "--", PY, "tool.py", "runs")
    assert audited.stdout != first.stdout and b"audit:" in audited.stderr and b"entry replaced" in audited.stderr
    assert ex.run("--mode", "use", "--", PY, "tool.py", "runs").stdout == audited.stdout
    tool = os.path.basename(PY)
    with Cache(ex.url) as cache:
        assert stats_since(cache, "1h")["by_tool"][tool]["audit_mismatches"] == 1


def test_audit_rate_zero_never_reruns(ex):
    for _ in range(3):
        ex.run("--", PY, "tool.py", "runs", extra_env={"CACHE_MODE": "use", "CACHE_AUDIT_RATE": "0"})
    assert ex.runs() == 1


def test_stats_since_per_tool(ex, shellcheck):
    ex.run(*use("--", "shellcheck", "good.sh"))
    ex.run(*use("--", "shellcheck", "good.sh"))
    ex.run(*use("--", "shellcheck", "bad.sh"))
    with Cache(ex.url) as cache:
        recent = stats_since(cache, "10m")
        future = stats_since(cache, "2999-01-01T00:00:00Z")
        bad = stats_since(cache, "yesterday")
    sc = recent["by_tool"]["shellcheck"]
    assert (sc["runs"], sc["hits"], sc["misses"], sc["failures"]) == (3, 1, 2, 1)
    assert future["runs"] == 0 and future["by_tool"] == {}
    assert not bad["success"] and "30m" in bad["error"]
    table = subprocess.run([PY, "-m", "actioncache", "stats", "--since", "1h"], env=ex.env, capture_output=True,
                           timeout=60, check=True).stdout.decode()
    assert "exec runs, from the run log" in table and "exec:shellcheck" in table


def test_explain_prints_the_key_parts(ex):
    result = ex.run("--mode", "use", "--explain", "--", PY, "tool.py", "runs", "good.sh",
                    extra_env={"ACTIONCACHE_TRACE": "off"})
    assert b"key cache:exec:" in result.stderr and b'["arg3","good.sh","f"' in result.stderr
    assert b"read-sets off" in result.stderr


def test_a_store_that_fails_never_fails_the_tool(ex):
    bogus = ex.run("--mode", "use", "--store", "nosuch://x", "--", PY, "tool.py", "runs")
    assert bogus.returncode == 0 and bogus.stdout and b"running uncached" in bogus.stderr and ex.runs() == 1
    down = ex.run("--mode", "use", "--store", "redis://127.0.0.1:1/0", "--", PY, "tool.py", "runs")
    assert down.returncode == 0 and down.stdout not in (b"", bogus.stdout) and ex.runs() == 2


# --- planted entries: a wrong-shaped manifest is a miss, the command runs, the entry is replaced --

WRONG_SHAPES = [
    {"at": "yesterday", "readset": [], "exit_code": 0, "stdout": "", "stderr": ""},
    {"at": 1e18, "readset": [["f", 5, None, None]], "exit_code": 0, "stdout": "", "stderr": ""},
    {"at": 1e18, "readset": "everything", "exit_code": 0, "stdout": "", "stderr": ""},
    {"at": 1e18, "readset": [[]], "exit_code": 0, "stdout": "", "stderr": ""},
    {"at": 1e18, "readset": [], "exit_code": "zero", "stdout": "", "stderr": ""},
    {"at": 1e18, "readset": [], "exit_code": 0, "stdout": "not base64!", "stderr": ""},
    {"at": 1e18, "readset": [], "exit_code": 0, "stdout": 42, "stderr": ""},
    {"at": 1e18, "readset": [], "exit_code": 0, "duration_ms": "slow", "stdout": "", "stderr": ""},
]


@pytest.mark.parametrize("shape", WRONG_SHAPES, ids=range(len(WRONG_SHAPES)))
def test_a_wrong_shaped_entry_runs_the_command_and_is_replaced(ex, shape):
    import json

    from actioncache.runs import manifest
    from actioncache.stores.base import Entry

    first = ex.run(*use("--", PY, "tool.py", "bytes"))
    assert first.returncode == 0 and ex.runs() == 1
    with Cache(ex.url) as cache:
        (key,) = cache.store.find(pattern="cache:exec:*")
        entry = cache.store.get(key)
        planted = b"j" + json.dumps({"format": manifest.FORMAT, "candidates": [shape]}).encode()
        cache.store.put(Entry(key, planted, dict(entry.metadata), entry.created_at, entry.expires_at))
    again = ex.run("--mode", "use", "--", PY, "tool.py", "bytes")
    assert again.returncode == 0 and again.stdout == b"out\x00\xff\xfe binary\r\n"
    assert ex.runs() == 2  # it ran, instead of crashing or replaying garbage
    third = ex.run("--mode", "use", "--", PY, "tool.py", "bytes")
    assert third.stdout == first.stdout and ex.runs() == 2  # and its result replaced the planted entry


def test_a_file_reached_through_a_system_path_or_proc_is_still_seen(ex, strace):
    """/usr/../work/f is /work/f (decided by the resolved path, not its text); /proc/self/cwd/f is a
    process's view, never left out: either recorded or the run is not cached, never a stale pass."""
    for path in (f"/usr/..{ex.work}/f", "/proc/self/cwd/f"):
        (ex.work / "f").write_text("ok\n")
        assert ex.run(*use("--", "grep", "-q", "ok", path)).returncode == 0
        assert ex.run(*use("--", "grep", "-q", "ok", path)).returncode == 0
        (ex.work / "f").write_text("no\n")
        assert ex.run(*use("--", "grep", "-q", "ok", path)).returncode == 1, path


# --- non_cacheable_tools match every program the traced run executed (attack report F7) -----------


WRAPPED = [
    ["bash", "deploy_script.sh"],
    ["./deploy_script.sh"],
    ["env", "./deploy_script.sh"],
    ["nice", "bash", "deploy_script.sh"],
    ["timeout", "30", "./deploy_script.sh"],
    ["sh", "-c", "./deploy_script.sh"],
    ["sh", "-c", "git push origin main"],
    ["xargs", "-a", "args.txt", "git"],
]


@pytest.mark.parametrize("command", WRAPPED, ids=[" ".join(c) for c in WRAPPED])
def test_non_cacheable_tool_run_through_a_wrapper_is_never_stored(ex, strace, command):
    (ex.work / "actioncache.toml").write_text('mode = "use"\nnon_cacheable_tools = ["deploy_script", "git_push"]\n')
    ex.trust(ex.work)
    counting = '#!/bin/sh\n: > "$RUNS_DIR/$$.$(date +%s%N)"\necho deployed\n'  # a mark per run (conftest)
    (ex.work / "deploy_script.sh").write_text(counting)
    (ex.work / "deploy_script.sh").chmod(0o755)
    bin_dir = ex.work.parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(counting)  # a stand-in git: a real push needs a server
    (bin_dir / "git").chmod(0o755)
    (ex.work / "args.txt").write_text("push\n")
    path = {"PATH": f"{bin_dir}:{ex.env['PATH']}"}
    for _ in range(2):
        done = ex.run("--", *command, extra_env=path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == b"deployed\n"
    assert ex.runs() == 2
    assert ex.entries() == []
