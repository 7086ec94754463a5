"""The primary key of one command run: what finds the candidate entries for a lookup.

Keys come from inputs, never from the iteration. A command's primary key covers

* the tool: its name, and the resolved executable's path, size and mtime (an upgraded tool misses);
* its argv, as given, and the working directory (a bare ``ls`` in another directory is another key);
* the content hash of every ``--input`` (a tree hash for a directory);
* **the environment**: every variable the command can see (a digest of each value, never the value),
  less ``ENV_IGNORE`` (the policy settings that act on the same entries: mode, force-fresh, audit) and the
  names given with ``--env-ignore``. With ``--env-mode strict`` the command sees only ``STRICT_BASE``
  and the names given with ``--env``, and exactly those are keyed;
* **stdin**, when it is a pipe (not a terminal, not empty): its bytes, which are then fed to the
  command. Above ``STDIN_LIMIT`` bytes, or a pipe that stays open and silent for ``STDIN_WAIT_S``
  seconds, the command runs uncached with all of its stdin (what was read, then the rest), and says
  why. A regular file (``cmd < f``) is left to the command, at its offset, and keyed by its path,
  offset, stat data and content from the offset on (read with ``pread``); above ``STDIN_LIMIT``, or
  open for writing, the run is uncached;
* **inherited descriptors** (``cat /dev/fd/3 3<f``): a regular file open for reading is keyed by its
  path, offset and content; any other (a pipe from ``<(...)``, a file open for writing) makes the run
  uncached, and it says why;
* ``read`` scope: each named path's absolute path, mtime and size (a ``touch`` misses);
* ``llm_ro`` scope (with ``check_git_sha``): the git HEAD commit of the working directory.

When the run is traced, the recorded read-set (``readset``) covers every file the command really
read, so named files need no hashing here. Without a tracer the key falls back to hashing every
argument that names an existing file (``--opt=PATH`` too) and every directory argument's tree: the
``fallback`` flag in the key keeps the two kinds of entries apart.

Tree hashes skip version-control and tool-cache directories (``SKIP_DIRS``): they change on every
commit or run without changing what a linter sees.

Imports stay light (no ``json``, ``hashlib`` or ``subprocess`` at import time): the hit path uses this.
"""

import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    import stat
    from typing import Any, Iterable, Mapping, Sequence
else:  # os without importing it (``_os``: ~6 M instructions a hit), stat from the builtin
    import _stat as stat

    from .._os import os

from .._lean import dumps, file_sha256, make_dirs, read_to_end, sha256, which  # noqa: E402 - after the TYPE_CHECKING block
from .._lean import one_output_stream as one_output_stream  # noqa: E402 - shared with agents.runhit

KEY_VERSION = 4  # 4: environment values enter through a keyed hash (``env_secret``); process state keyed

ENV_SECRET_SUFFIX = ".envkey"  # beside the store file: ``exec.db.envkey``


def env_secret_path(store_path: str | None) -> str:
    """Where the store's environment secret lives: beside a store file, else in the user cache dir."""
    if store_path:
        return os.path.abspath(store_path) + ENV_SECRET_SUFFIX
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "actioncache", "exec-env-secret")


def env_secret(store_path: str | None) -> bytes:
    """The per-store random secret environment values are keyed with (HMAC-SHA-256), from a 0600
    file made on first use. Without it (a directory we cannot write) a per-process secret: the
    run keys but never hits, and no digest anyone could test guesses against is stored."""
    path = env_secret_path(store_path)
    for _ in range(3):
        try:
            with open(path, "rb") as existing:
                data = existing.read()
            if len(data) >= 32:
                return data[:32]
        except OSError:
            pass
        try:
            make_dirs(os.path.dirname(path) or ".")
            fd = os.open(path + f".{os.getpid()}.tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            break
        fresh = os.urandom(32)
        try:
            os.write(fd, fresh)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(path + f".{os.getpid()}.tmp", path)  # never replaces a secret another run made
        except OSError:
            pass
        finally:
            try:
                os.unlink(path + f".{os.getpid()}.tmp")
            except OSError:
                pass
    return _PROCESS_SECRET


_PROCESS_SECRET = os.urandom(32)


def keyed_digest(secret: bytes, name: str, value: str) -> str:
    """HMAC-SHA-256(secret, name NUL value), truncated: equal values give equal digests under one
    store's secret, and without the secret a digest tells nothing about the value."""
    inner_pad, outer_pad = _hmac_pads.get(secret) or _hmac_start(secret)
    inner = inner_pad.copy()
    inner.update(os.fsencode(name) + b"\0" + os.fsencode(value))
    outer = outer_pad.copy()
    outer.update(inner.digest())
    return str(outer.hexdigest()[:32])


def keyed_digests(secret: bytes, values: "Mapping[str, str]") -> dict[str, str]:
    """``{name: keyed_digest(secret, name, value)}``, in one loop (a key has some forty variables:
    a call and two ``fsencode`` calls each cost a hit ~0.2 M instructions). ``name NUL value`` is
    encoded at once: the file system encoding encodes character by character, so that is
    ``fsencode(name) + b"\0" + fsencode(value)``."""
    inner_pad, outer_pad = _hmac_pads.get(secret) or _hmac_start(secret)
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    digests = {}
    for name, value in values.items():
        inner = inner_pad.copy()
        inner.update(f"{name}\0{value}".encode(encoding, errors))
        outer = outer_pad.copy()
        outer.update(inner.digest())
        digests[name] = str(outer.hexdigest()[:32])
    return digests


_hmac_pads: "dict[bytes, tuple[Any, Any]]" = {}


def _hmac_start(secret: bytes) -> "tuple[Any, Any]":
    """The two hashes an HMAC with ``secret`` starts from (the key padded to the block, XOR 0x36 and
    0x5C), made once per secret: a key has some forty variables, and XOR-ing 64 bytes in Python for
    each cost a hit about 0.5 M instructions. The XOR is one of two integers (C)."""
    padded = secret.ljust(64, b"\0")
    size = len(padded)
    key = int.from_bytes(padded, "big")
    pads = (sha256((key ^ int.from_bytes(b"\x36" * size, "big")).to_bytes(size, "big")),
            sha256((key ^ int.from_bytes(b"\x5c" * size, "big")).to_bytes(size, "big")))
    _hmac_pads[secret] = pads
    return pads
# The policy settings whose very purpose is to act on the same entries under another value: a loop
# records, then uses (MODE); a forced fresh run replaces the entry later runs use (FORCE_FRESH, SKIP);
# an audit re-runs a hit and compares (AUDIT_RATE); ACTIONCACHE_CONFIG names the config, whose
# contents are keyed. Every other variable is keyed, the phase and the scopes too: a command can
# print them or choose by them (a step that picks its prompt by $CACHE_PHASE answered ANALYZE with
# REPORT's reply while they were left out), and a loop gives each step one phase. Shell and
# terminal variables (SHLVL, OLDPWD, _, session ids) are keyed as well: `cd -`, `echo $SHLVL`.
# What is left: a command that prints $CACHE_MODE replays the recording run's value.
ENV_IGNORE = frozenset({"ACTIONCACHE_MODE", "CACHE_MODE", "ACTIONCACHE_FORCE_FRESH", "CACHE_FORCE_FRESH",
                        "ACTIONCACHE_AUDIT_RATE", "CACHE_AUDIT_RATE", "CACHE_SKIP", "ACTIONCACHE_CONFIG"})
# What a command sees with --env-mode strict, besides the names given with --env (LC_* included).
STRICT_BASE = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ")
STDIN_LIMIT = 16 * 1024 * 1024  # bytes of stdin keyed at most; above it the command runs uncached
STDIN_WAIT_S = 1.0  # a pipe with nothing in it (and still open) after this long: run uncached
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})


def file_digest(path: str) -> str:
    return file_sha256(path)


def tree_digest(root: str) -> str:
    """SHA-256 over a directory's sorted entries: relative path, kind, exec bit and content."""
    digest = sha256()
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        rel_dir = os.path.relpath(directory, root)
        digest.update(f"d\0{rel_dir}\0".encode("utf-8", "surrogateescape"))
        for name in sorted(files):
            full = os.path.join(directory, name)
            rel = os.path.join(rel_dir, name)
            try:
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    entry = f"l\0{rel}\0{os.readlink(full)}"
                elif stat.S_ISREG(info.st_mode):
                    entry = f"f\0{rel}\0{info.st_mode & 0o111:o}\0{file_digest(full)}"
                else:
                    entry = f"o\0{rel}"
            except OSError as exc:  # vanished or unreadable: it still changes the key
                entry = f"e\0{rel}\0{type(exc).__name__}"
            digest.update(entry.encode("utf-8", "surrogateescape") + b"\n")
    return str(digest.hexdigest())


def path_digest(path: str) -> "list[Any] | None":
    """``["f"|"d", sha256]`` for an existing file or directory, else None."""
    try:
        if os.path.isdir(path):
            return ["d", tree_digest(path)]
        if os.path.isfile(path):
            return ["f", file_digest(path)]
    except OSError as exc:
        return ["e", type(exc).__name__]
    return None


def path_candidates(arg: str) -> "Iterable[str]":
    """The paths one argument may name: itself, and the value of ``--opt=value``."""
    if arg:
        yield arg
    if arg.startswith("-") and "=" in arg:
        value = arg.split("=", 1)[1]
        if value:
            yield value


def tool_identity(tool: str) -> "dict[str, Any]":
    resolved = which(tool)
    if resolved is None:
        return {"name": tool}
    try:
        info = os.stat(resolved)
        return {"name": tool, "path": resolved, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    except OSError:
        return {"name": tool, "path": resolved}


def git_head(cwd: str | None = None) -> str | None:
    """The HEAD commit ``git rev-parse HEAD`` prints in ``cwd``: read from the repository's files
    when that reading is certain (``lean.git_head``, also what the hit path uses), else from git."""
    from .._lean import git_head as read_head

    sure, head = read_head(cwd or os.getcwd())
    if sure:
        return head
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode().strip() or None if out.returncode == 0 else None


def key_parts(
    argv: "Sequence[str]",
    *,
    scope: str,
    inputs: "Sequence[str]" = (),
    env_names: "Sequence[str]" = (),
    stdin_data: bytes | None = None,
    stdin_file: "Sequence[Any] | None" = None,
    check_git_sha: bool = True,
    environ: "Mapping[str, str] | None" = None,
    traced: bool = True,
    cwd: str | None = None,
    env_mode: str = "all",
    env_ignore: "Sequence[str]" = (),
    descriptors: "Sequence[Sequence[Any]]" = (),
    secret: bytes | None = None,
    one_stream: bool = False,
) -> "dict[str, Any]":
    """Everything that identifies this run, as a JSON-able dict (``--explain`` prints it).

    ``traced=False``: no read-set will be recorded, so every argument naming a file is hashed too.
    ``secret``: the store's ``env_secret`` environment values are keyed with (None: a per-process one).
    ``stdin_file``: the regular file on stdin the command inherits (``Stdin.file``).
    ``one_stream``: stdout and stderr are one stream (``one_output_stream``): the run records one
    ordered stream, so its entries live under other keys than a run with two.
    """
    environ = os.environ if environ is None else environ
    files: list[list[Any]] = []
    stats: list[list[Any]] = []
    named: list[tuple[str, str]] = [] if traced else [(f"arg{i}", c) for i, a in enumerate(argv[1:], 1)
                                                       for c in path_candidates(a)]
    named += [("input", p) for p in inputs]
    for label, path in named:
        found = path_digest(path)
        if found is None:
            if label == "input":
                files.append([label, path, "missing"])
            continue
        files.append([label, path, *found])
    if scope == "read":
        for arg in argv[1:]:
            for path in path_candidates(arg):
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                stats.append([os.path.abspath(path), info.st_mtime_ns, info.st_size])
    parts: dict[str, Any] = {"v": KEY_VERSION, "scope": scope, "argv": list(argv), "tool": tool_identity(argv[0]),
                             "cwd": cwd or os.getcwd(), "files": files}
    if not traced:
        parts["fallback"] = True
    if stats:
        parts["stat"] = stats
    key = _PROCESS_SECRET if secret is None else secret
    parts["env"] = keyed_digests(key, command_env(environ, env_mode, env_names, env_ignore, keyed=True))
    if env_mode != "all":
        parts["env_mode"] = env_mode
    parts["proc"] = process_state()
    if descriptors:
        parts["fds"] = [list(d) for d in descriptors]
    if stdin_data:
        parts["stdin"] = sha256(stdin_data).hexdigest()
    if stdin_file is not None:
        parts["stdin_file"] = list(stdin_file)
    parts["stdin_kind"] = stdin_kind(stdin_data)
    if one_stream:  # absent for two streams: the keys of entries recorded before this part stay as they were
        parts["streams"] = "one"
    if scope == "llm_ro" and check_git_sha:
        parts["git_head"] = git_head()
    return parts


def stdin_kind(stdin_data: bytes | None) -> str:
    """What the command's stdin is, as the command can see it without reading it (``isatty``,
    ``fstat``, ``test -t 0``, ``test -p /dev/stdin``): a pipe when its bytes were read and are fed to
    it, else the kind of the descriptor it inherits. Keyed, so a command that acts on it (a prompt
    shown only on a terminal) never replays across two kinds."""
    try:
        info = os.fstat(0)
    except OSError:
        return "closed"
    if stdin_data is not None:  # fed through a pipe, or a socket when it came from one (process._stdin_channel)
        return "socket" if stat.S_ISSOCK(info.st_mode) else "pipe"
    if os.isatty(0):
        return "terminal"
    mode = info.st_mode
    if stat.S_ISCHR(mode):
        return f"device {os.major(info.st_rdev)}:{os.minor(info.st_rdev)}"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "file" if stat.S_ISREG(mode) else "other"


def process_state() -> "dict[str, Any]":
    """What the command inherits besides files and the environment, and may print or act on: the
    umask, every resource limit, the CPU set, the niceness, the scheduling policy, the user and
    groups, the host name and kernel release, ignored and blocked signals, capabilities,
    no_new_privs, seccomp, memory nodes and the OOM score adjustment. All are keyed (a command
    printing ``umask``, ``nproc`` or ``trap -p`` misses when they change). Inherited state with no
    cheap reading here (the I/O priority) is not keyed: a command that asks for it (``ioprio_get``)
    runs uncached (``trace.HARMLESS`` leaves it out)."""
    mask = os.umask(0)
    os.umask(mask)
    limits = proc_rlimits()
    if limits is None:
        import resource

        limits = {name: list(resource.getrlimit(getattr(resource, name)))
                  for name in sorted(dir(resource)) if name.startswith("RLIMIT_")}
    uname = os.uname()
    state: dict[str, Any] = {"umask": mask, "rlimits": limits, "uid": [os.getuid(), os.geteuid()],
                             "gid": [os.getgid(), os.getegid()], "groups": sorted(os.getgroups()),
                             "host": uname.nodename, "kernel": uname.release}
    try:
        state["cpus"] = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    try:
        state["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):
        pass
    try:
        state["sched"] = [os.sched_getscheduler(0), os.sched_getparam(0).sched_priority]
    except (AttributeError, OSError):
        pass
    state.update(_inherited_status())
    return state


# What /proc/self/status says the command inherits across exec and may act on: ignored and blocked
# signals (``nohup``, ``trap -p``), capabilities (``capsh --print``), no_new_privs, seccomp, the
# memory nodes. Python ignores SIGPIPE and SIGXFSZ itself and the command gets them back at their
# default (``lean.default_signals``), so those two bits are not the caller's and are left out.
_STATUS_FIELDS = frozenset({"SigIgn", "SigBlk", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs",
                            "Seccomp", "Mems_allowed_list"})  # a set: every line of the file is looked up
_PYTHON_IGNORED = (1 << (13 - 1)) | (1 << (25 - 1))  # SIGPIPE (13), SIGXFSZ (25)


_STATUS: list[str | None] = []


def _proc_file(path: str) -> bytes | None:
    """The bytes of a file of /proc; None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return read_to_end(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def _proc_status() -> str | None:
    """``/proc/self/status``, read once per process: ``under_trace`` (asked first, before anything
    of the store is touched) and the process state in the key share the read."""
    if not _STATUS:
        data = _proc_file("/proc/self/status")
        _STATUS.append(None if data is None else data.decode("ascii", "replace"))
    return _STATUS[0]


def _inherited_status() -> dict[str, str]:
    text = _proc_status()
    if text is None:
        return {}
    oom = _proc_file("/proc/self/oom_score_adj")
    if oom is None:
        return {}
    found = {"oom_score_adj": oom.decode("ascii", "replace").strip()}
    # Each field's line found in the text (the last line that starts with its name and a colon, as a
    # walk of every line keeping the last would find it), not the file's ~57 lines walked in Python:
    # that cost a hit ~0.1 M instructions.
    text = "\n" + text
    for name in _STATUS_FIELDS:
        at = text.rfind("\n" + name + ":")
        if at < 0:
            continue
        start = at + len(name) + 2
        end = text.find("\n", start)
        value = (text[start:] if end < 0 else text[start:end]).strip()
        if name == "SigIgn":
            value = format(int(value, 16) & ~_PYTHON_IGNORED, "016x")
        found[name] = value
    return found


# /proc/self/limits rows -> the names of Python's resource module on Linux (RLIMIT_OFILE is NOFILE).
# "Max file locks" (RLIMIT_LOCKS) has no name there and is left out, as resource leaves it out.
_PROC_LIMITS = {"Max cpu time": "RLIMIT_CPU", "Max file size": "RLIMIT_FSIZE", "Max data size": "RLIMIT_DATA",
                "Max stack size": "RLIMIT_STACK", "Max core file size": "RLIMIT_CORE",
                "Max resident set": "RLIMIT_RSS", "Max processes": "RLIMIT_NPROC", "Max open files": "RLIMIT_NOFILE",
                "Max locked memory": "RLIMIT_MEMLOCK", "Max address space": "RLIMIT_AS",
                "Max pending signals": "RLIMIT_SIGPENDING", "Max msgqueue size": "RLIMIT_MSGQUEUE",
                "Max nice priority": "RLIMIT_NICE", "Max realtime priority": "RLIMIT_RTPRIO",
                "Max realtime timeout": "RLIMIT_RTTIME"}


def proc_rlimits() -> dict[str, list[int]] | None:
    """Every resource limit as ``resource.getrlimit`` gives it (``[soft, hard]``, -1 unlimited, the
    same names), read from ``/proc/self/limits``: loading the ``resource`` extension module costs a
    hit more than reading the file. None (then ``resource`` is asked) unless every row Python names
    is there and parses."""
    data = _proc_file("/proc/self/limits")
    try:
        lines = data.decode("ascii").splitlines() if data is not None else None
    except UnicodeDecodeError:
        return None
    if lines is None:
        return None
    limits: dict[str, list[int]] = {}
    for line in lines[1:]:
        name = _PROC_LIMITS.get(line[:25].strip())
        values = line[26:].split()
        if name is None or len(values) < 2:
            continue
        try:
            # resource reads rlim_t as a signed long long: above 2**63 it is negative, as there
            limits[name] = [-1 if v == "unlimited" else (int(v) + 2**63) % 2**64 - 2**63 for v in values[:2]]
        except ValueError:
            return None
    if len(limits) != len(_PROC_LIMITS):
        return None
    limits["RLIMIT_OFILE"] = limits["RLIMIT_NOFILE"]
    return dict(sorted(limits.items()))


def run_key(tool: str, parts: "Mapping[str, Any]") -> str:
    """``exec:{tool}:{sha256}``; stored as ``cache:exec:{tool}:{sha256}``."""
    return f"exec:{tool}:{sha256(dumps(parts).encode('utf-8')).hexdigest()}"


def family_key(tool: str, parts: "Mapping[str, Any]") -> str:
    """The command as the loop writes it, whatever world it runs in (``ledger``): the tool, scope,
    working directory and argv only. Joined by NUL, which no argument or path can hold (so the
    join is unambiguous), not as JSON: every hit computes it (canonical JSON cost a hit 0.2 M
    instructions)."""
    text = "\0".join(("family 1", parts["scope"], parts["cwd"], *parts["argv"]))
    return f"exec:{tool}:{sha256(text.encode('utf-8', 'surrogateescape')).hexdigest()}"


def command_env(environ: "Mapping[str, str]", mode: str, declared: "Sequence[str]" = (), ignore: "Sequence[str]" = (),
                *, keyed: bool = False) -> dict[str, str]:
    """The variables the command sees (``keyed``: those of them that enter the key)."""
    if mode == "strict":
        names = set(STRICT_BASE) | set(declared)
        return {k: v for k, v in environ.items() if k in names or k.startswith("LC_")}
    if not keyed:
        return dict(environ)
    return {k: v for k, v in environ.items() if k not in ENV_IGNORE and k not in ignore}


def env_changes(was: "Mapping[str, str]", now: "Mapping[str, str]") -> list[str]:
    """Names whose keyed value differs between two ``parts["env"]`` maps, as ``NAME changed/set/unset``."""
    out = []
    for name in sorted(set(was) | set(now)):
        if name not in now:
            out.append(f"{name} unset")
        elif name not in was:
            out.append(f"{name} set")
        elif was[name] != now[name]:
            out.append(f"{name} changed")
    return out


_TRACED: list[bool] = []


def under_trace() -> bool:
    """Whether this process is already being traced (an ``actioncache exec`` inside another one's trace).
    Such an exec must not open, stat or list anything of the store (the hit path and the full
    command ask this before they do): the outer trace would see it, and a command that looks at the
    store is not cached (``readset.build``)."""
    if not _TRACED:
        found = False
        for line in (_proc_status() or "").splitlines():
            if line.startswith("TracerPid:"):
                found = line[len("TracerPid:"):].strip() not in ("", "0")
                break
        _TRACED.append(found)
    return _TRACED[0]


def inherited_fds() -> list[int]:
    """Open descriptors above 2 this process was started with (Linux; [] elsewhere)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    fds = []
    for name in names:
        fd = int(name)
        if fd > 2:
            try:
                os.fstat(fd)  # the descriptor listdir itself used is closed by now
            except OSError:
                continue
            fds.append(fd)
    return sorted(fds)


def describe_fds(fds: "Sequence[int]", argv: "Sequence[str]") -> "tuple[list[int], list[list[Any]], str | None]":
    """Which inherited descriptors the command gets, their key parts, and why the run cannot be cached.

    Passed on: ``/dev/null``; a regular file open for reading (keyed by path, offset and content:
    ``cat /dev/fd/3 3<f``); and any descriptor the command line names as ``/dev/fd/N`` or
    ``/proc/self/fd/N`` (``diff <(a) <(b)``), which, unless it is such a file, makes the run uncached
    (a pipe's content cannot be keyed, a write to it cannot be replayed). Any other one (a pipe a
    harness leaked, say) is not passed to a cached command, as before; mode off passes everything.
    """
    passed: list[int] = []
    parts: list[list[Any]] = []
    problem: str | None = None
    for fd in fds:
        try:
            info = os.fstat(fd)
            flags = _fd_flags(fd)
        except OSError:
            continue
        named = any(f"/dev/fd/{fd}" in arg or f"/proc/self/fd/{fd}" in arg for arg in argv)
        if stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, 3):
            passed.append(fd)  # /dev/null: nothing to read, nothing kept
        elif stat.S_ISREG(info.st_mode) and flags & 3 == os.O_RDONLY:
            try:
                parts.append([fd, os.readlink(f"/proc/self/fd/{fd}"), os.lseek(fd, 0, os.SEEK_CUR),
                              file_sha256(f"/proc/self/fd/{fd}")])
            except OSError as exc:
                problem = problem or f"inherited descriptor {fd} cannot be read ({exc.strerror})"
            passed.append(fd)
        elif named:
            what = "open for writing" if stat.S_ISREG(info.st_mode) else "a pipe or socket" \
                if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode) else "not a regular file"
            problem = problem or (f"inherited descriptor {fd} (/dev/fd/{fd}) is {what}: what the command reads "
                                  "from it or writes to it cannot be keyed or replayed")
            passed.append(fd)
    return passed, parts, problem


def _fd_flags(fd: int) -> int:
    """The descriptor's status flags (``fcntl(fd, F_GETFL)``; callers read the access mode), from
    ``/proc/self/fdinfo``: ``fcntl`` is an extension module, whose load cost a hit ~0.15 ms."""
    try:
        handle = os.open(f"/proc/self/fdinfo/{fd}", os.O_RDONLY)
    except OSError:
        handle = -1
    if handle >= 0:
        try:
            text = os.read(handle, 4096)
        finally:
            os.close(handle)
        for line in text.split(b"\n"):
            if line.startswith(b"flags:"):
                return int(line[6:].strip(), 8) & ~0o2000000  # O_CLOEXEC is a descriptor flag, not F_GETFL's
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_GETFL)


class Stdin:
    """What this process's stdin holds, read once (the hit path and the full command share it)."""

    data: bytes | None = None  # the bytes read (keyed and fed to the command); None: stdin left alone
    file: "list[Any] | None" = None  # a regular file the command inherits as it is: its key part (``stdin_file``)
    problem: str | None = None  # why the run cannot be cached because of stdin
    more: bool = False  # stdin holds more than ``data``: the rest is copied to the command after it
    observed: bool = False


STDIN = Stdin()


def observe_stdin() -> "Stdin":
    """Read stdin when it is a pipe or a file (not a terminal), up to ``STDIN_LIMIT`` bytes."""
    if STDIN.observed:
        return STDIN
    STDIN.observed = True
    try:
        info = os.fstat(0)
        if os.isatty(0):
            return STDIN
    except OSError:
        # closed: strace would give the traced command /dev/null in its place (it opens the standard
        # descriptors it finds closed), so the run it records is not the run mode off makes
        STDIN.problem = "stdin is closed, and the tracer would give the command /dev/null in its place"
        return STDIN
    mode = info.st_mode
    if stat.S_ISCHR(mode):
        if info.st_rdev != os.makedev(1, 3):  # /dev/null is empty; another device is not input to key
            STDIN.problem = "stdin is a device, whose content cannot be keyed"
        return STDIN
    if stat.S_ISREG(mode):
        return _observe_stdin_file(info)
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return STDIN
    if not _ready(0, STDIN_WAIT_S):
        STDIN.problem = f"stdin is an open pipe with nothing in it after {STDIN_WAIT_S:g} s"
        return STDIN
    chunks: list[bytes] = []
    size = 0
    while size <= STDIN_LIMIT:
        if chunks and not _ready(0, STDIN_WAIT_S):
            # still open and silent: a pipe this process inherited rather than a producer that is done
            STDIN.data, STDIN.more = b"".join(chunks), True
            STDIN.problem = f"stdin is a pipe still open after {STDIN_WAIT_S:g} s with no end of input"
            return STDIN
        try:
            chunk = os.read(0, 1 << 20)
        except OSError as exc:
            STDIN.problem = f"stdin cannot be read ({exc.strerror})"
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    STDIN.data = b"".join(chunks)
    if size > STDIN_LIMIT:
        STDIN.more = True
        STDIN.problem = f"stdin holds more than {STDIN_LIMIT // (1024 * 1024)} MiB, the most that is keyed"
    return STDIN


def _observe_stdin_file(info: "os.stat_result") -> "Stdin":
    """stdin redirected from a regular file (``cmd < f``): the command inherits the file itself, at
    its offset, as it would without the cache (``readlink /proc/self/fd/0``, ``stat -L /dev/stdin``,
    a seek or an ``fstat`` see the file, not a pipe). Its content from the offset on is read with
    ``pread`` (the offset does not move) and keyed with what the command can see of the file without
    reading it: its path, the offset and its stat data. Open for writing too (``cmd <> f``), a write
    to it could not be replayed: uncached."""
    try:
        if _fd_flags(0) & 3 != os.O_RDONLY:
            STDIN.problem = "stdin is a file open for writing: what the command writes to it cannot be replayed"
            return STDIN
        path = os.readlink("/proc/self/fd/0")
        offset = os.lseek(0, 0, os.SEEK_CUR)
    except OSError as exc:
        STDIN.problem = f"stdin cannot be read ({exc.strerror})"
        return STDIN
    digest = sha256()
    size = 0
    while True:
        try:
            chunk = os.pread(0, 1 << 20, offset + size)
        except OSError as exc:
            STDIN.problem = f"stdin cannot be read ({exc.strerror})"
            return STDIN
        if not chunk:
            break
        size += len(chunk)
        if size > STDIN_LIMIT:
            STDIN.problem = f"stdin holds more than {STDIN_LIMIT // (1024 * 1024)} MiB, the most that is keyed"
            return STDIN
        digest.update(chunk)
    STDIN.file = [path, offset, info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns,
                  info.st_ctime_ns, info.st_nlink, info.st_uid, info.st_gid, digest.hexdigest()]
    return STDIN


def stdin_offset() -> int | None:
    """Where a file on stdin stands after the command ran (it shares the open file with this
    process): recorded, so that a hit leaves it there too (``(cmd; cat) < f``: ``cat`` goes on from
    where ``cmd`` stopped reading). None when stdin is not such a file."""
    if STDIN.file is None:
        return None
    try:
        return os.lseek(0, 0, os.SEEK_CUR)
    except OSError:
        return None


def replay_stdin_offset(offset: int | None) -> None:
    """On a hit: leave a file on stdin where the recorded run left it (``stdin_offset``)."""
    if offset is not None and STDIN.file is not None:
        try:
            os.lseek(0, offset, os.SEEK_SET)
        except OSError:
            pass


def _ready(fd: int, timeout_s: float) -> bool:
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    return bool(poller.poll(int(timeout_s * 1000)))
