"""Glob helpers: the reference semantics of ``find(pattern=...)`` and the pieces backends use to
translate a glob into their own query (a key range, a LIKE pattern, a regular expression).

A leaf: it imports nothing from the package, so the policy, the core and every store can share it.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Iterator

__all__ = ["escape_glob", "glob_literal_prefix", "glob_matches", "glob_tokens"]

_GLOB_SPECIALS = re.compile(r"([*?\[])")


def escape_glob(text: str) -> str:
    """Escape ``*``, ``?`` and ``[`` so that ``text`` matches only itself as a glob."""
    return _GLOB_SPECIALS.sub(r"[\1]", text)


def glob_matches(pattern: str, key: str) -> bool:
    """The reference glob semantics every backend must agree with."""
    return fnmatch.fnmatchcase(key, pattern)


def glob_tokens(pattern: str) -> Iterator[tuple[str, str]]:
    """Split a glob the way :func:`fnmatch.translate` reads it, for translating to another syntax.

    Yields ``("star", "*")``, ``("one", "?")``, ``("set", members)`` for a bracket set, and
    ``("lit", char)`` for a literal character, including escape_glob's one-member sets such as
    ``[*]`` and an unclosed ``[``.
    """
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        i += 1
        if ch == "*":
            yield "star", ch
        elif ch == "?":
            yield "one", ch
        elif ch == "[":
            j = i  # as fnmatch: a leading '!' and then a leading ']' belong to the set
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                yield "lit", "["
                continue
            members, i = pattern[i:j], j + 1
            yield ("lit", members) if len(members) == 1 and members != "!" else ("set", members)
        else:
            yield "lit", ch


def glob_literal_prefix(pattern: str) -> str:
    """The longest prefix of ``pattern`` with no glob metacharacter (an escaped one counts as literal).

    Backends use it to narrow a scan with an index range before matching the rest.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch in "*?":
            break
        if ch == "[":
            # A bracket holding exactly one metacharacter is an escape made by escape_glob.
            if i + 2 < len(pattern) and pattern[i + 2] == "]" and pattern[i + 1] in "*?[":
                out.append(pattern[i + 1])
                i += 3
                continue
            break
        out.append(ch)
        i += 1
    return "".join(out)
