"""``clause``: one request has a clause the other lacks: between clause breaks (sentence punctuation,
a comma, "and", "then", "also"), an action whose content words the other request does not cover,
not even by a base form, a WordNet synonym or a typo ("summarize the notes" / "summarize the notes
and then delete the database")."""

from __future__ import annotations

import re

from .. import lexicon
from .registry import rule
from .text import NUMBER_WORDS, TOKEN, Side, content_word, is_number, uncovered, words_of

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


_PUNCTUATION = re.compile(r"[.;:!?,]+(?:\s|$)")
# Words that join a request to the next thing it asks (a closed class of English).
_JOINS = frozenset({"and", "then", "plus"})
# Words a second conjunct may open with before what it adds ("and then", "then also", "and please").
_OPENERS = frozenset({"and", "then", "also", "please", "afterwards", "after", "that", "next"})
_PRONOUN_SUBJECTS = frozenset({"i", "it", "he", "she", "they", "we", "you", "this", "that", "there", "which", "who",
                               "what", "where", "when", "how", "why"})


@rule("extra_action", whole=True)
def extra_action(a: Side, b: Side) -> bool:
    """One side says all the other says, then joins ("and", "then", "plus") something more to it:
    another verb ("draft an email to the landlord" / "... and send it", "stop the web container and
    remove it", "add the item to my cart and check out") or another object of the same command ("renew
    my passport" / "renew my passport and my driver's license", "order a pizza and a salad"). An object
    that is a pronoun adds no content words the ``clause`` check could read, yet the action is another:
    so this is no doubt, and no verifier settles it. What the join adds must be new to the other side:
    "find a hotel and book it" / "find and book a hotel" says the same two actions, and a clause that
    states ("and it keeps crashing") tells why."""
    return _joined_more(a, b) or _joined_more(b, a)


def _joined_more(mine: Side, theirs: Side) -> bool:
    toks: list[str] = []
    stops: set[int] = set()  # the tokens a punctuation mark follows: a clause ends there
    for part in _PUNCTUATION.split(mine.text):
        toks += words_of(part)
        if toks:
            stops.add(len(toks) - 1)
    mine = Side(mine.text, tuple(toks), tuple(toks))
    their_words = [t for t in theirs.tokens if content_word(t)]
    if not their_words:
        return False
    for i, tok in enumerate(toks):
        if tok not in _JOINS or i == 0:
            continue
        if i + 1 < len(toks) and _numeral(toks[i - 1]) and _numeral(toks[i + 1]):
            continue  # "two hundred and fifty": one number
        head = tuple(toks[:i])
        if uncovered(their_words, Side(" ".join(head), head, head)):
            continue  # the other side is not all said before the join
        j = i
        while j < len(toks) and (toks[j] in _OPENERS or _adverb(toks[j], loosely=True)) and j not in stops:
            j += 1
        tail: list[str] = []
        for k in range(j, len(toks)):
            if toks[k] in _JOINS:
                break
            tail.append(toks[k])
            if k in stops:
                break
        if not tail or not _adds(tail, mine, theirs):
            continue
        if _verb_first(tail[0]) and not statement(tail):
            return True  # another action: "and send it", "then wipe it", "and check out"
        said_last = head[max((k + 1 for k in stops if k < i), default=0):]  # the clause the join follows
        if _noun_phrase(tail) and _command_head(said_last):
            return True  # another object of the same command: "and my driver's license", "and a salad"
    return False


def _numeral(word: str) -> bool:
    return word in NUMBER_WORDS or is_number(word)


def _adds(tail: list[str], mine: Side, theirs: Side) -> bool:
    """A content word of ``tail`` that ``theirs`` does not say as often as ``mine`` does (by its base
    form): the other side, said all before the join, has no place of its own for it ("write a commit
    message" / "... and commit them": the second "commit" is new)."""
    def count(side: Side, lemma: str) -> int:
        return sum(1 for t in side.tokens if lexicon.lemma(t) == lemma)

    said = [t for t in tail if content_word(t)]
    if _verb_first(tail[0]):
        said.append(tail[0])  # a light verb is the action too: "and check out", "and get it"
    return any(count(theirs, lexicon.lemma(t)) < count(mine, lexicon.lemma(t)) for t in said)


# Light verbs (function words to the lexicon) that still do something to what follows ("check out",
# "get it", "make it private", "put it in the shared drive", "set it to public", "find one").
_LIGHT_VERBS = frozenset({"get", "give", "find", "make", "put", "go", "set", "check"})
# Verbs that report back to the speaker what the request did or found: no other action ("and tell
# me", "and show me", "and let me know", "and see"); a closed class.
_REPORTING = frozenset({"tell", "show", "let", "know", "see", "look", "want", "like"})


def _noun_phrase(words: list[str]) -> bool:
    """A noun phrase and nothing more: it opens with a determiner, a possessive or a word that is no
    verb ("a salad", "my driver's license", "hotel near shibuya"), and has no finite verb."""
    first = words[0]
    if first in _PRONOUN_SUBJECTS or any(t in _FINITE for t in words):
        return False
    return first in _DETERMINERS or (first.isalpha() and "v" not in lexicon.pos(first) and first not in lexicon.FUNCTION_WORDS)


_DETERMINERS = frozenset({"a", "an", "the", "my", "your", "our", "his", "her", "their", "its", "some", "another",
                          "two", "three", "four", "five"})


def _verb_first(word: str) -> bool:
    """A clause opens as a command does: a word that is a verb's base form to WordNet ("send",
    "merge", "wipe"), not a past or a participle, nor the speaker's own state ("need it")."""
    if not word.isalpha() or word in _SPEAKER_STATES or word in _REPORTING:
        return False
    if word in lexicon.FUNCTION_WORDS and word not in _LIGHT_VERBS:
        return False
    return "v" in lexicon.pos(word) and not (word.endswith(("ed", "ing"))
                                             and any(b != word and "v" in lexicon.pos(b) for b in lexicon.lemmas(word)))


def _command_head(head: tuple[str, ...] | list[str]) -> bool:
    """The words before the join are a command: past "please", "can you" and adverbs, a verb first."""
    rest = list(head)
    while rest and (rest[0] in ("please", "can", "could", "would", "will", "you", "just", "hey", "now")
                    or _adverb(rest[0], loosely=True)):
        rest.pop(0)
    return bool(rest) and _verb_first(rest[0])
