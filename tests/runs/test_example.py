"""examples/agent_loop/run_loop.sh: real shellcheck and pyflakes, second pass from the cache."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

LOOP = Path(__file__).resolve().parents[2] / "examples" / "agent_loop" / "run_loop.sh"


def test_example_loop_hits_on_the_second_pass_and_misses_the_edited_file(src_env, shellcheck, tmp_path):
    pytest.importorskip("pyflakes", reason="pip install 'actioncache[loop]'")
    env = {k: v for k, v in src_env.items() if not k.startswith(("CACHE_", "ACTIONCACHE_"))}
    env.update(ACTIONCACHE=f"{sys.executable} -m actioncache", PYFLAKES=f"{sys.executable} -m pyflakes",
               ACTIONCACHE_URL=f"sqlite:///{tmp_path}/loop.db", ACTIONCACHE_CHEAP_MS="0")  # cache even quick tools
    out = subprocess.run(["sh", str(LOOP)], env=env, capture_output=True, timeout=300, check=True).stdout.decode()
    passes = re.split(r"== pass \d: VERIFY\n", out.split("== loop summary")[0])[1:]
    outcomes = [re.findall(r"actioncache exec: (\w+): (\w+);", p) for p in passes]
    assert [o for _, o in outcomes[0]] == ["miss"] * 4
    assert [o for _, o in outcomes[1]] == ["hit"] * 4
    assert [o for _, o in outcomes[2]] == ["hit", "miss", "hit", "hit"]  # scripts/clean.sh was edited
    summary = out.split("== loop summary")[1]
    assert re.search(r"exec:shellcheck\s+3\s+3\s+50%", summary)  # hits, misses, hit rate over 6 runs
    assert "Cache Statistics:" in summary and "Hit Cost:" in summary
