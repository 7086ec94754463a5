"""How a replayed action becomes a Playwright call, and how a routed request meets the guard
(the same for the sync and async APIs)."""

from __future__ import annotations

import logging
from typing import Any

from ..models import Action, ActionType
from .network import NetworkLog

log = logging.getLogger("actioncache.replay")

#: Snapshots retried while a navigation replaces the document under them.
NAVIGATION_RETRIES = 20
#: The route pattern of the request guard: every request of the page.
ROUTE_ALL = "**/*"


def select_args(value: Any) -> dict[str, Any]:
    """``select_option`` keywords for a recorded choice: a value, or ``{"value"|"label": ...}``."""
    if isinstance(value, dict):
        if value.get("value") is not None:
            return {"value": str(value["value"])}
        if value.get("label") is not None:
            return {"label": str(value["label"])}
        raise ValueError("a select option needs 'value' or 'label'")
    return {"value": str(value)}


def execute_args(action: Action) -> tuple[str, dict[str, Any]]:
    """The ElementHandle method and keywords that do ``action``."""
    kind = action.action_type.lower()
    if kind == ActionType.INPUT_TEXT:
        return "fill", {"value": action.text or ""}
    if kind == ActionType.SELECT_OPTION:
        return "select_option", select_args(action.option or {})
    if kind == ActionType.CLICK:
        return "click", {}
    raise ValueError(f"{action.action_type!r} is not an element action")


def in_frame(action: Action) -> bool:
    """Whether the action's element sits in an iframe (it must be acted on through that frame)."""
    return bool((action.element or {}).get("frame"))


def request_page(request: Any) -> Any:
    """The page a request belongs to, ``None`` when it has none (a service worker's)."""
    try:
        return request.frame.page
    except Exception:  # noqa: BLE001
        return None


#: How many windows deep a popup of a popup is still guarded.
POPUP_DEPTH = 4


def guard_route(network: NetworkLog, request: Any) -> bool:
    """The route handler's decision: let ``request`` through? A guard that fails refuses (fails closed)."""
    try:
        return network.admit(request)
    except Exception:
        log.exception("replay: the request guard failed; the request is aborted")
        return False
