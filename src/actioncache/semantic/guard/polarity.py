"""``negation`` and ``opposite``: one side says no, or a word only one side has opposes one of the other.

``negation``: one side is negated (not, no, never, without, except, stop, n't, "all but" ...), the other not,
unless an opposite word cancels it ("not mandatory" is "optional").
``opposite``: a word only one side has is a WordNet antonym of a word only the other side has
("lock" / "unlock", "cheap" / "expensive", "add" / "remove"), negating or opposing prefixes included,
or an aspectual verb of another phase ("pause" / "resume", ``lexicon.phase``).
"""

from __future__ import annotations

from .. import lexicon
from .registry import rule
from .text import Side, only_in

NEGATIONS = frozenset({
    "not", "no", "never", "none", "nothing", "nobody", "nor", "neither", "without", "cannot",
    "stop", "unless", "except", "exclude", "excluding", "excludes", "excluded", "nowhere", "lack", "lacking",
})


# "no more than 180", "not later than friday": a bound (the bound check's), not a negation.
_BOUNDING = frozenset({"more", "less", "fewer", "later", "earlier", "greater", "higher", "lower", "longer", "shorter",
                       "older", "newer", "bigger", "smaller", "cheaper"})


def negated(side: Side) -> bool:
    toks = side.tokens
    return any(t in NEGATIONS and not (t in ("no", "not") and i + 2 < len(toks) and toks[i + 1] in _BOUNDING
                                       and toks[i + 2] == "than")
               for i, t in enumerate(toks)) or _but_excepts(toks)


# "every service but the database", "all but one", "everyone but me": after a word for all of them,
# "but" followed by what it leaves out is "except". A "but" that opens a clause ("..., but it is
# slow", "but I want") joins two statements instead.
_ALL = frozenset({"all", "every", "everything", "everyone", "everybody", "each", "any", "anything", "anyone"})
_CLAUSE_SUBJECTS = frozenset({"i", "we", "you", "he", "she", "it", "they", "there", "this", "that", "not", "also",
                              "then", "please", "do", "don't", "just", "still", "only", "if", "when"})


def _but_excepts(toks: tuple[str, ...]) -> bool:
    for i, tok in enumerate(toks):
        if tok == "but" and i + 1 < len(toks) and toks[i + 1] not in _CLAUSE_SUBJECTS \
                and any(t in _ALL for t in toks[:i]):
            return True
    return False


@rule("negation")
def negation(a: Side, b: Side) -> bool:
    """One side is negated and the other not (an opposite word on the other side cancels it)."""
    # "not mandatory" is "optional": a negation that comes with an opposite word cancels out.
    return negated(a) != negated(b) and not has_opposite(a, b, cancelling=True)


@rule("opposite")
def opposite(a: Side, b: Side) -> bool:
    """A word only one side has is an antonym of a word only the other side has."""
    if negated(a) != negated(b) and has_opposite(a, b, cancelling=True):
        return False  # "not mandatory" / "optional": the negation and the opposite cancel out
    return has_opposite(a, b)


def has_opposite(a: Side, b: Side, *, cancelling: bool = False) -> bool:
    """``cancelling``: only words that do not negate themselves count, for an opposite that cancels a
    negation ("not mandatory" / "optional"); a negating verb is no such word ("stop the download" /
    "finish the download": "stop" negates, and is not cancelled by its own opposite)."""
    left, right = only_in(a, b)
    if cancelling:
        left, right = left - NEGATIONS, right - NEGATIONS
    return any(lexicon.opposite(x, y) for x in left for y in right if _wordlike(x) and _wordlike(y))


def _wordlike(tok: str) -> bool:
    """Letters, hyphens between them allowed ("non-vegetarian"): a word, not an identifier."""
    return tok.replace("-", "").isalpha() and not tok.startswith("-")
