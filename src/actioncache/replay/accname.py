"""Roles and accessible names, computed by one rule from HTML text and from a live DOM.

A screen reader announces a form field by its *accessible name*, not by its ``id`` or ``name``
attribute: "Email, edit text". What the user (and an agent) reads there is what the field means,
so a fingerprint that leaves it out cannot tell an "Email" box from a "Phone" box that kept the
same attributes and only changed the text its ``aria-labelledby`` points at.

:func:`role_of` and :func:`name_of` follow the ARIA accessible name computation, in the order the
HTML accessibility mappings give for form fields, links and buttons:

1. ``aria-labelledby``: the texts of the elements it names by id (the first element of the document
   with that id; its own ``aria-label`` if it has one, else its text), joined by a space;
2. ``aria-label``;
3. the native label: an ``input`` button's ``value`` (``Submit``/``Reset`` when it has none), an
   image button's ``alt``; the text of the field's ``<label>`` elements; for links, buttons,
   ``summary`` and roles named from their content (``button``, ``link``, ``tab``, ``option``,
   ``menuitem``...), the element's own text;
4. ``title``;
5. ``placeholder``.

The first step that gives a non-empty text wins; whitespace is collapsed. Texts are read by the
page rule of :mod:`actioncache.replay.html` (descendant text, an image's ``alt``, nothing of a
``select``'s or ``textarea``'s content). The rule leaves out what HTML text cannot show (CSS
``display: none``, ``::before`` content): both readers must see the same thing, and a test checks
that they do, on a corpus of pages, against Chromium.

The tables are data (:data:`ROLE_RULE`) so :mod:`actioncache.replay.browser.snapshot` runs the
same rule in the page.
"""

from __future__ import annotations

import re
from typing import Iterator, Mapping

_DIGITS = re.compile(r"[0-9]+")

#: Implicit roles of the tags replay collects. ``a`` is a link only with an ``href``.
TAG_ROLES = {"a": "link", "button": "button", "textarea": "textbox", "summary": "", "select": "combobox"}
#: ``input`` types and their roles; any other type (and a missing or unknown one, which browsers
#: treat as ``text``) is a textbox, except :data:`NO_ROLE_INPUTS`.
INPUT_ROLES = {"button": "button", "submit": "button", "reset": "button", "image": "button",
               "checkbox": "checkbox", "radio": "radio", "range": "slider", "number": "spinbutton",
               "search": "searchbox"}
NO_ROLE_INPUTS = frozenset({"color", "date", "datetime-local", "file", "hidden", "month", "time", "week"})
#: Roles whose name comes from the element's content (ARIA's "name from content").
NAME_FROM_CONTENT = frozenset({"button", "cell", "checkbox", "columnheader", "gridcell", "heading", "link",
                               "menuitem", "menuitemcheckbox", "menuitemradio", "option", "radio", "row",
                               "rowheader", "switch", "tab", "tooltip", "treeitem"})
#: Tags named from their content whatever their role (a link is, by its role, only with an ``href``).
CONTENT_TAGS = frozenset({"button", "summary"})
#: Default captions of ``input`` buttons without a ``value``.
DEFAULT_BUTTON_NAMES = {"submit": "Submit", "reset": "Reset", "image": "Submit"}

#: The rule as data, for the live-DOM reader.
ROLE_RULE = {
    "tagRoles": dict(TAG_ROLES),
    "inputRoles": dict(INPUT_ROLES),
    "noRoleInputs": sorted(NO_ROLE_INPUTS),
    "nameFromContent": sorted(NAME_FROM_CONTENT),
    "contentTags": sorted(CONTENT_TAGS),
    "defaultButtonNames": dict(DEFAULT_BUTTON_NAMES),
}


def collapse_text(text: str) -> str:
    """Whitespace collapsed as :func:`str.split` splits (the JS reader splits on the same characters)."""
    return " ".join(text.split())


def input_type(attributes: Mapping[str, str]) -> str:
    """An ``input``'s type as a browser reads it: whitespace removed, lower-cased (empty: text)."""
    return "".join(attributes.get("type", "").split()).lower()


def role_of(tag: str, attributes: Mapping[str, str]) -> str:
    """The element's role: the first token of its ``role`` attribute, else its tag's implicit role."""
    explicit = attributes.get("role", "").split()
    if explicit:
        return explicit[0].lower()
    if tag == "input":
        kind = input_type(attributes)
        if kind in NO_ROLE_INPUTS:
            return ""
        return INPUT_ROLES.get(kind, "textbox")
    if tag == "a":
        return "link" if "href" in attributes else ""
    if tag == "select":
        size = "".join(attributes.get("size", "").split())
        return "listbox" if "multiple" in attributes or (_DIGITS.fullmatch(size) and int(size) > 1) else "combobox"
    return TAG_ROLES.get(tag, "")


def name_of(tag: str, attributes: Mapping[str, str], role: str, *, text: str, label: str,
            labelledby: str) -> str:
    """The accessible name (see the module docstring for the order).

    ``text`` is the element's own text, ``label`` the text of its ``<label>`` elements, and
    ``labelledby`` the joined texts of the elements its ``aria-labelledby`` names, all collapsed.
    """
    for candidate in _candidates(tag, attributes, role, text, label, labelledby):
        name = collapse_text(candidate)
        if name:
            return name
    return ""


def _candidates(tag: str, attributes: Mapping[str, str], role: str, text: str, label: str,
                labelledby: str) -> Iterator[str]:
    yield labelledby
    yield attributes.get("aria-label", "")
    if tag == "input":
        kind = input_type(attributes)
        if kind in ("button", "submit", "reset"):
            yield attributes.get("value") or DEFAULT_BUTTON_NAMES.get(kind, "")
        elif kind == "image":
            yield attributes.get("alt") or attributes.get("value") or DEFAULT_BUTTON_NAMES["image"]
    yield label
    if tag in CONTENT_TAGS or role in NAME_FROM_CONTENT:
        yield text
    yield attributes.get("title", "")
    if tag in ("input", "textarea"):
        yield attributes.get("placeholder", "")
