"""``direction``: a directional particle or preposition only one side has faces its counterpart on
the other, attached to the same word ("zoom in" / "zoom out", "before noon" / "after noon").

Particles and prepositions are a closed class of English, so the pairs are written out (WordNet
has few antonyms among function words); the coordinators and/or count too.
"""

from __future__ import annotations

from .. import lexicon
from .registry import rule
from .text import Side, neighbours, only_in

_DIRECTION_PAIRS = frozenset(frozenset(pair) for pair in (
    ("in", "out"), ("into", "out"), ("inside", "outside"), ("up", "down"), ("on", "off"), ("onto", "off"),
    ("to", "from"), ("toward", "from"), ("towards", "from"), ("before", "after"), ("above", "below"),
    ("over", "under"), ("with", "without"), ("upward", "downward"), ("upwards", "downwards"),
    ("forward", "backward"), ("forwards", "backwards"), ("inbound", "outbound"), ("incoming", "outgoing"),
    ("upstairs", "downstairs"), ("since", "until"), ("since", "till"), ("inward", "outward"),
    ("ahead", "behind"), ("in", "off"), ("on", "out"), ("and", "or"), ("into", "from"), ("onto", "from"),
    ("into", "out of"), ("import", "export"),
))


@rule("direction")
def direction(a: Side, b: Side) -> bool:
    """Counterparts that attach to the same word: the same verb before them ("zoom in" / "zoom
    out") or the same object after them ("before noon" / "after noon"). In a free rewording the
    particles come with other words ("in addition to" / "apart from") and say nothing."""
    left, right = only_in(a, b)
    left = {t for t in left if _directional(a, t)}
    right = {t for t in right if _directional(b, t)}
    return any(frozenset((x, y)) in _DIRECTION_PAIRS and neighbours(a, x) & neighbours(b, y)
               for x in left for y in right)


def _directional(side: Side, word: str) -> bool:
    """A particle or preposition, not the "to" of an infinitive ("remind me to water ...")."""
    if word != "to":
        return True
    toks = side.tokens
    i = toks.index(word)
    nxt = toks[i + 1] if i + 1 < len(toks) else ""
    kinds = lexicon.pos(nxt)
    return not (kinds and "v" in kinds and "n" not in kinds) and nxt not in ("be", "do", "get", "make", "see")
