"""The data replay works on: actions, page elements, pages and plan signatures.

A *page* is deliberately a plain data model, so any browser driver can feed it:

.. code-block:: python

    {"url": "https://shop.example/search?q=lamp",
     "elements": [{"id": "e7", "tag": "input", "attributes": {"name": "q", "type": "search"}, "text": ""},
                  {"id": "e8", "tag": "button", "attributes": {"type": "submit"}, "text": "Search"},
                  {"id": "e9", "tag": "select", "attributes": {"name": "sort"}, "text": "",
                   "options": [{"value": "price", "text": "Price", "selected": False}]}]}

``id`` is whatever the driver uses to act on the element *now* (a Playwright handle id, a
generated ``e7``); it may change on every load. ``attributes`` are the element's HTML attributes,
``text`` its visible text, ``options`` a select's choices. :func:`actioncache.replay.page_from_html`
builds one from HTML with the standard library.

A *signature* names the task a plan belongs to: the URL pattern of the page it starts on plus the
navigation goal (see :func:`url_pattern` for the normalization rule).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..keys import sha256_hex
from .urls import DEFAULT_URL_RULE, UrlRule, url_pattern


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


@dataclass
class Element:
    """One element of a page (see the module docstring for the shape)."""

    id: str
    tag: str
    attributes: dict[str, str] = field(default_factory=dict)
    text: str = ""
    options: list[dict[str, Any]] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | "Element") -> "Element":
        if isinstance(data, Element):
            return data
        if not isinstance(data, Mapping):
            raise TypeError(f"a page element must be a dict or Element, not {type(data).__name__}")
        if "id" not in data or "tag" not in data:
            raise ValueError(f"a page element needs 'id' and 'tag' (got keys {sorted(data)})")
        attributes = data.get("attributes") or {}
        if not isinstance(attributes, Mapping):
            raise TypeError("an element's 'attributes' must be a dict of attribute name to value")
        options = data.get("options")
        return cls(
            id=str(data["id"]),
            tag=str(data["tag"]),
            attributes={str(k): "" if v is None else str(v) for k, v in attributes.items()},
            text=str(data.get("text") or ""),
            options=[dict(o) for o in options] if options is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "tag": self.tag, "attributes": dict(self.attributes), "text": self.text}
        if self.options is not None:
            out["options"] = [dict(o) for o in self.options]
        return out


class Page:
    """The current page: its elements, and an index from fingerprint to element ids.

    The index is built once per ``ignore`` set, so validating a plan of *n* actions costs one pass
    over the page plus *n* dictionary lookups.
    """

    def __init__(self, elements: Iterable[Element | Mapping[str, Any]], url: str | None = None) -> None:
        self.url = url
        self.elements = [Element.from_dict(e) for e in elements]
        self._by_id = {e.id: e for e in self.elements}
        self._indexes: dict[tuple[str, ...], dict[str, list[str]]] = {}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Iterable[Any]) -> "Page":
        if isinstance(data, Mapping):
            return cls(data.get("elements") or [], url=data.get("url"))
        return cls(data)

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "elements": [e.to_dict() for e in self.elements]}

    def element(self, element_id: str) -> Element | None:
        return self._by_id.get(element_id)

    def ids_for(self, fingerprint: str, ignore: Iterable[str] = ()) -> list[str]:
        """Ids of the elements whose fingerprint (under ``ignore``) equals ``fingerprint``."""
        from .fingerprints import element_fingerprint

        ignore_key = tuple(sorted(set(ignore)))
        index = self._indexes.get(ignore_key)
        if index is None:
            index = {}
            for e in self.elements:
                index.setdefault(element_fingerprint(e, ignore=ignore_key), []).append(e.id)
            self._indexes[ignore_key] = index
        return list(index.get(fingerprint, ()))

    def __len__(self) -> int:
        return len(self.elements)

    def __repr__(self) -> str:
        return f"Page(url={self.url!r}, elements={len(self.elements)})"


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
    ``data`` keeps any other JSON fields the agent needs back. ``secret`` marks an ``input_text``
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

    _FIELDS = ("action_type", "element_id", "fingerprint", "text", "option", "intention", "reasoning", "element", "data",
               "secret")

    @classmethod
    def for_element(cls, action_type: str, element: Element | Mapping[str, Any], *,
                    ignore: Iterable[str] = (), **fields: Any) -> "Action":
        """An action on ``element`` with its fingerprint filled in and the element's data kept.

        :meth:`PlanCache.record` re-derives the fingerprint from the kept element with the cache's
        own ``ignore``, so record and replay always agree on it.
        """
        from .fingerprints import element_fingerprint

        element = Element.from_dict(element)
        return cls(action_type, element_id=element.id, fingerprint=element_fingerprint(element, ignore=ignore),
                   element=element.to_dict(), **fields)

    @classmethod
    def from_dict(cls, data: "Mapping[str, Any] | Action") -> "Action":
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

    def to_dict(self) -> dict[str, Any]:
        out = {k: copy.deepcopy(getattr(self, k)) for k in self._FIELDS}
        return {k: v for k, v in out.items() if v is not None and v != {} or k == "action_type"}

    def copy(self) -> "Action":
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
    def of(cls, url: str, goal: str, rule: UrlRule = DEFAULT_URL_RULE) -> "PlanSignature":
        return cls(url_pattern(url, rule), normalize_goal(goal))

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON of the signature: the part of the store key it owns."""
        return sha256_hex({"url_pattern": self.url_pattern, "goal": self.goal})

    def to_dict(self) -> dict[str, str]:
        return {"url_pattern": self.url_pattern, "goal": self.goal}


def as_signature(signature: "PlanSignature | Mapping[str, Any] | tuple[str, str]",
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
