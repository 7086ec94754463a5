"""Issue 31: a scratchpad list an LLM can page through (cursor, limit, filters, an answer budget),
at 10,000 items over MCP with the SDK's own client against the real server."""

from __future__ import annotations

import bisect
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.scratchpad import InvalidArgumentError, Scratchpad
from actioncache.stores.base import open_store

from .conftest import new_session
from .mcp_client import answer_of, run, server, text_of

SESSION = "big"
ITEMS = 10_000
TASKS = ("inbox", "notes", "web", "drafts")
DEFAULT_LIST_BUDGET = 4096  # bytes: the documented default answer budget of scratchpad_list
NEEDLES = (3, 1500, 4242, 5000, 7777, 9001, 9999)  # the items whose description names the project


def _description(i: int) -> str:
    if i in NEEDLES:
        return f"Email {i} mentions the NEEDLE project (budget, owners, dates)"
    return f"Email {i} from sender{i}@example.com re: quarterly numbers - 150-word summary"


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> tuple[Path, list[str]]:
    """A SQLite file holding one session of 10,000 items (written once per module), and its keys."""
    path = tmp_path_factory.mktemp("big") / "pad.db"
    store = open_store(f"sqlite:///{path}")
    pad = Scratchpad(store, SESSION, orphan_sweep_s=None)
    keys = [pad.write({"email": i}, _description(i), task_id=TASKS[i % 4], turn_id=f"t{i}")["storageKey"]
            for i in range(ITEMS)]
    store.close()
    return path, keys


def _copy(big_store, tmp_path: Path) -> str:
    """A private copy of the 10,000-item store, so a test may change it."""
    source, _ = big_store
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", f"{tmp_path}/pad.db{suffix}")
    return f"sqlite:///{tmp_path}/pad.db"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def test_list_of_10000_items_over_mcp_answers_within_the_default_budget(mcp_sdk, big_store, tmp_path, src_env):
    url = _copy(big_store, tmp_path)

    async def calls(session):
        first = await session.call_tool("scratchpad_list", {})
        second = await session.call_tool("scratchpad_list", {"cursor": answer_of(first)["nextCursor"]})
        inbox = await session.call_tool("scratchpad_list", {"task_id": "inbox", "limit": 5})
        turn = await session.call_tool("scratchpad_list", {"turn_id": "t4242"})
        found, texts, arguments = [], [], {"text": "needle project"}
        while True:  # a rare phrase: short calls, each reading a bounded slice, until no nextCursor
            result = await session.call_tool("scratchpad_list", arguments)
            texts.append(text_of(result))
            found += answer_of(result)["items"]
            if "nextCursor" not in answer_of(result):
                break
            arguments = {"cursor": answer_of(result)["nextCursor"]}
        return [first, second, inbox, turn], found, texts

    _, (results, found, texts) = run(server(src_env, "--store", url, "--session", SESSION), calls)
    first, second, inbox, turn = (answer_of(r) for r in results)
    for text in [text_of(r) for r in results] + texts:
        assert _size(text) <= DEFAULT_LIST_BUDGET
    assert first["total"] == ITEMS and first["count"] == len(first["items"]) >= 10
    assert "\"email\":" not in text_of(results[0])  # metadata only, never the data ({"email": i})
    first_keys = [m["storageKey"] for m in first["items"]]
    assert first_keys == sorted(first_keys) and second["items"][0]["storageKey"] > first_keys[-1]
    assert inbox["count"] == 5 and inbox["total"] == ITEMS // 4
    assert {m["taskId"] for m in inbox["items"]} == {"inbox"}
    assert [m["description"] for m in turn["items"]] == [_description(4242)] and "nextCursor" not in turn
    assert sorted(m["description"] for m in found) == sorted(_description(i) for i in NEEDLES)
    assert all(a["usedBytes"] > 0 and a["quotaBytes"] == 50 * 2**20 for a in (first, second, inbox, turn))


def test_a_rare_text_search_answers_its_match_or_a_definite_none_on_the_first_call(mcp_sdk, big_store, tmp_path,
                                                                                   src_env):
    """In 10,000 items a rare phrase answered {"count": 0, "items": [], "nextCursor": ...} nine times
    before its match, and a phrase found nowhere looked the same: a model stopping at count 0
    concluded "not there". An empty page now keeps scanning (up to 20,000 index entries), and a
    page that stops early says how much is left (remaining)."""
    url = _copy(big_store, tmp_path)

    async def calls(session):
        return [answer_of(await session.call_tool("scratchpad_list", arguments)) for arguments in (
            {"text": "sender9998@example"}, {"text": "words found in no description"}, {"limit": 3})]

    _, (rare, nowhere, paged) = run(server(src_env, "--store", url, "--session", SESSION), calls)
    assert [m["description"] for m in rare["items"]] == [_description(9998)]
    assert nowhere["count"] == 0 and "nextCursor" not in nowhere  # a definite "not there"
    assert paged["count"] == 3 and paged["remaining"] == ITEMS - 3 and "nextCursor" in paged
    for answer in (rare, nowhere, paged):
        assert ("nextCursor" in answer) == ("remaining" in answer)


def test_paging_10000_items_over_mcp_visits_each_once_while_items_come_and_go(mcp_sdk, big_store, tmp_path, src_env):
    """Between pages the client writes three items and deletes one item it has seen and one it has
    not: every item there from the first page to the last is listed exactly once, a deleted one is
    never listed after its deletion, no key is listed twice."""
    url = _copy(big_store, tmp_path)
    _, original = big_store
    ordered = sorted(original)

    async def calls(session):
        seen, texts, written, deleted_ahead, deleted_behind = [], [], [], [], []
        arguments: dict = {"limit": 200}
        while True:
            result = await session.call_tool("scratchpad_list", arguments)
            texts.append(text_of(result))
            answer = answer_of(result)
            seen += [m["storageKey"] for m in answer["items"]]
            if "nextCursor" not in answer:
                return seen, texts, written, deleted_ahead, deleted_behind
            n = len(texts)
            for j in range(3):
                w = await session.call_tool("scratchpad_write", {"data": j, "description": f"written after page {n}"})
                written.append(answer_of(w)["item"]["storageKey"])
            behind = seen[-(n * 3) % len(seen)]
            later = ordered[bisect.bisect_right(ordered, seen[-1]) + n % 150:]
            ahead = next((k for k in later if k not in deleted_ahead), None)
            for key, into in ((behind, deleted_behind), (ahead, deleted_ahead)):
                if key and answer_of(await session.call_tool("scratchpad_delete", {"key": key}))["success"]:
                    into.append(key)
            arguments = {"cursor": answer["nextCursor"], "limit": 200}

    _, (seen, texts, written, deleted_ahead, deleted_behind) = run(
        server(src_env, "--store", url, "--session", SESSION, "--list-budget-kb", "64"), calls)
    assert len(texts) >= ITEMS // 200 and all(_size(t) <= 64 * 1024 for t in texts)
    assert deleted_ahead and deleted_behind and written
    assert len(seen) == len(set(seen))  # no key twice
    present_throughout = set(original) - set(deleted_ahead) - set(deleted_behind)
    assert present_throughout <= set(seen)
    assert not set(deleted_ahead) & set(seen)  # deleted before the walk reached it
    assert set(deleted_behind) <= set(seen)  # listed, then deleted
    assert set(seen) <= set(original) | set(written)


def test_python_list_pages_with_limit_budget_and_filters(store):
    pad = Scratchpad(store, new_session())
    keys = sorted(pad.write(i, f"note {i} {'Zürich' if i % 5 == 0 else 'Bern'}", task_id=f"t{i % 3}")["storageKey"]
                  for i in range(30))
    assert [m["storageKey"] for m in pad.list()] == keys  # no arguments: every item, in key order
    assert pad.list().next_cursor is None and pad.list().total == 30
    walked, cursor, pages = [], None, 0
    while True:
        page = pad.list(limit=7, cursor=cursor)
        walked += [m["storageKey"] for m in page]
        pages, cursor = pages + 1, page.next_cursor
        if cursor is None:
            break
    assert walked == keys and pages == 5
    budgeted = pad.list(budget_bytes=1000)
    shown = {"items": list(budgeted), "nextCursor": budgeted.next_cursor}
    assert len(json.dumps(shown, ensure_ascii=False, separators=(",", ":")).encode()) <= 1000 and len(budgeted) >= 2
    # Filters: task (on the key), text (in the description, any case, compatibility forms alike).
    assert {m["taskId"] for m in pad.list(task_id="t1")} == {"t1"} and pad.list(task_id="t1").total == 10
    assert len(pad.list(text="ZÜRICH")) == 6 and len(pad.list(text="zurich")) == 0
    assert len(pad.list(task_id="t0", text="zürich")) == 2  # 0 and 15 are in t0 and name Zürich
    # A cursor carries its filters; other filters beside it are refused, naming the fix.
    page = pad.list(task_id="t2", limit=3)
    assert {m["taskId"] for m in pad.list(cursor=page.next_cursor)} == {"t2"}
    with pytest.raises(InvalidArgumentError, match="pass the cursor alone"):
        pad.list(cursor=page.next_cursor, task_id="t1")
    with pytest.raises(InvalidArgumentError, match="another session"):
        Scratchpad(store, new_session()).list(cursor=page.next_cursor)
    for bad in ("nonsense", page.next_cursor[:-4] + "@@@@", 42):
        with pytest.raises(InvalidArgumentError, match="without a cursor"):
            pad.list(cursor=bad)
    for bad_limit in (0, -1, True, "5"):
        with pytest.raises(InvalidArgumentError, match="limit"):
            pad.list(limit=bad_limit)


def test_tool_list_rejects_what_it_cannot_answer(pad):
    pad.write(1, "one")
    for arguments, expected in (({"limit": 201}, "at most 200"), ({"text": "x" * 101}, "limit is 100"),
                                ({"cursor": "c1.AAAA"}, "cursor"), ({"task_id": "a_b"}, "task_id")):
        answer = json.loads(pad.handle_tool_call("scratchpad_list", arguments))
        assert answer["success"] is False and answer["error"] == "invalid_argument"
        assert expected in answer["message"]
    with pytest.raises(ValueError, match="at least 2048"):
        Scratchpad(pad.store, pad.session_id, list_budget_bytes=1000)


# --- the walk's guarantee, for any interleaving of writes, updates and deletes ----------------------

_ops = st.lists(st.tuples(st.sampled_from(["write", "update", "delete"]), st.integers(0, 10**6)), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(initial=st.integers(0, 40), limit=st.integers(1, 9), between=st.lists(_ops, max_size=12),
       task=st.sampled_from([None, "a", "b"]))
def test_a_walk_lists_each_lasting_item_once_whatever_happens_between_pages(initial, limit, between, task):
    pad = Scratchpad(open_store("memory://"), "walk", orphan_sweep_s=None)
    original = {pad.write(i, f"item {i}", task_id="ab"[i % 2])["storageKey"] for i in range(initial)}
    live, touched, seen = set(original), set(), []
    cursor, page_no = None, 0
    while True:
        page = pad.list(task_id=task, limit=limit) if cursor is None else pad.list(cursor=cursor)
        seen += [m["storageKey"] for m in page]
        cursor = page.next_cursor
        if cursor is None:
            break
        for op, n in between[page_no] if page_no < len(between) else []:
            if op == "write":
                key = pad.write(n, f"new {n}", task_id="ab"[n % 2])["storageKey"]
                live.add(key)
                touched.add(key)
            elif live:
                key = sorted(live)[n % len(live)]
                if op == "update":
                    pad.update(key, n)  # an update keeps the key: it never moves in the walk
                else:
                    pad.delete(key)
                    live.discard(key)
                    touched.add(key)
        page_no += 1
    wanted = {k for k in original - touched if task is None or k.split("_")[1] == task}
    assert len(seen) == len(set(seen))
    assert wanted <= set(seen)
    assert all(task is None or k.split("_")[1] == task for k in seen)
