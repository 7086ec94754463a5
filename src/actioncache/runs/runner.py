"""One ``actioncache exec`` run through the cache: key, lookup, run or replay, record, log.

The decision (may this run look up, may it store, was it phase-blocked) is made once, by the
caller, and travels in :class:`ExecOptions` as a :class:`~actioncache.decision.Decision`; the runner
does not re-derive it, and the core's policy hook is not consulted (exec reads and writes its
manifests itself). A lookup reads one manifest (``manifest``)
and serves the newest candidate whose read-set still holds. A miss runs the command under the
tracer (``trace``), builds its read-set (``readset``) and stores it beside the result. Without a
tracer the key falls back to hashing the files the command line names, and the run says so.

The CLI streams output to the terminal; the YAML action (``runs.actions``) keeps it in the result.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from typing import Any, Sequence

from .._lean import make_dirs, process_ms, settle_own_writes, which
from .._record import field, record
from ..cache import Cache
from ..decision import Decision
from ..policy import LoopConfig, Policy
from . import cost, ledger, log, manifest
from .keys import family_key, key_parts, replay_stdin_offset, run_key, stdin_offset
from .process import GONE, run_tool, write_failure

EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
ENTRY_PREFIX = "cache:"
TEMP_FOLDER = "tmp"  # in the user's cache directory (own_temp_folder)


def open_cache(url: str | None, config: LoopConfig) -> Cache:
    """``--store``, else ``$ACTIONCACHE_URL``, else the config file's ``store``, else the default."""
    cache = Cache(config.store_for(url), cleanup_probability=0.0)  # parses and checks the URL; opens nothing yet
    _create_private(cache)
    return cache


def _create_private(cache: Cache) -> None:
    """A store file exec creates is 0600 (SQLite gives its -wal/-shm the file's mode): it holds
    every recorded output. An existing file keeps the mode its owner gave it. The path is the one
    the store parsed from its URL (and will open), so a URL the store refuses creates nothing and a
    URL another parser would read differently cannot create a file the store never uses."""
    path = getattr(cache.store, "path", None) if cache.url.lower().startswith("sqlite:") else None
    if path is None or os.path.exists(path):
        return  # SQLite opens an empty file as a new database; other formats are left to their stores
    try:
        make_dirs(os.path.dirname(os.path.abspath(path)))  # settled before a traced run (_fresh)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        pass


def own_temp_folder() -> str | None:
    """``TEMP_FOLDER`` in the user's cache directory, one of the cache's own places
    (``ExecRun._own_files``), where a traced run's log is written rather than in ``$TMPDIR``: there,
    each run's log directory was a change in what a command listing ``$TMPDIR`` saw (``ls /tmp``
    never hit). None (the system's temporary directory) when it cannot be made, or is not a directory
    of this user's that nobody else may write (a link planted there is not followed)."""
    from .._lean import own_directory
    from ..config import user_cache_dir

    folder = str(user_cache_dir() / TEMP_FOLDER)
    try:
        make_dirs(folder, 0o700)
    except OSError:
        return None
    fd = own_directory(folder)
    if fd is None:
        return None
    os.close(fd)
    return folder


def use_own_temp_folder() -> None:
    """Every temporary file of this exec process goes to ``own_temp_folder()``: a blob store's local
    copy too (``tempfile.mkdtemp``), which sat in ``$TMPDIR`` while the command ran. Only the
    ``actioncache exec`` process, never a library user's (``command.exec_cached`` in an agent);
    the command's own environment keeps its ``TMPDIR``."""
    folder = own_temp_folder()
    if folder is not None:
        tempfile.tempdir = folder


def decide(policy: Policy, scope: str, command: Sequence[str]) -> Decision:
    """The policy's decision for one command line: ``non_cacheable_tools`` entries match the tool
    and its subcommands as agent-loop configs spell them (``git_push`` is ``git push``; ``naming``)."""
    decision = policy.decide(scope, tool_name(command))
    if policy.mode == "off" or not policy.non_cacheable:
        return decision
    from .._glob import glob_matches
    from .naming import match

    found = match(sorted(policy.non_cacheable), command, glob_matches)
    if found is None or not (decision.lookup or decision.store or decision.phase_blocked):
        return decision
    pattern, shown = found
    return Decision(False, False, f"{shown} is in non_cacheable_tools (as {pattern!r})")


# Whether the command's last bytes on this process's stderr (its own streamed run, or a replay)
# ended mid-line: the next message then starts a line of its own instead of finishing the
# command's last one ("...no newline at endactioncache exec: ls: hit").
_mid_line = False


def command_wrote(stream: bytes) -> None:
    """The command's bytes just went out on stderr (its stdout too, when they are one stream)."""
    global _mid_line
    if stream:
        _mid_line = not stream.endswith(b"\n")


def say(message: str) -> None:
    global _mid_line
    if sys.stderr is None:  # stderr closed (2>&-): nowhere to say it
        return
    sys.stderr.write(f"{chr(10) if _mid_line else ''}actioncache exec: {message}\n")
    sys.stderr.flush()
    _mid_line = False


def tool_name(command: Sequence[str]) -> str:
    return os.path.basename(command[0]) or command[0]


def _printable(text: str) -> str:
    """A command line as valid UTF-8 (a file name that is not UTF-8 comes back with replacement marks)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _inherits_terminal(stdin_data: bytes | None, pass_fds: Sequence[int]) -> bool:
    """Whether the command gets a terminal on a descriptor (then its reads are traced)."""
    fds = ([] if stdin_data is not None else [0]) + list(pass_fds)
    return any(_isatty(fd) for fd in fds)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def fallback_note(reason: str) -> str:
    return (f"read-sets off ({reason}): keys cover only the files the command line names and --input; "
            "see docs/agent-loops.md")


def _let_go(cache: Cache) -> None:
    """Close this process's connections to a SQLite store before the command runs, and before a
    read-set is checked (they reopen on the next use): an open connection keeps the store's ``-wal``
    and ``-shm`` beside it, and the mtime of the directory that holds them moved, which the command
    would see (in a listing of that directory, in ``ls -la`` of its parent) where a run of it at any
    other moment, with no ``exec`` holding the store, would not; closed, the last connection removes
    them and the directory gets its mtime back (``_lean.store_closed``), and a walk of a project that
    keeps its store there is recorded and checked as a direct run would see it.
    Only a cache the run owns (``ExecOptions.own_store``: the ``actioncache exec`` command's): an
    agent's cache is shared by its other actions and threads, and holds the store open anyway."""
    if not cache.url.startswith("sqlite:"):
        return
    try:
        cache.store.close()
    except Exception:  # noqa: BLE001 - a store that will not close costs a detail of a listing, never the run
        pass


@record()
class ExecOptions:
    """What one run needs besides the command and the policy (the CLI's flags, or an action's kwargs)."""

    scope: str = "verify"
    inputs: Sequence[str] = ()
    env_names: Sequence[str] = ()
    stdin_data: bytes | None = None  # fed to the command (and keyed); None: it inherits our stdin
    stdin_more: bool = False  # after stdin_data, copy the rest of our stdin (too much to key: uncached)
    stdin_file: Sequence[Any] | None = None  # a regular file on stdin, inherited as it is: its key part
    env_mode: str = "all"  # all: every visible variable keyed; strict: only STRICT_BASE and env_names, seen and keyed
    env_ignore: Sequence[str] = ()
    uncacheable: str | None = None  # why this run may not be looked up or stored (stdin, a descriptor)
    pass_fds: Sequence[int] = ()  # inherited descriptors the command keeps
    descriptors: Sequence[Sequence[Any]] = ()  # the key parts of those (regular files read)
    stream: bool = True  # write the tool's output (or the replay) to our stdout/stderr
    one_stream: bool = False  # our stdout and stderr are one stream (keys.one_output_stream): so are the command's
    summary: bool = False
    explain: bool = False
    run_log: bool = True
    config_digest: str | None = None  # the config file in effect (configmemo.config_digest): part of the key
    decision: Decision | None = None  # the caller's decision, made once; None: decide here from the policy
    own_store: bool = False  # the cache is this run's alone (the CLI's): let go of it while the command runs (_let_go)


@record()
class ExecRun:
    command: list[str]
    policy: Policy
    options: ExecOptions = field(default_factory=ExecOptions)
    result: dict[str, Any] = field(default_factory=dict)  # exit_code, stdout, stderr, outcome, hit, key
    store_url: str = ""  # the store in use (its files are left out of read-sets)
    notes: list[str] = field(default_factory=list)
    _stretch: float | None = field(default=None, init=False, repr=False)  # wall / CPU at the start (cost.load_stretch)

    @property
    def tool(self) -> str:
        return tool_name(self.command)

    def _note(self, message: str) -> None:
        """Say something once per run (stderr when streaming; always kept in ``result['notes']``)."""
        if message not in self.notes:
            self.notes.append(message)
            if self.options.stream or self.options.explain:
                say(message)

    # --- one run -----------------------------------------------------------------------

    def execute(self, cache: Cache) -> int:
        """Run (or replay) through ``cache``; returns the exit code; ``self.result`` holds the rest."""
        scope, tool = self.options.scope, self.tool
        self._stretch = cost.load_stretch()  # the load before any command of ours runs (cost.expect_tail)
        self.store_url = str(getattr(cache.store, "url", "") or "")
        decision = self.options.decision or decide(self.policy, scope, self.command)
        blocked = decision.phase_blocked
        if blocked:
            self._note(f"warning: {decision.reason} ({tool} runs fresh)")
        record: dict[str, Any] = {"tool": tool, "scope": scope, "key": None, "lookup": decision.lookup, "hit": False,
                                  "phase_blocked": blocked}
        if self.options.uncacheable and (decision.lookup or decision.store):
            self._note(f"{tool}: runs uncached: {self.options.uncacheable}")
            record.update(lookup=False, uncacheable=self.options.uncacheable)
            return self._finish(cache, record, self._fresh(None, cache))
        strace = self._tracer() if (decision.lookup or decision.store) else None
        if not (decision.lookup or decision.store):
            return self._finish(cache, record, self._fresh(None, cache))
        parts = key_parts(self.command, scope=scope, inputs=self.options.inputs, env_names=self.options.env_names,
                          stdin_data=self.options.stdin_data, stdin_file=self.options.stdin_file,
                          check_git_sha=self.policy.check_git_sha,
                          traced=strace is not None, env_mode=self.options.env_mode,
                          env_ignore=self.options.env_ignore, descriptors=self.options.descriptors,
                          secret=self._env_secret(), one_stream=self.options.one_stream)
        if self.options.config_digest is not None:
            parts["config"] = self.options.config_digest  # the hit path adds the same (from its memo)
        key = record["key"] = run_key(tool, parts)
        record["family"] = family_key(tool, parts)  # the command as the loop writes it (ledger)
        if self.options.explain:
            from ..keys import canonical_json

            shown = {k: v for k, v in parts.items() if k != "env"}  # values never shown, only names
            shown["env"] = sorted(parts["env"])
            say(f"decision lookup={decision.lookup} store={decision.store} ({decision.reason or 'cached'})")
            say(f"key cache:{key}\n  parts {canonical_json(shown)}")
        if decision.lookup:
            mark = cost.cheap_mark(cache, key)
            if mark is not None:
                return self._cheap(cache, record, key, mark)
        candidates = self._candidates(cache, key)
        if self.options.own_store:
            # Checked with the store let go of, as a direct run would find the directory that holds
            # it: an open connection keeps its -wal and -shm there, and the directory's mtime moved
            # (closed, the last connection removes them and the mtime is put back: _lean.store_closed).
            _let_go(cache)
        if decision.lookup:
            found, why = manifest.choose(candidates, time.time(), self.policy.max_age_hours)
            if found is not None:
                return self._hit(cache, record, found, candidates, strace)
            if not candidates:
                why = self._env_why(cache, parts) + why
            record["why"] = why[:5]
            if self.options.explain:
                say("miss: " + ("; ".join(why) if why else "no entry under this key"))
            if decision.store and not blocked:
                churn = ledger.churning(cache, record["family"])
                if churn is not None:
                    return self._unrecorded(cache, record, churn)
        output = self._fresh(strace, cache)
        record["duration_ms"] = output.get("duration_ms")
        # The command's own time (cost: what it would have cost run directly): traced, the trace's
        # figure (trace.command_ms) until the measuring run times it untraced.
        record["fresh_ms"] = float(output["fresh_ms"])
        if output.get("traced"):
            record["fresh_from"] = output.get("fresh_from", "traced")
        # strace only slows a command down: the traced time is an upper bound of the command's own,
        # so a traced run faster than a threshold or a hit is faster untraced too.
        traced_ms = float(output.get("duration_ms") or 0.0)
        threshold = cost.explicit_threshold()  # set: no measuring run (cost.py; _store marks it measured)
        if output["exit_code"] != 0 or output.get("start_error"):
            record.update(outcome="fail")
            return self._finish(cache, record, output)
        # A run that could not be recorded is judged too: running a command directly is always right,
        # and one faster than a hit would otherwise be traced, for nothing, every time (`git status`
        # after a commit refreshes .git/index, which it read: never recordable, never judged).
        if threshold is not None and decision.store and traced_ms < threshold:
            return self._judged_cheap(cache, record, key, output, traced_ms, cost.HitCost(threshold, "set"))
        if threshold is None and decision.store and decision.lookup:
            # Traced faster than a hit costs now, it is cheap untraced too, and the measuring run
            # (a full start-up and one more run) is not needed.
            cheap, hit = cost.cheap_verdict(cache.store, traced_ms, self._stretch)
            if cheap:  # (this process's own load is the higher figure: confirmed by a probe of this moment)
                cheap, hit = cost.cheap_verdict(cache.store, traced_ms, self._stretch, cost.probe(cache.store))
            if cheap:
                return self._judged_cheap(cache, record, key, output, traced_ms, hit, traced=bool(output.get("traced")))
        stored = decision.store and self._store(cache, key, output, candidates)
        if stored:
            self._remember_env(cache, parts)
        if blocked or not decision.store:
            record["outcome"] = "fresh"
        else:
            record["outcome"] = ("miss" if decision.lookup else "record") if stored else "fresh"
        return self._finish(cache, record, output)

    def record_uncached(self, cache: Cache, reason: str, exit_code: int, ran_ms: float) -> None:
        """Record a run the command line let through uncached (``cli._passthrough``: on our own
        streams, not looked up): timed like every run, its command's own time ``ran_ms``."""
        self._stretch = cost.load_stretch()
        record: dict[str, Any] = {"tool": self.tool, "scope": self.options.scope, "key": None, "lookup": False,
                                  "hit": False, "phase_blocked": False, "uncacheable": reason,
                                  "outcome": "fail" if exit_code != 0 else "fresh"}
        self._finish(cache, record, {"exit_code": exit_code, "stdout": b"", "stderr": b"",
                                     "duration_ms": round(ran_ms, 3), "fresh_ms": round(ran_ms, 3)})

    # --- pieces --------------------------------------------------------------------------

    def _cheap_text(self, fresh_ms: float, hit: cost.HitCost, traced: bool = False) -> str:
        ran = f"in at most {fresh_ms:.0f} ms fresh (traced)" if traced else f"in {fresh_ms:.0f} ms fresh"
        # With the threshold set, the variable is part of the key: unset, the command is keyed anew.
        lasts = ("for a day while this environment lasts, then is judged again" if hit.source == "set"
                 else "for a day, then is measured again")
        return f"not cached: {self.tool} runs {ran}, less than a hit costs ({hit.describe()}); it runs directly {lasts}"

    def _cheap(self, cache: Cache, record: dict[str, Any], key: str, mark: dict[str, Any]) -> int:
        """A command known to run faster than a hit: run it directly (untraced, not stored)."""
        if self.options.explain:
            say(f"cheap: {self.tool} ran in {float(mark.get('fresh_ms') or 0):.0f} ms fresh, a hit costs "
                f"{float(mark.get('hit_ms') or 0):.0f} ms: not cached (judged again a day after)")
        return self._run_directly(cache, record, "cheap")

    def _run_directly(self, cache: Cache, record: dict[str, Any], outcome: str) -> int:
        """Run the command untraced and not stored (a cheap command, a churning miss): its run is
        its own time; ``outcome`` unless it failed."""
        output = self._fresh(None, cache)
        record.update(outcome="fail" if output["exit_code"] != 0 else outcome,
                      fresh_ms=round(float(output.get("duration_ms") or 0.0), 3), duration_ms=output.get("duration_ms"))
        return self._finish(cache, record, output)

    def _unrecorded(self, cache: Cache, record: dict[str, Any], churn: dict[str, Any]) -> int:
        """A miss of a churning command (``ledger``): run directly, untraced, not recorded."""
        if self.options.explain or self.options.summary:
            until = churn.get("until")
            left = f"for {float(until) - time.time():.0f} s more" if isinstance(until, (int, float)) else "for a while"
            say(f"churning: {self.tool}'s last runs missed or failed {churn.get('misses')} times and cost "
                f"{-float(churn.get('net_ms') or 0) / 1000:.2f} s more than its hits saved: "
                f"a miss runs directly, not recorded, {left}")
        return self._run_directly(cache, record, ledger.UNRECORDED)

    def _env_secret(self) -> bytes:
        """The store's secret environment values are keyed with (``keys.env_secret``)."""
        from ..stores.registry import store_file
        from .keys import env_secret

        return env_secret(store_file(self.store_url) if self.store_url else None)

    def _env_key(self, parts: dict[str, Any]) -> str:
        """Where the environment of the last stored run with these parts (the environment aside) is kept."""
        return "exec-env:" + run_key(self.tool, {k: v for k, v in parts.items() if k != "env"})

    def _remember_env(self, cache: Cache, parts: dict[str, Any]) -> None:
        from .._lean import dumps
        from ..records import Records

        try:
            Records(cache.store, cache.codec).put_raw(ENTRY_PREFIX + self._env_key(parts),
                                                      dumps(parts["env"]).encode("utf-8"), kind="exec_env",
                                                      ttl_s=self.policy.max_age_hours * 3600.0, action=self.tool)
        except Exception as exc:  # noqa: BLE001 - only --explain reads it
            self._note(f"warning: environment of this run not remembered: {exc}")

    def _env_why(self, cache: Cache, parts: dict[str, Any]) -> list[str]:
        """On a miss with no entry: the variables that differ from the last stored run of the same command."""
        from .._lean import loads
        from .keys import env_changes

        try:
            entry = cache.store.get(ENTRY_PREFIX + self._env_key(parts))
            was = loads(entry.value.decode("utf-8")) if entry is not None else None
        except Exception:  # noqa: BLE001
            return []
        if not isinstance(was, dict):
            return []
        changes = env_changes(was, parts["env"])
        return [f"environment: {', '.join(changes)} (since the last stored run)"] if changes else []

    def _tracer(self) -> str | None:
        """strace when it is installed and not switched off (whether ptrace works is seen on a miss)."""
        from .trace import tracer

        strace = tracer()
        if strace is None:
            self._note(fallback_note("ACTIONCACHE_TRACE=off" if os.environ.get("ACTIONCACHE_TRACE")
                                     else "strace is not installed"))
        return strace

    def _candidates(self, cache: Cache, key: str) -> list[dict[str, Any]]:
        try:
            entry = cache.store.get(ENTRY_PREFIX + key)
        except Exception as exc:  # noqa: BLE001 - a store that fails never fails the tool
            self._note(f"warning: cache lookup failed, running uncached: {exc}")
            return []
        return manifest.decode(entry.value) if entry is not None else []

    def _hit(self, cache: Cache, record: dict[str, Any], found: dict[str, Any], candidates: list[dict[str, Any]],
             strace: str | None) -> int:
        if found.get("measured") is False:
            return self._measure(cache, record, found, candidates)
        cached = manifest.output(found)
        record.update(hit=True, fresh_ms=cached["fresh_ms"])
        if self.options.explain:
            self._explain_readset("hit; read-set", found["readset"])
        if self.policy.audit_rate > 0 and random.random() < self.policy.audit_rate:
            return self._audit(cache, record, cached, candidates, strace)
        replay_stdin_offset(cached["stdin_offset"])
        if self.options.stream:
            failures = {write_failure(sys.stdout, cached["stdout"]), write_failure(sys.stderr, cached["stderr"])}
            command_wrote(cached["stderr"] or (cached["stdout"] if self.options.one_stream else b""))
            if failures - {None, GONE} and not cached["exit_code"]:
                cached = {**cached, "exit_code": 1}  # a replay whose write failed exits as the command would
        record["outcome"] = "hit"
        return self._finish(cache, record, cached)

    def _measure(self, cache: Cache, record: dict[str, Any], found: dict[str, Any],
                 candidates: list[dict[str, Any]]) -> int:
        """The first lookup that finds a new entry runs the command once more, untraced, instead of
        replaying it: that run's time is the command's fresh time (what every later hit saves is
        judged against it, ``cost``) and its output must be the recorded one. A command that runs
        faster fresh than a hit costs is then not cached; one whose output differs is not cached."""
        cached = manifest.output(found)
        stretch = cost.load_stretch()  # the load of this moment, for a hit's cost now (cost.hit_cost_now)
        output = self._fresh(None, cache)
        probed = cost.probe(cache.store)  # in the same moment: a hit-shaped process's load and end
        fresh_ms = round(float(output.get("duration_ms") or 0.0), 3)
        # The miss that recorded this entry counted the figure it had for the command's own time
        # (the trace's, or the traced time itself in entries recorded before traces were timed):
        # its error, either way, is counted now, once, in this run's overhead.
        recorded = float(found.get("fresh_ms", found.get("duration_ms")) or 0.0)
        record.update(fresh_ms=fresh_ms, duration_ms=output.get("duration_ms"), measured=True,
                      estimate_error_ms=round(recorded - fresh_ms, 3))
        others = [c for c in candidates if c is not found]
        key = str(record["key"])
        if output["exit_code"] != 0 or output.get("start_error"):
            self._put(cache, key, others)
            record["outcome"] = "fail"
            return self._finish(cache, record, output)
        if any(output.get(f) != cached.get(f) for f in ("exit_code", "stdout", "stderr")):
            self._put(cache, key, others)
            self._note(f"not cached: a second run of {self.tool} printed something else than the first, though "
                       "nothing it read had changed (its output depends on something else: the clock, the network)")
            record["outcome"] = "fresh"
            return self._finish(cache, record, output)
        cheap, hit = cost.cheap_verdict(cache.store, fresh_ms, stretch, probed)
        record["hit_now_ms"] = round(hit.ms, 3)  # what it was compared with (stats: per tool)
        if cheap:
            self._put(cache, key, [])
            return self._judged_cheap(cache, record, key, output, fresh_ms, hit)
        self._put(cache, key, [{**found, "measured": True, "fresh_ms": fresh_ms}, *others])
        if self.options.explain:
            say(f"measured: {self.tool} runs in {fresh_ms:.0f} ms fresh; a hit costs {hit.describe()}: cached")
        record["outcome"] = "measured"
        return self._finish(cache, record, output)

    def _judged_cheap(self, cache: Cache, record: dict[str, Any], key: str, output: dict[str, Any], fresh_ms: float,
                      hit: cost.HitCost, traced: bool = False) -> int:
        cost.mark_cheap(cache, key, fresh_ms, hit.ms)
        text = self._cheap_text(fresh_ms, hit, traced)
        self.notes.append(text)
        if self.options.explain or self.options.summary:
            say(text)
        record["outcome"] = "cheap_miss"
        return self._finish(cache, record, output)

    def _put(self, cache: Cache, key: str, candidates: list[dict[str, Any]]) -> None:
        """Rewrite a key's manifest (remove it when no candidate is left); best effort."""
        from ..records import Records

        try:
            if not candidates:
                cache.store.delete(ENTRY_PREFIX + key)
                return
            extra = {"_cache_duration_ms": candidates[0].get("duration_ms"), "tool": self.tool,
                     "scope": self.options.scope, "command": _printable(" ".join(self.command))[:500],
                     "candidates": len(candidates)}
            Records(cache.store, cache.codec).put_raw(ENTRY_PREFIX + key, manifest.encode(candidates),
                                                      kind=manifest.ENTRY_TYPE, ttl_s=self.policy.max_age_hours * 3600.0,
                                                      action=cost.COUNTER_ACTION + self.tool, metadata=extra)
        except Exception as exc:  # noqa: BLE001 - a store that fails never fails the tool
            self._note(f"warning: cache entry not updated: {exc}")

    def _streamed(self, outcome: Any) -> None:
        if self.options.stream:
            command_wrote(outcome.stdout if self.options.one_stream else outcome.stderr)

    def _fresh(self, strace: str | None, cache: Cache | None = None) -> dict[str, Any]:
        """Run the command (traced when ``strace``); the result carries ``readset`` or ``unrecordable``.
        ``cache``: its store is let go of while the command runs (``_let_go``)."""
        problem = self._cannot_start()
        if problem is not None:
            code, message = problem
            say(message)
            return {"exit_code": code, "stdout": b"", "stderr": b"", "start_error": message, "duration_ms": 0.0,
                    "fresh_ms": 0.0}
        if cache is not None and self.options.own_store:  # a shared cache (an agent's) stays as its threads use it
            _let_go(cache)
        if strace is None:
            outcome = run_tool(self.command, stdin_data=self.options.stdin_data, stream=self.options.stream,
                               env=self._env(), pass_fds=self.options.pass_fds, stdin_more=self.options.stdin_more,
                               one_stream=self.options.one_stream)
            self._streamed(outcome)
            plain: dict[str, Any] = {"exit_code": outcome.exit_code, "stdout": outcome.stdout,
                                     "stderr": outcome.stderr, "duration_ms": round(outcome.duration_ms, 3),
                                     "fresh_ms": round(outcome.duration_ms, 3), "readset": [], "traced": False,
                                     "stdin_offset": stdin_offset()}
            if outcome.incomplete is not None:
                plain["unrecordable"] = outcome.incomplete
            return plain
        from .readset import build
        from .trace import forget_probe, touches, traced_argv, tracing_works
        from .unrecordable import Unrecordable

        untraceable = tracing_works(strace)
        if untraceable is not None:
            self._note(fallback_note(untraceable) + "; set ACTIONCACHE_TRACE=off to cache with those keys")
            untraced = self._fresh(None, cache)
            untraced.setdefault("unrecordable", f"the command could not be traced ({untraceable})")
            return untraced
        with tempfile.TemporaryDirectory(prefix="trace-", dir=own_temp_folder()) as tmp:
            log_path = os.path.join(tmp, "trace")
            # A directory this process created (the store's, a memo's) is not news to the command:
            # its times are settled before the run starts (_lean.settle_own_writes), by the fine
            # granularity the read-set judges "changed while the command ran" by, and 1 ms more.
            settle_own_writes(manifest.FINE_GRANULARITY_NS + 1_000_000)
            started_ns = time.time_ns()
            terminal = _inherits_terminal(self.options.stdin_data, self.options.pass_fds)
            outcome = run_tool(traced_argv(strace, log_path, self.command, terminal), stdin_data=self.options.stdin_data,
                               stream=self.options.stream, env=self._env(), pass_fds=self.options.pass_fds,
                               one_stream=self.options.one_stream)
            self._streamed(outcome)
            result: dict[str, Any] = {"exit_code": outcome.exit_code, "stdout": outcome.stdout,
                                      "stderr": outcome.stderr, "duration_ms": round(outcome.duration_ms, 3),
                                      "traced": True, "stdin_offset": stdin_offset(),
                                      **self._command_ms(log_path, outcome.duration_ms)}
            if outcome.incomplete is not None:
                result["unrecordable"] = outcome.incomplete
                return result
            if not os.path.exists(log_path) or os.path.getsize(log_path) == 0:
                forget_probe(strace)  # strace ran but traced nothing: it cannot trace here any more
                result["unrecordable"] = "the command could not be traced (strace wrote no trace)"
                return result
            if outcome.exit_code != 0:
                return result
            ran = self._ran_non_cacheable(log_path)
            if ran is not None:
                result["unrecordable"] = ran
                return result
            try:
                with open(log_path, encoding="utf-8", errors="surrogateescape") as lines:
                    result["readset"] = build(touches(lines, os.getcwd()), started_ns, ignore=self._own_files())
            except Unrecordable as exc:
                result["unrecordable"] = str(exc)
            except OSError as exc:
                result["unrecordable"] = f"the trace could not be read ({exc})"
        return result

    @staticmethod
    def _command_ms(log_path: str, traced_ms: float) -> dict[str, Any]:
        """The traced command's own time (``fresh_ms``, ``trace.command_ms``) and where it comes
        from (``fresh_from``): the trace, else the traced time itself (an upper bound)."""
        from .trace import command_ms

        try:
            with open(log_path, encoding="utf-8", errors="surrogateescape") as lines:
                own = command_ms(lines)
        except OSError:
            own = None
        if own is None:
            return {"fresh_ms": round(traced_ms, 3), "fresh_from": "traced"}
        return {"fresh_ms": round(min(own, traced_ms), 3), "fresh_from": "trace"}

    def _ran_non_cacheable(self, log_path: str) -> str | None:
        """Why the traced run must not be stored: it executed a ``non_cacheable_tools`` program
        (any execve in the trace, wrappers, shells and scripts included), else None."""
        if not self.policy.non_cacheable:
            return None
        from .._glob import glob_matches
        from .naming import match_executed
        from .trace import executed

        try:
            with open(log_path, encoding="utf-8", errors="surrogateescape") as lines:
                execs = executed(lines)
        except OSError as exc:
            return f"the trace could not be read ({exc})"
        found = match_executed(sorted(self.policy.non_cacheable), execs, glob_matches)
        if found is None:
            return None
        pattern, shown = found
        return f"it ran {shown}, which is in non_cacheable_tools (as {pattern!r})"

    def _env(self) -> dict[str, str] | None:
        """The command's environment: ours (None), or with --env-mode strict only the declared part."""
        if self.options.env_mode == "all":
            return None
        from .keys import command_env

        return command_env(os.environ, self.options.env_mode, self.options.env_names)

    def _cannot_start(self) -> tuple[int, str] | None:
        program = self.command[0]
        found = which(program)
        if found is None:
            exists = os.sep in program and os.path.exists(program)
            return ((EXIT_NOT_EXECUTABLE, f"cannot run {program!r}: Permission denied") if exists else
                    (EXIT_NOT_FOUND, f"cannot run {program!r}: No such file or directory"))
        return None

    def _own_files(self) -> list[str]:
        """The store's own files, which a command must not look at to be cached (``readset.build``;
        every run changes them): the store file in use and the default one (with the files the store
        keeps beside them: ``readset.SIDECARS``), and the memos and verdicts this cache keeps in its
        cache directory (``_lean.store_sidecar``), all recognised by identity (``readset.OwnFiles``). Nothing else there: a
        virtualenv under it is observed."""
        from .._lean import SIDECAR_FOLDER
        from ..config import DEFAULT_FILENAME, user_cache_dir
        from ..stores.registry import store_file
        from .keys import env_secret_path
        from .trace import probe_memo, tracer

        base = user_cache_dir()
        strace = tracer()
        memo = probe_memo(strace) if strace else None
        own = [str(base / DEFAULT_FILENAME), str(base / "config-memo"), str(base / TEMP_FOLDER), env_secret_path(None),
               str(base / SIDECAR_FOLDER), *([memo] if memo else [])]
        for url in (self.store_url, os.environ.get("ACTIONCACHE_URL", "")):
            path = store_file(url) if url else None
            if path is not None:
                own.append(os.path.abspath(path))
        return own

    def _keyed_by_request(self, reason: str) -> str:
        """How to cache an ``llm_ro`` command that the trace refused for its network use: an LLM call
        always talks to the network, whose answer no read-set can vouch for; it is cached by the
        request it is sent instead, which the user names (the key's fallback: the command line, its
        files, ``--input``, the environment, the git HEAD), as the Python API's ``cache.wrap`` does."""
        from .trace import NETWORK_REASON

        if self.options.scope != "llm_ro" or not reason.startswith(NETWORK_REASON):
            return ""
        return ("; an LLM call is cached by the request it is sent: name its prompt files with --input and "
                "run it with ACTIONCACHE_TRACE=off (docs/agent-loops.md, \"LLM calls over the network\")")

    def _store(self, cache: Cache, key: str, output: dict[str, Any], candidates: list[dict[str, Any]]) -> bool:
        if output.get("unrecordable"):
            self._note(f"not cached: {output['unrecordable']}{self._keyed_by_request(str(output['unrecordable']))}")
            return False
        readset = output.get("readset", [])
        if self.options.explain:
            self._explain_readset("recorded read-set", readset)
        now = time.time()
        measured = bool(output.get("measured")) or not output.get("traced") or cost.explicit_threshold() is not None
        new = manifest.candidate({**output, "measured": measured}, readset, now, bool(output.get("traced")))
        keep = [c for c in manifest.live(candidates, now, self.policy.max_age_hours) if c.get("readset") != readset]
        ttl_s = self.policy.max_age_hours * 3600.0
        from ..records import Records

        extra = {"_cache_duration_ms": new["duration_ms"], "tool": self.tool, "scope": self.options.scope,
                 "command": _printable(" ".join(self.command))[:500], "candidates": 1 + len(keep)}
        try:
            Records(cache.store, cache.codec).put_raw(ENTRY_PREFIX + key, manifest.encode([new, *keep]),
                                                      kind=manifest.ENTRY_TYPE, ttl_s=ttl_s, action=cost.COUNTER_ACTION + self.tool,
                                                      metadata=extra)
        except Exception as exc:  # noqa: BLE001 - a store that fails never fails the tool
            self._note(f"warning: result not cached: {exc}")
            return False
        return True

    def _explain_readset(self, title: str, readset: list[list[Any]]) -> None:
        from .readset import describe

        lines = [f"{title}: {len(readset)} observation{'s' if len(readset) != 1 else ''}"]
        lines += [f"  {r[0]} {r[1]}  {describe(r[2])}" for r in readset]
        say("\n".join(lines))

    def _audit(self, cache: Cache, record: dict[str, Any], cached: dict[str, Any], candidates: list[dict[str, Any]],
               strace: str | None) -> int:
        """Verify outputs periodically: Re-run a sampled hit; a mismatch replaces the entry."""
        fresh = self._fresh(strace, cache)
        same = all(fresh.get(f) == cached.get(f) for f in ("exit_code", "stdout", "stderr"))
        # An audited hit stays a hit in the counts, but saved no time.
        record.update(audited=True, mismatch=not same, saved_ms=0, outcome="audit_ok" if same else "audit_mismatch")
        if not same:
            key = str(record["key"])
            if fresh["exit_code"] == 0:
                self._store(cache, key, fresh, [c for c in candidates if c.get("stdout") != cached.get("stdout")])
                say(f"audit: {self.tool}'s cached result differs from a fresh run; entry replaced")
            else:
                try:
                    cache.store.delete(ENTRY_PREFIX + key)
                except Exception as exc:  # noqa: BLE001
                    self._note(f"warning: stale entry not removed: {exc}")
                say(f"audit: {self.tool}'s cached result differs from a fresh run; entry removed (the fresh run failed)")
                record.update(outcome="fail")
        return self._finish(cache, record, fresh)

    def _timing(self, cache: Cache, record: dict[str, Any], output: dict[str, Any]) -> None:
        """This process's cost (``lean.process_ms``: from the fork that started the launcher)
        against the command's own time (``fresh_ms``: the entry's for a replay, else what this run
        had of it: untraced, its run; traced, the trace's figure; not started, 0): a hit's
        ``hit_ms`` and ``saved_ms``, any other run's ``overhead_ms``. Every run is timed, whatever
        its outcome; what the process costs after this is its tail (``cost.end_process``)."""
        if not isinstance(record.get("fresh_ms"), (int, float)):
            record["fresh_ms"] = round(float(output.get("fresh_ms", output.get("duration_ms")) or 0.0), 3)
        total = process_ms()
        if total is None:
            return
        fresh = float(record["fresh_ms"])
        cost.expect_tail(cache, record, total, self._stretch)  # what the process costs after this (cost.end_process)
        if record.get("hit"):
            record["hit_ms"] = round(total, 3)
            record["saved_ms"] = 0.0 if record.get("audited") else round(fresh - total, 3)
            if record.get("audited"):
                record["overhead_ms"] = round(total - fresh, 3)
        else:
            record["overhead_ms"] = round(max(0.0, total - fresh) + float(record.get("estimate_error_ms") or 0.0), 3)

    def _weigh(self, cache: Cache, records: list[dict[str, Any]]) -> None:
        """The runs into their families' ledgers; after a miss that traced the command (and tried
        to record it), whether its family is churning (``ledger.judge``)."""
        if cost.explicit_threshold() is not None:
            return
        try:
            ledgers = ledger.add(cache, records)
            record = records[-1]
            family = record.get("family")
            traced_miss = record.get("lookup") and record.get("outcome") in ("miss", "cheap_miss", "fail", "fresh")
            if traced_miss and isinstance(family, str) and family in ledgers:
                period = ledger.judge(cache, family, ledgers[family])
                if period is not None and (self.options.explain or self.options.summary):
                    lasts = f"{period:.0f} s" if period < 120 else f"{period / 60:.0f} min"
                    say(f"churning: {self.tool}'s recent misses and failures (never recorded) cost more than a hit "
                        f"of it saves: for {lasts} a miss runs directly, not recorded")
        except Exception as exc:  # noqa: BLE001 - a ledger not kept costs hits, never the run
            self._note(f"warning: ledger not updated: {exc}")

    def _finish(self, cache: Cache, record: dict[str, Any], output: dict[str, Any]) -> int:
        code = int(output.get("exit_code", 1))
        record["exit_code"] = code
        if "outcome" not in record:
            record["outcome"] = "fail" if code != 0 else "fresh"
        failed = record["outcome"] == "fail"
        self._timing(cache, record, output)
        cost.count_run(cache, record)
        if failed:
            record.update(log.failure_text(output))
        folded: list[dict[str, Any]] = []  # the hit journal's records, folded below
        if self.options.run_log or failed:
            prefix = log.FAIL_LOG_PREFIX if failed else log.RUN_LOG_PREFIX
            problem = log.append(cache, prefix, record)
            if problem and log.keep_in_journal(cache, prefix, record):
                problem += " (kept in the hit journal until the store takes it)"
            problem = problem or log.fold_journal(cache, folded)
            if problem:
                self._note(f"warning: {problem}")
        self._weigh(cache, [*folded, record])
        if self.options.summary:
            hits = int(bool(record.get("hit")))
            misses = int(bool(record.get("lookup")) and not hits and record["outcome"] != "cheap")
            saved = float(record.get("saved_ms") or 0) / 1000.0
            say(f"{self.tool}: {record.get('outcome')}; hits {hits}, misses {misses}, time saved {saved:.2f}s")
        self.result = {**record, "stdout": output.get("stdout", b""), "stderr": output.get("stderr", b""),
                       "notes": list(self.notes)}
        return code
