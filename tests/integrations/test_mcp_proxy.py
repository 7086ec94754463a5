"""`actioncache mcp-proxy` with the official MCP SDK client, in front of a real SDK server (stdio)."""

from __future__ import annotations

import sys
import textwrap

import pytest
import services

SERVER = textwrap.dedent('''
    """A real MCP server (the SDK's MCPServer): every real call appends a line to a log file."""
    import sys
    from pathlib import Path

    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    log = Path(sys.argv[1])
    server = MCPServer("counting-server")

    def record(line: str) -> int:
        with log.open("a") as f:
            f.write(line + "\\n")
        return len(log.read_text().splitlines())

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(word: str, limit: int = 3) -> str:
        """A read-only lookup."""
        return f"{word}/{limit} #{record('lookup ' + word)}"

    @server.tool()
    def append_note(text: str) -> str:
        """Writes: never cached."""
        return f"noted {text} #{record('append ' + text)}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def flaky(word: str) -> str:
        """Read-only, but fails."""
        record("flaky " + word)
        raise ValueError("upstream is down")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def env_value(name: str) -> str:
        """Read-only: one variable of the server's environment."""
        import os
        return os.environ.get(name, "(unset)")

    @server.tool()
    def stats_view(name: str) -> str:
        """No hint; the user lists it with --cache-tool."""
        return f"{name} #{record('stats ' + name)}"

    server.run()
''')


@pytest.fixture(autouse=True)
def _needs_mcp():
    services.require_module("mcp", "mcp")


def _proxy_params(tmp_path, src_env, *options: str):
    from mcp.client.stdio import StdioServerParameters

    server = tmp_path / "counting_server.py"
    server.write_text(SERVER)
    log = tmp_path / "calls.log"
    command = [sys.executable, "-m", "actioncache", "mcp-proxy", "--store", f"sqlite:///{tmp_path}/mcp.db",
               *options, "--", sys.executable, str(server), str(log)]
    return StdioServerParameters(command=command[0], args=command[1:], env=src_env), log


def _session(params, calls):
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def go():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                return init, await calls(session)

    return anyio.run(go)


def _text(result) -> str:
    return result.content[0].text


def test_read_only_calls_are_cached_others_pass_through(tmp_path, src_env) -> None:
    params, log = _proxy_params(tmp_path, src_env)

    async def calls(session):
        tools = await session.list_tools()
        return tools, [
            await session.call_tool("lookup", {"word": "cat"}),
            await session.call_tool("lookup", {"word": "cat", "limit": 3}),   # the default, spelled out: another key
            await session.call_tool("lookup", {"word": "cat"}),
            await session.call_tool("lookup", {"word": "dog"}),
            await session.call_tool("append_note", {"text": "a"}),
            await session.call_tool("append_note", {"text": "a"}),
            await session.call_tool("flaky", {"word": "x"}),
            await session.call_tool("flaky", {"word": "x"}),
        ]

    init, (tools, results) = _session(params, calls)
    assert init.server_info.name == "counting-server"
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) == {"lookup", "append_note", "flaky", "env_value", "stats_view"}
    assert by_name["lookup"].annotations.read_only_hint is True          # listed unchanged
    assert by_name["lookup"].input_schema["properties"]["word"]["type"] == "string"
    lookup_cat, lookup_cat_limit, lookup_cat_again, lookup_dog, note1, note2, flaky1, flaky2 = results
    assert _text(lookup_cat_again) == _text(lookup_cat)                  # a hit: same call number
    assert _text(lookup_dog) != _text(lookup_cat)
    assert _text(note1) != _text(note2)                                  # not read-only: ran twice
    assert flaky1.is_error and flaky2.is_error                            # errors pass through...
    lines = log.read_text().splitlines()
    assert lines.count("lookup cat") == 2 and lines.count("lookup dog") == 1
    assert lines.count("append a") == 2
    assert lines.count("flaky x") == 2                                   # ...and are never cached

    # a new proxy process on the same store: the read-only answer survives, the write still runs
    async def again(session):
        return [await session.call_tool("lookup", {"word": "cat"}), await session.call_tool("append_note", {"text": "a"})]

    _, (cat, note3) = _session(params, again)
    assert _text(cat) == _text(lookup_cat)
    assert log.read_text().splitlines().count("append a") == 3


def test_user_listed_tools_are_cached_and_excluded_ones_are_not(tmp_path, src_env) -> None:
    params, log = _proxy_params(tmp_path, src_env, "--cache-tool", "stats_view", "--no-cache-tool", "lookup")

    async def calls(session):
        return [await session.call_tool(name, args) for name, args in
                [("stats_view", {"name": "n"}), ("stats_view", {"name": "n"}),
                 ("lookup", {"word": "w"}), ("lookup", {"word": "w"})]]

    _, (s1, s2, l1, l2) = _session(params, calls)
    assert _text(s1) == _text(s2) and _text(l1) != _text(l2)
    lines = log.read_text().splitlines()
    assert lines.count("stats n") == 1 and lines.count("lookup w") == 2


def test_another_server_command_does_not_share_entries(tmp_path, src_env) -> None:
    params, log = _proxy_params(tmp_path, src_env)

    async def calls(session):
        return await session.call_tool("lookup", {"word": "cat"})

    first = _session(params, calls)[1]
    other = params.model_copy(update={"args": [*params.args, "--extra-flag"]})
    second = _session(other, calls)[1]
    assert _text(first) != _text(second)
    assert log.read_text().splitlines().count("lookup cat") == 2


def _lookup_twice_in_two_environments(tmp_path, src_env, *options: str):
    params, log = _proxy_params(tmp_path, src_env, *options)

    async def calls(session):
        return await session.call_tool("lookup", {"word": "cat"})

    prod = _session(params.model_copy(update={"env": {**src_env, "DB_NAME": "prod-secret-value"}}), calls)[1]
    staging = _session(params.model_copy(update={"env": {**src_env, "DB_NAME": "staging"}}), calls)[1]
    return _text(prod), _text(staging), log.read_text().splitlines().count("lookup cat")


def test_the_same_command_in_another_environment_does_not_share_entries(tmp_path, src_env) -> None:
    prod, staging, real_calls = _lookup_twice_in_two_environments(tmp_path, src_env)
    assert prod != staging and real_calls == 2
    stored = (tmp_path / "mcp.db").read_bytes()
    assert b"prod-secret-value" not in stored                     # the environment enters as a digest only


def test_server_id_names_the_identity_and_shares_entries_across_environments(tmp_path, src_env) -> None:
    prod, staging, real_calls = _lookup_twice_in_two_environments(tmp_path, src_env, "--server-id", "reports-db")
    assert prod == staging and real_calls == 1                    # the user said: one server


@pytest.mark.parametrize("name", ["SHLVL", "PWD", "OLDPWD", "_", "COLUMNS", "LINES", "SSH_AUTH_SOCK", "SSH_TTY",
                                  "TERM_SESSION_ID", "WINDOWID", "XDG_SESSION_ID", "PATH", "DB_NAME"])
def test_environment_digest_keys_every_variable_the_child_gets(name) -> None:
    from actioncache.integrations.mcp_proxy import environment_digest

    base = {"PATH": "/usr/bin", "DB_NAME": "prod", "SHLVL": "1", "PWD": "/srv"}
    changed = {**base, name: base.get(name, "") + "2"}
    assert environment_digest(base) != environment_digest(changed)              # changed value
    assert environment_digest(base) != environment_digest({k: v for k, v in base.items() if k != name} if name in base
                                                          else {**base, name: ""})  # absent vs present
    assert "prod" not in environment_digest(base)


def test_a_server_answering_from_a_terminal_variable_is_not_served_another_terminals_answer(tmp_path, src_env) -> None:
    # a read-only tool whose answer depends on SHLVL (a shell wrapper's level, say): started from
    # two shells, the second must not get the first one's answer
    params, log = _proxy_params(tmp_path, src_env)

    async def calls(session):
        return await session.call_tool("env_value", {"name": "SHLVL"})

    first = _session(params.model_copy(update={"env": {**src_env, "SHLVL": "1"}}), calls)[1]
    second = _session(params.model_copy(update={"env": {**src_env, "SHLVL": "2"}}), calls)[1]
    assert (_text(first), _text(second)) == ("1", "2")


def test_a_server_that_exits_at_start_is_a_clear_error_not_a_traceback(src_env, tmp_path) -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "actioncache", "mcp-proxy", "--store", f"sqlite:///{tmp_path}/m.db",
                           "--", sys.executable, "-c", "import sys; sys.exit(3)"],
                          capture_output=True, text=True, env=src_env, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "stopped answering" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_missing_command_is_a_clear_error(src_env) -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "actioncache", "mcp-proxy", "--store", "memory://"],
                          capture_output=True, text=True, env=src_env, timeout=60)
    assert done.returncode == 2 and "give the MCP server's command after --" in done.stderr


def test_help_lists_the_options(src_env) -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "actioncache", "mcp-proxy", "--help"],
                          capture_output=True, text=True, env=src_env, timeout=60)
    assert done.returncode == 0 and "--cache-tool" in done.stdout and "--no-cache-tool" in done.stdout
    assert "--server-id" in done.stdout
