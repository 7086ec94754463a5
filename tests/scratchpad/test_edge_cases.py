"""Seed 004's edge cases, and session isolation whatever key a session passes."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.errors import StoreError
from actioncache.scratchpad import (
    CorruptItemError,
    InvalidKeyError,
    ItemNotFoundError,
    QuotaExceededError,
    Scratchpad,
    StoreUnavailableError,
)
from actioncache.stores.base import Entry

from .conftest import item_cost, new_session

# --- quota exceeded: clear error, suggests cleanup ---------------------------------------------

def test_quota_exceeded_answer_tells_the_llm_to_clean_up(store):
    """The quota counts every stored byte (data, metadata, keys): 1,500 + 600 bytes of data do not fit 3,000."""
    pad = Scratchpad(store, new_session(), session_quota_bytes=3000)
    pad.write("x" * 1500, "big")
    answer = json.loads(pad.handle_tool_call("scratchpad_write", {"data": "y" * 600, "description": "more"}))
    assert answer["success"] is False and answer["error"] == "quota_exceeded"
    assert "Delete items you no longer need" in answer["message"] and "nothing was written" in answer["message"]
    assert len(pad.list()) == 1


# --- corrupt entries: error on read, still listed, deletable, logged ----------------------------

def _corrupt(store, pad: Scratchpad, key: str, value: bytes) -> None:
    """Damage the item's stored bytes through the real store, as disk corruption or a foreign writer would."""
    store_key = f"scratch:{pad.session_id}:{key}"
    entry = store.get(store_key)
    store.put(Entry(store_key, value, dict(entry.metadata), entry.created_at, entry.expires_at))


@pytest.mark.parametrize("garbage", [b"j{not json", b"\xff\xfe\x00", b"", b"p" + b"\x00" * 40])
def test_corrupt_item_is_reported_listed_and_deletable(store, caplog, garbage):
    pad = Scratchpad(store, new_session())
    good = pad.write({"ok": True}, "fine")["storageKey"]
    bad = pad.write({"ok": False}, "will be damaged")["storageKey"]
    _corrupt(store, pad, bad, garbage)
    with caplog.at_level(logging.WARNING, logger="actioncache.scratchpad"):
        with pytest.raises(CorruptItemError, match="delete it"):
            pad.read(bad)
    assert any(bad in r.getMessage() for r in caplog.records)
    answer = json.loads(pad.handle_tool_call("scratchpad_read", {"key": bad}))
    assert (answer["success"], answer["error"]) == (False, "corrupt_item")
    assert {m["storageKey"] for m in pad.list()} == {good, bad}
    assert json.loads(pad.handle_tool_call("scratchpad_delete", {"key": bad}))["success"] is True
    assert [m["storageKey"] for m in pad.list()] == [good]
    assert pad.read(good)["data"] == {"ok": True}


def test_corrupt_session_index_is_rebuilt_from_the_items(sqlite_store):
    pad = Scratchpad(sqlite_store, "idx")
    keys = {pad.write(i, f"item {i}")["storageKey"] for i in range(3)}
    sqlite_store.put(Entry("scratch-session:idx", b"j{broken", {}, 0.0, None))
    assert {m["storageKey"] for m in pad.list()} == keys
    assert pad.usage()["dataBytes"] == 3
    pad.write(9, "after repair")
    assert len(pad.list()) == 4


def test_a_foreign_entry_under_the_session_prefix_does_not_break_list(sqlite_store):
    pad = Scratchpad(sqlite_store, "prefixed")
    key = pad.write(1, "real")["storageKey"]
    sqlite_store.put(Entry("scratch:prefixed:not-a-key", b"j1", {}, 0.0, None))
    assert [m["storageKey"] for m in pad.list()] == [key]
    assert pad.end_session() == 2  # everything under the session's prefix goes
    assert sqlite_store.find(pattern="scratch:prefixed:*") == []


def test_an_item_lost_behind_the_index_never_blocks_a_write_and_can_be_deleted(store):
    """A crash between the index put and the item put, or an item removed by hand, leaves an index
    entry without an item: it may show in list, but it never causes a quota refusal."""
    pad = Scratchpad(store, new_session(), session_quota_bytes=3 * item_cost(store, "x" * 998, "will be lost too") + 100)
    lost = pad.write("x" * 998, "will be lost")["storageKey"]
    lost_too = pad.write("x" * 998, "will be lost too")["storageKey"]
    kept = pad.write("x" * 998, "kept")["storageKey"]
    store.delete_many([f"scratch:{pad.session_id}:{lost}", f"scratch:{pad.session_id}:{lost_too}"])
    with pytest.raises(ItemNotFoundError, match="delete it"):
        pad.read(lost)
    assert pad.delete(lost)["storageKey"] == lost  # deleting the leftover entry works
    fresh = [pad.write("y" * 998, f"new {i}")["storageKey"] for i in range(2)]  # the 2nd needs lost_too's room
    assert sorted(m["storageKey"] for m in pad.list()) == sorted([kept, *fresh])
    assert pad.usage()["dataBytes"] == 3000


def test_an_item_whose_index_entry_was_lost_is_listed_again_after_a_recount(store):
    pad = Scratchpad(store, new_session())
    written = {pad.write(i, f"item {i}")["storageKey"]: i for i in range(3)}
    keys = sorted(written)
    store.delete(f"scratch-index:{pad.session_id}:{keys[1]}")  # by hand, or a failure between two puts
    assert pad.read(keys[1])["data"] == written[keys[1]]
    assert pad.usage()["items"] == 3  # the recount finds the item and indexes it again
    assert [m["storageKey"] for m in pad.list()] == keys


class ItemPutLandsThenFails:
    """The real store; a put of an item lands, then reports a failure (a timeout after the server
    applied it). A wrapper, not a stand-in: every call reaches the store."""

    def __init__(self, store) -> None:
        self._store = store

    def __getattr__(self, name):
        return getattr(self._store, name)

    def put(self, entry):
        self._store.put(entry)
        if entry.key.startswith("scratch:"):
            raise StoreError("the put timed out (it landed)")

    def put_fenced(self, entry, lease, token):  # a write under the session lease
        stored = self._store.put_fenced(entry, lease, token)
        if entry.key.startswith("scratch:"):
            raise StoreError("the put timed out (it landed)")
        return stored


def test_a_write_that_fails_after_its_item_landed_leaves_no_item_behind(store):
    pad = Scratchpad(ItemPutLandsThenFails(store), new_session())
    with pytest.raises(StoreUnavailableError):
        pad.write({"half": "written"}, "fails after landing")
    assert store.find(pattern=f"scratch:{pad.session_id}:*") == []
    assert Scratchpad(store, pad.session_id).list() == []
    assert Scratchpad(store, pad.session_id).usage()["usedBytes"] == 0


# --- concurrent writes to one key from one session: last write wins -----------------------------

def test_same_key_written_twice_last_write_wins_with_its_timestamp(pad):
    first = pad.write({"v": 1}, "first", task_id="t", turn_id="u")
    second = pad.write({"v": 2}, "second", task_id="t", turn_id="u")
    assert first["storageKey"] == second["storageKey"]
    got = pad.read(first["storageKey"])
    assert got["data"] == {"v": 2} and got["description"] == "second"
    assert got["timestamp"] == second["timestamp"] >= first["timestamp"]
    assert len(pad.list()) == 1


def test_concurrent_writes_to_one_key_leave_one_whole_winner(store):
    import threading

    pads = [Scratchpad(store, "same-key-session") for _ in range(4)]
    pads[0].end_session()
    barrier = threading.Barrier(4)

    def writer(n: int) -> None:
        barrier.wait()
        for i in range(5):
            pads[n].write({"writer": n, "i": i, "blob": str(n) * 5000}, f"writer {n} write {i}", task_id="t", turn_id="u")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = pads[0].read("same-key-session_t_u")
    listed = pads[1].list()
    assert len(listed) == 1
    # The index and the item agree on the winner: description, size and timestamp.
    assert got["description"] == f"writer {got['data']['writer']} write {got['data']['i']}"
    assert {k: listed[0][k] for k in ("description", "dataSize", "timestamp")} == {
        k: got[k] for k in ("description", "dataSize", "timestamp")}
    assert set(got["data"]["blob"]) == {str(got["data"]["writer"])}


# --- malformed and overlong keys --------------------------------------------------------------

BAD_KEYS = [
    "", "nounderscore", "one_underscore", "a__b", "_a_b", "a_b_", "a_b_c d", "a_b_c\n", "a:b_c_d",
    "a*_b_c", "a_b*_c", "a_[b]_c", "a_b_%", "s" * 65 + "_a_b", "s_" + "t" * 33 + "_u", "x" * 10_000,
    None, 42, ["a_b_c"], {"key": "a_b_c"},
]


@pytest.mark.parametrize("bad", BAD_KEYS, ids=lambda k: repr(k)[:20])
def test_malformed_or_overlong_keys_are_refused_clearly(pad, bad):
    for call in (pad.read, pad.delete, lambda k: pad.update(k, 1)):
        with pytest.raises(InvalidKeyError, match=r"\{sessionId\}_\{taskId\}_\{turnId\}"):
            call(bad)
    answer = json.loads(pad.handle_tool_call("scratchpad_read", {"key": bad}))
    assert answer["error"] == "invalid_key"


# --- isolation ---------------------------------------------------------------------------------

def test_a_session_cannot_touch_another_sessions_items(store):
    a = Scratchpad(store, new_session("a"))
    b = Scratchpad(store, new_session("b"))
    key = a.write({"private": "A-ONLY"}, "A's data")["storageKey"]
    b.write("b", "B's data")
    for call in (b.read, b.delete, lambda k: b.update(k, "hijack")):
        with pytest.raises(ItemNotFoundError, match="only this session's items"):
            call(key)
    assert "A-ONLY" not in json.dumps(b.list())
    assert all(m["sessionId"] == b.session_id for m in b.list())
    assert b.end_session() == 1
    assert a.read(key)["data"] == {"private": "A-ONLY"}


@pytest.mark.parametrize("sessions", [("a", "a_b"), ("a_b", "a"), ("a", "a-1"), ("a.b", "a"), ("x", "x.")])
def test_isolation_holds_for_session_ids_that_prefix_each_other(sqlite_store, sessions):
    owner, intruder = (Scratchpad(sqlite_store, s) for s in sessions)
    key = owner.write("mine", "owner's", task_id="t", turn_id="u")["storageKey"]
    # The intruder's own key with the same task and turn names a different item.
    own_spelling = f"{intruder.session_id}_t_u"
    with pytest.raises(ItemNotFoundError):
        intruder.read(own_spelling)
    with pytest.raises(ItemNotFoundError):
        intruder.read(key)
    assert intruder.list() == []
    intruder.end_session()
    assert owner.read(key)["data"] == "mine"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.one_of(
    st.text(max_size=80),
    st.builds(lambda s, t, u: f"{s}_{t}_{u}", st.sampled_from(["victim", "victim*", "vict?m", "v[i]ctim", "*", ""]),
              st.text("abcdefgh*?[]-_", max_size=10), st.text("abcdefgh*?[]-_", max_size=10)),
))
def test_no_key_reaches_another_sessions_item(sqlite_store, key):
    victim = Scratchpad(sqlite_store, "victim")
    victim_key = victim.write("SECRET", "victim's", task_id="abc", turn_id="def")["storageKey"]
    intruder = Scratchpad(sqlite_store, "intruder")
    for tool in ("scratchpad_read", "scratchpad_update", "scratchpad_delete"):
        answer = intruder.handle_tool_call(tool, {"key": key, "data": "x"})
        assert "SECRET" not in answer and json.loads(answer)["success"] is False
    assert victim.read(victim_key)["data"] == "SECRET"


def test_quota_is_per_session(store):
    quota = item_cost(store, "x" * 900, "a fills its quota") + 100
    a = Scratchpad(store, new_session("a"), session_quota_bytes=quota)
    b = Scratchpad(store, new_session("b"), session_quota_bytes=quota)
    a.write("x" * 900, "a fills its quota")
    b.write("y" * 900, "b has its own")
    with pytest.raises(QuotaExceededError):
        a.write("z" * 200, "over a's quota")
