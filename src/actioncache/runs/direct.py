"""Direct verdicts: a cheap command run by the ``actioncache`` command's shell part, without Python.

A command judged *cheap* (``cost``: faster fresh than a hit) is run directly by the hit path
(``hitpath._cheap``), after a whole Python start-up, which under load costs more than the command.
So when the hit path takes that branch it also leaves the shell part of ``bin/actioncache``
(``bin/_actioncache_direct.sh`` and the ``_actioncache_verdict.sh`` it sources, POSIX sh, builtins but one ``sha256sum``) a *direct verdict* for
exactly this invocation, and the next identical invocation runs the command without starting
Python at all.

Running a command directly is always correct (never a wrong hit, at most an uncached run), so the
shell part's only duty is to never run directly where the hit path would not, and to expire as the
cheap verdict does. The verdict is named by the SHA-256 the shell computed of: the physical working
directory, the whole argv, the exported environment (``export -p``, less shell-noise names such as
``SHLVL`` and ``OLDPWD``: a direct run is right whatever they hold), and the process state ``keys.process_state`` keys (``/proc/self/status``
fields, tracer included, niceness, scheduling, host name, kernel), with the SHA-256 of its resource
limits (``sha256sum``'s own ``/proc/self/limits``: inherited unchanged) after it: 128 hex digits. Any change of those
is another name: the shell finds no verdict and Python runs as before (and writes one for the new
name if the command is still cheap). The shell passes that name in ``$_ACTIONCACHE_DIRECT``, which
``bin/actioncache`` removes from the environment before anything else reads it.

The verdict (``{XDG_CACHE_HOME or HOME/.cache}/actioncache/exec-direct/TOOL/NAME``; TOOL is the
command's base name, so a command never judged cheap costs the shell one ``stat``, no hashing) is
lines the shell checks with builtins (``read``, ``case``, ``test``), in this order:

* ``v 1``, ``b BOOT_ID`` (``/proc/sys/kernel/random/boot_id``), ``u DEADLINE`` (``/proc/uptime`` in
  centiseconds: the cheap verdict's own expiry, ``cost.CHEAP_TTL_S`` after it was judged), ``c N``
  (the command starts after N arguments of ``exec``, as the shell's own parse must find), ``s I O``
  (stdin a terminal ``t`` or /dev/null ``n``; stdout and stderr one stream ``1`` or two ``2``);
* paths: ``f P`` must exist (the store, the cheap verdict itself, strace, the config memo, the
  ``.git`` the config search stopped at); ``e P`` must exist and not be newer than the verdict
  (the config file, the trust list, the store's environment secret, the tool's executable, the
  hit path's modules, the files a ``read`` scope keys by mtime); ``a P`` must not exist (the config
  names searched and not found, a ``.git`` not there, a ``read`` path that was missing); ``x P``
  must not be an executable (the ``$PATH`` entries before the tool's: a new one would shadow it);
  ``X P``: the tool, executable and not newer;
* ``k HZ``, ``t BOOT_EPOCH_CS``, ``j JOURNAL``, ``r RECORD``: the shell appends the store's hit
  journal one record as ``hitpath._cheap`` does (``"sh": true``, ``overhead_ms`` from ``/proc``'s
  10 ms clocks), so ``actioncache stats`` counts these runs;
* ``m LINE`` (an invocation with ``--summary`` only): the line the shell prints on stderr before it
  runs the command, as the hit path does (letters, digits and ``:;,.()-`` only, else Python runs);
* ``end``. Anything else, a missing or reordered line: the shell falls through to Python.

No verdict is written for what the shell cannot check: the ``llm_ro`` scope (git HEAD), ``--input``
(content hashes), ``$ACTIONCACHE_CHEAP_MS`` set (a threshold for tests and tuning), a
tool that is neither an ELF binary nor a ``#!`` script (the shell would run it as a script), stdin other than a terminal or /dev/null, an inherited regular
file or a ``/dev/fd`` argument, stdout and stderr one regular file, a path with a newline. Nor while
a checked file is *racy*: its mtime is within the second before now. The verdict's own mtime is
set to a second before the Python process started (the shell's ``-nt`` compares nanoseconds in
dash, seconds in some shells), so an edit made after the hit path read anything is always newer. A checked file edited with its mtime put back
(``touch -d``, ``cp -p``) is not seen: the verdict then runs a command directly that the hit path
would re-key; it still expires with the cheap verdict. Linux only (``/proc``); elsewhere nothing
is written and the shell falls through.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hit path ~10 ms
if TYPE_CHECKING:
    from typing import Any

DIR_NAME = "exec-direct"
VERSION = "1"
_HEX = frozenset("0123456789abcdef")


def root() -> str | None:
    """Where direct verdicts live (the shell part computes the same from the same variables)."""
    base = os.environ.get("XDG_CACHE_HOME") or (os.environ["HOME"] + "/.cache" if os.environ.get("HOME") else "")
    if not base.startswith("/") or base == "/":
        return None
    return os.path.join(base, "actioncache", DIR_NAME)


def _asked() -> str | None:
    """The verdict path the shell part computed for this invocation ("" when it computed none);
    None when this process was not started by the ``actioncache`` command."""
    main = sys.modules.get("__main__")
    value = getattr(main, "DIRECT", None)
    return value if isinstance(value, str) else None


def note(opts: dict[str, Any], scope: str, store: str, key: str | None, record: dict[str, Any],
         summary: str | None = None) -> None:
    """The hit path is about to run ``opts["command"]`` directly (cheap; or, ``key`` None, a command
    the config never caches or whose scope is not enabled, ``summary`` the line ``--summary`` prints
    for it): leave the shell part a verdict for this invocation, or the directory that makes it name
    the next one. Best effort."""
    asked = _asked()
    command = opts["command"]
    tool = os.path.basename(command[0])
    top = root()
    if asked is None or top is None or sys.platform != "linux" or tool in ("", ".", ".."):
        return
    folder = os.path.join(top, tool)
    if not asked:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)  # the next identical call names itself
        except OSError:
            pass
        return
    name = asked[len(folder) + 1:]
    if os.path.dirname(asked) != folder or len(name) != 128 or not _HEX.issuperset(name):
        return
    from .._lean import process_ms

    took = process_ms()
    if took is None:
        return
    import time

    # The verdict's mtime: a second before this process started (before it read the config or
    # keyed anything). A checked file modified since is racy (no verdict); one modified later is
    # newer than the verdict whether the shell compares seconds or nanoseconds.
    written = int(time.time() - took / 1000.0) - 1
    try:
        lines = _verdict(sys.argv[2:], opts, scope, store, key, record, written, summary)
    except (OSError, ValueError):
        return
    if lines is not None:
        _write(asked, lines, written)


def _verdict(argv: list[str], opts: dict[str, Any], scope: str, store: str, key: str | None,
             record: dict[str, Any], written: int, summary: str | None = None) -> list[str] | None:
    import time

    from .._lean import CHEAP_TTL_S, dumps, hit_journal, store_sidecar, which
    from . import configmemo
    from .keys import env_secret_path, inherited_fds, path_candidates

    command = opts["command"]
    if scope == "llm_ro" or opts["input"] or os.environ.get("ACTIONCACHE_CHEAP_MS", "").strip():
        return None
    if any("/dev/fd/" in arg or "/proc/self/fd/" in arg for arg in command):
        return None
    stdio = _stdio()
    if stdio is None or any(_is_regular(fd) for fd in inherited_fds()):
        return None
    cwd = os.getcwd()
    check: list[tuple[str, str]] = []  # (kind, path)
    # A cheap verdict lives while its key's cheap file does; a command let through (never cached, its
    # scope not enabled) for as long, its reason held by what the hash and the config trail check.
    cheap = store_sidecar(store, "cheap") + "/" + key.rsplit(":", 1)[-1] if key is not None else None
    check += [("f", store), *([("f", cheap), ("e", env_secret_path(store))] if cheap else [])]
    tracer = which("strace")
    if tracer is None:
        return None
    check.append(("f", os.path.abspath(tracer)))
    check += _config_trail(cwd, configmemo)
    resolved = which(command[0])
    if resolved is None:
        return None
    if os.sep not in command[0]:
        for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
            candidate = os.path.abspath(os.path.join(directory or ".", command[0]))
            if candidate == os.path.abspath(resolved):
                break
            check.append(("x", candidate))
    check.append(("X", os.path.abspath(resolved)))
    with open(resolved, "rb") as handle:
        magic = handle.read(4)
    if magic != b"\x7fELF" and not magic.startswith(b"#!"):
        return None  # the kernel cannot run it (execvp fails), where a shell's exec runs it as a script
    here = os.path.dirname(os.path.abspath(__file__))
    check += [("e", os.path.join(here, name)) for name in ("keys.py", "hitpath.py", "direct.py", "cost.py")]
    if scope == "read":
        for arg in command[1:]:
            for path in path_candidates(arg):
                check.append(("e" if os.path.exists(path) else "a", os.path.abspath(path)))
    now = time.time()
    boot_cs = _uptime_cs()
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
        boot = handle.read().strip()
    left = (os.stat(cheap).st_mtime if cheap else now) + CHEAP_TTL_S - now
    if boot_cs is None or left <= 1.0 or not boot:
        return None
    for kind, path in check:
        if kind in "eX" and os.stat(path).st_mtime_ns >= written * 1_000_000_000:
            return None  # racy: changed since this process started, or within a second before
    if record.get("uncacheable"):  # the reason, in the characters the shell part copies (no quotes)
        record = {**record, "uncacheable": _plain(str(record["uncacheable"]), " _.:,/+@=%~-")}
    prefix = dumps(record)
    if not prefix.endswith("}"):
        return None
    lines = [f"v {VERSION}", f"b {boot}", f"u {boot_cs + int(left * 100)}", f"c {len(argv) - len(command)}",
             f"s {stdio}", *(f"{kind} {path}" for kind, path in check),
             f"k {int(os.sysconf('SC_CLK_TCK'))}", f"t {int(now * 100) - boot_cs}",
             f"j {hit_journal(store)}", f"r {prefix[:-1]}"]
    if opts["summary"]:  # the line hitpath._cheap prints (the shell part checks its characters)
        lines.append(f"m {_plain(summary, ' _.:,();-') if summary else summary_line(os.path.basename(command[0]))}")
    lines.append("end")
    if any("\n" in line or "\r" in line for line in lines) or any(not p.startswith("/") for _, p in check):
        return None
    return lines


def _plain(text: str, allowed: str) -> str:
    """``text`` without the characters the shell part refuses in a verdict line (it checks every one:
    a line holding another is not taken), letters and digits kept."""
    return "".join(c for c in text if c.isascii() and c.isalnum() or c in allowed)


def summary_line(tool: str) -> str:
    """What ``--summary`` prints for a cheap run (the hit path's and the shell part's)."""
    return f"actioncache exec: {tool}: cheap (runs faster fresh than a hit: not cached); hits 0, misses 0, time saved 0.00s"


def _config_trail(cwd: str, configmemo: Any) -> list[tuple[str, str]]:
    """What keeps ``hitpath.find_config(cwd)`` finding what it finds: the names it tried and did not
    find (absent), the one it found (not newer), the ``.git`` it stopped at (present); with a config,
    its memo and the trust list."""
    from .._lean import CONFIG_NAMES

    trail: list[tuple[str, str]] = []
    here = os.path.realpath(cwd)
    while True:
        for name in CONFIG_NAMES:
            candidate = os.path.join(here, name)
            if os.path.isfile(candidate):
                from ..trust import trust_file

                memo = configmemo._memo_path(os.path.realpath(candidate))
                trust = os.path.abspath(trust_file())
                if memo is None:
                    raise ValueError("no config memo")
                return [*trail, ("e", candidate), ("f", memo), ("e" if os.path.exists(trust) else "a", trust)]
            trail.append(("a", candidate))
        dotgit = os.path.join(here, ".git")
        if os.path.exists(dotgit):
            return [*trail, ("f", dotgit)]
        trail.append(("a", dotgit))
        parent = os.path.dirname(here)
        if parent == here:
            return trail
        here = parent


def _stdio() -> str | None:
    """``"I O"`` as the shell checks it (``s`` line), None for what it does not take."""
    import stat

    from .._lean import one_output_stream

    devnull = os.stat(os.devnull)
    try:
        infos = [os.fstat(fd) for fd in (0, 1, 2)]
    except OSError:
        return None
    if os.isatty(0):
        stdin = "t"
    elif (infos[0].st_dev, infos[0].st_ino) == (devnull.st_dev, devnull.st_ino):
        stdin = "n"
    else:
        return None
    for fd in (1, 2):
        info = infos[fd]
        if stat.S_ISCHR(info.st_mode) and not os.isatty(fd) and \
                (info.st_dev, info.st_ino) != (devnull.st_dev, devnull.st_ino):
            return None
    out, err = infos[1], infos[2]
    if (out.st_dev, out.st_ino) != (err.st_dev, err.st_ino):
        return f"{stdin} 2"
    if stat.S_ISREG(out.st_mode) and not one_output_stream():
        # ``>f 2>f``: two opens of one file, which the shell part cannot tell from ``>f 2>&1`` (one
        # open, as harnesses capture). No verdict is left for it; if one left for ``>f 2>&1`` is
        # found for it, the command runs directly, which is right whatever its output is wired to.
        return None
    return f"{stdin} 1"


def _is_regular(fd: int) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _uptime_cs() -> int | None:
    try:
        with open("/proc/uptime", encoding="ascii") as handle:
            seconds = handle.read().split()[0]
    except (OSError, IndexError):
        return None
    whole, _, fraction = seconds.partition(".")
    return int(whole) * 100 + int((fraction + "00")[:2]) if whole.isdigit() and fraction.isdigit() else None


def _write(path: str, lines: list[str], back: int) -> None:
    """Atomically, with its mtime ``back`` (see ``note``); through a descriptor of its folder
    (``_lean.own_directory``), so a symlink planted in the folder's place is never written through."""
    from .._lean import own_directory, write_whole

    folder, name = os.path.split(path)
    fd = own_directory(folder)
    if fd is None:
        return
    try:
        if write_whole(fd, name, ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"), mtime=back):
            _sweep(fd, back)
    finally:
        os.close(fd)


def _sweep(folder: int, now: float) -> None:
    """Remove this tool's verdicts older than any can live (an environment that changes every
    call, say, leaves one per call): written rarely, so the listing is paid rarely."""
    from .._lean import sweep_expired

    sweep_expired(folder, now)
