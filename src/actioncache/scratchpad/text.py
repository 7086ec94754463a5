"""Cutting text for a model without breaking what a reader sees as one character.

A description is cut in two places: at write time to 300 characters and in a list answer to fit
500 bytes per item. A cut by code points can split a user-perceived character: a family emoji is
seven code points joined by U+200D, an accented letter may be a base letter and a combining mark, a
flag is two regional indicators. Both cuts here end only at an extended grapheme cluster boundary
(Unicode UAX #29), found by the ``regex`` package's ``\\X``: the standard library has no grapheme
segmentation, and ``regex`` follows each Unicode release.
"""

from __future__ import annotations

from collections.abc import Callable

ELLIPSIS = "\u2026"


def cluster_ends(text: str) -> list[int]:
    """The offsets (in code points) at which each grapheme cluster of ``text`` ends, in order."""
    import regex  # loaded only when a description is actually cut

    return [match.end() for match in regex.finditer(r"\X", text)]


def cut_to_length(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` code points, else its longest prefix of whole grapheme
    clusters that leaves room for an ellipsis, plus the ellipsis (at most ``limit`` code points)."""
    if len(text) <= limit:
        return text
    end = 0
    for boundary in cluster_ends(text):
        if boundary > limit - 1:
            break
        end = boundary
    return text[:end] + ELLIPSIS


def cut_to_fit(text: str, fits: Callable[[str], bool]) -> str:
    """The longest prefix of whole grapheme clusters of ``text``, plus an ellipsis, for which
    ``fits`` holds (``fits`` must be monotone: a shorter text never fits worse). If not even the
    ellipsis alone fits, the ellipsis is returned and the caller's budget decides."""
    ends = cluster_ends(text)
    lo, hi = 0, len(ends)  # how many whole clusters are kept
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(text[: ends[mid - 1]] + ELLIPSIS):
            lo = mid
        else:
            hi = mid - 1
    return text[: ends[lo - 1]] + ELLIPSIS if lo else ELLIPSIS
