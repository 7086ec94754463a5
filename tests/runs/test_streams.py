"""``actioncache exec`` with stdout and stderr as one stream (``2>&1``, as agent harnesses capture
output), and in a working directory that was deleted (attack report F1, F8). Real CLI, real shells."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

PY = sys.executable

# Writes stdout, stderr, stdout, each flushed before the next: through one pipe the order is fixed
# by the writes themselves (no sleeps, no timing). Each real run leaves a mark in $RUNS_DIR.
INTERLEAVED = ("import os, sys, time; open(os.path.join(os.environ['RUNS_DIR'], str(time.time_ns())), 'w').close(); "
               "[(s.write(t), s.flush()) for s, t in ((sys.stdout, 'o1\\n'), (sys.stderr, 'e1\\n'), "
               "(sys.stdout, 'o2\\n'), (sys.stderr, 'e2\\n'), (sys.stdout, 'o3\\n'))]")
MERGED = b"o1\ne1\no2\ne2\no3\n"

# The hit path (no extra flag) and the full command (--env-mode all sends it there): both must agree.
PATHS = {"hit path": [], "full command": ["--env-mode", "all"]}


def _merged(ex, mode: str, extra: list[str]) -> subprocess.CompletedProcess:
    exec_cmd = shlex.join([PY, "-m", "actioncache", "exec", "--mode", mode, *extra, "--", PY, "-c", INTERLEAVED])
    return subprocess.run(["bash", "-c", f"{exec_cmd} 2>&1 | cat"], cwd=ex.work, env=ex.env, capture_output=True,
                          timeout=120)


@pytest.mark.parametrize("path", list(PATHS))
def test_one_stream_keeps_its_order_on_miss_and_hit(ex, path):
    off = _merged(ex, "off", [])
    assert off.stdout == MERGED
    miss = _merged(ex, "use", PATHS[path])
    assert miss.returncode == 0 and miss.stdout == MERGED
    runs = ex.runs()
    hit = _merged(ex, "use", PATHS[path])
    assert ex.runs() == runs, "the second run was not a hit"
    assert hit.returncode == 0 and hit.stdout == MERGED


@pytest.mark.parametrize("path", list(PATHS))
def test_two_streams_stay_two(ex, path):
    for _ in range(2):
        done = ex.run("--mode", "use", *PATHS[path], "--", PY, "-c", INTERLEAVED)
        assert done.returncode == 0
        assert done.stdout == b"o1\no2\no3\n"
        assert done.stderr == b"e1\ne2\n"
    assert ex.runs() == 1


def test_an_entry_recorded_with_two_streams_never_serves_one(ex):
    two = ex.run("--mode", "use", "--", PY, "-c", INTERLEAVED)
    assert two.returncode == 0 and ex.entries() != []
    merged = _merged(ex, "use", [])
    assert ex.runs() == 2, "a two-stream entry served a run whose output is one stream"
    assert merged.stdout == MERGED
    again = ex.run("--mode", "use", "--", PY, "-c", INTERLEAVED)  # and the other way round
    assert ex.runs() == 2 and again.stdout == b"o1\no2\no3\n" and again.stderr == b"e1\ne2\n"


@pytest.mark.parametrize("mode", ["off", "record", "use"])
def test_deleted_working_directory_runs_the_command(ex, mode):
    gone = ex.work / "gone"
    exec_cmd = shlex.join([PY, "-m", "actioncache", "exec", "--mode", mode, "--", "echo", "ran"])
    line = f"mkdir {shlex.quote(str(gone))} && cd {shlex.quote(str(gone))} && rmdir ../gone && {exec_cmd}"
    # no empty PYTHONPATH entry: that one means the working directory, and Python itself cannot start there
    env = {**ex.env, "PYTHONPATH": ":".join(p for p in ex.env.get("PYTHONPATH", "").split(":") if p)}
    for _ in range(2):
        done = subprocess.run(["bash", "-c", line], cwd=ex.work, env=env, capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout == b"ran\n"
        assert b"Traceback" not in done.stderr
        if mode == "off":
            assert done.stderr == b""
        else:
            assert b"working directory was deleted" in done.stderr
    assert not Path(gone).exists()


@pytest.mark.parametrize("mode", ["off", "use"])
def test_a_working_directory_past_path_max_runs_the_command(ex, mode):
    # An outside tester: in a directory whose path is longer than PATH_MAX, mode use died with a
    # traceback (ENAMETOOLONG while looking for a config file) before the command ran.
    segment = "d" * 200
    deep = "/".join([segment] * 22)  # ~4,400 characters below the work directory
    exec_cmd = shlex.join([PY, "-m", "actioncache", "exec", "--mode", mode, "--", "cat", "f"])
    line = (f"for i in $(seq 22); do mkdir {segment} && cd {segment} || exit 9; done; echo v1 > f; "
            f"{exec_cmd}; {exec_cmd}")
    env = {**ex.env, "PYTHONPATH": ":".join(p for p in ex.env.get("PYTHONPATH", "").split(":") if p)}
    done = subprocess.run(["bash", "-c", line], cwd=ex.work, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"v1\nv1\n"
    assert b"Traceback" not in done.stderr
    if mode == "use":
        assert b"cannot be looked up by its path" in done.stderr
    assert len(str(ex.work / deep)) > 4096


def test_explain_says_the_output_goes_through_a_pipe_when_stdout_is_a_terminal(ex):
    import os

    main, side = os.openpty()  # a real pseudo-terminal as exec's stdout
    try:
        done = subprocess.run([PY, "-m", "actioncache", "exec", "--mode", "use", "--explain", "--", "true"],
                              cwd=ex.work, env=ex.env, stdout=side, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(side)
        os.close(main)
    assert done.returncode == 0
    assert b"the command writes to a pipe" in done.stderr
    piped = ex.run("--mode", "use", "--explain", "--", "true")
    assert b"the command writes to a pipe" not in piped.stderr


# A shell command that leaves a mark per real run and writes stdout, stderr, stdout (attack report
# F1, F6, F7): with stdout closed or on /dev/full its echoes fail, and it says so on stderr.
MARKED = 'mktemp "$RUNS_DIR/run.XXXXXX" >/dev/null; echo o1; echo e1 >&2; echo o2'


def _redirected(ex, mode: str, extra: list[str], redirect: str) -> subprocess.CompletedProcess:
    exec_cmd = shlex.join([PY, "-m", "actioncache", "exec", "--mode", mode, *extra, "--", "sh", "-c", MARKED])
    return subprocess.run(["bash", "-c", f"{exec_cmd} {redirect}"], cwd=ex.work, env=ex.env, capture_output=True,
                          timeout=120)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("redirect", [">&-", ">/dev/full", "2>&-"])
def test_closed_or_device_output_goes_to_the_command_uncached(ex, path, redirect):
    off = _redirected(ex, "off", [], redirect)
    assert b"Traceback" not in off.stderr
    for attempt in range(2):
        runs = ex.runs()
        used = _redirected(ex, "use", PATHS[path], redirect)
        assert b"Traceback" not in used.stderr and b"Exception" not in used.stderr, used.stderr
        assert ex.runs() == runs + 1, f"run {attempt + 1} did not run the command"
        assert used.returncode == off.returncode
        if redirect != "2>&-":
            assert b"runs uncached" in used.stderr
            assert used.stderr.replace(b"\r", b"").splitlines()[1:] == off.stderr.splitlines()
        assert used.stdout == off.stdout
    assert ex.entries() == []


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("redirect", [">g 2>g", ">g 2>>g"])
def test_two_opens_of_one_file_are_not_one_stream(ex, path, redirect):
    def content(mode: str, extra: list[str]) -> tuple[int, bytes]:
        (ex.work / "g").unlink(missing_ok=True)
        done = _redirected(ex, mode, extra, redirect)
        assert b"Traceback" not in done.stderr
        return done.returncode, (ex.work / "g").read_bytes()

    code, off = content("off", [])
    for _ in range(2):
        runs = ex.runs()
        used_code, used = content("use", PATHS[path])
        assert ex.runs() == runs + 1, "two opens of one file were served from the cache"
        assert used_code == code
        # each open keeps its own offset, as without the cache (where e1 is overwritten or appended);
        # the reason, said first on stderr, moved the stderr offset, so the bytes differ from off's
        assert not used.startswith(b"o1\ne1\no2\n") and b"e1\n" in used, used
    assert off != b"o1\ne1\no2\n"


@pytest.mark.parametrize("path", list(PATHS))
def test_one_file_through_one_description_is_one_stream(ex, path):
    def content(mode: str) -> bytes:
        out = ex.work.parent / "g"  # outside the working directory the command reads
        out.unlink(missing_ok=True)
        exec_cmd = shlex.join([PY, "-m", "actioncache", "exec", "--mode", mode, *PATHS[path], "--", PY, "-c",
                               INTERLEAVED])
        done = subprocess.run(["bash", "-c", f"{exec_cmd} >{shlex.quote(str(out))} 2>&1"], cwd=ex.work, env=ex.env, timeout=120)
        assert done.returncode == 0
        return out.read_bytes()

    assert content("off") == MERGED
    first = content("use")
    assert first.startswith(MERGED), first  # (then any notes on stderr)
    assert content("use") == MERGED  # a new entry's first lookup may run it once more, timed (runner._measure)
    runs = ex.runs()
    assert content("use") == MERGED
    assert ex.runs() == runs, "not a hit: >g 2>&1 is one open file description, one stream"
