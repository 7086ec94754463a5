"""The worked example in docs/replay.md runs and prints what the doc says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "replay.md"


def test_worked_example_output_matches_the_doc(src_env):
    code = re.search(r"```python\n(from actioncache import open_store.*?)```", DOC.read_text(), re.S).group(1)
    promised = re.search(r"^# (\[\('input_text'.*)$", code, re.M).group(1)
    out = subprocess.run([sys.executable, "-c", code], env=src_env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == promised
