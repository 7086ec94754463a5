"""usedBytes is what the quota counts, byte for byte, in every answer the model sees; a named
session (``actioncache mcp --session NAME``) is resumed at its start, never removed by it."""

from __future__ import annotations

import pytest

from actioncache.scratchpad import QuotaExceededError, Scratchpad
from actioncache.stores.base import open_store

from .conftest import age_session, new_session
from .mcp_client import answer_of, run, server

MB = 1024 * 1024


def test_used_bytes_in_every_answer_is_what_the_quota_refuses_on(mcp_sdk, tmp_path, src_env):
    url = f"sqlite:///{tmp_path}/pad.db"

    async def calls(session):
        writes = []
        while not writes or writes[-1]["success"]:
            writes.append(answer_of(await session.call_tool(
                "scratchpad_write", {"data": "x" * 1000, "description": f"part {len(writes):03d}"})))
            assert len(writes) < 100, "the quota never refused"
        listing = answer_of(await session.call_tool("scratchpad_list", {}))
        await session.call_tool("scratchpad_delete", {"key": writes[0]["item"]["storageKey"]})
        after_delete = answer_of(await session.call_tool("scratchpad_list", {}))
        again = answer_of(await session.call_tool("scratchpad_write", {"data": "x" * 1000, "description": "part 999"}))
        return writes, listing, after_delete, again

    _, (writes, listing, after_delete, again) = run(
        server(src_env, "--store", url, "--session", "quota-desk", "--quota-mb", "0.02"), calls)
    *accepted, refused = writes
    quota = int(0.02 * MB)
    assert refused["error"] == "quota_exceeded" and refused["quotaBytes"] == quota and len(accepted) >= 5
    used = [w["usedBytes"] for w in accepted]
    item = refused["neededBytes"]  # every item here is the same size: same data, key and description lengths
    assert used == [item * (n + 1) for n in range(len(accepted))]  # each write adds exactly its bytes
    assert item > 1002  # keys and metadata count, not only the 1,002 bytes of data
    assert used[-1] <= quota < used[-1] + item  # the last write fitted, the refused one would not
    assert refused["usedBytes"] == used[-1] == listing["usedBytes"]  # the refusal and the listing agree
    assert after_delete["usedBytes"] == used[-1] - item  # a delete gives back exactly what the write took
    assert again["success"] is True and again["usedBytes"] == used[-1]
    store = open_store(url)
    try:
        assert Scratchpad(store, "quota-desk").usage()["usedBytes"] == again["usedBytes"]
    finally:
        store.close()


def test_a_write_fits_exactly_when_used_plus_needed_is_the_quota(store):
    session = new_session()
    first = Scratchpad(store, session)
    first.write("x" * 500, "first", task_id="t", turn_id="a")
    used = first.usage()["usedBytes"]
    with pytest.raises(QuotaExceededError) as refusal:
        Scratchpad(store, session, session_quota_bytes=used).write("y" * 500, "second", task_id="t", turn_id="b")
    details = refusal.value.details
    assert details["usedBytes"] == used and details["quotaBytes"] == used
    assert f"adds {details['neededBytes']:,} bytes" in str(refusal.value) and f"holds {used:,}" in str(refusal.value)
    exact = used + details["neededBytes"]
    with pytest.raises(QuotaExceededError):
        Scratchpad(store, session, session_quota_bytes=exact - 1).write("y" * 500, "second", task_id="t", turn_id="b")
    full = Scratchpad(store, session, session_quota_bytes=exact)
    key = full.write("y" * 500, "second", task_id="t", turn_id="b")["storageKey"]
    assert full.usage()["usedBytes"] == full.used_bytes() == exact
    # An update needs only what it adds to the item it replaces.
    with pytest.raises(QuotaExceededError) as growth:
        full.update(key, "y" * 600)
    grown = growth.value.details
    assert grown["usedBytes"] == exact and grown["neededBytes"] > 100
    roomy = Scratchpad(store, session, session_quota_bytes=exact + grown["neededBytes"])
    roomy.update(key, "y" * 600)
    assert roomy.usage()["usedBytes"] == exact + grown["neededBytes"]
    assert roomy.usage()["dataBytes"] == 502 + 602



@pytest.mark.parametrize("named_by", ["--session", "ACTIONCACHE_SESSION"])
def test_a_named_session_idle_for_days_is_resumed_at_its_start_not_removed(mcp_sdk, tmp_path, src_env, named_by):
    url = f"sqlite:///{tmp_path}/pad.db"
    store = open_store(url)
    key = Scratchpad(store, "desk-kept").write({"notes": "from Monday"}, "kept across runs")["storageKey"]
    Scratchpad(store, "crashed-agent").write(1, "abandoned")
    for session in ("desk-kept", "crashed-agent"):
        age_session(store, session, 3 * 86400)  # both idle for three days, past --orphan-hours 24
    store.close()

    async def calls(session):
        read = answer_of(await session.call_tool("scratchpad_read", {"key": key}))
        return read, answer_of(await session.call_tool("scratchpad_list", {}))

    args = ["--store", url]
    if named_by == "--session":
        args += ["--session", "desk-kept"]
    else:
        src_env["ACTIONCACHE_SESSION"] = "desk-kept"
    _, (read, listing) = run(server(src_env, *args), calls)
    assert read["success"] is True and read["data"] == {"notes": "from Monday"}
    assert listing["total"] == 1 and listing["sessionId"] == "desk-kept"
    store = open_store(url)
    try:
        assert Scratchpad(store, "crashed-agent").list() == []  # the start-up sweep still ran
        assert Scratchpad(store, "desk-kept").read(key)["data"] == {"notes": "from Monday"}  # and left it for next time
    finally:
        store.close()
