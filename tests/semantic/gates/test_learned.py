"""The learned verifier (the token-state head, verifier="learned"): shipped as ONNX, reading the token
states of the embedding's own run and the features an entry stores; off with verifier=None."""

from __future__ import annotations

import json

import numpy as np
import pytest

from actioncache.semantic import HashingEmbedder, SemanticCache
from actioncache.semantic.guard import VERIFIER, Pair
from actioncache.stores.memory import MemoryStore


@pytest.fixture(scope="module")
def learned():
    from actioncache.semantic import learned

    if not learned.available():
        pytest.fail("the learned verifier's model files must ship in actioncache/semantic/data")
    return learned


def test_the_model_ships_small_with_its_operating_point(learned):
    from importlib import resources

    data = resources.files("actioncache.semantic").joinpath("data")
    meta = json.loads(data.joinpath("verifier.json").read_text())
    size = sum(len(data.joinpath(n).read_bytes()) for n in ("verifier_project.onnx", "verifier_pair.onnx"))
    assert size < 1_000_000
    assert 0.0 < meta["min_score"] < 1.0 and meta["embedder"] == learned.ENCODER == "onnx-qint7:all-MiniLM-L6-v2"


def test_it_is_on_when_asked_with_any_embedder_and_off_by_default_with_another(model, learned):
    sc = SemanticCache(MemoryStore(), embedder=model, verifier="learned")
    gates = [g for g in sc.pipeline.gates if g.kind == VERIFIER]
    assert [g.name for g in gates] == ["learned"]
    assert not [g for g in SemanticCache(MemoryStore(), embedder=model, verifier=None).pipeline.gates if g.kind == VERIFIER]
    # another embedder: off by default (its states would cost a second model run), on when asked
    assert not [g for g in SemanticCache(MemoryStore(), embedder=HashingEmbedder()).pipeline.gates if g.kind == VERIFIER]
    with_hashing = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), verifier="learned")
    assert [g.name for g in with_hashing.pipeline.gates if g.kind == VERIFIER] == ["learned"]


def test_an_entry_keeps_its_features_and_a_lookup_reads_them(model, learned):
    sc = SemanticCache(MemoryStore(), embedder=model, verifier="learned")
    entry = sc.store("restart the payments service in production", ["restart"])
    stored = sc.get(entry)
    value, _ = sc._records.get(f"semantic:default:{entry}")
    assert value["verifier"]["id"] == f"{sc._learned.id}/onnx-qint7:all-MiniLM-L6-v2"  # the head's and its encoder's
    features = sc._learned.decode(value["verifier"])
    assert features.shape[1] == sc._learned.meta["features"]
    assert stored["prompt"] == "restart the payments service in production"
    assert sc.lookup("please restart the payments service in production") is not None


def test_its_probability_orders_a_paraphrase_above_a_swap(model, learned):
    verifier = learned.LearnedVerifier(encoder=model)

    def score(a, b):
        va, vb = model.embed([a])[0], model.embed([b])[0]
        return verifier.probability(verifier.features(a), verifier.features(b), float(va @ vb))

    same = score("restart the payments service in production", "restart payments in production")
    other = score("restart the payments service in production", "restart the payments service in staging")
    assert 0.0 <= other < same <= 1.0


def test_a_refusal_is_counted_and_a_broken_model_refuses(model, learned):
    verifier = learned.LearnedVerifier(encoder=model, min_score=1.0)  # refuses everything
    sc = SemanticCache(MemoryStore(), embedder=model, verifier=verifier)
    sc.store("list the open pull requests in acme/api", ["gh.pr_list('acme/api')"])
    assert sc.lookup("show the open pull requests in acme/api") is None
    assert sc.stats()["rejections"] == {"learned": 1} and sc.stats()["verifier_rejections"] == 1
    broken = learned.LearnedVerifier(encoder=model)
    broken.project = lambda states: np.zeros((0,))  # a damaged model: the pair model cannot run
    from actioncache.semantic.guard import Pipeline

    assert Pipeline([broken]).check(Pair("a b", "a c", 0.9))[0] == "learned"


def test_a_bad_operating_point_is_a_clear_error(learned):
    with pytest.raises(ValueError, match="min_score"):
        learned.LearnedVerifier(min_score=1.5)
    with pytest.raises(ValueError, match="verifier must be"):
        SemanticCache(MemoryStore(), embedder=HashingEmbedder(), verifier="gpt")


def test_features_projected_from_another_encoders_states_are_projected_again(model, learned):
    """An entry's features name the head and the encoder whose states it projected: features of an
    earlier recipe of the int8 model (the head's id alone) are never read as this encoder's."""
    verifier = learned.LearnedVerifier(encoder=model)
    stored = verifier.encode(np.ones((3, verifier.meta["features"]), np.float32))
    assert verifier.decode(stored) is not None
    assert verifier.decode({**stored, "id": verifier.id}) is None
    assert verifier.decode({**stored, "id": f"{verifier.id}/onnx-qint8:all-MiniLM-L6-v2"}) is None
