"""``quantifier``: different quantifiers (all / some / none / only / first / at least ...), or a
restricting one on one side only ("only the unread messages"), in requests worded alike; or a scope
widened from one item to all ("lock the front door" / "lock all the doors", "... globally")."""

from __future__ import annotations

from .. import lexicon
from .registry import rule
from .text import DATE_WORDS, Side, overlap

QUANTIFIERS = {
    "all": "all", "every": "all", "each": "all", "whole": "all", "entire": "all",
    "some": "some", "several": "some", "part": "some", "partial": "some", "any": "any",
    "no": "none", "none": "none", "nobody": "none", "few": "few", "fewer": "few", "many": "many", "most": "most",
    "both": "both", "either": "either", "neither": "neither", "only": "only", "just": "only",
    "first": "first", "last": "last", "least": "least", "one": "one", "single": "one",
    "half": "half", "quarter": "quarter", "majority": "most", "minority": "few", "portion": "some",
    "fraction": "some", "rest": "rest", "remaining": "rest", "everyone": "all", "everything": "all",
    "everybody": "all",
}
# Quantifiers that narrow a request: present on one side only, they change it.
_RESTRICTING = {"some", "none", "few", "most", "neither", "only", "first", "last", "least", "one", "half", "quarter",
                "rest"}
# A whole against a part: a contrast however freely the rest is reworded ("delete every log" /
# "remove half of the logs").
_WHOLE = {"all"}
_PART = {"some", "half", "quarter", "few", "one", "only", "first", "last", "none", "rest", "most"}
_POSSESSIVES = frozenset({"my", "our", "your", "his", "her", "their"})


def quantifiers(side: Side) -> set[str]:
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        q = QUANTIFIERS.get(tok)
        if q is None:
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        after = toks[i + 2] if i + 2 < len(toks) else ""
        if tok == "just" and (i == 0 or _verb_only(nxt) or nxt in ("need", "want", "like") or (
                "v" in lexicon.pos(lexicon.lemma(nxt)) and after in _OBJECTS)):
            continue  # "just rerun it", "I just need", "just freeze it": a filler, not "only"
        if tok == "some" and (not nxt or _mass(nxt) or nxt in ("more",)):
            continue  # "some money", "order some": an amount left open, not a part of a whole
        if q in ("least", "most") and i and toks[i - 1] == "at":
            q = "at " + q
        elif q == "most" and i + 1 < len(toks) and toks[i + 1] not in ("of",) and lexicon.pos(toks[i + 1]) and "a" in lexicon.pos(toks[i + 1]) and "n" not in lexicon.pos(toks[i + 1]):
            continue  # "most expensive": a superlative, judged by the comparison check
        elif q == "one" and (nxt in ("can", "could", "may", "should", "must") or (
                i and _describes(toks[i - 1]) and not _counts(nxt) and nxt != "of")):
            continue  # "one can ...", "write a good one", "add one": the pronoun, not a number of things
        elif q == "first" and i + 1 < len(toks) and toks[i + 1] in ("of",):
            continue
        elif q in ("first", "last") and nxt in DATE_WORDS:
            continue  # "last night", "last month": the date check's
        elif q == "any" and any(t in _NEGATIONS for t in toks[max(0, i - 4):i]):
            continue  # "not used by any container": "a container", under the negation
        elif tok == "just" and nxt.isalpha() and lexicon.lemma(nxt) != nxt and "v" in lexicon.pos(lexicon.lemma(nxt)):
            continue  # "just signed my lease", "we just moved": recently, not "only"
        out.add(q)
    return out


_NEGATIONS = frozenset({"not", "no", "never", "without"})


def _describes(word: str) -> bool:
    """A verb or an adjective: what stands before the pronoun "one" ("add one", "a good one")."""
    if word in lexicon.FUNCTION_WORDS or not word.isalpha():
        return False
    kinds = lexicon.pos(lexicon.lemma(word)) or lexicon.pos(word)
    return "v" in kinds or "a" in kinds


def _counts(word: str) -> bool:
    """``word`` can be what a quantifier counts: a noun, an adjective before one, a number."""
    if not word or word in lexicon.FUNCTION_WORDS:
        return False
    if any(c.isdigit() for c in word):
        return True
    kinds = lexicon.pos(lexicon.lemma(word)) or lexicon.pos(word)
    return not kinds or "n" in kinds or "a" in kinds


_OBJECTS = frozenset({"it", "them", "this", "that", "the", "a", "an", "my", "our", "your", "me", "us", "everything"})


def _verb_only(word: str) -> bool:
    kinds = lexicon.pos(lexicon.lemma(word)) or lexicon.pos(word)
    return "v" in kinds and "n" not in kinds or word in ("rerun", "restart", "check", "run", "do", "make", "send")


def _mass(word: str) -> bool:
    """A singular noun after "some" reads as a mass ("some money", "some paper"); a plural as a part."""
    return word.isalpha() and lexicon.lemma(word) == word and "n" in lexicon.pos(word) and not word.endswith("s")


# Adverbs that widen an action to the whole machine ("install lodash globally"): a scope of their own.
_WHOLE_SCOPE = frozenset({"globally", "systemwide", "system-wide", "machine-wide"})
# What "all" / "every" stand before in the plural or the singular: skipped to find the noun counted.
_BEFORE_NOUN = frozenset({"the", "my", "our", "your", "their", "his", "her", "its", "of", "these", "those"})


def _counted(side: Side) -> list[tuple[str, bool]]:
    """The nouns "all" / "every" / "each" count in ``side``, and whether each stands in the plural
    ("all the doors": ("doors", True); "every test": ("test", False))."""
    out = []
    toks = side.tokens
    for i, tok in enumerate(toks):
        if tok not in ("all", "every", "each"):
            continue
        for w in toks[i + 1:i + 5]:
            if w in _BEFORE_NOUN:
                continue
            if not w.isalpha() or w in lexicon.FUNCTION_WORDS:
                break
            if tok == "all" and any(base != w and "n" in lexicon.pos(base) for base in lexicon.lemmas(w)):
                out.append((w, True))  # "all the doors", "all my appointments"
                break
            if tok != "all" and "n" in lexicon.pos(w):
                if w not in DATE_WORDS and toks[i - 1:i] != ("for",):
                    out.append((w, False))  # "every test", "each thread"; not "every sunday", "for each customer"
                break
    return out


def _widened(a: Side, b: Side) -> bool:
    """``a`` counts all of what ``b`` names one of: "lock all the doors" / "lock the front door",
    "cancel all my appointments" / "cancel my next appointment", "every email" / "this email". A
    plural without "all" asks for all of them already ("show all my open prs" / "show my open prs"),
    a mass noun counts nothing ("delete all the data" / "delete the data"), and "all" on both sides
    is the other checks'."""
    if {"all", "every", "each"} & set(b.tokens):
        return False
    theirs = set(b.tokens)
    for noun, plural in _counted(a):
        if plural and {base for base in lexicon.lemmas(noun) if base != noun} & theirs and noun not in theirs:
            return True
        if not plural and any(t == noun and _one_of(b.tokens[max(0, n - 2):n]) for n, t in enumerate(b.tokens)):
            return True
    return False


_SINGULAR = frozenset({"this", "that", "the", "a", "an", "my", "our", "your", "their", "his", "her", "its"})


def _one_of(before: tuple[str, ...]) -> bool:
    """The words before a noun single one out ("this email", "the oldest backup"), not "per customer"."""
    return bool(before) and before[-1] not in ("per", "by") and bool(_SINGULAR & set(before))


def _whole_scope(a: Side, b: Side) -> bool:
    """One side widens the action to the whole machine ("install lodash globally") and the other does not."""
    return bool(_WHOLE_SCOPE & set(a.tokens)) and not _WHOLE_SCOPE & set(b.tokens)


@rule("quantifier")
def quantifier(a: Side, b: Side) -> bool:
    """Quantifiers differ, or a narrowing one stands on one side only, or one side counts all of
    what the other names one of, or widens the action to the whole machine."""
    if _widened(a, b) or _widened(b, a) or _whole_scope(a, b) or _whole_scope(b, a):
        return True
    qa, qb = quantifiers(a), quantifiers(b)
    if qa == qb:
        return _scope_of_owner(a, b, qa, qb)
    if (qa & _WHOLE and qb & _PART and not qa & _PART) or (qb & _WHOLE and qa & _PART and not qb & _PART):
        return overlap(a, b) >= 0.2
    # Quantifiers change a request that is otherwise worded alike ("delete all / some of my
    # emails"); in a free rewording ("some examples are listed" / "examples are shown") they are style.
    if overlap(a, b) < 0.4:
        return _scope_of_owner(a, b, qa, qb)
    return bool(qa and qb) or bool((qa | qb) & _RESTRICTING) or _scope_of_owner(a, b, qa, qb)


def _scope_of_owner(a: Side, b: Side, qa: set[str], qb: set[str]) -> bool:
    """"delete my files" is not "delete all files": an owner on one side, everything on the other."""
    owned_a, owned_b = bool(set(a.tokens) & _POSSESSIVES), bool(set(b.tokens) & _POSSESSIVES)
    if "all" in qa and "all" in qb:
        return False  # everything on both sides: "all the buckets in our account" / "every bucket we have"
    return (owned_a and not owned_b and "all" in qb) or (owned_b and not owned_a and "all" in qa)
