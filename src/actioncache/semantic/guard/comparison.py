"""``comparison``: both sides compare, differently ("cheaper" / "more expensive", "more" / "fewer");
WordNet synonyms of one degree compare alike ("nearest" / "closest")."""

from __future__ import annotations

from .. import lexicon
from .registry import rule
from .text import Side

_COMPARATIVE_WORDS = {"more": "more", "less": "less", "fewer": "less", "most": "most", "least": "least",
                      "better": "good+", "best": "good++", "worse": "bad+", "worst": "bad++"}


def comparisons(side: Side) -> set[str]:
    out = set()
    for tok in side.tokens:
        if tok in _COMPARATIVE_WORDS:
            out.add(_COMPARATIVE_WORDS[tok])
        elif len(tok) > 4 and tok.isalpha() and tok.endswith(("er", "est")):
            stems = [w for w in lexicon.lemmas(tok) if w != tok and "a" in lexicon.pos(w)]
            if stems and "n" not in lexicon.pos(tok):
                out.add(min(stems, key=len) + ("++" if tok.endswith("est") else "+"))
    return out


@rule("comparison")
def comparison(a: Side, b: Side) -> bool:
    """Both sides compare, and not alike."""
    ca, cb = comparisons(a), comparisons(b)
    if not (ca and cb) or ca == cb:
        return False
    return not all(any(_same_comparison(x, y) for y in cb) for x in ca) or not all(
        any(_same_comparison(y, x) for x in ca) for y in cb)


def _same_comparison(x: str, y: str) -> bool:
    sx, sy = x.rstrip("+"), y.rstrip("+")
    return x == y or (len(x) - len(sx) == len(y) - len(sy) and sx.isalpha() and sy.isalpha() and lexicon.synonyms(sx, sy))
