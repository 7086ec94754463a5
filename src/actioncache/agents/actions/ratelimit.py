"""``ratelimit.wrap``: run an action at most N times per window, per named limiter, across processes.

TEA's parameters (``action``, ``args``, ``limiter``, ``rpm``/``rps``, ``timeout``) and response
(``result``, ``_ratelimit_waited_ms``, ``_ratelimit_limiter``). The limiter lives in the agent's
store, so every process on the same store shares it: a limit of N requests per window W allows at
most N requests in any W seconds (a sliding log, ``stores/ratelimit.py``: one script call on Redis
and Valkey, a log entry under the store's lease elsewhere). When the limit is reached a request
waits until the oldest request leaves the window (``on_limit: wait``, up to ``timeout`` seconds)
or fails at once (``on_limit: fail``) with ``error_type: ratelimit_timeout``. Put ``cache.wrap``
outside ``ratelimit.wrap``: a hit never reaches the limiter.

Limits may also come from ``settings.rate_limiters: {openai: {rpm: 60}}``. If the store fails,
the action runs unlimited and the response says so in ``_ratelimit_error`` (a store failure never
fails the action).
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping

from ...actions import ActionTable, Engine
from ...stores.ratelimit import take
from ..errors import UnknownActionError
from ..key_context import declare_key_context, key_context_of
from ..trust import UntrustedRefusal
from .failures import failure, typed

ON_LIMIT = ("wait", "fail")
LEASE_PREFIX = "ratelimit:"
# Longest single sleep while waiting for a slot: waiting processes re-check at least this often.
MAX_POLL_S = 0.5
# Most requests one limiter's window may hold (a rate of 10,000 per second or per minute): the
# store keeps one time per request in the window.
MAX_SLOTS = 10_000


def window(rpm: float | None, rps: float | None) -> tuple[int, float]:
    """(slots N, window W seconds) for a limit; ``rps`` wins over ``rpm`` as in TEA.

    N requests per W seconds with N = the whole number of requests per second (or minute), at
    least 1, and W chosen so N/W is the exact rate: 2.5 rps is 2 requests per 0.8 s.
    """
    for rate, unit in ((rps, 1.0), (rpm, 60.0)):
        if rate is None:
            continue
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0 or not math.isfinite(rate):
            raise ValueError(f"a rate must be a positive number, not {rate!r}")
        if rate >= MAX_SLOTS + 1:
            raise ValueError(f"a rate of {rate!r} per {'second' if unit == 1.0 else 'minute'} is above the maximum "
                             f"of {MAX_SLOTS} per {'second' if unit == 1.0 else 'minute'}; give a lower rate "
                             "(or no ratelimit.wrap at all)")
        slots = max(1, int(rate))
        return slots, slots * unit / rate
    raise ValueError("give rpm: (requests per minute) or rps: (requests per second), here or in settings.rate_limiters")


class SlotLimiter:
    """At most N requests in any W seconds in a store (``stores.ratelimit.take``): ``take()`` says
    whether a request may go now."""

    def __init__(self, store: Any, name: str, slots: int, window_s: float) -> None:
        self.store, self.name, self.slots, self.window_s = store, name, slots, window_s

    def take(self) -> bool:
        return take(self.store, self.name, self.slots, self.window_s) == 0.0

    def wait(self, timeout_s: float | None, sleep: Any = time.sleep, clock: Any = time.monotonic) -> tuple[bool, float]:
        """(took a slot, seconds waited); ``timeout_s`` None waits as long as it takes."""
        started = clock()
        while True:
            retry_in = take(self.store, self.name, self.slots, self.window_s)
            if retry_in == 0.0:
                return True, clock() - started
            waited = clock() - started
            pause = min(MAX_POLL_S, max(0.001, retry_in))
            if timeout_s is not None and waited + pause > timeout_s:
                return False, waited
            sleep(pause)


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def configured(limiter: str) -> Mapping[str, Any]:
        limiters = (getattr(engine, "settings", None) or {}).get("rate_limiters") or {}
        return limiters.get(limiter) or {} if isinstance(limiters, Mapping) else {}

    def wrap(state: Mapping[str, Any], action: str, args: Mapping[str, Any] | None = None, limiter: str | None = None,
             rpm: float | None = None, rps: float | None = None, timeout: float | None = None,
             on_limit: str = "wait") -> dict[str, Any]:
        """Take a slot of ``limiter`` (default: the action's name), then run ``action``."""
        try:
            canonical, fn = engine.registry.resolve(action, node=engine.current_node)
        except UnknownActionError as exc:
            return failure("action_not_found", str(exc), _ratelimit_waited_ms=0, _ratelimit_limiter=limiter)
        name = str(limiter or canonical)
        meta: dict[str, Any] = {"_ratelimit_waited_ms": 0, "_ratelimit_limiter": name}
        if on_limit not in ON_LIMIT:
            return failure("validation_error", f"on_limit must be 'wait' or 'fail', not {on_limit!r}", **meta)
        if rpm is None and rps is None:
            rpm, rps = configured(name).get("rpm"), configured(name).get("rps")
        try:
            slots, window_s = window(rpm, rps)
        except ValueError as exc:
            return failure("validation_error", f"ratelimit.wrap limiter {name!r}: {exc}", **meta)
        if args is not None and not isinstance(args, Mapping):
            return failure("validation_error", f"ratelimit.wrap args: must be a mapping of the action's parameters, "
                           f"not {type(args).__name__}", **meta)
        slot = SlotLimiter(engine.store, name, slots, window_s)
        try:
            took, waited = slot.wait(0.0 if on_limit == "fail" else timeout)
        except Exception as exc:  # noqa: BLE001 - a store failure never fails the action
            took, waited = True, 0.0
            meta["_ratelimit_error"] = f"limiter store failed, ran unlimited: {type(exc).__name__}: {exc}"
        meta["_ratelimit_waited_ms"] = round(waited * 1000, 3)
        if not took:
            limit = f"{slots} per {window_s:g}s"
            return failure("ratelimit_timeout", f"rate limiter {name!r} ({limit}) had no free slot "
                           + ("(on_limit: fail)" if on_limit == "fail" else f"within timeout {timeout}s"), **meta)
        try:
            result = fn(state, **dict(args or {}))
        except UntrustedRefusal:
            raise  # a refusal stops the agent; it is not an action failure
        except Exception as exc:  # noqa: BLE001 - TEA's shape: success False with error_type
            return failure("action_error", f"{type(exc).__name__}: {exc}", **meta)
        ok = result.get("success", True) is not False if isinstance(result, dict) else True
        response = {"success": ok, "result": result, **meta}
        if not ok:
            response["error"] = result.get("error") or "the action returned success: false"
        return typed(response, "action_error")

    def context(args: Mapping[str, Any]) -> dict[str, Any]:
        """The wrapped action's own key context, so cache.wrap over ratelimit.wrap keys like the action."""
        action = args.get("action")
        if not isinstance(action, str) or action not in engine.registry:
            return {}
        canonical, fn = engine.registry.resolve(action)
        inner = key_context_of(fn, dict(args.get("args") or {}))
        return {"action": canonical, "context": inner}

    registry["ratelimit.wrap"] = declare_key_context(wrap, context)
