"""Small helpers for the exec hit path, which must not pay for imports it does not need.

A hit is interpreter start-up plus one store read, so this module and everything the hit path
imports use only builtin or tiny stdlib modules: a ``which`` without ``shutil``, the git HEAD
read from files; JSON, SHA-256 and SQLite's lean loading come from :mod:`actioncache._lean`
(shared with the ``actioncache run`` hit path), re-exported here.
"""

from .._lean import dumps as dumps
from .._lean import file_sha256 as file_sha256
from .._lean import loads as loads
from .._lean import one_output_stream as one_output_stream
from .._lean import output_problem as output_problem
from .._lean import sha256 as sha256
from .._lean import sqlite3_module as sqlite3_module

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    from typing import Any
else:  # os without importing it (``_os``: ~6 M instructions a hit)
    from .._os import os


def which(name: str, path: str | None = None) -> str | None:
    """The executable ``name`` resolves to on ``$PATH`` (as ``shutil.which``, without importing it)."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) and not os.path.isdir(name) else None
    for directory in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def default_signals() -> None:
    """Give the signals Python ignores (SIGPIPE, SIGXFSZ) back their default action before this
    process becomes a command (``execvp``): a command started with SIGPIPE ignored never stops when
    its reader does. Through the builtin ``_signal``: the ``signal`` module imports ``enum``, and
    ``runs.process`` imports ``subprocess`` and ``threading``, which cost mode ``off`` as much as
    starting Python again."""
    try:
        signals: Any = __import__("_signal")
    except ImportError:  # another Python implementation
        import signal as signals
    for name in ("SIGPIPE", "SIGXFSZ"):
        number = getattr(signals, name, None)
        if number is not None:
            signals.signal(number, signals.SIG_DFL)


def process_ms() -> float | None:
    """Wall-clock milliseconds since this process was started (forked), interpreter start-up
    included: what a caller waits for a hit. From ``/proc/self/stat`` (start time in clock ticks,
    rounded down, so half a tick is taken off: unbiased, within half a tick), None elsewhere."""
    import time

    try:
        with open("/proc/self/stat", "rb") as handle:
            data = handle.read()
        ticks = int(data[data.rindex(b")") + 2:].split()[19])
        hz = float(os.sysconf("SC_CLK_TCK"))
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return max(0.0, (now - ticks / hz) * 1000.0 - 500.0 / hz)


# Variables that never change which repository or which commit `git rev-parse HEAD` finds.
_GIT_HARMLESS = ("GIT_SSL_", "GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_SSH", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT",
                 "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_HTTP_", "GIT_PROXY_", "GIT_MERGE_")


def git_head(cwd: str) -> tuple[bool, str | None]:
    """``(True, commit)`` as ``git rev-parse HEAD`` would print it in ``cwd`` (``(True, None)``: no
    commit yet or no repository), read from the repository's own files; ``(False, None)`` whenever
    that reading could differ from git's (a ``GIT_*`` variable, a bare repository, a mount point on
    the way up, a repository owned by someone else, reftable refs, anything unexpected): then git
    itself is asked. Both the hit path and the full command use this, so their keys agree."""
    if any(name.startswith("GIT_") and not name.startswith(_GIT_HARMLESS) for name in os.environ):
        return False, None
    here = os.path.realpath(cwd)
    try:
        device = os.stat(here).st_dev
    except OSError:
        return False, None
    while True:
        dotgit = os.path.join(here, ".git")
        if os.path.isdir(dotgit):
            gitdir = dotgit
            break
        if os.path.isfile(dotgit):
            try:
                with open(dotgit, encoding="utf-8") as handle:
                    line = handle.read().strip()
            except (OSError, UnicodeDecodeError):
                return False, None
            if not line.startswith("gitdir: "):
                return False, None
            gitdir = os.path.join(here, line[len("gitdir: "):])
            break
        if os.path.exists(os.path.join(here, "HEAD")) or os.path.exists(os.path.join(here, "objects")):
            return False, None  # perhaps a bare repository: git decides
        parent = os.path.dirname(here)
        if parent == here:
            return True, None  # no repository: git rev-parse fails, no commit in the key
        try:
            if os.stat(parent).st_dev != device:
                return False, None  # git stops at a file system boundary
        except OSError:
            return False, None
        here = parent
    try:
        if os.stat(gitdir).st_uid != os.geteuid() or os.path.exists(os.path.join(gitdir, "reftable")):
            return False, None  # safe.directory rules, or refs this reader does not know
        common = gitdir
        if os.path.exists(os.path.join(gitdir, "commondir")):
            with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
                common = os.path.join(gitdir, handle.read().strip())
        with open(os.path.join(gitdir, "HEAD"), encoding="utf-8") as handle:
            head = handle.read().strip()
        for _ in range(5):
            if not head.startswith("ref: "):
                return (True, head) if _is_object_id(head) else (False, None)
            ref = head[len("ref: "):].strip()
            if not ref.startswith("refs/heads/") or ".." in ref:
                return False, None
            try:
                with open(os.path.join(common, ref), encoding="utf-8") as handle:
                    head = handle.read().strip()
                continue
            except FileNotFoundError:
                pass
            return _packed_ref(common, ref)
    except (OSError, UnicodeDecodeError):
        return False, None
    return False, None


def _is_object_id(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _packed_ref(common: str, ref: str) -> tuple[bool, str | None]:
    try:
        with open(os.path.join(common, "packed-refs"), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return True, None  # a branch with no commit yet: git rev-parse HEAD fails
    for line in lines:
        if line.startswith(("#", "^")):
            continue
        oid, _, name = line.partition(" ")
        if name == ref:
            return (True, oid) if _is_object_id(oid) else (False, None)
    return True, None


def iso_utc(ts: float) -> str:
    """``2026-11-22T03:24:26.641721Z``, as the core's run-log timestamps."""
    import time

    seconds, micros = divmod(round(ts * 1_000_000), 1_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{micros:06d}Z"
