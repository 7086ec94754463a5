"""``quantifier``: different quantifiers (all / some / none / only / first / at least ...), or a
restricting one on one side only ("only the unread messages"), in requests worded alike."""

from __future__ import annotations

from .. import lexicon
from .registry import rule
from .text import Side, overlap

QUANTIFIERS = {
    "all": "all", "every": "all", "each": "all", "whole": "all", "entire": "all",
    "some": "some", "several": "some", "part": "some", "partial": "some", "any": "any",
    "no": "none", "none": "none", "nobody": "none", "few": "few", "fewer": "few", "many": "many", "most": "most",
    "both": "both", "either": "either", "neither": "neither", "only": "only", "just": "only",
    "first": "first", "last": "last", "least": "least", "one": "one", "single": "one",
}
# Quantifiers that narrow a request: present on one side only, they change it.
_RESTRICTING = {"some", "none", "few", "most", "neither", "only", "first", "last", "least", "one"}


def quantifiers(side: Side) -> set[str]:
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        q = QUANTIFIERS.get(tok)
        if q is None:
            continue
        if q in ("least", "most") and i and toks[i - 1] == "at":
            q = "at " + q
        elif q == "most" and i + 1 < len(toks) and toks[i + 1] not in ("of",) and lexicon.pos(toks[i + 1]) and "a" in lexicon.pos(toks[i + 1]) and "n" not in lexicon.pos(toks[i + 1]):
            continue  # "most expensive": a superlative, judged by the comparison check
        elif q == "one" and i + 1 < len(toks) and toks[i + 1] in ("can", "could", "may", "should", "must"):
            continue  # "one can ...": the pronoun
        elif q == "first" and i + 1 < len(toks) and toks[i + 1] in ("of",):
            continue
        out.add(q)
    return out


@rule("quantifier")
def quantifier(a: Side, b: Side) -> bool:
    """Quantifiers differ, or a narrowing one stands on one side only."""
    qa, qb = quantifiers(a), quantifiers(b)
    if qa == qb:
        return False
    # Quantifiers change a request that is otherwise worded alike ("delete all / some of my
    # emails"); in a free rewording ("some examples are listed" / "examples are shown") they are style.
    if overlap(a, b) < 0.4:
        return False
    return bool(qa and qb) or bool((qa | qb) & _RESTRICTING)
