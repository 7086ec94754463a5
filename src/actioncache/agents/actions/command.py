"""``command.run``: run a program (argv list, or a string split with shlex; a shell only if asked).

``success`` means exit code 0, so ``cache.wrap`` over a verifier caches only passing runs. A failure
carries ``error_type``: ``validation_error`` (no command), ``command_error`` (it could not run, timed
out or exited non-zero).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from typing import Any, Mapping

from ...actions import ActionTable, Engine, bad_arg, failure


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def run(state: Mapping[str, Any], command: str | list[Any], timeout: float | None = 60, cwd: str | None = None,
            env: Mapping[str, Any] | None = None, shell: bool = False, input: str | None = None) -> dict[str, Any]:
        problem = (bad_arg("command.run cwd", cwd, "string") or bad_arg("command.run env", env, "mapping")
                   or bad_arg("command.run input", input, "string") or bad_arg("command.run timeout", timeout, "number")
                   or _nul_problem(command))
        if problem:
            return failure("validation_error", problem, exit_code=None, stdout="", stderr="")
        if shell:
            argv: Any = command if isinstance(command, str) else shlex.join(str(a) for a in command)
        elif isinstance(command, str) and command.strip():
            try:
                argv = shlex.split(command)
            except ValueError as exc:  # an unclosed quote
                return failure("validation_error", f"command {command!r}: {exc}", exit_code=None, stdout="", stderr="")
        elif isinstance(command, list) and command:
            argv = [str(a) for a in command]
        else:
            return failure("validation_error", "command must be a non-empty argv list or a string",
                           exit_code=None, stdout="", stderr="")
        full_env = {**os.environ, **{k: str(v) for k, v in (env or {}).items()}}
        started = time.perf_counter()
        base = {"command": argv}
        try:
            proc = subprocess.run(argv, shell=shell, cwd=cwd, env=full_env, input=input, capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            return failure("command_error", f"timed out after {timeout}s (raise timeout: if it needs longer)", **base,
                           exit_code=None, timed_out=True, stdout=_text(exc.stdout), stderr=_text(exc.stderr),
                           duration_ms=_ms(started))
        except OSError as exc:
            return failure("command_error", f"cannot run {argv!r}: {exc}", **base, exit_code=None, timed_out=False,
                           stdout="", stderr="", duration_ms=_ms(started))
        out = {**base, "success": proc.returncode == 0, "exit_code": proc.returncode, "timed_out": False,
               "stdout": proc.stdout, "stderr": proc.stderr, "duration_ms": _ms(started)}
        if proc.returncode != 0:
            out.update(error=f"exit code {proc.returncode}", error_type="command_error")
        return out

    registry["command.run"] = run


def _nul_problem(command: Any) -> str | None:
    parts = command if isinstance(command, list) else [command]
    if any(isinstance(part, str) and "\0" in part for part in parts):
        return "command must not contain a NUL character"
    return None


def _text(data: Any) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
