"""``actioncache exec``: put the cache in front of any command an agent loop runs.

    actioncache exec [--mode off|record|use] [--scope verify|read|llm_ro|NAME] [--phase NAME]
                     [--input PATH]... [--env-ignore NAME]... [--env-mode all|strict] [--env NAME]...
                     [--force-fresh] [--audit-rate F] [--summary] [--store URL] -- CMD ARGS...

Only exit code 0 is cached; a hit replays stdout, stderr and the exit code byte for byte. With
mode ``off`` (the default), a scope that is not enabled, or a non-cacheable tool, the command
simply runs on the terminal's own streams and no store is opened. The agent-loop spellings:
``--cache-mode`` (= ``--mode``), ``--cache-scope LIST`` (= ``--scopes``, the enabled scopes, as
``CACHE_SCOPE``), ``--force-no-cache`` (= ``--force-fresh``); ``--cache-skip`` and ``CACHE_SKIP=1``
mean ``use`` with ``verify,read`` and warn that they are deprecated. ``--scope`` is this command's
own scope.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Sequence

from .._record import record, replace
from .._usage import HelpfulParser

PROG = "actioncache exec"


def build_parser() -> argparse.ArgumentParser:
    p = HelpfulParser(prog=PROG, description="Run a command through the cache. In modes record and use its "
                                "stdout and stderr are pipes, not the terminal (one pipe when they are one stream, "
                                "as with 2>&1).",
                                epilog="example: actioncache exec --mode use --scope verify -- shellcheck loop.sh")
    p.add_argument("--mode", "--cache-mode", choices=("off", "record", "use"),
                   help="off: just run (default); record: run and store passes; use: replay passes, run misses")
    p.add_argument("--scope", default="verify",
                   help="this command's scope: verify (default), read, llm_ro or your own name")
    p.add_argument("--scopes", "--cache-scope", metavar="LIST",
                   help="the enabled scopes, comma-separated (default $CACHE_SCOPE or verify,read)")
    p.add_argument("--phase", help="the loop phase (PLAN, BUILD, VERIFY, REPORT, ...); llm_ro is cached only in "
                                   "REPORT, ANALYZE, REVIEW (configurable)")
    p.add_argument("--input", action="append", default=[], metavar="PATH", help="a file or directory the command reads (keyed by content)")
    p.add_argument("--env", action="append", default=[], metavar="NAME",
                   help="with --env-mode strict: a variable the command may see (keyed); every visible variable is keyed anyway")
    p.add_argument("--env-ignore", action="append", default=[], metavar="NAME",
                   help="leave this variable out of the key (besides actioncache's own CACHE_*/ACTIONCACHE_* settings)")
    p.add_argument("--env-mode", choices=("all", "strict"), default="all",
                   help="all: the command sees the whole environment, all keyed (default); strict: it sees only "
                        "PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, TMPDIR, TZ and --env names")
    p.add_argument("--stdin", action="store_true", help=argparse.SUPPRESS)  # stdin is keyed by default now
    p.add_argument("--force-fresh", "--force-no-cache", action="store_true", help="run even on a hit; refresh the entry")
    p.add_argument("--cache-skip", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--audit-rate", type=float, metavar="F", help="re-run this fraction of hits and compare (default $CACHE_AUDIT_RATE or 0)")
    p.add_argument("--max-age-hours", type=float, metavar="H", help="how long a pass stays valid (default 168)")
    p.add_argument("--summary", action="store_true", help="print this run's hits, misses and time saved to stderr")
    p.add_argument("--explain", action="store_true", help="print the decision and the key's parts to stderr")
    p.add_argument("--failures", action="store_true", help="list the fail log (with --since) instead of running")
    p.add_argument("--since", metavar="WHEN", help="with --failures: only since WHEN (30m, 2h, 7d or ISO time)")
    p.add_argument("--store", metavar="URL", help="store URL (default: $ACTIONCACHE_URL, else the config `store`, else the user cache dir)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    return p


def _say(message: str) -> None:
    if sys.stderr is None:  # stderr closed (2>&-): nowhere to say it
        return
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    from .keys import inherited_fds

    inherited = inherited_fds()  # before this process opens anything of its own
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    from ..policy import PolicyError, default_policy, load_config
    from . import configmemo

    unkeyable = _cwd_unkeyable() if command else None
    if unkeyable is not None:
        return _in_unkeyable_cwd(args, command, inherited, unkeyable)
    try:
        config = load_config()
        policy = _resolve(args, default_policy())
    except PolicyError as exc:
        _say(f"error: {exc}")
        return 2
    from .keys import under_trace

    if not under_trace():  # inside an outer trace nothing of the cache's own is touched (keys.under_trace)
        configmemo.write(config, time.time_ns())  # the next hit need not parse the file again
    if not config.enabled:  # the kill switch beats flags and the environment
        if policy.mode != "off":
            _say(f"caching is off: cache_settings.enabled is false in {config.path}")
        policy = replace(policy, mode="off", off_because=f"cache_settings.enabled is false in {config.path}")
    for note in policy.notes:
        _say(f"warning: {note}")
    if args.failures:
        return _show_failures(args, config)
    if not command:
        _say("error: give the command after --, e.g. actioncache exec --mode use -- shellcheck loop.sh")
        return 2
    if "," in args.scope:
        _say(f"error: --scope takes this command's one scope, not a list ({args.scope!r}); "
             f"choose the enabled scopes with --cache-scope {args.scope} (or --scopes, or CACHE_SCOPE={args.scope})")
        return 2
    scope = args.scope.strip().lower()
    from .runner import decide, tool_name

    tool = tool_name(command)
    decision = decide(policy, scope, command)  # decided once; the run carries it (ExecOptions.decision)
    blocked = decision.phase_blocked
    if args.explain:
        _say(f"policy mode={policy.mode} scopes={','.join(sorted(policy.scopes))} phase={policy.phase} "
             f"-> lookup={decision.lookup} store={decision.store} ({decision.reason or 'cached'})")
    from .keys import command_env

    env = command_env(os.environ, args.env_mode, args.env) if args.env_mode != "all" else None
    counted = policy.mode != "off"  # a run the cache let through costs the loop its start-up all the same
    if not (decision.lookup or decision.store or blocked):
        return _passthrough(command, tool, args.summary, decision.reason, inherited, env,
                            _Counted(args, config, policy, scope, command) if counted else None)
    if under_trace():
        _say(f"{tool}: runs uncached: this exec is inside a traced run (an outer actioncache exec), "
             "whose trace covers what it reads")
        return _passthrough(command, tool, args.summary, "inside a traced run", inherited, env)
    if args.explain and _isatty(1):
        _say("output: the command writes to a pipe (kept for the cache), not this terminal: "
             "[ -t 1 ] is false for it and ls prints no columns or colours; mode off runs it on the terminal")
    from .._lean import output_problem

    stream_problem = output_problem()
    if stream_problem:  # the command gets our stdout/stderr as they are, not a pipe of ours
        _say(f"{tool}: runs uncached: {stream_problem}")
        return _passthrough(command, tool, args.summary, stream_problem, inherited, env,
                            _Counted(args, config, policy, scope, command) if counted else None)
    from .keys import describe_fds, observe_stdin, one_output_stream
    from .runner import ExecOptions, ExecRun, open_cache, use_own_temp_folder

    stdin = observe_stdin()
    passed, descriptors, fd_problem = describe_fds(inherited, command)
    options = ExecOptions(scope=scope, inputs=args.input, env_names=args.env, env_mode=args.env_mode,
                          env_ignore=args.env_ignore, stdin_data=stdin.data, stdin_more=stdin.more,
                          stdin_file=stdin.file,
                          uncacheable=stdin.problem or fd_problem, pass_fds=passed, descriptors=descriptors,
                          summary=args.summary or config.verbose, explain=args.explain, run_log=config.run_log,
                          one_stream=one_output_stream(),
                          config_digest=configmemo.config_digest(str(config.path) if config.path else None),
                          decision=decision, own_store=True)
    use_own_temp_folder()  # before a store makes a temporary file (a blob store's local copy)
    try:
        cache = open_cache(args.store, config)
    except Exception as exc:  # noqa: BLE001 - a store that cannot open never stops the tool
        _say(f"warning: cache unavailable, running uncached: {exc}")
        return _passthrough(command, tool, args.summary, "cache unavailable", inherited, env)
    try:
        return ExecRun(command, policy, options).execute(cache)
    finally:
        cache.close()


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _cwd_unkeyable() -> str | None:
    """Why the working directory cannot be keyed, or None: it was deleted, or its path cannot be
    looked up (longer than the system's PATH_MAX: ``ENAMETOOLONG``)."""
    try:
        os.stat(os.getcwd())
    except FileNotFoundError:
        return "the working directory was deleted"
    except OSError as exc:
        return f"the working directory cannot be looked up by its path ({os.strerror(exc.errno or 0)})"
    return None


def _in_unkeyable_cwd(args: argparse.Namespace, command: list[str], inherited: Sequence[int], why: str) -> int:
    """Run the command in a working directory that cannot be keyed: deleted (``mkdir d; cd d; rmdir
    ../d``) or past the system's path length. Neither it nor a config file found from it can be
    looked up, so the command runs uncached, as it would without the cache. Mode off says nothing."""
    from ..policy import Policy, PolicyError
    from ..policy.sources import env_fields
    from .keys import command_env
    from .runner import tool_name

    try:
        fields, _ = env_fields()
        policy = _resolve(args, replace(Policy(), **fields))
    except PolicyError as exc:
        _say(f"error: {exc}")
        return 2
    tool = tool_name(command)
    if policy.mode != "off":
        _say(f"{tool}: runs uncached: {why.replace('the working directory', 'its working directory')} "
             "(a directory that cannot be looked up cannot be keyed)")
    env = command_env(os.environ, args.env_mode, args.env) if args.env_mode != "all" else None
    return _passthrough(command, tool, args.summary, why, inherited, env)


def _resolve(args: argparse.Namespace, base: Any) -> Any:
    mode = args.mode
    scopes = args.scopes
    if args.cache_skip:
        _say("warning: --cache-skip is deprecated; use --cache-mode use")
        mode = mode or "use"
    return base.with_overrides(mode=mode, scopes=scopes, phase=args.phase, force_fresh=args.force_fresh or None,
                               audit_rate=args.audit_rate, max_age_hours=args.max_age_hours)


@record()
class _Counted:
    """What recording a run let through needs (``_passthrough``)."""

    args: argparse.Namespace
    config: Any
    policy: Any
    scope: str
    command: list[str]


def _passthrough(command: list[str], tool: str, summary: bool, reason: str | None, inherited: Sequence[int] = (),
                 env: dict[str, str] | None = None, counted: _Counted | None = None) -> int:
    """Run the command on our own streams, uncached. ``counted``: in mode use or record, the run is
    recorded (``runner.ExecRun.record_uncached``) like every run through the cache: its command's
    own time and the overhead of this process around it."""
    from .keys import STDIN
    from .process import run_passthrough

    started = time.perf_counter()
    try:  # stdin as it came, or the bytes the hit path already read from it and the rest
        code = run_passthrough(command, stdin_data=STDIN.data if STDIN.observed else None, stdin_more=STDIN.more,
                               pass_fds=inherited, env=env)
    except OSError as exc:
        _say(f"cannot run {command[0]!r}: {exc.strerror or exc}")
        code, ran_ms = (127 if isinstance(exc, FileNotFoundError) else 126), 0.0
    except KeyboardInterrupt:
        return 130
    else:
        ran_ms = (time.perf_counter() - started) * 1000.0
        if summary:
            _say(f"{tool}: not cached ({reason}); hits 0, misses 0, time saved 0.0s")
    if counted is not None:
        _record_uncached(counted, reason, code, ran_ms)
    return code


def _record_uncached(counted: _Counted, reason: str | None, code: int, ran_ms: float) -> None:
    from .runner import ExecOptions, ExecRun, open_cache

    try:
        cache = open_cache(counted.args.store, counted.config)
    except Exception:  # noqa: BLE001 - a store that cannot open has nothing to count in
        return
    try:
        run = ExecRun(counted.command, counted.policy, ExecOptions(scope=counted.scope, stream=False,
                                                                   run_log=counted.config.run_log))
        run.record_uncached(cache, reason or "not cached", code, ran_ms)
    finally:
        cache.close()


def _show_failures(args: argparse.Namespace, config: Any) -> int:
    from .log import FAIL_LOG_PREFIX, parse_since, records
    from .runner import open_cache

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        _say(f"error: {exc}")
        return 2
    cache = open_cache(args.store, config)
    try:
        for record in records(cache, FAIL_LOG_PREFIX, since):
            print(f"{record.get('at')}  {record.get('tool')}  exit {record.get('exit_code')}  {record.get('key')}")
            for name in ("stdout_tail", "stderr_tail") if "stdout_tail" in record else ("error",):
                text = str(record.get(name) or "").strip()
                if text:
                    label = f"{name.split('_')[0]}: " if name != "error" else ""
                    print("    " + label + text.replace("\n", "\n    "))
    except Exception as exc:  # noqa: BLE001
        _say(f"error: cannot read the fail log: {exc}")
        return 1
    return 0
