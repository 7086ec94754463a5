"""Secrets in plans: what a user typed into a password field is never written to the store.

On record, an ``input_text`` into a secret field loses its text: the plan keeps the secret's
*name* (``action.secret``) in its place, and the element data kept with the action loses its
``value`` attribute. On replay, the value comes from ``secrets={name: value}`` or the
personalization hook; without one the replay stops at that action (``secret_required``).

A field is secret when the action says so (``Action(..., secret=True)`` or a name), when it is a
password field (``type=password``), when its ``autocomplete`` names a credential or card field,
or when its ``name``, ``id`` or ``autocomplete`` is one the caller lists as sensitive
(``PlanCache(..., sensitive=("otp", "ssn"))``).
"""

from __future__ import annotations

import fnmatch
from typing import Any, Iterable, Mapping

from .models import Action, ActionType

#: autocomplete tokens of fields whose content is a credential or payment secret.
SECRET_AUTOCOMPLETE = frozenset({"current-password", "new-password", "one-time-code", "cc-number", "cc-csc",
                                 "cc-exp", "cc-exp-month", "cc-exp-year"})


def _attributes(action: Action) -> dict[str, str]:
    attributes = (action.element or {}).get("attributes") or {}
    return {str(k).lower(): str(v) for k, v in attributes.items()}


def _matches(value: str, names: Iterable[str]) -> bool:
    lowered = value.lower()
    return bool(lowered) and any(fnmatch.fnmatchcase(lowered, name.lower()) for name in names)


def secret_name(action: Action, sensitive: Iterable[str] = ()) -> str | None:
    """The name of the secret ``action`` types, or ``None`` when its text may be stored."""
    if action.action_type.lower() != ActionType.INPUT_TEXT:
        return None
    if isinstance(action.secret, str) and action.secret:
        return action.secret
    attributes = _attributes(action)
    tokens = set(attributes.get("autocomplete", "").lower().split())
    sensitive = tuple(sensitive)
    marked = (action.secret is True or attributes.get("type", "").strip().lower() == "password"
              or bool(tokens & SECRET_AUTOCOMPLETE)
              or any(_matches(attributes.get(name, ""), sensitive) for name in ("name", "id", "autocomplete")))
    if not marked:
        return None
    for name in ("name", "id", "autocomplete"):
        if attributes.get(name):
            return attributes[name]
    return "password" if attributes.get("type", "").lower() == "password" else "secret"


def redact(action: Action, sensitive: Iterable[str] = ()) -> Action:
    """``action`` as it may be stored: a secret's text replaced by its name (a copy when changed)."""
    name = secret_name(action, sensitive)
    if name is None:
        return action
    out = action.copy()
    out.secret, out.text = name, None
    if out.element:
        # The typed value may be mirrored into the value attribute (frameworks do that).
        out.element = {**out.element, "attributes": {k: v for k, v in (out.element.get("attributes") or {}).items()
                                                     if str(k).lower() != "value"}, "text": ""}
    return out


def fill_secret(action: Action, secrets: Mapping[str, Any] | None) -> Action:
    """Give a secret action its value from ``secrets`` (the action itself when it has none)."""
    if not action.secret or action.text is not None or not secrets:
        return action
    name = missing_secret(action)
    if name is None or name not in secrets:
        return action
    out = action.copy()
    out.text = str(secrets[name])
    return out


def missing_secret(action: Action) -> str | None:
    """The secret's name when ``action`` still has no value for it (replay must stop there)."""
    if action.secret and action.text is None and action.action_type.lower() == ActionType.INPUT_TEXT:
        return action.secret if isinstance(action.secret, str) else "secret"
    return None
