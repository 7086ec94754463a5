"""The hit path and the miss path of a cached call, written once for every face.

``Cache.wrap``, ``Cache.awrap`` and the two ``@cached`` wrappers share everything here and differ
only in how they run the user's function (sync or awaited: :mod:`actioncache._drivers`) and in
what they return (a response dict or the bare value).

* The hit path: one store read (:meth:`Flow.read`; :meth:`Flow.serve` for the decorator), one
  decode, one clock read, one tally.
* The miss path (:meth:`Flow.miss`): recheck → lease → run → store, a generator the drivers answer;
  the thread or task flight is entered by the driver around the whole generator, so the entry is
  stored before the flight and the lease are let go.
* Stale-while-revalidate lives in :mod:`actioncache._refresh` (``Flow.stale``), the option checks
  in :mod:`actioncache._options`, the ``_cache_*`` fields in :mod:`actioncache._metadata`.
"""

from __future__ import annotations

import random
import time
import warnings
from types import MappingProxyType
from typing import Any, Callable, Generator

from ._drivers import LEASE, RUN, Offload, offload_for
from ._flight import LEASE_PREFIX, Heartbeat, TaskFlights, ThreadFlights, atake_lease, release_lease, take_lease
from ._json import ParseMemo
from ._log import log
from ._metadata import DURATION, FRESH_UNTIL, entry_metadata
from ._options import DEFAULT_MAX_VALUE_BYTES, StoreOptions, check_max_value_bytes
from ._outcomes import NOTHING, Lookup, Outcome, is_failure, new_hit
from ._refresh import Stale
from ._stats import describe, saved_ms, stats_for
from .codec import MAX_DECOMPRESSED_BYTES, MEMO_DECODERS, Codec, JSONCodec
from .errors import CacheWarning, EntryTooLargeError, UnsupportedEntryError, ValueTooLargeError
from .events import CacheEvent, Observer, notify
from .stores.base import CacheStore, Entry, entry_problem, redact_url

__all__ = ["Flow"]


_OFFSET_REFRESH_S = 300.0
_OFFSET_RETRY_S = 30.0
_NEVER = float("inf")
# Remembered verdicts of healthy entries (Flow.judged): entries up to 16 KiB, about 2 MiB in all
# (the entries are held by the store's own memo or dict as well); an item weighs its value, its
# key and this much more for the metadata and the tuple.
_VERDICT_MAX_BYTES = 16 * 1024
_VERDICTS_MAX_BYTES = 2 * 1024 * 1024
_VERDICT_OVERHEAD = 512


class Flow:
    """The steps of a cached call over one store and codec, and the counters they keep."""

    def __init__(self, store: CacheStore, codec: Codec, *, clock: Callable[[], float], rng: random.Random,
                 stats_flush_s: float, max_value_bytes: int | None = DEFAULT_MAX_VALUE_BYTES) -> None:
        self.max_value_bytes = check_max_value_bytes(max_value_bytes)
        self.use_codec(codec)
        self.clock = clock
        self.rng = rng
        self.stats_flush_s = stats_flush_s
        self.threads = ThreadFlights()
        self.tasks = TaskFlights()
        self.stale = Stale(self)  # stale-while-revalidate: background refreshes of this flow
        self.observers: list[Observer] = []  # actioncache.events: this cache's own; empty costs one check
        self.use_store(store)

    def use_codec(self, codec: Codec) -> None:
        self.codec = codec
        if isinstance(codec, JSONCodec):
            # A frame is never inflated past the largest value this cache could have stored
            # (max_value_bytes bounds the encoding before compression: codec._maybe_compress).
            limit = self.max_value_bytes
            codec.max_decoded_bytes = MAX_DECOMPRESSED_BYTES if limit is None else min(limit, MAX_DECOMPRESSED_BYTES)
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
        if getattr(self, "stats", None) is not None:
            self.flush_stats()  # what was counted belongs to the store it was counted on
        self.store = store
        # The async faces call a networked store from worker threads of its own (_drivers.Offload).
        old: Offload | None = getattr(self, "offload", None)
        if old is not None:
            old.close()
        self.offload = offload_for(store)
        # Counters are the store's, shared by every cache over it in this process (_stats.stats_for).
        self.stats = stats_for(store, self.clock, self.stats_flush_s)
        self.count: Callable[..., None] = self.stats.count if not self.observers else self._count_and_tell
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

    def observe(self, observer: Observer) -> Callable[[], None]:
        """Tell ``observer`` of every count and lookup of this flow; returns a remover."""
        self.observers.append(observer)
        self.count = self._count_and_tell

        def remove() -> None:
            if observer in self.observers:
                self.observers.remove(observer)
            if not self.observers:
                self.count = self.stats.count

        return remove

    def _count_and_tell(self, action: str | None, **deltas: float) -> None:
        self.stats.count(action, **deltas)
        for name, delta in deltas.items():
            notify(self.observers, CacheEvent(name, action, delta))

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
            return NOTHING
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
            return NOTHING
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
                if tally and self.stats.record_hit(action, duration, clock):  # type: ignore[arg-type]
                    self.flush_stats()
                copy = self.decoded(entry.value) if self.decoded is not None and type(entry.value) is bytes else None
                if copy is not None:  # the codec kept the decoded value: later reads copy it from here
                    # Served while the clock is before both the expiry and the fresh-until.
                    until = min(_NEVER if expires is None else expires, _NEVER if fresh is None else fresh)
                    verdict = (entry, copy, saved_ms(duration), until)
                    self.judged.keep(key, verdict, len(entry.value) + len(key) + _VERDICT_OVERHEAD)
                return new_hit(value, entry)
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

    def save(self, key: str, action: str, ok: bool, value: Any, duration_ms: float, options: StoreOptions,
             token: str | None = None) -> str | None:
        """Store a fresh success; count a failure (never stored). Returns why it was not stored.
        ``token``: the store lease this caller holds on ``key`` (the write is then fenced)."""
        if not ok or is_failure(value):
            self.count(action, failures=1)
            return None
        return self.store_result(key, action, value, duration_ms, options, token)

    def store_result(self, key: str, action: str, value: Any, duration_ms: float, options: StoreOptions,
                     token: str | None = None) -> str | None:
        """Encode and put one result; returns an error or warning text, or None.

        Under a lease (``token``) the write is fenced: the store accepts it only while ``token``
        is still the lease's current grant (``put_fenced``, checked in the same statement,
        transaction or script as the write). A holder that lost its lease (paused past it, its
        heartbeat stopped) returns its value to its caller uncached and counts ``lease_lost``: a
        newer holder's value is never overwritten by an older one."""
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
        entry = Entry(key, encoded, meta, now, now + ttl_s + options.stale_ttl_s)
        try:
            fenced = getattr(self.store, "put_fenced", None) if token else None
            if fenced is None:  # no lease held (or a third-party store without fencing)
                self.store.put(entry)
            elif not fenced(entry, LEASE_PREFIX + key, token):
                self.count(action, lease_lost=1)
                log.info("%s: lost the lease on its key before storing (a newer holder may have stored); "
                         "its value is returned uncached", action)
                return "not cached: this call's lease on the key was lost before it stored (another caller holds it)"
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
            return Outcome(False, ok, value, None, self.save(key, action, ok, value, duration_ms, options, token))
        finally:
            heartbeat.stop()
            release_lease(self.store, key, token)
