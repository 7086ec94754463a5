"""``clause``: one request has a clause the other lacks: between clause breaks (sentence punctuation,
a comma, "and", "then", "also"), an action whose content words the other request does not cover,
not even by a base form, a WordNet synonym or a typo ("summarize the notes" / "summarize the notes
and then delete the database")."""

from __future__ import annotations

import re

from .. import lexicon
from .registry import rule
from .text import TOKEN, Side, content_word, uncovered

# Where one clause of a request ends and another begins: sentence punctuation, a comma or a
# coordinating word (a closed class of English).
_CLAUSE_BREAK = re.compile(r"[.;:!?,]+(?:\s|$)|\b(?:and|then|also|plus|afterwards|next)\b")


def clauses(side: Side) -> list[list[str]]:
    return [[t.lower() for t in TOKEN.findall(part)] for part in _CLAUSE_BREAK.split(side.text)]


@rule("clause", whole=True)
def clause(a: Side, b: Side) -> bool:
    """A stretch between clause breaks whose content words (two or more, one of them a verb) the
    other request does not cover at all."""
    for mine, theirs in ((a, b), (b, a)):
        if len(uncovered(theirs.tokens, mine)) > 1:
            continue  # both sides reword freely: a paraphrase, not one request inside the other
        parts = [c for c in ([t for t in words if content_word(t)] for words in clauses(mine)) if c]
        if len(parts) < 2:
            continue  # one clause reworded ("read the file x" / "open x") is the other checks' business
        for words in clauses(mine):
            words_content = [t for t in words if content_word(t)]
            if len(words_content) < 2 or len(uncovered(words_content, theirs)) < len(words_content):
                continue
            # An action: a verb, or an unknown word, where a command's verb stands ("cc the team"); a
            # statement ("it keeps dropping", "the budget is tight") tells why, it asks nothing more.
            if statement(words) or words[0] in _ADJUNCT:
                continue
            if command(words):
                return True
    return False


def command(words: list[str]) -> bool:
    """The clause starts as a command does: past adverbs ("now", "actually") and "please", a word
    that can be a verb ("wipe the cache", "change the port") or one English does not know ("cc the
    team"). A noun phrase, a number or an adjective first names or describes ("release day", "mac
    user here", "16 chars long", "full of legalese", "change of plans"): it adds no action."""
    rest = list(words)
    while rest and (rest[0] in _DEGREE or rest[0] == "please" or _adverb(rest[0], loosely=True)):
        rest.pop(0)
    if not rest or not content_word(rest[0]):
        return False  # "to bother you this late": an infinitive, no command
    first = rest[0]
    if first in _SPEAKER_STATES:
        return False  # "need it for my report", "hope all is well": the speaker's state, "i" left out
    if rest[1:2] == ["of"]:
        return False  # "change of plans", "a list of": a noun and what it is of
    kinds = lexicon.pos(first) + lexicon.pos(lexicon.lemma(first))
    return "v" in kinds or not kinds


_SUBJECTS = frozenset({"i", "it", "he", "she", "they", "we", "you", "this", "that", "there", "which", "who", "my",
                       "our", "his", "her", "their", "its", "the"})
_FINITE = frozenset({"is", "are", "was", "were", "has", "have", "had", "keeps", "keep", "seems", "does", "did", "am"})


# A clause that opens with one of these prepositions is an adjunct of the request beside it ("for a
# school project, ...", "in the test database, ..."), no action of its own: the condition check
# judges whether it changes the request.
_ADJUNCT = frozenset({"in", "on", "at", "for", "with", "without", "within", "inside", "under", "across", "over"})
# Verbs that say what the speaker hopes, needs or wonders, as chat says them with "I" left out; a
# closed class, never a command to an assistant ("need to stock up lol", "wanna get it right").
_SPEAKER_STATES = frozenset({"hope", "wish", "guess", "wonder", "need", "needed", "wanna", "gotta", "hoping",
                             "wondering"})
_DEGREE = frozenset({"just", "really", "super", "still", "finally", "totally", "kinda", "very", "so"})


def statement(words: list[str]) -> bool:
    """A clause that states rather than asks: a subject first (with its verb in one word: "i'm",
    "disk's"), or a noun (or two) then a finite verb; or, with
    the subject left out as chat leaves it, a verb that no command starts with (a participle or a past:
    "trying to call my cousin", "just got in", "graduated in may") or an adjective ("sorry to ping
    you", "super excited to have her")."""
    words = [w for w in words if w not in ("and", "then", "also", "plus", "but", "so", "because")]
    if not words:
        return True
    head, _, tail = words[0].partition("'")
    if tail in ("m", "s", "re", "ve", "ll", "d") and head.isalpha():
        return True  # a subject and its verb in one word: "i'm", "disk's", "we're"
    if words[0] in _SUBJECTS or (len(words) > 1 and words[1] in _FINITE):
        return True
    if len(words) > 2 and words[2] in _FINITE and all("n" in lexicon.pos(lexicon.lemma(w)) for w in words[:2]):
        return True  # a compound noun and its verb: "tax season is looming"
    first = next((w for w in words if w not in _DEGREE and not _adverb(w)), "")  # past "now", "quickly"
    if not first.isalpha():
        return False
    base = lexicon.lemma(first)
    kinds = lexicon.pos(base) or lexicon.pos(first)
    if "v" in kinds:
        return base != first and (first.endswith("ing") or "n" not in lexicon.pos(first))
    return "a" in kinds


def _adverb(word: str, *, loosely: bool = False) -> bool:
    """Only an adverb to WordNet; ``loosely``: an adverb and never a verb ("now", "just")."""
    kinds = lexicon.pos(word)
    if loosely:
        return "r" in kinds and "v" not in kinds
    return bool(kinds) and set(kinds) <= {"r"}
