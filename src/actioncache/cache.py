"""The cache core: ``Cache.wrap/get/invalidate/cleanup/stats`` over one :class:`CacheStore`.

Rules this module keeps:

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
import queue
import random
import threading
import time
import weakref
from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Mapping, NamedTuple, overload

from ._deprecated import deprecated
from ._drivers import adrive, drive, run_async, run_sync
from ._flow import Flow
from ._log import log
from ._memo import Memoized
from ._metadata import fresh_until
from ._options import (
    DEFAULT_MAX_VALUE_BYTES,
    StoreOptions,
    check_lock_timeout,
    check_metadata,
    check_probability,
    check_stale_ttl,
)
from ._outcomes import Lookup, Outcome, is_failure
from ._refresh import REFRESH_EXIT_WAIT_S, spawn_task, spawn_task_offloaded, spawn_thread
from ._stats import STATS_PREFIX, describe
from ._time import DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS, iso_utc, resolve_ttl
from .codec import DEFAULT_COMPRESS_THRESHOLD_BYTES, Codec, make_codec
from .decision import ALWAYS, Decision, PolicyHook, PolicyProvider
from .errors import CacheWarning, ConfigError, ConfigTypeError, HashError, KeyStrategyError, UnsupportedEntryError
from .events import Observer
from .keys import KEY_PREFIX, KEY_STRATEGIES, compute_key
from .stores.base import CacheStore, entry_problem, escape_glob, open_store, redact_url

if TYPE_CHECKING:  # annotations only: importing the typed dicts and protocols costs a hit's time at start-up
    from datetime import timedelta

    from .types import CachedFunction, CleanupResponse, GetResponse, InvalidateResponse, P, R, StatsReport, WrapResponse

__all__ = ["ALWAYS", "DEFAULT_MAX_VALUE_BYTES", "DEFAULT_TTL_SECONDS", "MAX_TTL_SECONDS", "STATS_PREFIX", "Cache",
           "CacheWarning", "Decision", "PolicyHook", "cached", "default_cache", "is_failure", "iso_utc", "resolve_ttl",
           "set_default_cache"]


DEFAULT_CLEANUP_PROBABILITY = 0.05
DEFAULT_CLEANUP_LIMIT = 5
_CLEANUP_BATCH = 1000
_INVALIDATE_BATCH = 500


_live_caches: weakref.WeakSet[Cache] = weakref.WeakSet()


def _flush_all_at_exit() -> None:
    caches = list(_live_caches)
    # A short-lived process (a CLI run) that served a stale value started its refresh in a daemon
    # thread: let it finish (bounded), or release its lease, so the next process is not left
    # waiting for a lease nobody renews.
    deadline = time.monotonic() + REFRESH_EXIT_WAIT_S
    for cache in caches:
        cache.flow.stale.settle(deadline)
    for cache in caches:
        cache.flush_stats()
    # The writer thread may be inside a store's driver right now: let it finish that write and stop
    # (a daemon thread cut off inside a C++ driver at shutdown aborts the process), then write the rest.
    if _dropped_writer and _dropped_writer[0].is_alive():
        _dropped.put(None)
        _dropped_writer[0].join(timeout=5)
    _write_dropped(block=False)


# Counters of caches dropped without close(): written by one daemon thread. A finalizer may run at
# any allocation (a collection), also while this very thread holds the counters' lock or the
# store's connection, so it only queues (SimpleQueue.put is safe in a finalizer); the thread, or
# the exit handler, writes.
_dropped: queue.SimpleQueue[Flow | None] = queue.SimpleQueue()
_dropped_writer: list[threading.Thread] = []


def _drop(flow: Flow) -> None:
    _dropped.put(flow)
    if not _dropped_writer or not _dropped_writer[0].is_alive():
        writer = threading.Thread(target=_write_dropped, name="actioncache-dropped-counters", daemon=True)
        _dropped_writer[:] = [writer]
        writer.start()


def _write_dropped(block: bool = True) -> None:
    while True:
        try:
            flow = _dropped.get(block=block, timeout=30 if block else None)
        except queue.Empty:
            return
        if flow is None:  # the exit handler's turn
            return
        try:
            flow.flush_stats()
        except Exception as exc:  # noqa: BLE001 - counting must never fail anyone
            log.debug("writing the counters of a dropped cache failed: %s", exc)


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
        default_ttl: float | timedelta = DEFAULT_TTL_SECONDS,
        cleanup_probability: float = DEFAULT_CLEANUP_PROBABILITY,
        cleanup_limit: int = DEFAULT_CLEANUP_LIMIT,
        policy_hook: PolicyHook | None = None,
        stats_flush_s: float = 5.0,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
        compress_threshold_bytes: int | None = DEFAULT_COMPRESS_THRESHOLD_BYTES,
        max_size_bytes: int | str | None = None,
        eviction: str | None = None,
        max_value_bytes: int | None = DEFAULT_MAX_VALUE_BYTES,
        default_ttl_seconds: float | None = None,
    ) -> None:
        """``default_ttl``: how long an entry lives when a call gives no TTL (seconds or a
        ``timedelta``; 60 days). ``default_ttl_seconds`` is its old spelling."""
        if default_ttl_seconds is not None:
            deprecated("Cache(default_ttl_seconds=...)", "Cache(default_ttl=...)")
            if default_ttl != DEFAULT_TTL_SECONDS:
                raise ConfigError("a default TTL given twice: default_ttl= and default_ttl_seconds=; give default_ttl=")
            default_ttl = default_ttl_seconds
        if store is not None and url is not None:
            raise ConfigError("give either a store URL or store=..., not both")
        for given in (url, store):
            if given is not None and not isinstance(given, str) and not _is_store(given):
                raise ConfigTypeError(f"Cache() takes a store URL string ('sqlite:///path/cache.db', 'redis://host:6379/0', "
                                f"'memory://', ...) or store=<a CacheStore>, not {type(given).__name__} {given!r:.60}")
        if isinstance(store, str):
            raise ConfigTypeError(f"store= takes a CacheStore object; pass a URL as the first argument: Cache({store!r})")
        limits = {name: value for name, value in (("max_size_bytes", max_size_bytes), ("eviction", eviction))
                  if value is not None}
        if limits and store is not None:
            raise ConfigError("a size limit belongs to the store: pass max_size_bytes=/eviction= to the store's "
                             "constructor or its URL (?max_size_bytes=...&eviction=lru), or give Cache a URL")
        # The flow owns the store, codec, counters and flights; wrap, awrap and @cached drive it.
        self.flow = Flow(store if store is not None else open_store(url, **limits),
                         make_codec(codec, secret, compress_threshold_bytes),
                         clock=clock, rng=rng or random.Random(), stats_flush_s=stats_flush_s,
                         max_value_bytes=max_value_bytes)
        # In seconds, whatever the spelling given.
        self.default_ttl_seconds = resolve_ttl(ttl=default_ttl, ttl_name="default_ttl_seconds" if default_ttl_seconds
                                               is not None else "default_ttl")
        check_probability(cleanup_probability)
        self.cleanup_probability = cleanup_probability
        self.cleanup_limit = cleanup_limit
        self.policy_hook = policy_hook
        _live_caches.add(self)
        # A Cache dropped without close() (one made per call) still writes what it counted: when
        # it is garbage-collected (at exit, _flush_all_at_exit covers the live ones).
        weakref.finalize(self, _drop, self.flow).atexit = False
        # atexit runs handlers last-registered-first. Re-registering after the store is open puts
        # the stats flush ahead of any exit hook the store's module installed (blob-sqlite uploads
        # its file at exit: the counters must be in it by then).
        atexit.unregister(_flush_all_at_exit)
        atexit.register(_flush_all_at_exit)

    @property
    def store(self) -> CacheStore:
        return self.flow.store

    @store.setter
    def store(self, store: CacheStore) -> None:
        self.flow.use_store(store)

    @property
    def codec(self) -> Codec:
        return self.flow.codec

    @codec.setter
    def codec(self, codec: Codec) -> None:
        self.flow.use_codec(codec)

    @property
    def stats_flush_s(self) -> float:
        return self.flow.stats.flush_s

    @stats_flush_s.setter
    def stats_flush_s(self, seconds: float) -> None:
        self.flow.stats.flush_s = seconds

    @property
    def url(self) -> str:
        # Shown in stats, the CLI and logs: never with the password a server URL may carry.
        return redact_url(getattr(self.store, "url", type(self.store).__name__))

    def __repr__(self) -> str:
        return f"Cache({self.url!r})"

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.flush_stats()
        try:
            self.store.close()
        except Exception as exc:  # noqa: BLE001 - closing must not raise over the user's work
            log.warning("closing store %s failed: %s", self.url, exc)

    # --- stats --------------------------------------------------------------------------

    def flush_stats(self) -> str | None:
        """Write buffered counters to the store; on failure keep them for the next try."""
        return self.flow.flush_stats()

    def stats(self) -> StatsReport:
        """Totals across every process that used this store, plus this process's ``session`` counts."""
        return self.flow.stats.report(self.store, self.url)

    # --- observers (actioncache.events) ---------------------------------------------------

    def add_observer(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(CacheEvent)`` on every hit, miss, store, error and lookup; returns a remover."""
        if not callable(observer):
            raise ConfigError(f"an observer is a callable taking one CacheEvent, not {type(observer).__name__}")
        return self.flow.observe(observer)

    # --- policy -------------------------------------------------------------------------

    def decide(self, scope: str | None, action: str) -> Decision:
        """What the policy allows for one call (``lookup``, ``store``, ``reason``); bypasses and
        phase blocks are counted. Calls without a scope cache as always unless a custom hook says otherwise."""
        hook = self.policy_hook
        if scope is None and (hook is None or getattr(hook, "scoped_only", False)):
            return ALWAYS  # calls without a scope cache as always, whatever the loop's mode
        if hook is None:
            hook = _policy().attach(self)  # the built-in policy, installed by the package root
        decision = hook.decide(scope, action)
        if not (decision.lookup and decision.store):
            self.flow.count(action, policy_bypass=1)
        if getattr(decision, "phase_blocked", False):
            self.flow.count(action, phase_blocked=1)
        return decision

    def policy(self, mode: str | None = None, scopes: Any = None, phase: str | None = None, **options: Any) -> Any:
        """Context manager: the cache mode, enabled scopes and phase for calls that carry a ``scope=``.

        ``with cache.policy(mode="use", scopes="verify,read", phase="REPORT"): ...``. Fields not given
        keep the enclosing policy (an outer block, else ``CACHE_MODE``/``CACHE_SCOPE``/``CACHE_PHASE``
        and the config file). The block is held in a context variable, so other threads and tasks
        keep their own. Calls without a scope are not affected. See ``actioncache.policy``.
        """
        return _policy().block(self, mode=mode, scopes=scopes, phase=phase, **options)

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
        ttl: float | timedelta | None = None,
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
        stale_ttl_seconds: float | None = None,
        serve_stale_on_error: bool = False,
    ) -> WrapResponse:
        """Run ``fn(**args)`` unless a live cached result exists; return the response below.

        ``{"success": True, "result": ..., "_cache_hit": bool, "_cache_key": str}`` (plus
        ``_cache_created_at`` on a hit, ``_cache_error`` when the cache failed but the action ran).
        On failure ``success`` is False with ``error``; failures are never cached.
        """
        check_lock_timeout(lock_timeout_s)
        call = self._prepare(action, args, metadata, key=key, key_strategy=key_strategy, key_source=key_source,
                             ttl=ttl, ttl_seconds=ttl_seconds, ttl_hours=ttl_hours, ttl_days=ttl_days,
                             skip_cache=skip_cache,
                             cache_enabled=cache_enabled, cleanup_probability=cleanup_probability,
                             cleanup_limit=cleanup_limit, scope=scope, stale_ttl_seconds=stale_ttl_seconds)
        if call.hit_response is not None:
            return call.hit_response
        if call.key is None or not call.decision.store:
            return _respond_fresh(call, *run_sync(fn, call.args))
        flow, key = self.flow, call.key
        stale = call.stale
        if stale is not None and flow.stale.within_window(stale, call.store.stale_ttl_s):
            flow.stale.start(key, action, call.store, lambda: run_sync(fn, call.args), lock_timeout_s, spawn_thread)
            return self._respond_stale(call, stale.value, stale.entry)
        with flow.threads(key) as contended:
            steps = flow.miss(key, action, call.store, contended=contended, lookup=call.decision.lookup, lock=lock,
                              lease_s=lock_timeout_s)
            outcome = drive(steps, lambda: flow.take_lease(key, lock_timeout_s), lambda: run_sync(fn, call.args))
        return self._respond(call, outcome, serve_stale_on_error)

    async def awrap(
        self,
        action: str,
        fn: Callable[..., Awaitable[Any]],
        args: Mapping[str, Any] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
        lock: bool = False,
        lock_timeout_s: float = 60.0,
        serve_stale_on_error: bool = False,
        **options: Any,
    ) -> WrapResponse:
        """``wrap`` for a coroutine function; concurrent tasks on one cold key run it once.

        ``options`` are wrap's key, TTL and control options (``key=``, ``key_strategy=``, ``ttl_*=``,
        ``skip_cache=``, ``cache_enabled=``, ``cleanup_*=``, ``scope=``); an unknown one is a TypeError.
        """
        check_lock_timeout(lock_timeout_s)
        offload = self.flow.offload  # a networked store is called from worker threads (_drivers.Offload)
        if offload is None:
            call = self._prepare(action, args, metadata, **options)
        else:
            call = await offload(partial(self._prepare, action, args, metadata, **options))
        if call.hit_response is not None:
            return call.hit_response
        if call.key is None or not call.decision.store:
            return _respond_fresh(call, *await run_async(fn, call.args))
        flow, key = self.flow, call.key
        stale = call.stale
        if stale is not None and offload is not None:
            if stale.stale and await offload(flow.stale.within_window, stale, call.store.stale_ttl_s):
                import asyncio  # lazy: loaded already, a loop is running
                spawn = spawn_task_offloaded(asyncio.get_running_loop(), offload)
                await offload(flow.stale.start, key, action, call.store, lambda: run_async(fn, call.args),
                              lock_timeout_s, spawn)
                return await offload(self._respond_stale, call, stale.value, stale.entry)
        elif stale is not None and flow.stale.within_window(stale, call.store.stale_ttl_s):
            flow.stale.start(key, action, call.store, lambda: run_async(fn, call.args), lock_timeout_s, spawn_task)
            return self._respond_stale(call, stale.value, stale.entry)
        async with flow.tasks(key) as contended:
            steps = flow.miss(key, action, call.store, contended=contended, lookup=call.decision.lookup, lock=lock,
                              lease_s=lock_timeout_s)
            outcome = await adrive(steps, lambda: flow.atake_lease(key, lock_timeout_s),
                                   lambda: run_async(fn, call.args), offload)
        if offload is not None and outcome.hit:  # the hit's tally may flush the counters to the store
            return await offload(self._respond, call, outcome, serve_stale_on_error)
        return self._respond(call, outcome, serve_stale_on_error)

    def _prepare(self, action: str, args: Mapping[str, Any] | None, metadata: Mapping[str, Any] | None, *,
                 key: str | None = None, key_strategy: str = "args", key_source: str | None = None,
                 ttl: float | timedelta | None = None, ttl_seconds: float | None = None,
                 ttl_hours: float | None = None, ttl_days: float | None = None,
                 skip_cache: bool = False, cache_enabled: bool = True, cleanup_probability: float | None = None,
                 cleanup_limit: int | None = None, scope: str | None = None,
                 stale_ttl_seconds: float | None = None) -> _Call:
        # Configuration mistakes raise before anything runs; data problems (an argument that
        # cannot be keyed, a file that cannot be hashed) only turn caching off for this call.
        if not isinstance(action, str) or not action:
            raise ConfigError("action must be a non-empty name, e.g. 'extract' or 'llm.call'")
        if args is not None and not isinstance(args, Mapping):
            raise ConfigError(f"args must be a dict of keyword arguments, not {type(args).__name__}")
        if key_strategy not in KEY_STRATEGIES:
            raise ConfigError(f"unknown key_strategy {key_strategy!r}; use one of {', '.join(KEY_STRATEGIES)}")
        if key_strategy == "custom" and key is None:
            raise ConfigError("key_strategy 'custom' needs key=...: the key text")
        if key_strategy in ("sha256", "file_content") and key is None and not key_source:
            raise ConfigError(f"key_strategy {key_strategy!r} needs key_source=...: the argument to hash")
        for name, flag in (("skip_cache", skip_cache), ("cache_enabled", cache_enabled)):
            if not isinstance(flag, bool):  # 'false' is a non-empty string: truthy, the opposite meant
                raise ConfigTypeError(f"{name} must be True or False, not {flag!r}")
        ttl_s = resolve_ttl(ttl_seconds, ttl_hours, ttl_days, self.default_ttl_seconds, ttl=ttl)
        stale_s = check_stale_ttl(stale_ttl_seconds, ttl_s)
        p = self.cleanup_probability if cleanup_probability is None else cleanup_probability
        check_probability(p)
        limit = self.cleanup_limit if cleanup_limit is None else int(cleanup_limit)
        args = dict(args or {})
        if metadata is not None:
            check_metadata(metadata)
        errors: list[str] = []
        decision = self.decide(scope, action) if cache_enabled else Decision(False, False, "cache_enabled is false")
        if skip_cache:
            decision = Decision(False, decision.store, decision.reason or "skip_cache")
        cache_key: str | None = None
        flow = self.flow
        if decision.lookup or decision.store:
            try:
                cache_key = compute_key(action, args, key=key, key_strategy=key_strategy, key_source=key_source)
            except (KeyStrategyError, HashError) as exc:
                flow.count(action, errors=1)
                errors.append(f"no cache key, running uncached: {exc}")
        call = _Call(action, args, cache_key, decision,
                     StoreOptions(ttl_s, "action_result", metadata, p, limit, stale_s), errors, None)
        if cache_key is not None and decision.lookup:
            found = flow.lookup(cache_key, action)
            if found.hit:
                return call._replace(hit_response=self._respond_hit(call, found.value, found.entry))
            if found.error:
                errors.append(found.error)
            if not flow.stale.within_window(found, stale_s):
                flow.count(action, misses=1)
            if found.entry is not None:
                call = call._replace(stale=found)
        return call

    def _respond_stale(self, call: _Call, value: Any, entry: Any, error: str | None = None) -> WrapResponse:
        """A value past its TTL served on purpose (stale-while-revalidate, or the action failed)."""
        self.flow.count(call.action, stale_served=1)
        response = self._respond_hit(call, value, entry)
        response["_cache_stale"] = True
        if error:
            response["_cache_error"] = f"the action failed, so a stale value was served: {error}"
        return response

    def _respond_hit(self, call: _Call, value: Any, entry: Any) -> WrapResponse:
        self.flow.record_hit(entry, call.action)
        return {
            "success": True,
            "result": value,
            "_cache_hit": True,
            "_cache_key": call.key,
            "_cache_created_at": entry.metadata.get("_cache_created_at") or iso_utc(entry.created_at),
        }

    def _respond(self, call: _Call, outcome: Outcome, serve_stale_on_error: bool = False) -> WrapResponse:
        if outcome.hit:
            return self._respond_hit(call, outcome.value, outcome.entry)
        if serve_stale_on_error:
            served, stale, failed = self.flow.stale.on_failure(call.stale, outcome.ok, outcome.value)
            if served:
                return self._respond_stale(call, stale, call.stale.entry, failed)  # type: ignore[union-attr]
        response = _respond_fresh(call, outcome.ok, outcome.value)
        if outcome.problem:
            prior = response.get("_cache_error")
            response["_cache_error"] = f"{prior}; {outcome.problem}" if prior else outcome.problem
        return response

    # --- inspection and maintenance -----------------------------------------------------

    def get(self, key: str, include_metadata: bool = False) -> GetResponse:
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
            self.flow.count(None, errors=1)
            return {"success": False, "found": False, "value": None, "expired": False, "error": describe(exc)}
        value: Any = None
        problem = entry_problem(entry) if entry is not None else None
        if entry is not None and problem is None:
            try:
                value = self.codec.decode(entry.value)
            except UnsupportedEntryError as exc:
                failed: GetResponse = {"success": False, "found": True, "value": None,
                                       "expired": entry.is_expired(self.flow.now()), "key": entry.key,
                                       "error": f"entry cannot be decoded: {exc}"}
                if include_metadata:
                    failed["metadata"] = dict(entry.metadata)
                return failed
            except Exception as exc:  # noqa: BLE001 - any undecodable value is corrupt
                problem = str(exc) or type(exc).__name__
        if entry is None or problem is not None:
            out: GetResponse = {"success": True, "found": False, "value": None, "expired": False}
            if problem is not None and entry is not None:
                out["removed"] = self.flow.drop_corrupt(entry.key, None, problem)
            if include_metadata:
                out["metadata"] = None
            return out
        now = self.flow.now()
        fresh = fresh_until(entry)
        past_fresh = fresh is not None and fresh <= now
        out = {"success": True, "found": True, "value": value, "expired": entry.is_expired(now) or past_fresh,
               "key": entry.key}
        if past_fresh and not entry.is_expired(now):
            out["stale"] = True  # past its TTL, still inside the stale window its writer allowed
        if include_metadata:
            out["metadata"] = dict(entry.metadata)
        return out

    def lookup(self, action: str, key: str) -> WrapResponse | None:
        """The live value under ``key`` as ``wrap``'s hit response, or None; counted as wrap counts.

        For faces that cannot hand ``wrap`` a function, such as a stream that is stored only after
        its consumer has read it whole: look up here, then store with ``wrap(..., skip_cache=True)``.
        """
        if not isinstance(action, str) or not action:
            raise ConfigError("action must be a non-empty name, e.g. 'openai.chat'")
        key = compute_key(action, None, key=key)
        found = self.flow.lookup(key, action)
        if not found.hit:
            self.flow.count(action, misses=1)
            return None
        call = _Call(action, {}, key, ALWAYS, StoreOptions(0.0, "action_result", None, 0.0, 0), [], None)
        return self._respond_hit(call, found.value, found.entry)

    def invalidate(
        self,
        key: str | None = None,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> InvalidateResponse:
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
            self.flow.count(None, errors=1)
            return {"success": False, "deleted_count": len(deleted), "deleted_keys": deleted, "error": describe(exc)}
        self.flow.count(None, invalidated=len(deleted))
        return {"success": True, "deleted_count": len(deleted), "deleted_keys": deleted}

    def invalidate_action(self, action: str) -> InvalidateResponse:
        """Every entry stored by one action (metadata ``_cache_action``)."""
        return self.invalidate(metadata_filter={"_cache_action": action})

    def cleanup(self, limit: int | None = None, *, progress: Callable[[int, int | None], None] | None = None) -> CleanupResponse:
        """Delete expired entries (all, or at most ``limit``) through the store's expiry index."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ConfigError(f"cleanup limit must be a whole number >= 0, or None for every expired entry; not {limit!r}")
        now = self.flow.now()
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
            self.flow.count(None, errors=1)
            return {"success": False, "deleted_count": deleted, "error": describe(exc)}
        if deleted:
            self.flow.count(None, cleanup_deleted=deleted)
        return {"success": True, "deleted_count": deleted}

    def key_for(self, action: str, args: Mapping[str, Any] | None = None, **key_options: Any) -> str:
        """The key ``wrap`` would use for these arguments (raises if it cannot be computed)."""
        return compute_key(action, args, **key_options)

    def pattern_for_action(self, action: str) -> str:
        """A glob matching every ``args``/``sha256``/``file_content`` key of ``action``."""
        return f"{KEY_PREFIX}{escape_glob(action)}:*"

    # --- decorator face -----------------------------------------------------------------

    @overload
    def cached(self, fn: Callable[P, R], /) -> CachedFunction[P, R]: ...

    @overload
    def cached(
        self,
        fn: None = None,
        /,
        *,
        ttl: float | timedelta | None = None,
        ttl_seconds: float | None = None,
        ttl_hours: float | None = None,
        ttl_days: float | None = None,
        key: Callable[..., Any] | None = None,
        ignore: Iterable[str] = (),
        version: Any = None,
        code_hash: bool = False,
        scope: str | None = None,
        skip_cache: bool = False,
        lock: bool = False,
        lock_timeout_s: float = 60.0,
        name: str | None = None,
        stale_ttl_seconds: float | None = None,
        serve_stale_on_error: bool = False,
    ) -> Callable[[Callable[P, R]], CachedFunction[P, R]]: ...

    def cached(self, fn: Callable[P, R] | None = None, /, **options: Any) -> Any:
        """``@cache.cached`` / ``@cache.cached(ttl_seconds=..., key=..., ignore=..., version=..., scope=...)``:
        :func:`cached` with this cache."""
        if "cache" in options:
            raise ConfigTypeError("Cache.cached(cache=...) names a second cache; use actioncache.cached(cache=...) instead")
        decorate: Callable[[Callable[P, R]], CachedFunction[P, R]] = cached(cache=self, **options)
        return decorate(fn) if fn is not None else decorate


def _policy() -> PolicyProvider:
    """The built-in policy (``actioncache.policy``), imported on first use: only scoped calls pay for it."""
    from .policy import provider

    return provider


def _is_store(obj: Any) -> bool:
    return all(callable(getattr(obj, name, None)) for name in ("get", "put", "delete", "find"))


def _key_candidates(key: str) -> list[str]:
    """The key ``wrap(key=...)`` stores under first (``cache:`` added when missing), then the key as
    given: ``invalidate(key="user:42")`` after ``wrap(key="user:42")`` must reach ``cache:user:42``
    even when some other entry (an LTM value, say) is stored under the bare ``user:42``."""
    return [key] if key.startswith(KEY_PREFIX) else [KEY_PREFIX + key, key]


class _Call(NamedTuple):
    """One ``wrap``/``awrap`` call, prepared: validated options, the decision, the key, a hit if found."""

    action: str
    args: dict[str, Any]
    key: str | None
    decision: Decision
    store: StoreOptions
    errors: list[str]
    hit_response: WrapResponse | None
    stale: Lookup | None = None  # the expired entry the lookup found (for stale serving)


def _respond_fresh(call: _Call, ok: bool, result: Any, duration_ms: float = 0.0) -> WrapResponse:
    key = call.key
    response: WrapResponse
    if not ok:
        response = {"success": False, "error": result, "_cache_hit": False, "_cache_key": key}
    elif is_failure(result):
        error = result.get("error") or "the action returned success: false"
        response = {"success": False, "result": result, "error": error, "_cache_hit": False, "_cache_key": key}
    else:
        response = {"success": True, "result": result, "_cache_hit": False, "_cache_key": key}
    if call.errors:
        response["_cache_error"] = "; ".join(call.errors)
    if call.decision.reason and not (call.decision.lookup and call.decision.store):
        response["_cache_bypass"] = call.decision.reason
    return response


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


@overload
def cached(fn: Callable[P, R], /) -> CachedFunction[P, R]: ...


@overload
def cached(
    fn: None = None,
    /,
    *,
    cache: Cache | None = None,
    ttl: float | timedelta | None = None,
    ttl_seconds: float | None = None,
    ttl_hours: float | None = None,
    ttl_days: float | None = None,
    key: Callable[..., Any] | None = None,
    ignore: Iterable[str] = (),
    version: Any = None,
    code_hash: bool = False,
    scope: str | None = None,
    skip_cache: bool = False,
    lock: bool = False,
    lock_timeout_s: float = 60.0,
    name: str | None = None,
    stale_ttl_seconds: float | None = None,
    serve_stale_on_error: bool = False,
) -> Callable[[Callable[P, R]], CachedFunction[P, R]]: ...


def cached(
    fn: Callable[P, R] | None = None,
    /,
    *,
    cache: Cache | None = None,
    ttl: float | timedelta | None = None,
    ttl_seconds: float | None = None,
    ttl_hours: float | None = None,
    ttl_days: float | None = None,
    key: Callable[..., Any] | None = None,
    ignore: Iterable[str] = (),
    version: Any = None,
    code_hash: bool = False,
    scope: str | None = None,
    skip_cache: bool = False,
    lock: bool = False,
    lock_timeout_s: float = 60.0,
    name: str | None = None,
    stale_ttl_seconds: float | None = None,
    serve_stale_on_error: bool = False,
) -> CachedFunction[P, R] | Callable[[Callable[P, R]], CachedFunction[P, R]]:
    """Memoize ``fn`` (sync or async) in ``cache`` (default: the process-wide default cache).

    Works bare (``@cached``) or configured (``@cached(ttl_seconds=3600, ignore=["verbose"])``).
    The wrapper keeps the function's signature for type checkers and gains ``cache_key(*a, **kw)``,
    ``invalidate(*a, **kw)`` (no arguments: every entry of this function), ``refresh(*a, **kw)``
    (run and overwrite) and ``uncached`` (:class:`actioncache.types.CachedFunction`).
    """
    if cache is not None and not isinstance(cache, Cache):
        raise ConfigTypeError(f"cache= takes a Cache, not {type(cache).__name__}")
    check_lock_timeout(lock_timeout_s)

    def decorate(func: Callable[P, R]) -> CachedFunction[P, R]:
        memo = Memoized(func, cache, default_cache, resolve_ttl(ttl_seconds, ttl_hours, ttl_days, ttl=ttl)
                        if ttl is not None or ttl_seconds is not None or ttl_hours is not None or ttl_days is not None
                        else None, key, ignore, version, code_hash, scope, skip_cache, lock, lock_timeout_s, name)
        memo.stale_ttl_s = check_stale_ttl(stale_ttl_seconds, memo.ttl_override or 0.0)
        memo.serve_stale_on_error = bool(serve_stale_on_error)
        built: CachedFunction[P, R] = memo.build()
        return built

    if fn is not None:
        if not callable(fn):
            raise ConfigTypeError("@cached takes keyword options only, e.g. @cached(ttl_seconds=60)")
        return decorate(fn)
    return decorate
