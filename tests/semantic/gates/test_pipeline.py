"""One registry and one pipeline of gates; guard= and verifier= are gates of it; gates= takes the list."""

from __future__ import annotations

import pytest

from actioncache.semantic import HashingEmbedder, SemanticCache
from actioncache.semantic.guard import CONTRAST_CHECKS, GATES, RULE, VERIFIER, Pair, Pipeline, register
from actioncache.stores.memory import MemoryStore


def _cache(**options):
    return SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.3, **options)


def test_every_default_check_is_registered_with_a_docstring():
    for name in CONTRAST_CHECKS:
        gate = GATES[name]
        assert gate.name == name and gate.kind == RULE
        assert (gate.__doc__ or type(gate).__doc__ or "").strip()


def test_the_default_pipeline_refuses_and_counts_by_reason():
    sc = _cache()
    sc.store("turn on the porch light", ["on"])
    assert sc.lookup("turn off the porch light") is None
    assert sc.stats()["rejections"] == {"opposite": 1}
    assert sc.pipeline.names[: len(CONTRAST_CHECKS)] == tuple(CONTRAST_CHECKS)


def test_gates_take_names_and_own_gates_in_order():
    class NoFridays:
        name, kind = "no_fridays", RULE

        def __call__(self, pair: Pair) -> str | None:
            return self.name if "friday" in pair.candidate else None

    sc = _cache(gates=["negation", NoFridays()])
    sc.store("plan the offsite for friday", ["friday"])
    assert sc.lookup("plan the offsite for friday please") is None
    assert sc.stats()["rejections"] == {"no_fridays": 1}
    sc.store("plan the offsite", ["offsite"])
    assert sc.lookup("don't plan the offsite") is None  # negation still on
    assert sc.lookup("please plan the offsite") is not None  # the other checks are off


def test_old_options_become_gates():
    calls = []

    def verifier(request, hit):
        calls.append((request, hit.prompt))
        return False

    sc = _cache(guard=lambda a, b: "berlin" not in b, verifier=verifier, verify_margin=2.0)
    assert [g.kind for g in sc.pipeline.gates] == [RULE, VERIFIER]
    sc.store("weather report for berlin", ["berlin"])
    assert sc.lookup("weather report for berlin today") is None
    sc.store("weather report for rome", ["rome"])
    assert sc.lookup("weather report for rome today") is None
    assert calls == [("weather report for rome today", "weather report for rome")]
    assert sc.stats()["rejections"] == {"guard": 1, "verifier": 1}


def test_gates_and_the_old_options_together_are_refused():
    with pytest.raises(ValueError, match="either gates"):
        _cache(gates=["negation"], guard=None)
    with pytest.raises(ValueError, match="no gate named 'nope'"):
        _cache(gates=["nope"])


def test_a_gate_that_raises_refuses():
    class Broken:
        name, kind = "broken", VERIFIER

        def __call__(self, pair):
            raise RuntimeError("model file missing")

    pipeline = Pipeline([Broken()])
    assert pipeline.check(Pair("a", "b"))[0] == "broken"


def test_a_second_gate_of_the_same_name_is_refused():
    class Twin:
        name, kind = "negation", RULE

        def __call__(self, pair):
            return None

    with pytest.raises(ValueError, match="already registered"):
        register(Twin())
