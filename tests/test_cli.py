"""The core CLI commands, run as a user would: a subprocess, tables by default, --json for machines."""

from __future__ import annotations

import json
import re
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
    """A store URL that cannot be used is a bad argument: exit 2."""
    out = run(src_env, "stats", "--store", "nosuch://x")
    assert out.returncode == 2 and "unknown store scheme" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("args, says", [
    (["stats", "--since", "yesterday"], "'yesterday' is neither a span"),
    (["cleanup", "--limit", "0"], "must be 1 or more"),
    (["cleanup", "--limit", "-3"], "must be 1 or more"),
    (["cleanup", "--limit", "many"], "not a whole number"),
    (["hash", "x", "--algorithm", "crc32"], "invalid choice"),
    (["invalidate"], "one of the arguments"),
    (["stats", "--bogus"], "unknown option --bogus"),  # issue 26: named, with the closest option if any
    (["no-such-command"], "unknown command 'no-such-command'"),
    (["run", "agent.yaml", "--input", "not json"], "--input is not JSON"),
    (["exec", "--bogus", "--", "true"], "unknown option --bogus"),
    (["mcp", "--bogus"], "unknown option --bogus"),
])
def test_every_bad_argument_exits_2_and_says_why(src_env, filled, tmp_path, args, says):
    (tmp_path / "agent.yaml").write_text("name: a\nnodes:\n  - name: n\n    run: return {}\n")
    out = subprocess.run([sys.executable, "-m", "actioncache", *args], env={**src_env, "ACTIONCACHE_URL": filled},
                         cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert says in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("command", [["stats"], ["stats", "--json"], ["get", "cache:x:1"], ["cleanup"],
                                     ["invalidate", "--pattern", "*"]])
@pytest.mark.parametrize("scheme, name", [("sqlite", "typo.db"), ("duckdb", "typo.duckdb")])
def test_a_store_file_that_is_not_there_is_an_error_naming_it_and_is_not_created(src_env, tmp_path, command,
                                                                                  scheme, name):
    missing = tmp_path / name
    out = run(src_env, *command, "--store", f"{scheme}:///{str(missing).lstrip('/')}")
    assert out.returncode == 1 and f"no store at {missing}" in out.stderr, out.stderr
    assert not missing.exists()


@pytest.mark.parametrize("command", [["stats"], ["loop-stats"]])
def test_a_store_url_with_a_hash_is_refused_as_such_not_read_as_a_shorter_path(src_env, tmp_path, command):
    # the CLI named "no store at .../a" for sqlite:///.../a#b.db: another file than the URL's, which
    # every store refuses; now the store's own parser answers
    out = run(src_env, *command, "--store", f"sqlite:///{str(tmp_path).lstrip('/')}/a#b.db")
    assert out.returncode != 0 and "%23" in out.stderr and f"no store at {tmp_path}/a" not in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and list(tmp_path.iterdir()) == []


def test_the_default_store_that_is_not_there_is_an_error_too(src_env, tmp_path):
    where = tmp_path / "never" / "actioncache.db"
    out = run({**src_env, "ACTIONCACHE_URL": f"sqlite:///{str(where).lstrip('/')}"}, "stats")
    assert out.returncode == 1 and str(where) in out.stderr
    assert not where.parent.exists()


def test_stats_json_counts_are_integers(src_env, sqlite_url):
    cache = Cache(sqlite_url, cleanup_probability=0)
    for _ in range(4):
        cache.wrap("flaky", lambda: {"success": False, "error": "down"}, {})
    cache.wrap("ok", lambda: 1, {})
    cache.close()
    data = json.loads(run(src_env, "stats", "--store", sqlite_url, "--json").stdout)
    assert data["failures"] == 4 and data["by_action"]["flaky"]["failures"] == 4
    for bucket in (data, data["session"], *data["by_action"].values()):
        for name, value in bucket.items():
            if name not in ("time_saved_s", "hit_rate", "success") and isinstance(value, (int, float)):
                assert isinstance(value, int) and not isinstance(value, bool), (name, value)
    assert '"failures": 4,' in run(src_env, "stats", "--store", sqlite_url, "--json").stdout


def test_version(src_env):
    from actioncache import __version__

    out = run(src_env, "--version")
    assert out.returncode == 0 and out.stdout.strip() == f"actioncache {__version__}"


def test_help_lists_each_command_once_in_user_words(src_env):
    out = run(src_env, "--help")
    assert out.returncode == 0
    assert "face" not in out.stdout and "seed" not in out.stdout
    for command in ("run", "exec", "mcp", "mcp-proxy", "stats", "get", "invalidate", "cleanup", "hash"):
        assert len(re.findall(rf"^    {command}(?![\w-])", out.stdout, flags=re.M)) == 1, command
    descriptions = [line.strip() for line in out.stdout.splitlines() if line.startswith("    ")]
    assert len(descriptions) == len(set(descriptions))
