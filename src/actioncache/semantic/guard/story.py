"""The sentences that tell the story around a request, apart from the request itself.

"My 8-year-old is getting her shots next week 💉 could you explain how vaccines work?" asks what
"explain how vaccines work" asks: its first sentence states something (a subject and its verb) and
the request stands in a sentence of its own. A detail of such a sentence (an age, a count, a
duration) is background; the same detail inside the request ("book seats for 2 adults and 3 kids")
changes it. Sentences end at a stop, a pictograph between two sentences, a dash or a bracket, never
at a comma or an "and" (which join the parts of one request).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from .. import lexicon
from .chatter import SENTENCE_MARK
from .clause import statement
from .text import DATE_WORDS, NOW, NUMBER_WORDS, Side, content_word, uncovered, words_of

_SENTENCE = re.compile(rf"[.;!?]+(?:\s|$)|{SENTENCE_MARK}|\s[-–—]+\s|[()–—]")
# Who a story is about: the speaker, the people and things around them (closed classes of English).
_SUBJECTS = frozenset({"i", "we", "he", "she", "they", "it", "there", "my", "our", "his", "her", "their", "its", "the"})
# Words that open a sentence and say nothing of it ("so there's this pothole").
_OPENERS = frozenset({"so", "and", "but", "well", "also", "anyway"})
# A sentence that says what the speaker wants, means or would rather is part of the request ("i
# meant pr #428", "i want to learn jazz chords", "i'd rather leave at 9"), not its story.
_WILL = frozenset({"want", "wants", "wanted", "wanna", "need", "needs", "mean", "meant", "prefer", "would", "rather",
                   "wish", "hope"})


# Words that say an amount or a time without digits (closed classes of English): what another side
# may say instead of a number or a day ("a week" for "7 days", "right now" for "today").
AMOUNT_OR_TIME = NUMBER_WORDS | DATE_WORDS | NOW | frozenset({
    "first", "couple", "pair", "few", "several", "minute", "hour", "day", "fortnight", "decade", "quarter",
    "daily", "weekly", "monthly", "yearly", "annual", "hourly", "overnight", "weekday"})


def sentences(side: Side) -> list[Side]:
    """The sentences of ``side``, each read as a side of its own."""
    out = []
    for part in _SENTENCE.split(side.text):
        words = tuple(words_of(part))
        if words:
            out.append(Side(part.strip(), words, words))
    return out


def request_part(detailed: Side, other: Side, has_detail: Callable[[Side], bool]) -> Side:
    """``detailed`` without the sentences that tell its story with a detail ``other`` lacks: a
    statement holding that detail ("he's 4 and obsessed with tennis balls"), when another sentence
    asks or commands (the request) and ``other`` says nothing ``detailed`` does not (a story that
    ``other`` leaves out, not another one: "we're hiring two engineers" / "i'm leaving the
    company"). ``detailed`` as it is otherwise."""
    parts = sentences(detailed)
    if len(parts) < 2 or _tells_another(other, detailed) or any(
            len(uncovered(parts_of, detailed)) == len(parts_of) for parts_of in _hyphenated(other)):
        return detailed
    # The story comes first: a statement after the last sentence that asks is a condition on it
    # ("list the documents i should bring. i'm a salaried employee with one w-2").
    asks = [n for n, p in enumerate(parts) if not tells(p)]
    told = [p for n, p in enumerate(parts) if has_detail(p) and tells(p) and asks and n < asks[-1]]
    rest = [p for p in parts if p not in told]
    if not told:
        return detailed
    tokens = tuple(t for p in rest for t in p.tokens)
    return Side(" . ".join(p.text for p in rest), tokens, tokens)


def one_sided_doubt(a: Side, b: Side, told: Callable[[Side], Collection[str]]) -> bool:
    """A rule's doubt about details (numbers, days: ``told``) only one side says: the other says none,
    and the request may still be the same (:func:`detail_may_be_the_same`). Details on both sides that
    differ never are one."""
    if told(a) and told(b):
        return False
    detailed, other = (a, b) if told(a) else (b, a)
    theirs = set(told(other))
    return detail_may_be_the_same(detailed, other, lambda sentence: bool(set(told(sentence)) - theirs))


def detail_may_be_the_same(detailed: Side, other: Side, has_detail: Callable[[Side], bool]) -> bool:
    """Whether a detail (a number, a day) that only ``detailed`` says may still leave the request as
    ``other`` asks it, for a model that reads both to judge: the detail stands outside the sentence
    that is the request (the one sharing most words with ``other``, the last of equals), in the
    story told around it ("Battery's at 12% and I'm getting anxious 😅 where's the closest EV
    charger?"), or ``other`` says an amount or a time in words of its own ("the last week" / "the
    past 7 days", "right now" / "today"). A detail the other side simply leaves out of the request
    ("hey quick favor, buy 100 shares of AAPL" / "... buy shares of AAPL") changes what is asked,
    whatever such a model says: what both sides share can talk it into anything."""
    parts = sentences(detailed)
    if len(parts) > 1:
        theirs = _content_lemmas(other)
        request = max(reversed(parts), key=lambda part: len(_content_lemmas(part) & theirs))
        # A story says something of its own: a sentence of the detail and little else ("10 please",
        # "for 6.", "- 8pm please") goes on with the request.
        if not has_detail(request) and all(len(_content_lemmas(p) - AMOUNT_OR_TIME) >= 2 for p in parts
                                           if has_detail(p)):
            return True
    mine = {w for t in detailed.tokens for w in _words_and_lemmas(t)}
    return any((words := _words_and_lemmas(t)) & AMOUNT_OR_TIME and not words & mine for t in other.tokens)


def _content_lemmas(side: Side) -> set[str]:
    return {lexicon.lemma(t) for t in side.tokens if content_word(t)}


def _words_and_lemmas(tok: str) -> set[str]:
    """A word, its base form, and the parts of a hyphenated word with theirs ("week-long": week)."""
    words = {tok, *tok.split("-")}
    return words | {lexicon.lemma(w) for w in words if w}


def _tells_another(other: Side, detailed: Side) -> bool:
    """``other`` says something ``detailed`` does not: two words or more it does not cover, or one
    in a story of its own ("i'm on my own. book a table" against "we're 6. book a table")."""
    new = uncovered(other.tokens, detailed)
    return len(new) > 1 or any(set(new) & set(p.tokens) and tells(p) for p in sentences(other))


def _hyphenated(side: Side) -> list[list[str]]:
    """The words of each hyphenated word: "self-employed" says something to cover ("dog-friendly"
    is covered by "dogs")."""
    return [parts for t in side.tokens if "-" in t and (parts := [p for p in t.split("-") if p.isalpha()])]


def tells(sentence: Side) -> bool:
    """The sentence states something about the speaker or the world around them: a subject first
    (past an opener) and its verb, and no word of what the speaker wants or means."""
    words = list(sentence.tokens)
    while words and words[0] in _OPENERS:
        words.pop(0)
    return bool(words) and words[0] in _SUBJECTS and statement(words) and not _WILL & set(words)
