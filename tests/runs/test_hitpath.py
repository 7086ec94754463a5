"""The exec hit path: the same answers as the full command, with only the imports a hit needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache import _lean as lean

PY = sys.executable
HEAVY = ("argparse", "json", "re", "typing", "hashlib", "subprocess", "actioncache.cache", "actioncache.policy",
         "actioncache.stores.base", "actioncache.codec", "yaml", "jinja2", "fsspec", "actioncache.agents")


def imported(result: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.decode("utf-8", "replace").splitlines()
            if line.startswith("import time:") and "|" in line}


def test_a_plain_hit_imports_only_what_it_needs(ex, strace):
    args = ("--mode", "use", "--", "cat", "good.sh")
    ex.run(*args)
    hit = subprocess.run([PY, "-X", "importtime", "-m", "actioncache", "exec", *args], cwd=ex.work, env=ex.env,
                         capture_output=True, timeout=60)
    assert hit.returncode == 0 and hit.stdout == (ex.work / "good.sh").read_bytes()
    modules = imported(hit)
    assert "actioncache.runs.hitpath" in modules
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


# What a traced miss does not need, and once cost each one (bench/bench_miss_instructions.py):
# dataclasses with inspect, ast, dis and tokenize (~43 M instructions, and ~4 M per class it builds:
# the miss path's records are actioncache._record's), statistics with fractions and decimal (~11 M:
# one median of the trace's call times).
MISS_HEAVY = ("dataclasses", "inspect", "ast", "dis", "tokenize", "statistics", "fractions", "decimal")


def test_a_traced_miss_leaves_the_heavy_modules_alone(ex, strace):
    args = ("--mode", "use", "--", "cat", "good.sh")
    miss = subprocess.run([PY, "-X", "importtime", "-m", "actioncache", "exec", "--explain", *args], cwd=ex.work,
                          env={**ex.env, "ACTIONCACHE_CHEAP_MS": "0"}, capture_output=True, timeout=60)
    assert miss.returncode == 0 and miss.stdout == (ex.work / "good.sh").read_bytes()
    assert b"recorded read-set" in miss.stderr  # traced and stored: the whole miss path ran
    modules = imported(miss)
    assert "actioncache.runs.trace" in modules and "actioncache.runs.runner" in modules
    assert not modules & set(MISS_HEAVY), sorted(modules & set(MISS_HEAVY))


# Everything a hit through the `actioncache` command may import beyond what `python -S -c pass` loads.
# An allow-list, not a deny-list: a new import on the hit path (a module body to unmarshal and run,
# an extension module to load) fails here until it is shown to be worth its cost.
# Not os (nor stat, posixpath, _collections_abc): ~6 M instructions, 15% of `python -c pass`; the hit
# path has os's core from actioncache._os. Not __future__ (0.6 M): hit-path modules quote annotations.
HIT_MODULES = frozenset({
    "_stat", "gc", "_signal", "errno", "time", "_sha256", "_sha2", "_json", "binascii", "_sqlite3", "fcntl",
    "_actioncache_launch", "actioncache", "actioncache._os", "actioncache.__main__", "actioncache.runs",
    "actioncache.runs.hitpath", "actioncache._lean",
    "actioncache.runs.configmemo", "actioncache.runs.naming",
    "actioncache.runs.manifest", "actioncache.runs.memoform", "actioncache.runs.keys"})


def test_a_hit_through_the_command_imports_only_the_hit_modules(ex, strace):
    launcher = Path(PY).parent / "actioncache"  # bin/actioncache: python -S
    args = ("exec", "--mode", "use", "--", "cat", "good.sh")
    # The environment is keyed: the same for every run (and PWD as the launcher's sh sets it).
    env = {**ex.env, "PYTHONPROFILEIMPORTTIME": "1", "PWD": str(ex.work)}
    for _ in range(2):  # the miss, then the entry's first lookup (an untraced, timed run)
        ex.run(*args[1:], extra_env=env)
    hit = subprocess.run([str(launcher), *args], cwd=ex.work, env=env, capture_output=True, timeout=60)
    assert hit.returncode == 0 and hit.stdout == (ex.work / "good.sh").read_bytes()
    bare = subprocess.run([PY, "-S", "-c", "pass"], cwd=ex.work, env=env, capture_output=True, timeout=60)
    modules = imported(hit) - imported(bare)
    assert "actioncache.runs.hitpath" in modules and "actioncache.cli" not in modules
    assert modules <= HIT_MODULES, sorted(modules - HIT_MODULES)


def test_hit_path_and_full_command_agree(ex, strace):
    args = ("--mode", "use", "--summary", "--", "cat", "good.sh")
    assert b"cat: miss" in ex.run(*args).stderr
    fast = ex.run(*args)
    full = ex.run("--explain", *args)  # --explain always takes the full command
    assert b"cat: hit" in fast.stderr and b"cat: hit" in full.stderr and fast.stdout == full.stdout
    (ex.work / "good.sh").write_text("#!/bin/sh\necho changed\n")
    assert b"cat: miss" in ex.run(*args).stderr  # the fast path declines, the full command runs it


def test_fast_hits_are_counted_without_a_store_write(ex, strace):
    args = ("--mode", "use", "--", "cat", "good.sh")
    ex.run(*args)
    before = ex.db.stat().st_mtime_ns
    for _ in range(3):
        ex.run(*args)
    assert ex.db.stat().st_mtime_ns == before  # a hit is a read
    assert ex.tool_stats("cat")["hits"] == 3
    ex.run("--mode", "use", "--", "cat", "bad.sh")  # a miss folds the journal into the run log
    assert ex.tool_stats("cat")["hits"] == 3 and ex.tool_stats("cat")["misses"] == 2


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_lean_json_is_canonical_json(value):
    text = lean.dumps(value)
    assert text == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert lean.loads(text) == json.loads(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | json_values.map(lambda v: json.dumps(v)[:-1]) | st.sampled_from(
    ['"a\x01b"', '{"a": "x\ty"}', '{"a": tru}', "", "[1,", '"\ud800"', "01", "nan", "NaN", "Infinity",
     "[-Infinity, NaN]"]))
def test_lean_json_takes_what_json_takes_and_refuses_the_rest_with_value_error(text):
    """A damaged entry (another writer's, a cut-off file) must be a miss: the hit path catches
    ValueError, so the lean reader raises nothing else where json refuses the text."""
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            lean.loads(text)
        return
    assert repr(lean.loads(text)) == repr(expected)  # (repr: NaN, which json takes, is not equal to itself)


def test_a_config_file_is_read_from_its_memo_and_an_edit_is_seen(ex, strace):
    import time

    config = ex.work / "artifacts" / "rollflow_cache" / "config.yml"
    config.parent.mkdir(parents=True)
    config.write_text("max_cache_age_hours: 100\nnon_cacheable_tools: [git_push]\n")
    time.sleep(2.1)  # a config changed within the last 2 s is racy: no memo is written for it
    args = ("--mode", "use", "--summary", "--", "cat", "good.sh")
    ex.run(*args)  # the full command parses the YAML and leaves the memo
    hit = subprocess.run([PY, "-X", "importtime", "-m", "actioncache", "exec", *args], cwd=ex.work, env=ex.env,
                         capture_output=True, timeout=60)
    assert b"cat: hit" in hit.stderr
    assert "actioncache.runs.hitpath" in imported(hit) and not imported(hit) & {"yaml", "actioncache.policy"}
    config.write_text("max_cache_age_hours: 100\nnon_cacheable_tools: [git_push, cat]\n")
    edited = ex.run(*args)  # the memo no longer matches the file: the full command reads it
    assert b"not cached (cat is in non_cacheable_tools)" in edited.stderr
    config.write_text("cache_settings:\n  enabled: false\n")
    assert b"cache_settings.enabled is false" in ex.run(*args).stderr


def test_the_hit_path_looks_for_the_config_files_the_policy_reads():
    from actioncache import policy
    from actioncache.runs import hitpath

    assert hitpath.CONFIG_NAMES == policy.CONFIG_NAMES
