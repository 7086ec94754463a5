"""Every shell script in the repository is shellcheck-clean (the README runs shellcheck on them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import services

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(
    p.relative_to(ROOT).as_posix()
    for folder in ("scripts", "examples", ".ci")
    for p in (ROOT / folder).rglob("*")
    if p.is_file() and "node_modules" not in p.parts and (p.suffix == ".sh" or p.read_bytes().startswith(b"#!/usr/bin/env bash") or p.read_bytes().startswith(b"#!/bin/sh"))
)


def test_the_scripts_are_found():
    assert {"scripts/services.sh", "scripts/install.sh", ".ci/run"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_shellcheck_finds_nothing(script):
    shellcheck = services.require_program("shellcheck", "scripts/install.d/50-shellcheck.sh")
    proc = subprocess.run([shellcheck, script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
