"""``actioncache mcp`` driven by the official MCP SDK's own client over stdio (a real subprocess)."""

from __future__ import annotations

import json
import sys

import pytest

from actioncache.scratchpad import SYSTEM_PROMPT, Scratchpad, tool_schemas
from actioncache.scratchpad.mcp_server import main
from actioncache.stores.base import open_store

from .mcp_client import run, server

pytestmark = pytest.mark.usefixtures("mcp_sdk")  # every test here starts the server or its main()


def test_tools_over_stdio_with_the_sdk_client(tmp_path, src_env):
    url = f"sqlite:///{tmp_path}/mcp.db"

    async def calls(session):
        listed = await session.list_tools()
        write = await session.call_tool("scratchpad_write", {"data": {"summary": "S"}, "description": "Email 1"})
        key = json.loads(write.content[0].text)["item"]["storageKey"]
        read = await session.call_tool("scratchpad_read", {"key": key})
        listing = await session.call_tool("scratchpad_list", {})
        foreign = await session.call_tool("scratchpad_read", {"key": "someone-else_abc_def"})
        too_big = await session.call_tool("scratchpad_write", {"data": "x" * 3000, "description": "big"})
        return listed, write, read, listing, foreign, too_big

    init, (listed, write, read, listing, foreign, too_big) = run(
        server(src_env, "--store", url, "--session", "desk-1", "--item-limit-mb", "0.002"), calls)
    from actioncache.scratchpad.tools import system_prompt

    # The instructions state the limits this server enforces (here a 2 KB item limit), not the defaults.
    assert init.instructions == system_prompt(int(0.002 * 1024 * 1024), 50 * 1024 * 1024, 4096)
    assert "2 KB per item" in init.instructions and init.instructions != SYSTEM_PROMPT
    assert [t.name for t in listed.tools] == [t["name"] for t in tool_schemas("mcp")]
    assert listed.tools[0].input_schema == tool_schemas("mcp")[0]["inputSchema"]
    assert write.is_error is False and "S" not in json.loads(write.content[0].text)["item"].values()
    assert json.loads(read.content[0].text)["data"] == {"summary": "S"}
    assert json.loads(listing.content[0].text)["count"] == 1
    assert foreign.is_error is True and json.loads(foreign.content[0].text)["error"] == "not_found"
    assert too_big.is_error is True and json.loads(too_big.content[0].text)["error"] == "item_too_large"
    # A named session outlives the server: the next run (or any process) still sees the item.
    store = open_store(url)
    try:
        assert [m["description"] for m in Scratchpad(store, "desk-1").list()] == ["Email 1"]
    finally:
        store.close()


def test_a_server_without_a_session_ends_its_own_on_exit(tmp_path, src_env):
    url = f"sqlite:///{tmp_path}/mcp.db"
    src_env.pop("ACTIONCACHE_SESSION", None)

    async def calls(session):
        answer = await session.call_tool("scratchpad_write", {"data": 1, "description": "temporary"})
        return json.loads(answer.content[0].text)["sessionId"]

    _, session_id = run(server(src_env, "--store", url), calls)
    assert session_id.startswith("mcp-")
    store = open_store(url)
    try:
        assert store.find(pattern="scratch*") == []
    finally:
        store.close()


def test_bad_arguments_exit_with_a_message(capsys):
    assert main(["--store", "nonsense", "--session", "s"]) == 2
    assert "not a store URL" in capsys.readouterr().err
    assert main(["--store", "memory://", "--session", "bad session!"]) == 2
    assert "session id" in capsys.readouterr().err


def test_sigterm_still_ends_an_ephemeral_session(tmp_path, src_env):
    import re
    import signal
    import subprocess

    url = f"sqlite:///{tmp_path}/mcp.db"
    src_env.pop("ACTIONCACHE_SESSION", None)
    proc = subprocess.Popen([sys.executable, "-m", "actioncache", "mcp", "--store", url], env=src_env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stderr.readline()
        session = re.search(r"session (mcp-\w+)", banner).group(1)
        store = open_store(url)
        Scratchpad(store, session).write("left by a tool call", "item of the server's session")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert Scratchpad(store, session).list() == []
        store.close()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_only_listed_tools_can_be_called_over_mcp(tmp_path, src_env):
    """scratchpad_end is not in the tool list, so a client cannot call it (it would wipe the session)."""
    url = f"sqlite:///{tmp_path}/mcp.db"

    async def calls(session):
        await session.call_tool("scratchpad_write", {"data": 1, "description": "keep me"})
        return [await session.call_tool(name, {}) for name in ("scratchpad_end", "end", "nope")]

    _, answers = run(server(src_env, "--store", url, "--session", "desk-2"), calls)
    for answer in answers:
        assert answer.is_error is True and json.loads(answer.content[0].text)["error"] == "unknown_tool"
    store = open_store(url)
    try:
        assert [m["description"] for m in Scratchpad(store, "desk-2").list()] == ["keep me"]
    finally:
        store.close()


def test_unknown_arguments_are_refused_replacements_are_told_and_errors_stay_short(tmp_path, src_env):
    """A model that mirrors the answers' spelling (taskId) must not list unfiltered or write under a
    random task; a write over the same task and turn says what it replaced; an error never echoes a
    huge bad argument back into the model's context."""
    url = f"sqlite:///{tmp_path}/mcp.db"

    async def calls(session):
        first = await session.call_tool("scratchpad_write", {"data": 1, "description": "inbox 1", "task_id": "inbox",
                                                             "turn_id": "t1"})
        again = await session.call_tool("scratchpad_write", {"data": 2, "description": "inbox 1 again",
                                                             "task_id": "inbox", "turn_id": "t1"})
        camel = await session.call_tool("scratchpad_write", {"data": 3, "description": "x", "taskId": "inbox"})
        listed = await session.call_tool("scratchpad_list", {"taskId": "inbox"})
        typo = await session.call_tool("scratchpad_list", {"limt": 1})
        huge = await session.call_tool("scratchpad_list", {"task_id": "t" * 1_000_000})
        return first, again, camel, listed, typo, huge

    _, (first, again, camel, listed, typo, huge) = run(server(src_env, "--store", url, "--session", "desk-3"), calls)
    assert "replaced" not in json.loads(first.content[0].text)
    assert json.loads(again.content[0].text)["replaced"]["description"] == "inbox 1"
    for answer, said in ((camel, "'task_id'"), (listed, "'task_id'"), (typo, "'limit'")):
        body = json.loads(answer.content[0].text)
        assert answer.is_error is True and body["error"] == "invalid_argument" and said in body["message"], body
    assert huge.is_error is True and len(huge.content[0].text) < 4000
    store = open_store(url)
    try:
        assert [m["description"] for m in Scratchpad(store, "desk-3").list()] == ["inbox 1 again"]  # nothing else
    finally:
        store.close()


@pytest.mark.parametrize("option,value,says", [
    ("--quota-mb", "1e400", "--quota-mb must be a positive number"),
    ("--item-limit-mb", "1e400", "--item-limit-mb must be a positive number"),
    ("--quota-mb", "nan", "--quota-mb must be a positive number"),
    ("--list-budget-kb", "inf", "--list-budget-kb must be a positive number"),
    ("--orphan-hours", "-1", "--orphan-hours must be 0 (off) or a positive number"),
    ("--orphan-hours", "nan", "--orphan-hours must be 0 (off) or a positive number"),
    ("--session", "", "--session is empty"),
])
def test_odd_numbers_and_an_empty_session_are_refused_in_one_line(capsys, option, value, says):
    """--quota-mb 1e400 printed an OverflowError traceback, nan named no option, --orphan-hours -1
    or nan started silently, and --session "" (an unset $PROJECT) made a throw-away session."""
    try:
        code = main(["--store", "memory://", option, value])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_a_named_session_on_a_memory_store_is_warned_about(tmp_path, src_env):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "actioncache", "mcp", "--store", "memory://", "--session", "proj"],
                          env=src_env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "keeps nothing after exit" in done.stderr
