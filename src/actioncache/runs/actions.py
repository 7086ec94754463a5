"""YAML actions of the agent-loop face: ``command.exec_cached`` and ``policy.current``.

``command.exec_cached`` is ``actioncache exec`` inside an agent: the same content-derived key, the
same mode/scope/phase rules, PASS-only caching, fail log and run log, over the agent's own cache.
The tool's output comes back in the result (text, with bytes that are not UTF-8 replaced). Failures
carry ``error_type`` (:mod:`actioncache.actions`): ``validation_error`` (a bad command or policy),
``command_error`` (the tool exited non-zero).
"""

from __future__ import annotations

import shlex
from typing import Any, Mapping, Sequence

from ..actions import ActionTable, Engine, bad_arg, failure
from ..policy import PolicyError, default_policy
from .runner import ExecOptions, ExecRun


def _argv(command: str | Sequence[Any]) -> list[str]:
    if isinstance(command, str):
        if "\0" in command:
            raise ValueError("command must not contain a NUL character")
        argv = shlex.split(command)
        if argv:
            return argv
    if isinstance(command, (list, tuple)) and command:
        argv = [str(a) for a in command]
        if any("\0" in a for a in argv):
            raise ValueError("command must not contain a NUL character")
        return argv
    raise ValueError("command must be a non-empty argv list or a string")


def _policy_from(settings: Mapping[str, Any], overrides: Mapping[str, Any]) -> Any:
    """Environment/config default, then the agent's ``settings.cache_policy``, then the node's arguments."""
    base = default_policy()
    from_settings = settings.get("cache_policy") or {}
    if not isinstance(from_settings, Mapping):
        raise PolicyError("settings.cache_policy must be a mapping, e.g. {mode: use, scopes: [verify, read]}")
    return base.with_overrides(**dict(from_settings)).with_overrides(**overrides)


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def exec_cached(state: Mapping[str, Any], command: str | Sequence[Any], scope: str = "verify",
                    mode: str | None = None, scopes: Any = None, phase: str | None = None,
                    inputs: Sequence[str] = (), env: Sequence[str] = (), stdin: str | None = None,
                    force_fresh: bool | None = None, audit_rate: float | None = None) -> dict[str, Any]:
        problem = (bad_arg("command.exec_cached inputs", inputs, "list", optional=False)
                   or bad_arg("command.exec_cached env", env, "list", optional=False)
                   or bad_arg("command.exec_cached stdin", stdin, "string")
                   or bad_arg("command.exec_cached scope", scope, "string", optional=False))
        if problem:
            return failure("validation_error", problem + " (inputs: and env: are lists of names)")
        try:
            argv = _argv(command)
            policy = _policy_from(getattr(engine, "settings", None) or {},
                                  {"mode": mode, "scopes": scopes, "phase": phase, "force_fresh": force_fresh,
                                   "audit_rate": audit_rate})
        except (ValueError, PolicyError) as exc:
            return failure("validation_error", str(exc))
        options = ExecOptions(scope=str(scope).strip().lower(), inputs=list(inputs), env_names=list(env),
                              stdin_data=stdin.encode("utf-8") if stdin is not None else b"", stream=False)
        # without stdin: the command gets an empty one, never the agent process's own (it is not keyed)
        run = ExecRun(argv, policy, options)
        code = run.execute(engine.cache)
        result = run.result
        out = {"success": code == 0, "exit_code": code,
               "stdout": result["stdout"].decode("utf-8", "replace"),
               "stderr": result["stderr"].decode("utf-8", "replace"),
               "outcome": result.get("outcome"), "_cache_hit": bool(result.get("hit")),
               "_cache_key": f"cache:{result['key']}" if result.get("key") else None}
        if code != 0:
            out.update(error=result.get("error") or f"exit status {code}", error_type="command_error")
        return out

    def current(state: Mapping[str, Any]) -> dict[str, Any]:
        try:
            policy = _policy_from(getattr(engine, "settings", None) or {}, {})
        except PolicyError as exc:
            return failure("validation_error", str(exc))
        return {"success": True, "mode": policy.mode, "scopes": sorted(policy.scopes), "phase": policy.phase,
                "non_cacheable_tools": sorted(policy.non_cacheable), "max_cache_age_hours": policy.max_age_hours}

    registry["command.exec_cached"] = exec_cached
    registry["policy.current"] = current
