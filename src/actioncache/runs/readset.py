"""A command's read-set: everything it observed, with what it saw, checked again before a replay.

Built on a miss from the tracer's :class:`~actioncache.runs.trace.Touch` list, stored beside the
result, and checked on every later lookup: **a hit is served only when everything the command
observed is observed the same way again**, each path by the same kind of call. One record per path
and kind of observation:

* ``f`` a file that was read: SHA-256 of its content (through symlinks: what a reader gets);
* ``d`` a directory that was listed: SHA-256 of its names and entry types, in the order it lists them;
* ``s`` a path that was stat'ed (``stat``, ``fstat``, ``statx``...): the stat data the call returned,
  as the trace printed it: type, permissions, size, mtime, ctime, inode, link count, owner and group
  (directories too: ``ls -la`` shows their times and link counts);
* ``l`` the same without following a final symlink (``lstat``, ``AT_SYMLINK_NOFOLLOW``);
* ``a`` an ``access``/``chdir``/directory open: the type, permissions and owner that decide it;
* ``r`` a ``readlink``: the link's target text, or that the path is not a link (also made for each
  component of the way to a directory the command changed into or opened through a link:
  ``trace._route``);
* ``x`` a program that was executed: its stat data, wherever it lives.

A failed lookup records its error (``ENOENT``, ``ENOTDIR``, ``EACCES``), as the trace reported it: a
file that appears later changes the answer.

Where a path lives decides how it is observed (:func:`place`), and only one rule leaves anything
out (the pseudo-files):

* **refused**: the store's own files (the SQLite file in use and the files the store keeps beside
  it, ``SIDECARS``, passed as ``ignore``), which every run changes: a command that reads, stats or
  opens one is not cached (a nested exec touches none: ``keys.under_trace``). In the directory that
  holds them, their names in its listing are left out, and its stat counts as an ``h`` record: every
  field but the ctime, its mtime too (see below). Recognised by identity (:class:`OwnFiles`: that
  directory by device and inode, so ``proj/.ac`` in a listing of ``proj``, ``.ac/sub/..`` or a
  symlink to it count the same way, and the database by device and inode);
* **left out** (``own``): the process's own pseudo-files, which describe the
  process rather than the machine and differ for every process: the files of ``/proc/self/`` and
  ``/proc/thread-self/`` that describe the process itself (``OWN_PROC_FILES``: ``stat``, ``status``,
  ``maps``, ``fd/``, ``limits``...; the rest of ``/proc/self`` counts like ``/proc``), ``/dev/fd/N``, ``/dev/stdin``/``stdout``/``stderr``, ``/dev/tty``,
  ``/dev/pts/N``, ``/dev/ptmx``, ``/dev/null``, ``/dev/zero``, ``/dev/full``, ``/dev/random``,
  ``/dev/urandom`` (inherited descriptors and stdin are keyed by the runner instead);
* **system** paths (``SYSTEM_PREFIXES``: ``/usr``, ``/lib*``, ``/bin``, ``/sbin``, ``/dev``, ``/run``,
  ``/nix/store``, ``/snap``, judged by the resolved path) are observed like any other, but a file
  read or a directory listed there is checked by its stat data rather than its content (a package
  upgrade replaces files: new inode, new ctime), which costs one ``stat``;
* ``/proc`` and ``/sys`` (other than the process's own) are checked by content: their stat data says
  nothing about what they contain (``free`` reads ``/proc/meminfo``);
* everything else, including the writable places under system prefixes (``/dev/shm``,
  ``/run/user``...), the user's cache directory and a virtualenv, by content.

The directory that holds the store (``h``): SQLite makes the store's ``-wal`` and ``-shm`` there when
a process opens it and removes them when the last one closes it, which moves the directory's mtime
and ctime. The command is keyed on what it saw of the directory, its mtime too (``ls -la`` of the
project, ``ls -ld``, ``stat -c %y``), and the cache keeps its own writes from moving that: every
process of ours that opens the store puts the directory's mtime back when it lets go, as it found
it, when the directory holds the same entries as then (``_lean.store_closed``; a change of anyone
else's in between keeps the kernel's time). The ctime cannot be put back (setting a time sets it),
so it is never keyed, and a command that asked for it is not recorded: a ``statx`` whose request
mask names it (``STATX_CTIME``, ``STATX_BASIC_STATS``, ``STATX_ALL``: ``ls -lc``, ``stat -c %z``,
plain ``stat``; ``trace.Touch.ctime_asked``). A call that returns every field without being asked
(``stat``, ``lstat``, ``newfstatat``, ``fstat``) is keyed on the mtime and not the ctime: ``find .``
and ``du -s .`` make one for each directory they walk, the store's too, and print no time of it, so
refusing them would leave every walk of a project that holds the store uncached. The gap this
leaves, by choice: a program that prints the store directory's ctime through such a call
(``find -printf %C``, ``os.stat``) sees on a hit the ctime it had when recorded. The fields a
``statx`` did not return are completed from the path as the run left it (``_filled``), as for any
other path. Two of our processes with the store open at once can leave the mtime moved (each puts
back what it found): a miss, never a wrong hit, as the record holds what the directory shows.

Paths the command itself writes before looking at them are its outputs: recorded as the run left
them (content, or absence for a temporary file it removed), without the checks for change during
the run. A replay gives back output streams, not files, so a hit needs the outputs still as the run
left them, and a run is recorded only when a fresh run started from there would leave them the same
way (``_not_made_again``): a truncating write would; an append, a write without truncation, an
exclusive creation still there, a removal, a rename's source or a write to a pipe or device would
not (``trace.Touch.needs``), and such a run is not cached. A path it looked at and then changed (a counter it increments, a directory it lists and
then writes into, a directory whose stat it printed before adding a file) makes the run
uncacheable: the state it saw is gone, so a later match would prove nothing. The same holds for a
path that changed while the run was recorded, or an observation that differs from the path as the
run left it.

Checking is cheap: ``f`` and ``d`` records keep the stat signature seen when they were hashed, and a
path whose signature is unchanged is not hashed again, unless the record is *racy*: changed within
the file system's timestamp granularity of the moment it was hashed (git's racily-clean rule), in
which case it is always hashed. A path whose ctime falls inside the run is not recorded at all: it
changed while the command was reading it.

This module imports only ``os`` and ``stat`` (and ``_lean``): the hit path uses it.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    from typing import Any, Iterable, Sequence


from .manifest import BIG_FILE_BYTES as BIG_FILE_BYTES  # noqa: E402
from .manifest import COARSE_GRANULARITY_NS as COARSE_GRANULARITY_NS  # noqa: E402
from .manifest import FINE_GRANULARITY_NS as FINE_GRANULARITY_NS  # noqa: E402
from .manifest import SIDECARS as SIDECARS  # noqa: E402
from .manifest import describe as describe  # noqa: E402
from .manifest import error_of as error_of  # noqa: E402 - the checking half, in manifest (a hit imports it)
from .manifest import first_change as first_change  # noqa: E402
from .manifest import granularity as granularity  # noqa: E402
from .manifest import listing_digest as listing_digest  # noqa: E402
from .manifest import look as look  # noqa: E402
from .manifest import open_view as open_view  # noqa: E402
from .manifest import own_name as own_name  # noqa: E402
from .manifest import signature as signature  # noqa: E402
from .manifest import stat_of as stat_of  # noqa: E402
from .manifest import stat_text as stat_text  # noqa: E402

UNSEEN = "?"  # a field a ``statx`` call did not return (``trace.observed_stat``; ``_filled`` completes it)

SYSTEM_PREFIXES = ("/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/", "/dev/", "/run/",
                   "/var/run/", "/nix/store/", "/snap/")
PSEUDO_PREFIXES = ("/proc/", "/sys/")
# The files of /proc/self (and /proc/thread-self) that describe the process itself: its memory, its
# arguments and environment, its descriptors, its limits, its scheduling. They differ for every
# process (the one checking a hit is not the one that ran), so they are left out. Every other file
# there describes the system as the process's namespaces show it (``mountinfo``, ``mounts``,
# ``net/tcp``, ``cgroup``, ``uid_map``): it is checked by content, read through the checking
# process's own /proc/self (same namespaces: the answer the command would get). One not on this list
# that does differ per process then simply misses.
OWN_PROC_FILES = ("stat", "status", "statm", "maps", "smaps", "smaps_rollup", "numa_maps", "pagemap", "mem",
                  "cmdline", "environ", "auxv", "fd", "fdinfo", "map_files", "limits", "cwd", "exe", "root",
                  "task", "comm", "sched", "schedstat", "io", "stack", "syscall", "wchan", "personality",
                  "oom_score", "oom_score_adj", "oom_adj", "timerslack_ns", "coredump_filter", "clear_refs",
                  "attr", "ksm_stat", "ksm_merging_pages", "arch_status")
OWN_PROC_DIRS = ("/proc/self", "/proc/thread-self")
# The process's own pseudo-files: they describe the process that opens them, not the machine.
# Terminals, /dev/urandom and other devices are not left out: reading one makes the run uncacheable
# (trace.is_device); a path through /dev/fd or /proc/self/{fd,cwd,root} is resolved to the file it
# leads to by the trace, which observes that file instead. /proc/self and /proc/thread-self
# themselves (symlinks to the process's own directory) are left out too.
OWN_PSEUDO = (*(f"{d}/{name}" for d in OWN_PROC_DIRS for name in OWN_PROC_FILES), "/dev/fd", "/dev/stdin",
              "/dev/stdout", "/dev/stderr", "/dev/null", "/dev/zero", "/dev/full")
_LOOK_KIND = {"read": "f", "list": "d", "stat": "s", "lstat": "l", "access": "a", "readlink": "r", "exec": "x",
              "fstat": "o"}
_CHANGES = ("write", "create", "remove")


# Writable places under the system prefixes, where a project (or a CI workspace on tmpfs) may live:
# observed by content like any project file.
USER_PLACES = ("/dev/shm/", "/run/user/", "/run/shm/", "/run/lock/", "/var/run/user/", "/var/run/shm/")
# /proc/<pid>/cwd, root, fd/N, map_files/...: another process's view of the file system. What such a
# path named in the command cannot be looked at again from here, so a run that read one is not cached.
_PROC_VIEWS = ("cwd", "root", "fd", "map_files", "fdinfo")


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


# Where every OWN_PSEUDO path starts: place() looks through those 83 only for a path there (a
# traced miss asks for every path it observes: ~20,000 comparisons for a Python command's 250).
_OWN_PSEUDO_ROOTS = tuple(sorted({"/" + p.split("/")[1] + "/" for p in OWN_PSEUDO}))


def place(path: str) -> str:
    """How a path is observed: ``own`` (left out), ``system`` (by stat data), ``pseudo`` or ``user`` (content).

    Judged by the path the kernel resolves, not by its text: ``/usr/../home/x`` is ``/home/x``.
    """
    if ".." in path.split("/"):
        path = os.path.realpath(path)
    if path in OWN_PROC_DIRS or (path.startswith(_OWN_PSEUDO_ROOTS) and _under(path, OWN_PSEUDO)):
        return "own"
    if path.startswith(USER_PLACES):
        return "user"
    if path.startswith(PSEUDO_PREFIXES) or path in ("/proc", "/sys"):
        return "pseudo"
    if path.startswith(SYSTEM_PREFIXES) or path + "/" in SYSTEM_PREFIXES:
        return "system"
    return "user"


def is_system(path: str) -> bool:
    """Checked by stat data rather than content: a file under the system directories."""
    return place(path) == "system"


def through_process_view(path: str) -> bool:
    """Whether ``path`` reaches a file through /proc/<pid>/cwd (root, fd, ...): not checkable again.

    The process's own descriptors (``/proc/self/fd/N``) are left out instead (see :func:`place`)."""
    parts = path.split("/")
    if len(parts) <= 4 or parts[1] != "proc" or parts[3] not in _PROC_VIEWS:
        return False
    return not (parts[2] in ("self", "thread-self") and parts[3] in ("fd", "fdinfo"))


def _normal(path: str) -> str:
    """Collapse ``//`` and ``/./`` (never ``..``: through a symlink it is not the lexical parent)."""
    parts = [p for p in path.split("/") if p and p != "."]
    return "/" + "/".join(parts)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


# --- the store's own files, by identity ------------------------------------------------------------


class OwnFiles:
    """The store's own files (``build``'s ``ignore``), recognised by what they are, not by how a path
    spells them: a path is one when a directory on its way is one that holds them (by device and
    inode: a symlink, a bind mount or ``sub/..`` to it is it) and its name there is one of theirs
    (``own_name``), or when it is one of them (by device and inode: a hard link or a symlink to the
    database is the database). A file elsewhere with the same name is not."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.dirs: dict[tuple[int, int], list[str]] = {}  # directory identity -> own names in it
        self.files: set[tuple[int, int]] = set()
        self._ids: dict[str, tuple[int, int] | None] = {}
        self._owned: dict[str, bool] = {}  # a trace names the same path many times
        self._under: dict[str, bool] = {"/": False, "": False}  # is a path, or a directory above it, one of them
        for path in paths:
            path = _normal(os.path.abspath(path))
            if path == "/":
                continue
            parent, name = _parent(path), path.rsplit("/", 1)[1]
            found = self._id(parent)
            if found is not None:
                self.dirs.setdefault(found, []).append(name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                self.files.add((info.st_dev, info.st_ino))

    def _id(self, path: str) -> tuple[int, int] | None:
        if path not in self._ids:
            try:
                info = os.stat(path)
                self._ids[path] = (info.st_dev, info.st_ino)
            except OSError:
                self._ids[path] = None
        return self._ids[path]

    def names_in(self, directory: str) -> str | None:
        """The own names in ``directory`` (``/``-separated, as a ``d`` record keeps them) when it is a
        directory that holds the store's files; else None."""
        if not self.dirs:
            return None
        found = self._id(directory)
        names = self.dirs.get(found) if found is not None else None
        return "/".join(names) if names else None

    def owns(self, path: str) -> bool:
        if not self.dirs:
            return False
        known = self._owned.get(path)
        if known is None:
            known = self._owned[path] = self._judge(path)
        return known

    def _named(self, path: str) -> bool:
        """Whether ``path``, or a directory above it, has one of their names in a directory that
        holds them (one ``stat`` per directory, remembered)."""
        known = self._under.get(path)
        if known is None:
            parent = _parent(path)
            found = self._id(parent)
            names = self.dirs.get(found) if found is not None else None
            known = bool(names) and own_name(path.rsplit("/", 1)[1], names or ()) or self._named(parent)
            self._under[path] = known
        return known

    def _judge(self, path: str) -> bool:
        if self._named(path):
            return True  # one of them, or under one (the cheap verdicts, the config memos)
        if not self.files:
            return False
        try:
            info = os.stat(path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) in self.files and stat.S_ISREG(info.st_mode)


# --- building one from a trace -------------------------------------------------------------------


def __getattr__(name: str) -> Any:
    """``readset.Unrecordable`` (PEP 562): it lives in ``runs.unrecordable`` so that a hit, which only
    checks a read-set, does not import ``actioncache.errors``."""
    if name == "Unrecordable":
        from .unrecordable import Unrecordable

        return Unrecordable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build(touches: Iterable[Any], started_ns: int, *, ignore: Sequence[str] = ()) -> list[list[Any]]:
    """Records ``[kind, path, seen, sig or None]`` for everything a traced run observed.

    ``ignore``: the store's own files; a look at one of them, at anything under them or at the files
    the store keeps beside them (``OwnFiles``: by identity, whatever the spelling of a path) makes
    the run unrecordable, as every run changes them.

    Raises :class:`Unrecordable` with the reason when the run cannot be vouched for: it changed
    something it had observed, something changed while it ran, or a call could not be resolved.
    """
    from .unrecordable import Unrecordable

    looked: dict[tuple[str, str], str | None] = {}  # (kind, path) -> what the trace says it saw; first-seen order
    outputs: dict[str, str | None] = {}  # in first-written order: what its first change needs (Touch.needs)
    observed: dict[str, str | None] = {}  # path -> the error of its first look (None: it was there)
    changed_after_look: set[str] = set()
    relisted: set[str] = set()  # listed directories the command may have added to or removed from
    listed: set[str] = set()
    twice: dict[tuple[str, str], tuple[str, str]] = {}  # observations that differed within the run
    ctime_asked: set[str] = set()  # paths a statx asked the ctime of (trace.Touch.ctime_asked)
    details_asked: set[tuple[str, str]] = set()  # stat looks a statx asked details of (Touch.details_asked)
    mine = OwnFiles(ignore)
    for touch in touches:
        if touch.kind == "unresolved":
            raise Unrecordable(f"the trace has a call whose path could not be resolved: {touch.path}")
        if touch.kind == "uncacheable":
            raise Unrecordable(touch.path)
        path = _normal(touch.path)
        if mine.owns(path):
            # Every run changes them (entries, counters, the hit journal), so what the command saw
            # there (a count, a size, a time) cannot be vouched for by any later check. A nested
            # exec touches none of them (keys.under_trace); a command that does is not cached.
            raise Unrecordable(f"the command looked at the cache's own store ({path}), which every run changes")
        if through_process_view(path):
            raise Unrecordable(f"the command used {path}, a file seen through a process's view in /proc, "
                               "which cannot be checked again")
        where = place(path)
        if where == "own":
            continue
        if touch.kind in _CHANGES:
            if path not in observed:
                outputs.setdefault(path, touch.needs)
            elif not touch.error:
                changed_after_look.add(path)
            if touch.kind in ("create", "remove") and _parent(path) in listed and not touch.error:
                relisted.add(_parent(path))
            continue
        if path in outputs:
            continue  # reading back its own output
        kind = _LOOK_KIND[touch.kind]
        if kind == "d":
            listed.add(path)
        if where == "system" and kind in ("f", "d") and not touch.error:
            kind = "s"  # a system file or directory counts by its stat data
        observed.setdefault(path, touch.error)
        if touch.ctime_asked and not touch.error:
            ctime_asked.add(path)
        if touch.details_asked and not touch.error:
            details_asked.add((kind, path))
        seen = "!" + touch.error if touch.error else touch.stat
        if seen is not None and UNSEEN in seen:
            seen = _filled(path, kind, seen)
        if kind == "o" and seen is not None:
            seen = open_view(seen)
        if kind == "r" and touch.error == "EINVAL":
            seen = "notlink"  # readlink of a path that is there and not a symlink
        if kind == "a" and touch.error in ("EACCES", "EPERM", "EROFS", "ETXTBSY"):
            seen = None  # there, refused: its type, permissions and owner (checked now) decide that
        if kind == "x" and not touch.error:
            interpreter = _interpreter(path)
            if interpreter is not None:  # the kernel runs a script's #! interpreter without a traced open
                looked.setdefault(("x", interpreter), None)
        prior = looked.get((kind, path), "")
        if prior == "" or prior is None:
            looked[(kind, path)] = seen
        elif seen is not None and seen != prior:
            twice.setdefault((kind, path), (prior, seen))
    walked = _walked_through(looked) - details_asked
    # The directory that holds the store: the store's own writes add and remove its -wal and -shm
    # there, so it counts without them (its listing) and without its ctime (its stat: homes below).
    # ... recognised by device and inode, not by the spelling of its path (``proj/.ac`` in a
    # listing of ``proj``, ``.ac/sub/..``): every spelling of it counts the same way.
    def store_dir(path: str) -> bool:
        return mine.names_in(path) is not None

    for path in ctime_asked:
        if store_dir(path):
            # Its mtime is put back after each of the cache's own opens of the store (_lean.store_closed);
            # its ctime cannot be (setting a time sets the ctime), so what the command printed of it
            # would be printed again on a hit where a fresh run prints a later time.
            raise Unrecordable(f"the command asked for the ctime of {path}, the directory that holds the cache's "
                               "store: every run of the cache moves it (SQLite makes and removes the store's "
                               "-wal and -shm there), so it cannot be checked again")

    # A directory where the command made only temporary entries (created and removed again within the
    # run: tempfile's probe of /tmp, pytest's scratch files) has the listing it had, but times and a
    # link count the command's own outputs moved: it counts by type, permissions and owner, like a
    # directory walked through. An entry the run left behind keeps the rule that the run changed it.
    scratch = {_parent(p) for p in outputs} - {_parent(p) for p in outputs if os.path.lexists(p)}
    walked |= {(kind, path) for (kind, path), seen in looked.items()
               if path in scratch and kind in ("s", "l") and seen is not None
               and not seen.startswith("!") and stat.S_ISDIR(int(seen.split(":")[0], 8))}
    # The store's directory counts by all the store's own writes leave as they were (home_view): its
    # ctime moves with every open of the store; its mtime is put back as each of our processes lets
    # go of the store (_lean.store_closed), and its size, inode, link count and owner do not move, so
    # a file or subdirectory made or removed there is seen (``ls -la`` of its parent prints the mtime
    # and the link count). (Only walked through on the way to a path in it, it counts as any walked
    # directory does.)
    homes = {(kind, path) for (kind, path), seen in looked.items()
             if store_dir(path) and kind in ("s", "l") and seen is not None and (kind, path) not in walked
             and not seen.startswith("!") and stat.S_ISDIR(int(seen.split(":")[0], 8))}
    for (kind, path), (first, then) in twice.items():
        if (kind, path) in homes:
            if _home_view(first) != _home_view(then):
                raise Unrecordable(f"{path} changed while the command ran (it was seen twice, differently: "
                                   f"{describe(first)}, then {describe(then)})")
            continue
        if (kind, path) not in walked or _walk_view(first) != _walk_view(then):
            raise Unrecordable(f"{path} changed while the command ran (it was seen twice, differently: "
                               f"{describe(first)}, then {describe(then)})")
    for path in changed_after_look:
        # Fine when it did not really change (its ctime predates the run: an O_CREAT of a file that
        # was there, a read-write open with no write), or when it was absent before and is again
        # (a lock or temporary file the run made and removed).
        if _untouched_since(path, started_ns):
            continue
        if observed[path] is None or look("l", path)[0] != "!" + str(observed[path]):
            raise Unrecordable(f"the command changed {path}, which it had observed")
    for directory in relisted:
        if not _untouched_since(directory, started_ns):  # any entry added or removed moves its ctime
            raise Unrecordable(f"the command changed the listing of {directory}, which it had listed")
    records: list[list[Any]] = []
    for (kind, path), seen in looked.items():
        if (kind, path) in walked and seen is not None:
            kind, seen = "a", _walk_view(seen)
        elif (kind, path) in homes and seen is not None:
            kind, seen = "h", _home_view(seen)
        if kind in ("s", "l") and seen is None and store_dir(path):
            kind = "h"  # the store's directory (its own writes move its times: home_view)
        own = mine.names_in(path) if kind == "d" else None
        now, info = look(kind, path, own)
        if seen is not None:  # what the call itself returned (stat data, an error)
            if now != seen:
                raise Unrecordable(f"{path} changed after the command observed it: it saw {describe(seen)}, "
                                   f"now {describe(now)}")
            records.append([kind, path, seen, None])
            continue
        if kind == "f" and now.startswith("special:"):
            raise Unrecordable(f"the command read {path}, a pipe or device whose content cannot be checked again")
        checked_at = _now_ns()
        if info is not None and _changed_since(path, info):
            # Hashed while it changed: the digest may be of content the command never read.
            raise Unrecordable(f"{path} changed while its read-set was recorded")
        if info is None and not now.startswith("!"):
            try:
                info = os.stat(path) if kind != "l" else os.lstat(path)
            except OSError:
                info = None
        # A pseudo-file's stat data says nothing about what it holds (/proc/uptime keeps its times;
        # /proc/self/mountinfo is made afresh for each process): no change test by ctime, and no
        # signature, so a hit reads it again.
        pseudo = place(path) == "pseudo"
        if (info is not None and kind not in ("r", "a", "h") and own is None and not pseudo
                and info.st_ctime_ns >= started_ns - granularity(info)):
            raise Unrecordable(f"{path} changed while the command ran")
        sig = None
        if (kind in ("f", "d") and info is not None and not pseudo
                and info.st_ctime_ns < checked_at - granularity(info)):
            sig = signature(info, with_ctime=True)  # not racy: an unchanged signature means unchanged content
        records.append([kind, path, now, sig] if own is None else [kind, path, now, sig, own])
    for path, needs in outputs.items():
        problem = _not_made_again(path, needs, started_ns)
        if problem is not None:
            raise Unrecordable(problem)
        kind = "s" if place(path) == "system" else "f"
        seen, info = look(kind, path)  # a file's content, a directory's kind, or its absence
        sig = None
        if info is not None and not _changed_since(path, info) and info.st_ctime_ns < _now_ns() - granularity(info):
            sig = signature(info, with_ctime=True)
        records.append([kind, path, seen, sig])
    return records


def _not_made_again(path: str, needs: str | None, started_ns: int) -> str | None:
    """Why a fresh run, started where this one left ``path``, would not leave it the same way (and a
    replay, which gives back output streams only, would stand for a different run); None when it
    would. ``needs``: what the command's first change of the path needs to find there (``Touch.needs``).
    A hit requires the path as this run left it, so that is what a fresh run would start from."""
    try:
        info: os.stat_result | None = os.lstat(path)
    except OSError:
        info = None
    if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)
                                 or stat.S_ISLNK(info.st_mode)):
        return (f"the command wrote to {path}, a named pipe, socket or device: a replay cannot write there "
                "what it wrote")
    needs = needs or ""
    if "absent" in needs and info is not None:
        return (f"the command created {path}, which was not there before; it is there now, so a fresh run "
                "would fail to create it (or do something else), which a replay cannot stand for")
    if "present" in needs and info is None:
        return (f"the command removed or changed {path}, which is gone now; a fresh run would not find it, "
                "which a replay cannot stand for")
    if "content" in needs and info is not None and not _untouched_since(path, started_ns):
        return (f"the command changed {path} in place (appended to it, or wrote to it without truncating it "
                "first): a fresh run would change it again, and a replay gives back output streams only")
    return None


def _interpreter(path: str) -> str | None:
    """The ``#!`` interpreter of an executable script, as an absolute path; None for anything else."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    return os.fsdecode(words[0]) if words and words[0].startswith(b"/") else None


def _filled(path: str, kind: str, partial: str) -> str:
    """A ``statx`` observation that lacks fields its caller did not ask for (``trace.observed_stat``),
    completed from the path as the run left it: what the command saw must be what is there now, and
    the record then checks every field, the ones it saw and the rest (more than it saw, never less)."""
    from .unrecordable import Unrecordable

    try:
        info = os.lstat(path) if kind == "l" else os.stat(path)
    except OSError as exc:
        raise Unrecordable(f"{path} changed after the command observed it: it is gone ({exc.strerror})") from exc
    whole = stat_of(info)
    if any(part not in (UNSEEN, now) for part, now in zip(partial.split(":"), whole.split(":"), strict=True)):
        raise Unrecordable(f"{path} changed after the command observed it: it saw {partial}, now {describe(whole)}")
    return whole


def _walked_through(looked: dict[tuple[str, str], str | None]) -> set[tuple[str, str]]:
    """Directory stats that only walked a path: of a proper ancestor of another observed path, never
    listed. ``realpath`` and ``mkdir -p`` stat every ancestor of a path; those count by type,
    permissions and owner (``a``), not by their times and link counts, which change whenever
    anything is added beside them (``/tmp``, a home directory). A directory that is listed, or
    stat'ed as the last component of what the command asked about (``ls -la DIR``, ``DIR/..``,
    ``find DIR -newer F``, which lists it), keeps all its stat data; so does one a ``statx`` asked
    for its link count, size, inode or times (``stat -c '%h %Y' DIR; cat DIR/f``: the caller says
    what it uses; ``build`` takes those out, ``trace.Touch.details_asked``). A ``stat``, ``lstat`` or
    ``newfstatat`` returns every field unasked, as ``git`` and ``realpath`` make them of every
    ancestor: a program that prints an ancestor's times or link count from such a call, and also
    looks inside it, is replayed with the old ones (a named gap, docs/agent-loops.md)."""
    ancestors: set[str] = set()
    for _, path in looked:
        parent = _parent(path)
        while parent not in ancestors:
            ancestors.add(parent)
            if parent == "/":
                break
            parent = _parent(parent)
    return {(kind, path) for (kind, path), seen in looked.items()
            if kind in ("s", "l") and path in ancestors and ("d", path) not in looked
            and seen is not None and not seen.startswith("!") and stat.S_ISDIR(int(seen.split(":")[0], 8))
            and not path.endswith("/..")}


def _home_view(seen: str) -> str:
    """An observed stat of the directory that holds the store as an ``h`` record sees it: type and
    permissions, size, mtime, inode, link count, owner; not its ctime, which the store's own files
    move as they come and go (``_lean.store_closed`` puts the mtime back, and cannot put the ctime
    back; the size moves too on some file systems, but only while a process has the store open:
    ``exec`` lets go of it while the command runs). A command that asked for the ctime is not
    recorded (``build``)."""
    mode, size, mtime, _, ino, nlink, uid, gid = seen.split(":")
    return f"h:{mode}:{size}:{mtime}:{ino}:{nlink}:{uid}:{gid}"


def _walk_view(seen: str) -> str:
    """An observed directory stat as an ``a`` record sees it: type, permissions, owner."""
    mode, _, _, _, _, _, uid, gid = seen.split(":")
    value = int(mode, 8)
    return f"a:{stat.S_IFMT(value):o}:{stat.S_IMODE(value):o}:{uid}:{gid}"


def _changed_since(path: str, info: os.stat_result) -> bool:
    try:
        return signature(os.stat(path), with_ctime=True) != signature(info, with_ctime=True)
    except OSError:
        return True


def _untouched_since(path: str, started_ns: int) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return info.st_ctime_ns < started_ns - granularity(info)


def _now_ns() -> int:
    import time

    return time.time_ns()
