"""The stored value of one exec key: a manifest of candidate results, each with its read-set.

One primary key (tool, argv, working directory, declared inputs) can have several valid pasts:
``git log`` before and after a commit, a linter with two versions of its config. Like ccache's
manifests, the entry under ``cache:exec:{tool}:{sha256}`` holds up to ``MAX_CANDIDATES`` of them,
newest first; a lookup serves the first candidate whose read-set still holds and whose age is within
``max_cache_age_hours`` (judged now, so lowering the setting expires what is stored).

The value is the codec's plain-JSON format (``j`` + JSON; stdout/stderr as base64), so
``actioncache get`` shows it and the hit path decodes it without importing the codec.

The second half of this module checks a stored read-set (``runs.readset`` builds them from a trace
and re-exports these names): what a path looks like now, and the first record that no longer holds.
One module with the manifest, as ``choose`` is the one caller a hit has: a module more cost each
hit ~0.3 M instructions.
"""

from .. import _lean as lean
from .._lean import file_sha256, sha256

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    import stat
    from typing import Any, Iterable, Sequence
else:  # os without importing it (``_os``: ~6 M instructions a hit), stat from the builtin
    import _stat as stat

    from .._os import os

FORMAT = 2
MAX_CANDIDATES = 8
PLAIN_JSON = b"j"  # the codec's format byte for plain JSON
ENTRY_TYPE = "exec_result"


def decode(value: bytes) -> "list[dict[str, Any]]":
    """The candidates in a stored value; [] for anything else (an older format is simply a miss)."""
    if value[:1] != PLAIN_JSON:
        return []
    try:
        data = lean.loads(value[1:].decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return []
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("candidates"), list):
        return []
    return [c for c in data["candidates"] if well_formed(c)]


def well_formed(c: "Any") -> bool:
    """Whether a stored candidate has the shape every later step relies on: the one check between
    stored bytes (perhaps a foreign writer's) and a hit. A candidate that fails it is not served;
    the run goes on as a miss and its result replaces the entry."""
    if not isinstance(c, dict) or not _number(c.get("at")) or not isinstance(c.get("readset"), list):
        return False
    for record in c["readset"]:  # (no generator per record: a read-set holds hundreds)
        if not (isinstance(record, list) and len(record) >= 4 and isinstance(record[0], str)
                and isinstance(record[1], str) and isinstance(record[2], str)
                and (record[3] is None or isinstance(record[3], str))):
            return False
    if not isinstance(c.get("measured", True), bool):
        return False
    offset = c.get("stdin_offset")
    if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
        return False
    code, duration, fresh = c.get("exit_code", 0), c.get("duration_ms"), c.get("fresh_ms")
    if isinstance(code, bool) or not isinstance(code, int) or not (duration is None or _number(duration)) \
            or not (fresh is None or _number(fresh)):
        return False
    from binascii import a2b_base64  # not at the top: a hit from the entry memo never needs it (~0.2 ms)

    try:
        return all(isinstance(c.get(name, ""), str) and a2b_base64(c.get(name, "")) is not None
                   for name in ("stdout", "stderr"))
    except ValueError:  # binascii.Error: not base64
        return False


def _number(value: "Any") -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def encode(candidates: "list[dict[str, Any]]") -> bytes:
    return PLAIN_JSON + lean.dumps({"format": FORMAT, "candidates": candidates[:MAX_CANDIDATES]}).encode("utf-8")


def candidate(result: "dict[str, Any]", readset: "list[list[Any]]", at: float, traced: bool) -> "dict[str, Any]":
    from binascii import b2a_base64

    return {"at": at, "traced": traced, "readset": readset, "exit_code": int(result["exit_code"]),
            "duration_ms": float(result.get("duration_ms") or 0.0),
            "fresh_ms": float(result.get("fresh_ms", result.get("duration_ms")) or 0.0),
            "measured": bool(result.get("measured", False)),
            "stdout": b2a_base64(result["stdout"], newline=False).decode("ascii"),
            "stderr": b2a_base64(result["stderr"], newline=False).decode("ascii"),
            **({"stdin_offset": result["stdin_offset"]} if result.get("stdin_offset") is not None else {})}


def _output_bytes(value: "str | bytes") -> bytes:
    if isinstance(value, bytes):  # decoded already (``memo_form``)
        return value
    from binascii import a2b_base64

    return a2b_base64(value)


def output(found: "dict[str, Any]") -> "dict[str, Any]":
    """A candidate as a run result: exit code, stdout and stderr bytes, the recorded run's duration
    (traced) and its fresh time (untraced, measured or estimated: ``cost``), and where the run left
    the offset of a file on its stdin (``keys.replay_stdin_offset``)."""
    return {"exit_code": int(found.get("exit_code", 0)), "stdout": _output_bytes(found.get("stdout", "")),
            "stderr": _output_bytes(found.get("stderr", "")), "duration_ms": float(found.get("duration_ms") or 0.0),
            "fresh_ms": float(found.get("fresh_ms", found.get("duration_ms")) or 0.0),
            "stdin_offset": found.get("stdin_offset")}


def live(candidates: "list[dict[str, Any]]", now: float, max_age_hours: float) -> "list[dict[str, Any]]":
    oldest = now - max_age_hours * 3600.0
    return [c for c in candidates if isinstance(c.get("at"), (int, float)) and c["at"] >= oldest]


def choose(candidates: "list[dict[str, Any]]", now: float, max_age_hours: float) -> "tuple[dict[str, Any] | None, list[str]]":
    """The first live candidate whose read-set holds, and why each other one did not."""
    why: list[str] = []
    fresh = live(candidates, now, max_age_hours)
    if len(fresh) < len(candidates):
        why.append(f"{len(candidates) - len(fresh)} entr{'y' if len(candidates) - len(fresh) == 1 else 'ies'} "
                   f"older than max_cache_age_hours={max_age_hours:g}")
    for found in fresh:
        change = first_change(found["readset"])
        if change is None:
            return found, why
        path, was, now_seen = change
        why.append(f"{path} changed: was {describe(was)}, now {describe(now_seen)}")
    return None, why


# --- checking a read-set --------------------------------------------------------------------------


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
    """SHA-256 of a directory's names and kinds, in the order the file system lists them (the order
    ``ls -U``, ``os.listdir`` and ``find`` print: on tmpfs the newest first, so a name removed and
    made again moves, and overlayfs lists a file copied up apart from the rest); ``own``: the names
    of the store's own files there (``/``-separated), which are left out with the files the store
    keeps beside them (``own_name``: ``-wal``, ``-shm``, the hit journal...)."""
    digest = sha256()
    owns = own.split("/") if own else ()
    with os.scandir(path) as entries:
        names = [(e.name, "l" if e.is_symlink() else "d" if e.is_dir() else "f") for e in entries
                 if not own_name(e.name, owns)]
    for name, kind in names:
        digest.update(os.fsencode(name) + b"\0" + kind.encode() + b"\n")
    return str(digest.hexdigest())


# What the store keeps beside its SQLite file, by the end of their names: SQLite's own files, the
# environment secret (``keys.ENV_SECRET_SUFFIX``; made as ``.{pid}.tmp``), and the hit journal (one
# being folded: ``.{pid}.folding``), the cheap verdicts' directory and the hit path's entry memos as
# earlier versions made them there (they live in the user cache directory now: ``_lean.store_sidecar``).
SIDECARS = ("-wal", "-shm", "-journal", "-exec-hits.jsonl", "-exec-cheap", "-exec-memo", ".envkey")


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


def look(kind: str, path: str, own: str | None = None,
         taken: "os.stat_result | OSError | None" = None) -> "tuple[str, os.stat_result | None]":
    """What ``kind`` of look at ``path`` sees now, and the stat it was judged on (f/d records).

    ``own``: in a ``d`` look, the name of the store file in that directory (left out of the listing).
    ``taken``: the stat (or its error) of ``path`` just taken, the one this kind of look makes
    (``os.lstat`` for ``l``, ``os.stat`` otherwise), so that a check does not take it again."""
    if kind == "r":
        try:
            return "->" + os.readlink(path), None
        except OSError as exc:
            return ("notlink" if exc.errno == 22 else error_of(exc)), None  # EINVAL: there, not a link
    if taken is None:
        try:
            taken = os.lstat(path) if kind == "l" else os.stat(path)
        except OSError as exc:
            taken = exc
    if isinstance(taken, OSError):
        return error_of(taken), None
    info = taken
    mode = info.st_mode
    if kind in ("s", "l", "x"):  # stat_of, open_view(stat_of()): one string built, no calls (a hit makes many)
        return (f"{mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:{info.st_nlink}:"
                f"{info.st_uid}:{info.st_gid}"), None
    if kind == "o":
        return f"o:{mode:o}:{info.st_size}:{info.st_nlink}:{info.st_uid}:{info.st_gid}", None
    if kind == "a":
        return f"a:{stat.S_IFMT(mode):o}:{stat.S_IMODE(mode):o}:{info.st_uid}:{info.st_gid}", None
    if kind == "h":  # the directory that holds the store: all but the ctime, which the store's own writes move (home_view)
        return (f"h:{mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}:{info.st_nlink}:{info.st_uid}:"
                f"{info.st_gid}"), None
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
    """``(path, was, now)`` of the first record that no longer holds; None when all hold.

    One ``stat`` (and one ``lstat``) per path, however many records it has: a Python command's
    read-set holds a ``.pyc`` as read (``f``) and as stat'ed open (``o``), a directory as stat'ed
    and as searched (``a``), so a third of an ``llm_ro`` script's records share a path. The stats are
    all taken during this one check, as before; a path seen twice is seen once.

    A path that cannot be stat'ed is kept as its error's text (``error_of``), which is what every
    look but ``l`` and ``r`` sees of it (``look`` with a failed stat): compared at once, without a
    call to ``look`` (an ``llm_ro`` script's read-set holds ~140 such records, the paths the
    loader and the import system probed, and the two calls each cost its hit ~0.3 M instructions).
    The stat looks of the memo's form are compared as tuples built here, not by ``_numbers``."""
    if records.__class__ is tuple:  # the entry memo's plan (``plan``)
        return _plan_change(records)
    followed: dict[str, Any] = {}  # os.stat of each path, or the text of its error
    holds: dict[str, bool] = {}  # each vouching directory: whether it is as it was (vouch_absences)
    stat_ = os.stat
    for record in records:
        kind, path, seen, sig = record[0], record[1], record[2], record[3]
        if kind == "v":  # an absence the memo vouched for by its directory (vouch_absences)
            directory, expected, kind = sig
            held = holds.get(directory)
            if held is None:
                try:
                    now_dir = stat_(directory)
                    held = (now_dir.st_dev, now_dir.st_ino, now_dir.st_mtime_ns, now_dir.st_ctime_ns,
                            now_dir.st_mode) == expected
                except OSError:
                    held = False
                holds[directory] = held
            if held:
                continue
            sig = None  # the directory changed: the name is looked at as its own record would be
        if kind == "l" or kind == "r":
            if seen.__class__ is tuple:  # the memo's form of an lstat look (in_numbers)
                try:
                    linked = os.lstat(path)
                except OSError as exc:
                    return path, _as_text(kind, seen), error_of(exc)
                now_seen = _numbers(kind, linked)
                if now_seen == seen:
                    continue
                return path, _as_text(kind, seen), _as_text(kind, now_seen)
            own = record[4] if len(record) > 4 and isinstance(record[4], str) else None
            now, _ = look(kind, path, own)
            if now != seen:
                return path, seen, now
            continue
        taken: Any = followed.get(path)
        if taken is None:
            try:
                taken = stat_(path)
            except OSError as exc:
                taken = error_of(exc)
            followed[path] = taken
        if taken.__class__ is str:  # the stat failed: every look here sees its error (look, error_of)
            if seen == taken:
                continue
            return path, _as_text(kind, seen) if seen.__class__ is tuple else seen, taken
        if sig is not None:
            if sig.__class__ is tuple:  # the memo's form (in_numbers): compared as numbers, no text made
                if sig == (taken.st_mode, taken.st_size, taken.st_mtime_ns, taken.st_ino, taken.st_ctime_ns):
                    continue
            elif sig == f"{taken.st_mode:o}:{taken.st_size}:{taken.st_mtime_ns}:{taken.st_ino}:{taken.st_ctime_ns}":
                continue  # (signature(with_ctime=True))
        if seen.__class__ is tuple:  # the memo's form of a stat look (in_numbers; _numbers, written out)
            if kind == "o":
                now_seen = (taken.st_mode, taken.st_size, taken.st_nlink, taken.st_uid, taken.st_gid)
            else:
                now_seen = (taken.st_mode, taken.st_size, taken.st_mtime_ns, taken.st_ctime_ns, taken.st_ino,
                            taken.st_nlink, taken.st_uid, taken.st_gid)
            if now_seen == seen:
                continue
            return path, _as_text(kind, seen), _as_text(kind, now_seen)
        own = record[4] if len(record) > 4 and isinstance(record[4], str) else None
        now, _ = look(kind, path, own, taken)
        if now != seen:
            return path, seen, now
    return None


# --- the entry memo's form of a read-set -----------------------------------------------------------
#
# The hit path's entry memo (``hitpath``) keeps a read-set with each stat look (``s``, ``l``, ``x``,
# ``o``) and each file's signature as a tuple of the numbers they were written from, so that a hit
# compares numbers with numbers instead of writing every stat it takes out as text: an ``llm_ro``
# script's read-set holds ~170 of them, and the text cost its hit ~1 M instructions. The text stays
# the stored form (JSON, what ``--explain`` shows); a look that no longer holds is reported as text.

STAT_LOOKS = ("s", "l", "x")


def _numbers(kind: str, info: "os.stat_result") -> "tuple[int, ...]":
    if kind == "o":
        return (info.st_mode, info.st_size, info.st_nlink, info.st_uid, info.st_gid)
    return (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_nlink,
            info.st_uid, info.st_gid)


def _as_text(kind: str, numbers: "tuple[int, ...]") -> str:
    if kind == "o":
        mode, size, nlink, uid, gid = numbers
        return f"o:{mode:o}:{size}:{nlink}:{uid}:{gid}"
    return stat_text(*numbers)


# --- the entry memo's plan: one comparison per path -------------------------------------------------
#
# ``first_change`` takes a record at a time: an ``llm_ro`` script's read-set holds ~260 of them on
# ~150 paths (a ``.pyc`` as read, with its signature, and as stat'ed open; a directory as stat'ed,
# searched and listed; a directory vouching for absent names), and the records, not the stats, were
# most of its check (~2.3 M instructions). The memo keeps the read-set as a plan instead (``memoform.plan``):
# the records grouped by the path they stat, and for each path what all of them ask of its
# ``os.stat`` at once, one tuple of numbers, or the error text every one of them saw. A path whose
# stat gives exactly that tuple (or that error) holds every one of its records, each by the rule it
# is checked by one at a time: a stat look by its eight numbers, an open look by five of them, a read
# file or a listed directory by its signature (a file read and not changed since), a search (``a``)
# by its type, permissions and owner, an absent name by the directory that vouched for it
# (``vouch_absences``). Anything else (a path that differs in any way, a record that needs a further
# look: a link, a file with no signature, the store's own directory) is checked by ``first_change``
# record by record as before, and when one of them no longer holds, the answer is that of the whole
# read-set in its own order: the same record found changed, in the same words, as from the stored text.

STAT_FIELDS = ("st_mode", "st_size", "st_mtime_ns", "st_ctime_ns", "st_ino", "st_nlink", "st_uid", "st_gid", "st_dev")
OPEN_FIELDS = ("st_mode", "st_size", "st_nlink", "st_uid", "st_gid")  # _numbers("o"), open_view
SIGNATURE_FIELDS = ("st_mode", "st_size", "st_mtime_ns", "st_ino", "st_ctime_ns")  # signature(with_ctime=True)
VOUCH_FIELDS = ("st_dev", "st_ino", "st_mtime_ns", "st_ctime_ns", "st_mode")  # vouch_absences
SEARCH_FIELDS = ("st_mode", "st_uid", "st_gid")  # look("a"): S_IFMT and S_IMODE are the whole mode

# The shapes a path's fields come to, each with the function that takes them from a stat; a path
# whose records ask for another set of fields is checked record by record.
PLAN_SHAPES = (STAT_FIELDS[:8], STAT_FIELDS, SIGNATURE_FIELDS, OPEN_FIELDS, VOUCH_FIELDS,
           (*VOUCH_FIELDS, "st_uid", "st_gid"), SEARCH_FIELDS)
_TAKE = (
    lambda s: (s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_nlink, s.st_uid, s.st_gid),
    lambda s: (s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_nlink, s.st_uid, s.st_gid,
               s.st_dev),
    lambda s: (s.st_mode, s.st_size, s.st_mtime_ns, s.st_ino, s.st_ctime_ns),
    lambda s: (s.st_mode, s.st_size, s.st_nlink, s.st_uid, s.st_gid),
    lambda s: (s.st_dev, s.st_ino, s.st_mtime_ns, s.st_ctime_ns, s.st_mode),
    lambda s: (s.st_dev, s.st_ino, s.st_mtime_ns, s.st_ctime_ns, s.st_mode, s.st_uid, s.st_gid),
    lambda s: (s.st_mode, s.st_uid, s.st_gid),
)
PLAN_ERROR = 254  # a path every record of which saw the same error of its stat: its expectation is that text
PLAN_RECORDS = 255  # a path checked record by record (``first_change``)


def _plan_change(the_plan: "tuple[Any, ...]") -> tuple[str, str, str] | None:
    """``first_change`` of a plan (``memoform.plan``): one ``os.stat`` and one comparison per path, the
    records of a path that differs checked one at a time, and the whole read-set's answer in its
    own order when one of them no longer holds."""
    _, paths, shapes, expected, packs = the_plan
    stat_ = os.stat
    take = _TAKE
    for path, shape, wanted, pack in zip(paths, shapes, expected, packs):
        if shape < PLAN_ERROR:
            try:
                if take[shape](stat_(path)) == wanted:
                    continue
            except OSError:
                pass
        elif shape == PLAN_ERROR:
            try:
                stat_(path)
            except OSError as exc:
                if error_of(exc) == wanted:
                    continue
        elif first_change(wanted) is None:
            continue
        from marshal import loads

        if shape == PLAN_RECORDS or first_change(loads(pack)[1]) is not None:
            return first_change(_in_order(packs))
    return None


def _in_order(packs: "Sequence[bytes]") -> "list[Any]":
    """The records of a plan's ``packs`` in the read-set's own order."""
    from marshal import loads

    records: list[Any] = []
    for pack in packs:
        for place, record in zip(*loads(pack)):
            records.extend([None] * (place + 1 - len(records)))
            records[place] = record
    return records


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
    if seen.startswith("h:"):
        fields = seen[2:].split(":")
        if len(fields) == 7 and fields[2].isdigit():
            mode, size, mtime, ino, nlink, uid, gid = fields
            return (f"the store's directory (mode {mode} size {size} mtime {int(mtime) / 1e9:.6f} inode {ino} "
                    f"links {nlink} owner {uid}:{gid})")
        return "the store's directory (type and mode, size, inode, links, owner " + seen[2:] + ")"
    fields = seen.split(":")
    if len(fields) == 8 and all(f.lstrip("-").isdigit() for f in fields):
        mode, size, mtime, ctime, ino, nlink, uid, gid = fields
        return (f"stat mode {mode} size {size} mtime {int(mtime) / 1e9:.6f} ctime {int(ctime) / 1e9:.6f} inode {ino} "
                f"links {nlink} owner {uid}:{gid}")
    return "stat " + seen
