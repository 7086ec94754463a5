"""A command's read-set: every path it looked at, with what it saw, checked before a replay.

Built on a miss from the tracer's :class:`~actioncache.runs.trace.Touch` list, stored beside the
result, and checked on every later lookup: the entry is served only if every path still looks the
same (ccache's manifests, Bazel's action inputs). One record per path and way of looking:

* ``f`` a file that was read: SHA-256 of its content (through symlinks: what a reader gets);
* ``d`` a directory that was listed: SHA-256 of its sorted names and entry types;
* ``s`` a path that was stat'ed: type, permissions, size, mtime and inode (through symlinks; for a
  directory its kind, permissions and inode, not its times: its listing counts when it is listed);
* ``l`` the same without following a symlink (``lstat``, ``readlink``): a link's target text;
* ``r`` a ``readlink``: the link's target text, or that the path is not a link;
* ``x`` a program that was executed: its stat signature, wherever it lives;
* ``m`` a stat of a file whose content is recorded too: its kind and permissions only (the content
  record covers the rest, so a ``touch`` of a linted file does not miss).

A failed look (``ENOENT``, ``ENOTDIR``, ``EACCES``) records the error: a file that appears later
changes the answer. Paths under the system directories in ``SYSTEM_PREFIXES`` (judged by the resolved path, and
never /dev/shm, /run/user and the like) are left out (they
change only with the system's packages, and the programs run from there are still recorded by ``x``).

Paths the command itself writes before looking at them are its outputs: recorded as the run left
them (content, or absence for a temporary file it removed), without the checks for change during
the run. A replay gives back output streams, not files, so a hit needs the outputs still as the run
left them: an output deleted or edited since makes the command run again. A path it
looked at and then changed (a counter it increments, a directory it lists and then writes into) makes
the run uncacheable: the state it read is gone, so a later match would prove nothing.

Checking is cheap: ``f`` and ``d`` records keep the stat signature seen when they were hashed, and a
path whose signature is unchanged is not hashed again, unless the record is *racy*: changed within
the file system's timestamp granularity of the moment it was hashed (git's racily-clean rule), in
which case it is always hashed. A path whose ctime falls inside the run is not recorded at all: it
changed while the command was reading it.

This module imports only ``os`` and ``stat`` (and ``lean``): the hit path uses it.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    from typing import Any, Iterable, Sequence

from ..errors import ActionCacheError  # noqa: E402 - after the TYPE_CHECKING block
from .lean import file_sha256, sha256  # noqa: E402 - after the TYPE_CHECKING block

SYSTEM_PREFIXES = ("/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/", "/proc/", "/sys/",
                   "/dev/", "/run/", "/var/run/", "/nix/store/", "/snap/")
FINE_GRANULARITY_NS = 20_000_000  # the kernel stamps files from a coarse clock: a jiffy, at most 10 ms
COARSE_GRANULARITY_NS = 2_000_000_000  # whole-second stamps (FAT keeps 2 s): treat as coarse
_LOOK_KIND = {"read": "f", "list": "d", "stat": "s", "lstat": "l", "readlink": "r", "exec": "x"}
_CHANGES = ("write", "create", "remove")


# Writable places under the system prefixes, where a project (or a CI workspace on tmpfs) may live:
# never left out.
USER_PLACES = ("/dev/shm/", "/run/user/", "/run/shm/", "/run/lock/", "/var/run/user/", "/var/run/shm/")
# /proc/<pid>/cwd, root, fd/N, map_files/...: another process's view of the file system. What such a
# path named in the command cannot be looked at again from here, so a run that read one is not cached.
_PROC_VIEWS = ("cwd", "root", "fd", "map_files", "fdinfo")


def is_system(path: str) -> bool:
    """Left out of the read-set: a system file (by the path the kernel resolved, not by its text)."""
    if ".." in path.split("/"):
        path = os.path.realpath(path)  # /usr/../home/x is /home/x, not a system file
    if path.startswith(USER_PLACES):
        return False
    return path.startswith(SYSTEM_PREFIXES) or path + "/" in SYSTEM_PREFIXES


def through_process_view(path: str) -> bool:
    """Whether ``path`` reaches a file through /proc/<pid>/cwd (root, fd, ...)."""
    parts = path.split("/")
    return len(parts) > 4 and parts[1] == "proc" and parts[3] in _PROC_VIEWS


def _normal(path: str) -> str:
    """Collapse ``//`` and ``/./`` (never ``..``: through a symlink it is not the lexical parent)."""
    parts = [p for p in path.split("/") if p and p != "."]
    return "/" + "/".join(parts)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def granularity(info: os.stat_result) -> int:
    if info.st_mtime_ns % 1_000_000_000 == 0 and info.st_ctime_ns % 1_000_000_000 == 0:
        return COARSE_GRANULARITY_NS
    return FINE_GRANULARITY_NS


# --- what a path looks like now ------------------------------------------------------------------


def _sig(info: os.stat_result, with_ctime: bool = False) -> str:
    base = f"{info.st_mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"
    return f"{base}:{info.st_ctime_ns}" if with_ctime else base


def _err(exc: OSError) -> str:
    import errno

    return "!" + errno.errorcode.get(exc.errno or 0, "EIO")


def listing_digest(path: str) -> str:
    digest = sha256()
    with os.scandir(path) as entries:
        names = sorted((e.name, "l" if e.is_symlink() else "d" if e.is_dir() else "f") for e in entries)
    for name, kind in names:
        digest.update(os.fsencode(name) + b"\0" + kind.encode() + b"\n")
    return digest.hexdigest()


def look(kind: str, path: str) -> tuple[str, os.stat_result | None]:
    """What ``kind`` of look at ``path`` sees now, and the stat it was judged on (f/d records)."""
    if kind == "r":
        try:
            return "->" + os.readlink(path), None
        except OSError as exc:
            return ("notlink" if exc.errno == 22 else _err(exc)), None  # EINVAL: there, not a link
    try:
        info = os.lstat(path) if kind == "l" else os.stat(path)
    except OSError as exc:
        return _err(exc), None
    mode = info.st_mode
    if kind == "l" and stat.S_ISLNK(mode):
        try:
            return "->" + os.readlink(path), None
        except OSError as exc:
            return _err(exc), None
    if kind == "m":
        return f"mode:{mode:o}", None
    if kind in ("s", "l", "x") or stat.S_ISDIR(mode) and kind == "f":
        if stat.S_ISDIR(mode):
            # A stat'ed directory counts by kind, permissions and inode, not by its times: tools stat
            # busy directories (/tmp, the parents of a repository) all the time. Its listing counts
            # when it is listed.
            return f"dir:{stat.S_IMODE(mode):o}:{info.st_ino}", None
        return _sig(info), None
    try:
        if kind == "d":
            return ("d:" + listing_digest(path) if stat.S_ISDIR(mode) else "notdir:" + _sig(info)), info
        if not stat.S_ISREG(mode):  # a FIFO or device: never read it here
            return f"special:{mode:o}", None
        return "f:" + file_sha256(path), info
    except OSError as exc:
        return _err(exc), None


# --- building one from a trace -------------------------------------------------------------------


class Unrecordable(ActionCacheError):
    """The run cannot be cached: a path it read was changed by the run itself or during it."""


def build(touches: Iterable[Any], started_ns: int, *, ignore: Sequence[str] = ()) -> list[list[Any]]:
    """Records ``[kind, path, seen, sig or None]`` for the paths a traced run looked at.

    ``ignore``: paths left out with everything under them (the cache's own files).

    Raises :class:`Unrecordable` with the reason when the run changed something it had read.
    """
    looked: dict[tuple[str, str], None] = {}  # (kind, path) in first-seen order
    outputs: dict[str, None] = {}  # in first-written order
    observed: dict[str, str | None] = {}  # path -> the error of its first look (None: it was there)
    changed_after_look: set[str] = set()
    relisted: set[str] = set()  # listed directories the command may have added to or removed from
    listed: set[str] = set()
    skip = tuple(_normal(p) for p in ignore)
    for touch in touches:
        path = _normal(touch.path)
        if skip and (path in skip or path.startswith(tuple(p + "/" for p in skip) + tuple(p + "-" for p in skip))):
            continue  # the cache's own files (a nested exec), and SQLite's -wal/-shm beside them
        if touch.kind in _CHANGES:
            if path not in observed:
                outputs.setdefault(path, None)
            elif not touch.error:
                changed_after_look.add(path)
            if touch.kind in ("create", "remove") and _parent(path) in listed and not touch.error:
                relisted.add(_parent(path))
            continue
        if path in outputs:
            continue  # reading back its own output
        kind = _LOOK_KIND[touch.kind]
        if through_process_view(path):
            raise Unrecordable(f"the command read {path}, a file seen through a process's view in /proc, "
                               "which cannot be checked again")
        if kind != "x" and is_system(path):
            continue
        observed.setdefault(path, touch.error)
        if kind == "d":
            listed.add(path)
        looked[(kind, path)] = None
    for path in changed_after_look:
        # Fine when it did not really change (its ctime predates the run: an O_CREAT of a file that
        # was there, a read-write open with no write), or when it was absent before and is again
        # (a lock or temporary file the run made and removed).
        if _untouched_since(path, started_ns):
            continue
        if observed[path] is None or look("l", path)[0] != "!" + str(observed[path]):
            raise Unrecordable(f"the command changed {path}, which it had read")
    for directory in relisted:
        if not _untouched_since(directory, started_ns):  # any entry added or removed moves its ctime
            raise Unrecordable(f"the command changed the listing of {directory}, which it had listed")
    records: list[list[Any]] = []
    for kind, path in _fold(looked):
        seen, info = look(kind, path)
        now = _now_ns()
        if info is not None and _changed_since(path, info):
            # Hashed while it changed: the digest may be of content the command never read.
            raise Unrecordable(f"{path} changed while its read-set was recorded")
        if info is None and not seen.startswith("!"):
            try:
                info = os.stat(path) if kind != "l" else os.lstat(path)
            except OSError:
                info = None
        if (info is not None and kind not in ("x", "r") and info.st_ctime_ns >= started_ns - granularity(info)
                and not (stat.S_ISDIR(info.st_mode) and kind in ("s", "l"))):
            raise Unrecordable(f"{path} changed while the command ran")
        sig = None
        if kind in ("f", "d") and info is not None and info.st_ctime_ns < now - granularity(info):
            sig = _sig(info, with_ctime=True)  # not racy: an unchanged signature means unchanged content
        records.append([kind, path, seen, sig])
    for path in outputs:
        if is_system(path):
            continue
        seen, info = look("f", path)  # a file's content, a directory's kind, or its absence
        sig = None
        if info is not None and not _changed_since(path, info) and info.st_ctime_ns < _now_ns() - granularity(info):
            sig = _sig(info, with_ctime=True)
        records.append(["f", path, seen, sig])
    return records


def _changed_since(path: str, info: os.stat_result) -> bool:
    try:
        return _sig(os.stat(path), with_ctime=True) != _sig(info, with_ctime=True)
    except OSError:
        return True


def _untouched_since(path: str, started_ns: int) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return info.st_ctime_ns < started_ns - granularity(info)


def _fold(looked: dict[tuple[str, str], None]) -> list[tuple[str, str]]:
    """Stats of a file whose content is recorded shrink to ``m`` (a symlink's ``l`` stays)."""
    out: dict[tuple[str, str], None] = {}
    for kind, path in looked:
        if ("f", path) in looked and (kind == "s" or kind == "l" and not look("l", path)[0].startswith("->")):
            kind = "m"
        out[(kind, path)] = None
    return list(out)


def _now_ns() -> int:
    import time

    return time.time_ns()


# --- checking one before a replay ----------------------------------------------------------------


def first_change(records: Sequence[Sequence[Any]]) -> tuple[str, str, str] | None:
    """``(path, was, now)`` of the first record that no longer holds; None when all hold."""
    for record in records:
        kind, path, seen, sig = record[0], record[1], record[2], record[3]
        if sig is not None:
            try:
                info = os.stat(path)
            except OSError:
                info = None
            if info is not None and _sig(info, with_ctime=True) == sig:
                continue
        now, _ = look(kind, path)
        if now != seen:
            return path, seen, now
    return None


def describe(seen: str) -> str:
    """A person's word for a record's observation (for ``--explain``)."""
    if seen.startswith("!"):
        return f"absent ({seen[1:]})" if seen in ("!ENOENT", "!ENOTDIR") else f"error {seen[1:]}"
    if seen.startswith("f:"):
        return "content " + seen[2:14]
    if seen.startswith("d:"):
        return "listing " + seen[2:14]
    if seen.startswith("->"):
        return "symlink " + seen
    return "stat " + seen
