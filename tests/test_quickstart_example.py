"""examples/quickstart.py runs offline, and its second run is served from the cache."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def test_quickstart_second_run_hits(tmp_path, src_env):
    def run() -> str:
        out = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, env=src_env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    first, second = run(), run()
    assert "hit=False" in first and "hits=0 misses=2" in first
    assert "hit=True" in second and "hits=2 misses=2" in second
