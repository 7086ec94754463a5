"""Doubts: a finding that may not change the plan (a number or a day that only one side tells: the
story around the request) refuses unless the cross-encoder, reading both requests, is sure they are
one; so does a candidate below the embedder's own calibrated threshold. Every other finding (another
value on both sides, a negation, an antonym, roles, names, code, a new clause) refuses whatever the
cross-encoder says, and a request with no words is answered by its exact form only."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.semantic import SemanticCache
from actioncache.semantic.guard import RULE, VERIFIER, Pair, Pipeline, contrast
from actioncache.semantic.guard.registry import Doubt
from actioncache.stores.memory import MemoryStore

# Should-hit pairs of the outside writers' tuning sets that a one-sided number or day alone refused.
SETTLED = [
    ("Find the nearest EV charging station.",
     "Battery's at 12% and I'm getting anxious 😅 where's the closest EV charger?", "number"),
    ("Write a haiku about autumn.",
     "Feeling a bit poetic this rainy morning ☔ — would you write me a haiku about autumn?", "date"),
    ("Find a cheap flight to Orlando for Thanksgiving.",
     "Thanksgiving at my in-laws this year, yay... 😬 anyway could you find me a cheap flight to Orlando for it?",
     "date"),
]


def _cache(model, **options) -> SemanticCache:
    return SemanticCache(MemoryStore(), embedder=model, namespace="doubts", **options)


@pytest.mark.parametrize("stored, request_text, doubt", SETTLED)
def test_a_doubt_the_cross_encoder_is_sure_of_is_settled_and_without_it_refuses(model, stored, request_text, doubt):
    assert contrast(request_text, stored) == doubt  # the rule still finds it
    sure = _cache(model)
    sure.store(stored, ["plan"])
    assert sure.lookup(request_text) is not None
    for verifier in ("learned", None):  # nothing that can settle a doubt: the rule refuses as before
        plain = _cache(model, verifier=verifier, threshold=sure.threshold)
        plain.store(stored, ["plan"])
        before = plain.stats()["rejections"].get(doubt, 0)
        assert plain.lookup(request_text) is None
        assert plain.stats()["rejections"].get(doubt, 0) == before + 1


@pytest.mark.parametrize("stored, request_text", [
    ("Turn on dark mode", "switch dark mode off, back to light"),  # the cross-encoder scores it 0.99
    ("book a table for 4 at 7pm", "book a table for 5 at 7pm"),
    ("delete the staging database", "don't delete the staging database"),
    ("send $500 to Alice", "send $500 to Bob"),
    # another day on both sides: never a doubt, though the cross-encoder scores these 0.9 and more
    ("schedule the standup for tomorrow at 9am", "schedule the standup for today at 9am"),
    ("cancel today's standup", "cancel tomorrow's standup"),
    ("what's the weather in Paris today", "what's the weather in Paris tomorrow"),
    # another modal on both sides
    ("we must patch the servers tonight", "we could patch the servers tonight"),
    # below the embedding's own threshold (0.67) and not a sure reading: a look is not an act
    ("check the status of nginx", "restart nginx"),
])
def test_a_turned_meaning_or_a_doubt_it_is_not_sure_of_still_refuses(model, stored, request_text):
    cache = _cache(model)
    cache.store(stored, ["plan"])
    assert cache.lookup(request_text) is None


class _Finding:
    kind = RULE

    def __init__(self, name: str, fires: bool) -> None:
        self.name, self.fires = name, fires

    def __call__(self, pair: Pair) -> str | None:
        if not self.fires:
            return None
        return Doubt(self.name) if self.name in _DOUBTING else self.name


class _Settler:
    kind, name = VERIFIER, "sure"

    def __init__(self, sure: bool) -> None:
        self.sure = sure

    def __call__(self, pair: Pair) -> str | None:
        return None

    def settles(self, pair: Pair) -> bool:
        return self.sure


_DOUBTING = ("number", "date")  # the stand-in rules that answer a Doubt
_NAMES = [*_DOUBTING, "negation", "opposite", "role", "entity", "code_exact"]


@given(st.lists(st.tuples(st.sampled_from(_NAMES), st.booleans()), min_size=1, max_size=6, unique_by=lambda t: t[0]),
       st.sampled_from(["none", "sure", "unsure"]))
def test_a_candidate_passes_only_without_a_turned_meaning_and_with_every_doubt_settled(findings, settler):
    rules = [_Finding(name, fires) for name, fires in findings]
    gates = rules + ([] if settler == "none" else [_Settler(settler == "sure")])
    pipeline = Pipeline(gates)
    fired = [name for name, fires in findings if fires]
    vetoed = any(name not in _DOUBTING for name in fired)
    settled = settler == "sure"
    screened = pipeline.check(Pair("a", "b"), verify=False)
    verified = pipeline.check(Pair("a", "b"))
    # Served only when nothing turned the meaning and every doubt (if any) was settled.
    assert (verified is None) == (not vetoed and (not fired or settled))
    # The screen lets a doubted candidate through only when a verifier may settle it later.
    assert (screened is None) == (not vetoed and (not fired or settler != "none"))
    # The reason named is the first finding in the rules' order, as contrast() has always named it.
    if verified is not None:
        assert verified[0] == fired[0]
    assert pipeline.rules(Pair("a", "b")) == (fired[0] if fired else None)


def _conversation(history: str, asked: str, request: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": history}, {"role": "assistant", "content": asked},
            {"role": "user", "content": request}]


SETTLED_HISTORIES = [  # a reworded history whose request is the same (tuning set v4b's own rewording)
    (_conversation("I'm moving from London to Berlin next month.", "Big move! What do you need help with?",
                   "What do I need to do to register my address there?"),
     _conversation("relocating london -> berlin in a few weeks", "Exciting. How can I help?",
                   "how do I do the address registration thing in Berlin?")),
]


@pytest.mark.parametrize("stored, request_messages", SETTLED_HISTORIES)
def test_a_reworded_history_with_the_same_facts_is_served(model, stored, request_messages):
    cache = _cache(model)
    cache.store(stored, ["plan"])
    assert cache.lookup(request_messages) is not None


def test_a_history_that_tells_a_number_the_other_leaves_out_is_a_doubt_for_the_cross_encoder(model):
    stored = _conversation("We have 3 kids and a dog.", "What do you need?", "Suggest a family car.")
    asked = _conversation("we have kids and a dog", "How can I help?", "suggest a family car")
    for verifier, reason in (("auto", "cross"), (None, "context")):
        cache = _cache(model, verifier=verifier, threshold=0.55)
        cache.store(stored, ["plan"])
        assert cache.lookup(asked) is None
        # with the cross-encoder the doubt reaches it (not sure: 3 kids may matter); without it the context gate refuses
        assert cache.stats()["rejections"] == {reason: 1}


@pytest.mark.parametrize("change", [
    ("Do you have monitoring in place?", "Do you have monitoring in place? We only keep 2 days of metrics."),
    ("Yes, Datadog.", "No, nothing yet."),
    ("since yesterday's deploy", "since last month's deploy"),
])
def test_a_history_with_a_fact_changed_still_refuses_whatever_the_cross_encoder_says(model, change):
    stored = _conversation("Our website has been slow since yesterday's deploy.", "Do you have monitoring in place?",
                           "Yes, Datadog. Which metrics should I look at first?")
    old, new = change
    changed = [dict(m, content=m["content"].replace(old, new)) for m in stored]
    assert changed != stored
    cache = _cache(model)
    cache.store(stored, ["plan"])
    assert cache.lookup(changed) is None


class _Doubting:
    """A gate after the rules that doubts (as the context gate does), or refuses outright."""

    kind, name = "context", "context"

    def __init__(self, answer: str | None) -> None:
        self.answer = answer

    def __call__(self, pair: Pair) -> str | None:
        return {"doubt": Doubt("context"), "refuse": "context", None: None}[self.answer]


@given(st.sampled_from(["doubt", "refuse", None]), st.sampled_from(["none", "sure", "unsure"]),
       st.sampled_from([None, "number", "negation"]))
def test_a_later_gate_s_doubt_is_settled_like_a_rule_s_and_its_refusal_is_final(answer, settler, rule):
    gates = ([_Finding(rule, True)] if rule else []) + [_Doubting(answer)] + (
        [] if settler == "none" else [_Settler(settler == "sure")])
    pipeline = Pipeline(gates)
    vetoed = rule == "negation" or answer == "refuse" or ((answer == "doubt" or rule == "number") and settler == "none")
    doubted = answer == "doubt" or rule == "number"
    served = not vetoed and (not doubted or settler == "sure")
    assert (pipeline.check(Pair("a", "b")) is None) == served
    screened = pipeline.check(Pair("a", "b"), verify=False)
    assert (screened is None) == (not vetoed)
    if screened is None:  # the lookup then verifies the candidate it would serve
        assert (pipeline.verify(Pair("a", "b")) is None) == served


@pytest.mark.parametrize("stored, other", [("👍", "👎"), ("🔥🔥🔥", "💧💧💧"), ("✅", "❌")])
def test_a_request_with_no_words_is_answered_by_its_exact_form_only(model, stored, other):
    cache = _cache(model)
    cache.store(stored, ["plan"])
    assert cache.lookup(stored) is not None
    assert cache.lookup(other) is None
    asked = [{"role": "user", "content": "delete the stale branches"},
             {"role": "assistant", "content": "Found 14 stale branches. Delete them all?"}]
    cache.store([*asked, {"role": "user", "content": stored}], ["delete"])
    assert cache.lookup([*asked, {"role": "user", "content": stored}]) is not None
    assert cache.lookup([*asked, {"role": "user", "content": other}]) is None


# A number or a day that one side simply leaves out of the same request, the rest alike, wrapped in
# chatter both share: the cross-encoder scores such pairs up to 0.95 (an outside tester's finding),
# so they are no doubts at all. Said in the story around the request, or said otherwise by the other
# side, they still are.
LEFT_OUT = [
    ("hey quick favor, buy 100 shares of AAPL in my brokerage account at market open tomorrow. thanks a ton!",
     "hey quick favor, buy shares of AAPL in my brokerage account at market open tomorrow. thanks a ton!"),
    ("hey quick favor, restart the 3 web servers in staging. thanks a ton!",
     "hey quick favor, restart the web servers in staging. thanks a ton!"),
    ("hey can you remind me to call mom on Friday. thanks!", "hey can you remind me to call mom. thanks!"),
    ("ok so basically pick up 12 cupcakes from the bakery for the party, you're the best",
     "ok so basically pick up cupcakes from the bakery for the party, you're the best"),
    # the detail in a sentence of its own that says little else goes on with the request
    ("buy shares of AAPL. 10 please", "buy shares of AAPL"),
    ("set an alarm for tomorrow. 5:30 please", "set an alarm for tomorrow"),
    ("schedule a meeting with Bob - 8pm please", "schedule a meeting with Bob"),
    ("hey quick favor, buy shares of AAPL. for 6. thanks a ton!", "hey quick favor, buy shares of AAPL thanks a ton!"),
]


@pytest.mark.parametrize("with_detail, without", LEFT_OUT)
def test_a_detail_left_out_of_the_same_request_is_no_doubt_and_refuses(model, with_detail, without):
    for stored, asked in ((with_detail, without), (without, with_detail)):
        reason = contrast(asked, stored)
        assert reason in ("number", "date") and not isinstance(reason, Doubt), (stored, asked, reason)
        cache = _cache(model)
        cache.store(stored, ["plan"])
        assert cache.lookup(asked) is None


@pytest.mark.parametrize("a, b", [
    ("Battery's at 12% and I'm getting anxious 😅 where's the closest EV charger?", "Find the nearest EV charging station."),
    ("yo can u pull up git log for like the past 7 days", "Show the git log for the last week."),  # said otherwise
    ("so excited, we fly to Lisbon next week 🎉 what is a good phrasebook app?", "what is a good phrasebook app?"),
])
def test_a_detail_told_around_the_request_or_said_otherwise_is_a_doubt(a, b):
    reason = contrast(a, b)
    assert isinstance(reason, Doubt), (a, b, reason)
