"""``page_from_html``: turn HTML text into a :class:`~actioncache.replay.Page`, as a browser would.

The HTML is parsed by Lexbor (the ``selectolax`` package), a parser that follows the HTML
standard's tree construction, so implied end tags, ``<select>``/``<option>`` content, tables,
``<template>`` contents and the rest end up where a browser puts them. The page is then read off
that tree by :data:`PAGE_RULE`; :mod:`actioncache.replay.browser` reads a live DOM by the same
rule, so an element has the same fingerprint whether it came from HTML text or from Chromium.

The rule:

* **Which elements**: links, buttons, form fields, ``summary``, and anything with a ``role``,
  ``onclick``, ``tabindex`` or ``contenteditable`` attribute; not hidden inputs, and nothing inside
  ``script``, ``style``, ``template``, ``noscript``, ``iframe`` or ``object`` (an iframe's own
  document is read apart, see *Frames*). Each gets an id ``e1``, ``e2``... in document order (the DOM ``id`` stays in
  ``attributes``), so ids shift when the page changes, as a driver's handles do.
* **Attributes**: the element's HTML attributes as written (not live properties such as a text
  box's current value).
* **Text**: the element's descendant text, whitespace collapsed; block elements (``p``, ``li``,
  ``div``, ``td``...) and ``br`` separate words, an image contributes its ``alt``; ``select`` and
  ``textarea`` contribute nothing (their content is what the user picks or types) and have no text.
* **Label**: a labelable field's ``label`` attribute is the text of its labels, in document order,
  as the standard associates them: ``<label for=ID>`` names the first element with that id, a
  ``<label>`` without ``for`` names its first labelable descendant. An element's own ``label``
  attribute wins.
* **Destination**: a submit button (a ``button`` whose ``type`` is not ``button`` or ``reset``,
  an ``input`` of type ``submit`` or ``image``) gets its effective form target as its
  ``formaction`` and ``formmethod`` attributes: its own when written, else those of its form
  owner (the form its ``form`` attribute names by id, else the enclosing ``form``; ``""`` when the
  form has none). What a button does is part of what it is: the fingerprint counts them, and a
  button that now submits elsewhere is another button (see :mod:`~actioncache.replay.fingerprints`).
* **Options**: a ``select``'s ``option`` descendants, each ``{"value", "text", "selected"}`` (the
  value defaults to the text; ``selected`` is the attribute, the page author's default).
* **Role and name**: the element's role and accessible name by :mod:`~actioncache.replay.accname`
  (``aria-labelledby``, ``aria-label``, ``<label>``, content, ``title``, ``placeholder``).
* **Item**: the text of the nearest list item, table row, article (or ``role=listitem``/``row``/
  ``article``, or ``itemscope``) around the element, itself included; empty outside one. It says which
  result an "Add to cart" belongs to; it is not part of the fingerprint.
* **Frames**: an ``iframe``'s document is read where the iframe stands, by the same rule and with its
  own labels and ids, its elements marked with ``frame`` (the iframe's ``name``, else ``title``, else
  its ``src`` without query, else ``srcdoc``; nested frames joined by ``" > "``). From HTML text only a
  ``srcdoc`` document can be read; the browser reads every same-origin frame. An iframe whose document
  cannot be read (another origin, or a ``src`` in HTML text) is counted in ``Page.unread_frames``.
"""

from __future__ import annotations

from typing import Any, Callable

from .accname import ROLE_RULE, collapse_text, input_type, name_of, role_of
from .element import Element
from .page import Page

INTERACTIVE_TAGS = frozenset({"a", "button", "input", "select", "textarea", "summary"})
MARKER_ATTRIBUTES = ("role", "onclick", "tabindex", "contenteditable")
#: Subtrees that are not part of the page's own content (or not parsed as elements by a browser).
SKIP_SUBTREES = frozenset({"script", "style", "template", "noscript", "iframe", "object"})
#: Elements whose content is user input: no text of their own, none for their ancestors.
INPUT_CONTENT = frozenset({"select", "textarea"})
#: Tags that break a line in a browser: their text must not run into the next word.
BLOCK_TAGS = frozenset({"address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "footer",
                        "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "nav", "ol", "p", "section",
                        "table", "td", "th", "tr", "ul"})
#: Elements a <label> can name (the HTML standard's "labelable elements", hidden inputs excepted).
LABELABLE_TAGS = frozenset({"button", "input", "meter", "output", "progress", "select", "textarea"})
#: Input types that submit their form, and button types that do not (any other button submits).
SUBMIT_INPUT_TYPES = frozenset({"image", "submit"})
NON_SUBMIT_BUTTON_TYPES = frozenset({"button", "reset"})
#: What makes an element an *item* (a search result, a cart line, a card) whose text says what it is.
ITEM_TAGS = frozenset({"li", "tr", "article"})
ITEM_ROLES = frozenset({"listitem", "row", "article"})
ITEM_ATTRIBUTE = "itemscope"
#: Longer item texts are cut (a card with a long description is named by its start).
MAX_ITEM_CHARS = 512

#: The rule as data, shared with the live-DOM reader in :mod:`actioncache.replay.browser`.
PAGE_RULE = {
    "interactive": sorted(INTERACTIVE_TAGS),
    "markers": list(MARKER_ATTRIBUTES),
    "skip": sorted(SKIP_SUBTREES),
    "inputContent": sorted(INPUT_CONTENT),
    "block": sorted(BLOCK_TAGS),
    "labelable": sorted(LABELABLE_TAGS),
    "submitInputs": sorted(SUBMIT_INPUT_TYPES),
    "nonSubmitButtons": sorted(NON_SUBMIT_BUTTON_TYPES),
    "itemTags": sorted(ITEM_TAGS),
    "itemRoles": sorted(ITEM_ROLES),
    "itemAttribute": ITEM_ATTRIBUTE,
    "maxItem": MAX_ITEM_CHARS,
    **ROLE_RULE,
}


def is_interactive(tag: str, attributes: dict[str, str]) -> bool:
    if tag == "input" and input_type(attributes) == "hidden":
        return False
    return tag in INTERACTIVE_TAGS or any(name in attributes for name in MARKER_ATTRIBUTES)


def is_labelable(tag: str, attributes: dict[str, str]) -> bool:
    return tag in LABELABLE_TAGS and not (tag == "input" and input_type(attributes) == "hidden")


def is_item(tag: str, attributes: dict[str, str]) -> bool:
    roles = attributes.get("role", "").split()
    return tag in ITEM_TAGS or ITEM_ATTRIBUTE in attributes or bool(roles and roles[0].lower() in ITEM_ROLES)


def submits(tag: str, attributes: dict[str, str]) -> bool:
    """Whether the element is a submit button (see "Destination" in the module docstring)."""
    kind = input_type(attributes)
    return (tag == "button" and kind not in NON_SUBMIT_BUTTON_TYPES) or (tag == "input" and kind in SUBMIT_INPUT_TYPES)


def add_destination(attributes: dict[str, str], owner: dict[str, str] | None) -> None:
    """Write the effective ``formaction``/``formmethod`` of a submit button into its attributes."""
    if owner is None and "formaction" not in attributes:
        return  # no form to submit: the button does nothing a plan could replay wrongly
    owner = owner or {}
    attributes.setdefault("formaction", owner.get("action", ""))
    attributes.setdefault("formmethod", owner.get("method", ""))


def frame_label(attributes: dict[str, str]) -> str:
    """How an iframe is named in its elements' ``frame``: name, title, src without query, or srcdoc."""
    for name in ("name", "title"):
        if collapse_text(attributes.get(name, "")):
            return collapse_text(attributes[name])
    src = collapse_text(attributes.get("src", "").split("#", 1)[0].split("?", 1)[0])
    if src:
        return src
    return "srcdoc" if "srcdoc" in attributes else "iframe"


def collapse(pieces: list[str]) -> str:
    return collapse_text("".join(pieces))


def _attributes(node: Any) -> dict[str, str]:
    return {str(k).lower(): "" if v is None else str(v) for k, v in node.attributes.items()}


class _Walk:
    """What every document of a page adds to: the collected elements in order, frames not read."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.unread_frames = 0


class _Reader:
    """One pass over one document in document order; open elements collect the text inside them."""

    def __init__(self, walk: _Walk | None = None, frame: str = "") -> None:
        self.walk = walk or _Walk()
        self.frame = frame
        self.own: list[dict[str, Any]] = []  # this document's records, for its labels and ids
        self.labels: list[dict[str, Any]] = []
        self.first_by_id: dict[str, dict[str, Any]] = {}
        self.first_node_by_id: dict[str, Any] = {}
        self.collectors: list[list[str]] = []  # text lists of the open elements that collect text
        self.waiting: list[dict[str, Any]] = []  # open labels without for= that have no control yet
        self.forms: list[dict[str, str]] = []  # attributes of the open form elements
        self.items: list[list[str]] = []  # text lists of the open items

    def add_text(self, text: str) -> None:
        for pieces in self.collectors:
            pieces.append(text)

    def read(self, root: Any) -> None:
        # Iterative, so a deeply nested page cannot hit Python's recursion limit. A stack entry is
        # a node to enter, or a closing action (a callable) to run after the node's children.
        stack: list[Any] = [root]
        while stack:
            item = stack.pop()
            if callable(item):
                item()
                continue
            if item.is_text_node:
                self.add_text(item.text_content or "")
                continue
            if not item.is_element_node:
                continue  # comments, doctype
            closing = self.enter(item)
            if closing is None:
                continue
            stack.append(closing)
            children = []
            child = item.child
            while child is not None:
                children.append(child)
                child = child.next
            stack.extend(reversed(children))

    def enter(self, node: Any) -> Callable[[], None] | None:
        """Open ``node``; returns None to skip its subtree, or a callable to run when it closes."""
        tag = (node.tag or "").lower()
        attributes = _attributes(node)
        dom_id = attributes.get("id")
        if dom_id and dom_id not in self.first_node_by_id:
            self.first_node_by_id[dom_id] = node
        if tag == "iframe":
            self.read_frame(attributes)
        if tag in SKIP_SUBTREES:
            return None
        record: dict[str, Any] | None = None
        if is_interactive(tag, attributes):
            record = {"tag": tag, "attributes": attributes, "text": [], "labels": [],
                      "labelable": is_labelable(tag, attributes), "frame": self.frame,
                      "item": self.items[-1] if self.items else None}
            if tag == "select":
                record["options"] = []
            record["owner"] = self.forms[-1] if self.forms else None
            self.walk.records.append(record)
            self.own.append(record)
        elif tag in LABELABLE_TAGS:  # a meter/output/progress can be labelled but is not collected
            record = {"tag": tag, "attributes": attributes, "labels": [], "labelable": True, "text": None}
        node_record = record or {"labelable": False}
        if tag == "form":
            node_record["form"] = attributes
        if dom_id and dom_id not in self.first_by_id:
            self.first_by_id[dom_id] = node_record
        if node_record["labelable"] and self.waiting:
            # Open labels without for= name their first labelable descendant: this one.
            for waiting in self.waiting:
                waiting["control"] = node_record
            self.waiting.clear()
        if tag == "img" and attributes.get("alt"):
            self.add_text(" " + attributes["alt"] + " ")
        if tag in BLOCK_TAGS:
            self.add_text(" ")

        if tag in INPUT_CONTENT:
            if tag == "select" and record is not None:
                self.read_options(node, record)
            return None  # nothing inside counts as text, and nothing inside is collected
        own: list[str] | None = record["text"] if record is not None and record["text"] is not None else None
        item: list[str] | None = None
        if is_item(tag, attributes):
            item = []
            self.items.append(item)
            if record is not None:
                record["item"] = item  # an item that is itself interactive is its own item
        label: dict[str, Any] | None = None
        if tag == "label":
            label = {"text": [], "for": attributes.get("for"), "control": None}
            self.labels.append(label)
            if label["for"] is None:
                self.waiting.append(label)
        for pieces in (own, label["text"] if label else None, item):
            if pieces is not None:
                self.collectors.append(pieces)
        if tag == "form":
            self.forms.append(attributes)
        return self.closer(tag, own, label, item)

    def closer(self, tag: str, own: list[str] | None, label: dict[str, Any] | None,
               item: list[str] | None) -> Callable[[], None]:
        def close() -> None:
            if tag == "form":
                self.forms.pop()
            if tag in BLOCK_TAGS:
                self.add_text(" ")
            # Collectors nest like the elements, so the ones this element opened are on top.
            if item is not None:
                self.collectors.pop()
                self.items.pop()
            if label is not None:
                self.collectors.pop()
                # Closed without a labelable descendant: it names nothing.
                self.waiting[:] = [w for w in self.waiting if w is not label]
            if own is not None:
                self.collectors.pop()
        return close

    def read_frame(self, attributes: dict[str, str]) -> None:
        """Read an iframe's ``srcdoc`` document in place; any other frame document is not in the text."""
        if "srcdoc" not in attributes:
            src = collapse_text(attributes.get("src", ""))
            if src and src.lower() != "about:blank":
                self.walk.unread_frames += 1
            return
        label = frame_label(attributes)
        inner = _Reader(self.walk, f"{self.frame} > {label}" if self.frame else label)
        inner.read_document(attributes["srcdoc"])

    def read_document(self, html: str) -> None:
        from selectolax.lexbor import LexborHTMLParser

        root = LexborHTMLParser(html).root
        if root is not None:
            self.read(root)
        self.finish_document()

    def text_of(self, node: Any) -> str:
        """A node's text by the page rule (for ``aria-labelledby``): its own ``aria-label`` first."""
        aria_label = collapse_text(_attributes(node).get("aria-label", ""))
        if aria_label:
            return aria_label
        inner = _Reader()
        pieces: list[str] = []
        inner.collectors.append(pieces)
        inner.read(node)
        return collapse(pieces)

    def read_options(self, select: Any, record: dict[str, Any]) -> None:
        for option in select.css("option"):
            inner = _Reader()
            pieces: list[str] = []
            inner.collectors.append(pieces)
            inner.read(option)
            text = collapse(pieces)
            attrs = option.attributes
            value = attrs.get("value")
            record["options"].append({"value": text if value is None else str(value), "text": text,
                                      "selected": "selected" in attrs})

    def finish_document(self) -> None:
        """Resolve this document's labels, ids and names into its records."""
        for label in self.labels:
            text = collapse(label["text"])
            control = self.first_by_id.get(label["for"]) if label["for"] is not None else label["control"]
            if text and control is not None and control.get("labelable"):
                control["labels"].append(text)
        for raw in self.own:
            attributes = raw["attributes"]
            label_text = " ".join(raw["labels"])
            if raw["labels"] and "label" not in attributes:
                attributes["label"] = label_text
            if submits(raw["tag"], attributes):
                if "form" in attributes:  # the form attribute wins over the enclosing form, even unmatched
                    owner = (self.first_by_id.get(attributes["form"]) or {}).get("form")
                else:
                    owner = raw["owner"]
                add_destination(attributes, owner)
            text = "" if raw["tag"] in INPUT_CONTENT else collapse(raw["text"])
            referenced = [self.first_node_by_id[i] for i in attributes.get("aria-labelledby", "").split()
                          if i in self.first_node_by_id]
            labelledby = " ".join(t for t in (self.text_of(n) for n in referenced) if t)
            role = role_of(raw["tag"], attributes)
            raw["done"] = {"tag": raw["tag"], "attributes": attributes, "text": text, "options": raw.get("options"),
                           "role": role, "frame": raw["frame"],
                           "name": name_of(raw["tag"], attributes, role, text=text, label=label_text,
                                           labelledby=labelledby),
                           "item": collapse(raw["item"])[:MAX_ITEM_CHARS] if raw["item"] is not None else ""}
            # The on/off state of a checkbox, radio, switch or toggle button, by the snapshot's rule
            # (browser/snapshot.py): in HTML text the checked attribute is the initial state.
            kind = "".join(attributes.get("type", "").split()).lower()  # as typeOf: whitespace removed
            if raw["tag"] == "input" and kind in ("checkbox", "radio"):
                raw["done"]["state"] = "on" if "checked" in attributes else "off"
            elif "aria-checked" in attributes:
                raw["done"]["state"] = "on" if attributes["aria-checked"] == "true" else "off"
            elif "aria-pressed" in attributes:
                raw["done"]["state"] = "on" if attributes["aria-pressed"] == "true" else "off"

    def page(self, url: str | None) -> Page:
        self.finish_document()
        out = [Element(id=f"e{n}", **raw["done"]) for n, raw in enumerate(self.walk.records, start=1)]
        page = Page(out, url=url)
        page.unread_frames = self.walk.unread_frames
        return page


def page_from_html(html: str, url: str | None = None) -> Page:
    """Parse ``html`` into a :class:`Page` of its interactive elements (see the module docstring)."""
    if not isinstance(html, str):
        raise TypeError(f"page_from_html needs HTML text, not {type(html).__name__}")
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError as exc:  # pragma: no cover - a base dependency; only a broken install lacks it
        raise ImportError("page_from_html needs the selectolax package (a dependency of actioncache): "
                          "pip install selectolax") from exc
    tree = LexborHTMLParser(html)
    reader = _Reader()
    root = tree.root
    if root is not None:
        reader.read(root)
    return reader.page(url)
