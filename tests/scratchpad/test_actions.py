"""YAML actions scratchpad.write/read/list/update/delete/end, called as the agent runtime calls them
(register_actions with a plain dict and an engine namespace; the runtime itself is another issue)."""

from __future__ import annotations

import json
import types

import pytest

from actioncache.scratchpad.actions import register_actions


@pytest.fixture
def actions(sqlite_store):
    registry: dict = {}
    engine = types.SimpleNamespace(cache=None, store=sqlite_store,
                                   settings={"scratchpad": {"session_id": "yaml-session", "session_quota_bytes": 2000}})
    register_actions(registry, engine)
    return registry


def test_both_names_are_registered(actions):
    for name in ("write", "read", "list", "update", "delete", "end"):
        assert actions[f"scratchpad.{name}"] is actions[f"actions.scratchpad_{name}"]


def test_round_trip_through_actions(actions):
    state = {"emails": ["a", "b"]}
    # "#" cannot occur in a key, a random id or a timestamp: finding it in a listing means data leaked.
    written = actions["scratchpad.write"](state, data={"summary": "body#1"}, description="Email 1 summary", task_id="mail")
    assert written["success"] is True and written["sessionId"] == "yaml-session"
    key = written["item"]["storageKey"]
    assert key.startswith("yaml-session_mail_")
    assert actions["scratchpad.read"](state, key=key)["data"] == {"summary": "body#1"}
    assert actions["scratchpad.update"](state, key=key, data={"summary": "body#2"}, description="v2")["item"]["description"] == "v2"
    listed = actions["scratchpad.list"](state)
    assert listed["count"] == 1 and "#" not in str(listed)
    assert actions["scratchpad.delete"](state, key=key)["success"] is True
    actions["scratchpad.write"](state, data=1, description="one")
    assert actions["scratchpad.end"](state)["deleted_count"] == 1


def test_session_from_the_argument_or_state_overrides_settings(actions):
    a = actions["scratchpad.write"]({}, session_id="explicit", data=1, description="d")
    b = actions["scratchpad.write"]({"session_id": "from-state"}, data=1, description="d")
    assert (a["sessionId"], b["sessionId"]) == ("explicit", "from-state")
    assert actions["scratchpad.list"]({})["count"] == 0  # settings' session saw none of them


def test_settings_limits_apply_and_errors_are_answers(actions):
    big = actions["scratchpad.write"]({}, data="x" * 2500, description="too much")
    assert big["success"] is False and big["error"] == "quota_exceeded"


def test_list_pages_with_filters_and_the_settings_budget(sqlite_store):
    registry: dict = {}
    settings = {"scratchpad": {"session_id": "paged", "list_budget_bytes": 2048}}
    register_actions(registry, types.SimpleNamespace(cache=None, store=sqlite_store, settings=settings))
    for i in range(40):
        registry["scratchpad.write"]({}, data=i, description=f"row {i}" + (" flagged" if i % 10 == 0 else ""),
                                     task_id="odd" if i % 2 else "even")
    page = registry["scratchpad.list"]({})
    assert page["success"] is True and page["total"] == 40 and 0 < page["count"] < 40 and "nextCursor" in page
    assert len(json.dumps(page, ensure_ascii=False, separators=(",", ":")).encode()) <= 2048
    rest = registry["scratchpad.list"]({}, cursor=page["nextCursor"])
    assert not {m["storageKey"] for m in page["items"]} & {m["storageKey"] for m in rest["items"]}
    flagged = registry["scratchpad.list"]({}, task_id="even", text="FLAGGED")
    assert sorted(m["description"] for m in flagged["items"]) == [f"row {i} flagged" for i in (0, 10, 20, 30)]
    wrong = registry["scratchpad.list"]({}, limit=0)
    assert wrong["success"] is False and wrong["error_type"] == "validation_error"


def test_no_session_anywhere_is_a_clear_error(sqlite_store):
    registry: dict = {}
    register_actions(registry, types.SimpleNamespace(cache=None, store=sqlite_store, settings={}))
    answer = registry["scratchpad.list"]({})
    assert answer["success"] is False and "session_id" in answer["message"]


def test_a_yaml_agent_uses_the_scratchpad_through_the_runtime(tmp_path):
    """The real agent runtime loads these actions by module name (actioncache.agents)."""
    agents = pytest.importorskip("actioncache.agents")
    spec = """
name: summaries
settings:
  scratchpad: {session_id: agent-run}
nodes:
  - name: save
    uses: scratchpad.write
    with: {data: "{{ state.summary }}", description: "Email 1 summary", task_id: inbox, turn_id: t1}
    output: saved
  - name: listing
    uses: scratchpad.list
    output: listing
  - name: back
    uses: scratchpad.read
    with: {key: "{{ state.saved.item.storageKey }}"}
    output: back
  - name: done
    uses: scratchpad.end
    output: ended
"""
    agent = agents.load_agent(spec, store=f"sqlite:///{tmp_path}/agent.db")
    try:
        state = agent.invoke({"summary": {"from": "ann", "words": 150}})
    finally:
        agent.close()
    assert state["saved"]["item"]["storageKey"] == "agent-run_inbox_t1"
    assert state["listing"]["count"] == 1 and "ann" not in str(state["listing"])
    assert state["back"]["data"] == {"from": "ann", "words": 150}
    assert state["ended"]["deleted_count"] == 1
