"""``@cached``'s machinery: keys from a function's arguments and identity, and the sync and async
wrappers that drive the one miss path (:meth:`actioncache._flow.Flow.miss`).

The key is ``cache:{module.qualname}:{sha256}`` over the canonical JSON of the call's arguments
bound through the signature (defaults applied, so ``f(1)``, ``f(x=1)`` and ``f(1, y=2)`` with a
default ``y=2`` share one entry), minus ``ignore=`` names, plus ``version=``, what tells the
function apart from others of its name (:func:`identity_extras`: its project, and for lambdas,
closures and scripts their code) and, with ``code_hash=True``, a hash of the function's code that
ignores line numbers.

A hit returns the stored value itself. Exceptions propagate and, like results with
``success: false``, are never stored. The hit path is the one to keep short: no signature
binding when the call is positional-only, one store read, one decode.

The sync and async wrappers (:meth:`Memoized.sync_wrapper`, :meth:`Memoized.async_wrapper`) are
written out twice on purpose: a shared helper would add a frame (and an ``await``) to every hit.
Everything after a miss is shared (``Flow.miss`` and the drivers).

This module sits under the facade: :func:`actioncache.cache.cached` and ``Cache.cached`` hand it
the cache (or the way to find the default one); it imports no face.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ._drivers import adrive, aguarded, atimed, drive, guarded, timed
from ._options import StoreOptions
from ._outcomes import Lookup
from ._project import project_of
from ._refresh import spawn_task, spawn_task_offloaded, spawn_thread
from .errors import CacheWarning, ConfigError, KeyStrategyError
from .keys import KEY_PREFIX, canonical_json
from .stores.base import escape_glob

if TYPE_CHECKING:
    from .cache import Cache
    from .types import InvalidateResponse

__all__ = ["KeyBuilder", "Memoized", "code_fingerprint", "identity_extras"]

_SELF_NAMES = ("self", "cls")
# Floats are left out: 0.0 == -0.0 (same type, same hash) yet they are different arguments with
# different keys, so a memo keyed on them would answer one with the other's key.
_MEMO_TYPES = frozenset({str, int, bool, type(None)})
_MEMO_SIZE = 4096


def code_fingerprint(fn: Callable[..., Any]) -> str:
    """A hash of what a function does: bytecode, constants and names, recursively; no line numbers."""
    digest = hashlib.sha256()

    def feed(code: types.CodeType) -> None:
        digest.update(code.co_code)
        digest.update(repr(code.co_names).encode())
        digest.update(repr(code.co_varnames).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                feed(const)
            else:
                digest.update(repr(const).encode())

    import inspect  # at decoration only: importing inspect costs more than a hit

    target = inspect.unwrap(fn)
    code = getattr(target, "__code__", None)
    if code is None:
        raise TypeError(f"code_hash=True needs a Python function, not {type(fn).__name__}")
    feed(code)
    return digest.hexdigest()[:16]


_FROZEN_SCALARS = (str, int, float, bool, type(None))


def _frozen(value: Any) -> bool:
    """A value that cannot change after the closure captured it: scalars and tuples of them."""
    return type(value) in _FROZEN_SCALARS or (type(value) in (tuple, frozenset) and all(map(_frozen, value)))


def identity_extras(fn: Callable[..., Any]) -> dict[str, Any]:
    """What tells this function apart from others of the same name, when the name alone cannot.

    ``module.qualname`` names one function only when it is defined once at module level. Lambdas
    all share ``<lambda>``, every closure a factory makes shares one qualname, and every script's
    functions live in ``__main__``: without more, they would answer each other's calls. So such
    functions add their code's fingerprint, a closure the values it captured that cannot change
    (numbers, strings, tuples of them; read once, when decorated), and a script its file path.
    A captured object of another kind (a client, a list) does not count: pass ``name=`` or
    ``version=`` to tell such functions apart. Every function adds its project
    (:func:`actioncache._project.project_of`): two repositories' ``helpers.summarize`` never share.
    """
    import inspect  # at decoration only: importing inspect costs more than a hit

    target = inspect.unwrap(fn)
    qualname = getattr(target, "__qualname__", "")
    module = getattr(target, "__module__", None)
    extras: dict[str, Any] = {}
    script = None
    if module == "__main__":
        script = getattr(sys.modules.get("__main__"), "__file__", None)
        if script:
            extras["f"] = os.path.realpath(script)
    else:
        project = project_of(getattr(getattr(target, "__code__", None), "co_filename", None)
                             or getattr(sys.modules.get(module or ""), "__file__", None))
        if project is not None:
            extras["p"] = project
    anonymous = "<lambda>" in qualname or "<locals>" in qualname or (module == "__main__" and not script)
    if anonymous and getattr(target, "__code__", None) is not None:
        extras["c"] = code_fingerprint(target)
    code = getattr(target, "__code__", None)
    closure = getattr(target, "__closure__", None) or ()
    captured = {}
    for name, cell in zip(getattr(code, "co_freevars", ()), closure):
        try:
            value = cell.cell_contents
        except ValueError:  # not bound yet
            continue
        if _frozen(value):
            captured[name] = value
    if captured:
        extras["cl"] = captured
    return extras


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def instance_identity(obj: Any, role: str) -> Any:
    """What a method's ``self`` (or ``cls``) contributes to its key: the class, and for an instance
    its state: ``obj.__cache_key__()`` when the class defines it, else every attribute in
    ``__dict__`` and ``__slots__``. State that cannot be keyed raises :class:`KeyStrategyError`
    naming the attribute and the two fixes (the call then runs uncached, with a warning)."""
    if isinstance(obj, type):
        return {"class": _class_name(obj)}
    cls = type(obj)
    if cls.__module__ == "builtins":  # a plain value passed as `self` to a function: itself
        return obj
    custom = getattr(obj, "__cache_key__", None)
    if custom is not None:
        return {"class": _class_name(cls), "state": custom()}
    state = dict(getattr(obj, "__dict__", None) or {})
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                state.setdefault(slot, getattr(obj, slot))
    try:
        canonical_json(state)
    except KeyStrategyError:
        for name, value in state.items():
            try:
                canonical_json(value)
            except KeyStrategyError:
                raise KeyStrategyError(
                    f"{role} ({cls.__qualname__}) cannot be keyed: its attribute {name!r} "
                    f"({type(value).__name__}) has no cache key; give {cls.__qualname__} a __cache_key__() that returns "
                    f"what its answers depend on, or pass ignore=[{role!r}] to share entries across every "
                    "instance on purpose") from None
        raise
    return {"class": _class_name(cls), "state": state}


class KeyBuilder:
    """Turns a call's arguments into a cache key; the positional-only fast path avoids bind()."""

    def __init__(self, fn: Callable[..., Any], name: str, ignore: Iterable[str], key: Callable[..., Any] | None,
                 version: Any, code_hash: bool, identify: bool = True) -> None:
        import inspect

        self.signature = inspect.signature(fn)
        params = list(self.signature.parameters.values())
        self.ignore = set(ignore)
        unknown = self.ignore - {p.name for p in params}
        if unknown:
            raise ConfigError(f"ignore= names {sorted(unknown)} that are not parameters of {name}")
        # A method's instance (or class) is part of what it answers from: two instances with
        # different state, or a subclass, must not answer each other. It is keyed by its class and
        # its state (instance_identity); ignore=["self"] shares entries across instances on purpose.
        self.self_name = params[0].name if params and params[0].name in _SELF_NAMES and \
            params[0].name not in self.ignore else None
        self.ignores_self = bool(params) and params[0].name in _SELF_NAMES and params[0].name in self.ignore
        self.key_fn = key
        self.prefix = f"{KEY_PREFIX}{name}:"
        extras: dict[str, Any] = identity_extras(fn) if identify else {}
        if version is not None:
            extras["v"] = version
        if code_hash:
            extras["c"] = code_fingerprint(fn)
        self.extras = canonical_json(extras)[1:-1] if extras else ""
        simple = all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
        self.fast_names = [p.name for p in params] if simple else None
        self.defaults = {p.name: p.default for p in params if p.default is not p.empty}
        self._memo: dict[tuple[Any, ...], str] = {}
        # A default that could change (a mutable one) would change the key of the same arguments.
        self.memoize = key is None and all(map(_frozen, self.defaults.values()))
        self.memoized = self._memo.get if self.memoize else None  # slot -> key, for the wrappers

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = self._bound(args, kwargs)
        if self.self_name is not None and self.self_name in bound:
            bound[self.self_name] = instance_identity(bound[self.self_name], self.self_name)
        return bound

    def _bound(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        names = self.fast_names
        if names is not None and not kwargs and len(args) <= len(names):
            bound = dict(zip(names, args))
            if len(args) < len(names):
                for name in names[len(args):]:
                    if name not in self.defaults:
                        raise TypeError(f"missing required argument {name!r}")
                    bound[name] = self.defaults[name]
        else:
            ba = self.signature.bind(*args, **kwargs)
            ba.apply_defaults()
            bound = dict(ba.arguments)
        for name in self.ignore:
            bound.pop(name, None)
        return bound

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        # Positional calls whose arguments are all plain scalars (the common case on a hot path)
        # remember their key: hashing a small tuple is far cheaper than canonical JSON plus SHA-256.
        # Each argument's exact type is part of the memo slot, because 1, 1.0 and True are equal in
        # Python (one dict slot) but spell differently in JSON; a float zero is never remembered,
        # because 0.0 == -0.0 spell differently too (every other pair of equal floats is one double).
        if not kwargs and self.memoize:
            try:
                if len(args) == 1:
                    arg = args[0]
                    slot: tuple[Any, ...] = (arg, type(arg))
                else:
                    slot = (args, tuple(map(type, args)))
                return self._memo[slot]
            except KeyError:
                if all(type(a) in _MEMO_TYPES and (type(a) is not float or a != 0.0) for a in args):
                    key = self._compute(args, kwargs)
                    if len(self._memo) >= _MEMO_SIZE:
                        self._memo.clear()
                    self._memo[slot] = key
                    return key
            except TypeError:  # unhashable argument
                pass
        return self._compute(args, kwargs)

    def _compute(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        if self.key_fn is not None:
            custom = self.key_fn(*args, **kwargs)
            if not isinstance(custom, str):
                custom = canonical_json(custom)
            if self.extras:  # version=, code_hash= and the function's identity count here too
                custom = custom + "\x00" + self.extras
            return self.prefix + hashlib.sha256(custom.encode("utf-8", "surrogatepass")).hexdigest()
        body = canonical_json(self.arguments(args, kwargs))
        if self.extras:
            body = body + "\x00" + self.extras
        return self.prefix + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


class CachedMethod:
    """``@cached`` on a method. Called through the class it is the function (``Shop.price(shop, x)``,
    ``Shop.price.invalidate(shop, x)``); reached through an instance it is bound to it, and so are
    its handles: ``shop.price.invalidate(x)`` deletes the entry ``shop.price(x)`` reads."""

    def __init__(self, wrapper: Callable[..., Any], is_async: bool) -> None:
        self._wrapper = wrapper
        functools.update_wrapper(self, wrapper)  # name, doc, __wrapped__ and the handles
        if is_async:
            _mark_coroutine(self)
            _mark_coroutine(AsyncBoundMethod)  # its instances: bound async methods
        self._bound_type = AsyncBoundMethod if is_async else BoundMethod

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._wrapper(*args, **kwargs)

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        return self._bound_type(self._wrapper, obj)

    def __repr__(self) -> str:
        return f"<cached method {self._wrapper.__qualname__}>"


class BoundMethod:
    """A cached method bound to its instance: the call and the handles pass the instance first."""

    __slots__ = ("__self__", "_wrapper")

    def __init__(self, wrapper: Callable[..., Any], obj: Any) -> None:
        self._wrapper = wrapper
        self.__self__ = obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._wrapper(self.__self__, *args, **kwargs)

    def cache_key(self, *args: Any, **kwargs: Any) -> str:
        return self._wrapper.cache_key(self.__self__, *args, **kwargs)  # type: ignore[attr-defined, no-any-return]

    def invalidate(self, *args: Any, **kwargs: Any) -> Any:
        """With arguments: the entry of this instance's call; with none: every entry of the method."""
        if not args and not kwargs:
            return self._wrapper.invalidate()  # type: ignore[attr-defined]
        return self._wrapper.invalidate(self.__self__, *args, **kwargs)  # type: ignore[attr-defined]

    def refresh(self, *args: Any, **kwargs: Any) -> Any:
        return self._wrapper.refresh(self.__self__, *args, **kwargs)  # type: ignore[attr-defined]

    @property
    def uncached(self) -> Callable[..., Any]:
        return types.MethodType(self._wrapper.uncached, self.__self__)  # type: ignore[attr-defined]

    @property
    def cache_name(self) -> str:
        return self._wrapper.cache_name  # type: ignore[attr-defined, no-any-return]

    def __getattr__(self, name: str) -> Any:  # __name__, __doc__, __wrapped__...: the function's
        return getattr(self._wrapper, name)

    def __repr__(self) -> str:
        return f"<bound cached method {self._wrapper.__qualname__} of {self.__self__!r}>"


class AsyncBoundMethod(BoundMethod):
    __slots__ = ()


def _mark_coroutine(target: Any) -> None:
    """Let asyncio (and inspect, on Python 3.12+) see a cached async method as a coroutine function."""
    import asyncio.coroutines
    import inspect

    marker = getattr(asyncio.coroutines, "_is_coroutine", None)
    if marker is not None:
        target._is_coroutine = marker
    mark = getattr(inspect, "markcoroutinefunction", None)
    if mark is not None:
        mark(target)


class Memoized:
    """One decorated function: its key builder, its options, and the wrappers that serve it.

    ``cache`` is the cache it was given (``Cache.cached``, ``cached(cache=...)``), else None: then
    every call asks ``default()`` for the process's default cache (``actioncache.cache.default_cache``).
    """

    def __init__(self, func: Callable[..., Any], cache: Cache | None, default: Callable[[], Cache],
                 ttl_s: float | None, key: Callable[..., Any] | None, ignore: Iterable[str], version: Any, code_hash: bool,
                 scope: str | None, skip_cache: bool, lock: bool, lock_timeout_s: float, name: str | None) -> None:
        self.func = func
        self._cache = cache
        self.default = default
        self.name = name or f"{func.__module__}.{func.__qualname__}"
        # An explicit name= says "calls under this name share results": nothing is added to it.
        self.keys = KeyBuilder(func, self.name, ignore, key, version, code_hash, identify=name is None)
        self.ttl_override = ttl_s  # checked by the caller (resolve_ttl); None: the cache's default
        self.scope = scope
        self.skip_cache = skip_cache
        self.plain = not skip_cache and scope is None  # then only a policy hook can change a call's plan
        self.lock = lock
        self.lock_timeout_s = lock_timeout_s
        self.stale_ttl_s = 0.0  # stale-while-revalidate window (seconds after the TTL)
        self.serve_stale_on_error = False

    @property
    def cache(self) -> Cache:
        return self._cache if self._cache is not None else self.default()

    def _key(self, args: tuple[Any, ...], kwargs: dict[str, Any], cache: Cache) -> str | None:
        try:
            return self.keys(args, kwargs)
        except KeyStrategyError as exc:
            cache.flow.count(self.name, errors=1)
            warnings.warn(f"{self.name}: running uncached: {exc}", CacheWarning, stacklevel=4)
            return None

    def _store_options(self, cache: Cache) -> StoreOptions:
        ttl = self.ttl_override if self.ttl_override is not None else cache.default_ttl_seconds
        return StoreOptions(ttl, "function_result", None, cache.cleanup_probability, cache.cleanup_limit,
                            self.stale_ttl_s)

    def _stale(self, cache: Cache, key: str, found: Any, run: Any, spawn: Any) -> Any:
        """Serve a value past its TTL (stale-while-revalidate) and refresh it in the background."""
        flow = cache.flow
        flow.stale.start(key, self.name, self._store_options(cache), run, self.lock_timeout_s, spawn)
        flow.record_hit(found.entry, self.name)
        flow.count(self.name, stale_served=1)
        return found.value

    def _stale_on_error(self, cache: Cache, found: Any, ok: bool, value: Any) -> tuple[bool, Any]:
        """After the function raised (``ok`` False, ``value`` its text) or returned ``success: false``:
        the expired value to return instead, when asked for and there is one (``Stale.on_failure``)."""
        if not self.serve_stale_on_error:
            return False, None
        served, stale, why = cache.flow.stale.on_failure(found, ok, value)
        if not served:
            return False, None
        warnings.warn(f"{self.name}: {why}; a stale cached value was returned", CacheWarning, stacklevel=4)
        cache.flow.count(self.name, stale_served=1)
        return True, stale

    def build(self) -> Any:  # a CachedFunction (actioncache.types): the wrapper with its handles
        func = self.func
        import inspect

        if inspect.iscoroutinefunction(func):
            wrapper = self.async_wrapper()
        else:
            wrapper = self.sync_wrapper()
        functools.update_wrapper(wrapper, func)
        wrapper.cache_key = lambda *a, **kw: self.keys(a, kw)  # type: ignore[attr-defined]
        wrapper.invalidate = self._invalidate  # type: ignore[attr-defined]
        wrapper.uncached = func  # type: ignore[attr-defined]
        wrapper.cache_name = self.name  # type: ignore[attr-defined]
        if self.keys.self_name is not None or self.keys.ignores_self:
            # A method: reached through an instance, the call AND every handle take that instance
            # (a plain function's handles would take the first argument as `self`).
            return CachedMethod(wrapper, inspect.iscoroutinefunction(func))
        return wrapper

    def _invalidate(self, *args: Any, **kwargs: Any) -> InvalidateResponse:
        if args or kwargs:
            return self.cache.invalidate(key=self.keys(args, kwargs))
        return self.cache.invalidate(pattern=escape_glob(self.keys.prefix) + "*")

    def _plan(self, cache: Cache, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str | None, bool, bool]:
        """(key, lookup, store) for one call; key None means run uncached."""
        hook = cache.policy_hook
        if self.plain and (hook is None or getattr(hook, "scoped_only", False)):
            # The hot path: no policy to consult (a scope-only policy never governs unscoped calls).
            try:
                return self.keys(args, kwargs), True, True
            except KeyStrategyError:
                return self._key(args, kwargs, cache), True, True
        if self.skip_cache:
            lookup, store = False, True
        else:
            decision = cache.decide(self.scope, self.name)
            lookup, store = decision.lookup, decision.store
        return (self._key(args, kwargs, cache) if (lookup or store) else None), lookup, store

    # The two wrappers below are the decorator's drivers of the one miss path (``Flow.miss``):
    # the first lookup and the hit stay inline (the hot path), everything after a miss is shared.

    def sync_wrapper(self) -> Callable[..., Any]:
        func, name, keys, fixed, plain, memoized = self.func, self.name, self.keys, self._cache, self.plain, self.keys.memoized
        default = self.default

        def miss(cache: Cache, key: str, args: tuple[Any, ...], kwargs: dict[str, Any], lookup: bool) -> Any:
            flow = cache.flow
            with flow.threads(key) as contended:
                steps = flow.miss(key, name, self._store_options(cache), contended=contended, lookup=lookup,
                                  lock=self.lock, lease_s=self.lock_timeout_s)
                outcome = drive(steps, lambda: flow.take_lease(key, self.lock_timeout_s), lambda: timed(func, args, kwargs))
            if outcome.hit:
                flow.record_hit(outcome.entry, name)  # type: ignore[arg-type]
            return outcome.value

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            cache = fixed if fixed is not None else default()
            key = None
            if plain:
                hook = cache.policy_hook
                if hook is None or getattr(hook, "scoped_only", False):
                    # The hot path: no policy to consult (a scope-only policy never governs
                    # unscoped calls). A key that cannot be built goes the long way (warned, counted).
                    if memoized is not None and len(args) == 1 and not kwargs:
                        arg = args[0]
                        try:
                            key = memoized((arg, type(arg)))  # KeyBuilder's memo, inline: the common call
                        except TypeError:  # unhashable
                            pass
                    if key is None:
                        try:
                            key = keys(args, kwargs)
                        except KeyStrategyError:
                            pass
                    lookup = store = True
            if key is None:
                key, lookup, store = self._plan(cache, args, kwargs)
                if key is None:
                    return func(*args, **kwargs)
            found = None
            if lookup:
                flow = cache.flow
                found = flow.lookup(key, name, tally=True) if flow.observers else flow.serve(key, name)
                if type(found) is not Lookup:  # a fresh hit's value itself
                    return found
                if found.hit:
                    return found.value
                if store and flow.stale.within_window(found, self.stale_ttl_s):
                    return self._stale(cache, key, found, lambda: guarded(func, args, kwargs), spawn_thread)
                flow.count(name, misses=1)
            if not store:
                return func(*args, **kwargs)
            try:
                value = miss(cache, key, args, kwargs, lookup)
            except Exception as exc:
                served, stale = self._stale_on_error(cache, found, False, f"{type(exc).__name__}: {exc}")
                if served:
                    return stale
                raise
            served, stale = self._stale_on_error(cache, found, True, value)  # a `success: false` result
            return stale if served else value

        def refresh(*args: Any, **kwargs: Any) -> Any:
            cache = self.cache
            key, _, store = self._plan(cache, args, kwargs)  # the policy's store, never its lookup
            if key is None or not store:
                return func(*args, **kwargs)
            return miss(cache, key, args, kwargs, False)

        wrapper.refresh = refresh  # type: ignore[attr-defined]
        return wrapper

    def async_wrapper(self) -> Callable[..., Any]:
        func, name, keys, fixed, plain, memoized = self.func, self.name, self.keys, self._cache, self.plain, self.keys.memoized
        default = self.default

        async def miss(cache: Cache, key: str, args: tuple[Any, ...], kwargs: dict[str, Any], lookup: bool) -> Any:
            flow = cache.flow
            async with flow.tasks(key) as contended:
                steps = flow.miss(key, name, self._store_options(cache), contended=contended, lookup=lookup,
                                  lock=self.lock, lease_s=self.lock_timeout_s)
                outcome = await adrive(steps, lambda: flow.atake_lease(key, self.lock_timeout_s),
                                       lambda: atimed(func, args, kwargs), flow.offload)
            if outcome.hit:
                if flow.offload is not None:  # the tally may flush the counters to the store
                    await flow.offload(flow.record_hit, outcome.entry, name)
                else:
                    flow.record_hit(outcome.entry, name)  # type: ignore[arg-type]
            return outcome.value

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            cache = fixed if fixed is not None else default()
            key = None
            if plain:
                hook = cache.policy_hook
                if hook is None or getattr(hook, "scoped_only", False):
                    # The hot path: no policy to consult (a scope-only policy never governs
                    # unscoped calls). A key that cannot be built goes the long way (warned, counted).
                    if memoized is not None and len(args) == 1 and not kwargs:
                        arg = args[0]
                        try:
                            key = memoized((arg, type(arg)))  # KeyBuilder's memo, inline: the common call
                        except TypeError:  # unhashable
                            pass
                    if key is None:
                        try:
                            key = keys(args, kwargs)
                        except KeyStrategyError:
                            pass
                    lookup = store = True
            if key is None:
                key, lookup, store = self._plan(cache, args, kwargs)
                if key is None:
                    return await func(*args, **kwargs)
            found = None
            if lookup:
                flow = cache.flow
                offload = flow.offload  # a networked store is called from worker threads (_drivers.Offload)
                if offload is None:
                    found = flow.lookup(key, name, tally=True) if flow.observers else flow.serve(key, name)
                elif flow.observers:
                    found = await offload(functools.partial(flow.lookup, key, name, tally=True))
                else:
                    found = await offload(flow.serve, key, name)
                if type(found) is not Lookup:  # a fresh hit's value itself
                    return found
                if found.hit:
                    return found.value
                if offload is not None:
                    if store and found.stale and await offload(flow.stale.within_window, found, self.stale_ttl_s):
                        import asyncio  # lazy: loaded already, a loop is running
                        spawn = spawn_task_offloaded(asyncio.get_running_loop(), offload)
                        return await offload(self._stale, cache, key, found, lambda: aguarded(func, args, kwargs), spawn)
                elif store and flow.stale.within_window(found, self.stale_ttl_s):
                    return self._stale(cache, key, found, lambda: aguarded(func, args, kwargs), spawn_task)
                flow.count(name, misses=1)
            if not store:
                return await func(*args, **kwargs)
            try:
                value = await miss(cache, key, args, kwargs, lookup)
            except Exception as exc:
                served, stale = self._stale_on_error(cache, found, False, f"{type(exc).__name__}: {exc}")
                if served:
                    return stale
                raise
            served, stale = self._stale_on_error(cache, found, True, value)  # a `success: false` result
            return stale if served else value

        async def refresh(*args: Any, **kwargs: Any) -> Any:
            cache = self.cache
            key, _, store = self._plan(cache, args, kwargs)  # the policy's store, never its lookup
            if key is None or not store:
                return await func(*args, **kwargs)
            return await miss(cache, key, args, kwargs, False)

        wrapper.refresh = refresh  # type: ignore[attr-defined]
        return wrapper
