"""The ``actioncache`` command.

Sub-commands that belong to a face live in that face's package and are imported only when
asked for (``run`` → agents, ``exec`` → runs, ``mcp`` → scratchpad), so ``actioncache exec``
on a cache hit pays for as little import time as possible.

Exit codes: 0 done; 1 the store failed or is not there; 2 a bad argument (including a store URL
that cannot be used); 3 ``get`` found no entry.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any, Callable, Sequence

from ._usage import HelpfulParser

# name -> (module with main(argv) -> int, one-line help)
FACE_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("actioncache.agents.cli", "run a YAML agent and print the final state as JSON"),
    "exec": ("actioncache.runs.cli", "run a command through the cache (verifiers, reads, read-only LLM steps)"),
    "mcp": ("actioncache.scratchpad.mcp_server", "serve the session scratchpad as MCP tools over stdio"),
    "mcp-proxy": ("actioncache.integrations.mcp_proxy", "cache an MCP server's read-only tool calls (stdio proxy)"),
    "loop-stats": ("actioncache.runs.stats", "print a loop's Cache Statistics block: exec hits, misses and time saved since WHEN"),
    "doctor": ("actioncache.runs.doctor", "check that a loop's cache works: variables reach a child, store, a hit"),
    "trust": ("actioncache.trust", "let a directory's config file choose the store and the mode"),
}


def _store_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help="store URL (default: $ACTIONCACHE_URL, else the loop "
                        "config's store, else the user cache dir)")
    parser.add_argument("--json", action="store_true", help="print JSON for machines instead of a table")


def _since(text: str) -> str:
    """``--since``: checked while parsing, so a value that is not a time is a usage error (exit 2)."""
    from .runs.log import parse_since

    try:
        parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--since ")) from None
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _sentence(help_text: str) -> str:
    """A subcommand's one-line help as the description its own --help shows."""
    return help_text[:1].upper() + help_text[1:] + "."


def _version() -> str:
    from . import __version__

    return f"actioncache {__version__}"


def build_parser() -> argparse.ArgumentParser:
    parser = HelpfulParser(
        prog="actioncache",
        description="Cache the expensive steps of agents and scripts: look at, clear and manage the cache, "
        "run YAML agents, and put the cache in front of shell commands.",
        epilog="`actioncache COMMAND --help` explains a command. Documentation: README.md and docs/ in the project.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in FACE_COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)

    p = sub.add_parser("stats", help="hits, misses, time saved and size, in total and per action", description=_sentence("hits, misses, time saved and size, in total and per action"))
    _store_args(p)
    p.add_argument("--since", metavar="WHEN", type=_since,
                   help="only what happened since WHEN (the `actioncache exec` runs, from their run log): a span "
                        "(30m, 2h, 7d) or an ISO time")

    p = sub.add_parser("get", help="show one entry without running anything", description=_sentence("show one entry without running anything"))
    p.add_argument("key", help="the entry's key, e.g. cache:extract:<hash> (the cache: prefix may be left out)")
    p.add_argument("--metadata", action="store_true", help="include the entry's metadata")
    _store_args(p)

    p = sub.add_parser("invalidate", help="delete entries by key, glob pattern, action or metadata", description=_sentence("delete entries by key, glob pattern, action or metadata"))
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--key", help="one exact key")
    group.add_argument("--pattern", help="a glob over keys, e.g. 'cache:extract:*'")
    group.add_argument("--action", help="every entry stored by this action")
    group.add_argument("--metadata", metavar="JSON", help='a metadata filter, e.g. \'{"_cache_type": "action_result"}\'')
    _store_args(p)

    p = sub.add_parser("cleanup", help="delete expired entries (uses the expiry index)", description=_sentence("delete expired entries (uses the expiry index)"))
    p.add_argument("--limit", type=_positive_int, help="delete at most this many")
    _store_args(p)

    p = sub.add_parser("export", help="write the live entries to standard output (or --output) as JSON Lines", description=_sentence("write the live entries to standard output (or --output) as JSON Lines"))
    p.add_argument("--pattern", help="only keys matching this glob, e.g. 'cache:extract:*'")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of standard output")
    _store_args(p)

    p = sub.add_parser("import", help="put the entries of a file written by `export` into the store", description=_sentence("put the entries of a file written by `export` into the store"))
    p.add_argument("file", help="the dump file, or - for standard input")
    _store_args(p)

    p = sub.add_parser("copy", help="copy the live entries of one store into another, keys, metadata and expiry kept", description=_sentence("copy the live entries of one store into another, keys, metadata and expiry kept"))
    p.add_argument("--from", dest="source", required=True, metavar="URL", help="the store to read")
    p.add_argument("--to", dest="target", required=True, metavar="URL", help="the store to write (created if new)")
    p.add_argument("--pattern", help="only keys matching this glob")
    p.add_argument("--json", action="store_true", help="print JSON for machines instead of a sentence")

    p = sub.add_parser("hash", help="content hash of a file or URL (local, s3://, gs://, az://)", description=_sentence("content hash of a file or URL (local, s3://, gs://, az://)"))
    p.add_argument("path", help="a local path or a URL (s3://, gs://, az://)")
    p.add_argument("--algorithm", default="sha256", choices=["sha256", "md5", "blake2b"], help="default: sha256")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    return parser


def _open_cache(url: str | None, create: bool = False) -> Any:
    """The cache at ``url``; a store file that does not exist is an error, not a new empty store
    (a mistyped ``--store`` path would otherwise show zeros, and a read must not write), unless
    the command writes (``create``: import and copy's target)."""
    from .cache import Cache
    from .config import default_store_url
    from .errors import StoreError

    url = _store_here(url) or default_store_url()
    from .stores.base import redact_url
    from .stores.registry import missing_store_file

    missing = None if create else missing_store_file(url, redact_url(url))
    if missing:
        raise StoreError(missing)
    return Cache(url, cleanup_probability=0.0)


def _store_here(url: str | None) -> str | None:
    """The store ``exec`` and ``loop-stats`` take here (``LoopConfig.store_for``: ``--store``, else
    ``$ACTIONCACHE_URL``, else the trusted loop config's ``store``): ``stats``, ``invalidate`` or
    ``export`` in a loop's project read the store its runs wrote, not the default one. A config that
    cannot be read is an error that names it."""
    if url is not None:
        return url  # no config is read: --store works beside a broken one
    from .errors import PolicyError, StoreURLError
    from .policy import load_config

    try:
        return load_config().store_for(url)
    except PolicyError as exc:
        raise StoreURLError(f"the config in effect here cannot be read: {exc}") from exc


def _table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for row in cells[1:]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _progress(label: str) -> Callable[[int, int | None], None]:
    interactive = sys.stderr.isatty()

    def report(done: int, total: int | None) -> None:
        if not interactive:
            return
        of = f"/{total}" if total else ""
        sys.stderr.write(f"\r{label}: {done}{of}")
        sys.stderr.flush()

    return report


def _done_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\n")


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def cmd_stats(args: argparse.Namespace) -> int:
    cache = _open_cache(args.store)
    exec_view: Any = None
    try:  # the agent-loop face: fast exec hits journal beside the store; count them before reading
        from .runs import stats as exec_stats
        from .runs.log import fold_journal

        fold_journal(cache)
        exec_view = exec_stats
    except ImportError:
        pass
    stats: dict[str, Any] = dict(cache.stats())
    if exec_view is not None:
        stats = exec_view.with_seconds(stats)
    if args.since:
        if exec_view is None:
            stats = {"success": False, "store": stats.get("store"), "error": "--since needs the run log of `actioncache exec`"}
        else:
            stats = _narrowed(stats, exec_view.stats_since(cache, args.since), args.since)
    # A store that cannot be read has no totals to show: zeros would read as "nothing cached".
    unreadable = bool(stats.get("error")) or not stats.get("success")
    if args.json:
        if unreadable:  # a script reads `success`: no invented zeros beside an error
            stats = {"success": False, "store": stats.get("store"), "error": stats.get("error"),
                     **{k: stats[k] for k in ("store_health", "since", "runs_since") if k in stats}}
        print(json.dumps(stats, indent=2, sort_keys=True))
        return 1 if unreadable else 0
    if unreadable:
        print(f"error: cannot read the store {stats['store']}: {stats.get('error')}", file=sys.stderr)
        return 1
    print(f"store    {stats['store']}")
    print(f"entries  {stats.get('entries', '?')}  ({_human_bytes(stats.get('size_bytes', 0) or 0)})")
    if args.since:
        print(f"since    {stats['since']} (exec runs, from the run log)")
    headers = ["action", "hits", "misses", "hit rate", "stores", "failures", "errors", "time saved", "hit cost"]  # as stats --json names them

    def row(name: str, b: Any) -> list[Any]:
        hit_cost = b.get("hit_cost_s")
        return [name, b["hits"], b["misses"], f"{b['hit_rate']:.0%}", b.get("stores", 0), int(b.get("failures", 0)),
                b.get("errors", 0), f"{b['time_saved_s']:.1f}s", f"{hit_cost:.1f}s" if hit_cost is not None else "-"]

    rows = [row("TOTAL", stats)] + [row(action, b) for action, b in sorted(stats["by_action"].items())]
    print(_table(rows, headers))
    notes = _exec_notes(stats)
    if notes:
        print("\n" + notes)
    return 0


def _narrowed(stats: dict[str, Any], runs: dict[str, Any], since: str) -> dict[str, Any]:
    """``stats --since``: the same view, narrowed to what has a time: exec's runs since WHEN (from
    its run log). Other actions' counters are totals without a time; they are named, not shown."""
    if not runs.get("success"):
        return {"success": False, "store": stats.get("store"), "error": runs.get("error")}
    by_action = {f"exec:{tool}": bucket for tool, bucket in runs["by_tool"].items()}
    totals = {k: v for k, v in runs.items() if k not in ("by_tool", "success", "since")}
    others = sorted(a for a in stats.get("by_action", {}) if not a.startswith("exec:"))
    return {"success": True, "store": stats.get("store"), "entries": stats.get("entries"),
            "size_bytes": stats.get("size_bytes"), "since": runs["since"], "since_arg": since, **totals,
            "by_action": by_action, "not_narrowed": others}


def _exec_notes(stats: dict[str, Any]) -> str:
    """What exec's time saved means, when exec ran (its rows are ``exec:TOOL``)."""
    execs = {a: b for a, b in stats.get("by_action", {}).items() if a.startswith("exec:")}
    lines = []
    if execs:
        hits = sum(b.get("hits", 0) for b in execs.values())
        cost = sum(float(b.get("hit_cost_s") or 0.0) for b in execs.values())
        overhead = sum(float(b.get("overhead_s") or 0.0) for b in execs.values())
        net = sum(float(b.get("time_saved_s") or 0.0) for b in execs.values())
        cheap = sum(int(b.get("uncached_cheap") or 0) for b in execs.values())
        lines.append(f"exec: time saved is net: {net + overhead:.1f}s saved by {hits} hits (each: the command's "
                     f"fresh run less the hit's own cost; the hits cost {cost:.1f}s), less {overhead:.1f}s of overhead "
                     "on misses and on commands not worth caching")
        if cheap:
            lines.append(f"exec: {cheap} runs were not cached: those commands run faster fresh than a hit costs")
        unrecorded = sum(int(b.get("unrecorded") or 0) for b in execs.values())
        if unrecorded:
            lines.append(f"exec: {unrecorded} misses ran directly, not recorded: their commands kept missing, and "
                         "recording them cost more than their hits saved (docs/agent-loops.md, churning commands)")
    if stats.get("not_narrowed"):
        lines.append("not narrowed by --since (their counters have no time; `actioncache stats` shows them): "
                     + ", ".join(stats["not_narrowed"]))
    return "\n".join(lines)


def cmd_get(args: argparse.Namespace) -> int:
    cache = _open_cache(args.store)
    result = cache.get(args.key, include_metadata=args.metadata)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, default=repr))
    elif not result.get("success"):
        print(f"error: {result.get('error')}", file=sys.stderr)
    elif not result["found"]:
        removed = f" ({result['removed']})" if result.get("removed") else ""
        print(f"not found: {args.key}{removed}", file=sys.stderr)
    else:
        state = "expired" if result["expired"] else "live"
        print(f"key      {result.get('key', args.key)}  ({state})")
        if args.metadata:
            for name, value in sorted((result.get("metadata") or {}).items()):
                print(f"{name:<20} {value}")
        print(json.dumps(result["value"], indent=2, default=repr))
    if not result.get("success"):
        return 1
    return 0 if result["found"] else 3


def cmd_invalidate(args: argparse.Namespace) -> int:
    cache = _open_cache(args.store)
    if args.metadata:
        try:
            metadata_filter = json.loads(args.metadata)
        except ValueError as exc:
            print(f"error: --metadata is not JSON ({exc}); example: --metadata '{{\"_cache_action\": \"extract\"}}'",
                  file=sys.stderr)
            return 2
        if not isinstance(metadata_filter, dict):
            print("error: --metadata must be a JSON object of field: value", file=sys.stderr)
            return 2
        result = cache.invalidate(metadata_filter=metadata_filter, progress=_progress("invalidating"))
    elif args.action:
        result = cache.invalidate(metadata_filter={"_cache_action": args.action}, progress=_progress("invalidating"))
        if args.action.startswith("exec:") and result.get("success"):
            # exec's entries under the name stats shows them by; earlier versions stored the bare tool name
            from ._metadata import stored_by
            from .runs.manifest import ENTRY_TYPE

            older = cache.invalidate(metadata_filter=stored_by(args.action[5:], ENTRY_TYPE))
            result["deleted_count"] += older.get("deleted_count", 0)
    else:
        result = cache.invalidate(key=args.key, pattern=args.pattern, progress=_progress("invalidating"))
    return _report_deleted(args, result, "")


def cmd_cleanup(args: argparse.Namespace) -> int:
    cache = _open_cache(args.store)
    result = cache.cleanup(limit=args.limit, progress=_progress("deleting expired"))
    return _report_deleted(args, result, "expired ")


def _report_deleted(args: argparse.Namespace, result: dict[str, Any], kind: str) -> int:
    _done_progress()
    if args.json:
        print(json.dumps(result, indent=2))
    elif result["success"]:
        n = result["deleted_count"]
        print(f"deleted {n} {kind}entr{'y' if n == 1 else 'ies'}")
    else:
        print(f"error: {result['error']}", file=sys.stderr)
    return 0 if result["success"] else 1


def cmd_hash(args: argparse.Namespace) -> int:
    from .hashing import storage_hash

    result = storage_hash(args.path, args.algorithm)
    if args.json:
        print(json.dumps(result, indent=2))
    elif result["success"]:
        print(f"{result['hash']}  {result['path']}  ({result['algorithm']}, {result['size_bytes']} bytes)")
    else:
        print(f"error: {result['error']}", file=sys.stderr)
    return 0 if result["success"] else 1


def cmd_export(args: argparse.Namespace) -> int:
    from . import transfer

    store = _open_cache(args.store).store
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                result = transfer.export_entries(store, out, args.pattern, _progress("exporting"))
        except OSError as exc:
            return _file_failed(args, "write", args.output, exc)
    else:
        result = transfer.export_entries(store, sys.stdout, args.pattern, _progress("exporting"))
    _done_progress()
    return _report_moved(args, result, "exported", to_stderr=not args.output)


def cmd_import(args: argparse.Namespace) -> int:
    from . import transfer

    store = _open_cache(args.store, create=True).store
    if args.file == "-":
        result = transfer.import_entries(store, sys.stdin, _progress("importing"))
    else:
        try:
            with open(args.file, encoding="utf-8") as lines:
                result = transfer.import_entries(store, lines, _progress("importing"))
        except OSError as exc:
            return _file_failed(args, "read", args.file, exc)
    _done_progress()
    return _report_moved(args, result, "imported")


def cmd_copy(args: argparse.Namespace) -> int:
    from . import transfer

    source = _open_cache(args.source).store
    target = _open_cache(args.target, create=True).store
    result = transfer.copy_entries(source, target, args.pattern, _progress("copying"))
    _done_progress()
    return _report_moved(args, result, "copied")


def _file_failed(args: argparse.Namespace, verb: str, path: str, exc: OSError) -> int:
    """A dump file that cannot be opened, read or written: one line naming it and why (exit 2)."""
    _done_progress()
    print(f"error: cannot {verb} {path}: {exc.strerror or exc}", file=sys.stderr)
    return 2


def _report_moved(args: argparse.Namespace, result: dict[str, Any], verb: str, to_stderr: bool = False) -> int:
    """Export/import/copy's closing line; export to standard output says it on stderr (stdout is the dump)."""
    from . import transfer

    if args.json and not to_stderr:
        print(json.dumps(result, indent=2, sort_keys=True))
        return 0 if result["success"] else 1
    if not result["success"]:
        print(f"error: {result['error']} ({transfer.entries(result[verb])} {verb})", file=sys.stderr)
        return 1
    skipped = [f"{n} {name.removeprefix('skipped_')}" for name, n in result.items() if name.startswith("skipped_")]
    line = f"{verb} {transfer.entries(result[verb])}" + (f" (skipped: {', '.join(skipped)})" if skipped else "")
    print(line, file=sys.stderr if to_stderr else sys.stdout)
    return 0


COMMANDS = {"stats": cmd_stats, "export": cmd_export, "import": cmd_import, "copy": cmd_copy, "get": cmd_get, "invalidate": cmd_invalidate, "cleanup": cmd_cleanup, "hash": cmd_hash}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader stopped early (`actioncache export | head`): not an error of ours. Point stdout
        # at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in FACE_COMMANDS:
        module_name = FACE_COMMANDS[argv[0]][0]
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            print(f"actioncache {argv[0]}: not available ({exc})", file=sys.stderr)
            return 2
        return int(module.main(argv[1:]) or 0)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    import logging
    import warnings

    from .errors import CacheWarning, StoreError, StoreURLError

    # A one-shot command says what went wrong in its own one line (and its exit code): the library's
    # warnings and log lines about a failing store (meant for a long-running program) would repeat it.
    # Only for this command: a program (or a test) that calls main() keeps its own settings after.
    library_log = logging.getLogger("actioncache")
    level = library_log.level
    library_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=CacheWarning)
            return COMMANDS[args.command](args)
    except StoreURLError as exc:  # --store or $ACTIONCACHE_URL: a bad argument
        return _fail(args, exc, 2)
    except StoreError as exc:
        return _fail(args, exc, 1)
    finally:
        library_log.setLevel(level)


def _fail(args: argparse.Namespace, exc: Exception, code: int) -> int:
    """A command that could not run: the error on stderr, and as JSON on stdout with --json."""
    print(f"error: {exc}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"success": False, "error": str(exc)}, indent=2))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
