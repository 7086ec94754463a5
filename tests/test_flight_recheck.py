"""A miss that reaches the key's flight just after another flight stored the value rechecks the
store instead of running the function again (threads and tasks). A real memory store, wrapped so
that the reader's first lookup is answered before the other flight stores but returns after it
left: the window that a loaded machine opens by chance, held open on purpose."""

from __future__ import annotations

import asyncio
import threading

from actioncache import Cache
from actioncache.stores.memory import MemoryStore


class HeldReads(MemoryStore):
    """Reads taken while ``hold`` is set return only after ``release`` is set, with what the store
    held when they were taken."""

    def __init__(self) -> None:
        super().__init__("memory://")
        self.hold = threading.Event()
        self.release = threading.Event()
        self.held = threading.Event()

    def get(self, key):
        found = super().get(key)
        if self.hold.is_set() and key.endswith(self.watch):
            self.hold.clear()
            self.held.set()
            self.release.wait(10)
        return found


def test_a_thread_that_missed_before_a_flight_landed_does_not_run_again():
    store = HeldReads()
    cache = Cache(store)
    calls = []
    gate = threading.Event()

    @cache.cached
    def slow(x):
        calls.append(x)
        gate.wait(10)
        return len(calls)

    store.watch = slow.cache_key(3)
    refresher = threading.Thread(target=slow.refresh, args=(3,))
    refresher.start()
    while not calls:
        pass
    store.hold.set()
    out = []
    reader = threading.Thread(target=lambda: out.append(slow(3)))
    reader.start()
    assert store.held.wait(10)  # the reader's lookup missed: nothing stored yet
    gate.set()
    refresher.join()  # the refresh stored its value and left the flight
    store.release.set()
    reader.join()
    assert out == [1] and calls == [3]


def test_a_task_that_missed_before_a_flight_landed_does_not_run_again():
    store = HeldReads()
    cache = Cache(store)
    calls = []

    @cache.cached
    async def slow(x):
        calls.append(x)
        await asyncio.sleep(0.05)
        return len(calls)

    store.watch = slow.cache_key(3)

    async def main():
        loop = asyncio.get_running_loop()
        store.hold.set()
        # another event loop (another thread) misses first; its lookup is held open
        other = loop.run_in_executor(None, lambda: asyncio.run(slow(3)))
        await loop.run_in_executor(None, store.held.wait, 10)
        result = await slow(3)  # this loop's flight runs, stores and leaves
        store.release.set()
        return result, await other

    assert asyncio.run(main()) == (1, 1) and calls == [3]
