"""Conversations as requests, per-entry learned thresholds, hashing's exact-only default (issue 13)."""

from __future__ import annotations

import logging

import pytest

from actioncache.semantic import HashingEmbedder, SemanticCache
from actioncache.semantic.calibration import EXACT_ONLY, learned_threshold
from actioncache.stores.memory import MemoryStore

GYM = [
    {"role": "user", "content": "I want to stop paying for my gym membership"},
    {"role": "assistant", "content": "I can cancel your gym membership at FitLife. Shall I go ahead?"},
    {"role": "user", "content": "Yes, cancel it"},
]
STREAMING = [
    {"role": "user", "content": "My streaming subscription is too expensive"},
    {"role": "assistant", "content": "I can cancel your StreamMax subscription. Shall I go ahead?"},
    {"role": "user", "content": "Yes, cancel it"},
]


@pytest.fixture
def sc():
    return SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.5)


def test_the_same_last_message_after_another_conversation_misses(sc):
    entry_id = sc.store(GYM, ["Tool: CancelMembership, Input: 'FitLife'"])
    assert sc.lookup(STREAMING) is None
    assert sc.lookup("Yes, cancel it") is None  # a bare prompt has no context: not the gym chat either
    assert sc.lookup(GYM) == (entry_id, ["Tool: CancelMembership, Input: 'FitLife'"])


def test_an_identical_conversation_hits_exactly_and_a_reworded_last_message_by_similarity(sc):
    entry_id = sc.store(GYM, ["cancel gym"])
    same = [dict(m) for m in GYM]
    same[1]["content"] = "  i can CANCEL your gym membership at FitLife.   shall I go ahead? "  # normalization only
    hit = sc.lookup_hit(same)
    assert hit is not None and hit.exact and hit.entry_id == entry_id
    # A word typed with a deliberate case ("FitLife", "getUserID") keeps it in the exact-match form, so
    # the brand typed in lower case is no exact match; the checks find no difference, and it is served.
    lower = [dict(m) for m in same]
    lower[1]["content"] = same[1]["content"].replace("FitLife", "fitlife")
    hit = sc.lookup_hit(lower)
    assert hit is not None and not hit.exact and hit.entry_id == entry_id
    reworded = GYM[:2] + [{"role": "user", "content": "Yes, please cancel it"}]
    hit = sc.lookup_hit(reworded)
    assert hit is not None and not hit.exact and hit.entry_id == entry_id


def test_both_conversations_keep_their_own_plans(sc):
    gym = sc.store(GYM, ["cancel gym"])
    streaming = sc.store(STREAMING, ["cancel streaming"])
    assert gym != streaming
    assert sc.lookup(GYM)[1] == ["cancel gym"] and sc.lookup(STREAMING)[1] == ["cancel streaming"]


def test_a_one_message_conversation_is_its_prompt(sc):
    entry_id = sc.store("Check the stock of widgets", ["inventory widgets"])
    assert sc.lookup([{"role": "user", "content": "Check the stock of widgets"}])[0] == entry_id


@pytest.mark.parametrize("bad", [[], [{"role": "user"}], [{"role": "user", "content": 3}], ["hello"],
                                 [{"role": "user", "content": "   "}]])
def test_malformed_conversations_are_clear_errors(sc, bad):
    with pytest.raises((TypeError, ValueError), match="message|conversation|list"):
        sc.lookup(bad)


def test_negative_feedback_raises_the_entry_threshold_above_the_failed_similarity():
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.3)
    entry_id = sc.store("Restart the web server", ["systemctl restart nginx"])
    hit = sc.lookup_hit("Restart the web server please")
    assert hit is not None and not hit.exact
    assert sc.update_reward(entry_id, False)  # wrong plan for this rewording
    assert sc.lookup("Restart the web server please") is None
    assert sc.stats()["learned_threshold_rejections"] == 1
    assert sc.lookup("Restart the web server")[0] == entry_id  # the exact path still serves


def test_learned_threshold_follows_the_error_bound():
    assert learned_threshold(0.7, [], 0.05) == 0.7
    one_wrong = learned_threshold(0.7, [(0.82, False)], 0.05)
    assert 0.82 < one_wrong < 0.821
    # Enough right answers above the base bring it back down.
    assert learned_threshold(0.7, [(0.82, False)] + [(0.75, True)] * 30, 0.05) == 0.7
    # A looser bound forgives sooner than a strict one.
    mixed = [(0.82, False)] + [(0.75, True)] * 8
    assert learned_threshold(0.7, mixed, 0.2) <= learned_threshold(0.7, mixed, 0.01)


def test_hashing_without_a_threshold_serves_exact_matches_only(caplog):
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder())
    assert sc.threshold == EXACT_ONLY
    entry_id = sc.store("Restart the web server", ["plan"])
    assert sc.lookup("restart the WEB server") == (entry_id, ["plan"])
    assert sc.lookup("Restart the web server please") is None


def test_the_fallback_warns_once_and_says_how_to_install(monkeypatch, caplog):
    from actioncache.semantic import embedders, embedders_onnx

    def no_model(*args, **kwargs):
        raise embedders.EmbedderError("no model here")

    monkeypatch.setattr(embedders, "SentenceTransformerEmbedder", no_model)
    monkeypatch.setattr(embedders_onnx, "OnnxEmbedder", no_model)
    monkeypatch.setattr(embedders, "_fallback_warned", False)
    with caplog.at_level(logging.WARNING, logger="actioncache.semantic"):
        first = embedders.default_embedder()
        embedders.default_embedder()
    assert isinstance(first, HashingEmbedder)
    warnings = [r.getMessage() for r in caplog.records if "exact matches only" in r.getMessage()]
    assert len(warnings) == 1 and "pip install 'actioncache[semantic]'" in warnings[0]


def test_openai_content_parts_are_joined_and_none_is_empty(sc):
    parts = [
        {"role": "system", "content": None},
        {"role": "user", "content": [{"type": "text", "text": "Water the ferns"}, {"type": "text", "text": "on the porch"}]},
    ]
    entry_id = sc.store(parts, ["garden.water(zone='porch')"])
    same = [{"role": "system", "content": ""}, {"role": "user", "content": "Water the ferns\non the porch"}]
    assert sc.lookup(same)[0] == entry_id


@pytest.mark.parametrize("bad, match", [
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x.png"}}]}], "'image_url'.*text only"),
    ([{"role": "user", "content": [{"type": "text", "text": "hi"}, "raw"]}], "type 'str'"),
    ([{"role": "user", "content": "hi"}, {"content": "again"}], r"messages\[1\] has no 'role'"),
    ([{"role": "user"}], r"messages\[0\] has no 'content'"),
    ([{"role": "", "content": "hi"}], r"messages\[0\]'s 'role'"),
    ([{"role": "user", "content": 7}], r"messages\[0\]'s 'content'"),
    ([{"role": "user", "content": None}], "last message .* has no text"),
])
def test_malformed_messages_name_the_index_and_the_fix(sc, bad, match):
    with pytest.raises(ValueError, match=match):
        sc.lookup(bad)
    with pytest.raises(ValueError, match=match):
        sc.store(bad, ["plan"])


@pytest.mark.parametrize("role", ["assistant", "system", "tool"])
def test_the_role_of_the_last_message_counts(sc, role):
    users = sc.store([{"role": "user", "content": "close my savings account"}], ["bank.close('savings')"])
    said_by_other = [{"role": role, "content": "close my savings account"}]
    assert sc.lookup(said_by_other) is None
    assert sc.lookup("close my savings account")[0] == users
    # stored with another role, it is not a plain prompt either
    other = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.5)
    other.store(said_by_other, ["noop"])
    assert other.lookup("close my savings account") is None
    assert other.lookup(said_by_other) is not None


def test_odd_prompts_are_clear_errors(sc):
    with pytest.raises(ValueError, match="empty or only whitespace"):
        sc.lookup(" \n\t")
    with pytest.raises(TypeError, match="decode it first"):
        sc.store(b"fetch the report", ["plan"])
    with pytest.raises(TypeError, match="not an empty list"):
        sc.lookup([])
    with pytest.raises(TypeError, match="not NoneType"):
        sc.lookup(None)


@pytest.mark.parametrize("ttl", [0, -5])
def test_a_non_positive_ttl_names_the_semantic_fix(ttl):
    with pytest.raises(ValueError, match=r"ttl=None") as info:  # ttl= is the one spelling now (ttl_seconds= warns)
        SemanticCache(MemoryStore(), embedder=HashingEmbedder(), ttl=ttl)
    assert "cache_enabled" not in str(info.value)
