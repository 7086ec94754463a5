"""The checking half of a read-set (``runs.readset``): what a path looks like now, and the first
record of a stored read-set that no longer holds. A hit imports only this module; ``readset``
builds read-sets from a trace and re-exports these names."""

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    import stat
    from typing import Any, Iterable, Sequence
else:  # os without importing it (``_os``: ~6 M instructions a hit), stat from the builtin
    import _stat as stat

    from .._os import os

from .._lean import file_sha256, sha256  # noqa: E402 - after the TYPE_CHECKING block


def stat_text(mode: int, size: int, mtime_ns: int, ctime_ns: int, ino: int, nlink: int, uid: int, gid: int) -> str:
    """One observation of stat data, as recorded from the trace and as checked on a hit."""
    return f"{mode:o}:{size}:{mtime_ns}:{ctime_ns}:{ino}:{nlink}:{uid}:{gid}"


def stat_of(info: "os.stat_result") -> str:
    return stat_text(info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_nlink,
                     info.st_uid, info.st_gid)


def open_view(stat_data: str) -> str:
    """What a stat of an open descriptor counts by (``stat_text`` → type and permissions, size, link
    count, owner): not its times or inode, so a file written back with the same content still hits
    (its content is checked by the read of it)."""
    mode, size, _mtime, _ctime, _ino, nlink, uid, gid = stat_data.split(":")
    return f"o:{mode}:{size}:{nlink}:{uid}:{gid}"


# --- what a path looks like now ------------------------------------------------------------------


def signature(info: "os.stat_result", with_ctime: bool = False) -> str:
    base = f"{info.st_mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"
    return f"{base}:{info.st_ctime_ns}" if with_ctime else base


FINE_GRANULARITY_NS = 20_000_000  # the kernel stamps files from a coarse clock: a jiffy, at most 10 ms
COARSE_GRANULARITY_NS = 2_000_000_000  # whole-second stamps (FAT keeps 2 s): treat as coarse

# A regular file read whose size is over this is observed by its full stat signature (type and
# permissions, size, mtime, ctime, inode, device) instead of its content. That is exact for change
# detection: every write, truncation or replacement moves the mtime and ctime or the inode, and
# the ctime cannot be set back. What it costs is a miss when such a file is touched without a
# change. Hashing it cost every miss of a Python command ~0.1 s (the 23 MB libpython of a pyenv
# build, read in full). A racy signature (a ctime within the timestamp granularity of the moment
# it is taken: a later write in the same tick would leave it unchanged) is never used: the file is
# hashed, as a small one is.
BIG_FILE_BYTES = 1 << 20


def granularity(info: "os.stat_result") -> int:
    if info.st_mtime_ns % 1_000_000_000 == 0 and info.st_ctime_ns % 1_000_000_000 == 0:
        return COARSE_GRANULARITY_NS
    return FINE_GRANULARITY_NS


def _big_file(info: "os.stat_result") -> str | None:
    """A big regular file's observation by its full stat signature; None when it is small or racy."""
    if info.st_size <= BIG_FILE_BYTES:
        return None
    import time  # builtin: no file is read to import it

    if info.st_ctime_ns >= time.time_ns() - granularity(info):
        return None
    return (f"sig:{info.st_mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:"
            f"{info.st_dev}")


def error_of(exc: OSError) -> str:
    """``!`` and the error's symbolic name (``!ENOENT``). The two a read-set holds most of (paths the
    command probed and did not find) by the exception's class, which the interpreter chooses from
    the error number and from nothing else (ENOENT alone is FileNotFoundError, ENOTDIR alone
    NotADirectoryError): importing ``errno`` for them cost a hit ~0.25 M instructions."""
    kind = type(exc)
    if kind is FileNotFoundError:
        return "!ENOENT"
    if kind is NotADirectoryError:
        return "!ENOTDIR"
    import errno

    return "!" + errno.errorcode.get(exc.errno or 0, "EIO")


def listing_digest(path: str, own: str | None = None) -> str:
    """SHA-256 of a directory's sorted names and kinds; ``own``: the names of the store's own files
    there (``/``-separated), which are left out with the files the store keeps beside them
    (``own_name``: ``-wal``, ``-shm``, the hit journal...)."""
    digest = sha256()
    owns = own.split("/") if own else ()
    with os.scandir(path) as entries:
        names = sorted((e.name, "l" if e.is_symlink() else "d" if e.is_dir() else "f") for e in entries
                       if not own_name(e.name, owns))
    for name, kind in names:
        digest.update(os.fsencode(name) + b"\0" + kind.encode() + b"\n")
    return str(digest.hexdigest())


# What the store keeps beside its SQLite file, by the end of their names: SQLite's own files, the hit
# journal (``runs.log``; one being folded: ``.{pid}.folding``), the cheap verdicts' directory
# (``runs.cost``), the environment secret (``keys.ENV_SECRET_SUFFIX``; made as ``.{pid}.tmp``).
SIDECARS = ("-wal", "-shm", "-journal", "-exec-hits.jsonl", "-exec-cheap", ".envkey")


def own_name(name: str, owns: "Iterable[str]") -> bool:
    """Whether ``name``, in a directory that holds the store's files ``owns``, is one of them or one
    the store keeps beside them (``SIDECARS``, and the temporary names it makes them under). Exact
    names, not a prefix: ``exec.db-notes`` beside ``exec.db`` is the user's."""
    for own in owns:
        if name == own or name.startswith(own + ".") and name.endswith((".tmp", ".folding")):
            return True
        if name.startswith(own):
            rest = name[len(own):]
            if any(rest == s or rest.startswith(s + ".") and rest.endswith((".tmp", ".folding")) for s in SIDECARS):
                return True
    return False


def look(kind: str, path: str, own: str | None = None) -> "tuple[str, os.stat_result | None]":
    """What ``kind`` of look at ``path`` sees now, and the stat it was judged on (f/d records).

    ``own``: in a ``d`` look, the name of the store file in that directory (left out of the listing)."""
    if kind == "r":
        try:
            return "->" + os.readlink(path), None
        except OSError as exc:
            return ("notlink" if exc.errno == 22 else error_of(exc)), None  # EINVAL: there, not a link
    try:
        info = os.lstat(path) if kind == "l" else os.stat(path)
    except OSError as exc:
        return error_of(exc), None
    mode = info.st_mode
    if kind in ("s", "l", "x"):  # stat_of, open_view(stat_of()): one string built, no calls (a hit makes many)
        return (f"{mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:{info.st_nlink}:"
                f"{info.st_uid}:{info.st_gid}"), None
    if kind == "o":
        return f"o:{mode:o}:{info.st_size}:{info.st_nlink}:{info.st_uid}:{info.st_gid}", None
    if kind == "a":
        return f"a:{stat.S_IFMT(mode):o}:{stat.S_IMODE(mode):o}:{info.st_uid}:{info.st_gid}", None
    if stat.S_ISDIR(mode) and kind == "f":
        return f"dir:{stat.S_IMODE(mode):o}:{info.st_ino}", None
    try:
        if kind == "d":
            return ("d:" + listing_digest(path, own) if stat.S_ISDIR(mode) else "notdir:" + signature(info)), info
        if not stat.S_ISREG(mode):  # a FIFO or device: never read it here
            return f"special:{mode:o}", None
        return _big_file(info) or "f:" + file_sha256(path), info
    except OSError as exc:
        return error_of(exc), None


# --- checking one before a replay ----------------------------------------------------------------


def first_change(records: "Sequence[Sequence[Any]]") -> tuple[str, str, str] | None:
    """``(path, was, now)`` of the first record that no longer holds; None when all hold."""
    for record in records:
        kind, path, seen, sig = record[0], record[1], record[2], record[3]
        if sig is not None:
            try:
                info = os.stat(path)
            except OSError:
                pass
            else:  # signature(info, with_ctime=True), inline
                if f"{info.st_mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}:{info.st_ctime_ns}" == sig:
                    continue
        own = record[4] if len(record) > 4 and isinstance(record[4], str) else None
        now, _ = look(kind, path, own)
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
    if seen.startswith("sig:"):
        mode, size, mtime, ctime, ino, dev = seen[4:].split(":")
        return (f"a file of {size} bytes (by its signature: mtime {int(mtime) / 1e9:.6f} ctime {int(ctime) / 1e9:.6f} "
                f"inode {ino} device {dev})")
    if seen.startswith("->"):
        return "symlink " + seen
    if seen.startswith("o:"):
        return "open file (type and mode, size, links, owner " + seen[2:] + ")"
    if seen.startswith("a:"):
        return "there (type, mode, owner " + seen[2:] + ")"
    fields = seen.split(":")
    if len(fields) == 8 and all(f.lstrip("-").isdigit() for f in fields):
        mode, size, mtime, ctime, ino, nlink, uid, gid = fields
        return (f"stat mode {mode} size {size} mtime {int(mtime) / 1e9:.6f} ctime {int(ctime) / 1e9:.6f} inode {ino} "
                f"links {nlink} owner {uid}:{gid}")
    return "stat " + seen
