"""Issue 16's scratchpad items: descriptions shortened by characters, only listed tools over MCP
(test_mcp_server.py), reads as activity, orphan cleanup without anyone calling it, a quota that
counts every stored byte and holds when a writer stalls, and a malformed session index."""

from __future__ import annotations

import json

import pytest

from actioncache.scratchpad import Scratchpad
from actioncache.scratchpad.items import VIEW_LIMIT

from .conftest import new_session


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
