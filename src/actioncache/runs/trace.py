"""Watch a command run and list every path it looked at, in order (Linux, ``strace -f``).

The tracer follows the command and every process it starts. Each file-related system call becomes
one :class:`Touch`: what was done (``read``, ``list``, ``stat``, ``lstat``, ``access``, ``readlink``,
``exec``, ``write``, ``create``, ``remove``) to which absolute path, whether it failed (a failed open
or stat is a read of absence: a file created later must change the answer), and for a stat the stat
data the call returned (strace prints the whole structure with ``-e abbrev=!%%stat``), so what is
checked later is what the command saw, not what the file looked like when the run ended.

Paths are made absolute the way the kernel resolved them: ``strace -y`` prints every directory
descriptor with its path (``AT_FDCWD</work/src>``, ``3</work/src>``), so ``openat`` with a
directory descriptor resolves without guessing. The calls that take no directory descriptor
(``access``, ``readlink``, ``chdir``, ``execve``, ``mkdir``, ...) resolve against the working directory
of the process at that call: each process starts with its parent's as of the ``clone`` that made
it (or shares it, with ``CLONE_FS``), and the trace is replayed per process, so the order strace
printed the processes' lines in does not matter (a child's call is often printed before its
parent's ``clone`` returns). A relative path that still cannot be resolved is an ``unresolved``
touch, and the run is not cached: nothing is dropped.

Every system call is traced but a short list of frequent ones that observe nothing of the file
system (:data:`UNTRACED`; reads too when the command inherits a terminal). A traced call is either
understood, known harmless (:data:`HARMLESS`), or it makes the run uncacheable (an ``uncacheable``
touch names the reason): an allow-list, so a call nobody thought of is a miss, never a blind spot.
Also uncacheable: a call that looks at or acts on a process other than the traced ones
(:data:`PROCESS_TARGETS`: ``kill -0 PID``, ``renice -p``; the traced processes are every pid the
trace shows, and 0 names the caller), a write of extended attributes (:data:`XATTR_WRITES`: a change
a replay cannot make), a write of a file's mode, owner or times (:data:`METADATA_WRITES`, for
the same reason), and a lock tried without waiting (``flock`` with LOCK_NB, ``fcntl`` F_SETLK
and F_GETLK: whether another process holds it is no file's content). A stat of an open descriptor
(``fstat``, ``AT_EMPTY_PATH``) is an ``fstat`` touch of the path ``-y`` shows for it, with what it
returned (a directory's, a ``stat``).
So are input the cache cannot key (a read of a terminal or a device other than ``/dev/null``,
``/dev/zero``, ``/dev/full``; a socket connected, accepted or sent to) and a writable shared
mapping of a file (a change through it may not move the file's stat data). A path through
``/dev/fd/N/...`` or ``/proc/self/{fd,cwd,root}/...`` is resolved to the file it leads to: for an
open, the path ``-y`` prints for the descriptor it returned.

``ACTIONCACHE_TRACE=off`` turns tracing off (the fallback keys are used, and say so).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Callable, Iterable, Iterator

from .._lean import make_dirs
from .._record import record
from .readset import UNSEEN, place, stat_text

TRACE_ENV = "ACTIONCACHE_TRACE"
# Every system call is traced except these: frequent, and they observe nothing beyond the
# descriptors, memory and signals of the process (the kernel filters them out: --seccomp-bpf).
# Reads are traced too when the command inherits a terminal (``traced_argv(terminal=True)``).
READS = ("read", "readv", "pread64", "preadv", "preadv2")
UNTRACED = (*READS, "write", "writev", "pwrite64", "pwritev", "pwritev2", "close", "lseek", "brk", "munmap",
            "mprotect", "madvise", "futex", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "clock_gettime",
            "clock_nanosleep", "nanosleep", "gettimeofday", "getpid", "gettid", "sched_yield", "poll", "ppoll",
            "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_ctl", "recvfrom", "recvmsg", "wait4",
            "dup", "dup2", "dup3", "ioctl", "getrandom")
# Calls the trace is known not to need: they observe nothing of the file system, or nothing that
# the calls it does understand have not already shown (a descriptor's file was seen when it was
# opened). Any call outside this list and the understood ones makes the run uncacheable: "not
# understood" means "not vouched for" (io_uring, open_by_handle_at, fanotify, a call added later).
HARMLESS = frozenset((
    *UNTRACED, "mmap2", "mremap", "msync", "mlock", "mlock2", "munlock", "mlockall", "munlockall", "mincore",
    "membarrier", "pkey_mprotect", "pkey_alloc", "pkey_free", "memfd_create", "exit", "exit_group", "waitid",
    "getppid", "getpgrp", "setsid", "set_tid_address", "set_robust_list", "rseq", "arch_prctl", "prctl", "getrlimit",
    "setrlimit", "getrusage", "times", "umask", "personality", "sched_get_priority_max", "sched_get_priority_min",
    "capset", "pidfd_send_signal", "close_range", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
    "getgroups", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid",
    "setfsgid", "rt_sigsuspend", "rt_sigtimedwait", "sigaltstack", "signalfd", "signalfd4", "pause", "alarm",
    "restart_syscall", "clock_getres", "time", "timer_create", "timer_settime", "timer_gettime", "timer_delete",
    "timer_getoverrun", "setitimer", "getitimer", "timerfd_create", "timerfd_settime", "timerfd_gettime",
    "futex_waitv", "set_mempolicy", "get_mempolicy", "mbind", "getcpu", "eventfd", "eventfd2", "epoll_create",
    "epoll_create1", "epoll_pwait2", "pipe", "pipe2", "fsync", "fdatasync", "sync_file_range", "fadvise64",
    "fallocate", "ftruncate", "sendfile", "splice", "tee", "vmsplice", "copy_file_range",
    "readahead", "socket", "socketpair", "setsockopt", "getsockopt", "shutdown", "uname", "sysinfo", "getcwd",
    "sync", "syncfs", "statfs", "fstatfs", "inotify_init", "inotify_init1", "inotify_rm_watch",
))
# Calls that look at or act on a process, process group or session named by number (argument
# positions; strace prints them as plain numbers): harmless when it is one of the traced processes
# (or 0, the caller or its own group: a shell signals its own children), else they observe or change
# another process (``kill -0 PID``, ``renice -p``, ``taskset -p``, ``kill -USR1``), which no file
# records and a replay would not repeat, so the run is uncacheable (:func:`_process_target`).
PROCESS_TARGETS: dict[str, tuple[int, ...]] = {
    "kill": (0,), "tkill": (0,), "tgkill": (0, 1), "rt_sigqueueinfo": (0,), "rt_tgsigqueueinfo": (0, 1),
    "getpgid": (0,), "getsid": (0,), "setpgid": (0, 1), "prlimit64": (0,), "pidfd_open": (0,),
    "sched_getaffinity": (0,), "sched_setaffinity": (0,), "sched_getparam": (0,), "sched_setparam": (0,),
    "sched_getscheduler": (0,), "sched_setscheduler": (0,), "sched_getattr": (0,), "sched_setattr": (0,),
    "sched_rr_get_interval": (0,), "get_robust_list": (0,), "getpriority": (1,), "setpriority": (1,),
    "ioprio_set": (1,), "capget": (),
}
# Extended attributes written (by path or descriptor): a change a replay cannot make (it gives back
# output streams only), so the run is uncacheable.
XATTR_WRITES = ("setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr")
# Mode, owner and times written (by path or descriptor): a hit checks its outputs by content only,
# so a replay would leave the file's mode or times as they are now, where a fresh run would set them
# again (``os.chmod`` after the mode was reset, ``os.utime``); the run is uncacheable, also for a
# file it made itself (a miss is fine, a wrong hit is not).
METADATA_WRITES = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime",
                   "utimes", "utimensat", "futimesat")
# Devices whose content is a known constant: reading them is not input.
CONSTANT_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")


@record(frozen=True)
class Touch:
    kind: str  # read | list | stat | fstat | lstat | access | readlink | exec | write | create | remove | unresolved
    path: str  # absolute, not resolved through symlinks (what the command asked for)
    error: str | None = None  # errno name of a failed call (ENOENT: a read of absence)
    stat: str | None = None  # the stat data the call returned (readset.stat_text), when it returned some
    # A change (write, create, remove): what it needs to find at its path to be made again the same
    # way (``readset.build`` checks the path as the run left it against it), words from "absent" (an
    # exclusive creation: mkdir, O_EXCL, link, symlink), "present" (a removal, a change of an existing
    # file) and "content" (a change that keeps or moves what was there: O_APPEND or no O_TRUNC,
    # truncate, a rename's source); None: it replaces whatever was there (O_CREAT|O_TRUNC, a rename's
    # target).
    needs: str | None = None
    # A stat (``stat``, ``lstat``) made by a ``statx`` whose request mask named the ctime
    # (``STATX_CTIME``, or ``STATX_BASIC_STATS``/``STATX_ALL``: ``ls -lc``, ``stat -c %z``, ``stat``):
    # the command asked for that time. False for a ``statx`` that did not, and for the calls that
    # return every field without being asked (``stat``, ``lstat``, ``newfstatat``, ``fstat``).
    ctime_asked: bool = False
    # A ``statx`` whose request mask named more than the type, permissions and owner (its link count,
    # size, inode, blocks or a time: ``stat -c '%h %Y'``, ``ls -ld``): the command asked for what a
    # directory only walked through is not keyed by (``readset._walked_through``), so it keeps them.
    # False for a ``statx`` that did not, and for the calls that return every field unasked.
    details_asked: bool = False


def tracer() -> str | None:
    """The strace binary, unless tracing is switched off or strace is not installed."""
    if os.environ.get(TRACE_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    return shutil.which("strace")


def traced_argv(strace: str, log_path: str, argv: list[str], terminal: bool = False) -> list[str]:
    """``terminal``: the command inherits a terminal, so its reads are traced too (a read of the
    terminal is input the cache cannot key)."""
    untraced = [name for name in UNTRACED if not (terminal and name in READS)]
    # -s: execve's argv strings are printed (non_cacheable_tools match every program a run executed);
    # -ttt -T: each call's start and duration, from which command_ms takes the command's own time
    return [strace, "-f", "-qq", "-y", "-ttt", "-T", "-s", "4096", "--seccomp-bpf", "-e", "signal=none",
            "-e", "abbrev=!%%stat",
            "-e", "trace=!" + ",".join(f"?{name}" for name in untraced),
            "-o", log_path, "--", *argv]


def probe_memo(strace: str) -> str | None:
    """A file whose content says this strace binary traced fine here before (saves a probe per miss)."""
    from ..config import user_cache_dir

    try:
        info = os.stat(strace)
    except OSError:
        return None
    return os.path.join(str(user_cache_dir()), f"tracer-ok-{info.st_ino}-{info.st_mtime_ns}")


def forget_probe(strace: str) -> None:
    """A traced run produced no trace: ptrace stopped working here; probe again next time."""
    memo = probe_memo(strace)
    if memo is not None:
        try:
            os.unlink(memo)
        except OSError:
            pass


def tracing_works(strace: str) -> str | None:
    """None when ``strace`` can trace here; else why not (no ptrace in this sandbox, ...)."""
    memo = probe_memo(strace)
    if memo is not None and os.path.exists(memo):
        return None
    problem = _probe(strace)
    if problem is None and memo is not None:
        try:
            make_dirs(os.path.dirname(memo))
            open(memo, "w").close()
        except OSError:
            pass
    return problem


def _probe(strace: str) -> str | None:
    try:
        done = subprocess.run([strace, "-f", "-qq", "-o", os.devnull, "--", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot start strace: {exc}"
    if done.returncode != 0:
        return (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["strace failed"])[-1]
    return None


# --- parsing strace's output ---------------------------------------------------------------------

_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)", re.S)
_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"v": b"\v", b"f": b"\f", b"a": b"\a", b"b": b"\b"}
_RET = re.compile(r"=\s+(-?\d+|\?)(?:<(.*)>)?(?:\s+(E[A-Z0-9]+))?")


def _unescape(text: str) -> str:
    def one(match: re.Match[bytes]) -> bytes:
        code = match.group(1)
        if code[:1] == b"x":
            return bytes([int(code[1:], 16)])
        if code[:1].isdigit():
            return bytes([int(code, 8) & 0xFF])
        return _SIMPLE.get(code, code)

    return os.fsdecode(_ESCAPE.sub(one, os.fsencode(text)))


# _split_args jumps from one character that matters to the next (a loop over every character in
# Python was a third of a miss's trace parsing): a quote, a ``<`` (a descriptor's path), a bracket,
# a comma. Inside quotes and ``<...>`` a backslash escapes the next character.
_SPECIAL = re.compile(r'["<()\[\]{},]')
_IN_QUOTES = re.compile(r'(?:[^"\\]|\\.?)*', re.S)
_IN_ANGLES = re.compile(r'(?:[^>\\]|\\.?)*', re.S)


def _split_args(text: str) -> tuple[list[str], str]:
    """Top-level arguments of ``name(args) = ret`` (quotes, ``<...>`` and brackets respected), and the rest."""
    args: list[str] = []
    depth, start, i = 0, 0, 0
    search = _SPECIAL.search
    while True:
        found = search(text, i)
        if found is None:
            break
        i = found.start()
        c = text[i]
        if c == '"':
            i = _IN_QUOTES.match(text, i + 1).end()  # type: ignore[union-attr] # matches the empty string
        elif c == "<":
            if i > 0 and (text[i - 1].isdigit() or text[i - 1] == "D"):  # 3</path>, AT_FDCWD</path>
                i = _IN_ANGLES.match(text, i + 1).end()  # type: ignore[union-attr]
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[start:i].strip())
                return [a for a in args if a], text[i + 1:]
            depth -= 1
        elif depth == 0:  # a comma
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return [a for a in args if a], ""


def _string(arg: str) -> str | None:
    if len(arg) >= 2 and arg[0] == '"' and arg.endswith('"'):
        return _unescape(arg[1:-1])
    return None


def _fd_path(arg: str) -> str | None:
    """``AT_FDCWD</a/b>`` or ``3</a/b>`` → ``/a/b``."""
    at = arg.find("<")
    if at > 0 and arg.endswith(">"):
        return _unescape(arg[at + 1:-1])
    return None


def _join(base: str | None, path: str) -> str | None:
    if path.startswith("/"):
        return path
    if base is None:
        return None
    return base.rstrip("/") + "/" + path if path else base


@record()
class _Call:
    pid: str
    name: str
    args: list[str]
    ret: str
    ret_path: str | None
    error: str | None


def _timed(body: str) -> tuple[float | None, str, float | None]:
    """(the call's start, the line without its stamps, the call's duration in seconds) of a line's
    body after its pid, as ``strace -ttt -T`` prints it (``1700000000.123456 openat(...) = 3
    <0.000021>``); a line without a start stamp comes back as it is (no -T suffix is looked for)."""
    stamp, space, rest = body.partition(" ")
    if not space or not stamp[:1].isdigit():
        return None, body, None
    try:
        at = float(stamp)
    except ValueError:
        return None, body, None
    took = None
    if rest.endswith(">"):
        cut = rest.rfind(" <")
        try:
            took = float(rest[cut + 2:-1]) if cut >= 0 else None
        except ValueError:
            took = None
        if took is not None:
            rest = rest[:cut]
    return at, rest.lstrip(), took


def _calls(lines: Iterable[str]) -> Iterator[_Call]:
    pending: dict[str, str] = {}
    for raw in lines:
        line = raw.rstrip("\n")
        pid, _, body = line.partition(" ")
        body = _timed(body.lstrip())[1]
        if not pid.isdigit() or body.startswith(("+++", "---")):
            continue
        if body.startswith("<..."):
            resumed = body.find(" resumed>")
            body = pending.pop(pid, "") + body[resumed + len(" resumed>"):] if resumed > 0 else ""
        if body.endswith("<unfinished ...>"):
            pending[pid] = body[: -len("<unfinished ...>")]
            continue
        paren = body.find("(")
        if paren <= 0:
            continue
        args, rest = _split_args(body[paren + 1:])
        ret = _RET.search(rest)
        if ret is None:
            continue
        yield _Call(pid, body[:paren], args, ret.group(1), _unescape(ret.group(2)) if ret.group(2) else None,
                    ret.group(3))


def command_ms(lines: Iterable[str]) -> float | None:
    """The traced command's own time in milliseconds, as it would have run untraced (None: the
    trace carries no timestamps). A traced run is slower than the command alone, by strace's start
    and end and by two stops of the process at every traced call (``--seccomp-bpf``: only those);
    the figure leaves both out. The span from the first call (the command's execve) to the last
    leaves out strace's start and end; within it, every traced call costs the typical call's cost
    under the tracer: the median call (``-T``) plus the median time from one call's end to the same
    process's next call. The span less that for each traced call, never below zero; the run that
    measures the command untraced (``runner.ExecRun._measure``) replaces the figure."""
    first: float | None = None
    last = 0.0
    ends: dict[str, float] = {}
    started: dict[str, float] = {}  # a pid's call printed <unfinished ...>: when it started
    gaps: list[float] = []
    durations: list[float] = []
    for raw in lines:
        pid, _, body = raw.rstrip("\n").partition(" ")
        at, body, took = _timed(body.lstrip())
        if at is None or not pid.isdigit() or body.startswith(("+++", "---")):
            continue
        first = at if first is None else min(first, at)
        last = max(last, at + (took or 0.0))
        if body.endswith("<unfinished ...>"):
            started[pid] = at
            continue
        if body.startswith("<..."):
            at = started.pop(pid, at)
        if pid in ends:
            gaps.append(at - ends[pid])
        durations.append(took or 0.0)
        ends[pid] = at + (took or 0.0)
    if first is None or not durations:
        return None
    per_call = _median(durations) + (_median(gaps) if gaps else 0.0)
    return max(0.0, last - first - len(durations) * per_call) * 1000.0


def _median(values: list[float]) -> float:
    """``statistics.median`` (the same figure, the two middle values' mean for an even count), here:
    every traced miss calls it, and importing ``statistics`` (``fractions``, ``decimal``) cost a
    miss ~11 M instructions (bench/bench_miss_instructions.py)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
# name → (index of the dirfd argument or None, index of the path argument, kind)
_PATH_CALLS: dict[str, tuple[int | None, int, str]] = {
    "stat": (None, 0, "stat"), "stat64": (None, 0, "stat"), "lstat": (None, 0, "lstat"), "lstat64": (None, 0, "lstat"),
    "newfstatat": (0, 1, "stat"), "fstatat64": (0, 1, "stat"), "statx": (0, 1, "stat"),
    "access": (None, 0, "access"), "faccessat": (0, 1, "access"), "faccessat2": (0, 1, "access"),
    "readlink": (None, 0, "readlink"), "readlinkat": (0, 1, "readlink"), "chdir": (None, 0, "access"),
    "execve": (None, 0, "exec"), "execveat": (0, 1, "exec"),
    "mkdir": (None, 0, "create"), "mkdirat": (0, 1, "create"), "mknod": (None, 0, "create"),
    "mknodat": (0, 1, "create"), "symlink": (None, 1, "create"), "symlinkat": (1, 2, "create"),
    "link": (None, 1, "create"), "linkat": (2, 3, "create"),
    "unlink": (None, 0, "remove"), "unlinkat": (0, 1, "remove"), "rmdir": (None, 0, "remove"),
    "truncate": (None, 0, "write"), "chmod": (None, 0, "write"), "fchmodat": (0, 1, "write"),
    "chown": (None, 0, "write"), "lchown": (None, 0, "write"), "fchownat": (0, 1, "write"),
    "utime": (None, 0, "write"), "utimes": (None, 0, "write"), "utimensat": (0, 1, "write"),
    "futimesat": (0, 1, "write"),
}


def _flags_text(call: _Call) -> str:
    return ",".join(call.args)


_S_IF = {"S_IFREG": 0o100000, "S_IFDIR": 0o040000, "S_IFLNK": 0o120000, "S_IFCHR": 0o020000,
         "S_IFBLK": 0o060000, "S_IFIFO": 0o010000, "S_IFSOCK": 0o140000, "S_ISUID": 0o4000, "S_ISGID": 0o2000,
         "S_ISVTX": 0o1000}
_FIELD = re.compile(r"(st_|stx_)(\w+?)=(\{tv_sec=(-?\d+), tv_nsec=(\d+)\}|[^,}]+)")
# the struct argument of each stat call: index in the argument list, and whether it follows a final symlink
_STAT_STRUCT = {"stat": 1, "stat64": 1, "lstat": 1, "lstat64": 1, "newfstatat": 2, "fstatat64": 2, "statx": 4,
                "fstat": 1, "fstat64": 1}


_STATX_CTIME = 0x80
# The statx request bits beyond the type, permissions and owner: NLINK, MTIME, CTIME, INO, SIZE,
# BLOCKS, BTIME (not ATIME, which no record keeps, nor MNT_ID and later bits, which stat data lacks).
_STATX_DETAILS = 0x4 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
_STATX_BITS = {"STATX_TYPE": 0x1, "STATX_MODE": 0x2, "STATX_NLINK": 0x4, "STATX_UID": 0x8, "STATX_GID": 0x10,
               "STATX_ATIME": 0x20, "STATX_MTIME": 0x40, "STATX_CTIME": 0x80, "STATX_INO": 0x100,
               "STATX_SIZE": 0x200, "STATX_BLOCKS": 0x400, "STATX_BASIC_STATS": 0x7ff, "STATX_BTIME": 0x800,
               "STATX_ALL": 0xfff}


def _mask_asks(mask: str, bits: int, unnamed: bool) -> bool:
    """Whether a ``statx`` request mask, as strace printed it (``STATX_MODE|STATX_MTIME``, with any
    bits it has no name for as a number), asks for any of ``bits``; a name strace has that
    ``_STATX_BITS`` lacks counts as ``unnamed``."""
    for part in mask.split("|"):
        part = part.strip()
        if not part:
            continue
        asked = _STATX_BITS.get(part)
        if asked is None:
            try:
                asked = int(part, 0)
            except ValueError:
                if unnamed:
                    return True
                continue
        if asked & bits:
            return True
    return False


def asks_ctime(mask: str) -> bool:
    """Whether a ``statx`` request mask asks for the ctime (a name not known here does not)."""
    return _mask_asks(mask, _STATX_CTIME, unnamed=False)


def asks_details(mask: str) -> bool:
    """Whether a ``statx`` request mask asks for more than the type, permissions and owner (a name
    strace has that is not known here counts as asking)."""
    return _mask_asks(mask, _STATX_DETAILS, unnamed=True)


def _statx_asks(call: _Call, asks: Callable[[str], bool]) -> bool:
    return call.name == "statx" and len(call.args) > 3 and asks(call.args[3])


def _plain_file(observed: str | None) -> bool:
    """Whether stat data (``readset.stat_text``) is of a regular file or a directory."""
    if observed is None:
        return False
    try:
        kind = int(observed.split(":")[0], 8) & 0o170000
    except ValueError:
        return False
    return kind in (0o100000, 0o040000)


def observed_stat(struct: str) -> str | None:
    """The stat data strace printed (``-e abbrev=!%%stat``) as :func:`readset.stat_text`; None if incomplete.

    A ``statx`` returns only the fields its caller asked for, as its ``stx_mask`` says (``ls -R``
    asks for the inode of each directory it enters, not its times): a field it did not return is
    ``UNSEEN`` in the text, for the read-set to fill in from the path as the run left it
    (``readset._filled``), so the check covers what the command saw and more, never less. The file's
    type and permissions must be there."""
    if not struct.startswith("{"):
        return None
    fields: dict[str, int] = {}
    for match in _FIELD.finditer(struct):
        name, value = match.group(2), match.group(3)
        try:
            if match.group(4) is not None:  # statx: stx_mtime={tv_sec=..., tv_nsec=...}
                fields[name] = int(match.group(4)) * 1_000_000_000 + int(match.group(5))
            elif name == "mode":
                fields[name] = sum(_S_IF[p] if p in _S_IF else int(p, 8) for p in value.strip().split("|"))
            elif name in ("mtime", "ctime"):
                fields[name + "_s"] = int(value.split()[0])
            elif name in ("mtime_nsec", "ctime_nsec", "ino", "nlink", "uid", "gid", "size"):
                fields[name] = int(value.strip(), 0)
        except (KeyError, ValueError):
            return None
    for name in ("mtime", "ctime"):
        if name + "_s" in fields:
            fields[name] = fields[name + "_s"] * 1_000_000_000 + fields.get(name + "_nsec", 0)
    try:
        return stat_text(fields["mode"], fields["size"], fields["mtime"], fields["ctime"], fields["ino"],
                         fields["nlink"], fields["uid"], fields["gid"])
    except KeyError:
        pass
    if "stx_mask=" not in struct or "mode" not in fields or struct.rstrip().endswith("...}"):
        return None  # a stat struct is whole unless abbreviated; a statx without the type is no observation
    return ":".join([f"{fields['mode']:o}", *(str(fields[name]) if name in fields else UNSEEN
                                               for name in ("size", "mtime", "ctime", "ino", "nlink", "uid", "gid"))])


class _Cwds:
    """Each call's working directory, whatever order strace printed the processes' calls in.

    A process starts in its parent's working directory as of the ``clone``/``fork`` that made it, or
    shares it for good (``CLONE_FS``: threads). Calls are grouped by that shared state, and each
    group's calls are replayed in their own order from its start, so a child's call printed before
    its parent's ``clone`` returned still resolves against the right directory.
    """

    def __init__(self, calls: list[_Call], cwd: str, root: str) -> None:
        self.calls = calls
        self.root = root
        self.spawn: dict[str, tuple[str, int, bool]] = {}  # child -> (parent, index of the clone call, shares fs)
        for i, call in enumerate(calls):
            if call.name in ("clone", "clone3", "fork", "vfork") and call.ret.isdigit() and call.ret not in self.spawn:
                self.spawn[call.ret] = (call.pid, i, "CLONE_FS" in _flags_text(call) and call.name != "vfork")
        self.members: dict[str, list[int]] = {}
        for i, call in enumerate(calls):
            group = self.group(call.pid)
            if group is not None:
                self.members.setdefault(group, []).append(i)
        self.start: dict[str, str | None] = {self.root: cwd}
        self.here: dict[int, str | None] = {}
        self.done: set[str] = set()

    def group(self, pid: str) -> str | None:
        seen: set[str] = set()
        while pid != self.root:
            spawned = self.spawn.get(pid)
            if spawned is None or pid in seen:
                return None  # a process whose creation the trace does not show
            seen.add(pid)
            if not spawned[2]:
                return pid
            pid = spawned[0]
        return pid

    def at(self, index: int) -> str | None:
        group = self.group(self.calls[index].pid)
        if group is None:
            return None
        self._replay(group)
        return self.here.get(index)

    def _replay(self, group: str) -> None:
        todo = [group]
        while todo:
            g = todo[-1]
            if g in self.done:
                todo.pop()
                continue
            if g not in self.start:
                parent, index, _ = self.spawn[g]
                parent_group = self.group(parent)
                if parent_group is None:
                    self.start[g] = None
                elif parent_group not in self.done:
                    todo.append(parent_group)
                    continue
                else:
                    self.start[g] = self.here.get(index)
            here: str | None = self.start[g]
            for i in self.members.get(g, []):
                call = self.calls[i]
                for arg in call.args[:1]:  # a dirfd of AT_FDCWD shows the process's working directory
                    if arg.startswith("AT_FDCWD<"):
                        here = _fd_path(arg) or here
                self.here[i] = here
                if call.error:
                    continue
                if call.name == "chdir" and call.args:
                    path = _string(call.args[0])
                    here = _join(here, path) if path is not None else None
                elif call.name == "fchdir" and call.args:
                    here = _fd_path(call.args[0])
            self.done.add(g)
            todo.pop()


def executed(lines: Iterable[str]) -> list[list[str]]:
    """Every program the traced run executed, as ``[path, arg1, ...]`` (the path execve was given,
    then its arguments; an argument strace shortened is kept as far as it was printed)."""
    found: list[list[str]] = []
    for call in _calls(lines):
        if call.name not in ("execve", "execveat") or call.error or not call.args:
            continue
        at = 1 if call.name == "execveat" else 0
        path = _string(call.args[at]) if len(call.args) > at else None
        if path is None:
            continue
        argv: list[str] = []
        if len(call.args) > at + 1 and call.args[at + 1].startswith("["):
            inner, _ = _split_args(call.args[at + 1][1:] + ")")
            for item in inner:
                text = _string(item[:-3] if item.endswith('"...') else item)
                if text is not None:
                    argv.append(text)
        found.append([path, *argv[1:]])
    return found


def touches(lines: Iterable[str], cwd: str) -> Iterator[Touch]:
    """Turn strace lines into :class:`Touch` records, in the order the calls returned.

    A call whose path cannot be resolved (a relative path of a process the trace does not show
    being started) becomes an ``unresolved`` touch: the run that made it is not cached.
    """
    first: list[str] = []  # the pid of the first line: the command itself (its first call may finish late)

    def noting(raw: Iterable[str]) -> Iterator[str]:
        for line in raw:
            if not first:
                pid = line.partition(" ")[0]
                if pid.isdigit():
                    first.append(pid)
            yield line

    calls = list(_calls(noting(lines)))
    cwds = _Cwds(calls, cwd, first[0] if first else "")
    own = {f"/proc/{call.pid}" for call in calls}
    for touch in _touches(calls, cwds):
        if touch.path.startswith("/proc/"):
            # a traced process's own /proc/<pid> (what /proc/self resolves to in strace -y's fd paths)
            head, sep, tail = touch.path[6:].partition("/")
            if "/proc/" + head in own:
                touch = Touch(touch.kind, "/proc/self" + sep + tail, touch.error, touch.stat, touch.needs)
        yield touch


# Calls that observe the network (a peer, a port, a listener or its absence): see _network.
NETWORK = ("connect", "bind", "listen", "accept", "accept4", "sendto", "sendmsg", "sendmmsg", "recvmmsg",
           "getsockname", "getpeername")
_UNDERSTOOD = frozenset(("clone", "clone3", "fork", "vfork", "fchdir", "getdents", "getdents64", "fstat", "fstat64",
                         "open", "openat", "openat2", "creat", "rename", "renameat", "renameat2", "mmap",
                         *NETWORK, *_PATH_CALLS, *METADATA_WRITES))
_XATTR_READS = {"getxattr": "stat", "listxattr": "stat", "lgetxattr": "lstat", "llistxattr": "lstat"}
# A failed call that the kernel refused before it looked at anything: it observed nothing.
_REFUSED = ("ENOSYS", "EPERM", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF", "EFAULT")


def is_device(path: str) -> bool:
    """A path under /dev that is input the cache cannot key (a terminal, /dev/urandom, a disk):
    anything there but the constant devices, the process's own descriptors and the writable places."""
    from .readset import USER_PLACES

    return (path.startswith("/dev/") and not path.startswith(USER_PLACES) and path not in CONSTANT_DEVICES
            and not path.startswith(("/dev/fd/", "/dev/stdin", "/dev/stdout", "/dev/stderr")))


def _uncacheable(reason: str) -> Touch:
    return Touch("uncacheable", reason)


def _other(call: _Call, here: str | None) -> Iterator[Touch]:
    """The calls beyond paths and descriptors: memory maps, the network, xattrs, and the unknown."""
    name, args = call.name, call.args
    if name in READS:
        path = _fd_path(args[0]) if args else None
        if path is not None and is_device(path) and not call.error:
            yield _uncacheable(f"the command read {path}, a terminal or device: input the cache cannot key")
        return
    if name in HARMLESS:
        return
    if name == "mmap":
        path = _fd_path(args[4]) if len(args) > 4 else None
        if (len(args) > 3 and "MAP_SHARED" in args[3] and "PROT_WRITE" in args[2] and path is not None
                and path.startswith("/") and not path.endswith("(deleted)") and not call.error):
            yield _uncacheable(f"the command mapped {path} writable and shared: a change through the mapping may "
                               "not move its stat data")
        return
    if name in NETWORK:
        yield from _network(call, here)
        return
    if name in _XATTR_READS or name in ("fgetxattr", "flistxattr"):
        # extended attributes (ACLs: ls -l's "+"): any change to them moves the file's ctime
        error = None if call.error in ("ENODATA", "ENOTSUP", "EOPNOTSUPP", "ERANGE") else call.error
        if name in _XATTR_READS:
            yield _touch(call, _XATTR_READS[name], None, 0, here, error)
        else:
            path = _fd_path(args[0]) if args else None
            if path is not None and path.startswith("/") and not error:
                yield Touch("stat", path)
        return
    if call.error in _REFUSED:
        return
    yield _uncacheable(f"the command called {name}, a system call the trace does not understand (it may observe "
                       "files in a way a hit cannot check)")


_LOOPBACK_ANY_PORT = re.compile(r'^\{sa_family=AF_INET6?, sin6?_port=htons\(0\), .*(inet_addr\("127\.0\.0\.1"\)|'
                                r'inet_pton\(AF_INET6, "::1")')


def _unix_path(text: str) -> str | None:
    """The path of ``{sa_family=AF_UNIX, sun_path="/run/x.sock"}``; None for an abstract (``sun_path=@"..."``)
    or unnamed address, or any other family."""
    if "sa_family=AF_UNIX" not in text:
        return None
    at = text.find('sun_path="')
    if at < 0:
        return None
    end = text.find('"', at + 10)
    while end > 0 and text[end - 1] == "\\":
        end = text.find('"', end + 1)
    return _string(text[at + 9:end + 1]) if end > 0 else None


NETWORK_REASON = "the command used the network or a socket"  # how a run not cached for it is named


def _network(call: _Call, here: str | None) -> Iterator[Touch]:
    """The rule for the network: every call that reaches past this machine's file system (a peer, a
    port, a route, a listener or its absence) makes the run uncacheable, whatever it returned: a
    refused or timed-out connect observed that nothing was listening, a bind that the port was free,
    and either can change without a file changing. The one call that is a file-system lookup is a
    connect to a Unix socket path that is not there (ENOENT, ENOTDIR: a read of absence, checked
    again on a hit, as glibc's nscd probe does). What is not network: a call the kernel refused
    before looking (EBADF, ENOTSOCK, EFAULT), a send on a connected socket (its connect decided; a
    socketpair's peer is the command itself), a socketpair's own name, a successful bind to port 0 on the loopback. Receives (``recvfrom``,
    ``recvmsg``) stay untraced: a socket receives only what a bind, connect or send let in, and each
    of those is refused here."""
    name, args = call.name, call.args
    if call.error in ("EBADF", "ENOTSOCK", "EFAULT"):
        return
    text = ", ".join(args[1:])
    peer = _fd_path(args[0]) if args else None
    if name == "connect":
        path = _unix_path(text)
        if path is not None and call.error in ("ENOENT", "ENOTDIR"):
            resolved = _join(here, path)
            if resolved is not None:
                yield Touch("stat", resolved, call.error)  # no such socket: a read of absence
                return
        if "sa_family=AF_UNSPEC" in text:
            return  # dissolves a datagram socket's association: observes nothing
    elif name == "bind" and not call.error and _LOOPBACK_ANY_PORT.search(text):
        return  # a free port on the loopback, picked by the kernel (an IPv6 probe): there always is one
    elif name in ("sendto", "sendmsg", "sendmmsg"):
        if "sa_family=" not in text and "msg_name=" not in text:
            return  # sent on a connected socket, whose connect decided
    elif name in ("getsockname", "getpeername"):
        if call.error or text.startswith("{sa_family=AF_UNIX}"):
            return  # not connected or bound (the call that would make it so decided), or a socketpair
    elif name == "recvmmsg" and "msg_name=" not in text:
        return
    outcome = f"failed: {call.error}" if call.error else "succeeded"
    yield _uncacheable(f"{NETWORK_REASON} ({name} on {peer or (args[0] if args else '?')}, "
                       f"{outcome}): what it observed can change without a file changing")


_PID_FIELD = re.compile(r"\bpid=(-?\d+)")


def _process_target(call: _Call, traced: set[str]) -> Iterator[Touch]:
    """The rule for calls that name a process (:data:`PROCESS_TARGETS`): fine when every process,
    group or session they name is 0 (the caller, its own group) or one of the traced processes
    (a negative number names the group whose leader it is); uncacheable otherwise, whatever the call
    returned (ESRCH, "no such process", is an observation too: ``kill -0 PID``)."""
    name, args = call.name, call.args
    if name in ("getpriority", "setpriority", "ioprio_set"):
        which = args[0] if args else ""
        if not which.endswith(("PRIO_PROCESS", "PRIO_PGRP", "WHO_PROCESS", "WHO_PGRP")):
            yield _uncacheable(f"the command called {name}({which}, ...): it looks at or acts on every process of "
                               "a user, which no file records")
            return
    named = [args[i] if i < len(args) else "?" for i in PROCESS_TARGETS[name]]
    if name == "capget":
        field = _PID_FIELD.search(args[0]) if args else None
        named = [field.group(1) if field else "?"]
    for target in named:
        number = target[1:] if target.startswith("-") else target
        if number == "0" or number in traced:
            continue
        outcome = f"failed: {call.error}" if call.error else "succeeded"
        yield _uncacheable(f"the command called {name} on process {target}, which it did not start ({outcome}): "
                           "it looks at or acts on another process, which no file records and a replay would not "
                           "do again")
        return


def _lock(call: _Call) -> Iterator[Touch]:
    """A lock attempt that does not wait (``flock`` with LOCK_NB; ``fcntl`` F_SETLK, F_OFD_SETLK, and
    the F_GETLK queries) observes whether another process holds a lock: no file records that, so the
    run is uncacheable. A lock that waits (``flock`` without LOCK_NB, F_SETLKW) returns the same way
    whoever held it, and an unlock observes nothing."""
    args = call.args
    if call.error in ("EBADF", "EINVAL", "EFAULT"):
        return
    if call.name == "flock":
        how = args[1] if len(args) > 1 else ""
        if "LOCK_NB" not in how or "LOCK_UN" in how:
            return
    else:
        command = args[1] if len(args) > 1 else ""
        if command not in ("F_SETLK", "F_SETLK64", "F_OFD_SETLK", "F_GETLK", "F_GETLK64", "F_OFD_GETLK"):
            return
        if "SETLK" in command and "F_UNLCK" in (args[2] if len(args) > 2 else ""):
            return
    what = _fd_path(args[0]) if args else None
    outcome = f"failed: {call.error}" if call.error else "succeeded"
    yield _uncacheable(f"the command tried a lock without waiting ({call.name} {', '.join(args[1:2])} on "
                       f"{what or (args[0] if args else '?')}, {outcome}): whether another process holds it is "
                       "no file's content, so a replay could answer wrong")


def _touches(calls: list[_Call], cwds: _Cwds) -> Iterator[Touch]:
    traced = set(cwds.spawn) | {call.pid for call in calls}  # every process the trace shows
    for index, call in enumerate(calls):
        name = call.name
        if name in PROCESS_TARGETS:
            yield from _process_target(call, traced)
            continue
        if name in ("flock", "fcntl", "fcntl64"):
            yield from _lock(call)
            continue
        if name in XATTR_WRITES:
            if call.error not in _REFUSED:
                target = _string(call.args[0]) or _fd_path(call.args[0]) if call.args else None
                yield _uncacheable(f"the command called {name} on {target or '?'}: a change of extended "
                                   "attributes, which a replay cannot make")
            continue
        if name in METADATA_WRITES and not call.error:
            target = (_string(call.args[1]) if name.endswith("at") and len(call.args) > 1 else None) or (
                _string(call.args[0]) or _fd_path(call.args[0]) if call.args else None)
            yield _uncacheable(f"the command called {name} on {target or '?'}: a change of a file's mode, owner "
                               "or times, which a replay cannot make")
            continue
        if name in ("clone", "clone3", "fork", "vfork", "fchdir"):
            continue
        if name not in _UNDERSTOOD or name == "mmap" or name in NETWORK:
            if name in HARMLESS and name not in READS:
                continue
            yield from _other(call, cwds.at(index) if name == "connect" or name in _XATTR_READS else None)
            continue
        here = cwds.at(index)
        if name in ("getdents", "getdents64"):
            path = _fd_path(call.args[0]) if call.args else None
            if path and path.startswith("/") and not call.error:
                yield Touch("list", path)
            continue
        if name in ("fstat", "fstat64") or (name in ("newfstatat", "fstatat64", "statx") and len(call.args) > 1
                                             and call.args[1] == '""'):
            path = _fd_path(call.args[0]) if call.args else None
            if path and path.startswith("/") and not call.error and not path.endswith(" (deleted)"):
                struct = call.args[_STAT_STRUCT[name]] if len(call.args) > _STAT_STRUCT[name] else ""
                observed = observed_stat(struct)
                # A stat of an open descriptor is what the command saw of the file: a directory's
                # counts in full; any other file's by type, mode, size, links and owner (a ``fstat``
                # touch: stdio and Python stat every file they open, for its block size, and its
                # content is checked by the read). The run's own outputs are left out in
                # readset.build (a file it wrote counts by what it left).
                if place(path) in ("own", "pseudo") or path.startswith("/dev/") and not _plain_file(observed):
                    continue  # a pseudo-file's stat data says nothing; a device's read or write decides
                    # (a file or directory under /dev, in /dev/shm say, counts as any other does)
                kind = "stat" if observed is None or observed.startswith("40") else "fstat"
                yield Touch(kind, path, None, observed, ctime_asked=_statx_asks(call, asks_ctime),
                            details_asked=_statx_asks(call, asks_details)) \
                    if observed is not None else _uncacheable(
                    f"the command called {name} on {path} and the trace could not read what it returned")
            continue
        if name in ("open", "openat", "openat2", "creat"):
            yield from _open_touch(call, here)
            continue
        if name in ("rename", "renameat", "renameat2"):
            pairs = ((None, 0), (None, 1)) if name == "rename" else ((0, 1), (2, 3))
            flags = ",".join(call.args[4:]) if name == "renameat2" else ""
            target = "present" if "RENAME_EXCHANGE" in flags else "absent" if "RENAME_NOREPLACE" in flags else None
            for kind, (fd_i, path_i), needs in zip(("remove", "create"), pairs, ("present content", target)):
                yield _touch(call, kind, fd_i, path_i, here, call.error, needs=needs)
            continue
        spec = _PATH_CALLS.get(name)
        if spec is None:
            continue
        fd_i, path_i, kind = spec
        failed = call.error
        if failed == "EFAULT" and len(call.args) > path_i and call.args[path_i] == "NULL":
            # A feature probe (glibc and Rust's std call statx(0, NULL, ...) to see whether statx
            # exists): the kernel read no path, so nothing was observed.
            continue
        if (name in ("newfstatat", "fstatat64", "statx") and len(call.args) > path_i
                and "AT_SYMLINK_NOFOLLOW" in ",".join(call.args[path_i + 1:])):
            kind = "lstat"
        if kind in ("create", "remove", "write") and failed:
            # A failed change changed nothing; it still shows whether the path was there.
            kind, failed = "lstat", (None if failed == "EEXIST" else failed)
        observed = None
        if kind in ("stat", "lstat") and not failed and name in _STAT_STRUCT and len(call.args) > _STAT_STRUCT[name]:
            observed = observed_stat(call.args[_STAT_STRUCT[name]])
        needs = "present content" if name == "truncate" else {"create": "absent", "remove": "present",
                                                              "write": "present"}.get(kind)
        touch = _touch(call, kind, fd_i, path_i, here, failed, observed, needs,
                       ctime_asked=kind in ("stat", "lstat") and _statx_asks(call, asks_ctime),
                       details_asked=kind in ("stat", "lstat") and _statx_asks(call, asks_details))
        yield touch
        if name == "chdir" and not failed and touch.kind == "access":
            yield from _route(touch.path)


def _route(path: str) -> Iterator[Touch]:
    """The way to a directory the command then works in (a ``chdir``, a directory opened through a
    link): a ``readlink`` of each component, its target or that it is no link. Later paths name the
    directory it led to (the kernel reports the working directory and a descriptor by their real
    paths), so without these a link pointed elsewhere would go unseen: ``cd current && cat f`` after
    ``current`` moved from ``releases/1`` to ``releases/2``. System and pseudo paths keep their own rule."""
    parts = path.split("/")
    for end in range(2, len(parts) + 1):
        prefix = "/".join(parts[:end])
        if prefix and place(prefix) == "user":
            yield Touch("readlink", prefix)


def _touch(call: _Call, kind: str, fd_i: int | None, path_i: int, here: str | None, error: str | None,
           observed: str | None = None, needs: str | None = None, ctime_asked: bool = False,
           details_asked: bool = False) -> Touch:
    path = _resolve(call, fd_i, path_i, here)
    if path is None:
        return Touch("unresolved", f"{call.name}({', '.join(call.args[:path_i + 1])}) of process {call.pid}")
    real = _through_view(path, call, here)
    if real is None:
        return _uncacheable(f"the command used {path}, a path through /proc or /dev/fd that the trace cannot "
                            "resolve to the file it leads to")
    return Touch(kind, real, error, observed, needs, ctime_asked, details_asked)


def _through_view(path: str, call: _Call, here: str | None, opened: str | None = None) -> str | None:
    """The real path behind a path that goes through a process's view of the file system
    (``/dev/fd/3/f``, ``/proc/self/fd/3/f``, ``/proc/self/cwd/f``, ``/proc/self/root/etc/x``): the path
    the kernel reported for the descriptor an open returned (``opened``, strace -y), else the working
    directory or root of the calling process. ``path`` itself when it is no such path; None when it
    is one that cannot be resolved."""
    parts = path.split("/")
    if len(parts) > 4 and parts[1] == "dev" and parts[2] == "fd":
        view = "fd"
    elif len(parts) > 3 and parts[1] == "proc" and parts[3] in ("fd", "cwd", "root", "map_files"):
        view = parts[3]
        if view in ("fd", "map_files") and len(parts) <= 5:
            return path  # the descriptor itself: the open that made it was observed (or the runner keyed it)
        if parts[2] not in ("self", "thread-self", call.pid):
            view = "other"
    else:
        return path
    if opened is not None and opened.startswith("/") and not opened.startswith(("/proc/", "/dev/fd/")) \
            and not opened.endswith("(deleted)"):
        return opened
    rest = "/".join(parts[4:])
    if view == "cwd" and here is not None:
        return _join(here, rest)
    if view == "root":
        return "/" + rest
    return None


def _resolve(call: _Call, fd_i: int | None, path_i: int, here: str | None) -> str | None:
    if len(call.args) <= path_i:
        return None
    path = _string(call.args[path_i])
    if path is None:
        return None
    base = _fd_path(call.args[fd_i]) if fd_i is not None and len(call.args) > fd_i else here
    return _join(base, path)


def _open_touch(call: _Call, here: str | None) -> Iterator[Touch]:
    if call.name == "creat":
        fd_i, path_i, flags = None, 0, "O_CREAT|O_WRONLY|O_TRUNC"
    else:
        fd_i, path_i = (None, 0) if call.name == "open" else (0, 1)
        flags = call.args[path_i + 1] if len(call.args) > path_i + 1 else ""
    path = _resolve(call, fd_i, path_i, here)
    if path is None:
        yield _touch(call, "read", fd_i, path_i, here, call.error)
        return
    real = _through_view(path, call, here, None if call.error else call.ret_path)
    if real is None:
        yield _uncacheable(f"the command opened {path}, a path through /proc or /dev/fd that the trace cannot "
                           "resolve to the file it leads to")
        return
    path = real
    writes = any(flag in flags for flag in _WRITE_FLAGS)
    if "O_TMPFILE" in flags:
        # an unnamed file in a directory: an output no one else can see; the directory is only looked up
        yield Touch("access", path, call.error if call.error not in _REFUSED else None)
        return
    if path.startswith("/dev/") and is_device(path) and not (call.ret_path or "").startswith(("pipe:", "socket:")):
        if call.error:
            return  # no such device here (ENXIO: no controlling terminal); see docs/agent-loops.md
        if "O_WRONLY" not in flags and "O_PATH" not in flags and "O_DIRECTORY" not in flags:
            yield _uncacheable(f"the command opened {path} for reading, a terminal or device: input the cache "
                               "cannot key")
            return
    opened = call.ret_path or ""
    if (path.startswith(("/dev/std", "/dev/fd/", "/proc/")) and not call.error and opened.startswith("/dev/")
            and is_device(opened) and "O_WRONLY" not in flags):
        yield _uncacheable(f"the command opened {path} ({opened}) for reading, a terminal or device: input the "
                           "cache cannot key")
        return
    if call.error:
        if call.error == "EEXIST" or not writes:
            yield Touch("lstat" if call.error == "EEXIST" else "read", path, None if call.error == "EEXIST" else call.error)
        elif call.error in ("ENOENT", "ENOTDIR", "EACCES", "EISDIR"):
            yield Touch("stat", path, call.error)
        return
    if "O_DIRECTORY" in flags and not writes:
        yield Touch("access", path)  # opening a directory reads nothing; getdents on it is the listing
        if opened.startswith("/") and opened != path:
            yield from _route(path)  # reached through a link: what the descriptor leads to depends on it
        return
    if writes:
        if "O_RDWR" in flags and "O_TRUNC" not in flags and "O_EXCL" not in flags:
            yield Touch("read", path)  # may read the old content before changing it
        if is_device(opened or path) and not opened.startswith(("pipe:", "socket:")):
            yield _uncacheable(f"the command opened {path} for writing, a terminal or device: what it writes "
                               "there a replay cannot write")
            return
        # What a second run needs to find there to leave the same file (readset.build checks it):
        # an exclusive creation needs it absent; a write that keeps the old content (O_APPEND, or no
        # O_TRUNC) needs that content as it was; a truncating create replaces anything.
        creates = "O_CREAT" in flags
        needs = ("absent" if "O_EXCL" in flags and creates else ("" if creates else "present ")
                 + ("" if "O_TRUNC" in flags else "content")) or None
        yield Touch("create" if "O_CREAT" in flags else "write", path, needs=needs)
        return
    yield Touch("read", path)
