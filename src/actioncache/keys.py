"""Cache keys: canonical JSON, the key strategies of ``Cache.wrap``, and function-call keys.

Canonical JSON is the one spelling every process agrees on: keys sorted, no whitespace, UTF-8.
Keys must not depend on dict order or keyword order (``tests/test_keys.py`` proves it with
hypothesis), so everything that enters a key goes through :func:`canonical_json`.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any, Callable, Mapping

from ._json import compact_encoder
from .errors import HashError, KeyStrategyError

KEY_PREFIX = "cache:"
KEY_STRATEGIES = ("args", "sha256", "custom", "file_content")


# Keys must be injective: two arguments that a function can tell apart must never spell alike,
# or one call is answered with the other's result. Plain JSON (dicts with string keys, lists,
# str, int, float, bool, None) spells as JSON always has, so those keys never change; every other
# type is written as {"__ac__": TYPE, "v": ...}, and a user dict that itself holds the "__ac__"
# key is tagged too, so no plain value can imitate a tagged one.
TAG = "__ac__"
_SCALARS = (str, int, float, bool, type(None))
_modules = sys.modules


def _loaded(name: str) -> Any:
    """A module if some code imported it, else None. An argument can only be an enum member, a
    datetime, a UUID or a dataclass instance once its module is imported; asking sys.modules keeps
    ``import actioncache`` from importing them all itself."""
    return _modules.get(name)


def _is_plain(value: Any) -> bool:
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is list:
        return all(map(_is_plain, value))
    if kind is dict:
        return all(type(k) is str and k != TAG for k in value) and all(map(_is_plain, value.values()))
    return False


def _sorted_forms(items: Any) -> list[Any]:
    forms = [_key_form(item) for item in items]
    return [form for _, form in sorted((_canonical_plain(form), form) for form in forms)]


def _key_form(value: Any) -> Any:
    """``value`` as plain JSON that no other argument shares (see TAG above)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list:
        return [_key_form(v) for v in value]
    if kind is dict:
        if all(type(k) is str and k != TAG for k in value):
            return {k: _key_form(v) for k, v in value.items()}
        return {TAG: "dict", "v": _sorted_forms([k, v] for k, v in value.items())}
    enum = _loaded("enum")
    if enum is not None and isinstance(value, enum.Enum):  # before str/int: an IntEnum member is not its value
        return {TAG: "enum", "v": [f"{kind.__module__}.{kind.__qualname__}", value.name]}
    if kind is tuple:
        return {TAG: "tuple", "v": [_key_form(v) for v in value]}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {TAG: "bytearray" if kind is bytearray else "bytes", "v": hashlib.sha256(bytes(value)).hexdigest()}
    dt = _loaded("datetime")
    if dt is not None:
        if isinstance(value, dt.datetime):  # before date: a datetime is a date
            return {TAG: "datetime", "v": value.isoformat()}
        if isinstance(value, dt.date):
            return {TAG: "date", "v": value.isoformat()}
        if isinstance(value, dt.time):
            return {TAG: "time", "v": value.isoformat()}
    if isinstance(value, (set, frozenset)):
        return {TAG: kind.__name__ if kind in (set, frozenset) else "set", "v": _sorted_forms(value)}
    if isinstance(value, os.PathLike):
        return {TAG: "path", "v": os.fspath(value)}
    uuid = _loaded("uuid")
    if uuid is not None and isinstance(value, uuid.UUID):
        return {TAG: "uuid", "v": str(value)}
    dataclasses = _loaded("dataclasses")
    if dataclasses is not None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {TAG: "dataclass", "v": [f"{kind.__module__}.{kind.__qualname__}", _key_form(fields)]}
    if isinstance(value, (str, int, float)):
        # A subclass (numpy.float64 is a float) is tagged with its type: a function can tell it
        # from the plain value (type(x), its methods), so the two must not share a key.
        base = str if isinstance(value, str) else int if isinstance(value, int) else float
        return {TAG: "sub", "v": [f"{kind.__module__}.{kind.__qualname__}", base(value)]}
    raise KeyStrategyError(
        f"cannot build a cache key from a {_type_name(kind)} argument; pass JSON-like "
        f"values, exclude the argument with ignore=[...], or give key=callable that returns a string"
    )


_canonical_plain = compact_encoder(sort_keys=True)


def _type_name(kind: type) -> str:
    """A type as its user knows it: ``object``, ``numpy.bool``, ``mymodule.Point``."""
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, non-ASCII kept as UTF-8. Plain JSON spells as JSON; tuples,
    sets, bytes, dates, enums, paths, dicts with non-string keys... are tagged (see TAG)."""
    try:
        return _canonical_plain(value if _is_plain(value) else _key_form(value))
    except KeyStrategyError:  # already says what cannot be keyed (a KeyStrategyError is a ValueError)
        raise
    except (ValueError, RecursionError) as exc:  # circular reference
        raise KeyStrategyError(f"cannot build a cache key: {type(exc).__name__}: {exc}") from exc


def _utf8(text: str) -> bytes:
    """UTF-8 for hashing. A lone surrogate (a file name decoded with ``surrogateescape``) hashes
    as its 3-byte form instead of raising: that is never valid UTF-8, so it cannot collide with
    any other text, and every valid text hashes exactly as before."""
    return text.encode("utf-8", "surrogatepass")


def sha256_hex(value: Any) -> str:
    """SHA-256 of bytes as they are, of text as UTF-8, of anything else as canonical JSON."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    elif isinstance(value, str):
        data = _utf8(value)
    else:
        data = _utf8(canonical_json(value))
    return hashlib.sha256(data).hexdigest()


def args_key(action: str, args: Any) -> str:
    return f"{KEY_PREFIX}{action}:{hashlib.sha256(_utf8(canonical_json(args))).hexdigest()}"


def compute_key(
    action: str,
    args: Mapping[str, Any] | None,
    *,
    key: str | None = None,
    key_strategy: str = "args",
    key_source: str | None = None,
    file_hasher: Callable[[str], str] | None = None,
) -> str:
    """The key ``Cache.wrap`` stores under.

    * explicit ``key`` (any strategy, and required by ``custom``): ``cache:{key}``
    * ``args``: ``cache:{action}:{sha256(canonical_json(args))}``
    * ``sha256``: ``cache:{action}:{sha256(content)}`` where content is ``args[key_source]``,
      or ``key_source`` itself when no argument has that name
    * ``file_content``: ``cache:{action}:{hash}`` over the file's content hash and the *other*
      arguments, so the same file moved or renamed hits, and other options still count.

    Raises :class:`KeyStrategyError` (bad input) or :class:`HashError` (file unreadable).
    """
    if key is not None:
        if not isinstance(key, str) or not key:
            raise KeyStrategyError("key must be a non-empty string")
        return key if key.startswith(KEY_PREFIX) else KEY_PREFIX + key
    args = dict(args or {})
    if key_strategy == "args":
        return args_key(action, args)
    if key_strategy == "custom":
        raise KeyStrategyError("key_strategy 'custom' needs key=...: the key text (or a Jinja expression in YAML)")
    if key_strategy == "sha256":
        if key_source is None:
            raise KeyStrategyError("key_strategy 'sha256' needs key_source: the argument name (or value) to hash")
        content = args.get(key_source, key_source)
        return f"{KEY_PREFIX}{action}:{sha256_hex(content)}"
    if key_strategy == "file_content":
        if not key_source:
            raise KeyStrategyError("key_strategy 'file_content' needs key_source: the argument that holds the file path")
        if key_source not in args:
            raise KeyStrategyError(
                f"key_source {key_source!r} is not among the arguments ({', '.join(sorted(args)) or 'none'})"
            )
        path = args[key_source]
        if not isinstance(path, (str, os.PathLike)):
            raise KeyStrategyError(f"argument {key_source!r} must be a file path or URL, not {type(path).__name__}")
        if file_hasher is None:
            from .hashing import content_sha256

            file_hasher = content_sha256
        try:
            digest = file_hasher(os.fspath(path))
        except HashError:
            raise
        except Exception as exc:
            raise HashError(f"cannot hash {path!r}: {exc}") from exc
        keyed = dict(args)
        keyed[key_source] = {"sha256": digest}
        return args_key(action, keyed)
    raise KeyStrategyError(f"unknown key_strategy {key_strategy!r}; use one of {', '.join(KEY_STRATEGIES)}")
