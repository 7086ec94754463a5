"""A page element, the unit replay fingerprints and acts on.

A *page* is deliberately a plain data model, so any browser driver can feed it:

.. code-block:: python

    {"url": "https://shop.example/search?q=lamp",
     "elements": [{"id": "e7", "tag": "input", "attributes": {"name": "q", "type": "search"}, "text": ""},
                  {"id": "e8", "tag": "button", "attributes": {"type": "submit"}, "text": "Search"},
                  {"id": "e9", "tag": "select", "attributes": {"name": "sort"}, "text": "",
                   "options": [{"value": "price", "text": "Price", "selected": False}]}]}

``id`` is whatever the driver uses to act on the element *now* (a Playwright handle id, a
generated ``e7``); it may change on every load. ``attributes`` are the element's HTML attributes,
``text`` its visible text, ``options`` a select's choices. ``role`` and ``name`` are its role and
accessible name (see :mod:`.accname`), ``item`` the text of the list item, table row or card it
sits in (what a click on "Add to cart" is about), ``frame`` the iframe it is in (empty in the main
document), ``was_password`` says a text box was a password field earlier in the same page's life.
:func:`actioncache.replay.page_from_html` and the browser snapshot fill them all in; a driver of
its own may leave the computed ones empty, as long as it records and replays with the same rule.

This module sits below :mod:`.fingerprints` (which hashes an element) and :mod:`.page` (which
indexes a page's elements by fingerprint), so neither has to import the other's importer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass
class Element:
    """One element of a page (see the module docstring for the shape)."""

    id: str
    tag: str
    attributes: dict[str, str] = field(default_factory=dict)
    text: str = ""
    options: list[dict[str, Any]] | None = None
    role: str = ""
    name: str = ""
    item: str = ""
    frame: str = ""
    was_password: bool = False
    #: What the browser snapshot saw the element be earlier (old attribute values, labels, names):
    #: the secrets rule reads it. Not part of the fingerprint.
    history: list[dict[str, str]] = field(default_factory=list)
    #: The browser's identity of the element for the page's life (a recorder follows a field with it).
    uid: str = ""
    #: A checkbox's, radio's, switch's or toggle button's live state, ``"on"`` or ``"off"`` (browser only).
    state: str = ""
    #: A form field's adjacent text outside its label (a unit, a currency sign), ``"before | after"``
    #: (browser only, not part of the fingerprint nor of :meth:`to_dict`: a replay compares it at the
    #: moment of typing).
    adjacent: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Element) -> Element:
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
            role=str(data.get("role") or ""),
            name=str(data.get("name") or ""),
            item=str(data.get("item") or ""),
            frame=str(data.get("frame") or ""),
            was_password=data.get("was_password") is True,
            history=[{str(k): str(v) for k, v in h.items()} for h in data.get("history") or () if isinstance(h, Mapping)],
            uid=str(data.get("uid") or ""),
            state=str(data.get("state") or ""),
            adjacent=str(data.get("adjacent") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "tag": self.tag, "attributes": dict(self.attributes), "text": self.text}
        if self.options is not None:
            out["options"] = [dict(o) for o in self.options]
        for key in _OPTIONAL:
            value = getattr(self, key)
            if value:
                out[key] = value
        return out


#: Fields written only when set, so a page of a driver that does not compute them reads as before.
_OPTIONAL = ("role", "name", "item", "frame", "was_password", "history", "state")
