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
import html
import json
import re
from typing import Any, Iterable, Mapping
from urllib.parse import quote, quote_plus

from .models import Action, ActionType

#: autocomplete tokens of fields whose content is a credential or payment secret.
SECRET_AUTOCOMPLETE = frozenset({"current-password", "new-password", "one-time-code", "cc-number", "cc-csc",
                                 "cc-exp", "cc-exp-month", "cc-exp-year", "webauthn"})
#: Words that make a field a credential, a one-time or card code, or another secret, whatever it takes.
_CODE_WORDS = re.compile(r"\b(?:otp|totp|hotp|cvv\d?|cvc\d?|csc|passcode|pass code|one ?time (?:code|password|pin)"
                         r"|security code|verification code|confirmation code|auth(?:entication)? code|2fa|mfa"
                         r"|card ?number|cc ?num(?:ber)?|credit card(?: number)?"
                         r"|pass ?word|passwd|pwd|pass ?phrase|pin[ -]code|pin number|secret|secrets|token|tokens"
                         r"|(?:api|private|secret|access|license|product|recovery|encryption|signing) ?key"
                         r"|security (?:answer|question answer)|mother'?s maiden name"
                         r"|iban|ssn|social security(?: number)?|tax ?id|routing number|account number"
                         r"|sms code|code (?:we|was) (?:sent|texted|emailed)|(?:sent|texted|emailed) (?:you|to you)"
                         r"|(?:\d+|six|four|eight)[ -]?digit code)\b", re.IGNORECASE)
#: Words that make a field a PIN when it takes digits.
_PIN_WORDS = re.compile(r"\bpin\b", re.IGNORECASE)
#: A label or name that is a PIN and nothing else ("PIN", "Enter your PIN", "card_pin", "pin2"): a
#: PIN whatever the field takes. ("Pin your favourite" is not.)
_PIN_ALONE = re.compile(r"^(?:(?:enter|your|the|new|current|confirm|repeat|card|account|atm|user|sim)\s+)*pin"
                        r"(?:\s+(?:code|number|no))?\s*\d?\s*[:*]?$", re.IGNORECASE)
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
    if any(_PIN_ALONE.match(" ".join(_words(attributes.get(part, "")).split())) for part in _DESCRIBING) or \
            _PIN_ALONE.match(" ".join(_words(name).split())):
        return True
    numeric = (attributes.get("inputmode", "").strip().lower() in _NUMERIC_MODES
               or "".join(attributes.get("type", "").split()).lower() in _NUMERIC_TYPES
               or bool(_DIGITS_PATTERN.match(attributes.get("pattern", "").strip())))
    return numeric and bool(_PIN_WORDS.search(said))


def _secret_now(attributes: Mapping[str, str], name: str, sensitive: tuple[str, ...]) -> bool:
    tokens = set(attributes.get("autocomplete", "").lower().split())
    return ("".join(attributes.get("type", "").split()).lower() == "password"
            or bool(tokens & SECRET_AUTOCOMPLETE) or looks_like_code(attributes, name)
            or any(_matches(attributes.get(part, ""), sensitive) for part in ("name", "id", "autocomplete")))


def is_secret_field(element: Mapping[str, Any] | None, sensitive: Iterable[str] = ()) -> bool:
    """Whether text typed into ``element`` (an element dict) is a secret, by the rules above, now or at
    any moment of its ``history`` (what the browser snapshot saw it be earlier: old attribute values,
    labels and accessible names)."""
    element = element or {}
    sensitive = tuple(sensitive)
    attributes = {str(k).lower(): str(v) for k, v in (element.get("attributes") or {}).items()}
    name = str(element.get("name") or "")
    if element.get("was_password") is True or _secret_now(attributes, name, sensitive):
        return True
    for then in element.get("history") or ():
        if not isinstance(then, Mapping):
            continue
        earlier = {**attributes, **{str(k).lower(): str(v) for k, v in then.items()
                                    if k not in ("accessible_name",) and v is not None}}
        if _secret_now(earlier, str(then.get("accessible_name") or name), sensitive):
            return True
    return False


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


def typed_secrets(actions: Iterable[Action], sensitive: Iterable[str] = (), *,
                  minimum: int = SCRUB_MIN_CHARS) -> set[str]:
    """The secret texts of a recording (typed into secret fields, or prefilled in them), for :func:`scrub`."""
    sensitive = tuple(sensitive)
    found = set()
    for action in actions:
        if secret_name(action, sensitive) is None:
            continue
        for text in (action.text, _attributes(action).get("value")):
            if text and len(text) >= minimum:
                found.add(text)
    return found


def mark_known_secrets(actions: list[Action], known: Iterable[str] = (), sensitive: Iterable[str] = ()) -> list[Action]:
    """Make secret every ``input_text`` whose text is a secret typed elsewhere in the plan (it then
    names the same secret, so a replay types the same value there), one of ``known`` (values the page
    sent in secret fields), or contains one of them."""
    sensitive = tuple(sensitive)
    names: dict[str, str] = {}
    for action in actions:
        name = secret_name(action, sensitive)
        if name is not None and action.text:
            names.setdefault(action.text, name)
    secrets = set(names) | {k for k in known if k}
    long_ones = [k for k in secrets if len(k) >= SCRUB_MIN_CHARS]
    for action in actions:
        if (action.action_type.lower() != ActionType.INPUT_TEXT or not action.text
                or secret_name(action, sensitive) is not None):
            continue
        if action.text in names:
            action.secret = names[action.text]
        elif action.text in secrets or any(k in action.text for k in long_ones):
            action.secret = True
    return actions


def stored_form(action: Action) -> dict[str, Any]:
    """The JSON of ``action`` as a plan stores it: the element's history (what it looked like earlier,
    for the secrets rule) is left out."""
    out = action.to_dict(secrets=True)
    element = out.get("element")
    if isinstance(element, dict) and "history" in element:
        out["element"] = {k: v for k, v in element.items() if k != "history"}
    return out


#: Fields of a stored action that are hashes and ids, never page text.
_NOT_TEXT = frozenset({"fingerprint", "element_id", "action_type"})


def encodings(secret: str) -> set[str]:
    """The ways a secret shows up in page text and URLs: as typed, percent-encoded (``%21`` and
    ``%21`` in lower case, ``+`` for spaces), HTML-escaped and JSON-escaped."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret, safe=""), html.escape(secret),
             quote(secret, safe="!'()*-._~"),  # JavaScript's encodeURIComponent
             quote(secret, safe=";,/?:@&=+$-_.!~*'()#"),  # encodeURI
             json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    forms |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), f) for f in list(forms)}
    return {f for f in forms if f}


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (a plan's JSON) with every secret in ``secrets`` replaced by ``[secret]`` in its strings,
    in any of its :func:`encodings`, and with spaces, dots, dashes or slashes between its characters (a
    card number a page shows grouped by four)."""
    pattern = secrets_pattern(s for s in secrets if s and len(s) >= SCRUB_MIN_CHARS)
    return _scrub(value, pattern, None) if pattern is not None else value


_SEPARATORS = re.compile(r"[\s.\-_/]+")


def secrets_pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    """One regular expression for every form of every secret (see :func:`scrub`), longest first."""
    forms: set[str] = set()
    for secret in secrets:
        forms |= {re.escape(f) for f in encodings(secret)}
        bare = _SEPARATORS.sub("", secret)
        if len(bare) >= SCRUB_MIN_CHARS:
            forms.add(r"[\s.\-_/]*".join(re.escape(c) for c in bare))
    if not forms:
        return None
    return re.compile("|".join(sorted(forms, key=len, reverse=True)))


def scrub_text(text: str | None, secrets: Iterable[Any]) -> str | None:
    """A message or log line with every secret (any length, any of its :func:`encodings`) replaced."""
    if not text:
        return text
    pattern = secrets_pattern(s for s in secrets if isinstance(s, str) and s)
    return pattern.sub(SCRUBBED, text) if pattern is not None else text


def _scrub(value: Any, secrets: re.Pattern[str], key: str | None) -> Any:
    if isinstance(value, str):
        if key in _NOT_TEXT:
            return value
        return secrets.sub(SCRUBBED, value)
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


def check_secrets(secrets: Mapping[str, Any] | None) -> dict[str, str]:
    """``secrets`` as given to a replay, checked: a mapping of names to texts.

    Every value must be a ``str``: ``0``, ``True``, ``None``, ``b"..."`` would be typed as ``"0"``,
    ``"True"``, ``"None"``, ``"b'...'"`` (or nothing), which is never the secret meant, so they raise
    ``TypeError`` naming the key and the fix before anything is replayed. ``""`` is no value (the replay
    stops at that field with ``secret_required``).
    """
    if secrets is None:
        return {}
    if not isinstance(secrets, Mapping):
        raise TypeError(f"secrets must be a mapping of names to texts, e.g. {{'password': '...'}}, "
                        f"not {type(secrets).__name__}")
    out: dict[str, str] = {}
    for name, value in secrets.items():
        if not isinstance(name, str):
            raise TypeError(f"secrets keys are field names (str), not {type(name).__name__} {name!r}")
        if not isinstance(value, str):
            fix = ("decode it first, e.g. value.decode('utf-8')" if isinstance(value, (bytes, bytearray))
                   else "leave the key out to be asked for it" if value is None
                   else "pass the text as typed, e.g. '0' rather than 0")
            raise TypeError(f"secrets[{name!r}] must be a str, not {type(value).__name__}; {fix}")
        out[name] = value
    return out


def _field_names(action: Action) -> list[str]:
    attributes = _attributes(action)
    return [attributes[k] for k in ("name", "id", "autocomplete") if attributes.get(k)]


def fill_secret(action: Action, secrets: Mapping[str, Any] | None) -> Action:
    """Give a secret action its value from ``secrets`` (the action itself when it has none: ``""`` is
    no value, so the replay stops with ``secret_required`` rather than type it).

    A text stored in clear (a declared input, the task text, ``secret=False``) never wins over a
    value this replay is given for the same field: when ``secrets`` names the field (its ``name``,
    ``id`` or ``autocomplete``), that value is typed, not the recorded user's."""
    if not secrets:
        return action
    if (not action.secret and action.text is not None
            and action.action_type.lower() == ActionType.INPUT_TEXT):
        key = next((n for n in _field_names(action) if n in secrets and secrets[n] != ""), None)
        if key is None:
            return action
        given = secrets[key]
        if not isinstance(given, str):
            raise TypeError(f"secrets[{key!r}] must be a str, not {type(given).__name__}")
        out = action.copy()
        out.text = given
        return out
    if not action.secret or action.text is not None:
        return action
    name = missing_secret(action)
    if name is None or name not in secrets:
        return action
    value = secrets[name]
    if value == "":
        return action
    if not isinstance(value, str):
        raise TypeError(f"secrets[{name!r}] must be a str, not {type(value).__name__}")
    out = action.copy()
    out.text = str(value)
    return out


def distinct_secret_names(actions: list[Action], sensitive: Iterable[str] = ()) -> list[Action]:
    """Two different texts typed into secret fields of the same name (a current and a new password,
    both ``name=password``) get distinct names (``password``, ``password#2``): one value can never
    be typed into both."""
    sensitive = tuple(sensitive)
    texts: dict[str, list[str]] = {}
    for action in actions:
        name = secret_name(action, sensitive)
        if name is None or action.text is None:
            continue
        seen = texts.setdefault(name, [])
        if action.text not in seen:
            seen.append(action.text)
        position = seen.index(action.text)
        action.secret = name if position == 0 else f"{name}#{position + 1}"
    return actions


def missing_secret(action: Action) -> str | None:
    """The secret's name when ``action`` still has no value for it (replay must stop there)."""
    if action.secret and action.text is None and action.action_type.lower() == ActionType.INPUT_TEXT:
        return action.secret if isinstance(action.secret, str) else "secret"
    return None
