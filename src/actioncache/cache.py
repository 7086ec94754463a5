"""The cache core: ``Cache.wrap/get/invalidate/cleanup/stats`` over one :class:`CacheStore`.

Rules this module keeps (DESIGN.md, "Values and safety"):

* A failing store never fails the user's action: every store call is guarded, the action runs
  fresh, and the response (``_cache_error``) and stats (``errors``) record what went wrong.
* Only successes are cached: an exception or a dict result with ``success: false`` is not stored.
* A hit is a read. Stats are counted in memory and flushed to the store's shared counters at most
  every ``stats_flush_s`` seconds (and on miss, ``stats()``, ``close()`` and exit), so totals add up
  across processes without a write per hit.
* A value the codec cannot encode is returned fresh, not cached, with a warning.
"""

from __future__ import annotations

import atexit
import logging
import math
import random
import threading
import time
import warnings
import weakref
from typing import Any, Awaitable, Callable, Mapping, NamedTuple, Protocol

from .codec import DEFAULT_COMPRESS_THRESHOLD_BYTES, Codec, make_codec
from .errors import HashError, KeyStrategyError, UnsupportedEntryError
from .events import CacheEvent, Observer, notify
from .keys import KEY_PREFIX, KEY_STRATEGIES, compute_key
from .stores.base import CacheStore, Entry, entry_problem, escape_glob, open_store, redact_secrets, redact_url

log = logging.getLogger("actioncache")

DEFAULT_TTL_SECONDS = 60 * 86400.0
# The longest TTL: 100 years. Longer (or infinite) expiries are not times every store can hold.
MAX_TTL_SECONDS = 36500 * 86400.0
DEFAULT_CLEANUP_PROBABILITY = 0.05
DEFAULT_CLEANUP_LIMIT = 5
STATS_PREFIX = "stats:"
_CLEANUP_BATCH = 1000
_OFFSET_REFRESH_S = 300.0
_OFFSET_RETRY_S = 30.0
_INVALIDATE_BATCH = 500


class CacheWarning(UserWarning):
    """A result was returned but could not be cached (e.g. not JSON-encodable)."""


class Decision(NamedTuple):
    """What a policy allows for one call: look up the cache, store the result, and why not."""

    lookup: bool
    store: bool
    reason: str | None = None


ALWAYS = Decision(True, True, None)


class PolicyHook(Protocol):
    """The one thing the core asks of the policy layer (``actioncache.policy`` implements it)."""

    def decide(self, scope: str | None, action: str) -> Decision: ...


def resolve_ttl(
    ttl_seconds: float | None = None, ttl_hours: float | None = None, ttl_days: float | None = None,
    default: float = DEFAULT_TTL_SECONDS,
) -> float:
    """``ttl_seconds`` over ``ttl_hours`` over ``ttl_days``; the default is 60 days.

    The one check every TTL passes before anything runs: a number, positive, finite and at most
    :data:`MAX_TTL_SECONDS` (100 years), so the expiry it gives is a time every store can hold.
    ``inf``, ``nan``, ``1e300`` or YAML ``.inf`` are refused here, never after the action ran.
    """
    for value, unit, scale in ((ttl_seconds, "ttl_seconds", 1.0), (ttl_hours, "ttl_hours", 3600.0), (ttl_days, "ttl_days", 86400.0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{unit} must be a number, not {_short(value)}")
        if value != value:  # nan compares unequal to itself
            raise ValueError(f"{unit} must be a number of {unit[4:]}, not nan")
        if value <= 0:
            raise ValueError(f"{unit} must be positive (got {value}); to skip caching use cache_enabled=False")
        if value > MAX_TTL_SECONDS / scale:  # an int too large for a float compares fine here
            raise ValueError(
                f"{unit} must be at most {MAX_TTL_SECONDS / scale:g} (100 years), not {_short(value)}; "
                f"for an entry that lives as long as possible use ttl_days={MAX_TTL_SECONDS // 86400:g}"
            )
        return float(value) * scale
    return default


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "..."


def iso_utc(ts: float) -> str:
    """``2026-11-22T03:24:26.641721Z``: ISO 8601, UTC, microseconds (written twice per stored entry)."""
    seconds, micros = divmod(round(ts * 1_000_000), 1_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{micros:06d}Z"


def _is_failure(result: Any) -> bool:
    return isinstance(result, dict) and result.get("success") is False


_live_caches: "weakref.WeakSet[Cache]" = weakref.WeakSet()


def _flush_all_at_exit() -> None:
    for cache in list(_live_caches):
        cache.flush_stats()


class _Flight:
    """The context manager behind ``Cache._flight`` (a class: it sits on every miss)."""

    __slots__ = ("cache", "key", "slot")

    def __init__(self, cache: "Cache", key: str) -> None:
        self.cache, self.key = cache, key

    def __enter__(self) -> bool:
        cache = self.cache
        with cache._inflight_lock:
            slot = cache._inflight.get(self.key)
            if slot is None:
                slot = cache._inflight[self.key] = [threading.Lock(), 0]
            slot[1] += 1
            contended = slot[1] > 1
        self.slot = slot
        slot[0].acquire()
        return contended

    def __exit__(self, *exc: Any) -> None:
        slot, cache = self.slot, self.cache
        slot[0].release()
        with cache._inflight_lock:
            slot[1] -= 1
            if slot[1] == 0:
                cache._inflight.pop(self.key, None)


class _Lookup(NamedTuple):
    hit: bool
    value: Any = None
    entry: Entry | None = None
    error: str | None = None


class Cache:
    """Memoize actions and functions in a durable store.

    ``Cache()`` uses ``$ACTIONCACHE_URL`` or a SQLite file in the user cache directory;
    ``Cache("redis://…")`` or ``Cache(store=some_store)`` choose another. The store connects
    lazily, so a cache over an unreachable server still constructs and its actions still run.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        store: CacheStore | None = None,
        codec: str | Codec | None = None,
        secret: bytes | str | None = None,
        default_ttl_seconds: float = DEFAULT_TTL_SECONDS,
        cleanup_probability: float = DEFAULT_CLEANUP_PROBABILITY,
        cleanup_limit: int = DEFAULT_CLEANUP_LIMIT,
        policy_hook: PolicyHook | None = None,
        stats_flush_s: float = 5.0,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
        compress_threshold_bytes: int | None = DEFAULT_COMPRESS_THRESHOLD_BYTES,
        max_size_bytes: int | str | None = None,
        eviction: str | None = None,
    ) -> None:
        if store is not None and url is not None:
            raise ValueError("give either a store URL or store=..., not both")
        limits = {name: value for name, value in (("max_size_bytes", max_size_bytes), ("eviction", eviction))
                  if value is not None}
        if limits and store is not None:
            raise ValueError("a size limit belongs to the store: pass max_size_bytes=/eviction= to the store's "
                             "constructor or its URL (?max_size_bytes=...&eviction=lru), or give Cache a URL")
        self.store: CacheStore = store if store is not None else open_store(url, **limits)
        self.codec: Codec = make_codec(codec, secret, compress_threshold_bytes)
        self.default_ttl_seconds = resolve_ttl(default_ttl_seconds)
        _check_probability(cleanup_probability)
        self.cleanup_probability = cleanup_probability
        self.cleanup_limit = cleanup_limit
        self.policy_hook = policy_hook
        self.stats_flush_s = stats_flush_s
        self._rng = rng or random.Random()
        self._clock = clock
        self._pending: dict[str | tuple[str, str], float] = {}
        self._hit_tally: dict[str, list[float]] = {}
        self._session: dict[str, float] = {}
        self._stats_lock = threading.Lock()
        self._last_flush = clock()
        self._clock_offset = 0.0  # the store's clock minus ours (see _store_now)
        self._offset_due = 0.0 if callable(getattr(self.store, "server_time", None)) else float("inf")
        self._inflight: dict[str, list[Any]] = {}
        self._inflight_lock = threading.Lock()
        self._async_inflight: dict[tuple[int, str], list[Any]] = {}
        self._observers: list[Observer] = []
        _live_caches.add(self)
        # atexit runs handlers last-registered-first. Re-registering after the store is open puts
        # the stats flush ahead of any exit hook the store's module installed (blob-sqlite uploads
        # its file at exit: the counters must be in it by then).
        atexit.unregister(_flush_all_at_exit)
        atexit.register(_flush_all_at_exit)

    @property
    def url(self) -> str:
        # Shown in stats, the CLI and logs: never with the password a server URL may carry.
        return redact_url(getattr(self.store, "url", type(self.store).__name__))

    def __repr__(self) -> str:
        return f"Cache({self.url!r})"

    def __enter__(self) -> "Cache":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.flush_stats()
        try:
            self.store.close()
        except Exception as exc:  # noqa: BLE001 - closing must not raise over the user's work
            log.warning("closing store %s failed: %s", self.url, exc)

    # --- the store's clock ---------------------------------------------------------------

    def _store_now(self) -> float:
        """Now, by the clock expiry is judged by: the store's server clock where it has one.

        Stores with a server (Redis ``TIME``, PostgreSQL ``clock_timestamp()``) expose
        ``server_time()``; its offset from this machine is measured on first use and every
        ``_OFFSET_REFRESH_S``, so writers and readers on skewed machines agree on every expiry
        (within a round trip). Other stores use this machine's clock (docs/caching.md, "Clocks").
        """
        if time.monotonic() >= self._offset_due:
            self._measure_clock_offset()
        return self._clock() + self._clock_offset

    def _measure_clock_offset(self) -> None:
        try:
            before = self._clock()
            server = float(self.store.server_time())  # type: ignore[attr-defined]
            after = self._clock()
        except Exception as exc:  # noqa: BLE001 - unreachable store: keep the last offset, retry soon
            log.debug("reading the store's clock failed: %s", exc)
            self._offset_due = time.monotonic() + _OFFSET_RETRY_S
            return
        self._clock_offset = server - (before + after) / 2
        self._offset_due = time.monotonic() + _OFFSET_REFRESH_S

    # --- observers (actioncache.events) ---------------------------------------------------

    def add_observer(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(CacheEvent)`` on every hit, miss, store, error and lookup; returns a remover."""
        if not callable(observer):
            raise ValueError(f"an observer is a callable taking one CacheEvent, not {type(observer).__name__}")
        self._observers.append(observer)
        return lambda: self._observers.remove(observer) if observer in self._observers else None

    # --- stats --------------------------------------------------------------------------

    def _count(self, action: str | None, **deltas: float) -> None:
        with self._stats_lock:
            pending, session = self._pending, self._session
            for name, delta in deltas.items():
                pending[name] = pending.get(name, 0) + delta
                session[name] = session.get(name, 0) + delta
                if action is not None:
                    scoped = (action, name)
                    pending[scoped] = pending.get(scoped, 0) + delta
        if self._observers:
            for name, delta in deltas.items():
                notify(self._observers, CacheEvent(name, action, delta))

    def _maybe_flush(self, force: bool = False) -> None:
        if force or self._clock() - self._last_flush >= self.stats_flush_s:
            self.flush_stats()

    def flush_stats(self) -> str | None:
        """Write buffered counters to the store; on failure keep them for the next try."""
        with self._stats_lock:
            self._fold_hits()
            pending, self._pending = self._pending, {}
            self._last_flush = self._clock()
        if not pending:
            return None
        try:
            self.store.add_counters({_counter_name(k): v for k, v in pending.items()})
            return None
        except Exception as exc:  # noqa: BLE001
            with self._stats_lock:
                for name, delta in pending.items():
                    self._pending[name] = self._pending.get(name, 0) + delta
            return _describe(exc)

    def stats(self) -> dict[str, Any]:
        """Totals across every process that used this store, plus this process's ``session`` counts."""
        error = self.flush_stats()
        out: dict[str, Any] = {"success": True, "store": self.url}
        totals: dict[str, float] = {}
        by_action: dict[str, dict[str, float]] = {}
        try:
            raw = self.store.counters(STATS_PREFIX)
            out["entries"] = self.store.count()
            out["size_bytes"] = self.store.size_bytes()
        except Exception as exc:  # noqa: BLE001
            raw = {}
            error = error or _describe(exc)
        if error:
            out["error"] = error
            raw = {STATS_PREFIX + k: v for k, v in self._session.items()}
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
            _finish_counts(bucket)
        out.update(totals)
        out["by_action"] = by_action
        with self._stats_lock:
            self._fold_hits()
            session = dict(self._session)
        _finish_counts(session)
        out["session"] = session
        return out

    # --- policy -------------------------------------------------------------------------

    def _decide(self, scope: str | None, action: str) -> Decision:
        hook = self.policy_hook
        if scope is None and (hook is None or getattr(hook, "scoped_only", False)):
            return ALWAYS  # calls without a scope cache as always, whatever the loop's mode
        if hook is None:
            from .policy import attach  # lazy: only calls that carry a scope pay for the policy layer

            hook = attach(self)
        decision = hook.decide(scope, action)
        if not (decision.lookup and decision.store):
            self._count(action, policy_bypass=1)
        return decision

    def policy(self, mode: str | None = None, scopes: Any = None, phase: str | None = None, **options: Any) -> Any:
        """Context manager: the cache mode, enabled scopes and phase for calls that carry a ``scope=``.

        ``with cache.policy(mode="use", scopes="verify,read", phase="REPORT"): ...``. Fields not given
        keep the enclosing policy (an outer block, else ``CACHE_MODE``/``CACHE_SCOPE``/``CACHE_PHASE``
        and the config file). The block is held in a context variable, so other threads and tasks
        keep their own. Calls without a scope are not affected. See ``actioncache.policy``.
        """
        from .policy import policy_block

        return policy_block(self, mode=mode, scopes=scopes, phase=phase, **options)

    # --- the read and write halves shared by wrap, awrap and the decorator ---------------

    def _lookup(self, key: str, action: str | None) -> _Lookup:
        if not self._observers:
            return self._read_entry(key, action)
        started = time.perf_counter()
        found = self._read_entry(key, action)
        notify(self._observers, CacheEvent("lookup", action, time.perf_counter() - started))
        return found

    def _read_entry(self, key: str, action: str | None) -> _Lookup:
        try:
            entry = self.store.get(key)
        except Exception as exc:  # noqa: BLE001 - any store failure is a miss with an error
            self._count(action, errors=1)
            return _Lookup(False, error=f"cache lookup failed: {_describe(exc)}")
        if entry is None:
            return _Lookup(False)
        problem = entry_problem(entry)
        if problem is None:
            if entry.expires_at is not None and entry.expires_at <= self._store_now():
                return _Lookup(False, entry=entry)
            try:
                return _Lookup(True, self.codec.decode(entry.value), entry)
            except UnsupportedEntryError as exc:
                return _Lookup(False, error=str(exc))
            except Exception as exc:  # noqa: BLE001 - any undecodable value is corrupt
                problem = str(exc) or type(exc).__name__
        return _Lookup(False, error=self._drop_corrupt(entry.key, action, problem))

    def _drop_corrupt(self, key: str, action: str | None, problem: str) -> str:
        """The one answer to stored content that cannot be served: count it, remove it, say why.

        Planted or damaged data (a foreign writer, a half-migrated store) is a miss for this key,
        never an exception and never a failure of other keys.
        """
        self._count(action, errors=1, corrupt=1)
        try:
            self.store.delete(key)
        except Exception as exc:  # noqa: BLE001 - the next write replaces it anyway
            log.debug("removing corrupt entry %r failed: %s", key, exc)
        return f"corrupt cache entry removed: {problem}"

    def _record_hit(self, entry: Entry, action: str) -> None:
        # The hot path of every hit: one lock, one small list per action; folded into the
        # named counters when stats are flushed or read.
        duration = entry.metadata.get("_cache_duration_ms", 0)
        if not isinstance(duration, (int, float)):
            duration = 0.0
        with self._stats_lock:
            tally = self._hit_tally.get(action)
            if tally is None:
                tally = self._hit_tally[action] = [0, 0.0]
            tally[0] += 1
            tally[1] += duration
        if self._observers:
            notify(self._observers, CacheEvent("hits", action, 1, entry.metadata))
        if self._clock() - self._last_flush >= self.stats_flush_s:
            self.flush_stats()

    def _fold_hits(self) -> None:
        """Move the hit tallies into the pending and session counters (call with the lock held)."""
        tallies, self._hit_tally = self._hit_tally, {}
        pending, session = self._pending, self._session
        for action, (hits, saved_ms) in tallies.items():
            for name, delta in (("hits", hits), ("time_saved_ms", saved_ms)):
                pending[name] = pending.get(name, 0) + delta
                session[name] = session.get(name, 0) + delta
                pending[(action, name)] = pending.get((action, name), 0) + delta

    def _store_result(
        self,
        key: str,
        action: str,
        value: Any,
        *,
        ttl_s: float,
        duration_ms: float,
        cache_type: str,
        metadata: Mapping[str, Any] | None,
        cleanup_probability: float,
        cleanup_limit: int,
    ) -> str | None:
        """Encode and put one result; returns an error or warning text, or None."""
        try:
            encoded = self.codec.encode(value)
        except Exception as exc:  # noqa: BLE001 - a result that cannot be encoded is returned, never lost
            warnings.warn(f"{action}: {exc}", CacheWarning, stacklevel=4)
            self._count(action, uncacheable=1)
            return f"not cached: {exc}"
        now = self._store_now()
        meta: dict[str, Any] = dict(metadata or {})
        meta.update(
            _cache_type=cache_type,
            _cache_key=key,
            _cache_action=action,
            _cache_created_at=iso_utc(now),
            _cache_expires_at=iso_utc(now + ttl_s),
            _cache_duration_ms=round(duration_ms, 3),
        )
        try:
            self.store.put(Entry(key, encoded, meta, now, now + ttl_s))
        except Exception as exc:  # noqa: BLE001
            self._count(action, errors=1)
            return f"cache store failed: {_describe(exc)}"
        self._count(action, stores=1)
        if cleanup_probability > 0 and self._rng.random() < cleanup_probability:
            try:
                deleted = self.store.delete_expired(now, cleanup_limit)
                if deleted:
                    self._count(None, cleanup_deleted=deleted)
            except Exception as exc:  # noqa: BLE001 - cleanup is best effort
                log.debug("probabilistic cleanup failed: %s", exc)
        self._maybe_flush()
        return None

    # --- single flight ------------------------------------------------------------------

    def _flight(self, key: str) -> "_Flight":
        """Serialize computations of one key among this process's threads.

        ``with cache._flight(key) as contended``: contended is True when another thread was
        already computing this key; only then can the entry have appeared since our lookup,
        so only then is a second lookup worth its SELECT.
        """
        return _Flight(self, key)

    def _async_slot(self, key: str) -> tuple[list[Any], bool]:
        """([lock, waiters], contended): like _flight, for the tasks of one event loop."""
        import asyncio  # lazy: asyncio costs tens of ms at start-up, and `actioncache exec` never needs it

        loop_key = (id(asyncio.get_running_loop()), key)
        slot = self._async_inflight.get(loop_key)
        if slot is None:
            slot = self._async_inflight[loop_key] = [asyncio.Lock(), 0]
        slot[1] += 1
        return slot, slot[1] > 1

    def _async_release(self, key: str, slot: list[Any]) -> None:
        import asyncio

        slot[1] -= 1
        if slot[1] == 0:
            self._async_inflight.pop((id(asyncio.get_running_loop()), key), None)

    def _lease(self, key: str, lock_timeout_s: float) -> tuple[str | None, _Lookup | None]:
        """Cross-process single flight: take the store lease, or wait for the holder's result."""
        deadline = time.monotonic() + lock_timeout_s
        delay = 0.01
        while True:
            try:
                token = self.store.acquire_lease("lease:" + key, lock_timeout_s)
            except Exception as exc:  # noqa: BLE001 - no lease support or store down: compute
                log.debug("lease on %s failed: %s", key, exc)
                return None, None
            if token is not None:
                found = self._lookup(key, None)  # the holder may have finished just before
                return token, found if found.hit else None
            found = self._lookup(key, None)
            if found.hit:
                return None, found
            if time.monotonic() >= deadline:
                return None, None
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def _release_lease(self, key: str, token: str | None) -> None:
        if token is None:
            return
        try:
            self.store.release_lease("lease:" + key, token)
        except Exception as exc:  # noqa: BLE001
            log.debug("releasing lease on %s failed: %s", key, exc)

    # --- wrap ---------------------------------------------------------------------------

    def wrap(
        self,
        action: str,
        fn: Callable[..., Any],
        args: Mapping[str, Any] | None = None,
        *,
        key: str | None = None,
        key_strategy: str = "args",
        key_source: str | None = None,
        ttl_seconds: float | None = None,
        ttl_hours: float | None = None,
        ttl_days: float | None = None,
        skip_cache: bool = False,
        cache_enabled: bool = True,
        cleanup_probability: float | None = None,
        cleanup_limit: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        scope: str | None = None,
        lock: bool = False,
        lock_timeout_s: float = 60.0,
    ) -> dict[str, Any]:
        """Run ``fn(**args)`` unless a live cached result exists; return seed 000's response shape.

        ``{"success": True, "result": ..., "_cache_hit": bool, "_cache_key": str}`` (plus
        ``_cache_created_at`` on a hit, ``_cache_error`` when the cache failed but the action ran).
        On failure ``success`` is False with ``error``; failures are never cached.
        """
        call = self._prepare(action, args, key=key, key_strategy=key_strategy, key_source=key_source,
                             ttl_seconds=ttl_seconds, ttl_hours=ttl_hours, ttl_days=ttl_days, skip_cache=skip_cache,
                             cache_enabled=cache_enabled, cleanup_probability=cleanup_probability,
                             cleanup_limit=cleanup_limit, scope=scope)
        if call.hit_response is not None:
            return call.hit_response
        if call.key is None or not call.decision.store:
            return self._respond_fresh(call, *self._run_sync(fn, call.args))
        with self._flight(call.key) as contended:
            if contended and call.decision.lookup:
                found = self._lookup(call.key, action)
                if found.hit:
                    return self._respond_hit(call, found)
            token = None
            if lock:
                token, found_l = self._lease(call.key, lock_timeout_s)
                if found_l is not None:
                    self._release_lease(call.key, token)
                    return self._respond_hit(call, found_l)
            try:
                ok, result, duration_ms = self._run_sync(fn, call.args)
                return self._finish(call, ok, result, duration_ms, metadata, "action_result")
            finally:
                self._release_lease(call.key, token)

    async def awrap(
        self,
        action: str,
        fn: Callable[..., Awaitable[Any]],
        args: Mapping[str, Any] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
        lock: bool = False,
        lock_timeout_s: float = 60.0,
        **options: Any,
    ) -> dict[str, Any]:
        """``wrap`` for a coroutine function; concurrent tasks on one cold key run it once.

        ``options`` are wrap's key, TTL and control options (``key=``, ``key_strategy=``, ``ttl_*=``,
        ``skip_cache=``, ``cache_enabled=``, ``cleanup_*=``, ``scope=``); an unknown one is a TypeError.
        """
        call = self._prepare(action, args, **options)
        if call.hit_response is not None:
            return call.hit_response
        if call.key is None or not call.decision.store:
            return self._respond_fresh(call, *await self._run_async(fn, call.args))
        slot, contended = self._async_slot(call.key)
        try:
            async with slot[0]:
                if contended and call.decision.lookup:
                    found = self._lookup(call.key, action)
                    if found.hit:
                        return self._respond_hit(call, found)
                token = None
                if lock:
                    import asyncio

                    token, found_l = await asyncio.to_thread(self._lease, call.key, lock_timeout_s)
                    if found_l is not None:
                        self._release_lease(call.key, token)
                        return self._respond_hit(call, found_l)
                try:
                    ok, result, duration_ms = await self._run_async(fn, call.args)
                    return self._finish(call, ok, result, duration_ms, metadata, "action_result")
                finally:
                    self._release_lease(call.key, token)
        finally:
            self._async_release(call.key, slot)

    class _Call(NamedTuple):
        action: str
        args: dict[str, Any]
        key: str | None
        ttl_s: float
        decision: Decision
        cleanup_probability: float
        cleanup_limit: int
        errors: list[str]
        hit_response: dict[str, Any] | None

    def _prepare(self, action: str, args: Mapping[str, Any] | None, *, key: str | None = None,
                 key_strategy: str = "args", key_source: str | None = None, ttl_seconds: float | None = None,
                 ttl_hours: float | None = None, ttl_days: float | None = None, skip_cache: bool = False,
                 cache_enabled: bool = True, cleanup_probability: float | None = None,
                 cleanup_limit: int | None = None, scope: str | None = None) -> "Cache._Call":
        # Configuration mistakes raise before anything runs; data problems (an argument that
        # cannot be keyed, a file that cannot be hashed) only turn caching off for this call.
        if not isinstance(action, str) or not action:
            raise ValueError("action must be a non-empty name, e.g. 'extract' or 'llm.call'")
        if args is not None and not isinstance(args, Mapping):
            raise ValueError(f"args must be a dict of keyword arguments, not {type(args).__name__}")
        if key_strategy not in KEY_STRATEGIES:
            raise ValueError(f"unknown key_strategy {key_strategy!r}; use one of {', '.join(KEY_STRATEGIES)}")
        if key_strategy == "custom" and key is None:
            raise ValueError("key_strategy 'custom' needs key=...: the key text")
        if key_strategy in ("sha256", "file_content") and key is None and not key_source:
            raise ValueError(f"key_strategy {key_strategy!r} needs key_source=...: the argument to hash")
        ttl_s = resolve_ttl(ttl_seconds, ttl_hours, ttl_days, self.default_ttl_seconds)
        p = self.cleanup_probability if cleanup_probability is None else cleanup_probability
        _check_probability(p)
        limit = self.cleanup_limit if cleanup_limit is None else int(cleanup_limit)
        args = dict(args or {})
        errors: list[str] = []
        decision = self._decide(scope, action) if cache_enabled else Decision(False, False, "cache_enabled is false")
        if skip_cache:
            decision = Decision(False, decision.store, decision.reason or "skip_cache")
        cache_key: str | None = None
        if decision.lookup or decision.store:
            try:
                cache_key = compute_key(action, args, key=key, key_strategy=key_strategy, key_source=key_source)
            except (KeyStrategyError, HashError) as exc:
                self._count(action, errors=1)
                errors.append(f"no cache key, running uncached: {exc}")
        call = Cache._Call(action, args, cache_key, ttl_s, decision, p, limit, errors, None)
        if cache_key is not None and decision.lookup:
            found = self._lookup(cache_key, action)
            if found.hit:
                return call._replace(hit_response=self._respond_hit(call, found))
            if found.error:
                errors.append(found.error)
            self._count(action, misses=1)
        return call

    def _respond_hit(self, call: "Cache._Call", found: _Lookup) -> dict[str, Any]:
        assert found.entry is not None
        self._record_hit(found.entry, call.action)
        response = {
            "success": True,
            "result": found.value,
            "_cache_hit": True,
            "_cache_key": call.key,
            "_cache_created_at": found.entry.metadata.get("_cache_created_at") or iso_utc(found.entry.created_at),
        }
        return response

    def _respond_fresh(self, call: "Cache._Call", ok: bool, result: Any, duration_ms: float) -> dict[str, Any]:
        response = self._result_response(ok, result, call.key)
        if call.errors:
            response["_cache_error"] = "; ".join(call.errors)
        if call.decision.reason and not (call.decision.lookup and call.decision.store):
            response["_cache_bypass"] = call.decision.reason
        return response

    @staticmethod
    def _result_response(ok: bool, result: Any, key: str | None) -> dict[str, Any]:
        if not ok:
            return {"success": False, "error": result, "_cache_hit": False, "_cache_key": key}
        if _is_failure(result):
            error = result.get("error") or "the action returned success: false"
            return {"success": False, "result": result, "error": error, "_cache_hit": False, "_cache_key": key}
        return {"success": True, "result": result, "_cache_hit": False, "_cache_key": key}

    def _finish(self, call: "Cache._Call", ok: bool, result: Any, duration_ms: float,
                metadata: Mapping[str, Any] | None, cache_type: str) -> dict[str, Any]:
        response = self._respond_fresh(call, ok, result, duration_ms)
        if response["success"] and call.key is not None and call.decision.store:
            problem = self._store_result(call.key, call.action, result, ttl_s=call.ttl_s, duration_ms=duration_ms,
                                         cache_type=cache_type, metadata=metadata,
                                         cleanup_probability=call.cleanup_probability,
                                         cleanup_limit=call.cleanup_limit)
            if problem:
                prior = response.get("_cache_error")
                response["_cache_error"] = f"{prior}; {problem}" if prior else problem
        elif not response["success"]:
            self._count(call.action, failures=1)
        return response

    @staticmethod
    def _run_sync(fn: Callable[..., Any], args: Mapping[str, Any]) -> tuple[bool, Any, float]:
        started = time.perf_counter()
        try:
            result = fn(**args)
        except Exception as exc:  # noqa: BLE001 - the seed's shape: success False with error
            return False, f"{type(exc).__name__}: {exc}", (time.perf_counter() - started) * 1000
        return True, result, (time.perf_counter() - started) * 1000

    @staticmethod
    async def _run_async(fn: Callable[..., Any], args: Mapping[str, Any]) -> tuple[bool, Any, float]:
        import asyncio

        started = time.perf_counter()
        try:
            result = fn(**args)
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                result = await result
        except Exception as exc:  # noqa: BLE001
            return False, f"{type(exc).__name__}: {exc}", (time.perf_counter() - started) * 1000
        return True, result, (time.perf_counter() - started) * 1000

    def lookup(self, action: str, key: str) -> dict[str, Any] | None:
        """The live value under ``key`` as ``wrap``'s hit response, or None; counted as wrap counts.

        For faces that cannot hand ``wrap`` a function, such as a stream that is stored only after
        its consumer has read it whole: look up here, then store with ``wrap(..., skip_cache=True)``.
        """
        key = compute_key(action, None, key=key)
        found = self._lookup(key, action)
        if not found.hit:
            self._count(action, misses=1)
            return None
        call = Cache._Call(action, {}, key, 0.0, ALWAYS, 0.0, 0, [], None)
        return self._respond_hit(call, found)

    # --- inspection and maintenance -----------------------------------------------------

    def get(self, key: str, include_metadata: bool = False) -> dict[str, Any]:
        """Read one entry without running anything: ``{"success", "found", "value", "expired", "metadata"?}``.

        A key without the ``cache:`` prefix is also tried with it, so ``get("my-key")`` finds
        what ``wrap(..., key="my-key")`` stored.
        """
        try:
            entry = None
            for candidate in _key_candidates(key):
                entry = self.store.get(candidate)
                if entry is not None:
                    break
        except Exception as exc:  # noqa: BLE001
            self._count(None, errors=1)
            return {"success": False, "found": False, "value": None, "expired": False, "error": _describe(exc)}
        value: Any = None
        problem = entry_problem(entry) if entry is not None else None
        if entry is not None and problem is None:
            try:
                value = self.codec.decode(entry.value)
            except UnsupportedEntryError as exc:
                return {"success": False, "found": True, "value": None, "expired": entry.is_expired(self._store_now()),
                        "key": entry.key, "error": f"entry cannot be decoded: {exc}",
                        **({"metadata": dict(entry.metadata)} if include_metadata else {})}
            except Exception as exc:  # noqa: BLE001 - any undecodable value is corrupt
                problem = str(exc) or type(exc).__name__
        if entry is None or problem is not None:
            out: dict[str, Any] = {"success": True, "found": False, "value": None, "expired": False}
            if problem is not None and entry is not None:
                out["removed"] = self._drop_corrupt(entry.key, None, problem)
            if include_metadata:
                out["metadata"] = None
            return out
        out = {"success": True, "found": True, "value": value, "expired": entry.is_expired(self._store_now()), "key": entry.key}
        if include_metadata:
            out["metadata"] = dict(entry.metadata)
        return out

    def invalidate(
        self,
        key: str | None = None,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Delete by exact ``key``, by glob ``pattern`` (``cache:extract:*``), by ``metadata_filter``
        equality, or by pattern and filter together. Returns ``{"success", "deleted_count", "deleted_keys"}``.
        """
        if key is None and pattern is None and not metadata_filter:
            return {"success": False, "deleted_count": 0, "deleted_keys": [],
                    "error": "say what to invalidate: key=..., pattern=... (a glob such as 'cache:extract:*') or metadata_filter={...}"}
        deleted: list[str] = []
        try:
            if key is not None:
                for candidate in _key_candidates(key):
                    if self.store.delete(candidate):
                        deleted.append(candidate)
                        break
            if pattern is not None or metadata_filter:
                keys = self.store.find(pattern=pattern, metadata_filter=metadata_filter)
                total = len(keys)
                for start in range(0, total, _INVALIDATE_BATCH):
                    chunk = keys[start:start + _INVALIDATE_BATCH]
                    self.store.delete_many(chunk)
                    deleted.extend(chunk)
                    if progress is not None:
                        progress(min(start + _INVALIDATE_BATCH, total), total)
        except Exception as exc:  # noqa: BLE001
            self._count(None, errors=1)
            return {"success": False, "deleted_count": len(deleted), "deleted_keys": deleted, "error": _describe(exc)}
        self._count(None, invalidated=len(deleted))
        return {"success": True, "deleted_count": len(deleted), "deleted_keys": deleted}

    def invalidate_action(self, action: str) -> dict[str, Any]:
        """Every entry stored by one action (metadata ``_cache_action``)."""
        return self.invalidate(metadata_filter={"_cache_action": action})

    def cleanup(self, limit: int | None = None, *, progress: Callable[[int, int | None], None] | None = None) -> dict[str, Any]:
        """Delete expired entries (all, or at most ``limit``) through the store's expiry index."""
        now = self._store_now()
        deleted = 0
        try:
            while limit is None or deleted < limit:
                batch = _CLEANUP_BATCH if limit is None else min(_CLEANUP_BATCH, limit - deleted)
                n = self.store.delete_expired(now, batch)
                deleted += n
                if progress is not None:
                    progress(deleted, limit)
                if n < batch:
                    break
        except Exception as exc:  # noqa: BLE001
            self._count(None, errors=1)
            return {"success": False, "deleted_count": deleted, "error": _describe(exc)}
        if deleted:
            self._count(None, cleanup_deleted=deleted)
        return {"success": True, "deleted_count": deleted}

    def key_for(self, action: str, args: Mapping[str, Any] | None = None, **key_options: Any) -> str:
        """The key ``wrap`` would use for these arguments (raises if it cannot be computed)."""
        return compute_key(action, args, **key_options)

    def pattern_for_action(self, action: str) -> str:
        """A glob matching every ``args``/``sha256``/``file_content`` key of ``action``."""
        return f"{KEY_PREFIX}{escape_glob(action)}:*"

    # --- decorator face -----------------------------------------------------------------

    def cached(self, fn: Callable[..., Any] | None = None, **options: Any) -> Any:
        """``@cache.cached`` / ``@cache.cached(ttl_seconds=..., key=..., ignore=..., version=..., scope=...)``."""
        from .decorator import cached

        return cached(fn, cache=self, **options)


def _key_candidates(key: str) -> list[str]:
    """A key as given, and with the ``cache:`` prefix that ``wrap(key=...)`` adds, if it lacks one."""
    return [key] if key.startswith(KEY_PREFIX) else [key, KEY_PREFIX + key]


def _describe(exc: BaseException) -> str:
    """An exception as the text a response or stats may show: never a password or token."""
    return redact_secrets(str(exc))


def _counter_name(name: str | tuple[str, str]) -> str:
    if isinstance(name, tuple):
        return f"{STATS_PREFIX}action:{name[0]}:{name[1]}"
    return STATS_PREFIX + name


def _check_probability(p: float) -> None:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"cleanup_probability must be between 0.0 and 1.0, not {p!r}")


def _finish_counts(bucket: dict[str, float]) -> None:
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


_default_cache: Cache | None = None
_default_lock = threading.Lock()


def default_cache() -> Cache:
    """The process-wide cache the bare ``@cached`` decorator uses (``$ACTIONCACHE_URL`` or the user cache dir)."""
    global _default_cache
    if _default_cache is None:
        with _default_lock:
            if _default_cache is None:
                _default_cache = Cache()
    return _default_cache


def set_default_cache(cache: Cache | None) -> None:
    global _default_cache
    _default_cache = cache
