"""``cache.*``: the cache actions over the agent's :class:`Cache` (``engine.cache``).

Inside an agent, keys are scoped to the agent as The Edge Agent scopes them (TEA-BUILTIN-010.1):
``cache:{agent_name}:{action}:{hash}`` or ``cache:{agent_name}:{custom key}``, so agents sharing a
store never collide and ``cache:{agent}:*`` invalidates one agent. ``key_prefix: false`` shares
entries across agents (``cache:{action}:{hash}``, the key ``Cache.wrap`` uses from Python).

An action that declares a key context (:mod:`actioncache.agents.key_context`) has it folded into
the hash of its key; under a custom key, an entry stored under another context is not a hit.
Failures carry ``error_type`` (:mod:`.failures`).
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from ...actions import ActionTable, Engine, bad_arg, flag
from ...cache import Cache
from ...errors import HashError, KeyStrategyError
from ...keys import KEY_PREFIX, canonical_json, compute_key, sha256_hex
from ..errors import AgentDefinitionError, UnknownActionError, suggest
from ..key_context import context_digest, key_context_of
from ..trust import UntrustedRefusal
from .failures import bad_count, failure, typed

# Every Cache.wrap option a YAML node may pass through: its keyword-only parameters, read from its
# signature so a new option reaches YAML too, and the agent's own ``key_prefix``.
_WRAP_PARAMETERS = [parameter for parameter in inspect.signature(Cache.wrap).parameters.values()
                    if parameter.kind is inspect.Parameter.KEYWORD_ONLY]
WRAP_OPTIONS = tuple(parameter.name for parameter in _WRAP_PARAMETERS) + ("key_prefix",)
# The yes/no options: a real boolean, or a string true/false (what ${VAR} or a template renders
# to); never "any non-empty string is true" (cache_enabled: 'false' must not cache).
# What inspect.signature(cache.wrap) shows (the function takes **options): the load-time check of
# a node's with: keys reads it, so a misspelled option stops the agent before any node runs.
WRAP_SIGNATURE = inspect.Signature(
    [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
     for name, default in (("state", inspect.Parameter.empty), ("action", inspect.Parameter.empty), ("args", None))]
    + [parameter.replace(annotation=inspect.Parameter.empty) for parameter in _WRAP_PARAMETERS]
    + [inspect.Parameter("key_prefix", inspect.Parameter.KEYWORD_ONLY, default=True)])
BOOL_OPTIONS = tuple(parameter.name for parameter in _WRAP_PARAMETERS
                     if parameter.annotation in (bool, "bool")) + ("key_prefix",)


def option_problem(options: dict[str, Any]) -> str | None:
    """Normalise the yes/no options in place; why an option is unusable, or None."""
    for name in BOOL_OPTIONS:
        if name in options:
            try:
                options[name] = flag(options[name], f"cache.wrap {name}")
            except ValueError as exc:
                return str(exc)
    if options.get("cleanup_limit") is not None:
        problem = bad_count(options["cleanup_limit"], "cache.wrap cleanup_limit")
        if problem:
            return problem
    for name in ("key_strategy", "key_source", "scope"):
        problem = bad_arg(f"cache.wrap {name}", options.get(name), "string")
        if problem:
            return problem
    return None


def scoped_custom_key(key: str, prefix: str) -> str:
    """TEA's rule for a custom key: ``cache:{prefix}{key}``; a key already spelled ``cache:a:b`` is
    taken as scoped and kept, ``cache:a`` gets the prefix after ``cache:``."""
    if key.startswith(KEY_PREFIX):
        rest = key[len(KEY_PREFIX):]
        return key if (not prefix or ":" in rest) else KEY_PREFIX + prefix + rest
    return KEY_PREFIX + prefix + key


def hashed_key(label: str, args: Mapping[str, Any], prefix: str, context: Mapping[str, Any] | None,
               key_strategy: str, key_source: str | None) -> str:
    """``cache:{prefix}{label}:{hash}`` for the args/sha256/file_content strategies, the context folded in."""
    digest = compute_key(label, args, key_strategy=key_strategy, key_source=key_source).rsplit(":", 1)[1]
    if context is not None:
        digest = sha256_hex(canonical_json([digest, context]))
    return f"{KEY_PREFIX}{prefix}{label}:{digest}"


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def agent_prefix(enabled: bool = True) -> str:
        name = getattr(engine, "agent_name", None)
        return f"{name}:" if enabled and name else ""

    def wrap(state: Mapping[str, Any], action: str, args: Mapping[str, Any] | None = None,
             **options: Any) -> dict[str, Any]:
        """Run ``action`` through the cache: a live entry is returned without running it."""
        for name in options:
            if name not in WRAP_OPTIONS:
                raise AgentDefinitionError(
                    f"node {engine.current_node!r}: cache.wrap has no parameter {name!r}"
                    f"{suggest(name, WRAP_OPTIONS + ('action', 'args'))}"
                )
        try:
            canonical, fn = engine.registry.resolve(action, node=engine.current_node)
        except UnknownActionError as exc:
            return failure("action_not_found", str(exc), _cache_hit=False, _cache_key=None)
        label = f"{engine.namespace}/{canonical}" if engine.namespace else canonical
        if args is not None and not isinstance(args, Mapping):
            return failure("validation_error", f"cache.wrap args: must be a mapping of the action's parameters, "
                           f"not {type(args).__name__}", _cache_hit=False, _cache_key=None)
        problem = option_problem(options)
        if problem:
            return failure("validation_error", problem, _cache_hit=False, _cache_key=None)
        args = dict(args or {})
        prefix = agent_prefix(options.pop("key_prefix", True))
        trust = getattr(engine, "trust", None)
        if trust is not None and not trust.trusted and options.get("key_strategy") == "file_content":
            source = options.get("key_source")
            if source in args:
                trust.local_path(args[source], "cache.wrap file_content key")
        note = _key_options(label, args, fn, prefix, options)
        refusals: list[UntrustedRefusal] = []
        ran: list[bool] = []

        def run(**kwargs: Any) -> Any:
            ran.append(True)
            try:
                return fn(state, **kwargs)
            except UntrustedRefusal as exc:  # a refusal stops the agent; it is not an action failure
                refusals.append(exc)
                raise

        try:
            response = engine.cache.wrap(label, run, args, **options)
        except (ValueError, TypeError) as exc:
            if ran:
                raise
            # Cache.wrap checks its options before running anything: a bad option is the node's input.
            return failure("validation_error", f"cache.wrap: {exc}", _cache_hit=False, _cache_key=None)
        if refusals:
            raise refusals[0]
        if note:
            prior = response.get("_cache_error")
            response["_cache_error"] = f"{prior}; {note}" if prior else note
        return typed(response, "action_error")

    def _key_options(label: str, args: Mapping[str, Any], fn: Any, prefix: str, options: dict[str, Any]) -> str | None:
        """Put the agent-scoped key into ``options``; returns a note when caching had to be turned off."""
        try:
            context = key_context_of(fn, args)
        except Exception as exc:  # noqa: BLE001 - inputs unknown: never risk a wrong hit
            options["cache_enabled"] = False
            return f"not cached: the action's key context failed ({type(exc).__name__}: {exc})"
        if context is not None:
            options["metadata"] = {**dict(options.get("metadata") or {}), "_cache_context": context_digest(context)}
        key = options.get("key")
        if key is not None:
            if isinstance(key, str) and key:
                options["key"] = scoped_custom_key(key, prefix)
                if context is not None and _stored_under_other_context(options["key"], options["metadata"]["_cache_context"]):
                    options["skip_cache"] = True
            return None
        if not prefix and context is None:
            return None  # the core's own key: cache:{action}:{hash}
        try:
            options["key"] = hashed_key(label, args, prefix, context, options.get("key_strategy", "args"),
                                        options.get("key_source"))
        except (KeyStrategyError, HashError) as exc:
            # A data problem turns caching off for this call; a configuration mistake (unknown
            # strategy, missing key_source) is still raised by Cache.wrap's own checks.
            options["cache_enabled"] = False
            return f"no cache key, running uncached: {exc}"
        return None

    def _stored_under_other_context(key: str, digest: str) -> bool:
        try:
            entry = engine.store.get(key)
        except Exception:  # noqa: BLE001 - the lookup itself will report the store's failure
            return False
        return entry is not None and entry.metadata.get("_cache_context") != digest

    def get(state: Mapping[str, Any], key: str | None = None, include_metadata: bool = False) -> dict[str, Any]:
        """The entry under ``key``; a key without ``cache:`` is looked up under this agent first."""
        if not isinstance(key, str) or not key:
            return failure("validation_error", f"cache.get needs key: the cache key to read, not {key!r}",
                           found=False, value=None, expired=False)
        prefix = agent_prefix()
        if prefix and not key.startswith(KEY_PREFIX):
            scoped = engine.cache.get(KEY_PREFIX + prefix + key, include_metadata=include_metadata)
            if scoped.get("found") or not scoped.get("success"):
                return typed(scoped, "cache_error")
        return typed(engine.cache.get(key, include_metadata=include_metadata), "cache_error")

    def invalidate(state: Mapping[str, Any], key: str | None = None, pattern: str | None = None,
                   metadata_filter: Mapping[str, Any] | None = None, action: str | None = None) -> dict[str, Any]:
        problem = (bad_arg("cache.invalidate key", key, "string") or bad_arg("cache.invalidate pattern", pattern, "string")
                   or bad_arg("cache.invalidate action", action, "string")
                   or bad_arg("cache.invalidate metadata_filter", metadata_filter, "mapping"))
        if problem:
            return failure("validation_error", problem, deleted_count=0, deleted_keys=[])
        if action is not None:
            metadata_filter = {**(metadata_filter or {}), "_cache_action": action}
        if not key and not pattern and not metadata_filter:
            return failure("validation_error", "cache.invalidate needs key:, pattern: (a glob such as "
                           "'cache:my_agent:*'), metadata_filter: or action:", deleted_count=0, deleted_keys=[])
        deleted: list[str] = []
        prefix = agent_prefix()
        if key and prefix and not key.startswith(KEY_PREFIX):
            scoped = engine.cache.invalidate(key=KEY_PREFIX + prefix + key)
            if not scoped["success"]:
                return typed(scoped, "cache_error")
            if scoped["deleted_count"]:
                deleted, key = scoped["deleted_keys"], None
                if not pattern and not metadata_filter:
                    return dict(scoped)
        out = engine.cache.invalidate(key=key or None, pattern=pattern or None, metadata_filter=metadata_filter)
        if deleted:
            out["deleted_keys"] = deleted + out["deleted_keys"]
            out["deleted_count"] += len(deleted)
        return typed(out, "cache_error")

    def cleanup(state: Mapping[str, Any], limit: int | None = None) -> dict[str, Any]:
        problem = None if limit is None else bad_count(limit, "cache.cleanup limit")
        if problem:
            return failure("validation_error", problem + " (leave it out to delete every expired entry)", deleted_count=0)
        return typed(engine.cache.cleanup(limit=limit), "cache_error")

    def stats(state: Mapping[str, Any]) -> dict[str, Any]:
        return typed(engine.cache.stats(), "cache_error")

    wrap.__signature__ = WRAP_SIGNATURE  # type: ignore[attr-defined]
    registry["cache.wrap"] = wrap
    registry["cache.get"] = get
    registry["cache.invalidate"] = invalidate
    registry["cache.cleanup"] = cleanup
    registry["cache.stats"] = stats
