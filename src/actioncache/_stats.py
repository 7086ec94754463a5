"""The counters of a store: buffered in memory, flushed to the store's shared counters now and then.

One :class:`Stats` per store per process (:func:`stats_for`): every ``Cache`` over the same store
(the same URL; for a store object without a shared location, the same object) counts into it, so
each of them reports the same in-process counts, flushed or not, and a ``Cache`` dropped without
``close()`` loses nothing (``Cache`` flushes when it is garbage-collected and at exit).

A hit is a read: counting it must not write. Hits are tallied per thread and per action without a
lock (the hot path of every hit: each thread only ever adds to its own tally) and folded into the
named counters when the stats are flushed or read (the fold takes what each tally gained since the
last fold, so no hit is lost or counted twice while its thread keeps counting). Other
counts (misses, stores, errors, ...) go straight into the pending buffer. ``flush`` writes the
buffer with one ``add_counters`` call; on failure it keeps the buffer for the next try, so totals
add up across processes without a write per hit.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Hashable, cast

from .stores.base import CacheStore, redact_secrets

if TYPE_CHECKING:
    from .types import StatsReport

__all__ = ["STATS_PREFIX", "Stats", "counter_name", "describe", "finish_counts", "saved_ms", "stats_for",
           "store_identity"]

STATS_PREFIX = "stats:"
# A recorded duration past this (about 31 years) is garbled or planted: it saves no time.
_MAX_DURATION_MS = 1e12
_LIVE: weakref.WeakSet[Stats] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for stats in list(_LIVE):
        stats.after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def saved_ms(duration_ms: Any) -> float:
    """The time a hit saves, from an entry's recorded duration: 0 for anything but a plausible
    number of milliseconds (NaN, negative, absurd or not a number: planted or garbled)."""
    if type(duration_ms) is not float and (not isinstance(duration_ms, (int, float)) or isinstance(duration_ms, bool)):
        return 0.0
    if not 0.0 <= duration_ms < _MAX_DURATION_MS:
        return 0.0
    return duration_ms


class Stats:
    """Counters of one cache: ``count`` and ``record_hit`` buffer, ``flush`` writes, ``report`` reads."""

    def __init__(self, clock: Callable[[], float], flush_s: float) -> None:
        self.clock = clock
        self._flush_s = flush_s
        self.lock = threading.Lock()
        # Held from taking the pending counts out to their write, and by a report from its flush to its
        # read: a report read while another thread wrote what it took out counted those counts nowhere.
        self.writing = threading.RLock()
        self.pending: dict[str | tuple[str, str], float] = {}
        self.local = threading.local()  # .tally: this thread's {action: [hits, saved_ms]}
        # One record per thread that counted a hit: [thread, its tally, what was folded of it].
        self.tallies: list[tuple[threading.Thread, dict[str, list[Any]], dict[str, tuple[int, float]]]] = []
        self.session: dict[str, float] = {}
        self.last_flush = clock()
        self.flush_due = self.last_flush + flush_s  # a hit path compares its clock with this alone
        self.last_store: Callable[[], CacheStore | None] | None = None
        _LIVE.add(self)

    @property
    def flush_s(self) -> float:
        return self._flush_s

    @flush_s.setter
    def flush_s(self, seconds: float) -> None:
        self._flush_s = seconds
        self.flush_due = self.last_flush + seconds

    def remember(self, store: CacheStore) -> None:
        """The store these counters are written to, weakly (``flush_every_store`` at exit)."""
        try:
            self.last_store = weakref.ref(store)
        except TypeError:
            self.last_store = None

    def after_fork(self) -> None:
        """In a forked child: what the parent had counted but not flushed is the parent's to write,
        so the child starts from nothing (else a fork pool writes the parent's hits once per child)."""
        self.lock = threading.Lock()  # another thread may have held it at the fork
        self.pending = {}
        self.session = {}
        for _, tally, folded in self.tallies:
            for action, counts in list(tally.items()):
                folded[action] = (counts[0], counts[1])

    def count(self, action: str | None, **deltas: float) -> None:
        with self.lock:
            pending, session = self.pending, self.session
            for name, delta in deltas.items():
                pending[name] = pending.get(name, 0) + delta
                session[name] = session.get(name, 0) + delta
                if action is not None:
                    scoped = (action, name)
                    pending[scoped] = pending.get(scoped, 0) + delta

    def record_hit(self, action: str, duration_ms: Any, now: float | None = None) -> bool:
        """Tally one hit; True when a flush is due (the caller flushes: it knows the store).
        ``now``: this stats clock's time when the caller has just read it."""
        try:
            counts = self.local.tally[action]
        except (AttributeError, KeyError):
            counts = self.counts_for(action)
        counts[0] += 1
        counts[1] += saved_ms(duration_ms)
        return (self.clock() if now is None else now) - self.last_flush >= self.flush_s

    def counts_for(self, action: str) -> list[Any]:
        """This thread's [hits, saved_ms] of ``action``, made on its first hit. A hit path may add
        to them directly (``Flow.serve`` does, with a duration passed through :func:`saved_ms`):
        only this thread ever writes them."""
        try:
            tally = self.local.tally
        except AttributeError:
            tally = self._thread_tally()
        counts: list[Any] | None = tally.get(action)
        if counts is None:
            counts = tally[action] = [0, 0.0]
        return counts

    def _thread_tally(self) -> dict[str, list[Any]]:
        tally: dict[str, list[Any]] = {}
        with self.lock:
            self.tallies.append((threading.current_thread(), tally, {}))
        self.local.tally = tally
        return tally

    def due(self) -> bool:
        return self.clock() - self.last_flush >= self.flush_s

    def _fold_hits(self) -> None:
        """Add what every thread's hit tally gained since the last fold to the pending and session
        counters (call with the lock held). A tally's owner may be counting meanwhile: the fold only
        reads it, and remembers what it took. A finished thread's tally is folded one last time and
        dropped."""
        pending, session = self.pending, self.session
        current = threading.current_thread()
        kept = []
        for record in self.tallies:
            thread, tally, folded = record
            # Read before the tally: a finished thread adds nothing after. The thread folding is
            # alive whatever is_alive() says (at interpreter exit the main thread reports False
            # while exit handlers still count hits on it).
            finished = thread is not current and not thread.is_alive()
            for action, counts in list(tally.items()):
                hits, saved_ms = counts[0], counts[1]
                before_hits, before_ms = folded.get(action, (0, 0.0))
                if hits == before_hits and saved_ms == before_ms:
                    continue
                folded[action] = (hits, saved_ms)
                for name, delta in (("hits", hits - before_hits), ("time_saved_ms", saved_ms - before_ms)):
                    pending[name] = pending.get(name, 0) + delta
                    session[name] = session.get(name, 0) + delta
                    pending[(action, name)] = pending.get((action, name), 0) + delta
            if not finished:
                kept.append(record)
        self.tallies = kept

    def flush(self, store: CacheStore) -> str | None:
        """Write buffered counters to ``store``; on failure keep them for the next try."""
        with self.writing:
            return self._flush(store)

    def _flush(self, store: CacheStore) -> str | None:
        with self.lock:
            self._fold_hits()
            # A zero adds nothing: writing it would still create the counters' key in a store
            # nothing else was written to (a mistyped --store would gain a key).
            pending, self.pending = {k: v for k, v in self.pending.items() if v}, {}
            self.last_flush = self.clock()
            self.flush_due = self.last_flush + self.flush_s
        self.remember(store)
        if not pending:
            return None
        try:
            store.add_counters({counter_name(k): v for k, v in pending.items()})
            return None
        except Exception as exc:  # noqa: BLE001 - counting must never fail the caller
            with self.lock:
                for name, delta in pending.items():
                    self.pending[name] = self.pending.get(name, 0) + delta
            return describe(exc)

    def session_counts(self) -> dict[str, float]:
        with self.lock:
            self._fold_hits()
            session = dict(self.session)
        finish_counts(session)
        return session

    def report(self, store: CacheStore, url: str) -> StatsReport:
        """Totals across every process that used ``store``, plus this process's ``session`` counts."""
        out: dict[str, Any] = {"success": True, "store": url}
        totals: dict[str, float] = {}
        by_action: dict[str, dict[str, float]] = {}
        with self.writing:
            error = self.flush(store)
            try:
                raw = store.counters(STATS_PREFIX)
                out["entries"] = store.count()
                out["size_bytes"] = store.size_bytes()
            except Exception as exc:  # noqa: BLE001 - a store that fails still gets a stats answer
                raw = {}
                error = error or describe(exc)
        if error:
            out["error"] = error
            raw = {STATS_PREFIX + k: v for k, v in self.session.items()}
        for name, value in raw.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                continue  # a counter another writer garbled is not worth failing stats over
            name = name[len(STATS_PREFIX):]
            if name.startswith("action:"):
                action, _, counter = name[len("action:"):].rpartition(":")
                by_action.setdefault(action, {})[counter] = value
            else:
                totals[name] = value
        for bucket in (totals, *by_action.values()):
            finish_counts(bucket)
        out.update(totals)
        out["by_action"] = by_action
        out["session"] = self.session_counts()
        health = getattr(store, "health", None)  # a networked store's circuit breaker (stores/breaker.py)
        if callable(health):
            try:
                out["store_health"] = health()
            except Exception as exc:  # noqa: BLE001 - stats never fail over a store's self-report
                out["store_health"] = {"error": describe(exc)}
        return cast("StatsReport", out)  # its counters are the store's: names known, values read


_BY_STORE: dict[Hashable, Stats] = {}
# Re-entrant: a store collected while this thread holds the lock (the garbage collector may run on
# any allocation inside it) calls _forget, which takes the lock again on the same thread.
_BY_STORE_LOCK = threading.RLock()
_BY_STORE_EXIT: list[bool] = []


def store_identity(store: CacheStore) -> tuple[str, Any]:
    """What makes two store objects one store for counting: the same URL, for stores whose URL names
    a shared location (a file, a server); the object itself for the rest (an unnamed ``memory://``,
    which sets ``shared_by_url = False``, or a store without a URL)."""
    url = getattr(store, "url", None)
    if isinstance(url, str) and url and getattr(store, "shared_by_url", True):
        return ("url", url)
    return ("object", id(store))


def stats_for(store: CacheStore, clock: Callable[[], float] | None = None, flush_s: float = 5.0) -> Stats:
    """The process's one :class:`Stats` of ``store``, made on first use with ``clock`` and ``flush_s``."""
    identity = store_identity(store)
    with _BY_STORE_LOCK:
        stats = _BY_STORE.get(identity)
        if stats is None:
            stats = _BY_STORE[identity] = Stats(clock or _wall_clock, flush_s)
            stats.remember(store)
            if not _BY_STORE_EXIT:
                import atexit

                atexit.register(flush_every_store)
                _BY_STORE_EXIT.append(True)
            if identity[0] == "object":  # its id may be reused once the store is gone
                try:
                    weakref.finalize(store, _forget, identity)
                except TypeError:  # a store that takes no weak references keeps its counters for the process
                    pass
    return stats


def flush_every_store() -> None:
    """At exit: write what any store's counters still hold (a face's counts with no Cache open on
    its store; every Cache also flushes its own)."""
    pending = [stats for stats in _BY_STORE.copy().values() if stats.pending or stats.tallies]
    for stats in pending:
        store = stats.last_store() if stats.last_store is not None else None
        if store is not None:
            stats.flush(store)


def _forget(identity: Hashable) -> None:
    # No lock: a finalizer may run inside stats_for itself (a collection triggered while it holds
    # the lock), and one dict.pop is atomic.
    _BY_STORE.pop(identity, None)


def _wall_clock() -> float:
    import time

    return time.time()


def counter_name(name: str | tuple[str, str]) -> str:
    if isinstance(name, tuple):
        return f"{STATS_PREFIX}action:{name[0]}:{name[1]}"
    return STATS_PREFIX + name


def finish_counts(bucket: dict[str, float]) -> None:
    # Counters come back from stores as floats (some keep every counter as a double); every one
    # but the time saved is a count of events, so it is reported as an integer.
    for name in ("hits", "misses", "stores", "errors"):
        bucket.setdefault(name, 0)
    for name, value in bucket.items():
        if name != "time_saved_ms":
            bucket[name] = int(value)
    bucket["time_saved_s"] = round(bucket.pop("time_saved_ms", 0.0) / 1000.0, 3)
    looked = bucket["hits"] + bucket["misses"]
    bucket["hit_rate"] = round(bucket["hits"] / looked, 4) if looked else 0.0


def describe(exc: BaseException) -> str:
    """An exception as the text a response or stats may show: never a password or token."""
    return redact_secrets(str(exc))
