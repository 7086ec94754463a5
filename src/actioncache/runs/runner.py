"""One ``actioncache exec`` run through the cache: key, lookup, run or replay, audit, log.

The run goes through ``Cache.wrap`` with an explicit key inside a ``use_policy`` block, so the
mode, scope and phase rules, the stats counters and the store-failure rules are the core's own.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

from ..cache import Cache
from ..policy import LoopConfig, Policy, use_policy
from . import log
from .keys import key_parts, run_key
from .process import Outcome, emit, run_tool

EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126


def open_cache(url: str | None, config: LoopConfig) -> Cache:
    """``--store``, else ``$ACTIONCACHE_URL``, else the config file's ``store``, else the default."""
    import os

    if url is None and not os.environ.get("ACTIONCACHE_URL", "").strip():
        url = config.store
    return Cache(url)


def _say(message: str) -> None:
    sys.stderr.write(f"actioncache exec: {message}\n")
    sys.stderr.flush()


class ExecRun:
    def __init__(self, args: argparse.Namespace, command: list[str], tool: str, scope: str, policy: Policy,
                 config: LoopConfig) -> None:
        self.args = args
        self.command = command
        self.tool = tool
        self.scope = scope
        self.policy = policy
        self.config = config
        self.stdin_data: bytes | None = sys.stdin.buffer.read() if args.stdin else None
        self.start_error: OSError | None = None

    # --- the tool itself ---------------------------------------------------------------

    def _run(self, stream: bool = True) -> dict[str, Any]:
        try:
            outcome = run_tool(self.command, stdin_data=self.stdin_data, stream=stream)
        except OSError as exc:
            self.start_error = exc
            raise
        result: dict[str, Any] = {"exit_code": outcome.exit_code, "stdout": outcome.stdout, "stderr": outcome.stderr,
                                  "duration_ms": round(outcome.duration_ms, 3)}
        if outcome.exit_code != 0:
            result["success"] = False  # failures are never cached
            result["error"] = f"exit status {outcome.exit_code}"
        return result

    def _wrap(self, cache: Cache, key: str | None, *, skip_cache: bool = False, stream: bool = True) -> dict[str, Any]:
        return cache.wrap(self.tool, lambda: self._run(stream), {}, key=key or "exec:unkeyed", scope=self.scope,
                          ttl_hours=self.policy.max_age_hours, skip_cache=skip_cache,
                          metadata={"tool": self.tool, "scope": self.scope, "command": " ".join(self.command)[:500]})

    # --- one run -----------------------------------------------------------------------

    def execute(self) -> int:
        cache = open_cache(self.args.store, self.config)
        try:
            with use_policy(cache, self.policy):
                return self._execute(cache)
        finally:
            cache.close()

    def _execute(self, cache: Cache) -> int:
        decision = self.policy.decide(self.scope, self.tool)
        key = None
        if decision.lookup or decision.store:
            parts = key_parts(self.command, scope=self.scope, inputs=self.args.input, env_names=self.args.env,
                              stdin_data=self.stdin_data, check_git_sha=self.policy.check_git_sha)
            key = run_key(self.tool, parts)
            if self.args.explain:
                from ..keys import canonical_json

                _say(f"key cache:{key}\n  parts {canonical_json(parts)}")
        response = self._wrap(cache, key)
        record: dict[str, Any] = {"tool": self.tool, "scope": self.scope, "key": key, "lookup": decision.lookup,
                                  "hit": bool(response.get("_cache_hit")),
                                  "phase_blocked": self.policy.mode != "off" and self.policy.phase_blocks(self.scope)}
        if response.get("_cache_error"):
            _say(f"warning: {response['_cache_error']}")
        if response.get("_cache_hit"):
            cached = response["result"]
            if self.policy.audit_rate > 0 and random.random() < self.policy.audit_rate:
                return self._audit(cache, key, cached, record)
            emit(sys.stdout, cached["stdout"])
            emit(sys.stderr, cached["stderr"])
            record.update(outcome="hit", exit_code=cached["exit_code"], saved_ms=cached.get("duration_ms", 0))
            return self._finish(cache, record, cached["exit_code"])
        return self._fresh(cache, response, record, decision)

    def _fresh(self, cache: Cache, response: dict[str, Any], record: dict[str, Any], decision: Any) -> int:
        if self.start_error is not None:
            exc = self.start_error
            _say(f"cannot run {self.command[0]!r}: {exc.strerror or exc}")
            code = EXIT_NOT_FOUND if isinstance(exc, FileNotFoundError) else EXIT_NOT_EXECUTABLE
            record.update(outcome="fail", exit_code=code, error=str(exc))
            return self._finish(cache, record, code)
        result = response.get("result") or {}
        code = int(result.get("exit_code", 1))
        record.update(exit_code=code, duration_ms=result.get("duration_ms"))
        if code != 0:
            record.update(outcome="fail", error=log.error_tail(result.get("stderr", b"")))
        elif record["phase_blocked"] or not decision.store:
            record["outcome"] = "fresh"
        else:
            record["outcome"] = "miss" if decision.lookup else "record"
        return self._finish(cache, record, code)

    def _audit(self, cache: Cache, key: str | None, cached: dict[str, Any], record: dict[str, Any]) -> int:
        """Seed 001: "verify outputs periodically". Re-run a sampled hit; a mismatch replaces the entry."""
        response = self._wrap(cache, key, skip_cache=True)
        if self.start_error is not None:
            return self._fresh(cache, response, record, self.policy.decide(self.scope, self.tool))
        fresh = response.get("result") or {}
        same = all(fresh.get(f) == cached.get(f) for f in ("exit_code", "stdout", "stderr"))
        code = int(fresh.get("exit_code", 1))
        # An audited hit stays a hit in the counts (as the core counted it), but saved no time.
        record.update(audited=True, mismatch=not same, exit_code=code, saved_ms=0,
                      outcome="audit_mismatch" if not same else "audit_ok")
        cache._count(self.tool, audits=1, audit_mismatches=int(not same))
        if not same:
            _say(f"audit: {self.tool}'s cached result differs from a fresh run; "
                 + ("entry replaced" if code == 0 else "entry removed (the fresh run failed)"))
            if code != 0:
                cache.invalidate(key=key)
                record.update(outcome="fail", error=log.error_tail(fresh.get("stderr", b"")))
        return self._finish(cache, record, code)

    def _finish(self, cache: Cache, record: dict[str, Any], code: int) -> int:
        if self.config.run_log or record.get("outcome") == "fail":
            prefix = log.FAIL_LOG_PREFIX if record.get("outcome") == "fail" else log.RUN_LOG_PREFIX
            problem = log.append(cache, prefix, record)
            if problem:
                _say(f"warning: {problem}")
        if self.args.summary or self.config.verbose:
            hits = int(bool(record.get("hit")))
            misses = int(bool(record.get("lookup")) and not hits)
            saved = float(record.get("saved_ms") or 0) / 1000.0 if hits else 0.0
            _say(f"{self.tool}: {record.get('outcome')}; hits {hits}, misses {misses}, time saved {saved:.2f}s")
        return code


__all__ = ["ExecRun", "Outcome", "open_cache"]
