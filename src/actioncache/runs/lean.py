"""Small helpers for the exec hit path, which must not pay for imports it does not need.

A hit is interpreter start-up plus one store read, so this module and everything the hit path
imports use only builtin or tiny stdlib modules: ``json``'s C scanner and encoder without the
``json`` package (which pulls in ``re``), SHA-256 without OpenSSL's start-up cost, a ``which``
without ``shutil``. Every helper falls back to the ordinary module when the fast one is missing.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    from typing import Any, Callable

try:  # the builtin SHA-256 (no OpenSSL load): Python 3.12+ calls it _sha2, 3.11 _sha256
    from _sha2 import sha256 as _sha256_ctor  # type: ignore[import-not-found]
except ImportError:
    try:
        from _sha256 import sha256 as _sha256_ctor  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from hashlib import sha256 as _sha256_ctor  # type: ignore[assignment]

sha256: Callable[..., Any] = _sha256_ctor


def file_sha256(path: str) -> str:
    digest = sha256()
    with open(path, "rb", buffering=0) as handle:
        while True:
            chunk = handle.read(1 << 20)
            if not chunk:
                return digest.hexdigest()
            digest.update(chunk)


class _ScanContext:
    """What ``_json.make_scanner`` reads from its context (the attributes of ``json.JSONDecoder``)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = None
    memo: dict[str, Any] = {}


try:
    from _json import encode_basestring_ascii as _quote
    from _json import make_scanner as _make_scanner

    _scan = _make_scanner(_ScanContext())
except ImportError:  # another Python implementation: the json package is fine there
    _scan = None
    _quote = None


def loads(text: str) -> Any:
    if _scan is None:
        import json

        return json.loads(text)
    value, end = _scan(text, 0)
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def dumps(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces, ASCII) of str/int/float/bool/None/list/dict values."""
    if _quote is None:
        import json

        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    parts: list[str] = []
    _dump(value, parts.append)
    return "".join(parts)


def _dump(value: Any, out: Callable[[str], Any]) -> None:
    if value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, str):
        out(_quote(value))  # type: ignore[misc]
    elif isinstance(value, int):
        out(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN and infinities are not JSON")
        out(float.__repr__(value))
    elif isinstance(value, (list, tuple)):
        out("[")
        for i, item in enumerate(value):
            if i:
                out(",")
            _dump(item, out)
        out("]")
    elif isinstance(value, dict):
        out("{")
        for i, key in enumerate(sorted(value)):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be text, not {key!r}")
            if i:
                out(",")
            out(_quote(key))  # type: ignore[misc]
            out(":")
            _dump(value[key], out)
        out("}")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")


def which(name: str, path: str | None = None) -> str | None:
    """The executable ``name`` resolves to on ``$PATH`` (as ``shutil.which``, without importing it)."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) and not os.path.isdir(name) else None
    for directory in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def sqlite3_module() -> Any:
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


def _no_cache(maxsize: int = 128) -> Callable[[Any], Any]:
    return _identity


def _identity(function: Any) -> Any:
    return function


def _plain_sqlite3() -> Any:
    try:  # the C module alone: the sqlite3 package adds datetime adapters a lookup never uses
        import _sqlite3  # type: ignore[import-not-found]
    except ImportError:
        import sqlite3 as _sqlite3
    return _sqlite3


def iso_utc(ts: float) -> str:
    """``2026-11-22T03:24:26.641721Z``, as the core's run-log timestamps."""
    import time

    seconds, micros = divmod(round(ts * 1_000_000), 1_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{micros:06d}Z"
