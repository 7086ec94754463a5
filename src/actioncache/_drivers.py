"""The drivers of the miss path, and how they run the user's function.

:meth:`actioncache._flow.Flow.miss` is a generator that does no I/O of the user's function itself:
it *yields* a request to take the store lease (:data:`LEASE`) or to run the function (:data:`RUN`).
:func:`drive` answers those requests synchronously (``Cache.wrap``, the sync ``@cached``),
:func:`adrive` by awaiting (``Cache.awrap``, the async ``@cached``). A run is a ``(ok, value,
duration_ms)`` triple: ``run_*`` turn an exception into ``ok`` False (``wrap``'s response shape),
``timed``/``atimed`` let it propagate (the decorator never swallows one), ``guarded``/``aguarded``
are for a background refresh nobody awaits.

Off the loop. A networked store's calls block their thread for up to a timeout (a hung Redis: the
read timeout, then the write timeout), so the async faces never make them on the event loop:
:class:`Offload` runs the hit path's lookup, each step of the miss path (recheck, store, release)
and the response's tally in a small pool of worker threads of the store's own, and the loop keeps
serving every other task meanwhile. Stores that work in-process (memory, SQLite, DuckDB, or a
store class with ``inline_io = True``) are called inline, as before: a thread hop would cost more
than their call.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Awaitable, Callable, Generator, Mapping, TypeVar

from ._outcomes import Outcome

__all__ = ["LEASE", "OFFLOAD_THREADS", "RUN", "Offload", "Run", "adrive", "offload_for", "aguarded", "atimed", "drive", "guarded", "run_async", "run_sync", "timed"]

LEASE = "lease"  # the driver takes the store lease and sends back (token, Lookup | None)
RUN = "run"  # the driver runs the user's function and sends back (ok, value, duration_ms)
Run = tuple[bool, Any, float]  # (ok, value or the exception's text, duration in ms)
T = TypeVar("T")

# Worker threads per store for the async faces' store calls: a hung store holds at most this many
# (each for one timeout, until its breaker opens), never the loop and never the loop's own executor.
OFFLOAD_THREADS = 8


class Offload:
    """Runs a networked store's blocking calls for the async faces in worker threads of its own
    (see the module docstring). The pool is made on first use."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pool: Any = None
        self._lock = threading.Lock()

    def _executor(self) -> Any:
        pool = self._pool
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            with self._lock:
                pool = self._pool
                if pool is None:
                    pool = self._pool = ThreadPoolExecutor(OFFLOAD_THREADS, thread_name_prefix=f"actioncache-{self.name}")
        return pool

    def submit(self, fn: Callable[..., T], *args: Any) -> Any:
        """``fn(*args)`` in a worker thread, in a copy of the caller's context (policy blocks are
        context variables): an asyncio future."""
        import asyncio
        import contextvars

        context = contextvars.copy_context()
        return asyncio.wrap_future(self._executor().submit(context.run, fn, *args))

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        result: T = await self.submit(fn, *args)
        return result

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)


# The built-in stores that work in-process (their module's name): called inline from async code.
_INLINE_MODULES = frozenset({"actioncache.stores.memory", "actioncache.stores.sqlite", "actioncache.stores.duckdb"})


def offload_for(store: Any) -> Offload | None:
    """The :class:`Offload` for ``store``'s calls from async code; None for a store that works
    in-process (the built-in memory, SQLite and DuckDB stores, or a store whose class says
    ``inline_io = True``). A store that does not say is treated as networked."""
    inline = getattr(store, "inline_io", None)
    if inline is True or (inline is None and type(store).__module__ in _INLINE_MODULES):
        return None
    return Offload("store")


def _step(steps: Generator[str, Any, Outcome], how: str, value: Any) -> tuple[bool, Any]:
    """One step of a miss path, in a worker thread: ``(True, outcome)`` when it ended, else
    ``(False, request)`` (StopIteration cannot cross a future)."""
    try:
        if how == "next":
            return False, next(steps)
        if how == "throw":
            return False, steps.throw(value)
        return False, steps.send(value)
    except StopIteration as stop:
        return True, stop.value


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
                 run: Callable[[], Awaitable[Any]], offload: Offload | None = None) -> Outcome:
    """:func:`drive` for the async faces: ``lease`` (:meth:`Flow.atake_lease`) and ``run`` are awaited;
    with ``offload``, the steps themselves (the store's recheck, write and release) run in its worker
    threads, one at a time, so a hung store never holds the loop."""
    if offload is not None:
        return await _adrive_offloaded(steps, lease, run, offload)
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


async def _adrive_offloaded(steps: Generator[str, Any, Outcome], lease: Callable[[], Awaitable[Any]],
                            run: Callable[[], Awaitable[Any]], offload: Offload) -> Outcome:
    import asyncio

    try:
        done, value = await offload(_step, steps, "next", None)
        while not done:
            if value is LEASE:
                done, value = await offload(_step, steps, "send", await lease())
                continue
            try:
                reply = await run()
            except BaseException as exc:  # noqa: BLE001 - handed to the steps, which release and re-raise
                done, value = await offload(_step, steps, "throw", exc)
                continue
            done, value = await offload(_step, steps, "send", reply)
        outcome: Outcome = value
        return outcome
    finally:
        # Left early (cancelled, or a step raised): the steps' finally (release the lease) runs in a
        # worker thread too, and runs to its end even if this task is cancelled again meanwhile.
        # A step still running (this task was cancelled while awaiting it) finishes first.
        await asyncio.shield(offload.submit(_close_when_idle, steps))


def _close_when_idle(steps: Generator[str, Any, Outcome]) -> None:
    for _ in range(2000):  # a step still running in another worker thread: wait for it (bounded by its timeouts)
        try:
            steps.close()
            return
        except ValueError:  # "generator already executing"
            time.sleep(0.005)


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
