"""``actioncache run AGENT.yaml [--input JSON|@file.json] [--store URL] [--stream]
[--untrusted|--no-run [--root DIR] [--allow-host HOST]... [--allow-env VAR]...]``.

``--untrusted`` (alias ``--no-run``) runs an agent from elsewhere: see :mod:`actioncache.agents.trust`.

Prints the final state as JSON on stdout (with ``--stream``, one JSON line per node first).
Anything the agent itself prints (``print`` in ``run:`` blocks) goes to stderr, so stdout stays
machine-readable. Errors print one actionable line and exit with the error's code (see
:mod:`actioncache.agents.errors`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from .._usage import HelpfulParser
from .errors import AgentError, AgentInputError


def build_parser() -> argparse.ArgumentParser:
    parser = HelpfulParser(prog="actioncache run", description="Run a YAML agent and print its final state as JSON.")
    parser.add_argument("agent", help="the agent's YAML file")
    parser.add_argument("--input", metavar="JSON|@FILE", help="the input state: a JSON object, or @path to a JSON file")
    parser.add_argument("--store", metavar="URL", help="store URL; overrides settings.ltm (e.g. sqlite:///tmp/c.db, memory://)")
    parser.add_argument("--untrusted", "--no-run", dest="untrusted", action="store_true",
                        help="run an agent from elsewhere: no run: blocks, imports: or commands; files only under "
                             "--root; network only to --allow-host; ${VAR} only from --allow-env")
    parser.add_argument("--root", metavar="DIR", help="untrusted: the one directory file actions may use "
                                                       "(default: the agent's directory)")
    parser.add_argument("--allow-host", metavar="HOST", action="append", default=[],
                        help="untrusted: a host network actions may reach (repeat for more)")
    parser.add_argument("--allow-env", metavar="VAR", action="append", default=[],
                        help="untrusted: an environment variable ${VAR} may expand (repeat for more)")
    parser.add_argument("--stream", action="store_true", help="print one JSON line per node as it finishes")
    return parser


def read_input(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    source = "--input"
    if text.startswith("@"):
        source = text[1:]
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise AgentInputError(f"cannot read input file {source!r}: {exc.strerror or exc}") from exc
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise AgentInputError(f"{source} is not JSON ({exc}); example: --input '{{\"file_path\": \"report.pdf\"}}'") from exc
    except RecursionError as exc:
        raise AgentInputError(f"{source} nests too deeply to read (over Python's recursion limit); flatten it") from exc
    if not isinstance(value, dict):
        raise AgentInputError(f"{source} must be a JSON object of state fields, not {type(value).__name__}")
    return value


def _dump(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, default=repr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv_list = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv_list)
    if not args.untrusted and (args.root or args.allow_host or args.allow_env):
        parser.error("--root, --allow-host and --allow-env only apply with --untrusted")
    from .engine import load_agent
    from .runrecord import Watch

    stdout = sys.stdout
    try:
        state = read_input(args.input)
    except AgentInputError as exc:  # --input itself is unusable: a bad argument, like every other
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # A run decided by what it read leaves a record the next identical command replays without
    # loading the engine (agents/runhit.py); the watch decides, and records nothing otherwise.
    watch = None if args.stream else Watch(argv_list)
    try:
        with watch if watch is not None else contextlib.nullcontext():
            agent = load_agent(args.agent, store=args.store, trusted=not args.untrusted, root=args.root,
                               allow_hosts=args.allow_host, allow_env=args.allow_env)
            events: list[dict[str, Any]] = []
            try:
                final = state
                with contextlib.redirect_stdout(sys.stderr):
                    for event in agent.stream(state):
                        final = event["state"]
                        if watch is not None:
                            events.append(event)
                        if args.stream:
                            print(_dump({"node": event["node"], "duration_ms": event["duration_ms"],
                                         "result": event["result"]}), file=stdout, flush=True)
            finally:
                agent.close()
            text = _dump(final, indent=2)
            if watch is not None:
                watch.finish(agent, events, text + "\n")
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except RecursionError:  # a value nested past Python's limit, met while running: one line, not a traceback
        print("error: a value nests too deeply to process (past Python's recursion limit); flatten the input "
              "state or the agent's values", file=sys.stderr)
        return 2
    print(text, file=stdout)
    return 0
