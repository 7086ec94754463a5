"""``actioncache exec`` in a pipeline: SIGPIPE as a shell gives it, a bounded capture, a reader that
goes away (attack report F15). Real CLI, real ``yes``/``head``/``grep``."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

PY = sys.executable
SIGPIPE_BIT = 1 << 12  # signal 13 in /proc's SigIgn mask


def _ignored(status: bytes) -> int:
    line = next(x for x in status.splitlines() if x.startswith(b"SigIgn:"))
    return int(line.split()[1], 16)


@pytest.mark.parametrize("mode", ["off", "use"])
def test_command_starts_with_default_sigpipe(ex, mode):
    done = ex.run("--mode", mode, "--", "grep", "SigIgn", "/proc/self/status")
    assert done.returncode == 0, done.stderr
    assert not _ignored(done.stdout) & SIGPIPE_BIT


@pytest.mark.parametrize("mode", ["off", "use"])
def test_endless_producer_piped_to_head_stops_and_is_not_stored(ex, mode):
    exec_cmd = shlex.join([PY, "-m", "actioncache", "exec", "--mode", mode, "--", "yes"])
    # the memory cap turns the old unbounded buffering into a quick failure instead of the machine's memory
    line = f"ulimit -v 2000000; {exec_cmd} | head -1"
    done = subprocess.run(["bash", "-c", line], cwd=ex.work, env=ex.env, capture_output=True, timeout=90)
    assert done.stdout == b"y\n"
    assert b"MemoryError" not in done.stderr and b"Traceback" not in done.stderr
    assert ex.entries() == []


def test_output_over_the_bound_streams_whole_and_is_not_stored(ex):
    script = "import sys; sys.stdout.write('x' * 5000); sys.stdout.flush()"
    for _ in range(2):
        done = ex.run("--mode", "use", "--", PY, "-c", script, extra_env={"ACTIONCACHE_MAX_OUTPUT": "1000"})
        assert done.returncode == 0, done.stderr
        assert done.stdout == b"x" * 5000
        assert b"over 1000 bytes" in done.stderr
    assert ex.entries() == []
    under = ex.run("--mode", "use", "--", PY, "-c", script, extra_env={"ACTIONCACHE_MAX_OUTPUT": "100000"})
    assert under.stdout == b"x" * 5000 and ex.entries() != []
