"""What a command sees of its stdin is what it would see without the cache, in every mode, and a
replay is what a fresh run prints: stdin redirected from a file reaches the command as that file
(its path, offset and stat data are keyed), a socket as a socket, a closed stdin as closed. Each
case replayed a run made on another file, or fed a pipe, on the code before it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .summaries import USE, outcome

PY = sys.executable

# What a command can see of a file on its stdin without reading it: its name, its kind, its size
# (``wc -c`` asks fstat), and its offset.
LOOK = ("sh", "-c", "readlink /proc/self/fd/0; stat -L -c '%F %s' /dev/stdin; "
                    f"{PY} -c 'import os; print(os.lseek(0, 0, 1))'; cat")


def _exec(ex, mode: tuple[str, ...], command: tuple[str, ...], stdin: object) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "actioncache", "exec", *mode, "--", *command], cwd=ex.work, env=ex.env,
                          stdin=stdin, capture_output=True, timeout=120)


def honest_from_file(ex, command: tuple[str, ...], path: Path, offset: int = 0) -> subprocess.CompletedProcess:
    """exec (mode use) with ``path`` on stdin at ``offset``, then a fresh run the same way: equal output."""
    with open(path, "rb") as handle:
        os.lseek(handle.fileno(), offset, os.SEEK_SET)
        cached = _exec(ex, USE, command, handle)
    with open(path, "rb") as handle:
        os.lseek(handle.fileno(), offset, os.SEEK_SET)
        fresh = subprocess.run(list(command), cwd=ex.work, env=ex.env, stdin=handle, capture_output=True, timeout=60)
    assert cached.returncode == fresh.returncode, cached.stderr
    assert cached.stdout == fresh.stdout, (outcome(cached), cached.stdout, fresh.stdout, cached.stderr)
    return cached


def test_stdin_from_two_files_with_equal_bytes_never_replays_one_for_the_other(ex, strace):
    (ex.work / "a").write_bytes(b"same\n")
    (ex.work / "b").write_bytes(b"same\n")
    first = honest_from_file(ex, LOOK, ex.work / "a")
    assert first.stdout == f"{ex.work / 'a'}\nregular file 5\n0\nsame\n".encode()
    assert outcome(honest_from_file(ex, LOOK, ex.work / "a")) == "hit"
    other = honest_from_file(ex, LOOK, ex.work / "b")
    assert outcome(other) == "miss"
    (ex.work / "a").write_bytes(b"else\n")  # same size, new content
    assert outcome(honest_from_file(ex, LOOK, ex.work / "a")) == "miss"


def test_stdin_from_a_file_at_an_offset_is_read_from_there_and_left_where_a_fresh_run_leaves_it(ex, strace):
    """``(read line; cmd) < f``: the command goes on from the offset; and after it, the caller's
    next reader goes on from where the command stopped, on a hit as after a fresh run."""
    (ex.work / "f").write_bytes(b"line1\nline2\nline3\n")
    for expected in ("miss", "hit"):
        assert outcome(honest_from_file(ex, LOOK, ex.work / "f", offset=6)) == expected
    head = ("sh", "-c", "read line; echo got $line")  # sh reads stdin up to the newline, no further
    script = f"{PY} -m actioncache exec {' '.join(USE)} -- {' '.join(repr(a) for a in head)}; cat"
    for expected in ("miss", "hit"):
        with open(ex.work / "f", "rb") as handle:
            result = subprocess.run(["sh", "-c", script], cwd=ex.work, env=ex.env, stdin=handle,
                                    capture_output=True, timeout=120)
        assert result.stdout == b"got line1\nline2\nline3\n", result.stderr
        assert outcome(result) == expected


@pytest.mark.parametrize("kind", ["file", "socket", "null", "closed", "pipe"])
def test_each_kind_of_stdin_looks_the_same_in_mode_use_as_in_mode_off(ex, strace, kind):
    (ex.work / "in.txt").write_bytes(b"input\n")
    look = ("sh", "-c", "stat -L -c %F /dev/stdin 2>&1 || true; cat 2>/dev/null || true")
    seen = []
    for mode in (("--mode", "off"), USE, USE):
        stdin: object = None
        if kind == "file":
            stdin = os.open(ex.work / "in.txt", os.O_RDONLY)
        elif kind == "socket":
            ours, stdin = socket.socketpair()
            ours.sendall(b"input\n")
            ours.close()
        elif kind == "null":
            stdin = subprocess.DEVNULL
        elif kind == "pipe":
            read_end, write_end = os.pipe()
            os.write(write_end, b"input\n")
            os.close(write_end)
            stdin = read_end
        if kind == "closed":
            result = subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", PY, "-m", "actioncache", "exec", *mode, "--",
                                     *look], cwd=ex.work, env=ex.env, capture_output=True, timeout=120)
        else:
            result = _exec(ex, mode, look, stdin)
        if isinstance(stdin, int) and stdin >= 0:
            os.close(stdin)
        elif isinstance(stdin, socket.socket):
            stdin.close()
        seen.append(result.stdout)
    assert seen[0] == seen[1] == seen[2], seen
    if kind == "closed":
        assert b"runs uncached: stdin is closed" in result.stderr


def test_a_file_open_for_writing_on_stdin_runs_uncached_and_says_why(ex, strace):
    (ex.work / "rw").write_bytes(b"old\n")
    write_back = ("sh", "-c", "cat; echo new >&0")
    for _ in range(2):
        with open(ex.work / "rw", "r+b") as handle:
            result = _exec(ex, USE, write_back, handle)
        assert outcome(result) == "fresh"
    assert b"runs uncached: stdin is a file open for writing" in result.stderr
    assert (ex.work / "rw").read_bytes() == b"old\nnew\nnew\n"


def test_a_file_on_stdin_above_the_limit_runs_uncached_with_the_file_itself(ex, strace):
    from actioncache.runs.keys import STDIN_LIMIT

    big = ex.work / "big"
    with open(big, "wb") as handle:
        handle.truncate(STDIN_LIMIT + 10)
    with open(big, "rb") as handle:
        result = _exec(ex, USE, ("sh", "-c", "stat -L -c %F /dev/stdin; wc -c"), handle)
    assert result.stdout == f"regular file\n{STDIN_LIMIT + 10}\n".encode()
    assert b"runs uncached: stdin holds more than" in result.stderr
