"""The miss path, written once: lookup → single flight → recheck → lease → run → store.

``Cache.wrap``, ``Cache.awrap`` and the two ``@cached`` wrappers share everything here and differ
only in how they run the user's function (sync or awaited) and in what they return (a response
dict or the bare value). The miss path is a generator (:meth:`Flow.miss`) that does no I/O of
the user's function itself: it *yields* a request to take the store lease (:data:`LEASE`) or to
run the function (:data:`RUN`), and the sync driver :func:`drive` or the async driver
:func:`adrive` answers it. The thread or task flight is entered by the driver around the whole
generator, so the entry is stored before the flight and the lease are let go.

The hit path stays outside the generator: one store read (:meth:`Flow.lookup`), one decode, one
tally (:meth:`Flow.record_hit`).
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
import warnings
from types import MappingProxyType
from typing import Any, Awaitable, Callable, Generator, Mapping, NamedTuple

from ._flight import LEASE_PREFIX, Heartbeat, TaskFlights, ThreadFlights, atake_lease, release_lease, take_lease
from ._json import ParseMemo
from ._stats import Stats, describe, saved_ms
from ._time import iso_utc
from .codec import MEMO_DECODERS, Codec
from .errors import EntryTooLargeError, UnsupportedEntryError
from .events import CacheEvent, Observer, notify
from .stores.base import FRESH_UNTIL, CacheStore, Entry, entry_problem, redact_url

__all__ = ["FRESH_UNTIL", "LEASE", "REFRESH_EXIT_WAIT_S", "RUN", "CacheWarning", "Flow", "Lookup", "Outcome", "StoreOptions", "adrive",
           "check_lock_timeout", "check_metadata", "drive", "entry_metadata", "fresh_until", "is_failure", "run_async", "run_sync", "spawn_task", "spawn_thread",
           "Refresh", "Running"]

log = logging.getLogger("actioncache")

_OFFSET_REFRESH_S = 300.0
_OFFSET_RETRY_S = 30.0

# At interpreter exit, background refreshes still running get this long in all (across every cache
# of the process) to finish and store; the rest are ended and their leases released.
REFRESH_EXIT_WAIT_S = 10.0

LEASE = "lease"  # the driver takes the store lease and sends back (token, Lookup | None)
RUN = "run"  # the driver runs the user's function and sends back (ok, value, duration_ms)


class CacheWarning(UserWarning):
    """A result was returned but could not be cached (e.g. not JSON-encodable)."""


def is_failure(result: Any) -> bool:
    """A result the action reported as failed (a dict with ``success: false``): never cached."""
    return isinstance(result, dict) and result.get("success") is False


# FRESH_UNTIL (stores.base): metadata of an entry written with a stale window, the time (epoch s) it
# stops being fresh. The entry itself lives on (its expires_at) for stale_ttl_s more, so cleanup and
# server-side expiry (Redis) keep it while it may still be served stale. entry_problem refuses one
# that is not a time: the entry is corrupt, never fresh until its window closes.
DURATION = "_cache_duration_ms"  # how long the run that stored an entry took: a hit saves that
_NEVER = float("inf")
# Remembered verdicts of healthy entries (Flow.judged): entries up to 16 KiB, about 2 MiB in all
# (the entries are held by the store's own memo or dict as well); an item weighs its value, its
# key and this much more for the metadata and the tuple.
_VERDICT_MAX_BYTES = 16 * 1024
_VERDICTS_MAX_BYTES = 2 * 1024 * 1024
_VERDICT_OVERHEAD = 512


class Lookup(NamedTuple):
    """A read: a fresh ``hit``; or a miss, with ``stale`` set (and the decoded value) when the entry
    is past its TTL but inside its stale window."""

    hit: bool
    value: Any = None
    entry: Entry | None = None
    error: str | None = None
    stale: bool = False


_tuple_new = tuple.__new__  # a Lookup built without NamedTuple's Python-level __new__ (the hit path)
_NOTHING = Lookup(False)  # nothing stored under the key


class Outcome(NamedTuple):
    """How a miss path ended: a hit found on the way (another thread, task or process computed
    it), or a fresh run (``ok``, its value, and ``problem``: why it was not stored, if it was not)."""

    hit: bool
    ok: bool
    value: Any
    entry: Entry | None = None
    problem: str | None = None


class StoreOptions(NamedTuple):
    """How a fresh result is stored (``stale_ttl_s``: how long it may be served stale after ``ttl_s``)."""

    ttl_s: float
    cache_type: str
    metadata: Mapping[str, Any] | None
    cleanup_probability: float
    cleanup_limit: int
    stale_ttl_s: float = 0.0


# Results bigger than this (encoded) are returned and not cached: 64 MiB. Cache(max_value_bytes=...)
# raises or lowers it; None lifts it (the store's own limit then applies: Redis 512 MB, SQLite 1 GB).
DEFAULT_MAX_VALUE_BYTES = 64 * 1024 * 1024


class ValueTooLargeError(ValueError):
    """A result over ``max_value_bytes``: returned to the caller, not cached."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the result is {size / 2**20:.1f} MB encoded, over max_value_bytes "
                         f"({limit / 2**20:.1f} MB); raise Cache(max_value_bytes=...) to cache results this big")


def check_max_value_bytes(limit: Any) -> int | None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
        raise ValueError(f"max_value_bytes must be a positive number of bytes or None (no limit), not {limit!r}")
    return limit


class Flow:
    """The steps of a cached call over one store and codec, and the counters they keep."""

    def __init__(self, store: CacheStore, codec: Codec, *, clock: Callable[[], float], rng: random.Random,
                 stats_flush_s: float, max_value_bytes: int | None = DEFAULT_MAX_VALUE_BYTES) -> None:
        self.use_codec(codec)
        self.max_value_bytes = check_max_value_bytes(max_value_bytes)
        self.clock = clock
        self.rng = rng
        self.stats = Stats(clock, stats_flush_s)
        self.threads = ThreadFlights()
        self.tasks = TaskFlights()
        self.refreshing: dict[str, Refresh] = {}  # keys this process is refreshing in the background
        self.refresh_lock = threading.Lock()
        self.observers: list[Observer] = self.stats.observers  # actioncache.events; empty costs one check
        self.count: Callable[..., None] = self.stats.count  # bound once: counting sits on every miss
        self.use_store(store)

    def use_codec(self, codec: Codec) -> None:
        self.codec = codec
        # Verdicts copy a value out of the codec's decode memo instead of calling decode: only
        # where decode is the built-in codecs' own (a subclass may decode to something else).
        memo = getattr(codec, "memo", None)
        memo_decodes = getattr(type(codec), "decode", None) in MEMO_DECODERS and isinstance(memo, ParseMemo)
        self.decoded: Callable[[bytes], Any] | None = memo.get if memo_decodes else None  # type: ignore[union-attr]
        self.forget_verdicts()  # they hold the old codec's decodes

    def forget_verdicts(self) -> None:
        # key -> (entry, copy of its value, saved ms, served until): the verdicts of healthy
        # entries read before, valid while the store hands back that same entry object (see serve).
        self.judged = ParseMemo(_VERDICT_MAX_BYTES, _VERDICTS_MAX_BYTES)

    def use_store(self, store: CacheStore) -> None:
        self.store = store
        self.forget_verdicts()
        self.store_warned = False  # one warning per cache (and store) that the store fails
        self.too_large_warned = False  # one warning per cache (and store) that a value was over its size limit
        self.clock_offset = 0.0  # the store's clock minus ours (see now)
        self.offset_due = 0.0 if callable(getattr(store, "server_time", None)) else _NEVER

    # --- the store's clock ---------------------------------------------------------------

    def now(self) -> float:
        """Now, by the clock expiry is judged by: the store's server clock where it has one.

        Stores with a server (Redis ``TIME``, PostgreSQL ``clock_timestamp()``) expose
        ``server_time()``; its offset from this machine is measured on first use and every
        ``_OFFSET_REFRESH_S``, so writers and readers on skewed machines agree on every expiry
        (within a round trip). Other stores use this machine's clock (docs/caching.md, "Clocks").
        """
        if time.monotonic() >= self.offset_due:
            self._measure_clock_offset()
        return self.clock() + self.clock_offset

    def _measure_clock_offset(self) -> None:
        try:
            before = self.clock()
            server = float(self.store.server_time())  # type: ignore[attr-defined]
            after = self.clock()
        except Exception as exc:  # noqa: BLE001 - unreachable store: keep the last offset, retry soon
            log.debug("reading the store's clock failed: %s", exc)
            self.offset_due = time.monotonic() + _OFFSET_RETRY_S
            return
        self.clock_offset = server - (before + after) / 2
        self.offset_due = time.monotonic() + _OFFSET_REFRESH_S

    # --- counting -----------------------------------------------------------------------

    def flush_stats(self) -> str | None:
        return self.stats.flush(self.store)

    def record_hit(self, entry: Entry, action: str) -> None:
        if self.stats.record_hit(action, entry.metadata.get(DURATION, 0)):
            self.flush_stats()
        if self.observers:
            # A read-only view without the key: an observer (metrics, logs) may not change the
            # stored entry, and events never carry keys.
            shown = MappingProxyType({k: v for k, v in entry.metadata.items() if k != "_cache_key"})
            notify(self.observers, CacheEvent("hits", action, 1, shown))

    def warn_store_failed(self, exc: BaseException) -> None:
        """Say once per cache that its store fails: a ``@cached`` function has no response to carry
        ``_cache_error``, and without this a misconfigured store would go unnoticed."""
        if self.store_warned:
            return
        self.store_warned = True
        url = redact_url(str(getattr(self.store, "url", type(self.store).__name__)))
        warnings.warn(f"the cache store {url} fails ({type(exc).__name__}: {describe(exc)}): actions still run, "
                      f"uncached, until it works; stats()['errors'] counts each failure (said once per Cache)",
                      CacheWarning, stacklevel=5)

    def warn_too_large(self, exc: EntryTooLargeError) -> None:
        """Say once per cache that a value was over the store's ``max_size_bytes`` (not a store failure)."""
        if self.too_large_warned:
            return
        self.too_large_warned = True
        warnings.warn(f"a value of {exc.size} bytes (key, value and metadata) is over the store's max_size_bytes="
                      f"{exc.limit}: returned uncached; raise max_size_bytes to cache values this big; "
                      f"stats()['uncacheable'] counts them (said once per Cache)", CacheWarning, stacklevel=5)

    # --- read ---------------------------------------------------------------------------

    def lookup(self, key: str, action: str | None, *, tally: bool = False) -> Lookup:
        """One store read and one decode. Expired: a miss. Corrupt: a miss, and removed.
        ``tally``: count a fresh hit too (:meth:`record_hit`), as the hit path does."""
        if not self.observers:
            return self.read(key, action, tally)
        started = time.perf_counter()
        found = self.read(key, action)
        notify(self.observers, CacheEvent("lookup", action, time.perf_counter() - started))
        if tally and found.hit:
            self.record_hit(found.entry, action)  # type: ignore[arg-type]
        return found

    def read(self, key: str, action: str | None, tally: bool = False) -> Lookup:
        """One store read and one decode: a fresh hit, or a miss (expired, stale, corrupt, failed)."""
        try:
            entry = self.store.get(key)
        except Exception as exc:  # noqa: BLE001 - any store failure is a miss with an error
            return self._read_failed(exc, action)
        if entry is None:
            return _NOTHING
        return self._judge(key, entry, action, tally)

    def serve(self, key: str, action: str | None) -> Any:
        """The decorator's hit path: the value of a fresh hit itself (tallied), or the
        :class:`Lookup` of :meth:`read` for anything else (the caller tells them apart by type:
        a codec never decodes to a Lookup, a private class).

        An entry this flow has judged before comes back as the same object (the memory store
        keeps it; the SQL and Redis stores hand back the entry built for an unchanged row): its shape
        check, decode and metadata reads are remembered in ``judged``, so the hit is the store
        read, one clock read, the expiry checks, a copy of the value and the tally.
        """
        try:
            entry = self.store.get(key)
        except Exception as exc:  # noqa: BLE001 - any store failure is a miss with an error
            return self._read_failed(exc, action)
        if entry is None:
            return _NOTHING
        seen = self.judged.get(key)
        if seen is not None and seen[0] is entry:
            if self.offset_due != _NEVER and time.monotonic() >= self.offset_due:
                self._measure_clock_offset()
            clock = self.clock()
            if seen[3] > clock + self.clock_offset:  # before its expiry and its fresh-until, whichever comes first
                value = seen[1]()
                stats = self.stats  # Stats.record_hit, inline: a frame costs as much as the tally
                try:
                    counts = stats.local.tally[action]
                except (AttributeError, KeyError):
                    counts = stats.counts_for(action)  # type: ignore[arg-type]
                counts[0] += 1
                counts[1] += seen[2]
                if clock >= stats.flush_due:
                    self.flush_stats()
                return value
        return self._judge(key, entry, action, True)

    def _read_failed(self, exc: Exception, action: str | None) -> Lookup:
        self.count(action, errors=1)
        self.warn_store_failed(exc)
        return Lookup(False, error=f"cache lookup failed: {describe(exc)}")

    def _judge(self, key: str, entry: Entry, action: str | None, tally: bool) -> Lookup:
        """The full read of one entry: shape check, clock, decode, freshness, tally; a healthy
        fresh entry's verdict is remembered for :meth:`serve`."""
        problem = entry_problem(entry)
        if problem is None:
            if self.offset_due != _NEVER and time.monotonic() >= self.offset_due:
                self._measure_clock_offset()
            clock = self.clock()
            now = clock + self.clock_offset
            expires = entry.expires_at
            if expires is not None and expires <= now:
                return Lookup(False, entry=entry)
            try:
                value = self.codec.decode(entry.value)
            except UnsupportedEntryError as exc:
                return Lookup(False, error=str(exc))
            except Exception as exc:  # noqa: BLE001 - any undecodable value is corrupt
                problem = str(exc) or type(exc).__name__
            else:
                metadata = entry.metadata
                fresh = metadata.get(FRESH_UNTIL)  # a time, or None: entry_problem checked it
                if fresh is not None and fresh <= now:
                    return Lookup(False, value, entry, stale=True)
                duration = metadata.get(DURATION, 0)
                if tally:
                    if self.stats.record_hit(action, duration, clock):  # type: ignore[arg-type]
                        self.flush_stats()
                copy = self.decoded(entry.value) if self.decoded is not None and type(entry.value) is bytes else None
                if copy is not None:  # the codec kept the decoded value: later reads copy it from here
                    # Served while the clock is before both the expiry and the fresh-until.
                    until = min(_NEVER if expires is None else expires, _NEVER if fresh is None else fresh)
                    verdict = (entry, copy, saved_ms(duration), until)
                    self.judged.keep(key, verdict, len(entry.value) + len(key) + _VERDICT_OVERHEAD)
                return _tuple_new(Lookup, (True, value, entry, None, False))
        return Lookup(False, error=self.drop_corrupt(entry.key, action, problem))

    def drop_corrupt(self, key: str, action: str | None, problem: str) -> str:
        """The one answer to stored content that cannot be served: count it, remove it, say why.

        Planted or damaged data (a foreign writer, a half-migrated store) is a miss for this key,
        never an exception and never a failure of other keys.
        """
        self.count(action, errors=1, corrupt=1)
        try:
            self.store.delete(key)
        except Exception as exc:  # noqa: BLE001 - the next write replaces it anyway
            log.debug("removing corrupt entry %r failed: %s", key, exc)
        return f"corrupt cache entry removed: {problem}"

    # --- write --------------------------------------------------------------------------

    def save(self, key: str, action: str, ok: bool, value: Any, duration_ms: float, options: StoreOptions) -> str | None:
        """Store a fresh success; count a failure (never stored). Returns why it was not stored."""
        if not ok or is_failure(value):
            self.count(action, failures=1)
            return None
        return self.store_result(key, action, value, duration_ms, options)

    def store_result(self, key: str, action: str, value: Any, duration_ms: float, options: StoreOptions) -> str | None:
        """Encode and put one result; returns an error or warning text, or None."""
        limit = self.max_value_bytes
        try:
            encoded = self.codec.encode(value)
            if limit is not None and len(encoded) > limit:
                raise ValueTooLargeError(len(encoded), limit)
        except Exception as exc:  # noqa: BLE001 - a result that cannot be encoded is returned, never lost
            warnings.warn(f"{action}: {exc}", CacheWarning, stacklevel=6)
            self.count(action, uncacheable=1)
            return f"not cached: {exc}"
        now = self.now()
        ttl_s = options.ttl_s
        meta = entry_metadata(key, action, options.cache_type, now, ttl_s, options.metadata)
        meta[DURATION] = round(duration_ms, 3)
        if options.stale_ttl_s > 0:
            meta[FRESH_UNTIL] = now + ttl_s
        try:
            self.store.put(Entry(key, encoded, meta, now, now + ttl_s + options.stale_ttl_s))
        except EntryTooLargeError as exc:  # the store is fine: this one value is over its size limit
            self.count(action, uncacheable=1)
            self.warn_too_large(exc)
            return f"not cached: {describe(exc)}"
        except Exception as exc:  # noqa: BLE001 - a store that fails never fails the action
            self.count(action, errors=1)
            self.warn_store_failed(exc)
            return f"cache store failed: {describe(exc)}"
        self.count(action, stores=1)
        if options.cleanup_probability > 0 and self.rng.random() < options.cleanup_probability:
            try:
                deleted = self.store.delete_expired(now, options.cleanup_limit)
                if deleted:
                    self.count(None, cleanup_deleted=deleted)
            except Exception as exc:  # noqa: BLE001 - cleanup is best effort
                log.debug("probabilistic cleanup failed: %s", exc)
        if self.stats.due():
            self.flush_stats()
        return None

    # --- the miss path --------------------------------------------------------------------

    def take_lease(self, key: str, timeout_s: float) -> tuple[str | None, Lookup | None]:
        return take_lease(self.store, key, timeout_s, self._hit_of(key))

    async def atake_lease(self, key: str, timeout_s: float) -> tuple[str | None, Lookup | None]:
        """:meth:`take_lease` for the async drivers: the wait sleeps on the loop, not in a thread."""
        return await atake_lease(self.store, key, timeout_s, self._hit_of(key))

    def _hit_of(self, key: str) -> Callable[[], Lookup | None]:
        def found() -> Lookup | None:
            looked = self.lookup(key, None)
            return looked if looked.hit else None

        return found

    def miss(self, key: str, action: str, options: StoreOptions, *, contended: bool, lookup: bool,
             lock: bool, lease_s: float = 60.0) -> Generator[str, Any, Outcome]:
        """The steps after a first lookup missed, inside the key's flight (see the module docstring)."""
        if contended and lookup:
            found = self.lookup(key, action)
            if found.hit:
                return Outcome(True, True, found.value, found.entry)
        token = None
        if lock:
            token, held = yield LEASE
            if held is not None and lookup:  # a call that may not read the cache (refresh, skip_cache,
                release_lease(self.store, key, token)  # record mode) runs even if a result is there
                return Outcome(True, True, held.value, held.entry)
        heartbeat = Heartbeat(self.store, key, token, lease_s)
        try:
            ok, value, duration_ms = yield RUN
            heartbeat.stop()
            return Outcome(False, ok, value, None, self.save(key, action, ok, value, duration_ms, options))
        finally:
            heartbeat.stop()
            release_lease(self.store, key, token)

    # --- stale-while-revalidate -------------------------------------------------------------

    def stale_on_failure(self, found: Lookup | None, ok: bool, value: Any) -> tuple[bool, Any, str]:
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
            return True, self.codec.decode(found.entry.value), why
        except Exception:  # noqa: BLE001 - nothing stale to serve: the failure stands
            return False, None, ""

    def within_stale_window(self, found: Lookup | None, stale_ttl_s: float) -> bool:
        """Whether a stale lookup may be served to a caller whose own window is ``stale_ttl_s``:
        the entry's writer may have allowed a longer one, but a caller never gets a value older
        than it asked to accept."""
        if found is None or not found.stale or stale_ttl_s <= 0 or found.entry is None:
            return False
        fresh = fresh_until(found.entry)
        return fresh is not None and self.now() < fresh + stale_ttl_s

    def start_refresh(self, key: str, action: str, options: StoreOptions, run: Callable[[], Any],
                      lease_s: float, spawn: Callable[[Callable[[], Any], Callable[[Any], None]], "Running"]) -> bool:
        """Refresh a stale entry in the background, once across processes: only the caller that
        takes the key's store lease (one try, no waiting) refreshes; the others keep serving the
        stale value. ``run`` computes (sync, or a coroutine for ``spawn`` to schedule); returns
        whether this caller started the refresh.

        However the refresh ends (done, failed, raised a ``BaseException``, cancelled with its event
        loop, or cut short at interpreter exit) its heartbeat stops, its lease is released and the key
        is no longer marked refreshing here, so the next caller (in any process) may refresh it.
        """
        with self.refresh_lock:
            running = self.refreshing.get(key)
            if running is not None and running.alive():
                return False
        if running is not None:  # its task can never finish (its event loop is gone): end it here
            running.end(None)
        with self.refresh_lock:
            if key in self.refreshing:
                return False
            refresh = self.refreshing[key] = Refresh(self, key, action, options)
        try:
            token = self.store.acquire_lease(LEASE_PREFIX + key, lease_s)
        except Exception as exc:  # noqa: BLE001 - no leases here: this process refreshes alone
            log.debug("lease for refreshing %s failed: %s", key, exc)
            token = ""
        if token is None:  # another process is refreshing it
            refresh.end(None)
            return False
        refresh.token = token or None
        refresh.heartbeat = Heartbeat(self.store, key, refresh.token, lease_s, alive=refresh.alive,
                                      on_dead=lambda: refresh.end(None))
        refresh.running = spawn(run, refresh.end)
        return True

    def settle_refreshes(self, deadline: float) -> None:
        """At interpreter exit: give the background refreshes still running until ``deadline``
        (``time.monotonic()``) to finish and store, then end the rest, releasing their leases so the
        next process refreshes instead of waiting for them to lapse."""
        with self.refresh_lock:
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

    def __init__(self, flow: Flow, key: str, action: str, options: StoreOptions) -> None:
        self.flow, self.key, self.action, self.options = flow, key, action, options
        self.token: str | None = None
        self.heartbeat: Heartbeat | None = None
        self.running: Running | None = None
        self.ended = threading.Event()  # end() has begun: no second ending
        self.settled = threading.Event()  # end() is over: stored (or not) and the key let go
        self._lock = threading.Lock()

    def alive(self) -> bool:
        return not self.ended.is_set() and (self.running is None or self.running.alive())

    def end(self, result: tuple[bool, Any, float] | None) -> None:
        """Store ``result`` (a finished run) and let the key go; ``None``: the run never finished."""
        with self._lock:
            if self.ended.is_set():
                return
            self.ended.set()
        flow, key = self.flow, self.key
        if self.heartbeat is not None:
            self.heartbeat.stop()
        try:
            if result is not None:
                flow.count(self.action, refreshes=1)
                flow.save(key, self.action, *result, self.options)
        finally:
            release_lease(flow.store, key, self.token)
            with flow.refresh_lock:
                if flow.refreshing.get(key) is self:
                    del flow.refreshing[key]
            self.settled.set()


def check_lock_timeout(seconds: Any) -> float:
    """``lock_timeout_s`` checked before anything runs: how long a lease lasts without renewal."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
        raise ValueError(f"lock_timeout_s must be a finite number of seconds > 0 (how long a lease lasts "
                         f"unless its holder renews it), not {seconds!r}")
    return seconds


def check_metadata(metadata: Any) -> None:
    """``metadata=`` checked at the call, so every store behaves alike: a JSON object (string keys;
    str, numbers, bools, None, lists and dicts; no NaN or infinity), as the stores keep it."""
    if not isinstance(metadata, Mapping):
        raise ValueError(f"metadata must be a dict of JSON values, not {type(metadata).__name__}")
    for name in metadata:
        if not isinstance(name, str):
            raise ValueError(f"metadata field names must be strings, not {type(name).__name__} {name!r}")
    try:
        json.dumps(metadata, allow_nan=False)
        return
    except (TypeError, ValueError):
        pass
    for name, value in metadata.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata field {name!r} is not JSON ({type(value).__name__}: {exc}); every store keeps "
                             f"metadata as JSON: pass str, numbers (finite), bools, None, lists or dicts") from None


def entry_metadata(key: str, action: str | None, kind: str, now: float, ttl_s: float | None,
                   extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``_cache_*`` bookkeeping every stored entry carries, over the caller's own fields."""
    meta: dict[str, Any] = dict(extra or {})
    meta["_cache_type"] = kind
    meta["_cache_key"] = key
    if action is not None:
        meta["_cache_action"] = action
    meta["_cache_created_at"] = iso_utc(now)
    if ttl_s is not None:
        meta["_cache_expires_at"] = iso_utc(now + ttl_s)
    return meta


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
                except BaseException as exc:
                    request = steps.throw(exc)
                    continue
            request = steps.send(reply)
    except StopIteration as stop:
        return stop.value
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
                except BaseException as exc:
                    request = steps.throw(exc)
                    continue
            request = steps.send(reply)
    except StopIteration as stop:
        return stop.value
    finally:
        steps.close()  # left early (the lease wait raised, or was cancelled): its finally runs now


def run_sync(fn: Callable[..., Any], args: Mapping[str, Any]) -> tuple[bool, Any, float]:
    """Run an action the way ``wrap`` does: an exception becomes ``(False, "Type: message", ms)``."""
    started = time.perf_counter()
    try:
        result = fn(**args)
    except Exception as exc:  # noqa: BLE001 - the documented shape: success False with error
        return False, f"{type(exc).__name__}: {exc}", (time.perf_counter() - started) * 1000
    return True, result, (time.perf_counter() - started) * 1000


async def run_async(fn: Callable[..., Any], args: Mapping[str, Any]) -> tuple[bool, Any, float]:
    import asyncio

    started = time.perf_counter()
    try:
        result = fn(**args)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            result = await result
    except Exception as exc:  # noqa: BLE001
        return False, f"{type(exc).__name__}: {exc}", (time.perf_counter() - started) * 1000
    return True, result, (time.perf_counter() - started) * 1000


def fresh_until(entry: Entry) -> float | None:
    """When an entry written with a stale window stops being fresh (None: no such window); for an
    entry that passed ``entry_problem``, which refuses a fresh-until that is not a time."""
    value = entry.metadata.get(FRESH_UNTIL)
    return value if _is_number(value) else None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Thread(Running):
    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread

    def alive(self) -> bool:
        return self.thread.is_alive()

    progressing = alive


def spawn_thread(run: Callable[[], tuple[bool, Any, float]],
                 finish: Callable[[tuple[bool, Any, float] | None], None]) -> Running:
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
        return self.alive() and self.loop.is_running()


def spawn_task(run: Callable[[], Awaitable[tuple[bool, Any, float]]],
               finish: Callable[[tuple[bool, Any, float] | None], None]) -> Running:
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
