"""YAML actions ``scratchpad.write/read/list/update/delete/end`` for the agent runtime.

Each action answers exactly like the LLM tool of the same name (``tools.dispatch``): a dict with
``success`` and either the result or ``error``/``message``. The session comes from the action's
``session_id`` argument, else ``state["session_id"]``, else ``settings.scratchpad.session_id``; the
store is the agent's store (``engine.store``). ``settings.scratchpad`` may also set
``item_limit_bytes``, ``session_quota_bytes`` and ``list_budget_bytes``. As for the tools, a
failure's ``error`` is the short code and ``message`` what to do; the actions add ``error_type``
(:mod:`actioncache.actions`), the same vocabulary as every other action's.
"""

from __future__ import annotations

from typing import Any, Callable

from ..actions import ActionTable, Engine, typed
from .errors import InvalidArgumentError
from .scratchpad import Scratchpad
from .tools import dispatch

ACTIONS = ("write", "read", "list", "update", "delete", "end")
_LIMIT_SETTINGS = ("item_limit_bytes", "session_quota_bytes", "list_budget_bytes")
# A scratchpad code (the tool answer's ``error``) -> the action's ``error_type``.
ERROR_TYPES = {"invalid_key": "validation_error", "invalid_argument": "validation_error",
               "unknown_tool": "validation_error", "item_too_large": "limit_exceeded",
               "quota_exceeded": "limit_exceeded", "not_found": "not_found", "internal_error": "action_error"}


def _pad(engine: Engine, state: Any, session_id: str | None) -> Scratchpad:
    settings = (getattr(engine, "settings", None) or {}).get("scratchpad") or {}
    session = session_id or (state.get("session_id") if isinstance(state, dict) else None) or settings.get("session_id")
    if not session:
        raise InvalidArgumentError(
            "no scratchpad session: pass session_id: in with:, set state.session_id, "
            "or set settings.scratchpad.session_id"
        )
    limits = {name: int(settings[name]) for name in _LIMIT_SETTINGS if name in settings}
    return Scratchpad(engine.store, str(session), **limits)


def _typed(answer: dict[str, Any]) -> dict[str, Any]:
    """The tool answer with ``error_type``: the store's failures (corrupt, unavailable, busy) are ``cache_error``."""
    return typed(answer, ERROR_TYPES.get(str(answer.get("error")), "cache_error"))


def _action(name: str, engine: Engine) -> Callable[..., dict[str, Any]]:
    def run(state: Any, session_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
        try:
            pad = _pad(engine, state, session_id)
        except InvalidArgumentError as exc:
            return _typed({"success": False, "error": exc.code, "message": str(exc)})
        return _typed(dispatch(pad, f"scratchpad_{name}", kwargs))

    run.__name__ = f"scratchpad_{name}"
    run.__doc__ = f"YAML action scratchpad.{name}: same arguments and answer as the scratchpad_{name} tool."
    return run


def register_actions(registry: ActionTable, engine: Engine) -> None:
    """Add the scratchpad actions under ``scratchpad.NAME`` and ``actions.scratchpad_NAME``."""
    for name in ACTIONS:
        fn = _action(name, engine)
        registry[f"scratchpad.{name}"] = fn
        registry[f"actions.scratchpad_{name}"] = fn
