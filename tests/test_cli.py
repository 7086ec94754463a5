"""The core CLI commands, run as a user would: a subprocess, tables by default, --json for machines."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from actioncache import Cache


def run(env, *args):
    return subprocess.run([sys.executable, "-m", "actioncache", *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def filled(sqlite_url):
    cache = Cache(sqlite_url, cleanup_probability=0)
    cache.wrap("extract", lambda file: {"pages": 2}, {"file": "a.pdf"})
    cache.wrap("extract", lambda file: {"pages": 2}, {"file": "a.pdf"})
    cache.wrap("llm.call", lambda prompt: "hi", {"prompt": "x"}, ttl_seconds=0.001)
    cache.close()
    return sqlite_url


def test_stats_table_and_json(src_env, filled):
    out = run(src_env, "stats", "--store", filled)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("TOTAL") and " 1 " in line for line in lines)
    assert any(line.startswith("extract") for line in lines)
    data = json.loads(run(src_env, "stats", "--store", filled, "--json").stdout)
    assert data["hits"] == 1 and data["misses"] == 2 and data["entries"] == 2
    assert data["by_action"]["extract"]["hits"] == 1


def test_get_found_missing_and_json(src_env, filled):
    key = Cache(filled).store.find(pattern="cache:extract:*")[0]
    out = run(src_env, "get", key, "--store", filled, "--metadata")
    assert out.returncode == 0 and '"pages": 2' in out.stdout and "_cache_action" in out.stdout
    missing = run(src_env, "get", "cache:nope", "--store", filled)
    assert missing.returncode == 3 and "not found" in missing.stderr
    data = json.loads(run(src_env, "get", key, "--store", filled, "--json").stdout)
    assert data["found"] is True and data["value"] == {"pages": 2}


def test_cleanup_and_invalidate(src_env, filled):
    out = run(src_env, "cleanup", "--store", filled)
    assert out.returncode == 0 and "deleted 1 expired entry" in out.stdout
    data = json.loads(run(src_env, "invalidate", "--action", "extract", "--store", filled, "--json").stdout)
    assert data["deleted_count"] == 1
    assert run(src_env, "invalidate", "--pattern", "cache:*", "--store", filled).stdout.strip() == "deleted 0 entries"
    bad = run(src_env, "invalidate", "--metadata", "{oops", "--store", filled)
    assert bad.returncode == 2 and "not JSON" in bad.stderr


def test_hash(src_env, tmp_path):
    f = tmp_path / "x.txt"
    f.write_bytes(b"abc")
    out = run(src_env, "hash", str(f))
    assert out.stdout.startswith("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert run(src_env, "hash", str(tmp_path / "nope")).returncode == 1


def test_unusable_store_is_a_readable_error(src_env):
    out = run(src_env, "stats", "--store", "nosuch://x")
    assert out.returncode == 1 and "unknown store scheme" in out.stderr and "Traceback" not in out.stderr
