"""The contract of an action plug-in: what ``register_actions(registry, engine)`` receives, and the
one failure shape every action answers with.

An action is ``fn(state, **kwargs) -> dict``. A module of actions has one hook,
``register_actions(registry, engine)``, that puts them in the registry (``registry["ns.name"] = fn``);
the agent runtime calls it for the built-in faces, for each ``imports:`` entry of an agent, and for
every module an installed package names in the ``actioncache.actions`` entry-point group::

    [project.entry-points."actioncache.actions"]
    mytools = "mypkg.actions"          # a module with register_actions(registry, engine)

``engine`` is the running agent, typed here as :class:`Engine` (what actions may rely on).

A failed action answers :func:`failure`: ``success: false``, a human ``error`` that names the fix,
and a machine-readable ``error_type`` (:data:`ERROR_TYPES`, The Edge Agent's names for the shared ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only
    from .cache import Cache
    from .stores.base import CacheStore

__all__ = ["ENTRY_POINT_GROUP", "ERROR_TYPES", "Action", "ActionTable", "Engine", "TrustRules", "bad_arg",
           "bad_count", "failure", "flag", "typed"]

ENTRY_POINT_GROUP = "actioncache.actions"

Action = Callable[..., dict[str, Any]]

# error_type values. The first six are TEA's (cache, ratelimit, ltm, storage); the rest name the
# other families' failures. A new kind of failure gets a name here.
ERROR_TYPES = (
    "action_not_found",   # a wrapping action named an action that is not registered
    "action_error",       # the wrapped action raised or returned success: false
    "validation_error",   # a missing or bad parameter (the node's input)
    "file_error",         # a file could not be read or written
    "cache_error",        # the store failed
    "ratelimit_timeout",  # ratelimit.wrap found no free slot in time
    "command_error",      # a program could not run, timed out or exited non-zero
    "http_error",         # a request failed or answered a status outside 2xx
    "llm_error",          # the model server failed or answered something that is not a completion
    "not_found",          # the entry, plan or item the call names does not exist (any more)
    "limit_exceeded",     # a quota of the store or the face is full
)


def failure(error_type: str, error: str, **fields: Any) -> dict[str, Any]:
    """The failure response of an action: ``{"success": False, "error", "error_type", **fields}``."""
    return {"success": False, "error": error, "error_type": error_type, **fields}


def typed(response: Mapping[str, Any], error_type: str) -> dict[str, Any]:
    """``response`` as a plain dict, with ``error_type`` set when it is a failure that has none yet."""
    out = dict(response)
    if out.get("success") is False and "error_type" not in out:
        out["error_type"] = error_type
    return out


def bad_count(value: Any, what: str) -> str | None:
    """Why ``value`` is not a count (a whole number >= 0) for parameter ``what``; None when it is one."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"{what} must be a whole number >= 0, not {value!r}"
    return None


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def flag(value: Any, what: str) -> bool:
    """``value`` as a boolean for option ``what``: YAML ``true``/``false``, or the strings
    true/false, yes/no, on/off, 1/0 (what a ``${VAR}`` or a template renders to). Anything else
    raises ValueError naming the option: a truthy string must never mean ``true``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{what} must be true or false (or the strings 'true'/'false'), not {value!r}")


_KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,), "mapping": (Mapping,), "list": (list, tuple), "number": (int, float),
}


def bad_arg(what: str, value: Any, kind: str, *, optional: bool = True) -> str | None:
    """Why ``value`` is not a ``kind`` (string, mapping, list, number) for parameter ``what``; None
    when it is one (or is None and ``optional``). A string must also hold no NUL character."""
    if value is None:
        return None if optional else f"{what} is required: give a {kind}"
    types = _KINDS[kind]
    if isinstance(value, bool) or not isinstance(value, types):
        return f"{what} must be a {kind}, not {type(value).__name__} {_brief(value)}"
    if isinstance(value, str) and "\0" in value:
        return f"{what} must not contain a NUL character: {_brief(value)}"
    return None


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "..."


@runtime_checkable
class TrustRules(Protocol):
    """Untrusted mode's checks (``actioncache.agents.trust.Trust``): an action that touches files,
    the network or the environment asks first; a refusal raises (the runtime stops the agent)."""

    @property
    def trusted(self) -> bool: ...

    def local_path(self, path: Any, what: str) -> Path: ...

    def check_url(self, url: str, what: str, implicitly_allowed: Iterable[str] = ()) -> None: ...

    def check_secret_destination(self, url: str, secret: str, env_base_url: str | None) -> None: ...


class ActionTable(Protocol):
    """The registry an action module fills and a wrapping action reads (``ActionRegistry``)."""

    def __setitem__(self, name: str, fn: Action) -> None: ...

    def __getitem__(self, name: str) -> Action: ...

    def __contains__(self, name: object) -> bool: ...

    def resolve(self, name: str, node: str | None = None) -> tuple[str, Action]: ...

    def override(self, name: str, fn: Action) -> None: ...


@runtime_checkable
class Engine(Protocol):
    """What an action module may use of the running agent (``actioncache.agents.Agent`` is one).

    ``cache``/``store``: the agent's :class:`~actioncache.Cache` and its store; ``settings``: the
    agent's ``settings:`` with ``${VAR}`` expanded; ``registry``: every action, for actions that
    run another; ``namespace``: ``settings.cache.namespace``; ``agent_name``: the prefix of the
    agent's cache keys; ``current_node``: the node running now (for error messages); ``trust``: the
    untrusted-mode checks (always present; ``trust.trusted`` is True for a trusted agent).
    """

    @property
    def cache(self) -> Cache: ...

    @property
    def store(self) -> CacheStore: ...

    @property
    def settings(self) -> Mapping[str, Any]: ...

    @property
    def registry(self) -> ActionTable: ...

    @property
    def namespace(self) -> str | None: ...

    @property
    def agent_name(self) -> str: ...

    @property
    def current_node(self) -> str | None: ...

    @property
    def trust(self) -> TrustRules: ...
