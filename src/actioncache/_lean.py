"""Lean helpers for hit paths that must not pay for imports they do not need (``actioncache exec``
and ``actioncache run`` hits answered before the CLI loads): one module, as every module a hit
imports costs it ~0.3-0.6 M instructions (the import system's own Python code, then the body).

Only builtin or tiny stdlib modules: ``json``'s C scanner and encoder without the ``json`` package
(which pulls in ``re``), SHA-256 without OpenSSL's start-up cost, SQLite's C module without
``functools``. Every helper falls back to the ordinary module when the fast one is missing.
"""

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    import stat
    from typing import Any, Callable
else:  # os without importing it (``_os``: ~6 M instructions a hit), stat from the builtin
    import _stat as stat

    from ._os import os


def _builtin_sha256() -> "Callable[..., Any]":
    """The builtin SHA-256 (no OpenSSL load): Python 3.12+ calls its module _sha2, 3.11 _sha256."""
    import sys

    # Only the name this Python has: an import that fails searches every directory on sys.path.
    for name in ("_sha2",) if sys.version_info >= (3, 12) else ("_sha256",):
        try:
            module: Any = __import__(name)
        except ImportError:
            continue
        constructor: Callable[..., Any] = module.sha256
        return constructor
    from hashlib import sha256 as constructor

    return constructor


sha256: "Callable[..., Any]" = _builtin_sha256()


def read_to_end(fd: int) -> bytes:
    """Everything left to read from the descriptor ``fd`` (OSError as ``os.read`` raises it): a
    descriptor's read, not ``open``'s file object, which costs a hit ~0.01 M instructions a file."""
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def file_sha256(path: str) -> str:
    digest = sha256()
    with open(path, "rb", buffering=0) as handle:
        while True:
            chunk = handle.read(1 << 20)
            if not chunk:
                return str(digest.hexdigest())
            digest.update(chunk)


def _not_json(value: "Any") -> "Any":
    raise TypeError(f"{type(value).__name__} is not JSON")


_scan: "Any" = None
_encode: "Any" = None
try:
    _json_c: "Any" = __import__("_json")
    # What make_scanner reads from its context (the attributes of json.JSONDecoder), on a bare module
    # object: a class made for it cost every hit ~0.05 M instructions.
    _context = type(os)("actioncache._lean.scan_context")
    # parse_constant as json.decoder's: the scanner calls it for NaN, Infinity and -Infinity, which
    # json.loads takes (None there raised TypeError for them)
    _context.__dict__.update(strict=True, object_hook=None, object_pairs_hook=None, parse_float=float, parse_int=int,
                             parse_constant={"-Infinity": float("-inf"), "Infinity": float("inf"),
                                             "NaN": float("nan")}.__getitem__, memo={})
    _scan = _json_c.make_scanner(_context)
    # json.encoder's C encoder, made as json.dumps(sort_keys=True, separators=(",", ":"),
    # ensure_ascii=True) makes it (no check for cycles): the same text, without a Python call per value
    _encode = _json_c.make_encoder(None, _not_json, _json_c.encode_basestring_ascii, None, ":", ",", True, False,
                                   False)
except ImportError:  # another Python implementation: the json package is fine there
    pass


def loads(text: str) -> "Any":
    """``json.loads`` (strict): anything that is not one JSON value raises ValueError, as there. The
    bare C scanner says so otherwise (StopIteration where no value starts, SystemError for a control
    character inside a string, without the json package's error class to raise): a caller that
    takes a damaged entry for a miss catches ValueError alone."""
    if _scan is None:
        import json

        return json.loads(text)
    try:
        value, end = _scan(text, 0)
    except (StopIteration, SystemError) as exc:
        raise ValueError(f"not JSON ({type(exc).__name__} at {exc})") from None
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def dumps(value: "Any") -> str:
    """Canonical JSON (sorted keys, no spaces, ASCII) of str/int/float/bool/None/list/dict values,
    exactly ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)``: NaN
    and infinities raise ValueError, other types TypeError."""
    if _encode is None:
        import json

        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return "".join(_encode(value, 0))


def sqlite3_module() -> "Any":
    """SQLite's C module (``_sqlite3``), loaded without what a read-only lookup never uses.

    Python 3.11+'s ``_sqlite3`` imports ``functools`` when it loads, for the ``lru_cache`` of its
    statement cache; ``functools`` pulls in ``collections`` and friends, about a third of a hit's
    start-up. A hit runs two statements, so the module gets a ``functools`` whose ``lru_cache`` is
    no cache (each statement is prepared when run, as with ``cached_statements=0``); the stand-in is
    removed again at once, so nothing else ever sees it. Where ``functools`` is already loaded, or
    the C module is not there, this is the ordinary import.
    """
    import sys

    if "_sqlite3" in sys.modules or "functools" in sys.modules:
        return _plain_sqlite3()
    stand_in = type(sys)("functools")
    stand_in.lru_cache = _no_cache  # type: ignore[attr-defined]
    sys.modules["functools"] = stand_in
    try:
        return _plain_sqlite3()
    finally:
        if sys.modules.get("functools") is stand_in:
            del sys.modules["functools"]


def connect_read_only(path: str) -> "Any":
    """A connection to the SQLite file at ``path`` that only reads; None when it cannot be opened.

    Opened read-write (``mode=rw``, which never creates the file) where this user may write it: a
    ``mode=ro`` connection to a store in WAL mode makes its ``-wal`` and ``-shm`` and leaves them
    behind, where closing a read-write one, the last, removes them, so between runs the store's
    directory holds what it held before the read (a walk of a project that keeps its store there
    lists the same names whether or not a hit read it). Read-only where it must be."""
    sqlite3 = sqlite3_module()
    for mode in ("rw", "ro") if os.access(path, os.W_OK) else ("ro",):
        try:
            return sqlite3.connect(f"file:{path}?mode={mode}", uri=True, timeout=5.0, isolation_level=None)
        except sqlite3.Error:
            continue
    return None


def select_one(path: str, sql: str, params: "tuple[Any, ...]") -> "tuple[Any, ...] | None":
    """One row of a query on the SQLite file at ``path``, opened read-only (:func:`connect_read_only`);
    None when there is no such row or the file cannot be read. The directory that holds the file keeps
    its mtime (:func:`store_opening`)."""
    sqlite3 = sqlite3_module()
    store_opening(path)
    try:
        db = connect_read_only(path)
        if db is None:
            return None
        try:
            row: tuple[Any, ...] | None = db.execute(sql, params).fetchone()
            return row
        except sqlite3.Error:
            return None
        finally:
            db.close()
    finally:
        store_closed(path)


# --- the mtime of the directory that holds a SQLite file -------------------------------------------
#
# SQLite in WAL mode makes the file's -wal and -shm beside it when a connection first reads, and the
# last connection to close removes them: every process that opens the store moves the mtime (and the
# ctime) of the directory that holds it, twice. A store kept in a project (a loop's
# ``artifacts/.../cache.sqlite``) is in a directory that ``ls -la artifacts`` or ``stat`` shows, and a
# traced run is keyed on what it saw of that directory, its mtime too (``runs.readset``): so each
# process of ours that opened the store puts the directory's mtime back as it found it when it lets
# go, provided the directory holds the entries it held then (by name and inode, less SQLite's own
# files: ``SQLITE_FILES``). Anything else added, removed or replaced there meanwhile (by the user, or
# by us: the store file made, its environment secret written) leaves the mtime as the kernel set it,
# so no change of anyone else's is hidden. The ctime cannot be put back (``utime`` itself sets it).
# Opens of the same file in one process nest (a store's connections, a second store object on it):
# the first notes the directory, the last puts its mtime back.

SQLITE_FILES = ("-wal", "-shm", "-journal")  # what SQLite makes beside a database file, by the end of their names
_opened: "dict[str, list[Any]]" = {}  # a database file -> [this process's opens of it, its directory as they found it]
# Above zero while store_opening or store_closed look at the store's directory: the cache's own
# bookkeeping, not the user's program reading files (agents.runrecord's watch leaves it out).
_bookkeeping = [0]


def keeping_books() -> bool:
    """Whether this process is in the cache's own look at a store's directory now."""
    return _bookkeeping[0] > 0


def _directory_now(directory: "str | int", base: str) -> "tuple[int, int, int, int, frozenset[tuple[str, int]]] | None":
    """The directory's device, inode, atime, mtime and entries (name, inode) less SQLite's own files
    beside the database file ``base``; None when it cannot be read."""
    own = {base + suffix for suffix in SQLITE_FILES}
    try:
        info = os.stat(directory)
        with os.scandir(directory) as entries:
            names = frozenset((e.name, e.inode()) for e in entries if e.name not in own)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_atime_ns, info.st_mtime_ns, names


def store_opening(path: str) -> None:
    """Note the directory that holds the SQLite file at ``path`` before this process opens it (one
    ``stat`` and one listing, for the first open only): :func:`store_closed` puts its mtime back."""
    path = os.path.abspath(path)
    opened = _opened.get(path)
    if opened is None:
        _bookkeeping[0] += 1
        try:
            opened = _opened[path] = [0, _directory_now(os.path.dirname(path), os.path.basename(path))]
        finally:
            _bookkeeping[0] -= 1
    opened[0] += 1


def store_closed(path: str) -> None:
    """After this process closed what it opened of the SQLite file at ``path`` (the last close of
    the ones :func:`store_opening` counted): put the mtime of the directory that holds it back to
    what it was before the first, when the directory is the same one with the same entries (less
    SQLite's own). A change made between that check and the ``utime`` is caught by a second look,
    which then gives the directory the time of now, as the change itself would have."""
    path = os.path.abspath(path)
    opened = _opened.get(path)
    if opened is None:
        return
    opened[0] -= 1
    if opened[0] > 0:
        return
    del _opened[path]
    before = opened[1]
    if before is None:
        return
    _bookkeeping[0] += 1
    try:
        _put_back(path, before)
    finally:
        _bookkeeping[0] -= 1


def _put_back(path: str, before: "tuple[int, int, int, int, frozenset[tuple[str, int]]]") -> None:
    base = os.path.basename(path)
    try:
        fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        now = _directory_now(fd, base)
        if now is None or now[3] == before[3] or now[:2] != before[:2] or now[4] != before[4]:
            return  # unmoved, another directory, or other entries: the kernel's time stands
        os.utime(fd, ns=(now[2], before[3]))
        after = _directory_now(fd, base)
        if after is None or after[4] != before[4]:
            os.utime(fd)  # a change came in between: it happened now
    except OSError:
        pass
    finally:
        os.close(fd)


def _no_cache(maxsize: int = 128) -> "Callable[[Any], Any]":
    return _identity


def _identity(function: "Any") -> "Any":
    return function


def _plain_sqlite3() -> "Any":
    try:  # the C module alone: the sqlite3 package adds datetime adapters a lookup never uses
        return __import__("_sqlite3")
    except ImportError:
        return __import__("sqlite3")


def one_output_stream() -> bool:
    """Whether our stdout and stderr are one stream (``2>&1``: the same pipe, file or terminal),
    as every agent harness captures a command's output. Then the command gets one pipe for both,
    as the shell gave it one, and its output is recorded and replayed as one ordered stream on
    stdout: two streams would replay all of stdout, then all of stderr. Two ``fstat`` calls (the
    hit path makes them too); a regular file must also be one open file description (``>f 2>&1``,
    not ``>f 2>f``: two opens, each with its own offset, overwrite each other)."""
    try:
        out, err = os.fstat(1), os.fstat(2)
    except OSError:
        return False
    if (out.st_dev, out.st_ino) != (err.st_dev, err.st_ino):
        return False
    if not stat.S_ISREG(out.st_mode):
        return True  # a pipe, socket or terminal: one inode is one stream in practice
    return _shared_description()


def _shared_description() -> bool:
    """Whether fds 1 and 2 share one open file description (one offset): move fd 1's offset by
    one and see whether fd 2's moved with it, then put it back. Nothing is written and the user
    sees the offsets as they were (kcmp would say the same, but container seccomp often denies it)."""
    try:
        here = os.lseek(1, 0, os.SEEK_CUR)
        if os.lseek(2, 0, os.SEEK_CUR) != here:
            return False
        os.lseek(1, here + 1, os.SEEK_SET)
        try:
            return os.lseek(2, 0, os.SEEK_CUR) == here + 1
        finally:
            os.lseek(1, here, os.SEEK_SET)
    except OSError:
        return False


def output_problem() -> str | None:
    """Why a command's stdout/stderr as we have them cannot be captured and replayed faithfully,
    so that it must get them directly and run uncached; None when they can. A closed descriptor
    (``>&-``: the command sees it closed), a device other than a terminal or /dev/null (/dev/full:
    what its writes return decides what the command does), or two opens of one file (``>f 2>f``:
    neither one stream nor two replays how they overwrite each other). Two ``fstat`` calls."""
    found = []
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            info = os.fstat(fd)
        except OSError:
            return f"its {name} is closed (the command gets it closed, as without the cache)"
        if stat.S_ISCHR(info.st_mode) and not _null_or_terminal(fd, info.st_rdev):
            return (f"its {name} is a device other than a terminal or /dev/null (what its writes return "
                    "decides what it does; it gets the device directly)")
        found.append(info)
    out, err = found
    if stat.S_ISREG(out.st_mode) and (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino) \
            and not _shared_description():
        return ("its stdout and stderr are two opens of one file (>f 2>f: each has its own offset and they "
                "overwrite each other, which no replay repeats)")
    return None


def _null_or_terminal(fd: int, rdev: int) -> bool:
    try:
        if rdev == os.stat("/dev/null").st_rdev:
            return True
    except OSError:
        pass
    return os.isatty(fd)


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
# The config files policy.find_config tries in each directory (pinned to policy's by a test): here,
# in the leaf, for the hit path and for runs.direct, which lists them for the shell part.
CONFIG_NAMES = ("actioncache.toml", ".actioncache.yml", ".actioncache.yaml", "artifacts/rollflow_cache/config.yml")
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


# When this process last created a directory (``time.time_ns()``; 0: never), for ``settle_own_writes``.
_created_ns = 0


def make_dirs(path: str, mode: int = 0o777) -> None:
    """``os.makedirs(path, mode, exist_ok=True)`` that remembers when it created a directory: the
    creation moves the times of the directory that holds it, which a command the cache traces next
    may list (``settle_own_writes``). Raises OSError as ``os.makedirs`` does."""
    global _created_ns
    missing = []  # not os.makedirs: the real os costs a hit path ~6 M instructions (_os has mkdir)
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path or not parent:
            break
        path = parent
    if not missing:
        return
    for directory in reversed(missing):
        try:
            os.mkdir(directory, mode)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
    import time  # builtin

    _created_ns = time.time_ns()


def settle_own_writes(granularity_ns: int) -> None:
    """Return once every directory this process created (``make_dirs``) is older than the file
    system's timestamp granularity. A traced run that lists a directory whose times moved within
    that granularity of its start cannot be recorded (``readset.build``: a change then is
    indistinguishable from one made while it ran), so without the wait the cache's own first
    write beside a command (``store: .ac/cache.db`` in the directory it lists) would make that
    command's first run a miss the next run pays again. Waits at most ``granularity_ns``, and only
    in the process that created something."""
    if not _created_ns:
        return
    import time  # builtin

    left = _created_ns + granularity_ns - time.time_ns()
    if left > 0:
        time.sleep(left / 1e9)


SIDECAR_FOLDER = "exec-sidecars"  # in the user cache directory: each SQLite store's entry memos and verdicts
HIT_JOURNAL = "exec-hits.jsonl"  # a store's hit journal, a sidecar file (``hit_journal``)


def user_cache_dir() -> str:
    """The user's cache directory (``config.user_cache_dir()`` is this as a ``Path``), without
    ``pathlib``: the exec hit path finds a store's memos and verdicts here."""
    import sys

    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
        return os.path.join(base, "actioncache", "Cache")
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Caches", "actioncache")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "actioncache")


def store_sidecar(store: str, kind: str) -> str:
    """The folder of the SQLite store at ``store`` that holds its ``kind``: ``memo`` (the exec hit
    path's entry memos) or ``cheap`` (cheap and churn verdicts); or, ``HIT_JOURNAL``, its hit journal. In the user's cache directory,
    named by the store's absolute path, never beside the store: a store kept in the project (a loop's
    ``artifacts/.../cache.sqlite``) would put a folder that every run rewrites into every
    walk of the project (``find .``, ``git status``, ``os.walk``), and such a walk looks into the
    cache's own files, so it could never be cached. Reached only through ``own_directory``."""
    name = sha256(os.path.abspath(store).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(user_cache_dir(), SIDECAR_FOLDER, f"{name}-{kind}")


CHEAP_TTL_S = 86400.0  # how long a cheap or churning verdict lives (runs.cost)


def sweep_expired(folder: int, now: float) -> None:
    """Remove the files in ``folder`` (a descriptor: ``lean.own_directory``, so a symlink planted in
    the verdicts' place is never listed through) older than any verdict lives (``CHEAP_TTL_S``, and
    a minute): called where one is written, which is rare, so the listing is paid rarely and a
    folder of verdicts (one per key, or per call for a command whose environment changes every
    call) never outgrows what a day holds."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        try:
            if os.stat(name, dir_fd=folder, follow_symlinks=False).st_mtime < now - CHEAP_TTL_S - 60.0:
                os.unlink(name, dir_fd=folder)
        except OSError:
            pass


def hit_journal(store: str) -> str:
    """The hit journal of the SQLite store at ``store``: the runs the exec hit path and the shell
    part served, one JSON line each, until the next full run folds them into the run log. A sidecar
    file (:func:`store_sidecar`): beside the store it came and went with the folds, and a walk of a
    project that keeps its store there listed it or not depending on that moment."""
    return store_sidecar(store, HIT_JOURNAL)


def own_directory(path: str, create: bool = False) -> int | None:
    """A descriptor of ``path`` when it is a real directory of this user's that nobody else may write
    (made ``0700`` when ``create`` and absent), opened without following a symbolic link; None
    otherwise. What a store keeps beside its file (entry memos, cheap verdicts) is reached only
    through such a descriptor (``dir_fd=``), so a symbolic link planted in a sidecar's place is never
    followed: a listing, a removal or a write lands in the sidecar or nowhere, never in the
    directory the link points to."""
    if create:
        try:
            make_dirs(os.path.dirname(path), 0o700)
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        info = None
    if info is None or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        os.close(fd)
        return None
    return fd


def append_record(path: str, record: "Any") -> bool:
    """Append ``record`` as one JSON line to the journal file at ``path`` (made ``0600``), in one
    write (appends of several processes never interleave), never through a symbolic link planted in
    its place; False when it cannot be written (best effort: a journal line never fails a run). Its
    folder (the store's sidecars, ``hit_journal``) is made ``0700`` when it is not there yet."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
    try:
        data = dumps(record).encode("utf-8") + b"\n"
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            make_dirs(os.path.dirname(path), 0o700)
            fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except (OSError, TypeError, ValueError):
        return False
    return True


def write_whole(directory: int, name: str, data: bytes, mtime: int | None = None) -> bool:
    """Write ``name`` in ``directory`` (a descriptor: :func:`own_directory`) whole: under a temporary
    name, then renamed over it, so a reader sees the old file, the new one or none; never through a
    symbolic link; ``mtime``: the file's times, set before the rename. False (and no temporary file
    left) when it cannot be written."""
    temporary = f"{name}.{os.getpid()}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=directory)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        if mtime is not None:
            os.utime(temporary, (mtime, mtime), dir_fd=directory, follow_symlinks=False)
        os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except OSError:
        try:
            os.unlink(temporary, dir_fd=directory)
        except OSError:
            pass
        return False
    return True


def iso_utc(ts: float) -> str:
    """``2026-11-22T03:24:26.641721Z``, as the core's run-log timestamps."""
    import time

    seconds, micros = divmod(round(ts * 1_000_000), 1_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{micros:06d}Z"
