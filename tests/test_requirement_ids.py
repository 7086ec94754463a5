"""Every requirement id the code or the tests cite (``AC-17``, ``FR-009``, ``SC-003``, ``seed 004``,
``TEA-BUILTIN-010.1``) resolves in tests/requirements.md (not docs/: users never see these labels)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITED = re.compile(r"\b(?:AC|FR|SC)-\d+\b|\bseed \d{3}\b|\bTEA-[A-Z]+-\d+(?:\.\d+)*\b")


def test_every_cited_requirement_id_is_listed():
    listed = set(CITED.findall((ROOT / "tests" / "requirements.md").read_text(encoding="utf-8")))
    missing = []
    for folder in ("src", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                missing += [f"{path.relative_to(ROOT)}:{number}: {i}" for i in CITED.findall(line) if i not in listed]
    assert missing == [], "add these ids to tests/requirements.md (or cite a listed one)"
