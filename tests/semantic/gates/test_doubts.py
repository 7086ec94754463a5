"""Doubts: a rule that finds a detail said differently (a number, a date, a modal, an extra clause, a
condition, a person, a comparison) refuses unless the cross-encoder, reading both requests, is sure
they are one; a rule that finds the meaning turned (negation, antonym, roles, names, code) refuses
whatever the cross-encoder says."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.semantic import SemanticCache
from actioncache.semantic.guard import RULE, VERIFIER, Pair, Pipeline, contrast
from actioncache.semantic.guard.pipeline import DOUBTS
from actioncache.stores.memory import MemoryStore

# Should-hit pairs of the outside writers' tuning sets that a doubt alone refused.
SETTLED = [
    ("Create a Grafana alert when CPU usage stays above 90% for 5 minutes.",
     "Set up an alert in Grafana that fires if CPU is over ninety percent for five straight minutes.", "number"),
    ("Book a massage for Saturday afternoon.",
     "This week has been absolutely brutal 😮‍💨 Could you book me a massage for Saturday afternoon?", "date"),
    ("Rewrite this email to sound less angry.",
     "lol ok I wrote this email while I was fuming and now I realise it's... a lot. can you rewrite it so it "
     "sounds less angry? 😬", "modality"),
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
        return self.name if self.fires else None


class _Settler:
    kind, name = VERIFIER, "sure"

    def __init__(self, sure: bool) -> None:
        self.sure = sure

    def __call__(self, pair: Pair) -> str | None:
        return None

    def settles(self, pair: Pair) -> bool:
        return self.sure


_NAMES = sorted(DOUBTS) + ["negation", "opposite", "role", "entity", "code_exact"]


@given(st.lists(st.tuples(st.sampled_from(_NAMES), st.booleans()), min_size=1, max_size=6, unique_by=lambda t: t[0]),
       st.sampled_from(["none", "sure", "unsure"]))
def test_a_candidate_passes_only_without_a_turned_meaning_and_with_every_doubt_settled(findings, settler):
    rules = [_Finding(name, fires) for name, fires in findings]
    gates = rules + ([] if settler == "none" else [_Settler(settler == "sure")])
    pipeline = Pipeline(gates)
    fired = [name for name, fires in findings if fires]
    vetoed = any(name not in DOUBTS for name in fired)
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


# Conversations of the outside writers' tuning set v4b whose user turns differ only in details said
# otherwise ("since yesterday's deploy" / "ever since we deployed yesterday").
SETTLED_HISTORIES = [
    ([{"role": "user", "content": "Our website has been slow since yesterday's deploy."},
      {"role": "assistant", "content": "Do you have monitoring in place?"},
      {"role": "user", "content": "Yes, Datadog. Which metrics should I look at first?"}],
     [{"role": "user", "content": "site's been sluggish ever since we deployed yesterday"},
      {"role": "assistant", "content": "Are you running any monitoring?"},
      {"role": "user", "content": "yep we use datadog — what metrics should I check first?"}]),
    ([{"role": "user", "content": "My team's offsite is in October in Denver."},
      {"role": "assistant", "content": "Sounds fun. How many people?"},
      {"role": "user", "content": "Twelve. Suggest some team activities."}],
     [{"role": "user", "content": "we're doing a team offsite in denver this october"},
      {"role": "assistant", "content": "How many attendees?"},
      {"role": "user", "content": "12 people. activity suggestions?"}]),
]


@pytest.mark.parametrize("stored, request_messages", SETTLED_HISTORIES)
def test_histories_that_differ_only_in_doubts_are_settled_by_a_sure_cross_encoder(model, stored, request_messages):
    sure = _cache(model)
    sure.store(stored, ["plan"])
    assert sure.lookup(request_messages) is not None
    plain = _cache(model, verifier="learned", threshold=sure.threshold)
    plain.store(stored, ["plan"])
    assert plain.lookup(request_messages) is None
    assert plain.stats()["rejections"].get("context") == 1  # nothing settles the doubt: the context gate refuses


@pytest.mark.parametrize("change", [
    ("Do you have monitoring in place?", "Do you have monitoring in place? We only keep 2 days of metrics."),
    ("Yes, Datadog.", "No, nothing yet."),
    ("since yesterday's deploy", "since last month's deploy"),
])
def test_a_history_with_a_fact_changed_still_refuses_whatever_the_cross_encoder_says(model, change):
    stored, _ = SETTLED_HISTORIES[0]
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
        from actioncache.semantic.guard.pipeline import Doubt

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
