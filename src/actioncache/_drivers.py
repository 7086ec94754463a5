"""The drivers of the miss path, and how they run the user's function.

:meth:`actioncache._flow.Flow.miss` is a generator that does no I/O of the user's function itself:
it *yields* a request to take the store lease (:data:`LEASE`) or to run the function (:data:`RUN`).
:func:`drive` answers those requests synchronously (``Cache.wrap``, the sync ``@cached``),
:func:`adrive` by awaiting (``Cache.awrap``, the async ``@cached``). A run is a ``(ok, value,
duration_ms)`` triple: ``run_*`` turn an exception into ``ok`` False (``wrap``'s response shape),
``timed``/``atimed`` let it propagate (the decorator never swallows one), ``guarded``/``aguarded``
are for a background refresh nobody awaits.
"""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, Generator, Mapping

from ._outcomes import Outcome

__all__ = ["LEASE", "RUN", "Run", "adrive", "aguarded", "atimed", "drive", "guarded", "run_async", "run_sync", "timed"]

LEASE = "lease"  # the driver takes the store lease and sends back (token, Lookup | None)
RUN = "run"  # the driver runs the user's function and sends back (ok, value, duration_ms)
Run = tuple[bool, Any, float]  # (ok, value or the exception's text, duration in ms)


def drive(steps: Generator[str, Any, Outcome], lease: Callable[[], Any], run: Callable[[], Any]) -> Outcome:
    """Answer a miss path's requests synchronously. An exception from ``run`` goes through the
    steps (releasing the lease) and out to the caller."""
    try:
        request = next(steps)
        while True:
            if request is LEASE:
                reply = lease()
            else:
                try:
                    reply = run()
                except BaseException as exc:  # noqa: BLE001 - handed to the steps, which release and re-raise
                    request = steps.throw(exc)
                    continue
            request = steps.send(reply)
    except StopIteration as stop:
        outcome: Outcome = stop.value
        return outcome
    finally:
        steps.close()  # left early (the lease wait raised, or was cancelled): its finally runs now


async def adrive(steps: Generator[str, Any, Outcome], lease: Callable[[], Awaitable[Any]],
                 run: Callable[[], Awaitable[Any]]) -> Outcome:
    """:func:`drive` for the async faces: ``lease`` (:meth:`Flow.atake_lease`) and ``run`` are awaited."""
    try:
        request = next(steps)
        while True:
            if request is LEASE:
                reply = await lease()
            else:
                try:
                    reply = await run()
                except BaseException as exc:  # noqa: BLE001 - handed to the steps, which release and re-raise
                    request = steps.throw(exc)
                    continue
            request = steps.send(reply)
    except StopIteration as stop:
        outcome: Outcome = stop.value
        return outcome
    finally:
        steps.close()  # left early (the lease wait raised, or was cancelled): its finally runs now


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def run_sync(fn: Callable[..., Any], args: Mapping[str, Any]) -> Run:
    """Run an action the way ``wrap`` does: an exception becomes ``(False, "Type: message", ms)``."""
    started = time.perf_counter()
    try:
        result = fn(**args)
    except Exception as exc:  # noqa: BLE001 - the documented shape: success False with error
        return False, f"{type(exc).__name__}: {exc}", _ms_since(started)
    return True, result, _ms_since(started)


async def run_async(fn: Callable[..., Any], args: Mapping[str, Any]) -> Run:
    import asyncio

    started = time.perf_counter()
    try:
        result = fn(**args)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            result = await result
    except Exception as exc:  # noqa: BLE001 - as run_sync
        return False, f"{type(exc).__name__}: {exc}", _ms_since(started)
    return True, result, _ms_since(started)


def timed(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Run:
    """Run ``func``; an exception propagates (the decorator never swallows one) and is never stored."""
    started = time.perf_counter()
    value = func(*args, **kwargs)
    return True, value, _ms_since(started)


async def atimed(func: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Run:
    started = time.perf_counter()
    value = await func(*args, **kwargs)
    return True, value, _ms_since(started)


def guarded(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Run:
    """:func:`timed` for a background refresh: an exception is a failed run (not stored), not a crash."""
    started = time.perf_counter()
    try:
        value = func(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - nobody awaits a background refresh; the stale value stays
        return False, f"{type(exc).__name__}: {exc}", _ms_since(started)
    return True, value, _ms_since(started)


async def aguarded(func: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Run:
    started = time.perf_counter()
    try:
        value = await func(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - as guarded
        return False, f"{type(exc).__name__}: {exc}", _ms_since(started)
    return True, value, _ms_since(started)
