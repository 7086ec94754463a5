"""``speech_act``: a question about an action is not the action.

"drop the users table" asks the agent to act; "how do I drop the users table" asks for
instructions; "can I drop the users table" / "should I ..." for permission or advice; "is the
users table dropped" / "did you drop ..." about a state. Their plans differ (run it, explain it,
check a policy, look it up), and the embedding places them at 0.9 and more. Each request gets one
of these acts, read from its grammar after the politeness around it ("could you", "I'd like to",
"please", "help me"). A request of several sentences (split at a stop, a comma, a colon, a dash or
an emoji) has the act of its last sentence that asks or commands something: the sentences that
only state ("my sink is clogged lol", "I'm a US citizen") tell its background, and a bare "how?"
after a command asks the way to do it ("turn off autocorrect - how?"):

``act``    an imperative whose verb changes something ("drop", "cancel", "deploy");
``ask``    a wh-question ("what", "which", "how many") or "tell me / give me": information for the user;
``look``   an imperative whose verb retrieves or reports ("show", "list", "find", "check", "search");
``phrase`` no verb to read ("paris weather", "a table for two at 7"): either of the above (a
           phrase about a way, "steps", "tips", "the fastest way to ...", is ``how``);
``how``    asks the way ("how do I", "how to", "what are the steps to", "walk me through");
``may``    asks ability, permission or advice ("can I", "should we", "do I need to",
           "is it safe to");
``state``  asks whether something is so ("is", "has", "did", "will it", "check whether").

Two requests differ when their acts differ, except these pairs, which may ask the same: ``phrase``
with anything but ``how`` and ``may``; ``ask`` with ``look``, ``state`` or ``how`` ("how do I make
pancakes" / "give me a pancake recipe"); ``look`` with ``state`` or ``act`` (two verbs: the other
checks judge them). So "drop the table" is neither "how do I drop the table" nor "is the table
dropped", "list the files" is not "how do I list the files", and "pay the bill" is not "how much is
the bill". The verbs that retrieve or report are a short list written from English usage
(information verbs), not from any data set; a verb outside it reads as acting.
"""

from __future__ import annotations

import re

from .. import lexicon
from .chatter import SENTENCE_MARK
from .registry import SPELLINGS, rule
from .text import WH_WORDS, Side, words_of

ACT, ASK, LOOK, PHRASE, HOW, MAY, STATE = "act", "ask", "look", "phrase", "how", "may", "state"
_COMPATIBLE = {frozenset(pair) for pair in ((PHRASE, ACT), (PHRASE, ASK), (PHRASE, LOOK), (PHRASE, STATE),
                                            (ASK, LOOK), (ASK, STATE), (ASK, HOW), (LOOK, STATE), (LOOK, ACT))}

_INFO_VERBS = frozenset(["get", "show", "list", "tell", "find", "fetch", "check", "look", "see", "display", "print", "read", "search", "view", "know", "lookup", "summarize", "summarise", "explain", "describe", "compare", "calculate", "compute", "count", "convert", "translate", "estimate", "recommend", "suggest", "track", "locate", "report", "retrieve", "query", "preview", "inspect", "monitor", "watch", "recap", "identify", "define", "measure", "total", "sum", "review", "navigate"])
_GIVING = frozenset({"give", "bring", "pull", "send"})  # retrieve only when "me"/"us" follows
_SAYING = frozenset({"say", "pronounce", "spell"})  # "how do you say X": what X is called
_GOING = frozenset({"get", "go", "reach", "travel", "drive", "walk", "commute"})  # "how do I get to X": the route
# Words before a request that ask nothing themselves: politeness, and an "and" that joins it to what
# came before ("and how do I restart it"; a "but" opens a sentence of its own: _SENTENCE_BREAK).
_POLITE = frozenset({"please", "pls", "plz", "kindly", "just", "now", "then", "also", "so", "ok", "okay", "and"})
_SUBJECT_PRONOUNS = frozenset({"i", "we"})
_MODAL_ASK = frozenset({"can", "could", "may", "might"})
_MODAL_ADVICE = frozenset({"should", "must", "shall", "ought"})
_AUXILIARIES = frozenset({"is", "are", "was", "were", "am", "do", "does", "did", "has", "have", "had", "will",
                          "would", "can", "could", "should", "may", "might", "must", "shall"})
_AMOUNT = frozenset({"many", "much", "long", "often", "far", "old", "big", "large", "soon", "late", "early",
                     "fast", "high", "deep", "heavy", "expensive", "cheap", "hot", "cold", "warm"})
_MAY_ADJECTIVES = frozenset({"possible", "ok", "okay", "safe", "allowed", "legal", "worth", "wise", "advisable",
                             "better", "fine", "alright", "permitted", "necessary", "required", "smart"})
_LEARN = frozenset({"know", "learn", "understand", "find", "figure", "wonder", "wondering", "ask", "asking", "see"})
_NOT_KNOWING = frozenset({"idk", "dunno"})  # "idk how to cancel my order": I don't know how to
# Verbs that introduce what is asked ("tell me how ...", "check whether ...", "explain how ...").
_ASKING = frozenset({"tell", "show", "explain", "teach", "check", "confirm", "verify", "describe"})
_WHETHER = frozenset({"if", "whether"})
_HOW_NOUNS = frozenset({"steps", "step", "way", "ways", "process", "procedure", "instructions", "instruction",
                        "guide", "tutorial", "best"})
# Nouns that name a way of doing something: a phrase about one asks the way.
_WAY_NOUNS = frozenset({"steps", "step", "way", "ways", "procedure", "instructions", "instruction", "guide",
                        "tutorial", "tips", "tip"})
# Where one sentence of a request ends: a stop, comma, colon or dash before a space, or an emoji; and
# where "but" opens a clause of its own ("sorry if this is dumb but how do I restart it": what is asked
# follows it; a lead-in before it asks nothing, whatever its words, and only a clause that asks counts).
_SENTENCE_BREAK = re.compile(r"[.!?;,:]+(?=\s|$)|\s[-—–]+\s|[—–]|(?:^|\s)but\s|" + SENTENCE_MARK, re.IGNORECASE)


def _verb(word: str) -> bool:
    return "v" in lexicon.pos(lexicon.lemma(word)) or "v" in lexicon.pos(word)


def _after(toks: list[str], i: int) -> list[str]:
    return toks[i:] if i < len(toks) else []


def act_of(toks: list[str], wrapped: bool = False) -> str:
    """The act of a request given as lower-case tokens (``wrapped``: after "can you", "I want to"...,
    where a verb can only be a command)."""
    while toks and toks[0] in _POLITE:
        toks = toks[1:]
        wrapped = True
    if not toks:
        return PHRASE
    first, second = toks[0], toks[1] if len(toks) > 1 else ""
    third = toks[2] if len(toks) > 2 else ""
    # "how do I / how can we / how to": the way; "how many / how is": information.
    if first == "how":
        verb, after = (toks[3] if len(toks) > 3 else ""), (toks[4] if len(toks) > 4 else "")
        if second == "to" or (second in _AUXILIARIES and third in ("i", "we", "you", "one", "someone", "people")
                              and verb not in _SAYING | {"be"} and not (verb in _GOING and after in ("to", "there", "home"))):
            return HOW
        return ASK  # "how many", "how is the weather", "how do I get to the station" (the route)
    if first in WH_WORDS:
        # "what are the steps to / what is the best way to / what do I do to": the way.
        rest = toks[1:6]
        if any(t in _HOW_NOUNS for t in rest) and ("to" in toks[2:8] or "for" in toks[2:8]):
            return HOW
        if first == "what" and second in ("do", "should") and third in _SUBJECT_PRONOUNS and "to" in toks[3:7]:
            return HOW
        return ASK
    if first in ("steps", "instructions", "guide", "tutorial") and second in ("to", "for", "on"):
        return HOW
    if first == "walk" and second in ("me", "us") and third == "through":
        return HOW
    # Politeness that wraps a request: "can you / would you / will you (please) X", "are you able to X".
    if first in ("can", "could", "would", "will") and second == "you":
        return act_of(_after(toks, 2), wrapped=True)
    if first == "are" and second == "you" and third == "able":
        return act_of(_after(toks, 4), wrapped=True)
    # Ability, permission, advice.
    if first in _MODAL_ASK and second in _SUBJECT_PRONOUNS:
        return MAY
    if first in _MODAL_ADVICE and second in _SUBJECT_PRONOUNS:
        return MAY
    if first in ("do", "does") and second in _SUBJECT_PRONOUNS and third in ("need", "have") and "to" in toks[3:5]:
        return MAY
    if first == "is" and second in ("it", "this", "that") and (third in _MAY_ADJECTIVES or toks[2:4] == ["a", "good"]):
        return MAY
    if first == "is" and any(t in _MAY_ADJECTIVES and toks[i + 1:i + 2] == ["to"] for i, t in enumerate(toks[2:6], 2)):
        return MAY  # "is ibuprofen ok to take with coffee": whether one may, as "is it ok to"
    if first in ("am", "are") and second in _SUBJECT_PRONOUNS | {"you"} and third in ("able", "allowed", "supposed", "permitted"):
        return MAY
    if first == "is" and second == "there" and "way" in toks[2:5]:
        return HOW
    # "do a backup", "do the rollout": the verb "do", not its auxiliary.
    if first == "do" and second in ("a", "an", "the", "my", "our", "this", "that", "some", "another"):
        return ACT
    # "don't follow symlinks", "don't need it anymore": a command or a statement without its subject.
    if first in ("do", "does") and second == "not":
        return act_of(_after(toks, 2), wrapped=True)
    # A yes/no question: an auxiliary first.
    if first in _AUXILIARIES:
        if first in ("do", "does") and second == "you" and third == "happen" and toks[3:4] == ["to"]:
            return act_of(["do", "you", *toks[4:]])  # "do you happen to know ...": "do you know ..."
        if first in ("do", "does") and second == "you" and third in ("know", "have"):
            return act_of(_after(toks, 2))
        return STATE
    # "I want / need / would like (you) to X", "let's X", "help me X", "go ahead and X".
    for start in (("i", "want", "to"), ("i", "need", "to"), ("i", "would", "like", "to"), ("i", "would", "love", "to"),
                  ("i", "want", "you", "to"), ("i", "need", "you", "to"), ("i", "would", "like", "you", "to"),
                  ("let", "us"), ("let", "me"), ("help", "me"), ("help", "me", "to"), ("go", "ahead", "and"),
                  ("i", "am", "trying", "to"), ("i", "have", "to"), ("we", "need", "to"), ("we", "want", "to"),
                  ("i", "was", "hoping", "you", "could"), ("i", "was", "wondering", "if", "you", "could")):
        if tuple(toks[:len(start)]) == start and len(toks) > len(start):
            return act_of(_after(toks, len(start)), wrapped=True)
    # "tell me how to / I want to know whether / check if ...": what follows says what is asked.
    # ... and "i don't know / i'm not sure / idk how to ...": what the speaker does not know is asked.
    if first in _LEARN | _ASKING | _NOT_KNOWING or (first == "i" and (second in ("am", "was") or _LEARN & set(toks[1:4]))):
        for i, tok in enumerate(toks[:6]):
            if tok in _WHETHER and i:
                return STATE
            if tok == "how" and i:
                return act_of(toks[i:])
            if tok in WH_WORDS and i:
                return ASK
    if first in _GIVING | {"tell"} and second in ("me", "us"):
        return LOOK
    if any(t.startswith("-") and len(t) > 1 for t in toks):
        return ACT  # a command line ("git branch -d x"): run it
    if first in ("i", "we", "my", "our", "the", "a", "an", "this", "that", "these", "those", "some", "any", "all"):
        return PHRASE
    if _imperative(first, second, third) or (wrapped and _verb(first)):
        return LOOK if lexicon.lemma(first) in _INFO_VERBS or first in _INFO_VERBS else ACT
    return PHRASE


_OBJECT_STARTS = frozenset({"the", "a", "an", "my", "your", "our", "his", "her", "their", "its", "this", "that", "these",
                            "those", "me", "us", "him", "them", "it", "all", "every", "some", "any", "each", "both",
                            "up", "down", "out", "off", "on", "over", "back", "away", "more", "another", "no", "",
                            # the other pronouns a verb takes as its object ("give everyone access")
                            "you", "everyone", "everybody", "someone", "somebody", "anyone", "anybody",
                            "nobody", "everything", "something", "anything", "nothing", "myself", "yourself",
                            "himself", "herself", "itself", "ourselves", "themselves"})


def _imperative(first: str, second: str, third: str = "") -> bool:
    """``first`` opens a command: a verb, and (when it can also be a noun) followed by what a verb
    takes (an article, a pronoun, a particle, a name, a number, code, or a noun and then a name:
    "close ticket OPS-7"), not by a preposition or a noun, where it heads a phrase ("time in
    madrid", "inventory count for bolts")."""
    kinds = lexicon.pos(lexicon.lemma(first)) or lexicon.pos(first)
    if "v" not in kinds:
        return False
    if "n" not in kinds or second in _OBJECT_STARTS:
        return True
    following = lexicon.pos(lexicon.lemma(second)) or lexicon.pos(second)
    if second in lexicon.FUNCTION_WORDS:
        return False  # "time in madrid", "route to the station", "time please"
    if not following or not second.isalpha():
        return True  # a name, a number, code: "email bob", "book 2 tickets"
    if third and not third.isalpha() and third not in lexicon.FUNCTION_WORDS:
        return True  # a noun and its name: "close ticket OPS-7", "cancel order 48213"
    return "n" not in following


def act(side: Side) -> str:
    """The act of the request's last sentence that asks or commands (see the module's notes)."""
    found = PHRASE
    for part in _SENTENCE_BREAK.split(side.text):
        toks = words_of(part)
        if not toks or toks[0] in ("thank", "thanks"):
            continue  # nothing, or thanks ("thank you kindly.")
        if toks == ["how"] and found in (ACT, LOOK, PHRASE):
            found = HOW  # "turn off autocorrect - how?"
            continue
        this = act_of(toks)
        if len(toks) > 1 and toks[-1] == "how" and this in (ACT, LOOK, PHRASE):
            this = HOW  # "reset my password how?": a "how" after the command, the break left out
        if this == PHRASE and _WAY_NOUNS & set(toks):
            this = HOW  # "oil change steps for a civic", "fastest way to insert rows"
        if this != PHRASE:
            found = this
    return found


@rule("speech_act")
def speech_act(a: Side, b: Side) -> bool:
    """The two requests ask different things of the agent: to act, to inform, to explain the way,
    to judge whether one may, or to say whether something is so."""
    x, y = act(a), act(b)
    return x != y and frozenset((x, y)) not in _COMPATIBLE


# The auxiliary of a first-person how-question says nothing about the way asked for: "how do I",
# "how can I", "how could I", "how would I", "how should I" and "how to" ask for the same steps. The
# subject stays ("how can you help me" is not "how can I help you"), and so does a past tense ("how
# did I ...": what happened).
_HOW_AUXILIARIES = frozenset({"do", "can", "could", "would", "should"})


def _how_frames(tokens: tuple[str, ...]) -> list[tuple[int, int, tuple[str, ...]]]:
    """Each how-question frame in ``tokens``: (start, end, its one spelling "how do i" / "how do we")."""
    found: list[tuple[int, int, tuple[str, ...]]] = []
    for i, word in enumerate(tokens[:-1]):
        if word != "how":
            continue
        if tokens[i + 1] == "to":
            found.append((i, i + 2, ("how", "do", "i")))
        elif tokens[i + 1] in _HOW_AUXILIARIES and i + 2 < len(tokens) and tokens[i + 2] in _SUBJECT_PRONOUNS:
            found.append((i, i + 3, ("how", "do", tokens[i + 2])))
    return found


def _spelt_how(side: Side) -> Side:
    tokens, raw = list(side.tokens), list(side.raw)
    for start, end, spelling in reversed(_how_frames(side.tokens)):
        tokens[start:end] = spelling
        raw[start:end] = spelling
    text = re.sub(r"\bhow (?:to|(?:do|can|could|would|should) (i|we))\b",
                  lambda m: f"how do {m.group(1) or 'i'}", side.text)
    return Side(text, tuple(tokens), tuple(raw) if len(side.raw) == len(side.tokens) else tuple(tokens))


def spell_how_questions(a: Side, b: Side) -> tuple[Side, Side]:
    """Both sides with each first-person how-question spelt "how do i" / "how do we", when both ask one:
    "how can i undo a git rebase" / "how do i undo a git rebase" read as the same words by every check
    and by the verifiers. Else as they are."""
    if not (_how_frames(a.tokens) and _how_frames(b.tokens)):
        return a, b
    return _spelt_how(a), _spelt_how(b)


SPELLINGS.append(spell_how_questions)
