"""``actioncache mcp-proxy``: a caching MCP proxy in front of any MCP server (stdio).

    actioncache mcp-proxy --store sqlite:///home/me/mcp.db -- npx -y @some/mcp-server /data

The proxy starts the server command as its child, speaks MCP to it with the official SDK's client,
and serves the same tools, unchanged, to whoever started the proxy (a desktop client, an agent).
A tool call is answered from the cache when the tool declares ``readOnlyHint: true`` (or is named
with ``--cache-tool``) and the same call was answered before; every other call goes through.
``--no-cache-tool`` keeps a tool out even if it says it is read-only.

The key is the tool name, the canonical JSON of its arguments and the server's identity: the
command line, the working directory, a SHA-256 digest of the environment the child is started with
(every variable the child gets, names and values; values never stored) and the name and version
the server reports. ``--server-id NAME`` replaces the command line, directory and
environment digest with NAME: you then promise that every run under that name answers alike. A result with
``isError: true`` and a call that raised are never stored. Resources and prompts, when the server
has them, pass through uncached. Install with ``pip install 'actioncache[mcp]'``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Mapping, Sequence

from .._time import face_ttl
from .._usage import HelpfulParser
from ..cache import Cache
from ..errors import ActionCacheError
from ..keys import args_key, sha256_hex

ACTION_PREFIX = "mcp."


def build_parser() -> argparse.ArgumentParser:
    parser = HelpfulParser(
        prog="actioncache mcp-proxy",
        usage="actioncache mcp-proxy [--store URL] [--server-id NAME] [--cache-tool NAME] [--no-cache-tool NAME] -- COMMAND [ARG ...]",
        description="Serve an MCP server's tools over stdio, answering read-only tool calls from the cache.")
    parser.add_argument("--store", metavar="URL", help="store URL (default: $ACTIONCACHE_URL or the user cache dir)")
    parser.add_argument("--cache-tool", metavar="NAME", action="append", default=[],
                        help="also cache this tool (repeatable), even without readOnlyHint")
    parser.add_argument("--no-cache-tool", metavar="NAME", action="append", default=[],
                        help="never cache this tool (repeatable), even with readOnlyHint")
    parser.add_argument("--server-id", metavar="NAME", default=None,
                        help="name this server's identity yourself instead of its command line, directory and "
                             "environment digest (entries are shared by every run with the same NAME)")
    parser.add_argument("--ttl", type=float, default=None, metavar="SECONDS",
                        help="entry lifetime in seconds (default: the cache's, 60 days)")
    parser.add_argument("--ttl-seconds", dest="ttl_seconds", type=float, default=None, help=argparse.SUPPRESS)
    return parser


class ToolPolicy:
    """Which tools are cached: read-only by their own annotation, or listed by the user."""

    def __init__(self, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        self.include, self.exclude = set(include), set(exclude)
        self.read_only: set[str] = set()
        self.listed = False

    def learn(self, tools: Sequence[Any]) -> None:
        self.listed = True
        for tool in tools:
            hint = getattr(getattr(tool, "annotations", None), "read_only_hint", None)
            (self.read_only.add if hint is True else self.read_only.discard)(tool.name)

    def cacheable(self, name: str) -> bool:
        return name not in self.exclude and (name in self.include or name in self.read_only)


def environment_digest(env: Mapping[str, str]) -> str:
    """SHA-256 of the environment the child is started with: every variable, names and values. No
    variable is left out by name: a server can answer from any of them (``PWD`` through a shell
    wrapper, ``COLUMNS`` in a table's width, ``SSH_AUTH_SOCK`` in which keys it may use), so two
    environments that differ in anything never share entries. A terminal's own variables make a
    server started from another terminal miss once; ``--server-id`` names the identity instead."""
    return sha256_hex(dict(env))


def server_identity(command: Sequence[str], server_info: Any, cwd: str | None = None,
                    env: Mapping[str, str] | None = None, server_id: str | None = None) -> dict[str, Any]:
    """What tells one server from another: its command line, directory, environment digest and
    reported name/version; or, when the user named it (``server_id``), that name and the reported ones."""
    reported = {"name": getattr(server_info, "name", None), "version": getattr(server_info, "version", None)}
    if server_id is not None:
        return {"server_id": server_id, **reported}
    return {"command": list(command), "cwd": cwd or os.getcwd(),
            "env_sha256": environment_digest(os.environ if env is None else env), **reported}


def tool_call_key(tool: str, arguments: Any, identity: dict[str, Any]) -> str:
    return args_key(ACTION_PREFIX + tool, {"tool": tool, "arguments": arguments or {}, "server": identity})


class _ToolError(ActionCacheError):
    """An ``isError`` result: a failure for the cache (never stored), returned to the client as it was."""


def build_proxy(upstream: Any, init: Any, command: Sequence[str], cache: Cache, policy: ToolPolicy,
                ttl_seconds: float | None = None, env: Mapping[str, str] | None = None,
                server_id: str | None = None) -> Any:
    """An MCP low-level ``Server`` that forwards to the ``upstream`` client session."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    identity = server_identity(command, init.server_info, env=env, server_id=server_id)
    options: dict[str, Any] = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}

    async def list_tools(ctx: Any, params: Any) -> Any:
        listed = await upstream.list_tools(params=params)
        policy.learn(listed.tools)
        return listed

    async def call_tool(ctx: Any, params: Any) -> Any:
        name, arguments = params.name, dict(params.arguments or {})
        if not policy.listed:
            policy.learn((await upstream.list_tools()).tools)  # a client that calls without listing first
        if not policy.cacheable(name):
            return await upstream.call_tool(name, arguments)
        answered: list[Any] = []

        async def run() -> dict[str, Any]:
            result = await upstream.call_tool(name, arguments)
            answered.append(result)
            if getattr(result, "is_error", False) or not isinstance(result, types.CallToolResult):
                raise _ToolError(name)
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        answer = await cache.awrap(ACTION_PREFIX + name, run, {}, key=tool_call_key(name, arguments, identity),
                                   metadata={"mcp_tool": name, "mcp_server": identity["name"]}, **options)
        if answer.get("_cache_hit"):
            return types.CallToolResult.model_validate(answer["result"])
        if answered:
            return answered[0]
        raise RuntimeError(answer.get("error") or f"calling {name} failed")

    capabilities = init.capabilities
    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool}
    if getattr(capabilities, "resources", None) is not None:
        async def list_resources(ctx: Any, params: Any) -> Any:
            return await upstream.list_resources(params=params)

        async def read_resource(ctx: Any, params: Any) -> Any:
            return await upstream.read_resource(params.uri)

        handlers.update(on_list_resources=list_resources, on_read_resource=read_resource)
    if getattr(capabilities, "prompts", None) is not None:
        async def list_prompts(ctx: Any, params: Any) -> Any:
            return await upstream.list_prompts(params=params)

        async def get_prompt(ctx: Any, params: Any) -> Any:
            return await upstream.get_prompt(params.name, params.arguments)

        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    info = init.server_info
    return Server(info.name, version=info.version or "", instructions=init.instructions, **handlers)


async def serve(command: Sequence[str], cache: Cache, policy: ToolPolicy, ttl_seconds: float | None = None,
                server_id: str | None = None) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.server.stdio import stdio_server

    # the child gets this process's environment, as it would when started without the proxy
    env = dict(os.environ)
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env)
    async with stdio_client(params) as (up_read, up_write), ClientSession(up_read, up_write) as upstream:
        init = await upstream.initialize()
        server = build_proxy(upstream, init, command, cache, policy, ttl_seconds, env=env, server_id=server_id)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(argv[:argv.index("--")] if "--" in argv else argv):
        build_parser().print_help()
        return 0
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        build_parser().print_usage(sys.stderr)
        print("actioncache mcp-proxy: give the MCP server's command after --, e.g. "
              "actioncache mcp-proxy -- python my_server.py", file=sys.stderr)
        return 2
    split = argv.index("--")
    args = build_parser().parse_args(argv[:split])
    try:
        ttl = face_ttl(args.ttl, args.ttl_seconds, "actioncache mcp-proxy")
    except ValueError as exc:
        print(f"actioncache mcp-proxy: {exc}", file=sys.stderr)
        return 2
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        print("actioncache mcp-proxy needs the MCP SDK: pip install 'actioncache[mcp]'", file=sys.stderr)
        return 2
    import anyio

    cache = Cache(args.store)
    try:
        anyio.run(serve, argv[split + 1:], cache, ToolPolicy(args.cache_tool, args.no_cache_tool), ttl,
                  args.server_id)
    except Exception as exc:  # noqa: BLE001 - the server died or never spoke MCP: say so, not a traceback
        print(f"actioncache mcp-proxy: the MCP server {' '.join(argv[split + 1:])!r} stopped answering "
              f"({_first_cause(exc)}); run the command alone to see why", file=sys.stderr)
        return 1
    finally:
        cache.close()
    return 0


def _first_cause(exc: BaseException) -> str:
    """The innermost error of an exception group (anyio wraps the SDK's in task groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
