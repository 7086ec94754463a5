"""`from actioncache import Cache, cached` stays light: what it imports is pinned here, so a new
top-level import of a heavy module shows up as a failing test (bench/bench_startup.py measures the
time; tests never time anything)."""

from __future__ import annotations

import json
import subprocess
import sys

# Each of these costs a noticeable part of `python -c pass` to import, and a plain cache never
# needs it: the library imports it where it is used (a face, a failure path, signed pickle).
HEAVY = ["logging", "dataclasses", "inspect", "pickle", "hmac", "uuid", "pathlib", "difflib", "asyncio",
         "argparse", "importlib.metadata", "tomllib", "sqlite3", "email", "http", "urllib.request",
         "actioncache.types", "actioncache.policy", "actioncache.agents", "actioncache.semantic",
         "actioncache.replay", "actioncache.runs", "actioncache.scratchpad", "actioncache.integrations"]


def test_importing_cache_and_cached_leaves_the_heavy_modules_alone(src_env):
    probe = ("import sys, json; before = set(sys.modules)\n"
             "from actioncache import Cache, cached\n"
             "print(json.dumps(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", probe], env=src_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    imported = set(json.loads(out.stdout))
    assert sorted(m for m in HEAVY if m in imported) == []


def test_a_cache_and_a_decorated_call_still_work_after_the_light_import(src_env, tmp_path):
    script = ("from actioncache import Cache, cached\n"
              f"c = Cache('sqlite:///{tmp_path}/light.db')\n"
              "f = c.cached(lambda x: x + 1)\n"
              "print(f(1), f(1), c.stats()['hits'])")
    out = subprocess.run([sys.executable, "-c", script], env=src_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["2", "2", "1"], out.stderr
