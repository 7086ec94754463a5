"""Input the cache cannot key, paths through /proc and /dev/fd, calls the trace does not understand,
and a command's own temporary files (issue 28, follow-up). Each case reproduced a wrong hit (or a
run that never cached) on the code before it; every replay is compared with a fresh run of the
same command: equal output, or a miss."""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from actioncache.runs.trace import Touch, touches

from .summaries import USE, outcome

PY = sys.executable


def honest(ex, *command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``command`` through exec (mode use), then fresh; the replay must print what the fresh run prints."""
    cached = ex.run(*USE, "--", *command, cwd=cwd)
    fresh = subprocess.run(list(command), cwd=cwd or ex.work, env=ex.env, capture_output=True, timeout=300)
    assert cached.returncode == fresh.returncode, cached.stderr
    assert cached.stdout == fresh.stdout, (outcome(cached), cached.stdout, fresh.stdout, cached.stderr)
    return cached


def _with_terminal(ex, command: list[str], typed: bytes, ctty: bool = False) -> subprocess.CompletedProcess:
    """Run exec with a pseudo-terminal on stdin (and as controlling terminal with ``ctty``), ``typed`` typed on it."""
    master, slave = pty.openpty()
    os.write(master, typed)
    name = os.ttyname(slave)

    def session() -> None:
        os.setsid()
        if ctty:
            os.close(os.open(name, os.O_RDWR))  # a session leader's first terminal becomes its controlling one

    try:
        return subprocess.run([sys.executable, "-m", "actioncache", "exec", *USE, "--", *command], cwd=ex.work,
                              env=ex.env, stdin=None if ctty else slave, capture_output=True, timeout=60,
                              preexec_fn=session)
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.parametrize("how", ["stdin", "/dev/tty"])
def test_what_was_typed_on_the_terminal_is_never_replayed(ex, strace, how):
    if how == "stdin":
        command, ctty = [PY, "-c", "print('typed', input())"], False
    else:
        command, ctty = ["sh", "-c", "read line < /dev/tty; echo typed $line"], True
    for typed in (b"one\n", b"one\n", b"two\n", b"two\n"):
        result = _with_terminal(ex, command, typed, ctty)
        assert result.stdout == b"typed " + typed, (result.stdout, result.stderr)
        assert outcome(result) != "hit"
    assert b"a terminal or device: input the cache cannot key" in result.stderr


def test_what_a_command_sees_of_its_stdin_without_reading_it_is_keyed(ex, strace):
    """``test -t 0`` (an ``ioctl``, not a read) answers from the kind of stdin: a terminal, /dev/null,
    a pipe. A run on a terminal never replays for one on /dev/null, nor the other way round."""
    command = ["sh", "-c", "if [ -t 0 ]; then echo terminal; elif [ -p /dev/stdin ]; then echo pipe; else echo other; fi"]
    for _ in range(2):
        on_terminal = _with_terminal(ex, command, b"")
        assert on_terminal.stdout == b"terminal\n", on_terminal.stderr
        on_null = subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--", *command], cwd=ex.work,
                                 env=ex.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        assert on_null.stdout == b"other\n", (outcome(on_null), on_null.stderr)
        on_pipe = ex.run(*USE, "--", *command, stdin=b"")
        assert on_pipe.stdout == b"pipe\n", (outcome(on_pipe), on_pipe.stderr)
    assert outcome(on_null) == "hit"  # each kind is cached on its own


def test_input_from_a_socket_is_never_replayed(ex, strace, tmp_path):
    path = str(tmp_path / "answer.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    answer = [b"v1"]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(answer[0])
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    ask = (PY, "-c", f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({path!r}); print(s.recv(9))")
    try:
        for value in (b"v1", b"v1", b"v1", b"v2"):
            answer[0] = value
            result = honest(ex, *ask)
            assert outcome(result) != "hit"
        assert b"the network or a socket" in result.stderr
    finally:
        server.close()


PROBE = """
import socket, sys
family, address, how = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX if family == "unix" else socket.AF_INET)
if family == "unix":
    address = "\\0" + address  # abstract: no path to look up again
else:
    address = ("127.0.0.1", int(address))
try:
    s.connect(address) if how == "connect" else s.bind(address)
    print(how, "ok")
except OSError as e:
    print(how, "failed", e.errno)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("family,how", [("tcp", "connect"), ("unix", "connect"), ("tcp", "bind")])
def test_what_the_network_answered_is_never_replayed_whatever_the_call_returned(ex, strace, family, how):
    """F1: a refused connect observed that nothing was listening, a bind that the port was free;
    both change with no file changing. Every call that observes the network makes the run
    uncacheable whatever it returned ("API unreachable" must not replay after the server starts)."""
    address = str(_free_port()) if family == "tcp" else f"actioncache-test-{os.getpid()}-{how}"
    run = (PY, "-c", PROBE, family, address, how)
    for _ in range(2):
        before = honest(ex, *run)
        assert outcome(before) != "hit"
    assert b"the network or a socket" in before.stderr and b"not cached" in before.stderr
    server = socket.socket(socket.AF_UNIX if family == "unix" else socket.AF_INET)
    server.bind("\0" + address if family == "unix" else ("127.0.0.1", int(address)))
    server.listen()
    try:
        after = honest(ex, *run)
        assert after.stdout != before.stdout
    finally:
        server.close()


def test_network_calls_by_rule():
    """Only a connect to a Unix socket path that is not there is a file-system lookup (absence)."""
    lines = ['1 connect(3<socket:[1]>, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such '
             'file or directory)\n',
             '1 connect(3<socket:[2]>, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("127.0.0.1")}, 16) = '
             '-1 ECONNREFUSED (Connection refused)\n',
             '1 connect(3<socket:[3]>, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("10.9.9.9")}, 16) = '
             '-1 ETIMEDOUT (Connection timed out)\n',
             '1 connect(3<socket:[4]>, {sa_family=AF_UNIX, sun_path=@"x"}, 4) = -1 ECONNREFUSED (Connection refused)\n',
             '1 connect(3<socket:[5]>, {sa_family=AF_UNIX, sun_path="/run/x.sock"}, 14) = -1 ECONNREFUSED (Connection '
             'refused)\n',
             '1 bind(3<socket:[6]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("0.0.0.0")}, 16) = 0\n',
             '1 bind(3<socket:[7]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("0.0.0.0")}, 16) = -1 '
             'EADDRINUSE (Address already in use)\n',
             '1 listen(3<socket:[6]>, 5) = 0\n',
             '1 sendto(3<socket:[8]>, "x", 1, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("1.1.1.1")}'
             ', 16) = -1 ENETUNREACH (Network is unreachable)\n',
             '1 sendto(3<socket:[9]>, "x", 1, MSG_NOSIGNAL, NULL, 0) = 1\n',
             '1 getsockname(3<socket:[9]>, {sa_family=AF_UNIX}, [2]) = 0\n']
    got = list(touches(lines, "/w"))
    assert got[0] == Touch("stat", "/var/run/nscd/socket", "ENOENT")
    assert [t.kind for t in got[1:]] == ["uncacheable"] * 8
    assert "ECONNREFUSED" in got[1].path and "bind" in got[5].path


@pytest.mark.parametrize("script", ["exec 3<d; cat /dev/fd/3/f", "cat /proc/self/cwd/d/f", "cat /proc/self/root{work}/d/f",
                                    "exec 3<d; cat /proc/self/fd/3/f"])
def test_a_file_reached_through_proc_or_dev_fd_is_observed(ex, strace, script):
    (ex.work / "d").mkdir()
    (ex.work / "d" / "f").write_text("old\n")
    run = ("bash", "-c", script.format(work=ex.work))
    assert honest(ex, *run).stdout == b"old\n"
    honest(ex, *run)
    assert outcome(honest(ex, *run)) == "hit"
    (ex.work / "d" / "f").write_text("new\n")
    after = honest(ex, *run)
    assert outcome(after) == "miss" and after.stdout == b"new\n"


def test_a_path_through_another_process_view_is_not_cached(tmp_path):
    lines = ['10 newfstatat(AT_FDCWD</w>, "/dev/fd/7/f", {st_mode=S_IFREG|0644, st_size=1}, 0) = 0\n']
    got = list(touches(lines, "/w"))
    assert [t.kind for t in got] == ["uncacheable"] and "/dev/fd/7/f" in got[0].path


HANDLE_READ = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Handle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("f", ctypes.c_ubyte * 128)]
h = Handle(); h.bytes = 128; mount = ctypes.c_int()
if libc.name_to_handle_at(-100, b"data.txt", ctypes.byref(h), ctypes.byref(mount), 0) != 0:
    sys.exit("no handles here")
dirfd = os.open(".", os.O_RDONLY)
fd = libc.open_by_handle_at(dirfd, ctypes.byref(h), os.O_RDONLY)
if fd < 0:
    sys.exit("open_by_handle_at: errno %d" % ctypes.get_errno())
print(os.read(fd, 100).decode().strip())
"""


def test_a_call_the_trace_does_not_understand_makes_the_run_uncacheable(ex, strace):
    (ex.work / "data.txt").write_text("first\n")
    run = (PY, "-c", HANDLE_READ)
    first = ex.run(*USE, "--", *run)
    if first.returncode != 0:
        pytest.skip(f"file handles do not work here: {first.stderr[-200:]!r}")
    honest(ex, *run)
    honest(ex, *run)
    (ex.work / "data.txt").write_text("second\n")
    after = honest(ex, *run)
    assert outcome(after) != "hit" and after.stdout == b"second\n"
    assert b"a system call the trace does not understand" in after.stderr


def test_a_writable_shared_mapping_makes_the_run_uncacheable(ex, strace):
    (ex.work / "counter.bin").write_bytes(b"0")
    bump = (PY, "-c", "import mmap; f = open('counter.bin', 'r+b'); m = mmap.mmap(f.fileno(), 1); print(m[:1])")
    result = ex.run(*USE, "--", *bump)
    assert b"writable and shared" in result.stderr
    assert outcome(ex.run(*USE, "--", *bump)) != "hit"


def test_unknown_calls_and_shared_maps_by_rule():
    lines = ['1 io_uring_setup(8, {flags=0}) = 3<anon_inode:[io_uring]>\n',
             '1 fanotify_init(FAN_CLASS_NOTIF, O_RDONLY) = -1 EPERM (Operation not permitted)\n',
             '1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3</w/a>, 0) = 0x7f0000000000\n',
             '1 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3</w/a>, 0) = 0x7f0000000000\n',
             '1 getpid() = 1\n']
    got = [t.path for t in touches(lines, "/w") if t.kind == "uncacheable"]
    assert len(got) == 2 and "io_uring_setup" in got[0] and "/w/a writable and shared" in got[1]


TEST_FILE = "def test_one():\n    assert 1 + 1 == 2\n"


def test_pytest_of_a_tiny_project_caches(ex, strace):
    """pytest makes and removes temporary files under /tmp (and an unnamed O_TMPFILE there): its own
    outputs, not inputs that make every later check fail. (-qq: -q prints the run's duration, which
    differs every run; the cache provider rewrites .pytest_cache every run: see docs/agent-loops.md.)
    Without this checkout's 13 installed pytest plugins (PYTEST_DISABLE_PLUGIN_AUTOLOAD, for both
    the cached and the fresh runs): pytest makes the same files under the temporary directory without
    them (a named file made and removed, two O_TMPFILE), and opens 377 files instead of 2757, which
    took ~25 s of tracing and checking here (~250 s on a loaded CI machine), ~6 s now."""
    project = ex.work / "proj"
    project.mkdir()
    (project / "test_one.py").write_text(TEST_FILE)
    run = (PY, "-m", "pytest", "-qq", "-p", "no:randomly", "-p", "no:cacheprovider")
    ex.env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # ex.run and honest's fresh run both use ex.env
    for _ in range(3):
        last = honest(ex, *run, cwd=project)
    assert outcome(last) == "hit", last.stderr
    (project / "test_one.py").write_text(TEST_FILE.replace("2\n", "3\n"))
    after = ex.run(*USE, "--", *run, cwd=project)
    assert outcome(after) in ("miss", "fail") and after.returncode == 1  # a miss that failed counts as "fail"


def test_inherited_process_state_is_keyed_or_uncacheable(ex, strace):
    """Ignored signals (``nohup``), capabilities, the scheduling policy and the like cross exec: a
    command that prints them (``trap -p``) never replays another caller's; the I/O priority, which
    is not keyed, makes a run that asks for it (``ionice``) uncacheable."""
    import shutil
    import signal

    command = ["bash", "-c", "trap -p; echo end"]

    def run(ignore_hup: bool) -> subprocess.CompletedProcess:
        def child() -> None:
            if ignore_hup:
                signal.signal(signal.SIGHUP, signal.SIG_IGN)

        return subprocess.run([PY, "-m", "actioncache", "exec", *USE, "--", *command], cwd=ex.work, env=ex.env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60, preexec_fn=child)

    for _ in range(3):
        plain = run(False)
        assert plain.stdout == b"end\n", plain.stderr
    assert outcome(plain) == "hit"
    ignored = run(True)
    assert ignored.stdout == b"trap -- '' SIGHUP\nend\n", (outcome(ignored), ignored.stdout, ignored.stderr)
    if shutil.which("ionice"):
        for _ in range(3):
            asked = ex.run(*USE, "--", "ionice")
            assert outcome(asked) != "hit", asked.stderr
        assert b"ioprio_get" in asked.stderr, asked.stderr


@pytest.mark.parametrize("where", [".", "sib/.."])
def test_the_store_in_the_project_is_left_out_by_identity_not_by_spelling(ex, strace, where):
    """F5: with the store at ``proj/.ac/loop.db``, ``ls -la`` in ``proj`` (an lstat of ``proj/.ac``) or
    through ``sib/..`` missed forever ("changed while the command ran"): the store's directory was
    left out under one spelling of its path. It is recognised by device and inode."""
    project = ex.work / "proj"
    (project / ".ac").mkdir(parents=True)
    (project / "sib").mkdir()
    (project / "f").write_text("x\n")
    url = f"sqlite:///{project / '.ac' / 'loop.db'}"
    run = ("ls", "-la", "--time-style=+%s", where)

    def once() -> subprocess.CompletedProcess:
        return ex.run(*USE, "--scope", "read", "--", *run, cwd=project, extra_env={"ACTIONCACHE_URL": url})

    outcomes = [outcome(once()) for _ in range(3)]
    assert outcomes[-1] == "hit", outcomes
    # ... and the hit prints what a direct run prints: the store directory's times too, which the
    # cache's own opens of the store no longer leave moved (a second later, as ``%s`` prints seconds,
    # another command's miss writes the store).
    time.sleep(1.1)
    other = ex.run(*USE, "--scope", "read", "--", "cat", "f", cwd=project, extra_env={"ACTIONCACHE_URL": url})
    assert outcome(other) == "miss", other.stderr
    replayed = once()
    direct = subprocess.run(run, cwd=project, capture_output=True, timeout=60)
    assert outcome(replayed) == "hit" and replayed.stdout == direct.stdout, (replayed.stdout, direct.stdout)
    (project / "g").write_text("y\n")
    after = once()
    assert outcome(after) != "hit" and b" g\n" in after.stdout
