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
import math
import os
import re
import signal
import sys
from typing import Any, Iterator, Sequence

from .._usage import HelpfulParser
from .items import new_id
from .listing import DEFAULT_LIST_BUDGET

ENV_SESSION = "ACTIONCACHE_SESSION"


def _number(option: str, *, zero_ok: bool = False) -> Any:
    """An argparse type: a finite positive number (or 0, ``zero_ok``), refused with a sentence
    naming the option (``--quota-mb 1e400`` printed an OverflowError traceback, ``--orphan-hours -1``
    or ``nan`` started without a word)."""
    what = "0 (off) or a positive number" if zero_ok else "a positive number"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok) or value > 1e9:
            raise argparse.ArgumentTypeError(f"{option} must be {what} (at most 1e9), not {text!r}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = HelpfulParser(prog="actioncache mcp", description="Serve the session scratchpad as MCP tools over stdio.")
    parser.add_argument("--store", metavar="URL", help="store URL (default: $ACTIONCACHE_URL or the user cache dir)")
    parser.add_argument("--session", metavar="ID",
                        help=f"session id (default: ${ENV_SESSION}, else a new session ended on exit)")
    parser.add_argument("--item-limit-mb", type=_number("--item-limit-mb"), default=5.0,
                        help="largest item, in MB (default 5)")
    parser.add_argument("--quota-mb", type=_number("--quota-mb"), default=50.0, help="session quota, in MB (default 50)")
    parser.add_argument("--orphan-hours", type=_number("--orphan-hours", zero_ok=True), default=24.0,
                        help="on start, delete other sessions idle longer than this (0 turns it off; a named "
                        "session is kept 7 days idle)")
    parser.add_argument("--list-budget-kb", type=_number("--list-budget-kb"), default=DEFAULT_LIST_BUDGET / 1024,
                        help=f"largest scratchpad_list answer, in KB (default {DEFAULT_LIST_BUDGET / 1024:g}); "
                        "the rest is a nextCursor away")
    return parser


def build_server(pad: Any) -> Any:
    """An MCP low-level ``Server`` whose tools are the scratchpad's (``pad`` = a :class:`Scratchpad`)."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from .tools import dispatch, system_prompt, tool_schemas

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
        # The limits this server enforces, not the defaults.
        instructions=system_prompt(pad.item_limit_bytes, pad.session_quota_bytes, pad.list_budget_bytes),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# JSON-RPC error codes (the spec's): the line is not JSON; the JSON is not a request the server takes.
_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600
_TOO_DEEP = "the request is nested too deeply to read (send data nested under about 100 levels)"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _repaired(value: Any, depth: int = 0) -> Any:
    """``value`` with every lone UTF-16 surrogate (JSON ``"\\ud83d"``: half an emoji a model split)
    replaced by U+FFFD, the character a decoder puts for what it cannot read."""
    if depth > 1000:
        raise RecursionError("nested too deeply")
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if not value.isascii() else value
    if isinstance(value, list):
        return [_repaired(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_repaired(k, depth + 1): _repaired(v, depth + 1) for k, v in value.items()}
    return value


def _top_level_id(line: str) -> int | str | None:
    """The ``id`` member of the JSON object ``line`` at its top level, read without parsing the
    rest (for a line too deeply nested to parse): the request to answer with an error."""
    depth, i, n = 0, 0, len(line)
    while i < n:
        c = line[i]
        if c == '"':
            end = i + 1
            while end < n and line[end] != '"':
                end += 2 if line[end] == "\\" else 1
            if depth == 1 and line[i:end + 1] == '"id"':
                match = re.match(r'\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")', line[end + 1:end + 260])
                if match:
                    try:
                        found = json.loads(match.group(1))
                    except ValueError:
                        return None
                    return found if isinstance(found, (int, str)) and not isinstance(found, bool) else None
            i = end + 1
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1
    return None


def read_message(line: str) -> tuple[Any, Any]:
    """One stdin line as ``(message, None)`` for the server, or ``(None, error answer)`` for a
    request the server could not take: every request id gets an answer.

    The SDK's own reader drops what its validator refuses without a word, so a request holding a
    lone surrogate escape or nested a few hundred levels deep was never answered and the client
    waited forever. Here a lone surrogate becomes U+FFFD (the request then runs), and a request
    that still cannot be read is answered with a JSON-RPC error carrying its id.
    """
    import mcp_types as types

    adapter = types.jsonrpc_message_adapter
    try:
        return adapter.validate_json(line, by_name=False), None
    except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError and friends: repaired below
        first = exc
    problem, code, request_id = "", _INVALID_REQUEST, None
    try:
        value = json.loads(line)
    except RecursionError:
        value, problem, request_id = None, _TOO_DEEP, _top_level_id(line)
    except ValueError as exc:
        value, problem, code = None, f"not JSON ({str(exc)[:80]})", _PARSE_ERROR
        request_id = _top_level_id(line)
    if value is not None:
        request_id = value.get("id") if isinstance(value, dict) else None
        try:
            return adapter.validate_json(json.dumps(_repaired(value), ensure_ascii=False), by_name=False), None
        except RecursionError:
            problem = _TOO_DEEP
        except Exception as exc:  # noqa: BLE001 - not a JSON-RPC message the server takes
            text = str(exc)
            problem = (_TOO_DEEP if "recursion" in text.lower() else
                       f"not a JSON-RPC message the server takes ({' '.join(text.split())[:200]})")
    if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
        return None, first  # a notification or no id at all: nobody waits for an answer
    error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=problem))
    return None, error


def _lines(fd: int) -> Iterator[bytes]:
    """The lines of file descriptor ``fd`` (os.read: no buffered-reader lock that a daemon thread
    still blocked in a read would hold while the interpreter exits)."""
    pending = b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        pending += chunk
        if b"\n" in chunk:
            *lines, pending = pending.split(b"\n")
            yield from lines
    if pending:
        yield pending


async def serve(pad: Any) -> None:
    """Serve ``pad`` over stdin/stdout until stdin closes or SIGTERM, SIGINT or SIGHUP arrives.

    stdin is read here, not by the SDK's reader: every request gets an answer (see
    :func:`read_message`), and a signal ends the server at once (the SDK reads stdin in a worker
    thread that no signal interrupts: SIGTERM and Ctrl-C did nothing while the client kept stdin open).
    """
    import threading

    import anyio
    import anyio.from_thread
    import anyio.lowlevel
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    server = build_server(pad)
    to_server, from_stdin = anyio.create_memory_object_stream[Any](0)

    async def no_input() -> Any:  # the SDK's reader gets nothing: stdin is read below
        return
        yield

    class _NoInput:
        def __aiter__(self) -> Any:
            return no_input()

    async with stdio_server(stdin=_NoInput()) as (_, write_stream):  # type: ignore[arg-type]
        token = anyio.lowlevel.current_token()

        async def deliver(line: str) -> None:
            message, problem = read_message(line)
            if message is not None:
                await to_server.send(SessionMessage(message))
            elif isinstance(problem, Exception):
                await to_server.send(problem)
            else:
                await write_stream.send(SessionMessage(problem))

        def read_stdin() -> None:  # a daemon thread: a blocked read never holds up the exit
            try:
                for raw in _lines(sys.stdin.fileno()):
                    line = raw.decode("utf-8", errors="replace").strip()
                    if line:
                        anyio.from_thread.run(deliver, line, token=token)
            except Exception:  # noqa: BLE001 - the loop is gone (the server is stopping)
                return
            finally:
                try:
                    anyio.from_thread.run_sync(to_server.close, token=token)
                except Exception:  # noqa: BLE001 - the loop is gone already
                    pass

        async with anyio.create_task_group() as tg:

            async def stop_on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                    async for _ in signals:
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(stop_on_signal)
            threading.Thread(target=read_stdin, name="actioncache-mcp-stdin", daemon=True).start()
            await server.run(from_stdin, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()


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
    from .scratchpad import DEFAULT_RETENTION_S, MB, Scratchpad

    session = args.session if args.session is not None else os.environ.get(ENV_SESSION) or ""
    if args.session is not None and not args.session.strip():
        # `--session "$PROJECT"` with the variable unset: a throw-away session would be deleted at exit.
        print("actioncache mcp: --session is empty; give a session id (its items stay for the next run), "
              "or leave the option out for a throw-away session", file=sys.stderr)
        return 2
    ephemeral = not session
    try:
        store = open_store(args.store)
        pad = Scratchpad(store, session or f"mcp-{new_id()}",
                         item_limit_bytes=int(args.item_limit_mb * MB), session_quota_bytes=int(args.quota_mb * MB),
                         list_budget_bytes=int(args.list_budget_kb * 1024),
                         # A named session is the user's project: other processes' sweeps keep it 7 idle days.
                         keep_idle_s=None if ephemeral else DEFAULT_RETENTION_S)
    except (ValueError, StoreError, ScratchpadError) as exc:
        print(f"actioncache mcp: {exc}", file=sys.stderr)
        return 2
    if not ephemeral and str(getattr(store, "url", "")).split(":", 1)[0].endswith("memory"):
        print(f"actioncache mcp: warning: {getattr(store, 'url', store)} keeps nothing after exit, so session "
              f"{pad.session_id}'s items go when this server stops; use a file or server store to keep them",
              file=sys.stderr)
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
