"""SQL pieces shared by the SQL backends (SQLite, libSQL/Turso, DuckDB).

Each backend keeps its own statements where its dialect differs; what is really the same lives
here: narrowing a glob to an index range on the key, and building the ``find`` query from a
glob and a metadata filter with one dialect-specific hook for the JSON field test. The exact
``find`` semantics are still decided by :func:`actioncache.stores.base.select_keys`; the SQL
only narrows the candidates.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping
from urllib.parse import SplitResult, unquote

from ..errors import StoreURLError
from .base import glob_literal_prefix

# A field test: (metadata field name, wanted value) -> (SQL condition, its parameters), or None
# when the dialect cannot narrow on that value in SQL (the exact filter still applies after).
FieldClause = Callable[[str, Any], "tuple[str, list[Any]] | None"]

_SURROGATES_START, _SURROGATES_END = 0xD800, 0xDFFF


def upper_bound(prefix: str) -> str | None:
    """The smallest valid string greater than every string starting with ``prefix``.

    Code point order equals UTF-8 byte order, so this bound works for every backend that
    compares text bytewise. Surrogates cannot be encoded, so the bound skips over them.
    """
    while prefix:
        last = ord(prefix[-1])
        if last < 0x10FFFF:
            following = last + 1
            if _SURROGATES_START <= following <= _SURROGATES_END:
                following = _SURROGATES_END + 1
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None


def key_range(pattern: str | None, mark: str = "?") -> tuple[list[str], list[Any]]:
    """Conditions (``key >= ?``, ``key < ?``) that confine a glob to its literal prefix's range."""
    if pattern is None:
        return [], []
    prefix = glob_literal_prefix(pattern)
    if not prefix:
        return [], []
    where, params = [f"key >= {mark}"], [prefix]
    upper = upper_bound(prefix)
    if upper is not None:
        where.append(f"key < {mark}")
        params.append(upper)
    return where, params


def is_json_number(value: Any) -> bool:
    """True for an int or float that JSON would write as a number (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Characters a JSON path label may not hold in every dialect (quotes and escapes are read
# differently by SQLite, libSQL and DuckDB; ``*`` is a wildcard in DuckDB), plus control characters.
_UNSAFE_LABEL = frozenset('"\\*[].$\'') | frozenset(chr(c) for c in range(32))
# Integers beyond 2**53 lose precision in some dialects' JSON functions (libSQL reads 2**63-1 as a float).
_EXACT_INT = 2**53


def pushable(name: str, wanted: Any) -> bool:
    """Whether a dialect's JSON-path test of ``name == wanted`` agrees with :func:`select_keys`.

    Only plain field names and values every dialect compares exactly are pushed into SQL; any
    other filter (a name with a quote, backslash or ``*``, an empty name, text holding NUL, an
    integer beyond 2**53) is left to the exact match in Python over the candidate rows. The SQL
    only ever narrows, so this costs speed on odd filters, never a wrong answer.
    """
    if not name or any(c in _UNSAFE_LABEL for c in name):
        return False
    if isinstance(wanted, str):
        return "\0" not in wanted
    if isinstance(wanted, int) and not isinstance(wanted, bool):
        return -_EXACT_INT <= wanted <= _EXACT_INT
    if isinstance(wanted, float):
        return wanted == wanted and abs(wanted) < _EXACT_INT
    return wanted is None or isinstance(wanted, bool)


def find_query(
    select: str,
    pattern: str | None,
    metadata_filter: Mapping[str, Any] | None,
    field_clause: FieldClause,
) -> tuple[str, list[Any]]:
    """``select`` (``SELECT key, metadata FROM entries``) narrowed by the glob's key range and by
    whatever metadata tests the dialect can express."""
    where, params = key_range(pattern)
    for name, wanted in (metadata_filter or {}).items():
        clause = field_clause(name, wanted)
        if clause is not None:
            where.append(clause[0])
            params.extend(clause[1])
    if where:
        select += " WHERE " + " AND ".join(where)
    return select, params


def file_path(parts: SplitResult, shown: str, form: str) -> str:
    """The absolute path a file-database URL names (``scheme:///abs/path``; four slashes too).

    ``shown`` is the URL as error messages may print it, ``form`` the form to suggest.
    """
    if parts.netloc not in ("", "localhost"):
        raise StoreURLError(f"{shown!r} has a host part; use three slashes and an absolute path: {form}")
    path = unquote(parts.path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")  # scheme:////abs/path (four slashes) names the same file
    if not path or path == "/":
        raise StoreURLError(f"{shown!r} names no file; use {form}")
    return path
