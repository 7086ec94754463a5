"""The data replay works on: actions and plan signatures (and, re-exported, page elements and pages).

The page model (:class:`Element`, :class:`Page`) lives in :mod:`.element` and :mod:`.page`; its
names stay importable from here.

A *signature* names the task a plan belongs to: the URL pattern of the page it starts on plus the
navigation goal (see :func:`url_pattern` for the normalization rule).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..keys import sha256_hex
from .element import Element
from .fingerprints import element_fingerprint
from .page import Page
from .urls import DEFAULT_URL_RULE, UrlRule, url_pattern

__all__ = ["Action", "ActionType", "Element", "Page", "PlanSignature", "as_page", "as_signature", "normalize_goal",
           "url_pattern"]


class ActionType:
    """Action type names. Any string is accepted; only :data:`SUPPORTED` ones are replayed."""

    INPUT_TEXT = "input_text"
    CLICK = "click"
    SELECT_OPTION = "select_option"
    WAIT = "wait"
    COMPLETE = "complete"
    TERMINATE = "terminate"
    # Recorded by agents but never replayed: their effect depends on the moment they ran.
    SOLVE_CAPTCHA = "solve_captcha"
    VERIFICATION_CODE = "verification_code"
    EXTRACT = "extract"
    UPLOAD_FILE = "upload_file"
    DOWNLOAD_FILE = "download_file"

    SUPPORTED = frozenset({INPUT_TEXT, CLICK, SELECT_OPTION, WAIT, COMPLETE})
    #: The only type whose ``intention`` (a query for personalization) may be replayed.
    WITH_INTENTION = frozenset({INPUT_TEXT})
    #: Types that act on an element and therefore must carry its fingerprint.
    TARGETED = frozenset({INPUT_TEXT, CLICK, SELECT_OPTION})
    #: Never reused: a terminated run says nothing about how to finish the task.
    DROPPED = frozenset({TERMINATE})


def as_page(page: Page | Mapping[str, Any] | Iterable[Any] | str) -> Page:
    """Accept a :class:`Page`, its dict form, a list of elements, or HTML text."""
    if isinstance(page, Page):
        return page
    if isinstance(page, str):
        from .html import page_from_html

        return page_from_html(page)
    if page is None:
        raise TypeError("page is required: a Page, {'url':..., 'elements': [...]}, a list of elements or HTML text")
    return Page.from_dict(page)


@dataclass
class Action:
    """One recorded browser action.

    ``fingerprint`` identifies the target element across page loads (see
    :func:`~actioncache.replay.element_fingerprint`); ``element_id`` is only valid on the page it
    was taken from and is rebound on replay. ``element`` holds the rebound element's data.
    ``option`` is a select's choice (``{"value": ..., "label": ...}``), ``text`` the typed text,
    ``intention`` what the agent meant (a query a personalization hook may answer afresh).
    ``data`` keeps any other JSON fields the agent needs back. ``choose`` marks a click whose
    target depends on the input (``{"rule": "query_match", "query": 0}``: see
    :mod:`~actioncache.replay.intents`); it is re-decided on replay and may carry an ``intention``.
    ``effects`` is what the recorded step sent and led to (browser recordings; see
    :mod:`~actioncache.replay.effects`): a browser replay checks each step against it. ``secret`` marks an ``input_text``
    whose text must never be stored: ``True`` (named after the field) or a name such as
    ``"password"``. Password fields are secret without being marked. The stored plan keeps the
    name in place of the text, and a replay needs a value for it (``secrets={name: value}`` or the
    personalization hook) or stops there.
    """

    action_type: str
    element_id: str | None = None
    fingerprint: str | None = None
    text: str | None = None
    option: dict[str, Any] | None = None
    intention: str | None = None
    reasoning: str | None = None
    element: dict[str, Any] | None = None
    data: dict[str, Any] = field(default_factory=dict)
    secret: str | bool | None = None
    choose: dict[str, Any] | None = None
    effects: dict[str, Any] | None = None

    _FIELDS = ("action_type", "element_id", "fingerprint", "text", "option", "intention", "reasoning", "element", "data",
               "secret", "choose", "effects")

    @classmethod
    def for_element(cls, action_type: str, element: Element | Mapping[str, Any], *,
                    ignore: Iterable[str] = (), **fields: Any) -> Action:
        """An action on ``element`` with its fingerprint filled in and the element's data kept.

        :meth:`PlanCache.record` re-derives the fingerprint from the kept element with the cache's
        own ``ignore``, so record and replay always agree on it.
        """
        element = Element.from_dict(element)
        return cls(action_type, element_id=element.id, fingerprint=element_fingerprint(element, ignore=ignore),
                   element=element.to_dict(), **fields)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Action) -> Action:
        if isinstance(data, Action):
            return data.copy()
        if not isinstance(data, Mapping):
            raise TypeError(f"an action must be a dict or Action, not {type(data).__name__}")
        kind = data.get("action_type", data.get("type"))
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"an action needs a non-empty 'action_type' (got keys {sorted(data)})")
        known = {k: copy.deepcopy(data[k]) for k in cls._FIELDS if k in data and k != "action_type"}
        extra = {k: copy.deepcopy(v) for k, v in data.items() if k not in cls._FIELDS and k != "type"}
        if extra:
            known["data"] = {**known.get("data", {}), **extra}
        return cls(action_type=kind.lower(), **known)

    def to_dict(self, *, secrets: bool = False) -> dict[str, Any]:
        """The action as JSON. A secret action's text (its value for this run) is left out unless
        ``secrets=True``: what is printed, logged or serialized by default never carries it."""
        out = {k: copy.deepcopy(getattr(self, k)) for k in self._FIELDS}
        if self.secret and not secrets:
            out["text"] = None
        return {k: v for k, v in out.items() if v is not None and v != {} or k == "action_type"}

    def __repr__(self) -> str:
        shown = []
        for name in self._FIELDS:
            value = getattr(self, name)
            if name == "text" and self.secret and value is not None:
                shown.append("text='***'")
            elif value is not None and value != {} or name == "action_type":
                shown.append(f"{name}={value!r}")
        return f"Action({', '.join(shown)})"

    def copy(self) -> Action:
        return Action(**{k: copy.deepcopy(getattr(self, k)) for k in self._FIELDS})


# --- signatures ---------------------------------------------------------------------------------

def normalize_goal(goal: str) -> str:
    """Goals match when equal after trimming and collapsing whitespace (case is kept: it can matter)."""
    if not isinstance(goal, str) or not goal.strip():
        raise ValueError("a navigation goal is required to build a plan signature (e.g. 'find the cheapest lamp')")
    return " ".join(goal.split())


@dataclass(frozen=True)
class PlanSignature:
    """What identifies a task: the URL pattern it starts on and its navigation goal."""

    url_pattern: str
    goal: str

    @classmethod
    def of(cls, url: str, goal: str, rule: UrlRule = DEFAULT_URL_RULE) -> PlanSignature:
        return cls(url_pattern(url, rule), normalize_goal(goal))

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON of the signature: the part of the store key it owns."""
        return sha256_hex({"url_pattern": self.url_pattern, "goal": self.goal})

    def to_dict(self) -> dict[str, str]:
        return {"url_pattern": self.url_pattern, "goal": self.goal}


def as_signature(signature: PlanSignature | Mapping[str, Any] | tuple[str, str],
                 rule: UrlRule = DEFAULT_URL_RULE) -> PlanSignature:
    """Accept a :class:`PlanSignature`, ``(url, goal)`` or ``{"url"|"url_pattern": ..., "goal": ...}``.

    ``rule`` normalizes the URL (see :class:`UrlRule`); a :class:`PlanSignature` is taken as built.
    """
    if isinstance(signature, PlanSignature):
        return signature
    if isinstance(signature, tuple) and len(signature) == 2:
        return PlanSignature.of(*signature, rule=rule)
    if isinstance(signature, Mapping):
        url = signature.get("url", signature.get("url_pattern"))
        return PlanSignature.of(url, signature.get("goal"), rule=rule)  # type: ignore[arg-type]
    raise TypeError(
        "a plan signature is a PlanSignature, a (url, goal) tuple or a {'url': ..., 'goal': ...} dict, "
        f"not {type(signature).__name__}"
    )
