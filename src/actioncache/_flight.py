"""Single flight: one computation per key at a time, among threads, tasks and processes.

* :class:`ThreadFlights` serializes the threads of one process on a key (a context manager that
  says whether another thread was already computing it: only then can the entry have appeared
  since our lookup, so only then is a second lookup worth its read).
* :class:`TaskFlights` does the same for the tasks of one event loop.
* :func:`take_lease` / :func:`release_lease` use the store's lease for processes: take it, or
  wait (bounded backoff) until the holder's result appears or the lease times out;
  :func:`atake_lease` waits the same way from async code, sleeping on the event loop between tries.
* :class:`Heartbeat` renews a held lease while its holder computes, so a computation longer than
  the lease is never started a second time; a holder that dies stops renewing, and its lease
  lapses within ``lock_timeout_s``.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Generator, TypeVar

from ._log import log
from .stores.base import CacheStore

__all__ = ["LEASE_PREFIX", "Heartbeat", "TaskFlights", "ThreadFlights", "atake_lease", "release_lease", "take_lease"]


LEASE_PREFIX = "lease:"
# A notified waiter still wakes at least this often: a release it missed (the holder died, or let go
# between our check and our listen) costs at most this much.
_NOTIFIED_WAIT_S = 1.0
# How many lease periods a waiter waits for a holder that keeps its lease, before computing itself.
_MAX_WAIT_LEASES = 10
# A miss that reaches a key's flight within this long after another flight of the key ended
# rechecks the store first (see Landings); a few hundred keys' end times are kept.
_LANDING_WINDOW_S = 10.0
_LANDINGS_KEPT = 512
T = TypeVar("T")


class _Flight:
    """One ``with flights(key) as contended`` (a class, not a generator: it sits on every miss)."""

    __slots__ = ("flights", "key", "slot")

    def __init__(self, flights: ThreadFlights, key: str) -> None:
        self.flights, self.key = flights, key

    def __enter__(self) -> bool:
        flights = self.flights
        with flights.lock:
            slot = flights.slots.get(self.key)
            if slot is None:
                slot = flights.slots[self.key] = [threading.Lock(), 0]
            slot[1] += 1
            contended = slot[1] > 1 or flights.landings.lately(self.key)
        self.slot = slot
        slot[0].acquire()
        return contended

    def __exit__(self, *exc: Any) -> None:
        slot, flights = self.slot, self.flights
        slot[0].release()
        with flights.lock:
            slot[1] -= 1
            if slot[1] == 0:
                flights.slots.pop(self.key, None)
            flights.landings.landed(self.key)


class Landings:
    """When each key's last flight ended, for a little while.

    A caller whose lookup missed can reach the flight just after another flight of the same key
    stored and left: it finds the slot free, yet the value is there now. Such a caller rechecks
    the store (one read) instead of running the function a second time. Only misses pay for it.
    Its own lock: the task flights of event loops in several threads share one table.
    """

    def __init__(self) -> None:
        self.ended: dict[str, float] = {}
        self.lock = threading.Lock()

    def landed(self, key: str) -> None:
        now = time.monotonic()
        with self.lock:
            ended = self.ended
            if len(ended) >= _LANDINGS_KEPT:
                cutoff = now - _LANDING_WINDOW_S
                for old in [k for k, t in ended.items() if t < cutoff] or list(ended)[: _LANDINGS_KEPT // 2]:
                    del ended[old]
            ended[key] = now

    def lately(self, key: str) -> bool:
        at = self.ended.get(key)
        return at is not None and time.monotonic() - at < _LANDING_WINDOW_S


class ThreadFlights:
    def __init__(self) -> None:
        self.slots: dict[str, list[Any]] = {}
        self.lock = threading.Lock()
        self.landings = Landings()

    def __call__(self, key: str) -> _Flight:
        return _Flight(self, key)


class _TaskFlight:
    __slots__ = ("flights", "key", "slot")

    def __init__(self, flights: TaskFlights, key: str) -> None:
        self.flights, self.key = flights, key

    async def __aenter__(self) -> bool:
        import asyncio  # lazy: asyncio costs tens of ms at start-up, and `actioncache exec` never needs it

        slots = self.flights.slots
        loop_key = (id(asyncio.get_running_loop()), self.key)
        slot = slots.get(loop_key)
        if slot is None:
            slot = slots[loop_key] = [asyncio.Lock(), 0]
        slot[1] += 1
        contended = slot[1] > 1 or self.flights.landings.lately(self.key)  # any loop's flight counts
        self.slot = slot
        try:
            await slot[0].acquire()
        except BaseException:  # cancelled while waiting: give the slot back
            self._leave(loop_key)
            raise
        return contended

    async def __aexit__(self, *exc: Any) -> None:
        import asyncio

        self.slot[0].release()
        self._leave((id(asyncio.get_running_loop()), self.key))

    def _leave(self, loop_key: tuple[int, str]) -> None:
        self.slot[1] -= 1
        if self.slot[1] == 0:
            self.flights.slots.pop(loop_key, None)
        self.flights.landings.landed(self.key)


class TaskFlights:
    """Like :class:`ThreadFlights`, for the tasks of one event loop (slots are per loop)."""

    def __init__(self) -> None:
        self.slots: dict[tuple[int, str], list[Any]] = {}
        self.landings = Landings()

    def __call__(self, key: str) -> _TaskFlight:
        return _TaskFlight(self, key)


def _lease_steps(store: CacheStore, key: str, timeout_s: float,
                 lookup: Callable[[], T | None]) -> Generator[tuple[float, float], None, tuple[str | None, T | None]]:
    """The lease wait, written once for :func:`take_lease` and :func:`atake_lease`: each step tries
    the lease and looks for the holder's result (short store calls), then yields ``(backoff,
    remaining)`` for its driver to wait; it returns ``(token, found)`` (see :func:`take_lease`)."""
    deadline = time.monotonic() + timeout_s * _MAX_WAIT_LEASES
    delay = 0.01
    while True:
        try:
            token = store.acquire_lease(LEASE_PREFIX + key, timeout_s)
        except Exception as exc:  # noqa: BLE001 - no lease support or store down: compute
            log.debug("lease on %s failed: %s", key, exc)
            return None, None
        if token is not None:
            return token, lookup()  # the holder may have finished just before
        found = lookup()
        if found is not None:
            return None, found
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, None
        yield delay, remaining
        delay = min(delay * 2, 0.25)


def take_lease(store: CacheStore, key: str, timeout_s: float,
               lookup: Callable[[], T | None]) -> tuple[str | None, T | None]:
    """Cross-process single flight: ``(token, None)`` when we hold the lease, ``(None, found)`` when
    the holder's result appeared while we waited, ``(None, None)`` when the store has no leases or
    the wait timed out (then compute anyway: a lease is an optimisation, never a reason to fail).

    A waiter waits as long as someone holds the lease: a live holder renews it (:class:`Heartbeat`),
    so a computation longer than ``timeout_s`` is not started twice, and a dead holder's lease
    lapses within ``timeout_s``. The wait is still bounded (``_MAX_WAIT_LEASES`` × ``timeout_s``), so
    a lease that never lapses (planted by another writer, or a hung holder) cannot block forever.
    """
    steps = _lease_steps(store, key, timeout_s, lookup)
    wait = getattr(store, "wait_lease", None)
    try:
        delay, remaining = next(steps)
        while True:
            if wait is not None:  # the store tells waiters when the lease is let go (Redis, PostgreSQL)
                try:
                    wait(LEASE_PREFIX + key, min(remaining, _NOTIFIED_WAIT_S))
                except Exception as exc:  # noqa: BLE001 - fall back to polling
                    log.debug("waiting on the lease of %s failed: %s", key, exc)
                    wait = None
                    time.sleep(min(delay, remaining))
            else:
                time.sleep(min(delay, remaining))
            delay, remaining = next(steps)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


class _Poll:
    """The steps of one async lease wait, each run in a worker thread. A token the last step took is
    never lost to a waiter cancelled meanwhile: whichever of the step and :meth:`abandon` comes
    second releases it."""

    def __init__(self, steps: Generator[tuple[float, float], None, tuple[Any, Any]], store: CacheStore,
                 key: str) -> None:
        self.steps, self.store, self.key = steps, store, key
        self.lock = threading.Lock()
        self.abandoned = False
        self.unclaimed: str | None = None

    def step(self) -> tuple[bool, Any]:
        try:
            return False, next(self.steps)
        except StopIteration as stop:
            result = stop.value
        with self.lock:
            if not self.abandoned:
                self.unclaimed = result[0]
                return True, result
        release_lease(self.store, self.key, result[0])
        return True, (None, None)

    def claim(self) -> None:
        with self.lock:
            self.unclaimed = None

    def abandon(self) -> None:
        with self.lock:
            self.abandoned = True
            token, self.unclaimed = self.unclaimed, None
        release_lease(self.store, self.key, token)


async def atake_lease(store: CacheStore, key: str, timeout_s: float,
                      lookup: Callable[[], T | None]) -> tuple[str | None, T | None]:
    """:func:`take_lease` for async callers. Each try (the lease, then the holder's result: short
    store calls) runs in a worker thread; between tries the task sleeps on its loop (10 ms doubling
    to 250 ms), so a wait never parks one of the loop's executor threads. The store's notification
    (``wait_lease``) blocks a thread, so async waiters poll instead."""
    import asyncio

    poll = _Poll(_lease_steps(store, key, timeout_s, lookup), store, key)
    try:
        while True:
            done, value = await asyncio.to_thread(poll.step)
            if done:
                poll.claim()
                return value  # type: ignore[no-any-return]
            delay, remaining = value
            await asyncio.sleep(min(delay, remaining))
    except BaseException:  # cancelled: a lease taken on the way is let go
        poll.abandon()
        raise


def release_lease(store: CacheStore, key: str, token: str | None) -> None:
    if token is None:
        return
    try:
        store.release_lease(LEASE_PREFIX + key, token)
    except Exception as exc:  # noqa: BLE001 - the lease expires on its own
        log.debug("releasing lease on %s failed: %s", key, exc)


class Heartbeat:
    """Renew the lease ``token`` holds on ``key`` every third of ``ttl_s`` until :meth:`stop`.

    A thread, not a task: the holder's function may block its thread or its event loop, and the
    lease must be renewed all the same. Stores without ``renew_lease`` get no thread at all.
    ``alive`` (optional) is asked before each renewal: a holder that can no longer finish (a task
    whose event loop was closed) is not kept alive; ``on_dead`` is called instead, once.
    """

    __slots__ = ("_stop", "_thread")

    def __init__(self, store: CacheStore, key: str, token: str | None, ttl_s: float,
                 alive: Callable[[], bool] | None = None, on_dead: Callable[[], None] | None = None) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        renew = getattr(store, "renew_lease", None)
        if token is None or renew is None or ttl_s <= 0:
            return
        name, interval = LEASE_PREFIX + key, max(ttl_s / 3, 0.01)

        def beat() -> None:
            while not self._stop.wait(interval):
                if alive is not None and not alive():
                    if on_dead is not None:
                        on_dead()
                    return
                try:
                    if not renew(name, token, ttl_s):
                        log.warning("lease on %s was lost while computing (another caller may start it too)", key)
                        return
                except Exception as exc:  # noqa: BLE001 - store unreachable: try again next beat
                    log.debug("renewing lease on %s failed: %s", key, exc)

        self._thread = threading.Thread(target=beat, name=f"actioncache-lease:{key[:40]}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
