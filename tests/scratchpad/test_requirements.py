"""Seed 004's functional requirements FR-002..FR-013 and FR-015, on every backend."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.scratchpad import (
    InvalidArgumentError,
    ItemNotFoundError,
    ItemTooLargeError,
    QuotaExceededError,
    Scratchpad,
    StoreUnavailableError,
)
from actioncache.scratchpad.scratchpad import DEFAULT_ITEM_LIMIT, DEFAULT_SESSION_QUOTA

from .conftest import item_cost, new_session

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)


def _iso(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- FR-002: keys ------------------------------------------------------------------------------

def test_fr002_key_is_session_task_turn_with_random_8_char_ids(pad):
    meta = pad.write({"x": 1}, "first")
    session, task, turn = meta["storageKey"].rsplit("_", 2)
    assert session == pad.session_id == meta["sessionId"]
    assert (task, turn) == (meta["taskId"], meta["turnId"])
    assert re.fullmatch(r"[A-Za-z0-9]{8}", task) and re.fullmatch(r"[A-Za-z0-9]{8}", turn)
    other = pad.write({"x": 2}, "second")
    assert other["storageKey"] != meta["storageKey"]


def test_fr002_given_task_and_turn_ids_are_used(pad):
    meta = pad.write([1, 2], "given ids", task_id="emails", turn_id="t-3")
    assert meta["storageKey"] == f"{pad.session_id}_emails_t-3"
    assert pad.read(meta["storageKey"])["data"] == [1, 2]


@pytest.mark.parametrize("bad", ["", "has_underscore", "x" * 33, "sp ace", "a*", "é"])
def test_fr002_invalid_task_or_turn_id_is_refused(pad, bad):
    with pytest.raises(InvalidArgumentError, match="task_id"):
        pad.write(1, "d", task_id=bad)
    with pytest.raises(InvalidArgumentError, match="turn_id"):
        pad.write(1, "d", turn_id=bad)
    assert pad.list() == []


# --- FR-003 / FR-006: any JSON value round-trips; non-JSON is refused ----------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=json_values)
def test_fr003_fr006_any_json_value_round_trips(sqlite_store, value):
    pad = Scratchpad(sqlite_store, "roundtrip")
    meta = pad.write(value, "a JSON value")
    got = pad.read(meta["storageKey"])
    assert got["data"] == value
    assert got["storageKey"] == meta["storageKey"] and got["description"] == "a JSON value"


@pytest.mark.parametrize("value", [{1, 2}, object(), float("nan"), {"b": b"bytes"}])
def test_fr003_non_json_data_is_refused_and_nothing_stored(pad, value):
    with pytest.raises(InvalidArgumentError, match="data must be JSON"):
        pad.write(value, "not json")
    assert pad.list() == []


def test_fr003_custom_metadata_is_kept_and_bounded(pad):
    meta = pad.write("x", "tagged", metadata={"source": "gmail", "n": 3})
    assert meta["metadata"] == {"source": "gmail", "n": 3}
    assert pad.list()[0]["metadata"] == {"source": "gmail", "n": 3}
    with pytest.raises(InvalidArgumentError, match="metadata"):
        pad.write("x", "too much", metadata={"blob": "y" * 400})
    with pytest.raises(InvalidArgumentError, match="metadata"):
        pad.write("x", "not an object", metadata=["a"])


# --- FR-004 / FR-005: metadata and metadata-only answers ----------------------------------------

def test_fr004_metadata_fields(pad):
    data = {"summary": "Q4 budget is approved", "words": 150}
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    meta = pad.write(data, "Email from John re: Q4 budget - 150 words", task_id="mail", turn_id="t1",
                     metadata={"from": "john"})
    assert meta["description"] == "Email from John re: Q4 budget - 150 words"
    assert before <= _iso(meta["timestamp"]) <= dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
    assert meta["dataSize"] == len(json.dumps(data, separators=(",", ":")).encode())
    assert (meta["sessionId"], meta["taskId"], meta["turnId"]) == (pad.session_id, "mail", "t1")
    assert meta["metadata"] == {"from": "john"}


def test_fr005_write_returns_metadata_only(pad):
    meta = pad.write({"secret_payload": "PAYLOAD-MARKER"}, "payload")
    assert "data" not in meta
    assert "PAYLOAD-MARKER" not in json.dumps(meta)
    answer = pad.handle_tool_call("scratchpad_write", {"data": "PAYLOAD-MARKER-2", "description": "d"})
    assert "PAYLOAD-MARKER-2" not in answer and json.loads(answer)["success"] is True


def test_fr006_read_5kb_item_returns_full_object_with_metadata(pad):
    data = {"text": "lorem ipsum " * 426}
    meta = pad.write(data, "5 KB result")
    got = pad.read(meta["storageKey"])
    assert got["data"] == data
    assert got["dataSize"] == meta["dataSize"] > 5000
    assert {k: got[k] for k in meta} == meta


def test_fr006_repeated_reads_are_stable(pad):
    keys = [pad.write({"i": i}, f"item {i}")["storageKey"] for i in range(5)]
    for _ in range(2):
        assert [pad.read(k)["data"]["i"] for k in keys] == list(range(5))


# --- FR-007 / FR-008: list and delete ----------------------------------------------------------

def test_fr007_list_returns_every_item_metadata_without_data(pad):
    written = [pad.write({"body": f"BODY-{i}"}, f"item {i}")["storageKey"] for i in range(4)]
    listed = pad.list()
    assert sorted(m["storageKey"] for m in listed) == sorted(written)
    assert "BODY-" not in json.dumps(listed)
    assert all("data" not in m for m in listed)


def test_fr008_delete_removes_one_item(pad):
    keep = pad.write("keep", "keep")["storageKey"]
    gone = pad.write("gone", "gone")["storageKey"]
    assert pad.delete(gone)["storageKey"] == gone
    assert [m["storageKey"] for m in pad.list()] == [keep]
    with pytest.raises(ItemNotFoundError):
        pad.read(gone)
    with pytest.raises(ItemNotFoundError):
        pad.delete(gone)


# --- FR-009 / FR-010: size limits --------------------------------------------------------------

def test_fr009_default_item_limit_is_5_mb_and_refusal_suggests_chunking(pad):
    assert pad.item_limit_bytes == DEFAULT_ITEM_LIMIT == 5 * 1024 * 1024
    with pytest.raises(ItemTooLargeError, match="(?i)split it into chunks") as err:
        pad.write("x" * DEFAULT_ITEM_LIMIT, "too big by the two quotes")
    assert "5.00 MB" in str(err.value)
    assert pad.list() == []


def test_fr009_item_exactly_at_the_limit_is_accepted(store):
    pad = Scratchpad(store, new_session(), item_limit_bytes=1000)
    assert pad.write("x" * 998, "exactly 1000 bytes as JSON")["dataSize"] == 1000
    with pytest.raises(ItemTooLargeError):
        pad.write("x" * 999, "1001 bytes")


def test_fr010_session_quota_refuses_the_write_that_would_pass_it(store):
    assert Scratchpad(store, "q").session_quota_bytes == DEFAULT_SESSION_QUOTA == 50 * 1024 * 1024
    pad = Scratchpad(store, new_session(), session_quota_bytes=3 * item_cost(store, "x" * 998, "part 0") + 400)
    keys = [pad.write("x" * 998, f"part {i}")["storageKey"] for i in range(3)]
    with pytest.raises(QuotaExceededError, match="(?i)delete items you no longer need"):
        pad.write("y", "one byte too many")
    assert len(pad.list()) == 3
    # Replacing an item counts its new size, not old + new.
    pad.update(keys[0], "z" * 998)
    pad.write("x" * 998, "same key again", task_id=keys[1].rsplit("_", 2)[1], turn_id=keys[1].rsplit("_", 2)[2])
    # Freeing space lets writes through again.
    pad.delete(keys[2])
    assert pad.write("w" * 998, "fits again")["dataSize"] == 1000
    assert pad.usage()["dataBytes"] == 3000


# --- FR-011: descriptions ------------------------------------------------------------------------

def test_fr011_description_over_300_chars_is_cut_with_an_ellipsis(pad):
    exact = "a" * 300
    assert pad.write(1, exact)["description"] == exact
    cut = pad.write(1, "b" * 301)["description"]
    assert len(cut) == 300 and cut.endswith("\u2026") and cut[:299] == "b" * 299


@pytest.mark.parametrize("bad", ["", "   ", None, 42])
def test_fr011_missing_description_is_refused(pad, bad):
    with pytest.raises(InvalidArgumentError, match="description is required"):
        pad.write(1, bad)


# --- FR-012: session end and orphan cleanup ------------------------------------------------------

def test_fr012_end_session_removes_every_item(store):
    pad = Scratchpad(store, new_session())
    other = Scratchpad(store, new_session())
    for i in range(15):  # the seed's scenario: 15 items totalling 2 MB
        pad.write({"i": i, "pad": "x" * 140_000}, f"item {i}")
    assert 2_000_000 < pad.usage()["dataBytes"] < 2_200_000
    kept = other.write("other session", "survives")["storageKey"]
    assert pad.end_session() == 15
    assert pad.list() == []
    assert Scratchpad(store, pad.session_id).list() == []
    assert other.read(kept)["data"] == "other session"


def test_fr012_cleanup_orphans_removes_idle_sessions_only(store):
    import time

    from actioncache.scratchpad import cleanup_orphans

    idle = Scratchpad(store, new_session("idle"))
    active = Scratchpad(store, new_session("active"))
    idle_keys = [idle.write(i, f"idle {i}")["storageKey"] for i in range(3)]
    time.sleep(0.6)
    active_key = active.write("a", "active")["storageKey"]
    # The default age is 24 hours: nothing here is that old.
    assert idle.session_id not in cleanup_orphans(store)["deleted_sessions"]
    result = idle.cleanup_orphans(older_than=dt.timedelta(seconds=0.5))
    assert idle.session_id in result["deleted_sessions"]
    assert active.session_id not in result["deleted_sessions"]
    for key in idle_keys:
        with pytest.raises(ItemNotFoundError):
            idle.read(key)
    assert active.read(active_key)["data"] == "a"
    # A crashed session seen a day later.
    later = cleanup_orphans(store, 24 * 3600, now=time.time() + 25 * 3600)
    assert active.session_id in later["deleted_sessions"] and active.list() == []


def test_fr012_cleanup_orphans_finds_items_whose_index_is_missing(sqlite_store):
    """A crash between an item's put and its index's put leaves an item with no index entry."""
    import time

    from actioncache.scratchpad import cleanup_orphans

    pad = Scratchpad(sqlite_store, "crashed")
    key = pad.write("orphan", "left behind")["storageKey"]
    sqlite_store.delete("scratch-session:crashed")  # the documented index key, as a crash leaves it
    assert [m["storageKey"] for m in pad.list()] == [key]
    assert cleanup_orphans(sqlite_store, 3600)["deleted_sessions"] == []
    result = cleanup_orphans(sqlite_store, 3600, now=time.time() + 7200)
    assert result == {"success": True, "deleted_sessions": ["crashed"], "deleted_items": 1}
    assert pad.list() == []


def test_fr012_cleanup_orphans_skips_a_session_being_written(sqlite_store):
    from actioncache.scratchpad import cleanup_orphans

    pad = Scratchpad(sqlite_store, "busy-session")
    pad.write(1, "one")
    token = sqlite_store.acquire_lease("scratchpad:busy-session", 30)  # a writer in the middle of a write
    try:
        assert cleanup_orphans(sqlite_store, 0)["deleted_sessions"] == []
    finally:
        sqlite_store.release_lease("scratchpad:busy-session", token)
    assert cleanup_orphans(sqlite_store, 0)["deleted_sessions"] == ["busy-session"]


def test_fr012_an_unused_session_goes_with_the_expiry_cleanup_and_the_next_sweep(store):
    """Backstop when nobody ends the session: an unused session's marker expires (the store's expiry
    cleanup removes it) and the next orphan sweep then removes its items by their write times. The
    items themselves carry no expiry date: a session in use keeps them (test_usage_and_sessions)."""
    import time

    from actioncache.scratchpad import cleanup_orphans

    pad = Scratchpad(store, new_session(), retention_s=60)
    pad.write("x" * 998, "expires")
    later = time.time() + 3 * 24 * 3600
    assert store.delete_expired(later) == 1  # the marker only
    assert len(pad.list()) == 1
    assert cleanup_orphans(store, 24 * 3600, now=later)["deleted_sessions"] == [pad.session_id]
    assert pad.list() == [] and pad.usage()["usedBytes"] == pad.usage()["dataBytes"] == 0


# --- FR-013: update ----------------------------------------------------------------------------

def test_fr013_update_keeps_ids_and_refreshes_timestamp(pad):
    meta = pad.write({"done": list(range(10))}, "10 items processed", task_id="batch", metadata={"k": 1})
    updated = pad.update(meta["storageKey"], {"done": list(range(15))}, description="15 items processed")
    assert updated["storageKey"] == meta["storageKey"]
    assert (updated["sessionId"], updated["taskId"], updated["turnId"]) == (meta["sessionId"], "batch", meta["turnId"])
    assert updated["description"] == "15 items processed"
    assert _iso(updated["timestamp"]) >= _iso(meta["timestamp"])
    assert updated["createdAt"] == meta["timestamp"]
    assert updated["metadata"] == {"k": 1}
    assert pad.read(meta["storageKey"])["data"] == {"done": list(range(15))}
    assert len(pad.list()) == 1
    again = pad.update(meta["storageKey"], "final")
    assert again["description"] == "15 items processed" and again["createdAt"] == meta["timestamp"]


def test_fr013_update_of_a_missing_item_says_to_write(pad):
    with pytest.raises(ItemNotFoundError, match="use write"):
        pad.update(f"{pad.session_id}_abc_def", 1)


# --- FR-015: store failures are reported, actionable ------------------------------------------

@pytest.mark.parametrize("url", ["sqlite:////proc/no-such-dir/pad.db", "redis://127.0.0.1:1/0"])
def test_fr015_unavailable_store_is_reported_with_a_fallback(url):
    if url.startswith("redis"):
        pytest.importorskip("redis")
    pad = Scratchpad(url, "s1", lease_wait_s=0.1)
    for call in (lambda: pad.write(1, "d"), pad.list, lambda: pad.read("s1_a_b"), pad.end_session):
        with pytest.raises(StoreUnavailableError, match="(?i)continue the task in context"):
            call()
    answer = json.loads(pad.handle_tool_call("scratchpad_write", {"data": 1, "description": "d"}))
    assert answer["success"] is False and answer["error"] == "store_unavailable"
    assert "in context" in answer["message"]
