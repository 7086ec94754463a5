"""examples/plan_replay_demo.py runs offline and shows rebinding, a partial replay and the fallback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "examples" / "plan_replay_demo.py"


def test_demo_runs_offline_on_a_sqlite_store(tmp_path, src_env):
    out = subprocess.run([sys.executable, str(DEMO), "--store", f"sqlite:///{tmp_path}/demo.db"],
                         env=src_env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "replay: no_plan  -> plan afresh" in out
    assert "replay: 5 of 5 actions, no planner call:" in out
    assert "rebound: e3->e6, e4->e7, e5->e8, e6->e9" in out
    assert "text='reading lamp'" in out  # personalized, not the recorded 'desk lamp'
    assert "replay: 3 of 5 actions, then fallback (element_missing):" in out
    assert "click          -> e9   (button 'Find')" in out
    assert "next replay on this page: 5 of 5 actions, reason=None" in out
    assert "retrievals=4 hits=3 partial=1 fallbacks=1" in out
    assert "query 'oak floor lamp': clicks 'Oak Floor Lamp'" in out  # re-decided for the new query
    assert "query 'arc floor lamp': clicks None (intent_unresolved)" in out  # never the recorded item
