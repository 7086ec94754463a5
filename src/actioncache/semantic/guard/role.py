"""``role``: who does what to whom changed.

The same relation word (from / to / into / than / between / via / against / vs; an arrow is "to")
governs different words, or the word it governs on one side stands right before it on the other
("nyc to la flight" / "la to nyc flight"), or the same words stand in another order ("bob owes
alice"), or a question word asks for the subject on one side and the object on the other ("who
does sarah report to" / "who reports to sarah").
"""

from __future__ import annotations

from .. import lexicon
from .entity import is_entity
from .frame import swapped, voice_turned
from .number import number_spans
from .registry import rule
from .text import (
    DATE_WORDS,
    NOW,
    RELATIONS,
    SKIP_AFTER_RELATION,
    WH_WORDS,
    Side,
    content,
    is_number,
)


def relations(side: Side) -> dict[str, frozenset[str]]:
    """Relation word -> the words of the phrase it governs ("from" -> {nyc}, "to" -> {tokyo, central,
    station}), for relations used once, before a name or a noun (not "to" before a verb: "used to load")."""
    out: dict[str, frozenset[str]] = {}
    toks = side.tokens
    # A number is its value ("to 1.5k" / "to 1500", "to five hundred" / "to 500").
    values = {start: value for start, _, value in number_spans(toks)}
    inside = {k for start, end, _ in number_spans(toks) for k in range(start + 1, end)}
    for i, tok in enumerate(toks):
        if tok not in RELATIONS or toks.count(tok) > 1:
            continue
        j = i + 1
        while j < len(toks) and toks[j] in SKIP_AFTER_RELATION:
            j += 1
        if j >= len(toks):
            continue
        word = toks[j]
        kinds = lexicon.pos(lexicon.lemma(word))
        # "to" may start an infinitive ("used to load"); the other relations govern a noun phrase.
        noun_like = "n" in kinds and ("v" not in kinds or tok != "to")
        if not (is_entity(side.raw[j], word, j) or is_number(word) or noun_like or word in DATE_WORDS):
            continue
        phrase: list[str] = []
        while j < len(toks) and len(phrase) < 4 and toks[j] not in RELATIONS and (
                toks[j] not in lexicon.FUNCTION_WORDS or not phrase):
            if j not in inside:
                phrase.append(values.get(j) or lexicon.lemma(toks[j]))
            j += 1
        out[tok] = frozenset(phrase)
    return out


def _around(side: Side, relation: str) -> tuple[str, str]:
    """The lemmas of the word right before a relation word used once and of the first word it governs
    (past an article or possessive); "" where there is none or it is a function word."""
    toks = side.tokens
    i = toks.index(relation)
    j = i + 1
    while j < len(toks) and toks[j] in SKIP_AFTER_RELATION:
        j += 1
    before = toks[i - 1] if i else ""
    after = toks[j] if j < len(toks) else ""
    return tuple(lexicon.lemma(w) if w and w not in lexicon.FUNCTION_WORDS and w not in RELATIONS else ""
                 for w in (before, after))  # type: ignore[return-value]


def _crossed(a: Side, b: Side, relation: str) -> bool:
    """What ``relation`` governs in ``a`` stands right before it in ``b``."""
    governed = _around(a, relation)[1]
    return bool(governed) and governed == _around(b, relation)[0]


def _wh_role(side: Side) -> str | None:
    """Which part a question word plays: "who does sarah report to" asks for an object (do-support
    after it), "who reports to sarah" for the subject (a verb right after it)."""
    toks = side.tokens
    if len(toks) < 3 or toks[0] not in WH_WORDS - {"how", "why", "where", "when"}:
        return None
    if toks[1] in ("do", "does", "did"):
        return "object"
    if toks[1] not in lexicon.FUNCTION_WORDS and "v" in lexicon.pos(lexicon.lemma(toks[1])):
        return "subject"
    return None


@rule("role", whole=True)
def role(a: Side, b: Side) -> bool:
    """A relation governs other words, its words trade places, or the same words stand in another order."""
    if _list_reordered(a, b) or _conjuncts_swapped(a.tokens, b.tokens):
        return False  # the members of a list, or two conjuncts, in another order play the same parts
    if swapped(a, b) or voice_turned(a, b):
        return True  # two participants both sides name trade a part, or the doer became the undergoer
    wa, wb = _wh_role(a), _wh_role(b)
    if wa and wb and wa != wb and a.tokens[0] == b.tokens[0] and set(content(a)) == set(content(b)):
        return True
    ra, rb = relations(a), relations(b)
    shared = ra.keys() & rb.keys()
    if any(not ra[w] & rb[w] for w in shared):
        return True
    # The words on the two sides of a shared relation trade places ("nyc to la flight" / "la to
    # nyc flight"): the word it governs on one side stands right before it on the other.
    if any(_crossed(a, b, w) or _crossed(b, a, w) for w in shared):
        return True
    # The same words in another order: who does what to whom changed ("bob owes alice"), unless the
    # relations pin every argument ("to la from nyc") or one phrase moved whole ("in acme/api, list
    # the open PRs" / "list the open PRs in acme/api", "tomorrow, remind me ...").
    if sorted(a.tokens) == sorted(b.tokens) and a.tokens != b.tokens and not shared and not _moved(a.tokens, b.tokens) \
            and not _list_reordered(a, b):
        return True
    # The same people and names, in another order where no preposition pins them ("does tom owe me"
    # / "do I owe tom").
    # A request, not a long statement, whose clauses may put things in any order.
    if max(len(a.tokens), len(b.tokens)) > 14:
        return False
    pa, pb = participants(a), participants(b)
    return len(pa) >= 2 and sorted(pa) == sorted(pb) and pa != pb and not _list_reordered(a, b)


_COORDINATORS = frozenset({"and", "or", "&", "versus", "vs", "nor", "plus"})
_DETERMINERS = frozenset({"the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "this", "that", "these",
                          "those", "both", "either"})


def _split_list(side: Side) -> tuple[list[str], list[str]]:
    """The members of the side's lists ("memory, disk and cpu", "the agenda, the link and the slides":
    the words on either side of a comma or a coordinating word, past an article) and the rest in order."""
    toks, text = side.tokens, side.text
    comma_after = []
    position = 0
    for tok in toks:  # a comma right after a token (the tokens drop punctuation)
        found = text.find(tok, position)
        if found < 0:
            comma_after.append(False)
            continue
        position = found + len(tok)
        comma_after.append(text[position:].lstrip().startswith(","))
    members: set[int] = set()
    for i, tok in enumerate(toks):
        if tok in _COORDINATORS or comma_after[i]:
            before = i - 1 if tok in _COORDINATORS else i
            after = i + 1
            while after < len(toks) and toks[after] in _DETERMINERS | _COORDINATORS:
                after += 1
            if before >= 0 and after < len(toks) and toks[before] not in lexicon.FUNCTION_WORDS \
                    and toks[after] not in lexicon.FUNCTION_WORDS:
                members |= {before, after}
    kept = [t for i, t in enumerate(toks) if i not in members and t not in _COORDINATORS]
    return sorted(toks[i] for i in members), kept


def _list_reordered(a: Side, b: Side) -> bool:
    """``b`` is ``a`` with the members of a list in another order (and perhaps one phrase moved):
    "check memory, disk and cpu usage on web-01" / "on web-01, check cpu, disk and memory usage",
    "the pros and cons of renting versus buying" / "the cons and pros of buying versus renting".
    A list's members play one part together; their order says nothing of who does what to whom."""
    members_a, rest_a = _split_list(a)
    members_b, rest_b = _split_list(b)
    if not members_a or members_a != members_b:
        return False
    return rest_a == rest_b or _moved(tuple(rest_a), tuple(rest_b))


def _conjuncts_swapped(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
    """``y`` is ``x`` with the two stretches joined by a coordinating word ("and", "or") exchanged:
    "make it shorter and more formal" / "make it more formal and shorter". Two conjuncts play one
    part together, in either order."""
    if len(x) != len(y) or sorted(x) != sorted(y):
        return False
    n = len(x)
    for k, tok in enumerate(x):
        if tok not in _COORDINATORS:
            continue
        for i in range(k):
            if x[:i] != y[:i]:
                break
            for j in range(k + 2, n + 1):
                if x[:i] + x[k + 1:j] + (tok,) + x[i:k] + x[j:] == y:
                    return True
    return False


def _moved(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
    """``y`` is ``x`` with one stretch of words taken out and put back elsewhere."""
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n + 1):
            rest = x[:i] + x[j:]
            for k in range(len(rest) + 1):
                if k != i and rest[:k] + x[i:j] + rest[k:] == y:
                    return True
    return False


# Pronouns as the person they name ("you" is left out: "can you" is politeness).
_PERSON_OF = {"i": "1s", "me": "1s", "my": "1s", "mine": "1s", "we": "1p", "us": "1p", "our": "1p",
              "he": "3m", "him": "3m", "his": "3m", "she": "3f", "her": "3f", "they": "3p", "them": "3p", "their": "3p"}
_PINNING = frozenset({"in", "on", "at", "for", "of", "with", "by", "from", "to", "into", "onto", "about", "via",
                      "between", "than", "against", "under", "over", "after", "before", "near", "through", "per"})


def participants(side: Side) -> list[str]:
    """The people, names and things a request mentions, in order, except those a preposition governs."""
    out = []
    toks = side.tokens
    for i, tok in enumerate(toks):
        if tok in DATE_WORDS or tok in NOW:
            continue
        j = i - 1  # back over the phrase the word ends (articles, numbers, adjectives, nouns) to what governs it
        while j >= 0 and toks[j] not in _PINNING and toks[j] not in _PERSON_OF and (
                toks[j] in SKIP_AFTER_RELATION or is_number(toks[j]) or _nominal(toks[j])):
            j -= 1
        if j >= 0 and toks[j] in _PINNING:
            continue
        if tok in _PERSON_OF:
            out.append(_PERSON_OF[tok])
        elif is_entity(side.raw[i], tok, i) or (_nominal(tok) and "n" in lexicon.pos(lexicon.lemma(tok))):
            out.append(lexicon.lemma(tok))
    return out


def _nominal(tok: str) -> bool:
    """A noun or adjective that cannot be a verb (so it cannot be what governs a phrase)."""
    kinds = lexicon.pos(lexicon.lemma(tok)) or lexicon.pos(tok)
    return tok not in lexicon.FUNCTION_WORDS and bool(kinds) and "v" not in kinds and ("n" in kinds or "a" in kinds)
