"""``actioncache mcp``: the scratchpad tools as an MCP server over stdio (official ``mcp`` SDK, 2.x).

    actioncache mcp --store sqlite:///home/me/pad.db --session my-project

Desktop LLM clients (Claude Desktop, IDEs) start this as a subprocess and call the same tools an
API agent gets from ``tool_schemas()``, answered by the same ``dispatch``. The system prompt goes
out as the server's ``instructions``. Without ``--session`` (or ``$ACTIONCACHE_SESSION``) the server
makes a fresh session and ends it (deleting its items) when the client disconnects; with one, the
items stay for the next run. On start it removes orphaned sessions idle for over 24 hours, never
the session it is starting: that one is marked used first and left out of the sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any, Sequence

from .._usage import HelpfulParser
from .items import new_id
from .listing import DEFAULT_LIST_BUDGET

ENV_SESSION = "ACTIONCACHE_SESSION"


def build_parser() -> argparse.ArgumentParser:
    parser = HelpfulParser(prog="actioncache mcp", description="Serve the session scratchpad as MCP tools over stdio.")
    parser.add_argument("--store", metavar="URL", help="store URL (default: $ACTIONCACHE_URL or the user cache dir)")
    parser.add_argument("--session", metavar="ID",
                        help=f"session id (default: ${ENV_SESSION}, else a new session ended on exit)")
    parser.add_argument("--item-limit-mb", type=float, default=5.0, help="largest item, in MB (default 5)")
    parser.add_argument("--quota-mb", type=float, default=50.0, help="session quota, in MB (default 50)")
    parser.add_argument("--orphan-hours", type=float, default=24.0,
                        help="on start, delete other sessions idle longer than this (0 turns it off)")
    parser.add_argument("--list-budget-kb", type=float, default=DEFAULT_LIST_BUDGET / 1024,
                        help=f"largest scratchpad_list answer, in KB (default {DEFAULT_LIST_BUDGET / 1024:g}); "
                        "the rest is a nextCursor away")
    return parser


def build_server(pad: Any) -> Any:
    """An MCP low-level ``Server`` whose tools are the scratchpad's (``pad`` = a :class:`Scratchpad`)."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from .tools import SYSTEM_PROMPT, dispatch, tool_schemas

    tools = [types.Tool.model_validate(t) for t in tool_schemas("mcp")]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        # Store calls block (SQLite, Redis): run them off the event loop.
        answer = await anyio.to_thread.run_sync(
            lambda: dispatch(pad, params.name, dict(params.arguments or {}), listed_only=True))
        text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=answer,
            is_error=not answer.get("success", False),
        )

    return Server(
        "actioncache-scratchpad",
        instructions=SYSTEM_PROMPT,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(pad: Any) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(pad)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    import importlib.util

    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("anyio") is None:
        print("actioncache mcp needs the MCP SDK; install it with: pip install 'actioncache[mcp]'", file=sys.stderr)
        return 2
    import anyio

    from ..errors import StoreError
    from ..stores.base import open_store
    from .cleanup import cleanup_orphans
    from .errors import ScratchpadError
    from .scratchpad import MB, Scratchpad

    session = args.session or os.environ.get(ENV_SESSION) or ""
    ephemeral = not session
    try:
        store = open_store(args.store)
        pad = Scratchpad(store, session or f"mcp-{new_id()}",
                         item_limit_bytes=int(args.item_limit_mb * MB), session_quota_bytes=int(args.quota_mb * MB),
                         list_budget_bytes=int(args.list_budget_kb * 1024))
    except (ValueError, StoreError, ScratchpadError) as exc:
        print(f"actioncache mcp: {exc}", file=sys.stderr)
        return 2
    try:
        if not ephemeral:
            # Starting a named session is using it: marked before any sweep (this one or another
            # process's), so a session idle since yesterday is resumed, not removed.
            pad.touch()
        if args.orphan_hours > 0:
            cleanup_orphans(store, args.orphan_hours * 3600, keep=[pad.session_id])
    except ScratchpadError as exc:  # an unavailable store is reported per tool call instead
        print(f"actioncache mcp: start-up cleanup skipped: {exc}", file=sys.stderr)
    # A client that stops the server with SIGTERM still gets an ephemeral session ended below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        print(f"actioncache mcp: session {pad.session_id} on {getattr(store, 'url', store)}", file=sys.stderr)
        anyio.run(serve, pad)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        if ephemeral:
            try:
                pad.end_session()
            except ScratchpadError:
                pass
        store.close()
    return 0
