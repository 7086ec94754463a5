"""usedBytes is what the quota counts, byte for byte, in every answer the model sees; a named
session (``actioncache mcp --session NAME``) is resumed at its start, never removed by it."""

from __future__ import annotations

from contextlib import closing

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
    with closing(open_store(url)) as store:
        assert Scratchpad(store, "quota-desk").usage()["usedBytes"] == again["usedBytes"]


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
    assert grown["usedBytes"] == exact and grown["neededBytes"] == 100  # the data's growth, nothing else
    roomy = Scratchpad(store, session, session_quota_bytes=exact + grown["neededBytes"])
    roomy.update(key, "y" * 600)
    assert roomy.usage()["usedBytes"] == exact + grown["neededBytes"]
    assert roomy.usage()["dataBytes"] == 502 + 602


def test_an_update_that_shrinks_the_data_fits_a_full_quota(store):
    """An outside tester's finding: at a full quota, an update that shrank an item by a few bytes
    was refused, as its first update added a createdAt field. An item's fields are the same from
    its first write on, so shrinking the data shrinks the item, at a full quota too."""
    session = new_session()
    pad = Scratchpad(store, session)
    key = pad.write("x" * 500, "an item", task_id="t", turn_id="a")["storageKey"]
    used = pad.usage()["usedBytes"]
    full = Scratchpad(store, session, session_quota_bytes=used)
    for size in (499, 495, 400):  # each a shrink of the data, the first by one byte
        full.update(key, "x" * size)
        now = full.usage()["usedBytes"]
        assert now < used, (size, now, used)
        used = now
    with pytest.raises(QuotaExceededError):
        Scratchpad(store, session, session_quota_bytes=used).update(key, "x" * 401)  # a growth still is refused



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
    with closing(open_store(url)) as store:
        assert Scratchpad(store, "crashed-agent").list() == []  # the start-up sweep still ran
        assert Scratchpad(store, "desk-kept").read(key)["data"] == {"notes": "from Monday"}  # and left it for next time


# --- a session in use keeps its items (attack-scratch F3, F4, F8) ---------------------------------

DAY = 86400.0


def _used_until(store, session: str, when: float) -> None:
    """Plant daily use up to ``when``: the marker as the session's last touch at ``when`` leaves it."""
    from actioncache.stores.base import Entry

    marker = store.get(f"scratch-session:{session}")
    meta = {**marker.metadata, "_scratch_last_access": when}
    store.put(Entry(marker.key, marker.value, meta, when, None if marker.expires_at is None else when + 7 * DAY))


def test_a_named_session_used_every_day_keeps_its_first_week_notes(mcp_sdk, tmp_path, src_env):
    """Items expired 7 days after their write, however often the session was used: on day 8 the
    store's expiry cleanup deleted the week-1 notes and usedBytes still counted them."""
    import time

    url = f"sqlite:///{tmp_path}/pad.db"

    async def write(session):
        return answer_of(await session.call_tool("scratchpad_write", {"data": {"n": 1}, "description": "week-1 notes"}))

    _, written = run(server(src_env, "--store", url, "--session", "daily"), write)
    store = open_store(url)
    day8 = time.time() + 8 * DAY
    _used_until(store, "daily", day8 - DAY)  # used every day, last yesterday
    store.delete_expired(day8)  # `actioncache cleanup` on day 8
    store.close()

    async def use(session):
        read = answer_of(await session.call_tool("scratchpad_read", {"key": written["item"]["storageKey"]}))
        return read, answer_of(await session.call_tool("scratchpad_list", {}))

    _, (read, listing) = run(server(src_env, "--store", url, "--session", "daily"), use)
    assert read["success"] is True and read["data"] == {"n": 1}
    assert listing["total"] == 1 and listing["usedBytes"] == written["usedBytes"]


def write_in_named_session(src_env, url: str, session: str, data, description: str) -> dict:
    """One item written over MCP by `actioncache mcp --session SESSION`: its answer."""

    async def write(client):
        return answer_of(await client.call_tool("scratchpad_write", {"data": data, "description": description}))

    return run(server(src_env, "--store", url, "--session", session), write)[1]


def start_named_session(src_env, url: str, session: str) -> None:
    """`actioncache mcp --session SESSION` started and left at once (its start sweeps the store)."""

    async def nothing(client):
        return None

    run(server(src_env, "--store", url, "--session", session), nothing)


def test_another_projects_start_keeps_a_named_session_a_week_and_counts_nothing_gone(mcp_sdk, tmp_path, src_env):
    """On a store shared by every project, `actioncache mcp --session project-B` removed project A's
    items after A was idle 24 hours; a named session now stays 7 idle days for everyone's sweep
    (an anonymous or crashed one still goes after 24 hours)."""
    url = f"sqlite:///{tmp_path}/pad.db"
    written = write_in_named_session(src_env, url, "project-A", 1, "project A")
    store = open_store(url)
    Scratchpad(store, "crashed-agent").write(1, "abandoned")
    for session in ("project-A", "crashed-agent"):
        age_session(store, session, 2 * DAY)
    store.close()
    start_named_session(src_env, url, "project-B")
    with closing(open_store(url)) as store:
        assert Scratchpad(store, "crashed-agent").list() == []
        kept = Scratchpad(store, "project-A")
        assert kept.read(written["item"]["storageKey"])["data"] == 1
        age_session(store, "project-A", 8 * DAY)
    start_named_session(src_env, url, "project-B")
    with closing(open_store(url)) as store:
        gone = Scratchpad(store, "project-A")
        assert gone.list() == [] and gone.used_bytes() == 0


def test_a_named_session_read_from_python_keeps_its_week(mcp_sdk, tmp_path, src_env):
    """A plain ``Scratchpad(store, "project-A")`` reading a named MCP session marks it used, and that
    rewrite of its marker dropped the session's request to be kept 7 idle days: 2 idle days later,
    another project's start removed its notes. The request belongs to the session, so every pad that
    touches it carries it on."""
    url = f"sqlite:///{tmp_path}/pad.db"
    written = write_in_named_session(src_env, url, "project-A", "keep me", "A")
    with closing(open_store(url)) as store:
        assert Scratchpad(store, "project-A", orphan_sweep_s=None).read(written["item"]["storageKey"])["data"] \
            == "keep me"
        age_session(store, "project-A", 2 * DAY)
    start_named_session(src_env, url, "project-B")
    with closing(open_store(url)) as store:
        assert Scratchpad(store, "project-A").read(written["item"]["storageKey"])["data"] == "keep me"


@pytest.mark.parametrize("planted", [-1e12, -1.0, 0.5, 12345.25])
def test_a_damaged_byte_counter_is_recounted_not_trusted(store, planted):
    """A negative counter (planted) made every write fit and showed usedBytes -1000000000000: the
    quota was off for good, since only a refusal recounted. A counter that cannot be a byte count
    is now recounted when read."""
    from .conftest import item_cost

    quota = item_cost(store, "x" * 998, "one") * 2 + 50
    pad = Scratchpad(store, new_session("cnt"), session_quota_bytes=quota)
    pad.write("x" * 998, "one")
    honest = pad.usage()["usedBytes"]
    name = f"scratchpad-bytes:{pad.session_id}"
    store.add_counters({name: planted - store.counters(name)[name]})
    listed = answer_of_tool(pad, "scratchpad_list", {})
    assert listed["usedBytes"] == honest
    pad.write("x" * 998, "two")
    with pytest.raises(QuotaExceededError):
        pad.write("x" * 998, "three: over the quota")
    assert pad.used_bytes() == pad.usage()["usedBytes"] == 2 * honest


def answer_of_tool(pad, name, arguments):
    import json

    return json.loads(pad.handle_tool_call(name, arguments))


def test_a_session_written_by_the_earlier_layout_loses_its_expiry_dates_at_its_next_use(sqlite_store):
    """Items written before this rule carry a 7-day expiry per write; the first use of the session
    takes it off, so the week-1 notes of a session in daily use are not lost after an upgrade."""
    import time

    from actioncache.stores.base import Entry

    pad = Scratchpad(sqlite_store, "legacy")
    key = pad.write(1, "written by the earlier version")["storageKey"]
    week = time.time() + 7 * DAY
    for store_key in sqlite_store.find(pattern="scratch*legacy*"):  # plant the earlier layout
        e = sqlite_store.get(store_key)
        value = b'j{"layout":2}' if store_key.startswith("scratch-session:") else e.value
        sqlite_store.put(Entry(e.key, value, dict(e.metadata), e.created_at, week))
    resumed = Scratchpad(sqlite_store, "legacy")
    assert [m["storageKey"] for m in resumed.list()] == [key]
    sqlite_store.delete_expired(week + DAY)
    assert resumed.read(key)["data"] == 1
