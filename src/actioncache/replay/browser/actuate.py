"""How a replayed action becomes a Playwright element call (the same for the sync and async APIs)."""

from __future__ import annotations

from typing import Any

from ..models import Action, ActionType

#: Snapshots retried while a navigation replaces the document under them.
NAVIGATION_RETRIES = 20


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
