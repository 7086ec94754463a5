"""A run of the suite leaves nothing behind (a pytest plugin; tests/conftest.py loads it).

Under scripts/test.sh every test talks to servers of its own run (tests/services.py) and writes its
files under the run's directory, all removed when the run ends. This plugin checks the places a
test could still reach by mistake: at the start of the session it notes what the machine's Redis
(every database) and PostgreSQL (the `test` database's tables) hold, what the user's cache
directory and the checkout contain; at the end it fails the run, naming each one that gained
something. It runs in the controlling process only (not in pytest-xdist workers), and only when
scripts/test.sh set ACTIONCACHE_TEST_RUN_DIR: a developer's own pytest run on the machine's
servers is not judged.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MACHINE_REDIS = ("127.0.0.1", 6379)
MACHINE_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
# The user's cache directory holds what installs keep on purpose: the development set-up (dev) and
# the exported embedding models (onnx). Anything else a test made there is a leftover.
KEPT_IN_USER_CACHE = {"dev", "onnx"}


def _redis_key_counts() -> dict[str, int]:
    try:
        import redis
    except ImportError:
        return {}
    try:
        client = redis.Redis(*MACHINE_REDIS, socket_timeout=2, socket_connect_timeout=1)
        keyspace = client.info("keyspace")
    except Exception:
        return {}
    return {f"redis db {db[2:]}": int(info["keys"]) for db, info in keyspace.items()}


def _postgres_tables() -> set[str]:
    try:
        import psycopg
    except ImportError:
        return set()
    try:
        with psycopg.connect(MACHINE_POSTGRES, connect_timeout=2) as conn:
            rows = conn.execute("SELECT schemaname || '.' || tablename FROM pg_tables "
                                "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')").fetchall()
    except Exception:
        return set()
    return {row[0] for row in rows}


def _user_cache_entries() -> set[str]:
    base = Path.home() / ".cache" / "actioncache"
    try:
        return {p.name for p in base.iterdir() if p.name not in KEPT_IN_USER_CACHE}
    except OSError:
        return set()


def _checkout_untracked() -> set[str]:
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        return set()
    paths = {line[3:] for line in out.stdout.splitlines() if line[:2] in ("??", "!!")}
    return {p for p in paths if not p.startswith((".venv/", ".ci/.state/")) and "__pycache__" not in p
            and not p.endswith(".pyc") and ".egg-info/" not in p}


def snapshot() -> dict[str, object]:
    return {"redis": _redis_key_counts(), "postgres": _postgres_tables(), "user cache": _user_cache_entries(),
            "checkout": _checkout_untracked()}


def grown(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """What `after` holds that `before` did not, one line per place."""
    found = []
    redis_before, redis_after = before["redis"], after["redis"]
    assert isinstance(redis_before, dict) and isinstance(redis_after, dict)
    for db, count in sorted(redis_after.items()):
        if count > redis_before.get(db, 0):
            found.append(f"the machine's Redis {db}: {count - redis_before.get(db, 0)} new keys")
    for place in ("postgres", "user cache", "checkout"):
        new = sorted(set(after[place]) - set(before[place]))  # type: ignore[arg-type]
        if new:
            shown = ", ".join(new[:8]) + (f" and {len(new) - 8} more" if len(new) > 8 else "")
            found.append(f"{place}: {shown}")
    return found


def _judged(config: pytest.Config) -> bool:
    return bool(os.environ.get("ACTIONCACHE_TEST_RUN_DIR")) and not hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _judged(session.config):
        session.config.stash[_BEFORE] = snapshot()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _judged(session.config) or _BEFORE not in session.config.stash:
        return
    found = grown(session.config.stash[_BEFORE], snapshot())
    if found:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = ["the run left data behind (tests/leftovers.py):", *("  " + line for line in found)]
        for line in lines:
            if reporter is not None:
                reporter.write_line(line, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_BEFORE = pytest.StashKey[dict]()
