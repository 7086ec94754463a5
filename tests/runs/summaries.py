"""What the tests of ``actioncache exec`` share: the flags of a cached run that prints its summary
line, and the outcome that line reports."""

from __future__ import annotations

import subprocess

# exec in mode use, printing its summary line on stderr ("actioncache exec: <tool>: <outcome>; hits ...").
USE = ("--mode", "use", "--summary")


def outcome(result: subprocess.CompletedProcess) -> str:
    """The outcome (``hit``, ``miss``, ``uncached``...) of the summary line in ``result``'s stderr."""
    for line in result.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("actioncache exec: ") and "; hits " in line:
            return line.split(": ")[2].split(";")[0]
    raise AssertionError(f"no summary line in {result.stderr!r}")
