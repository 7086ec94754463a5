"""``entity``: a name or identifier of one side is missing from the other.

A name is a word WordNet does not know ("nyc", "priya", "acme/api", "PROJ-12"), one WordNet only
knows as a proper noun ("paris", "monday"), a capitalised word inside the sentence, a quoted
string, or an identifier (digits, slashes, a command-line flag). A typo of a word of the other
side, a "#channel" for "channel" and a compound written apart are the same name.

Only an aligned difference refuses: a name on one side stands where the other side has another
word (the same word before or after it), or it is said as an argument (after a preposition, an
article, a possessive or a verb, or before a word both sides say). A name said apart from the
request ("my sink is clogged lol. how do i unclog it") is chat, not a change. An identifier whose
words the other side says as plain words ("./data" / "the data folder", "800px" / "800 pixels",
"py2" / "python 2") restates them; a quoted string whose words the other side says in the same
order is the same string.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from .. import lexicon
from .registry import rule
from .text import (
    CARDINALS,
    DATE_WORDS,
    NOW,
    NUMBER_WORDS,
    RELATIONS,
    UNIT_SYMBOLS,
    UNIT_WORDS,
    Side,
    backstory,
    content_word,
    is_number,
    number_key,
    typo_of,
)

# Double quotes and backticks; a single quote only as a pair around words, not an apostrophe.
QUOTED = re.compile(r"[\"“”`]([^\"“”`\n]{1,80})[\"“”`]|(?<!\w)'([^'\n]{1,80})'(?!\w)")


_VERSION = re.compile(r"v\d+(?:\.\d+)+")  # "v2.4.1": the version 2.4.1, the number check's
_ELONGATED = re.compile(r"([a-z])\1{2,}")  # "heyyy", "pleeease": one letter typed on and on


@lru_cache(maxsize=16384)  # asked for every token of both requests, by several checks
def is_entity(raw: str, low: str, position: int) -> bool:
    if low in lexicon.FUNCTION_WORDS or low in RELATIONS or low in NUMBER_WORDS or low in DATE_WORDS or low in NOW:
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


@lru_cache(maxsize=16384)
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
    if _requoted(a, b) or _requoted(b, a):
        return True
    # A name on each side that the other lacks is a swap; a name on one side only is a change unless
    # it stands in the story told around the request (see ``backstory``) or apart from it (``_aside``).
    missing_a = [n for n in missing_names(a, b) if not _aside(n, a, b)]
    missing_b = [n for n in missing_names(b, a) if not _aside(n, b, a)]
    if missing_a and missing_b:
        return True
    for mine, theirs, names in ((a, b, missing_a), (b, a, missing_b)):
        if names and not backstory(mine, theirs, _naming(frozenset(names))):
            return True
    return False


def _requoted(mine: Side, other: Side) -> bool:
    """A quoted string of ``mine`` that ``other`` neither quotes nor says word for word."""
    words = [t for t in re.split(r"\s+", other.text) if t]
    plain = _TOKENIZE.findall(" ".join(words))
    for q in quoted(mine) - quoted(other):
        run = _TOKENIZE.findall(q)
        if not run or not any(plain[i:i + len(run)] == run for i in range(len(plain) - len(run) + 1)):
            return True
    return False


_TOKENIZE = re.compile(r"[^\s\"'`“”]+(?:'[^\s\"'`“”]+)*")
_PARTS = re.compile(r"[a-z]+|\d+")


def _aside(name: str, mine: Side, other: Side) -> bool:
    """``name`` (on ``mine`` only) changes nothing the other side says: it is not in an aligned slot
    (the other side has no other word next to the same neighbour) and it is not said as an argument
    (after a function word or relation, or before a word the other side says too); or it is an
    identifier whose every part the other side says as a plain word (a restated detail)."""
    if name.startswith("-"):
        return False  # a command-line flag is code, never chat
    if not name.isalpha():
        return _restated(name, other)
    toks = ("^", *mine.tokens, "$")
    theirs = ("^", *other.tokens, "$")
    mine_set = set(mine.tokens)
    for i, tok in enumerate(toks):
        if tok != name:
            continue
        left, right = toks[i - 1], toks[i + 1]
        if left in lexicon.FUNCTION_WORDS or left in RELATIONS or left.startswith("-"):
            return False
        if right != "$" and right in theirs and content_word(right):
            return False
        for j in range(1, len(theirs) - 1):
            w = theirs[j]
            if w in mine_set:
                continue
            if theirs[j - 1] == left or theirs[j + 1] == right:
                return False
    return True


def _restated(name: str, other: Side) -> bool:
    """Every letter run and digit run of ``name`` is a plain word of ``other`` (a word, not part of an
    identifier), a number word for it, or a short form of one ("px" / "pixels", "py" / "python")."""
    plain = [number_key(t) for t in other.tokens if t.isalnum() and (t.isalpha() or t.isdigit() or t in CARDINALS)]
    parts = _PARTS.findall(name)
    if not parts or not plain:
        return False
    words = [w for w in plain if w.isalpha()]
    for part in parts:
        if part in plain or (part.isalpha() and (abbreviates(part, words) or any(lexicon.lemmas(part) & lexicon.lemmas(w) for w in words))):
            continue
        return False
    return True


def _naming(names: frozenset[str]) -> Callable[[Side], bool]:
    """Whether a clause says one of ``names``."""
    return lambda part: bool(names & set(part.tokens))


def missing_names(mine: Side, other: Side) -> list[str]:
    """The names of ``mine`` that ``other`` does not have, in any spelling or short form."""
    theirs, theirs_text = set(other.tokens), other.text
    mine_words = _words(mine.text)
    out = []
    for name in entities(mine):
        bare = name.lstrip("#@")  # "#support" and "support" name the same channel
        if name in theirs or bare in theirs or any(w in theirs for w in lexicon.lemmas(name)):
            continue
        if name in theirs_text.replace(" ", "") or typo_of(name, theirs):
            continue
        if abbreviates(name, _words(theirs_text)) or any(abbreviates(w, _words(name)) for w in theirs):
            continue
        if _initialled(name, mine_words, theirs):
            continue
        out.append(name)
    return out


def _initialled(name: str, words: list[str], theirs: set[str]) -> bool:
    """``name`` is one of two to four consecutive words whose initials the other side writes as one
    word ("san francisco" / "sf", "los angeles" / "la"): the name spelt out, not another name."""
    for size in range(2, 5):
        for start in range(len(words) - size + 1):
            run = words[start:start + size]
            if name in run and all(w.isalpha() for w in run) and "".join(w[0] for w in run) in theirs:
                return True
    return False
