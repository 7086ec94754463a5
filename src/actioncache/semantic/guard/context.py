"""``context``: two conversations' histories must say the same, by meaning.

A conversation's request ("yes, cancel it", "next friday please") means what its history makes it
mean, so the messages before it are compared too, as the request is compared, not character for
character:

* the user's turns that ask or state something (greetings, thanks and small talk left out) are
  joined into one text on each side; both sides have one or neither does; the default rules find
  no contradiction between the two (another city, another amount, a negation, a command for a
  question...), reading them as histories (``history.py``: a number retold in other words, "12
  people" / "12 guests", is the same fact), and their embeddings are at least as similar as the
  cache's threshold asks, less ``CONTEXT_SLACK``;
* the assistant's turns state facts and ask what the user answers: their numbers, dates, names
  and code agree, and the last one (the question the request answers) has no opposite word or
  swapped word ("freeze it?" / "cancel it?");
* any other message (a system prompt, a tool result) is the same in its exact-match form.

So a reworded or chattier history with the same facts hits, and a changed fact or intent misses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .chatter import strip_chatter, without_chatter
from .code import exact_form
from .history import HISTORY_RULES
from .pipeline import Pipeline
from .registry import CONTEXT, Doubt, Pair, register

USER, ASSISTANT = "user", "assistant"
# Histories reword more freely than requests ("my order hasn't arrived" / "my package never showed
# up"): their embeddings need to be this much less similar than the threshold asks of requests,
# the rules above still holding them to the same facts.
CONTEXT_SLACK = 0.15
# What the agent said is checked for its facts only: its wording is free.
_AGENT_FACTS = Pipeline(["number", "date", "entity", "code_exact"])
# One word swapped in turns worded alike ("errors in the checkout service" / "... payments service",
# "which flight?" / "which day?"); an open question asks nothing in particular ("what's the problem?" /
# "what's the issue?", "what's going on?"), however it is worded, and is left out.
_AGENT_SWAP = Pipeline(["substitution"])
_AGENT_QUESTION = Pipeline(["opposite", "negation"])


def said(turns: Sequence[tuple[str, str]], role: str = USER) -> list[str]:
    """The turns of ``role`` that ask or state something, without their greetings and thanks."""
    return [kept for who, text in turns if who.strip().casefold() == role and (kept := without_chatter(text))]


def key_text(turns: Sequence[tuple[str, str]], request: str) -> str:
    """What a request is searched by: the user's turns that say something, then the request itself,
    each without its greetings and thanks (a prompt: the prompt without them)."""
    return ". ".join([*said(turns), strip_chatter(request)])


def _others(turns: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted((who.strip().casefold(), exact_form(text)) for who, text in turns
                  if who.strip().casefold() not in (USER, ASSISTANT))


def _content_lemmas(text: str) -> set[str]:
    from .. import lexicon
    from .text import content_word, side

    return {lexicon.lemma(t) for t in side(text).tokens if content_word(t)}


# Words an answer uses to point at what the assistant just said instead of saying something of its
# own: yes and no, position words, "option", "that one", "go ahead", single letters and small numbers.
_POINTING = frozenset({
    "yes", "yeah", "yep", "yup", "sure", "ok", "okay", "fine", "no", "nope", "nah", "please", "pls", "thanks",
    "the", "a", "an", "that", "this", "it", "one", "ones", "first", "second", "third", "fourth", "fifth", "last",
    "former", "latter", "earlier", "later", "listed", "top", "bottom", "option", "choice", "number", "both",
    "neither", "either", "go", "ahead", "do", "sounds", "good", "great", "perfect", "correct", "right", "exactly",
    "lets", "let's", "let", "us", "b", "c", "d"})


def points_at_the_question(request: str) -> bool:
    """The request only points at the assistant's last turn ("yes", "ok", "the first one", "option 2",
    "A", "the latter please"): it means whatever that turn offered, in that turn's words and order."""
    from .text import side

    toks = side(request).tokens
    return bool(toks) and all(t in _POINTING or (t.isdigit() and len(t) <= 2) for t in toks)


def _last_turn(turns: Sequence[tuple[str, str]], role: str) -> str | None:
    for who, text in reversed(turns):
        if who.strip().casefold() == role:
            return text
    return None


_YES = frozenset({"yes", "yeah", "yep", "yup", "sure", "ok", "okay", "absolutely", "definitely", "correct", "go"})
_NO = frozenset({"no", "nope", "nah", "don't", "dont", "never", "not", "cancel"})


def _answers_differ(a: str, b: str) -> bool:
    """One answer says yes, the other no ("yes, cancel it" / "no, keep it")."""
    first_a = (a.strip().split() or [""])[0].strip(",.!").casefold()
    first_b = (b.strip().split() or [""])[0].strip(",.!").casefold()
    return (first_a in _YES and first_b in _NO) or (first_a in _NO and first_b in _YES)


def _other_option(mine: Sequence[tuple[str, str]], theirs: Sequence[tuple[str, str]], answer_a: str, answer_b: str) -> bool:
    asked_a, asked_b = said(mine, ASSISTANT), said(theirs, ASSISTANT)
    if not (asked_a and asked_b) or not (mine and theirs and mine[-1][0].strip().casefold() == ASSISTANT
                                          and theirs[-1][0].strip().casefold() == ASSISTANT):
        return False
    options = _content_lemmas(asked_a[-1]) & _content_lemmas(asked_b[-1])
    picked_a, picked_b = _content_lemmas(answer_a) & options, _content_lemmas(answer_b) & options
    return bool(picked_a and picked_b and picked_a != picked_b)


def _facts_differ(a: str, b: str) -> bool:
    """A history states its facts in clauses of their own ("my team lead is sarah, but she's on leave,
    so omar is covering"): a name that only one history states is a fact it adds, never a story
    around the request (which the rules let a single request tell). A day only one history tells is
    read by ``history.py``'s date rule: a deadline is a fact, "on thursday" the story."""
    from .entity import missing_names
    from .text import align, side

    x, y = align(side(a), side(b))
    return bool(missing_names(x, y) or missing_names(y, x))


def _open_question(turn: str) -> bool:
    """A question that asks for nothing in particular: a question word, then a verb ("what's the
    problem?", "what's going on?", "how can I help?"), not a noun ("which flight?")."""
    from .text import WH_WORDS, side

    toks = side(turn).tokens
    return turn.rstrip().endswith("?") and len(toks) > 1 and toks[0] in WH_WORDS and toks[1] in _AUXILIARIES


_AUXILIARIES = frozenset({"is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will",
                          "may", "might", "has", "have"})


class ContextGate:
    """The gate ``context``: the histories before the two requests differ in what they say."""

    kind = CONTEXT
    name = "context"

    def __call__(self, pair: Pair) -> str | None:
        mine, theirs = pair.request_turns, pair.candidate_turns
        if not mine and not theirs:
            return None
        similar: Callable[[str, str, float], bool] | None = pair.extras.get("similar")
        # Two answers to one question pick the same of the options it offered ("email or sms?":
        # "email" / "sms", "rerun it or revert it?": "rerun it" / "revert it").
        if _other_option(mine, theirs, pair.request, pair.candidate) or _answers_differ(pair.request, pair.candidate):
            return self.name
        if _others(mine) != _others(theirs):
            return self.name
        # An answer that only points ("the first one", "ok", "yes") means what the assistant's last
        # turn offered, in its order: that turn must be the same, word for word, on both sides.
        if points_at_the_question(pair.request) or points_at_the_question(pair.candidate):
            asked_a, asked_b = _last_turn(mine, ASSISTANT), _last_turn(theirs, ASSISTANT)
            if (asked_a is None) != (asked_b is None) or (
                    asked_a is not None and asked_b is not None and exact_form(asked_a) != exact_form(asked_b)):
                return self.name
        user_a, user_b = " . ".join(said(mine)), " . ".join(said(theirs))
        if bool(user_a) != bool(user_b):
            return self.name
        doubted = False
        if user_a and user_a != user_b:
            # The user's turns differ only in details said otherwise (a number, a date, a modal...):
            # a doubt, which a verifier that reads those turns may settle; anything else refuses.
            found = HISTORY_RULES.doubts(Pair(user_a, user_b))
            if found is None or _facts_differ(user_a, user_b):
                return self.name
            doubted = bool(found)
            if similar is not None and not similar(user_a, user_b, CONTEXT_SLACK):
                return self.name
        agent_a, agent_b = said(mine, ASSISTANT), said(theirs, ASSISTANT)
        if (agent_a or agent_b) and _AGENT_FACTS.rules(Pair(" . ".join(agent_a), " . ".join(agent_b))) is not None:
            return self.name
        told_a, told_b = [t for t in agent_a if not _open_question(t)], [t for t in agent_b if not _open_question(t)]
        if (told_a or told_b) and _AGENT_SWAP.rules(Pair(" . ".join(told_a), " . ".join(told_b))) is not None:
            return self.name
        if agent_a and agent_b and _AGENT_QUESTION.rules(Pair(agent_a[-1], agent_b[-1])) is not None:
            return self.name
        return Doubt(self.name) if doubted else None


register(ContextGate())
