"""One ``actioncache exec`` run through the cache: key, lookup, run or replay, audit, log.

The run goes through ``Cache.wrap`` with an explicit key inside a ``use_policy`` block, so the
mode, scope and phase rules, the stats counters and the store-failure rules are the core's own.
The CLI streams output to the terminal; the YAML action (``runs.actions``) keeps it in the result.
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..cache import Cache
from ..policy import LoopConfig, Policy, use_policy
from . import log
from .keys import key_parts, run_key
from .process import emit, run_tool

EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126


def open_cache(url: str | None, config: LoopConfig) -> Cache:
    """``--store``, else ``$ACTIONCACHE_URL``, else the config file's ``store``, else the default."""
    if url is None and not os.environ.get("ACTIONCACHE_URL", "").strip():
        url = config.store
    return Cache(url)


def say(message: str) -> None:
    sys.stderr.write(f"actioncache exec: {message}\n")
    sys.stderr.flush()


def tool_name(command: Sequence[str]) -> str:
    return os.path.basename(command[0]) or command[0]


@dataclass
class ExecOptions:
    """What one run needs besides the command and the policy (the CLI's flags, or an action's kwargs)."""

    scope: str = "verify"
    inputs: Sequence[str] = ()
    env_names: Sequence[str] = ()
    stdin_data: bytes | None = None
    stream: bool = True  # write the tool's output (or the replay) to our stdout/stderr
    summary: bool = False
    explain: bool = False
    run_log: bool = True


@dataclass
class ExecRun:
    command: list[str]
    policy: Policy
    options: ExecOptions = field(default_factory=ExecOptions)
    start_error: OSError | None = None
    result: dict[str, Any] = field(default_factory=dict)  # exit_code, stdout, stderr, outcome, hit, key

    @property
    def tool(self) -> str:
        return tool_name(self.command)

    # --- the tool itself ---------------------------------------------------------------

    def _run(self) -> dict[str, Any]:
        try:
            outcome = run_tool(self.command, stdin_data=self.options.stdin_data, stream=self.options.stream)
        except OSError as exc:
            self.start_error = exc
            raise
        result: dict[str, Any] = {"exit_code": outcome.exit_code, "stdout": outcome.stdout, "stderr": outcome.stderr,
                                  "duration_ms": round(outcome.duration_ms, 3)}
        if outcome.exit_code != 0:
            result["success"] = False  # failures are never cached
            result["error"] = f"exit status {outcome.exit_code}"
        return result

    def _wrap(self, cache: Cache, key: str | None, *, skip_cache: bool = False) -> dict[str, Any]:
        scope = self.options.scope
        return cache.wrap(self.tool, self._run, {}, key=key or "exec:unkeyed", scope=scope,
                          ttl_hours=self.policy.max_age_hours, skip_cache=skip_cache,
                          metadata={"tool": self.tool, "scope": scope, "command": " ".join(self.command)[:500]})

    # --- one run -----------------------------------------------------------------------

    def execute(self, cache: Cache) -> int:
        """Run (or replay) through ``cache``; returns the exit code; ``self.result`` holds the rest."""
        with use_policy(cache, self.policy):
            return self._execute(cache)

    def _execute(self, cache: Cache) -> int:
        scope = self.options.scope
        decision = self.policy.decide(scope, self.tool)
        key = None
        if decision.lookup or decision.store:
            parts = key_parts(self.command, scope=scope, inputs=self.options.inputs, env_names=self.options.env_names,
                              stdin_data=self.options.stdin_data, check_git_sha=self.policy.check_git_sha)
            key = run_key(self.tool, parts)
            if self.options.explain:
                from ..keys import canonical_json

                say(f"key cache:{key}\n  parts {canonical_json(parts)}")
        response = self._wrap(cache, key)
        record: dict[str, Any] = {"tool": self.tool, "scope": scope, "key": key, "lookup": decision.lookup,
                                  "hit": bool(response.get("_cache_hit")),
                                  "phase_blocked": self.policy.mode != "off" and self.policy.phase_blocks(scope)}
        if response.get("_cache_error"):
            say(f"warning: {response['_cache_error']}")
        if response.get("_cache_hit"):
            cached = response["result"]
            if self.policy.audit_rate > 0 and random.random() < self.policy.audit_rate:
                return self._audit(cache, key, cached, record)
            if self.options.stream:
                emit(sys.stdout, cached["stdout"])
                emit(sys.stderr, cached["stderr"])
            record.update(outcome="hit", saved_ms=cached.get("duration_ms", 0))
            return self._finish(cache, record, cached)
        return self._fresh(cache, response, record, decision.store and decision.lookup, decision.store)

    def _fresh(self, cache: Cache, response: dict[str, Any], record: dict[str, Any], looked: bool,
               stored: bool) -> int:
        if self.start_error is not None:
            exc = self.start_error
            say(f"cannot run {self.command[0]!r}: {exc.strerror or exc}")
            code = EXIT_NOT_FOUND if isinstance(exc, FileNotFoundError) else EXIT_NOT_EXECUTABLE
            record.update(outcome="fail", error=str(exc))
            return self._finish(cache, record, {"exit_code": code, "stdout": b"", "stderr": b""})
        result = response.get("result") or {}
        code = int(result.get("exit_code", 1))
        record["duration_ms"] = result.get("duration_ms")
        if code != 0:
            record.update(outcome="fail", error=log.error_tail(result.get("stderr", b"")))
        elif record["phase_blocked"] or not stored:
            record["outcome"] = "fresh"
        else:
            record["outcome"] = "miss" if looked else "record"
        return self._finish(cache, record, result)

    def _audit(self, cache: Cache, key: str | None, cached: dict[str, Any], record: dict[str, Any]) -> int:
        """Seed 001: "verify outputs periodically". Re-run a sampled hit; a mismatch replaces the entry."""
        response = self._wrap(cache, key, skip_cache=True)
        if self.start_error is not None:
            return self._fresh(cache, response, record, True, True)
        fresh = response.get("result") or {}
        same = all(fresh.get(f) == cached.get(f) for f in ("exit_code", "stdout", "stderr"))
        code = int(fresh.get("exit_code", 1))
        # An audited hit stays a hit in the counts (as the core counted it), but saved no time.
        record.update(audited=True, mismatch=not same, saved_ms=0,
                      outcome="audit_mismatch" if not same else "audit_ok")
        cache._count(self.tool, audits=1, audit_mismatches=int(not same))
        if not same:
            say(f"audit: {self.tool}'s cached result differs from a fresh run; "
                + ("entry replaced" if code == 0 else "entry removed (the fresh run failed)"))
            if code != 0:
                cache.invalidate(key=key)
                record.update(outcome="fail", error=log.error_tail(fresh.get("stderr", b"")))
        return self._finish(cache, record, fresh)

    def _finish(self, cache: Cache, record: dict[str, Any], output: dict[str, Any]) -> int:
        code = int(output.get("exit_code", 1))
        record["exit_code"] = code
        failed = record.get("outcome") == "fail"
        if self.options.run_log or failed:
            problem = log.append(cache, log.FAIL_LOG_PREFIX if failed else log.RUN_LOG_PREFIX, record)
            if problem:
                say(f"warning: {problem}")
        if self.options.summary:
            hits = int(bool(record.get("hit")))
            misses = int(bool(record.get("lookup")) and not hits)
            saved = float(record.get("saved_ms") or 0) / 1000.0
            say(f"{self.tool}: {record.get('outcome')}; hits {hits}, misses {misses}, time saved {saved:.2f}s")
        self.result = {**record, "stdout": output.get("stdout", b""), "stderr": output.get("stderr", b"")}
        return code
