"""``entity``: a name or identifier of one side is missing from the other.

A name is a word WordNet does not know ("nyc", "priya", "acme/api", "PROJ-12"), one WordNet only
knows as a proper noun ("paris", "monday"), a capitalised word inside the sentence, a quoted
string, or an identifier (digits, slashes, a command-line flag). A typo of a word of the other
side, a "#channel" for "channel" and a compound written apart are the same name.
"""

from __future__ import annotations

import re

from .. import lexicon
from .registry import rule
from .text import DATE_WORDS, NOW, NUMBER_WORDS, UNIT_SYMBOLS, Side, is_number, typo_of

# Double quotes and backticks; a single quote only as a pair around words, not an apostrophe.
QUOTED = re.compile(r"[\"“”`]([^\"“”`\n]{1,80})[\"“”`]|(?<!\w)'([^'\n]{1,80})'(?!\w)")


def is_entity(raw: str, low: str, position: int) -> bool:
    if low in lexicon.FUNCTION_WORDS or low in NUMBER_WORDS or low in DATE_WORDS or low in NOW:
        return False
    if is_number(low) or low in UNIT_SYMBOLS:
        return False  # numbers and their units have their own check
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


def entities(side: Side) -> list[str]:
    return [low for i, (raw, low) in enumerate(zip(side.raw, side.tokens)) if is_entity(raw, low, i)]


def quoted(side: Side) -> set[str]:
    return {q.strip().lower() for pair in QUOTED.findall(side.text) for q in pair if q.strip()}


@rule("entity")
def entity(a: Side, b: Side) -> bool:
    """A name, identifier or quoted string of one side is missing from the other."""
    if quoted(a) != quoted(b):
        return True
    a_set, b_set = set(a.tokens), set(b.tokens)
    for mine, theirs, theirs_text in ((a, b_set, b.text), (b, a_set, a.text)):
        for name in entities(mine):
            bare = name.lstrip("#@")  # "#support" and "support" name the same channel
            if name in theirs or bare in theirs or any(w in theirs for w in lexicon.lemmas(name)):
                continue
            if name in theirs_text.replace(" ", "") or typo_of(name, theirs):
                continue
            return True
    return False
