"""``person``: the owner or addressee changes: a possessive or object pronoun only one side has
faces one of another person on the other ("cancel my order" / "cancel his order"); or one
possessor's relation names another person: "my tenant" / "my landlord", "my manager" / "my
employee" (WordNet's nouns whose first sense is a person). A relation and its converse name the
two parties of one relation, so they swap who plays which part; two nouns of one narrow WordNet
class ("boss" / "manager") may name the same person."""

from __future__ import annotations

from .. import lexicon
from .registry import rule
from .text import Side, only_in

# Possessive determiners and object pronouns, a closed class ("you" is left out: it is also the
# subject of "can you", and politeness is no difference).
PERSONS = {"my": "1s", "me": "1s", "mine": "1s", "our": "1p", "us": "1p", "ours": "1p", "your": "2", "yours": "2",
           "his": "3m", "him": "3m", "her": "3f", "hers": "3f", "their": "3p", "them": "3p", "theirs": "3p"}


@rule("person")
def person(a: Side, b: Side) -> bool:
    """One side's owner or addressee is another person than the other's ("email them the file" /
    "email me the file")."""
    left, right = only_in(a, b)
    pa = {PERSONS[t] for t in left if t in PERSONS}
    pb = {PERSONS[t] for t in right if t in PERSONS}
    return bool(pa and pb and not pa & pb)


@rule("relative")
def relative(a: Side, b: Side) -> bool:
    """The same possessor's relation is another person on each side ("sue my landlord" / "my tenant
    sues me", "my former intern" / "my former boss"), and neither side names the other's."""
    ra, rb = _relatives(a), _relatives(b)
    words_a = {lexicon.lemma(t) for t in a.tokens}
    words_b = {lexicon.lemma(t) for t in b.tokens}
    return any(p == q and x != y and lexicon.lemma(x) not in words_b and lexicon.lemma(y) not in words_a
               and not lexicon.synonyms(x, y)
               and not lexicon.same_kind_of_person(x, y) for p, x in ra for q, y in rb)


def _relatives(side: Side) -> set[tuple[str, str]]:
    """(possessor, person noun) for each "my tenant", "our former manager" (past up to two adjectives)."""
    toks = side.tokens
    out = set()
    for i, tok in enumerate(toks):
        if tok not in _POSSESSORS:
            continue
        for j in range(i + 1, min(i + 4, len(toks))):
            word = toks[j]
            if lexicon.person(word):
                out.add((PERSONS[tok], word))
                break
            if word in lexicon.FUNCTION_WORDS or "a" not in lexicon.pos(word):
                break
    return out


_POSSESSORS = frozenset({"my", "our", "your", "his", "her", "their"})
