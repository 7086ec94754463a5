"""The LLM tool face: schemas, handle_tool_call answers, the 500-byte view, the system prompt,
and the 50-email task of seed 004 driven end to end through tool calls."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.scratchpad import SYSTEM_PROMPT, Scratchpad, handle_tool_call, tool_schemas
from actioncache.scratchpad.items import llm_view

from .conftest import new_session

TOOL_NAMES = ["scratchpad_write", "scratchpad_read", "scratchpad_list", "scratchpad_update", "scratchpad_delete"]


def _size(obj) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# --- schemas -------------------------------------------------------------------------------------

def test_openai_schema_shape():
    tools = tool_schemas("openai")
    assert [t["function"]["name"] for t in tools] == TOOL_NAMES
    for t in tools:
        assert t["type"] == "function"
        params = t["function"]["parameters"]
        assert params["type"] == "object" and set(params.get("required", [])) <= set(params["properties"])
        assert t["function"]["description"]
    write = tools[0]["function"]["parameters"]
    assert write["required"] == ["data", "description"]
    # The limit is said, not enforced by the schema: a longer description is cut (FR-011), which a
    # client validating the schema would refuse to send (an outside tester's finding).
    for name in ("scratchpad_write", "scratchpad_update"):
        (tool,) = [t["function"] for t in tools if t["function"]["name"] == name]
        described = tool["parameters"]["properties"]["description"]
        assert "maxLength" not in described and "300 characters (longer is cut" in described["description"]


def test_anthropic_and_mcp_schemas_carry_the_same_tools():
    openai = {t["function"]["name"]: t["function"]["parameters"] for t in tool_schemas("openai")}
    anthropic = {t["name"]: t["input_schema"] for t in tool_schemas("anthropic")}
    mcp = {t["name"]: t["inputSchema"] for t in tool_schemas("mcp")}
    assert openai == anthropic == mcp
    assert all(set(t) == {"name", "description", "input_schema"} for t in tool_schemas("anthropic"))
    with pytest.raises(ValueError, match="openai"):
        tool_schemas("gemini")


def test_system_prompt_says_when_and_how_to_use_the_scratchpad():
    text = SYSTEM_PROMPT.lower()
    for phrase in ("many steps", "large intermediate results",
                   "300 characters", "5 mb", "50 mb", "unavailable", "in your context"):
        assert phrase in text
    for name in TOOL_NAMES:
        assert name in SYSTEM_PROMPT
    assert len(SYSTEM_PROMPT) < 1500  # short enough to sit in every system prompt


# --- handle_tool_call ------------------------------------------------------------------------

def test_arguments_may_be_a_json_string_as_apis_send_them(pad):
    answer = json.loads(handle_tool_call(pad, "scratchpad_write", '{"data": [1, 2], "description": "pair"}'))
    assert answer["success"] is True
    key = answer["item"]["storageKey"]
    assert json.loads(pad.handle_tool_call("scratchpad_read", json.dumps({"key": key})))["data"] == [1, 2]
    assert json.loads(pad.handle_tool_call("read", {"key": key}))["data"] == [1, 2]  # short names work too


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("scratchpad_write", "{not json", "invalid_argument"),
        ("scratchpad_write", "[1, 2]", "invalid_argument"),
        ("scratchpad_write", {"description": "no data"}, "invalid_argument"),
        ("scratchpad_read", {}, "invalid_argument"),
        ("scratchpad_fly", {}, "unknown_tool"),
    ],
)
def test_bad_calls_get_an_error_answer_not_an_exception(pad, name, arguments, code):
    answer = json.loads(pad.handle_tool_call(name, arguments))
    assert answer["success"] is False and answer["error"] == code and answer["message"]


def test_list_answer_carries_usage_and_metadata_only(pad):
    for i in range(3):
        pad.handle_tool_call("scratchpad_write", {"data": {"body": f"BODY{i}"}, "description": f"d{i}"})
    answer = json.loads(pad.handle_tool_call("scratchpad_list", {}))
    assert answer["count"] == 3 and answer["quotaBytes"] == 50 * 1024 * 1024
    # usedBytes is what the quota counts (data, metadata and keys), not the data alone.
    assert answer["usedBytes"] == pad.usage()["usedBytes"] > sum(m["dataSize"] for m in answer["items"])
    assert "BODY" not in json.dumps(answer)


def test_end_is_available_to_runtimes(pad):
    pad.write(1, "one")
    assert json.loads(pad.handle_tool_call("scratchpad_end", {}))["deleted_count"] == 1
    assert pad.list() == []


# --- SC-003: every item in an answer is at most 500 bytes ------------------------------------

ids = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", min_size=1, max_size=32)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    session=st.text("abcdefghij0123456789._-", min_size=1, max_size=64),
    task=ids,
    turn=ids,
    description=st.text(min_size=1, max_size=400).filter(lambda s: s.strip()),
    metadata=st.dictionaries(st.text(max_size=8), st.text(max_size=20) | st.integers(), max_size=4).filter(
        lambda m: _size(m) <= 150),
)
def test_every_item_view_fits_500_bytes(sqlite_store, session, task, turn, description, metadata):
    pad = Scratchpad(sqlite_store, session)
    write = json.loads(pad.handle_tool_call("scratchpad_write", {
        "data": "x", "description": description, "task_id": task, "turn_id": turn, "metadata": metadata}))
    assert write["success"] is True, write
    assert _size(write["item"]) <= 500
    assert write["item"]["storageKey"] == f"{session}_{task}_{turn}"
    read = json.loads(pad.handle_tool_call("scratchpad_read", {"key": write["item"]["storageKey"]}))
    # taskId and turnId are the first fields a long view gives up (they are parts of the storageKey).
    assert read["data"] == "x" and read["item"]["storageKey"] == f"{session}_{task}_{turn}"
    assert (read["item"].get("taskId", task), read["item"].get("turnId", turn)) == (task, turn)
    assert _size(read["item"]) <= 500
    listed = json.loads(pad.handle_tool_call("scratchpad_list", {}))["items"]
    assert all(_size(m) <= 500 for m in listed)
    pad.end_session()


def test_view_keeps_the_whole_description_when_it_fits():
    meta = {"storageKey": "conv-0123456789abcdef0123456789abcdef_AbCdEfGh_IjKlMnOp", "description": "d" * 300,
            "timestamp": "2025-10-31T12:00:00.000Z", "dataSize": 123456, "sessionId": "conv-0123456789abcdef0123456789abcdef",
            "taskId": "AbCdEfGh", "turnId": "IjKlMnOp"}
    view = llm_view(meta)
    assert view["description"] == "d" * 300 and _size(view) <= 500


# --- the 50-email task (seed 004, user stories 1 and 2) ---------------------------------------

def _email_summary(i: int) -> dict:
    return {
        "email": i,
        "from": f"sender{i}@example.com",
        "subject": f"Subject line of email {i}",
        "summary": f"Summary of email {i}: " + "the sender asks about the quarterly numbers and next steps. " * 12,
    }


def test_fifty_emails_end_to_end_through_tool_calls(store):
    session = new_session("conv")
    agent = Scratchpad(store, session)
    keys = []
    for i in range(1, 51):
        answer = json.loads(agent.handle_tool_call("scratchpad_write", json.dumps({
            "data": _email_summary(i),
            "description": f"Email {i} from sender{i}@example.com re: Subject line of email {i} - 150 words",
            "task_id": "inbox",
            "metadata": {"email": i},
        })))
        assert answer["success"] is True
        assert "quarterly numbers" not in json.dumps(answer)  # metadata only, never the summary
        keys.append(answer["item"]["storageKey"])
    assert len(set(keys)) == 50

    def pages(pad):
        """Every scratchpad_list answer of one walk, as the model would page with nextCursor."""
        arguments: dict = {}
        while True:
            text = pad.handle_tool_call("scratchpad_list", arguments)
            assert len(text.encode("utf-8")) <= pad.list_budget_bytes
            assert "quarterly numbers" not in text
            answer = json.loads(text)
            yield answer
            if "nextCursor" not in answer:
                return
            arguments = {"cursor": answer["nextCursor"]}

    listed = [m for page in pages(agent) for m in page["items"]]
    assert sorted(m["storageKey"] for m in listed) == sorted(keys)
    assert all(page["total"] == 50 for page in pages(agent))

    # A later turn: a new Scratchpad on the same session finds summaries 1-10 by their keys.
    later = Scratchpad(store, session)
    by_email = {m["metadata"]["email"]: m["storageKey"] for page in pages(later) for m in page["items"]}
    for i in range(1, 11):
        answer = json.loads(later.handle_tool_call("scratchpad_read", {"key": by_email[i]}))
        assert answer["success"] is True and answer["data"] == _email_summary(i)

    assert later.end_session() == 50
    assert json.loads(later.handle_tool_call("scratchpad_list", {}))["count"] == 0
    gone = json.loads(agent.handle_tool_call("scratchpad_read", {"key": keys[0]}))
    assert gone["error"] == "not_found"
    assert store.find(pattern=f"scratch:{session}:*") == [] and store.get(f"scratch-session:{session}") is None


def test_the_guide_shows_the_system_prompt_as_it_is():
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "scratchpad.md").read_text(encoding="utf-8")
    assert f"```text\n{SYSTEM_PROMPT}\n```" in guide
