"""Lean helpers for hit paths that must not pay for imports they do not need (``actioncache exec``
and ``actioncache run`` hits answered before the CLI loads).

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


def file_sha256(path: str) -> str:
    digest = sha256()
    with open(path, "rb", buffering=0) as handle:
        while True:
            chunk = handle.read(1 << 20)
            if not chunk:
                return str(digest.hexdigest())
            digest.update(chunk)


class _ScanContext:
    """What ``_json.make_scanner`` reads from its context (the attributes of ``json.JSONDecoder``)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = None
    memo: "dict[str, Any]" = {}


def _not_json(value: "Any") -> "Any":
    raise TypeError(f"{type(value).__name__} is not JSON")


_scan: "Any" = None
_encode: "Any" = None
try:
    _json_c: "Any" = __import__("_json")
    _scan = _json_c.make_scanner(_ScanContext())
    # json.encoder's C encoder, made as json.dumps(sort_keys=True, separators=(",", ":"),
    # ensure_ascii=True) makes it (no check for cycles): the same text, without a Python call per value
    _encode = _json_c.make_encoder(None, _not_json, _json_c.encode_basestring_ascii, None, ":", ",", True, False,
                                   False)
except ImportError:  # another Python implementation: the json package is fine there
    pass


def loads(text: str) -> "Any":
    if _scan is None:
        import json

        return json.loads(text)
    value, end = _scan(text, 0)
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
