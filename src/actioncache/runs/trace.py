"""Watch a command run and list every path it looked at, in order (Linux, ``strace -f``).

The tracer follows the command and every process it starts. Each file-related system call becomes
one :class:`Touch`: what was done (``read``, ``list``, ``stat``, ``lstat``, ``readlink``, ``exec``, ``write``,
``create``, ``remove``) to which absolute path, and whether it failed (a failed open or stat is a
read of absence: a file created later must change the answer).

Paths are made absolute the way the kernel resolves them: ``strace -y`` prints every directory
descriptor with its path (``AT_FDCWD</work/src>``, ``3</work/src>``), so ``openat`` with a
directory descriptor and relative paths after ``chdir`` resolve without guessing. The few calls
that take no directory descriptor (``access``, ``readlink``, ``chdir``, ``mkdir``, ...) resolve
against the process's last known working directory, inherited across ``fork``/``clone``.

``ACTIONCACHE_TRACE=off`` turns tracing off (the fallback keys are used, and say so).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Iterable, Iterator

TRACE_ENV = "ACTIONCACHE_TRACE"
SYSCALLS = "%file,clone,clone3,fork,vfork,fchdir,getdents64,?getdents"


@dataclass(frozen=True)
class Touch:
    kind: str  # read | list | stat | lstat | readlink | exec | write | create | remove
    path: str  # absolute, not resolved through symlinks (what the command asked for)
    error: str | None = None  # errno name of a failed call (ENOENT: a read of absence)


def tracer() -> str | None:
    """The strace binary, unless tracing is switched off or strace is not installed."""
    if os.environ.get(TRACE_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    return shutil.which("strace")


def traced_argv(strace: str, log_path: str, argv: list[str]) -> list[str]:
    return [strace, "-f", "-qq", "-y", "-s", "0", "--seccomp-bpf", "-e", "signal=none", "-e", f"trace={SYSCALLS}",
            "-o", log_path, "--", *argv]


def _probe_memo(strace: str) -> str | None:
    """A file whose content says this strace binary traced fine here before (saves a probe per miss)."""
    from ..config import user_cache_dir

    try:
        info = os.stat(strace)
    except OSError:
        return None
    return os.path.join(str(user_cache_dir()), f"tracer-ok-{info.st_ino}-{info.st_mtime_ns}")


def forget_probe(strace: str) -> None:
    """A traced run produced no trace: ptrace stopped working here; probe again next time."""
    memo = _probe_memo(strace)
    if memo is not None:
        try:
            os.unlink(memo)
        except OSError:
            pass


def tracing_works(strace: str) -> str | None:
    """None when ``strace`` can trace here; else why not (no ptrace in this sandbox, ...)."""
    memo = _probe_memo(strace)
    if memo is not None and os.path.exists(memo):
        return None
    problem = _probe(strace)
    if problem is None and memo is not None:
        try:
            os.makedirs(os.path.dirname(memo), exist_ok=True)
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


def _split_args(text: str) -> tuple[list[str], str]:
    """Top-level arguments of ``name(args) = ret`` (quotes, ``<...>`` and brackets respected), and the rest."""
    args: list[str] = []
    depth, start, i, n = 0, 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "<" and i > 0 and (text[i - 1].isdigit() or text[i - 1] == "D"):  # 3</path>, AT_FDCWD</path>
            i += 1
            while i < n and text[i] != ">":
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[start:i].strip())
                return [a for a in args if a], text[i + 1:]
            depth -= 1
        elif c == "," and depth == 0:
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


@dataclass
class _Call:
    pid: str
    name: str
    args: list[str]
    ret: str
    ret_path: str | None
    error: str | None


def _calls(lines: Iterable[str]) -> Iterator[_Call]:
    pending: dict[str, str] = {}
    for raw in lines:
        line = raw.rstrip("\n")
        pid, _, body = line.partition(" ")
        body = body.lstrip()
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


_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
# name → (index of the dirfd argument or None, index of the path argument, kind)
_PATH_CALLS: dict[str, tuple[int | None, int, str]] = {
    "stat": (None, 0, "stat"), "stat64": (None, 0, "stat"), "lstat": (None, 0, "lstat"), "lstat64": (None, 0, "lstat"),
    "newfstatat": (0, 1, "stat"), "fstatat64": (0, 1, "stat"), "statx": (0, 1, "stat"),
    "access": (None, 0, "stat"), "faccessat": (0, 1, "stat"), "faccessat2": (0, 1, "stat"),
    "readlink": (None, 0, "readlink"), "readlinkat": (0, 1, "readlink"), "chdir": (None, 0, "stat"),
    "execve": (None, 0, "exec"), "execveat": (0, 1, "exec"),
    "mkdir": (None, 0, "create"), "mkdirat": (0, 1, "create"), "mknod": (None, 0, "create"),
    "mknodat": (0, 1, "create"), "symlink": (None, 1, "create"), "symlinkat": (1, 2, "create"),
    "link": (None, 1, "create"), "linkat": (2, 3, "create"),
    "unlink": (None, 0, "remove"), "unlinkat": (0, 1, "remove"), "rmdir": (None, 0, "remove"),
    "truncate": (None, 0, "write"), "chmod": (None, 0, "write"), "fchmodat": (0, 1, "write"),
    "chown": (None, 0, "write"), "lchown": (None, 0, "write"), "fchownat": (0, 1, "write"),
    "utime": (None, 0, "write"), "utimes": (None, 0, "write"), "utimensat": (0, 1, "write"),
    "futimesat": (0, 1, "write"), "setxattr": (None, 0, "write"), "lsetxattr": (None, 0, "write"),
    "removexattr": (None, 0, "write"), "lremovexattr": (None, 0, "write"),
}


def touches(lines: Iterable[str], cwd: str) -> Iterator[Touch]:
    """Turn strace lines into :class:`Touch` records, in the order the calls returned."""
    cwds: dict[str, str] = {}
    root: str | None = None
    for call in _calls(lines):
        if root is None:
            root = call.pid
            cwds[root] = cwd
        here = cwds.get(call.pid)
        for arg in call.args[:1]:  # a dirfd of AT_FDCWD tells the process's working directory
            if arg.startswith("AT_FDCWD<"):
                here = cwds[call.pid] = _fd_path(arg) or here
        name, failed = call.name, call.error
        if name in ("clone", "clone3", "fork", "vfork"):
            if call.ret.isdigit() and here is not None:
                cwds.setdefault(call.ret, here)
            continue
        if name == "fchdir":
            if not failed and call.args and _fd_path(call.args[0]):
                cwds[call.pid] = _fd_path(call.args[0]) or ""
            continue
        if name in ("getdents", "getdents64"):
            path = _fd_path(call.args[0]) if call.args else None
            if path and not failed:
                yield Touch("list", path)
            continue
        if name in ("open", "openat", "openat2", "creat"):
            yield from _open_touch(call, here)
            continue
        if name in ("rename", "renameat", "renameat2"):
            pairs = ((None, 0), (None, 1)) if name == "rename" else ((0, 1), (2, 3))
            for kind, (fd_i, path_i) in zip(("remove", "create"), pairs):
                path = _resolve(call, fd_i, path_i, here)
                if path:
                    yield Touch(kind, path, failed)
            continue
        spec = _PATH_CALLS.get(name)
        if spec is None:
            continue
        fd_i, path_i, kind = spec
        if name in ("newfstatat", "fstatat64", "statx", "faccessat", "faccessat2", "execveat") and len(call.args) > path_i:
            if call.args[path_i] == '""':
                continue  # fstat on an open descriptor: the open was recorded already
            if "AT_SYMLINK_NOFOLLOW" in ",".join(call.args[path_i + 1:]):
                kind = "lstat"
        path = _resolve(call, fd_i, path_i, here)
        if path is None:
            continue
        if kind in ("create", "remove", "write") and failed:
            # A failed change changed nothing; it still shows whether the path was there.
            kind, failed = "lstat", (None if failed == "EEXIST" else failed)
        if name == "chdir" and not failed:
            cwds[call.pid] = path
        yield Touch(kind, path, failed)


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
        return
    writes = any(flag in flags for flag in _WRITE_FLAGS)
    if call.error:
        if call.error == "EEXIST" or not writes:
            yield Touch("lstat" if call.error == "EEXIST" else "read", path, None if call.error == "EEXIST" else call.error)
        elif call.error in ("ENOENT", "ENOTDIR", "EACCES", "EISDIR"):
            yield Touch("stat", path, call.error)
        return
    if "O_DIRECTORY" in flags and not writes:
        yield Touch("stat", path)  # opening a directory reads nothing; getdents on it is the listing
        return
    if writes:
        if "O_RDWR" in flags and "O_TRUNC" not in flags and "O_EXCL" not in flags:
            yield Touch("read", path)  # may read the old content before changing it
        yield Touch("create" if "O_CREAT" in flags else "write", path)
        return
    yield Touch("read", path)
