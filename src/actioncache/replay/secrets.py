"""Secrets in plans: what a user typed into a password field is never written to the store.

On record, an ``input_text`` into a secret field loses its text: the plan keeps the secret's
*name* (``action.secret``) in its place, and the element data kept with the action loses its
``value`` attribute. On replay, the value comes from ``secrets={name: value}`` or the
personalization hook; without one the replay stops at that action (``secret_required``).

A field is secret when

* the action says so (``Action(..., secret=True)`` or a name), or its ``name``, ``id`` or
  ``autocomplete`` is one the caller lists as sensitive (``PlanCache(..., sensitive=("ssn",))``);
* it is a password field, or *was* one at any time of the recording: a "Show password" toggle turns
  the field into ``type=text`` before the password is typed, and the browser snapshot remembers the
  field's history (``Element.was_password``);
* its ``autocomplete`` names a credential, one-time code or payment card field
  (:data:`SECRET_AUTOCOMPLETE`);
* it looks like a one-time code, a card number or a card code by its name, id, label, accessible
  name, placeholder or title (``otp``, ``cvc``/``cvv``/``csc``, ``passcode``, "security code",
  "verification code", "one-time code", ``2fa``, "card number", ``ccnum``...), or like a PIN when it
  takes digits (``inputmode=numeric``, ``type=number``/``tel`` or a digits ``pattern``) and says ``pin``.

Besides, :func:`scrub` takes every stored string of a plan and writes ``[secret]`` wherever a secret
typed in the recording (4 characters or more) appears: a page that echoes it into a label, a link or
a request's URL cannot carry it into the store either.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Iterable, Mapping

from .models import Action, ActionType

#: autocomplete tokens of fields whose content is a credential or payment secret.
SECRET_AUTOCOMPLETE = frozenset({"current-password", "new-password", "one-time-code", "cc-number", "cc-csc",
                                 "cc-exp", "cc-exp-month", "cc-exp-year", "webauthn"})
#: Words that make a field a one-time or card code whatever it takes.
_CODE_WORDS = re.compile(r"\b(?:otp|totp|hotp|cvv|cvc|csc|passcode|pass code|one ?time (?:code|password|pin)"
                         r"|security code|verification code|auth(?:entication)? code|2fa|mfa"
                         r"|card ?number|cc ?num(?:ber)?|credit card(?: number)?)\b", re.IGNORECASE)
#: Words that make a field a PIN when it takes digits.
_PIN_WORDS = re.compile(r"\bpin\b", re.IGNORECASE)
_NUMERIC_MODES = frozenset({"numeric", "decimal"})
_NUMERIC_TYPES = frozenset({"number", "tel"})
_DIGITS_PATTERN = re.compile(r"^(?:\\d|\[0-9\])(?:[*+]|\{\d+(?:,\d*)?\})?$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")
#: Where a field says what it is.
_DESCRIBING = ("name", "id", "autocomplete", "aria-label", "placeholder", "label", "title")
#: Secrets shorter than this are not searched for in other text (a 3-digit code would match everywhere).
SCRUB_MIN_CHARS = 4
SCRUBBED = "[secret]"


def _attributes(action: Action) -> dict[str, str]:
    attributes = (action.element or {}).get("attributes") or {}
    return {str(k).lower(): str(v) for k, v in attributes.items()}


def _matches(value: str, names: Iterable[str]) -> bool:
    lowered = value.lower()
    return bool(lowered) and any(fnmatch.fnmatchcase(lowered, name.lower()) for name in names)


def _words(value: str) -> str:
    """``card_cvc``, ``cardCvc`` and ``card-cvc`` read as ``card cvc``; ``otp1`` as ``otp 1``."""
    return re.sub(r"[_\-.:\[\]]+", " ", _CAMEL.sub(" ", value))


def looks_like_code(attributes: Mapping[str, str], name: str = "") -> bool:
    """A one-time code, card code or (taking digits) PIN field, by what it says it is."""
    said = " ".join(_words(attributes.get(part, "")) for part in _DESCRIBING) + " " + _words(name)
    if _CODE_WORDS.search(said):
        return True
    numeric = (attributes.get("inputmode", "").strip().lower() in _NUMERIC_MODES
               or "".join(attributes.get("type", "").split()).lower() in _NUMERIC_TYPES
               or bool(_DIGITS_PATTERN.match(attributes.get("pattern", "").strip())))
    return numeric and bool(_PIN_WORDS.search(said))


def is_secret_field(element: Mapping[str, Any] | None, sensitive: Iterable[str] = ()) -> bool:
    """Whether text typed into ``element`` (an element dict) is a secret, by the rules above."""
    element = element or {}
    attributes = {str(k).lower(): str(v) for k, v in (element.get("attributes") or {}).items()}
    tokens = set(attributes.get("autocomplete", "").lower().split())
    return ("".join(attributes.get("type", "").split()).lower() == "password" or element.get("was_password") is True
            or bool(tokens & SECRET_AUTOCOMPLETE) or looks_like_code(attributes, str(element.get("name") or ""))
            or any(_matches(attributes.get(name, ""), tuple(sensitive)) for name in ("name", "id", "autocomplete")))


def secret_name(action: Action, sensitive: Iterable[str] = ()) -> str | None:
    """The name of the secret ``action`` types, or ``None`` when its text may be stored."""
    if action.action_type.lower() != ActionType.INPUT_TEXT:
        return None
    if isinstance(action.secret, str) and action.secret:
        return action.secret
    attributes = _attributes(action)
    marked = action.secret is True or is_secret_field(action.element, sensitive)
    if not marked:
        return None
    for name in ("name", "id", "autocomplete"):
        if attributes.get(name):
            return attributes[name]
    return "password" if attributes.get("type", "").lower() == "password" or (action.element or {}).get(
        "was_password") is True else "secret"


def typed_secrets(actions: Iterable[Action], sensitive: Iterable[str] = ()) -> set[str]:
    """The secret texts of a recording (typed into secret fields, or prefilled in them), for :func:`scrub`."""
    sensitive = tuple(sensitive)
    found = set()
    for action in actions:
        if secret_name(action, sensitive) is None:
            continue
        for text in (action.text, _attributes(action).get("value")):
            if text and len(text) >= SCRUB_MIN_CHARS:
                found.add(text)
    return found


#: Fields of a stored action that are hashes and ids, never page text.
_NOT_TEXT = frozenset({"fingerprint", "element_id", "action_type"})


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (a plan's JSON) with every secret in ``secrets`` replaced by ``[secret]`` in its strings."""
    ordered = sorted({s for s in secrets if s and len(s) >= SCRUB_MIN_CHARS}, key=len, reverse=True)
    return _scrub(value, ordered, None) if ordered else value


def _scrub(value: Any, secrets: list[str], key: str | None) -> Any:
    if isinstance(value, str):
        if key in _NOT_TEXT:
            return value
        for secret in secrets:
            value = value.replace(secret, SCRUBBED)
        return value
    if isinstance(value, dict):
        return {(_scrub(k, secrets, None) if isinstance(k, str) else k): _scrub(v, secrets, str(k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, secrets, key) for v in value]
    return value


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
