"""``entity``: a name or identifier of one side is missing from the other.

A name is a word WordNet does not know ("nyc", "priya", "acme/api", "PROJ-12"), one WordNet only
knows as a proper noun ("paris", "monday"), a capitalised word inside the sentence, a quoted
string, or an identifier (digits, slashes, a command-line flag). A typo of a word of the other
side, a "#channel" for "channel" and a compound written apart are the same name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .. import lexicon
from .registry import rule
from .text import (
    CARDINALS,
    DATE_WORDS,
    NOW,
    NUMBER_WORDS,
    UNIT_SYMBOLS,
    UNIT_WORDS,
    Side,
    backstory,
    is_number,
    typo_of,
)

# Double quotes and backticks; a single quote only as a pair around words, not an apostrophe.
QUOTED = re.compile(r"[\"“”`]([^\"“”`\n]{1,80})[\"“”`]|(?<!\w)'([^'\n]{1,80})'(?!\w)")


_VERSION = re.compile(r"v\d+(?:\.\d+)+")  # "v2.4.1": the version 2.4.1, the number check's
_ELONGATED = re.compile(r"([a-z])\1{2,}")  # "heyyy", "pleeease": one letter typed on and on


def is_entity(raw: str, low: str, position: int) -> bool:
    if low in lexicon.FUNCTION_WORDS or low in NUMBER_WORDS or low in DATE_WORDS or low in NOW:
        return False
    if is_number(low) or low in UNIT_SYMBOLS or low in UNIT_WORDS or _VERSION.fullmatch(low):
        return False  # numbers and their units have their own check
    if _ELONGATED.search(low) and lexicon.known(_ELONGATED.sub(r"\1", low)):
        return False
    if low.isalpha() and len(low) >= 5 and not lexicon.known(low) and not raw[:1].isupper() and _misspelt(low):
        return False  # a typo of an English word ("numbrs"), not a name: the other checks and the model judge it
    if not low.replace("'", "").isalpha():
        parts = re.split(r"[-']", low)
        # "on-the-fly" is words; "acme/api", "report.pdf", "proj-12", "#design", "iphone15" are names,
        # and so is a hyphenated word with a one-letter part WordNet does not know ("feature-x", not "x-ray").
        if "-" in low and any(len(p) == 1 for p in parts) and not lexicon.known(low):
            return True
        return not all(p.isalpha() and lexicon.known(p) for p in parts)
    if lexicon.is_proper(low):
        return True
    if position > 0 and raw[:1].isupper() and not raw.isupper() and lexicon.is_proper(low):
        return True
    return not lexicon.known(low)


def _misspelt(word: str) -> bool:
    """One letter off a WordNet word of five letters or more (dropped, doubled, swapped or replaced)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    for i in range(len(word) + 1):
        for c in letters:
            if lexicon.known(word[:i] + c + word[i:]):
                return True
        if i < len(word) and len(word) > 5 and lexicon.known(word[:i] + word[i + 1:]):
            return True
        if i < len(word) - 1 and lexicon.known(word[:i] + word[i + 1] + word[i] + word[i + 2:]):
            return True
    return False


def abbreviates(name: str, words: list[str]) -> bool:
    """``name`` is a short form of words of the other side: its letters in order from a word's first
    ("repo" / "repository", "db" / "database", "prod" / "production"), the initials of consecutive
    words ("prs" / "pull requests", "2fa" / "two factor authentication"), or a numeronym ("k8s" /
    "kubernetes": first letter, how many letters between, last letter)."""
    bare = name[:-1] if name.endswith("s") and len(name) > 2 else name
    for word in words:
        if len(word) > len(bare) >= 2 and word[0] == bare[0] and bare.isalpha():
            letters = iter(word)
            if all(c in letters for c in bare):
                return True
        numeronym = re.fullmatch(r"([a-z])(\d+)([a-z])", name)
        if numeronym and word[0] == numeronym[1] and word[-1] == numeronym[3] and len(word) - 2 == int(numeronym[2]):
            return True
    flat = [w for w in words if w.isalpha() or w in CARDINALS]
    for start in range(len(flat) - 1):  # prefixes of consecutive words run together: "autopay" / "automatic payments"
        if _prefixes(bare, flat[start:start + 3]):
            return True
    for size in range(2, 5):
        for start in range(len(flat) - size + 1):
            run = flat[start:start + size]
            if "".join(CARDINALS.get(w, w[0]) for w in run) in (bare, name):
                return True
    return False


def _prefixes(name: str, words: list[str]) -> bool:
    """``name`` is the starts (two letters or more) of two or more of ``words`` in order, run together."""
    if not words or len(name) < 4:
        return False
    word, rest = words[0], words[1:]
    for k in range(min(len(word), len(name)), 1, -1):
        if name[:k] == word[:k]:
            tail = name[k:]
            if not tail:
                return False  # one word's prefix alone is the subsequence rule's
            if rest and (tail == rest[0][:len(tail)] and len(tail) >= 2 or _prefixes(tail, rest)):
                return True
    return False


def entities(side: Side) -> list[str]:
    return [low for i, (raw, low) in enumerate(zip(side.raw, side.tokens)) if is_entity(raw, low, i)]


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def quoted(side: Side) -> set[str]:
    return {q.strip().lower() for pair in QUOTED.findall(side.text) for q in pair if q.strip()}


@rule("entity")
def entity(a: Side, b: Side) -> bool:
    """A name, identifier or quoted string of one side is missing from the other."""
    if quoted(a) != quoted(b):
        return True
    # A name on each side that the other lacks is a swap; a name on one side only is a change unless
    # it stands in the story told around the request (see ``backstory``).
    missing_a, missing_b = missing_names(a, b), missing_names(b, a)
    if missing_a and missing_b:
        return True
    for mine, theirs, names in ((a, b, missing_a), (b, a, missing_b)):
        if names and not backstory(mine, theirs, _naming(frozenset(names))):
            return True
    return False


def _naming(names: frozenset[str]) -> Callable[[Side], bool]:
    """Whether a clause says one of ``names``."""
    return lambda part: bool(names & set(part.tokens))


def missing_names(mine: Side, other: Side) -> list[str]:
    """The names of ``mine`` that ``other`` does not have, in any spelling or short form."""
    theirs, theirs_text = set(other.tokens), other.text
    out = []
    for name in entities(mine):
        bare = name.lstrip("#@")  # "#support" and "support" name the same channel
        if name in theirs or bare in theirs or any(w in theirs for w in lexicon.lemmas(name)):
            continue
        if name in theirs_text.replace(" ", "") or typo_of(name, theirs):
            continue
        if abbreviates(name, _words(theirs_text)) or any(abbreviates(w, _words(name)) for w in theirs):
            continue
        out.append(name)
    return out
