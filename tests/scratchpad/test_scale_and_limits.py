"""Issue 16's scratchpad items: descriptions shortened by characters, only listed tools over MCP
(test_mcp_server.py), reads as activity, orphan cleanup without anyone calling it, a quota that
counts every stored byte and holds when a writer stalls, and a malformed session index."""

from __future__ import annotations

import json
import threading
import time

import pytest

from actioncache.scratchpad import QuotaExceededError, Scratchpad, ScratchpadBusyError
from actioncache.scratchpad.items import VIEW_LIMIT
from actioncache.stores.base import Entry

from .conftest import age_session, item_cost, new_session


@pytest.mark.parametrize("script, at_least", [("汉", 100), ("ж", 150), ("a", 250), ("😀", 75)])
def test_a_300_character_description_keeps_as_many_characters_as_fit(pad, script, at_least):
    description = script * 300
    answer = json.loads(pad.handle_tool_call("scratchpad_write", {"data": 1, "description": description}))
    item = answer["item"]
    assert len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) <= VIEW_LIMIT
    shown = item["description"]
    assert shown == description or (shown.endswith("…") and len(shown) - 1 >= at_least), len(shown)
    listed = json.loads(pad.handle_tool_call("scratchpad_list", {}))["items"][0]
    assert listed["description"] == shown
    assert pad.read(item["storageKey"])["description"] == description  # read gives it whole


class CountingStore:
    """The real store, with its calls counted (a wrapper, not a stand-in: every call goes through)."""

    def __init__(self, store) -> None:
        self._store, self.calls = store, 0

    def __getattr__(self, name):
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def counted(*args, **kwargs):
            self.calls += 1
            return attr(*args, **kwargs)

        return counted


def test_a_write_costs_the_same_store_calls_at_item_10_and_item_1000(store):
    counting = CountingStore(store)
    pad = Scratchpad(counting, new_session(), orphan_sweep_s=None)
    costs = {}
    for i in range(1, 1001):
        before = counting.calls
        pad.write({"i": i}, f"item {i}")
        if i in (10, 1000):
            costs[i] = counting.calls - before
    assert costs[10] == costs[1000] <= 10


def test_the_quota_counts_every_stored_byte(store):
    pad = Scratchpad(store, new_session())
    for i in range(20):
        pad.write("x", f"one byte {i}")
    stored = 0
    for key in store.find(pattern=f"scratch:{pad.session_id}:*") + store.find(pattern=f"scratch-index:{pad.session_id}:*"):
        entry = store.get(key)
        stored += len(key) + len(entry.value) + len(json.dumps(dict(entry.metadata), separators=(",", ":")))
    usage = pad.usage()
    assert usage["dataBytes"] == 20 * 3  # the data itself: '"x"'
    assert usage["usedBytes"] == usage["storedBytes"] >= stored * 0.9  # what the quota counts is what the store holds
    quota = Scratchpad(store, pad.session_id, session_quota_bytes=usage["storedBytes"] + 10)
    with pytest.raises(Exception, match="quota"):
        quota.write("x", "one byte more")


class StallingStore(CountingStore):
    """The real store; the first put of an item (not its index entry) waits for an event, as a
    writer paused by the OS or a GC past its lease would. A wrapper: every call reaches the store."""

    def __init__(self, store, release) -> None:
        super().__init__(store)
        self.release, self.stalled = release, threading.Event()

    def _stall(self, entry):
        if entry.key.startswith("scratch:") and not self.stalled.is_set():
            self.stalled.set()
            self.release.wait(10)

    def put(self, entry):
        self._stall(entry)
        return self._store.put(entry)

    def put_fenced(self, entry, lease, token):  # a write under the session lease
        self._stall(entry)
        return self._store.put_fenced(entry, lease, token)


def test_the_quota_holds_when_a_writer_stalls_past_its_lease(store):
    session = new_session()
    cost = item_cost(store, "x" * 998, "stalled 0")
    quota = 3 * cost + cost // 2
    release = threading.Event()
    slow = Scratchpad(StallingStore(store, release), session, session_quota_bytes=quota, lease_ttl_s=0.2)
    fast = Scratchpad(store, session, session_quota_bytes=quota, lease_ttl_s=0.2)
    outcome = {}
    t = threading.Thread(target=lambda: outcome.setdefault("slow", _try(slow.write, "x" * 998, "stalled 0")))
    t.start()
    slow.store.stalled.wait(10)
    time.sleep(0.4)  # the slow writer's lease has expired
    fast_results = [_try(fast.write, "y" * 998, f"fast {i}") for i in range(4)]
    release.set()
    t.join()
    accepted = sum(r == "ok" for r in [*fast_results, outcome["slow"]])
    assert accepted == 3
    assert outcome["slow"] == "lease lost", "the stalled writer's item write is fenced off"
    usage = fast.usage()
    assert usage["items"] == 3 and usage["storedBytes"] <= quota
    assert len(fast.list()) == 3 and all(fast.read(m["storageKey"]) for m in fast.list())


def _try(fn, *args):
    try:
        fn(*args)
        return "ok"
    except QuotaExceededError:
        return "refused"
    except ScratchpadBusyError:
        return "lease lost"


@pytest.mark.parametrize("garbage", [b"j{broken", b"\x00", b'j{"items": 5}', b"j[]"])
def test_a_malformed_session_index_never_breaks_list_or_write(store, garbage):
    pad = Scratchpad(store, new_session())
    keys = {pad.write(i, f"item {i}")["storageKey"] for i in range(3)}
    store.put(Entry(f"scratch-session:{pad.session_id}", garbage, {}, 0.0, None))
    for key in list(keys)[:2]:  # and two damaged index entries
        store.put(Entry(f"scratch-index:{pad.session_id}:{key}", garbage, {"x": 1}, time.time(), None))
    fresh = Scratchpad(store, pad.session_id)
    assert {m["storageKey"] for m in fresh.list()} == keys
    keys.add(fresh.write(9, "after damage")["storageKey"])
    assert {m["storageKey"] for m in fresh.list()} == keys
    assert fresh.usage()["dataBytes"] == 4



def test_reads_count_as_activity(store):
    from actioncache.scratchpad import cleanup_orphans

    idle, reading = Scratchpad(store, new_session("idle")), Scratchpad(store, new_session("read"))
    idle.write(1, "idle")
    read_key = reading.write(2, "read")["storageKey"]
    for pad in (idle, reading):
        age_session(store, pad.session_id, 2 * 86400)
    Scratchpad(store, reading.session_id).read(read_key)  # a new worker reading the session
    result = cleanup_orphans(store, 86400)
    assert result["deleted_sessions"] == [idle.session_id]
    assert Scratchpad(store, reading.session_id).read(read_key)["data"] == 2


def test_orphans_are_cleaned_without_anyone_calling_cleanup(store):
    abandoned = Scratchpad(store, new_session("gone"), orphan_sweep_s=None)  # (a process long gone)
    abandoned.write("left behind", "crashed agent")
    age_session(store, abandoned.session_id, 2 * 86400)
    Scratchpad(store, new_session("busy")).write("new work", "another agent writes")  # sweeps on write
    assert store.find(pattern=f"scratch:{abandoned.session_id}:*") == []
    assert Scratchpad(store, abandoned.session_id).list() == []


def test_a_session_of_any_name_can_write_after_a_sweep(store):
    Scratchpad(store, new_session("busy")).write("work", "sweeps on write: the sweep lease is held for an hour")
    pad = Scratchpad(store, "orphan-sweep", lease_wait_s=0.2)
    assert pad.write(1, "a session whose name is the sweep's")["sessionId"] == "orphan-sweep"


def test_a_description_holding_a_lone_surrogate_is_written(pad):
    answer = json.loads(pad.handle_tool_call("scratchpad_write", {"data": 1, "description": "file r\udcff.txt"}))
    assert answer["success"] is True and answer["item"]["description"].startswith("file r")
    assert pad.list()[0]["description"] == answer["item"]["description"]
