"""State no file records: other processes, advisory locks, /proc/self's view of the system, and the
stat data of an open descriptor. Each case reproduced a stale replay (or a lost effect) before the
rule that catches it; every replay here is compared with a fresh run (mode off): equal output, or
a miss / an uncached run.

Real components throughout: the real CLI in a subprocess, real strace, real sh, flock, python3,
and real other processes (a ``sleep``, a lock holder)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actioncache.runs import readset
from actioncache.runs.trace import touches

from .summaries import USE, outcome

PY = sys.executable


def honest(ex, *command: str) -> subprocess.CompletedProcess:
    """Run ``command`` through exec (mode use), then fresh; the replay must print what the fresh run prints."""
    cached = ex.run(*USE, "--", *command)
    fresh = subprocess.run(list(command), cwd=ex.work, env=ex.env, capture_output=True, timeout=60)
    assert cached.stdout == fresh.stdout, (outcome(cached), cached.stdout, fresh.stdout, cached.stderr)
    return cached


def twice(ex, *command: str) -> subprocess.CompletedProcess:
    """Run ``command`` through exec twice (a miss, then a hit if it was cached); the second result."""
    ex.run(*USE, "--", *command)
    return ex.run(*USE, "--", *command)


@pytest.fixture
def other(ex):
    """A process the command did not start."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("probe", [
    "os.kill(pid, 0)", "os.getpriority(os.PRIO_PROCESS, pid)", "os.getpgid(pid)", "os.getsid(pid)",
    "os.sched_getaffinity(pid)", "resource.prlimit(pid, resource.RLIMIT_NOFILE)", "os.close(os.pidfd_open(pid))",
])
def test_a_look_at_another_process_is_never_replayed(ex, strace, other, probe):
    code = (f"import os, resource, sys\npid = int(sys.argv[1])\ntry:\n    {probe}\n    print('up')\n"
            "except OSError as exc:\n    print('err', exc.errno)")
    command = (PY, "-c", code, str(other.pid))
    second = twice(ex, *command)
    assert outcome(second) == "fresh" and b"not cached: the command called" in second.stderr, second.stderr
    other.kill()
    other.wait()
    honest(ex, *command)  # "err 3" now, as a fresh run says


def test_kill_0_of_a_process_that_went_away_is_not_replayed_as_up(ex, strace, other):
    command = ("sh", "-c", f"kill -0 {other.pid} 2>/dev/null && echo up || echo down")
    twice(ex, *command)
    other.kill()
    other.wait()
    after = honest(ex, *command)
    assert after.stdout == b"down\n"


def test_a_signal_to_another_process_is_sent_every_time(ex, strace, tmp_path):
    marks = tmp_path / "sigs"
    target = subprocess.Popen(["bash", "-c", f'trap "echo got >> {marks}" USR1; while :; do sleep .05; done'])
    try:
        time.sleep(0.5)  # the trap is set
        for _ in range(3):
            ex.run(*USE, "--", "sh", "-c", f"kill -USR1 {target.pid}; echo sent")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not marks.exists() or len(marks.read_text().splitlines()) < 3):
            time.sleep(0.1)
        assert len(marks.read_text().splitlines()) == 3
    finally:
        target.kill()
        target.wait()


def test_a_shell_signalling_its_own_children_still_caches(ex, strace):
    command = ("sh", "-c", "sleep 5 & kill $!; wait; kill -0 $$ && echo self")
    second = twice(ex, *command)
    assert outcome(second) == "hit" and second.stdout == b"self\n", second.stderr


def test_an_xattr_write_is_never_replayed_as_a_no_op(ex, strace):
    target = ex.work / "xf"
    target.write_text("x")
    try:
        os.setxattr(target, "user.probe", b"1")
        os.removexattr(target, "user.probe")
    except OSError:
        pytest.skip("this file system keeps no user xattrs")
    command = (PY, "-c", "import os; os.setxattr('xf', 'user.k', b'v'); print('set')")
    second = twice(ex, *command)
    assert outcome(second) == "fresh" and b"setxattr" in second.stderr, second.stderr
    os.removexattr(target, "user.k")
    ex.run(*USE, "--", *command)
    assert os.listxattr(target) == ["user.k"]


@pytest.mark.parametrize("command", [
    ("sh", "-c", "flock -n lk true && echo free || echo busy"),
    (PY, "-c", "import fcntl\nf = open('lk', 'a')\ntry:\n    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
               "    print('free')\nexcept OSError:\n    print('busy')"),
])
def test_a_lock_tried_without_waiting_is_not_replayed(ex, strace, command):
    if command[0] == "sh" and shutil.which("flock") is None:
        pytest.skip("no flock(1) here")
    (ex.work / "lk").write_text("")
    twice(ex, *command)
    holder_code = ("import fcntl, sys, time\nf = open(sys.argv[1], 'a')\n"
                   + ("fcntl.flock(f, fcntl.LOCK_EX)" if command[0] == "sh" else "fcntl.lockf(f, fcntl.LOCK_EX)")
                   + "\nprint('held', flush=True)\ntime.sleep(300)")
    holder = subprocess.Popen([PY, "-c", holder_code, str(ex.work / "lk")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        after = honest(ex, *command)
        assert after.stdout == b"busy\n"
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_that_waits_still_caches(ex, strace):
    if shutil.which("flock") is None:
        pytest.skip("no flock(1) here")
    (ex.work / "lk").write_text("")
    second = twice(ex, "flock", "lk", "echo", "locked")
    assert outcome(second) == "hit" and second.stdout == b"locked\n", second.stderr


def test_proc_self_files_that_show_the_system_are_checked_and_the_processs_own_are_left_out():
    for own in ("/proc/self/stat", "/proc/self/status", "/proc/self/fd/3", "/proc/thread-self/maps",
                "/proc/self", "/proc/self/task/7/stat"):
        assert readset.place(own) == "own", own
    for system in ("/proc/self/mountinfo", "/proc/self/mounts", "/proc/self/net/tcp", "/proc/thread-self/mounts",
                   "/proc/self/cgroup"):
        assert readset.place(system) == "pseudo", system
    docs = (Path(__file__).resolve().parents[2] / "docs" / "agent-loops.md").read_text()
    for name in readset.OWN_PROC_FILES:
        assert f"`{name}`" in docs, f"/proc/self/{name} is left out but docs/agent-loops.md does not say so"


def test_proc_self_mountinfo_is_in_the_read_set_and_a_hit_checks_it(ex, strace):
    # A real change of the mount table needs privileges a test may not have; what matters is that the
    # file is recorded by content (a mount changes it) and that the checking process's own view of
    # it matches, so the command still caches.
    line = '100 openat(AT_FDCWD</w>, "/proc/self/mountinfo", O_RDONLY) = 3</proc/100/mountinfo>\n'
    records = readset.build(list(touches([line], "/w")), time.time_ns())
    assert [(r[0], r[1]) for r in records] == [("f", "/proc/self/mountinfo")]
    second = twice(ex, "sh", "-c", "wc -l < /proc/self/mountinfo")
    assert outcome(second) == "hit", second.stderr


def test_a_pseudo_file_that_keeps_its_stat_data_is_read_again_on_a_hit(ex, strace):
    command = ("cat", "/proc/uptime")
    twice(ex, *command)
    time.sleep(0.05)
    assert outcome(ex.run(*USE, "--", *command)) == "miss"  # the uptime moved; its stat data did not


def test_fstat_of_an_open_file_counts_mode_and_links(ex, strace):
    (ex.work / "fs1").write_text("data\n")
    command = (PY, "-c", "import os; f=open('fs1'); f.read(); s=os.fstat(f.fileno()); print(oct(s.st_mode), s.st_nlink)")
    second = twice(ex, *command)
    assert outcome(second) == "hit", second.stderr
    (ex.work / "fs1").chmod(0o600)
    os.link(ex.work / "fs1", ex.work / "fs1.hl")
    after = honest(ex, *command)
    assert b"0o100600 2" in after.stdout


def test_stat_of_an_o_path_descriptor_counts(ex, strace):
    (ex.work / "op2").write_text("x")
    command = (PY, "-c", "import os; fd=os.open('op2', os.O_PATH); print(oct(os.stat(fd).st_mode))")
    twice(ex, *command)
    (ex.work / "op2").chmod(0o600)
    after = honest(ex, *command)
    assert after.stdout == b"0o100600\n"


def test_a_file_the_command_writes_and_fstats_still_caches(ex, strace):
    command = (PY, "-c", "import os\nwith open('out.txt', 'w') as f:\n    f.write('x')\n    os.fstat(f.fileno())\n"
                         "print('done')")
    twice(ex, *command)  # the first run finds no out.txt; the second starts from the one it left
    third = ex.run(*USE, "--", *command)
    assert outcome(third) == "hit", third.stderr


def test_a_chmod_of_an_existing_file_is_made_again_after_the_mode_is_reset(ex, strace):
    target = ex.work / "cm"
    target.write_text("x")
    target.chmod(0o644)
    command = (PY, "-c", "import os; os.chmod('cm', 0o600); print('set')")
    second = twice(ex, *command)
    assert outcome(second) == "fresh" and b"chmod" in second.stderr, second.stderr
    target.chmod(0o644)
    ex.run(*USE, "--", *command)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_utime_of_an_existing_file_is_made_again(ex, strace):
    target = ex.work / "tf"
    target.write_text("x")
    os.utime(target, (1_000_000, 1_000_000))
    command = (PY, "-c", "import os; os.utime('tf', (2_000_000, 2_000_000)); print('set')")
    second = twice(ex, *command)
    assert outcome(second) == "fresh" and b"utime" in second.stderr, second.stderr
    os.utime(target, (1_000_000, 1_000_000))
    ex.run(*USE, "--", *command)
    assert target.stat().st_mtime == 2_000_000


def test_a_file_the_run_creates_and_chmods_is_left_as_a_fresh_run_leaves_it(ex, strace):
    target = ex.work / "made"
    command = (PY, "-c", "import os\nopen('made', 'w').write('x')\nos.chmod('made', 0o600)\nprint('made')")
    ex.run(*USE, "--", *command)
    target.chmod(0o644)
    ex.run(*USE, "--", *command)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
