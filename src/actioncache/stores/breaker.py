"""A circuit breaker for networked stores: a store that keeps failing is skipped for a while.

A cache in front of a hung server must not turn the server's outage into the caller's: without a
breaker every call waits for its timeouts. Every networked store (Redis and its kin, PostgreSQL,
Firestore, the blob stores) holds one :class:`CircuitBreaker` and checks it around each call to its
driver (``StoreErrors`` does it for them: ``with self.errors(op):``).

* **closed**: calls go through. A failure (a driver error or timeout) adds to a streak that a
  success resets. The breaker opens after ``failures`` consecutive failures, or after
  ``timeouts`` consecutive ones that were timeouts (each timeout already cost a whole timeout,
  so fewer are allowed).
* **open**: calls fail at once with :class:`StoreSkippedError` (a :class:`StoreError`, so the cache
  core runs the action uncached, as for any store failure) for ``cooldown_s``.
* **half-open**: after the cool-down one call goes through as a probe (the others are still
  skipped). Its success closes the breaker; its failure opens it again for twice the cool-down, up
  to ``max_cooldown_s``, so a store that stays down costs one timeout per cool-down, not one per call.

Opening logs and warns once (:class:`BreakerWarning`); :meth:`CircuitBreaker.state` says what it
is doing, for ``Cache.stats()`` (``store_breaker``) and tests. The checks on the way through cost
two attribute reads and a comparison: they sit on the hit path.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Callable

from .._log import LazyLogger
from ..errors import CacheWarning, StoreError
from ._url import prefixed_options

__all__ = ["BREAKER_DEFAULTS", "BreakerWarning", "CircuitBreaker", "StoreSkippedError", "breaker_health",
           "breaker_options", "is_timeout"]

log = LazyLogger("actioncache")  # logging is imported when something is logged: ~5 ms a run

# The defaults, documented in docs/backends.md ("Timeouts and the circuit breaker").
BREAKER_DEFAULTS: dict[str, float] = {
    "failures": 3,  # consecutive failures that open the breaker
    "timeouts": 2,  # ... or consecutive timeouts (each one already cost a whole read timeout)
    "cooldown_s": 1.0,  # first pause before a probe; doubles per failed probe
    "max_cooldown_s": 15.0,  # caching resumes at most this long (plus one probe) after the store recovers
}


class StoreSkippedError(StoreError):
    """The store was not called: its circuit breaker is open after consecutive failures."""


class BreakerWarning(CacheWarning):
    """A store's circuit breaker opened: calls run uncached until a probe succeeds."""


def is_timeout(exc: BaseException) -> bool:
    """Whether a driver's exception is a timeout (by type: ``TimeoutError``, and the drivers' own
    ``...Timeout...`` and ``DeadlineExceeded`` classes, which do not all derive from it)."""
    if isinstance(exc, TimeoutError):
        return True
    return any("Timeout" in cls.__name__ or cls.__name__ == "DeadlineExceeded" for cls in type(exc).__mro__)


def breaker_options(query: dict[str, str], options: dict[str, Any], where: str,
                    **defaults: float) -> dict[str, float]:
    """The ``breaker=off`` and ``breaker_*`` URL options (``breaker_failures=5&breaker_cooldown_s=2``)
    and keywords, checked, over ``defaults`` (a store's own, over :data:`BREAKER_DEFAULTS`); removes
    them from ``query`` and ``options``. Off: ``{}``."""
    return prefixed_options(query, options, "breaker", {**BREAKER_DEFAULTS, **defaults}, where, on_by_default=True) or {}


def breaker_health(breaker: CircuitBreaker | None) -> dict[str, Any]:
    """A store's ``health()``: its breaker's state (``Cache.stats()["store_health"]``)."""
    return {"breaker": breaker.state() if breaker is not None else {"state": "off"}}


class CircuitBreaker:
    """Skips a failing store for a cool-down, then probes it (see the module docstring)."""

    __slots__ = ("where", "failures", "timeouts", "cooldown_s", "max_cooldown_s", "clock", "_lock", "_streak",
                 "_timeout_streak", "_open_until", "_probing", "_cooldown", "_last_error", "_opened", "on_close")

    def __init__(self, where: str, *, failures: float = 3, timeouts: float = 2, cooldown_s: float = 1.0,
                 max_cooldown_s: float = 15.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.where = where
        self.failures = max(1, int(failures))
        self.timeouts = max(1, int(timeouts))
        self.cooldown_s = float(cooldown_s)
        self.max_cooldown_s = max(float(max_cooldown_s), self.cooldown_s)
        self.clock = clock
        self._lock = threading.Lock()
        self._streak = 0
        self._timeout_streak = 0
        self._open_until: float | None = None  # None: closed
        self._probing = False
        self._cooldown = self.cooldown_s
        self._last_error = ""
        self._opened = 0  # times it opened (state())
        # Called (outside the lock) when a probe's success closes the breaker: a store re-checks what
        # may have changed while it was skipped (Redis Sentinel: which node is the master now).
        self.on_close: Callable[[], object] | None = None

    # --- the checks around each driver call ---------------------------------------------------

    def before(self) -> None:
        """Raise :class:`StoreSkippedError` while open; let one probe through once the cool-down is over."""
        if self._open_until is None:
            return
        with self._lock:
            until = self._open_until
            if until is None:
                return
            if self._probing or self.clock() < until:
                raise StoreSkippedError(
                    f"{self.where}: skipped, the circuit breaker is open after {self._streak} consecutive "
                    f"failures (last: {self._last_error}); a probe follows within "
                    f"{max(0.0, until - self.clock()):.1f} s")
            self._probing = True  # this call is the probe; the others stay skipped until it ends

    def success(self) -> None:
        if self._streak == 0 and self._open_until is None:
            return
        with self._lock:
            was_open = self._open_until is not None
            self._streak = self._timeout_streak = 0
            self._open_until = None
            self._probing = False
            self._cooldown = self.cooldown_s
        if was_open:
            log.warning("%s answers again: the circuit breaker closed, caching resumes", self.where)
            on_close = self.on_close
            if on_close is not None:
                try:
                    on_close()
                except Exception as exc:  # noqa: BLE001 - a re-check that fails must not fail the call that closed it
                    log.debug("%s: re-check after the breaker closed failed: %s", self.where, exc)

    def failure(self, exc: BaseException, shown: str | None = None) -> None:
        """Count a failure; ``shown`` is how to name it (redacted: it goes into messages and ``state()``)."""
        timed_out = is_timeout(exc)
        with self._lock:
            self._streak += 1
            self._timeout_streak = self._timeout_streak + 1 if timed_out else 0
            self._last_error = " ".join((shown if shown is not None else type(exc).__name__).split())[:300]
            if self._probing:  # the probe failed: wait longer before the next one
                self._probing = False
                self._cooldown = min(self._cooldown * 2, self.max_cooldown_s)
                self._open_until = self.clock() + self._cooldown
                return
            if self._open_until is not None:
                return
            if self._streak < self.failures and self._timeout_streak < self.timeouts:
                return
            self._open_until = self.clock() + self._cooldown
            self._opened += 1
            message = (f"{self.where} failed {self._streak} times in a row (last: {self._last_error}): the "
                       f"circuit breaker is open, calls run uncached without waiting for it; a probe follows in "
                       f"{self._cooldown:g} s")
        log.warning("%s", message)
        warnings.warn(message, BreakerWarning, stacklevel=2)

    def abandon(self) -> None:
        """The call let through as a probe ended without an answer either way (e.g. interrupted)."""
        if self._probing:
            with self._lock:
                self._probing = False

    # --- what it is doing -----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """``{"state": "closed" | "open" | "half-open", "consecutive_failures", "opened", ...}``."""
        with self._lock:
            until = self._open_until
            if until is None:
                state = "closed"
            elif self._probing or self.clock() >= until:
                state = "half-open"
            else:
                state = "open"
            out: dict[str, Any] = {"state": state, "consecutive_failures": self._streak, "opened": self._opened}
            if until is not None:
                out["retry_in_s"] = round(max(0.0, until - self.clock()), 3)
                out["last_error"] = self._last_error
            return out
