"""Fixtures for ``actioncache exec``: a work tree, a store, and the real CLI in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from actioncache import Cache
from actioncache.policy import ENV_VARS

POLICY_VARS = (*ENV_VARS, "SHELLCHECK_OPTS", "ACTIONCACHE_TRACE", "ACTIONCACHE_CHEAP_MS")

GOOD_SH = '#!/bin/sh\necho "hello $1"\n'
BAD_SH = "#!/bin/sh\necho $undefined_var\n"

# A tool that counts its own runs in $RUNS_FILE: a hit is proven by the count not moving. The
# counter lives outside the work tree: a Python tool lists its own directory while importing, and
# a run that then adds a file to a directory it listed is (rightly) not cached the first time.
COUNTING_TOOL = textwrap.dedent("""\
    import os, sys
    with open(os.environ["RUNS_FILE"], "a") as f:
        f.write("x")
    mode = sys.argv[1]
    if mode == "bytes":
        sys.stdout.buffer.write(b"out\\x00\\xff\\xfe binary\\r\\n")
        sys.stderr.buffer.write(b"err \\xe2\\x98\\x83 line\\n")
    elif mode == "fail":
        sys.stderr.write("boom\\n")
        sys.exit(3)
    elif mode == "runs":
        print(os.path.getsize(os.environ["RUNS_FILE"]))
    elif mode == "stdin":
        sys.stdout.write(sys.stdin.read().upper())
    """)


@dataclass
class ExecEnv:
    work: Path
    db: Path
    url: str
    env: dict[str, str]
    run: Callable[..., subprocess.CompletedProcess]

    def runs(self) -> int:
        path = Path(self.env["RUNS_FILE"])
        return path.stat().st_size if path.exists() else 0

    def stats(self) -> dict:
        with Cache(self.url) as cache:
            return cache.stats()

    def tool_stats(self, tool: str) -> dict:
        """This tool's exec counts from the run log (what `actioncache stats --since` shows)."""
        from actioncache.runs.stats import stats_since

        with Cache(self.url) as cache:
            return stats_since(cache, "1d")["by_tool"].get(tool, {})

    def entries(self, pattern: str = "cache:exec:*") -> list[str]:
        with Cache(self.url) as cache:
            return cache.store.find(pattern=pattern)

    def candidates(self) -> int:
        """How many recorded pasts all exec keys hold together."""
        from actioncache.runs import manifest

        with Cache(self.url) as cache:
            return sum(len(manifest.decode(cache.store.get(k).value)) for k in cache.store.find(pattern="cache:exec:*"))

    def trust(self, directory: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "actioncache", "trust", str(directory)], env=self.env,
                              capture_output=True, timeout=60, check=True)


def require_program(name: str, installer: str) -> str:
    """The program's path; missing, it skips locally and FAILS under CI=true (the install step has it)."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed; scripts/install.d/{installer} installs it")
        pytest.skip(f"{name} is not installed (bash scripts/install.d/{installer})")
    return path


@pytest.fixture
def shellcheck() -> str:
    return require_program("shellcheck", "50-shellcheck.sh")


@pytest.fixture
def strace() -> str:
    """The tracer behind read-sets."""
    return require_program("strace", "55-strace.sh")


@pytest.fixture
def ex(tmp_path, src_env) -> ExecEnv:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").mkdir()  # the config search stops here
    (work / "good.sh").write_text(GOOD_SH)
    (work / "bad.sh").write_text(BAD_SH)
    (work / "tool.py").write_text(COUNTING_TOOL)
    db = tmp_path / "exec.db"
    url = f"sqlite:///{db}"
    env = {k: v for k, v in src_env.items() if k not in POLICY_VARS}
    env["ACTIONCACHE_URL"] = url
    env["ACTIONCACHE_TRUST_FILE"] = str(tmp_path / "trusted")  # never the user's own trust list
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")
    # Cache every command, however fast: these tests prove caching with quick tools. The rule that a
    # command faster fresh than a hit is not cached has its own tests (test_cost.py), without this.
    env["ACTIONCACHE_CHEAP_MS"] = "0"
    (tmp_path / "counter").mkdir()
    env["RUNS_FILE"] = str(tmp_path / "counter" / "runs.txt")

    def run(*args: str, extra_env: dict[str, str] | None = None, stdin: bytes | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "actioncache", "exec", *args], cwd=cwd or work,
                              env={**env, **(extra_env or {})}, input=stdin, capture_output=True, timeout=120)

    return ExecEnv(work, db, url, env, run)
