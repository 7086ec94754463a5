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

# A tool that counts its own runs: each real run leaves a new empty file in $RUNS_DIR, named by its
# process id and the clock, and a hit is proven by the count not moving. A truncating create
# replaces whatever was at its path, so a fresh run would leave the same file there and the cache
# may replay the run; the name comes from the clock, which is outside the model (docs/agent-loops.md).
# (An append would be a side effect a hit cannot make: such a run is not cached at all.) The
# counter lives outside the work tree: a Python tool lists its own directory while importing, and
# a run that then adds a file to a directory it listed is (rightly) not cached the first time.
# ``runs`` prints this run's own mark: a replay prints the mark of the run it replays.
COUNTING_TOOL = textwrap.dedent("""\
    import os, sys, time
    mark = f"{os.getpid()}.{time.time_ns()}"
    open(os.path.join(os.environ["RUNS_DIR"], mark), "w").close()
    mode = sys.argv[1]
    if mode == "bytes":
        sys.stdout.buffer.write(b"out\\x00\\xff\\xfe binary\\r\\n")
        sys.stderr.buffer.write(b"err \\xe2\\x98\\x83 line\\n")
    elif mode == "fail":
        sys.stderr.write("boom\\n")
        sys.exit(3)
    elif mode == "runs":
        print(mark)
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

    def sidecar(self, kind: str, store: Path | None = None) -> Path:
        """The store's ``kind`` sidecar (``memo``, ``cheap``, ``exec-hits.jsonl``) as the exec process finds it, under this
        environment's cache directory (``_lean.store_sidecar``)."""
        from unittest import mock

        from actioncache._lean import store_sidecar

        with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": self.env["XDG_CACHE_HOME"]}):
            return Path(store_sidecar(str(store or self.db), kind))

    def runs(self) -> int:
        """How many times a counting tool really ran: the marks in $RUNS_DIR (``COUNTING_TOOL``)."""
        return len(os.listdir(self.env["RUNS_DIR"]))

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
    env["RUNS_DIR"] = str(tmp_path / "counter")

    def run(*args: str, extra_env: dict[str, str] | None = None, stdin: bytes | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "actioncache", "exec", *args], cwd=cwd or work,
                              env={**env, **(extra_env or {})}, input=stdin, capture_output=True, timeout=120)

    return ExecEnv(work, db, url, env, run)
