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
