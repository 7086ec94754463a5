"""``person``: the owner or addressee changes: a possessive or object pronoun only one side has
faces one of another person on the other ("cancel my order" / "cancel his order") or a named owner
where the two differ ("cancel my order" / "cancel the customer's order"); or one
possessor's relation names another person: "my tenant" / "my landlord", "my manager" / "my
employee" (WordNet's nouns whose first sense is a person). A relation and its converse name the
two parties of one relation, so they swap who plays which part; two nouns of one narrow WordNet
class ("boss" / "manager") may name the same person."""

from __future__ import annotations

from .. import lexicon
from .registry import rule
from .text import DATE_WORDS, NOW, Side, only_in, shared_ends

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
    return bool(pa and pb and not pa & pb) or _named_owner(a, b) or _named_owner(b, a)


# Every person word, subjects included: a side that says one of these in the span names a person.
_ANY_PERSON = frozenset(PERSONS) | {"i", "we", "you", "he", "she", "they", "myself", "ourselves", "yourself"}
# Pronouns that name everyone or anyone as the owner ("everyone's pull requests"), a closed class.
_EVERYONE = frozenset({"everyone", "everybody", "anyone", "anybody", "someone", "somebody"})
_ARTICLES = frozenset({"the", "a", "an", "this", "that"})


def _named_owner(a: Side, b: Side) -> bool:
    """The two requests differ in one short span only: a possessive or object pronoun on ``a``'s side
    ("my", "me"), and a named owner or addressee on ``b``'s, a noun phrase with no pronoun ("the
    team's", "the customer's", "the admin", "everyone", "the team"): "cancel my order" / "cancel the
    customer's order", "reset my password" / "reset the admin password", "call me" / "call the team".
    An article alone ("my alarm" / "the alarm") or an adjective ("my orders" / "the recent orders")
    names no owner."""
    x, y = a.tokens, b.tokens
    start, end = shared_ends(x, y)
    if start + end == 0:
        return False
    mine, theirs = x[start:len(x) - end], y[start:len(y) - end]
    if not mine or len(mine) > 2 or not all(t in PERSONS or t in _ARTICLES for t in mine):
        return False
    if not any(t in PERSONS for t in mine) or not theirs or len(theirs) > 3 or set(theirs) & _ANY_PERSON:
        return False
    owners = [t for t in theirs if t not in _ARTICLES]
    return bool(owners) and all(t.isalpha() for t in owners) and any(_owner(t, b) for t in owners)


def _owner(word: str, side: Side) -> bool:
    """A word that names who owns or receives: "everyone", a possessive ("the team's"), or a noun
    WordNet knows as no adjective ("admin", "customer", "team")."""
    if word in NOW or word in DATE_WORDS or word in ("today", "yesterday", "day"):
        return False  # "today's calendar", "this week's report": a time, the date check's
    if word in _EVERYONE or f"{word}'s" in side.text:
        return True
    kinds = lexicon.pos(word)
    return "n" in kinds and "a" not in kinds and word not in lexicon.FUNCTION_WORDS


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
