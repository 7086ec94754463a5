"""Driving ``actioncache mcp`` as a desktop client does: the official MCP SDK's own client over
stdio, against the real server started as a subprocess of this checkout. Tests that use these
ask for the ``mcp_sdk`` fixture (conftest.py): without the SDK they skip locally and fail in CI."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any


def server(src_env: dict[str, str], *args: str) -> Any:
    """Parameters that start ``python -m actioncache mcp ARGS`` from this checkout."""
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "actioncache", "mcp", *args], env=src_env)


def run(params: Any, calls: Callable[[Any], Awaitable[Any]]) -> tuple[Any, Any]:
    """Start the server, initialize a client session, run ``calls(session)``; returns
    ``(initialize result, what calls returned)``. The server exits when the client closes."""
    import anyio

    async def session_calls() -> tuple[Any, Any]:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            return init, await calls(session)

    return anyio.run(session_calls)


def text_of(result: Any) -> str:
    """The tool answer's text, as the model reads it."""
    return str(result.content[0].text)


def answer_of(result: Any) -> dict[str, Any]:
    return dict(json.loads(text_of(result)))
