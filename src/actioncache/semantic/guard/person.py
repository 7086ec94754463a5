"""``person``: the owner or addressee changes: a possessive or object pronoun only one side has
faces one of another person on the other ("cancel my order" / "cancel his order")."""

from __future__ import annotations

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
