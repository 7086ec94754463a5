"""Stale-while-revalidate: serving a value past its TTL while one caller refreshes it.

A key written with ``stale_ttl_seconds`` stays servable that long after its TTL. A caller that
finds it stale is answered with the stale value (:meth:`Stale.within_window`) while one refresh
runs in the background, once across processes (:meth:`Stale.start`: the key's store lease, one
try); ``serve_stale_on_error`` answers a failed run with the stale value instead
(:meth:`Stale.on_failure`). At interpreter exit the refreshes still running get a bounded time to
finish (:meth:`Stale.settle`).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ._drivers import Run
from ._flight import LEASE_PREFIX, Heartbeat, release_lease
from ._log import log
from ._metadata import fresh_until
from ._options import StoreOptions
from ._outcomes import Lookup, is_failure

if TYPE_CHECKING:
    from ._flow import Flow

__all__ = ["REFRESH_EXIT_WAIT_S", "Refresh", "Running", "Stale", "spawn_task", "spawn_task_offloaded", "spawn_thread"]


# At interpreter exit, background refreshes still running get this long in all (across every cache
# of the process) to finish and store; the rest are ended and their leases released.
REFRESH_EXIT_WAIT_S = 10.0

Spawn = Callable[[Callable[[], Any], Callable[[Run | None], None]], "Running"]


class Stale:
    """The stale-while-revalidate steps of one :class:`~actioncache._flow.Flow`."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.refreshing: dict[str, Refresh] = {}  # keys this process is refreshing in the background
        self.lock = threading.Lock()

    def on_failure(self, found: Lookup | None, ok: bool, value: Any) -> tuple[bool, Any, str]:
        """The one rule of ``serve_stale_on_error`` (``wrap``, ``awrap`` and ``@cached`` alike): a run
        that failed (raised, ``ok`` False with its text as ``value``, or returned ``success: false``)
        is answered with the expired value the first lookup found, if it still decodes.
        Returns ``(served, stale_value, why_the_run_failed)``."""
        if ok and not is_failure(value):
            return False, None, ""
        if found is None or found.entry is None:
            return False, None, ""
        why = str(value) if not ok else str(value.get("error") or "success: false")
        if found.stale:
            return True, found.value, why
        try:
            return True, self.flow.codec.decode(found.entry.value), why
        except Exception:  # noqa: BLE001 - nothing stale to serve: the failure stands
            return False, None, ""

    def within_window(self, found: Lookup | None, stale_ttl_s: float) -> bool:
        """Whether a stale lookup may be served to a caller whose own window is ``stale_ttl_s``:
        the entry's writer may have allowed a longer one, but a caller never gets a value older
        than it asked to accept."""
        if found is None or not found.stale or stale_ttl_s <= 0 or found.entry is None:
            return False
        fresh = fresh_until(found.entry)
        return fresh is not None and self.flow.now() < fresh + stale_ttl_s

    def start(self, key: str, action: str, options: StoreOptions, run: Callable[[], Any], lease_s: float,
              spawn: Spawn) -> bool:
        """Refresh a stale entry in the background, once across processes: only the caller that
        takes the key's store lease (one try, no waiting) refreshes; the others keep serving the
        stale value. ``run`` computes (sync, or a coroutine for ``spawn`` to schedule); returns
        whether this caller started the refresh.

        A caller whose stale read was overtaken (another caller refreshed the key and released its
        lease before this one took it) finds the fresh entry under the lease and starts nothing.

        However the refresh ends (done, failed, raised a ``BaseException``, cancelled with its event
        loop, or cut short at interpreter exit) its heartbeat stops, its lease is released and the key
        is no longer marked refreshing here, so the next caller (in any process) may refresh it.
        """
        with self.lock:
            running = self.refreshing.get(key)
            if running is not None and running.alive():
                return False
        if running is not None:  # its task can never finish (its event loop is gone): end it here
            running.end(None)
        with self.lock:
            if key in self.refreshing:
                return False
            refresh = self.refreshing[key] = Refresh(self, key, action, options)
        store = self.flow.store
        try:
            token = store.acquire_lease(LEASE_PREFIX + key, lease_s)
        except Exception as exc:  # noqa: BLE001 - no leases here: this process refreshes alone
            log.debug("lease for refreshing %s failed: %s", key, exc)
            token = ""
        if token is None:  # another process is refreshing it
            refresh.end(None)
            return False
        refresh.token = token or None
        if token and self._refreshed_meanwhile(key):
            # Another caller's refresh stored the new value and let the lease go between this
            # caller's stale read and its lease: the lease is taken again only to find the work done.
            refresh.end(None)
            return False
        refresh.heartbeat = Heartbeat(store, key, refresh.token, lease_s, alive=refresh.alive,
                                      on_dead=lambda: refresh.end(None))
        refresh.running = spawn(run, refresh.end)
        return True

    def _refreshed_meanwhile(self, key: str) -> bool:
        """The entry is fresh again (read under the lease just taken): nothing is left to refresh."""
        try:
            return self.flow.read(key, None).hit
        except Exception as exc:  # noqa: BLE001 - unknown: refresh, as without the check
            log.debug("re-reading %s under its lease failed: %s", key, exc)
            return False

    def settle(self, deadline: float) -> None:
        """At interpreter exit: give the background refreshes still running until ``deadline``
        (``time.monotonic()``) to finish and store, then end the rest, releasing their leases so the
        next process refreshes instead of waiting for them to lapse."""
        with self.lock:
            pending = list(self.refreshing.values())
        for refresh in pending:
            if refresh.running is not None and refresh.running.progressing():
                refresh.settled.wait(max(0.0, deadline - time.monotonic()))
            refresh.end(None)


class Running:
    """A background refresh as its runner sees it (a thread, or a task of an event loop)."""

    def alive(self) -> bool:
        """Whether it can still finish (a task whose loop was closed cannot)."""
        return True

    def progressing(self) -> bool:
        """Whether it is running on its own, so waiting for it can help (at interpreter exit)."""
        return True


class Refresh:
    """One background refresh of one key: its lease token, heartbeat and runner, and the one
    :meth:`end` every way of finishing goes through (it runs once, whoever calls it first)."""

    def __init__(self, stale: Stale, key: str, action: str, options: StoreOptions) -> None:
        self.stale, self.key, self.action, self.options = stale, key, action, options
        self.token: str | None = None
        self.heartbeat: Heartbeat | None = None
        self.running: Running | None = None
        self.ended = threading.Event()  # end() has begun: no second ending
        self.settled = threading.Event()  # end() is over: stored (or not) and the key let go
        self._lock = threading.Lock()

    def alive(self) -> bool:
        return not self.ended.is_set() and (self.running is None or self.running.alive())

    def end(self, result: Run | None) -> None:
        """Store ``result`` (a finished run) and let the key go; ``None``: the run never finished."""
        with self._lock:
            if self.ended.is_set():
                return
            self.ended.set()
        stale, key = self.stale, self.key
        flow = stale.flow
        if self.heartbeat is not None:
            self.heartbeat.stop()
        try:
            if result is not None:
                flow.count(self.action, refreshes=1)
                flow.save(key, self.action, *result, self.options, self.token)
        finally:
            # Unmarked here before the lease goes: a caller that finds the lease free must find the
            # key free in this process too, or its refresh is refused by a mark about to vanish.
            with stale.lock:
                if stale.refreshing.get(key) is self:
                    del stale.refreshing[key]
            release_lease(flow.store, key, self.token)
            self.settled.set()


class _Thread(Running):
    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread

    def alive(self) -> bool:
        return self.thread.is_alive()

    progressing = alive


def spawn_thread(run: Callable[[], Run], finish: Callable[[Run | None], None]) -> Running:
    """Run a background refresh in a daemon thread (the sync faces); ``finish`` gets the result,
    or None when the function raised a ``BaseException`` (``SystemExit``, ``KeyboardInterrupt``)."""
    def body() -> None:
        result = None
        try:
            result = run()
        finally:
            finish(result)

    thread = threading.Thread(target=body, name="actioncache-refresh", daemon=True)
    thread.start()
    return _Thread(thread)


_background_tasks: set[Any] = set()


class _Task(Running):
    def __init__(self, task: Any, loop: Any) -> None:
        self.task, self.loop = task, loop

    def alive(self) -> bool:
        if self.task.done():
            return False
        if self.loop.is_closed():  # closed without cancelling it: it never runs again
            _background_tasks.discard(self.task)
            return False
        return True

    def progressing(self) -> bool:
        return self.alive() and bool(self.loop.is_running())


def spawn_task(run: Callable[[], Awaitable[Run]], finish: Callable[[Run | None], None]) -> Running:
    """Run a background refresh as a task of the running loop (the async faces); the task is held
    here until done, since the loop keeps only a weak reference to it. A task cancelled (its loop
    ended: ``asyncio.run`` per request) or closed unfinished ends its refresh with None."""
    import asyncio

    async def body() -> None:
        result = None
        try:
            result = await run()
        finally:
            finish(result)

    loop = asyncio.get_running_loop()
    task = loop.create_task(body())
    _background_tasks.add(task)
    task.add_done_callback(_background_tasks.discard)
    return _Task(task, loop)


class _LoopTask(Running):
    """A refresh scheduled on an event loop from a worker thread (:func:`spawn_task_offloaded`)."""

    def __init__(self, future: Any, loop: Any) -> None:
        self.future, self.loop = future, loop

    def alive(self) -> bool:
        return not self.future.done() and not self.loop.is_closed()

    def progressing(self) -> bool:
        return self.alive() and bool(self.loop.is_running())


def spawn_task_offloaded(loop: Any, offload: Callable[..., Awaitable[Any]]) -> Spawn:
    """:func:`spawn_task` for the async faces over a networked store, whose refresh is started in
    a worker thread (``_drivers.Offload``: the lease is taken there): the refresh runs as a task of
    ``loop``, and ``finish`` (which stores the value and releases the lease) runs in a worker
    thread too, so neither end of a refresh calls the store on the loop."""
    import asyncio

    def spawn(run: Callable[[], Awaitable[Run]], finish: Callable[[Run | None], None]) -> Running:
        async def body() -> None:
            result = None
            try:
                result = await run()
            finally:
                await offload(finish, result)

        return _LoopTask(asyncio.run_coroutine_threadsafe(body(), loop), loop)

    return spawn
