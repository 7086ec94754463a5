"""What a command leaves in files is made again on a hit exactly as a fresh run would make it, or
the run is not cached and says why. A hit gives back output streams only, so it may stand for a
run only when a fresh run, started from the files as the recorded run left them, would leave them
the same: a truncating write (``>``) does; an append (``>>``, ``O_APPEND``), a write into an existing
file without truncating it, an exclusive creation (``mkdir``) or a removal do not. Each case was a
hit on the code before it (the file did not grow, or the replay passed where a fresh run fails)."""

from __future__ import annotations

import os
import subprocess
import sys

from .summaries import USE, outcome

PY = sys.executable


def fresh(ex, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(command), cwd=ex.work, env=ex.env, capture_output=True, timeout=60)


def test_an_append_is_never_replayed_away(ex, strace):
    append = ("sh", "-c", "echo line >> out.log; echo done")
    for runs in range(1, 4):
        result = ex.run(*USE, "--", *append)
        assert result.stdout == b"done\n" and outcome(result) != "hit", result.stderr
        assert (ex.work / "out.log").read_bytes() == b"line\n" * runs  # what fresh runs leave
    assert b"not cached: the command changed" in result.stderr and b"out.log in place" in result.stderr


def test_an_append_by_a_program_with_o_append_is_never_replayed_away(ex, strace):
    tool = (PY, "-c", "import os; fd = os.open('log', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644); "
                      "os.write(fd, b'x'); print('logged')")
    (ex.work / "log").write_bytes(b"")
    for runs in range(1, 4):
        result = ex.run(*USE, "--", *tool)
        assert result.stdout == b"logged\n" and outcome(result) != "hit", result.stderr
        assert (ex.work / "log").read_bytes() == b"x" * runs


def test_a_truncating_write_is_cached_and_leaves_the_same_content(ex, strace):
    write = ("sh", "-c", "echo line > out.txt; echo done")
    results = [ex.run(*USE, "--", *write) for _ in range(3)]
    assert [r.stdout for r in results] == [b"done\n"] * 3
    assert outcome(results[-1]) == "hit"  # a fresh run would leave out.txt as it is
    assert (ex.work / "out.txt").read_bytes() == b"line\n"
    (ex.work / "out.txt").write_bytes(b"edited\n")  # a fresh run would write it again: so must the cache
    again = ex.run(*USE, "--", *write)
    assert outcome(again) != "hit" and (ex.work / "out.txt").read_bytes() == b"line\n"


def test_a_write_into_an_existing_file_that_a_fresh_run_would_change_again_is_not_cached(ex, strace):
    """No O_TRUNC: it seeks to the end and writes, so every fresh run makes the file longer."""
    grow = (PY, "-c", "import os; fd = os.open('data', os.O_WRONLY); os.lseek(fd, 0, 2); os.write(fd, b'+'); "
                      "print('grown')")
    (ex.work / "data").write_bytes(b"base")
    for runs in range(1, 4):
        result = ex.run(*USE, "--", *grow)
        assert result.stdout == b"grown\n" and outcome(result) != "hit", result.stderr
        assert (ex.work / "data").read_bytes() == b"base" + b"+" * runs
    assert b"without truncating it first" in result.stderr


def test_an_exclusive_creation_or_a_removal_is_not_replayed_where_a_fresh_run_fails(ex, strace):
    for command in (("mkdir", "made"), (PY, "-c", "import os; os.remove('victim')")):
        (ex.work / "victim").write_text("v")
        first = ex.run(*USE, "--", *command)
        assert first.returncode == 0, first.stderr
        second = ex.run(*USE, "--", *command)
        again = fresh(ex, *command)
        assert second.returncode == again.returncode != 0, (outcome(second), second.stderr)
        assert b"not cached: the command" in first.stderr


def test_a_write_to_a_named_pipe_is_not_replayed_away(ex, strace):
    fifo = ex.work / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so the command's open for writing does not wait
    try:
        for _ in range(3):
            result = ex.run(*USE, "--", "sh", "-c", "echo hi > pipe; echo sent")
            assert result.stdout == b"sent\n" and outcome(result) != "hit", result.stderr
            assert os.read(reader, 100) == b"hi\n"  # what a fresh run writes, every time
    finally:
        os.close(reader)
    assert b"a named pipe, socket or device" in result.stderr
