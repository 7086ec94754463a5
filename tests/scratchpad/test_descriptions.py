"""Descriptions in every script: scratchpad_read gives them whole (FR-006), over MCP too; where a
description must be cut (300 characters on write, 500 bytes per item in a list answer) the cut
never splits what a reader sees as one character (an extended grapheme cluster)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.scratchpad import Scratchpad
from actioncache.scratchpad.items import VIEW_LIMIT

from .conftest import new_session
from .mcp_client import answer_of, run, server

# Whole user-perceived characters, each several code points: a cut inside one would show a broken
# glyph (a lone family member, half a flag, a letter without its accent).
FAMILY = "\U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466"  # 👩‍👩‍👧‍👦, 7 code points
RAINBOW_FLAG = "\U0001F3F3\ufe0f\u200d\U0001F308"  # 🏳️‍🌈
SKIN_TONE = "\U0001F44D\U0001F3FD"  # 👍🏽
FLAGS = "\U0001F1EF\U0001F1F5"  # 🇯🇵 (two regional indicators)
E_DOT_CIRCUMFLEX = "e\u0323\u0302"  # ệ, decomposed: a base letter and two combining marks
DEVANAGARI_KSSI = "\u0915\u094d\u0937\u093f"  # क्षि
HANGUL_JAMO = "\u1100\u1161\u11a8"  # 각 from three conjoining jamo
CLUSTERS = [FAMILY, RAINBOW_FLAG, SKIN_TONE, FLAGS, E_DOT_CIRCUMFLEX, DEVANAGARI_KSSI, HANGUL_JAMO,
            "汉", "字", "a", "ж", "\u00e9", "\U0001F600"]

# Each at most 300 code points, so it is stored as written.
SCRIPTS = {
    "chinese": "汉字缓存的描述" * 42 + "汉字",  # 296 characters, 3 bytes each in UTF-8
    "japanese with ideographic spaces": "メール\u3000第一号\u3000予算" * 22,
    "family emoji": FAMILY * 42,  # 294 code points, 42 characters
    "rainbow flags and skin tones": (RAINBOW_FLAG + SKIN_TONE) * 50,
    "flags": FLAGS * 150,
    "combining marks": ("Vi" + E_DOT_CIRCUMFLEX + "t ") * 42,
    "devanagari": ("नमस्ते " + DEVANAGARI_KSSI + " ") * 24,
    "hangul jamo": HANGUL_JAMO * 100,
    "arabic": "مرحبا بالعالم " * 21,
    "mixed": ("Résumé " + FAMILY + " 汉字 " + FLAGS + " ") * 12,
}
SCRIPTS = {name: text.strip() for name, text in SCRIPTS.items()}  # a description is stored trimmed


def _size(obj) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _is_cluster_prefix(shown: str, clusters: list[str]) -> bool:
    """``shown`` is the first k clusters, whole, followed by an ellipsis (or all of them, as written)."""
    if shown == "".join(clusters):
        return True
    if not shown.endswith("\u2026"):
        return False
    body, text = shown[:-1], ""
    for cluster in clusters:
        if text == body:
            return True
        text += cluster
    return text == body


def test_every_script_is_read_back_whole_over_mcp_and_listed_cut_at_a_character(mcp_sdk, tmp_path, src_env):
    url = f"sqlite:///{tmp_path}/pad.db"

    async def calls(session):
        keys = {}
        for name, description in SCRIPTS.items():
            answer = answer_of(await session.call_tool("scratchpad_write", {"data": name, "description": description}))
            keys[name] = answer["item"]["storageKey"]
        reads = {name: answer_of(await session.call_tool("scratchpad_read", {"key": key}))
                 for name, key in keys.items()}
        listed, arguments = [], {}
        while True:
            page = answer_of(await session.call_tool("scratchpad_list", arguments))
            listed += page["items"]
            if "nextCursor" not in page:
                return keys, reads, {m["storageKey"]: m for m in listed}
            arguments = {"cursor": page["nextCursor"]}

    _, (keys, reads, listed) = run(server(src_env, "--store", url, "--session", "scripts"), calls)
    for name, description in SCRIPTS.items():
        assert len(description) <= 300, name
        read = reads[name]
        assert read["success"] is True and read["data"] == name
        assert read["item"]["description"] == description, name  # FR-006: whole, in every script
        shown = listed[keys[name]]
        assert _size(shown) <= VIEW_LIMIT  # SC-003 is for what list shows
        assert shown["description"] == description or shown["description"].endswith("\u2026"), name
    # The cut ends at a character boundary: never half a family, a flag, or a letter without its marks.
    for name in ("family emoji", "flags", "rainbow flags and skin tones", "combining marks", "hangul jamo"):
        shown = listed[keys[name]]["description"]
        assert _is_cluster_prefix(shown, _split(SCRIPTS[name])), (name, shown[-12:])


def _split(text: str) -> list[str]:
    """Split text built from CLUSTERS (and spaces and letters) back into those clusters."""
    out, i = [], 0
    ordered = sorted(CLUSTERS, key=len, reverse=True)
    while i < len(text):
        piece = next((c for c in ordered if text.startswith(c, i)), text[i])
        out.append(piece)
        i += len(piece)
    return out


def test_a_description_over_300_characters_is_cut_between_characters(pad):
    family = FAMILY * 43  # 301 code points: the 43rd family would be split by a cut at 299
    stored = pad.write(1, family)["description"]
    assert stored == FAMILY * 42 + "\u2026"
    assert pad.read(pad.list()[0]["storageKey"])["description"] == stored
    combining = "a" + "\u0301" * 400  # one character of 401 code points: nothing whole fits
    assert pad.write(1, combining)["description"] == "\u2026"


def test_ideographic_and_no_break_spaces_are_kept(pad):
    written = "予算\u3000報告 prix\u00a0: 100\u202f€"
    assert pad.read(pad.write(1, written)["storageKey"])["description"] == written
    # What makes it one line still goes: line breaks, tabs and runs of spaces become one space.
    assert pad.write(1, "  first\n\nsecond\tthird   end ")["description"] == "first second third end"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(CLUSTERS), min_size=90, max_size=200),  # mostly past 300 code points
       session=st.sampled_from(["s", "x" * 64]), tag=st.sampled_from([None, {"k": "v" * 120}]))
def test_cuts_fall_between_characters_for_any_text(sqlite_store, parts, session, tag):
    """Whatever the mix of multi-code-point characters: the stored description is the text, or its
    first whole characters plus an ellipsis; the listed one is the stored one, or its first whole
    characters plus an ellipsis, within 500 bytes; read returns the stored one."""
    pad = Scratchpad(sqlite_store, session)
    text = "".join(parts)
    answer = json.loads(pad.handle_tool_call("scratchpad_write", {"data": 1, "description": text, "metadata": tag,
                                                                   "task_id": "t" * 32, "turn_id": "u" * 32}))
    stored = pad.read(answer["item"]["storageKey"])["description"]
    assert len(stored) <= 300 and _is_cluster_prefix(stored, parts)
    listed = json.loads(pad.handle_tool_call("scratchpad_list", {}))["items"][0]
    assert _size(listed) <= VIEW_LIMIT
    assert _is_cluster_prefix(listed["description"], _split(stored.removesuffix("\u2026")))
    read = json.loads(pad.handle_tool_call("scratchpad_read", {"key": answer["item"]["storageKey"]}))
    assert read["item"]["description"] == stored
    pad.end_session()


@pytest.mark.parametrize("name", ["chinese", "family emoji", "combining marks"])
def test_read_gives_the_whole_description_in_python_and_tool_answers(store, name):
    pad = Scratchpad(store, new_session())
    key = pad.write({"n": 1}, SCRIPTS[name])["storageKey"]
    assert pad.read(key)["description"] == SCRIPTS[name]
    assert json.loads(pad.handle_tool_call("scratchpad_read", {"key": key}))["item"]["description"] == SCRIPTS[name]
