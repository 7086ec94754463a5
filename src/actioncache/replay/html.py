"""``page_from_html``: turn HTML text into a :class:`~actioncache.replay.Page` with the standard library.

Only the elements an agent acts on are kept: links, buttons, form fields, and anything with a
``role``, ``onclick``, ``tabindex`` or ``contenteditable``. Each gets an id ``e1``, ``e2``... in
document order (the DOM ``id`` stays in ``attributes``), so ids shift when the page changes,
as a browser driver's handles do; fingerprints are what survive.

Derived data: a form field's ``label`` attribute is the text of its ``<label for=...>`` or of
the ``<label>`` wrapping it; a ``<select>`` gets ``options`` and no text; a link or button's
text includes the ``alt`` of images inside it. Script and style contents are skipped.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from .models import Element, Page

INTERACTIVE_TAGS = frozenset({"a", "button", "input", "select", "textarea", "summary"})
_MARKER_ATTRIBUTES = ("role", "onclick", "tabindex", "contenteditable")
_VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                        "param", "source", "track", "wbr"})
_SKIP_CONTENT = frozenset({"script", "style", "template", "noscript"})
# Tags that break a line in a browser: their text must not run into the next word.
_BLOCK_TAGS = frozenset({"address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "footer",
                         "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "nav", "ol", "p", "section",
                         "table", "td", "th", "tr", "ul"})


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[dict[str, Any]] = []
        self.labels_for: dict[str, list[str]] = {}
        # Open tags: (tag, collected element or None, label record or None).
        self._stack: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]] = []
        self._select: dict[str, Any] | None = None
        self._option: dict[str, Any] | None = None
        self._skip_depth = 0

    # -- helpers -------------------------------------------------------------------------------

    def _open_texts(self) -> list[list[str]]:
        out = [el["_text"] for _, el, _ in self._stack if el is not None]
        out += [label["text"] for _, _, label in self._stack if label is not None]
        return out

    def _space(self) -> None:
        for text in self._open_texts():
            text.append(" ")

    def _open_labels(self) -> list[dict[str, Any]]:
        return [label for _, _, label in self._stack if label is not None]

    # -- parser callbacks ------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name.lower(): value or "" for name, value in attrs}
        if tag in _SKIP_CONTENT:
            self._skip_depth += 1
            self._stack.append((tag, None, None))
            return
        if tag == "option" and self._select is not None:
            self._option = {"value": attributes.get("value"), "text": [], "selected": "selected" in attributes}
            self._select["options"].append(self._option)
        if tag in _BLOCK_TAGS:
            self._space()
        if tag == "img" and attributes.get("alt"):
            for text in self._open_texts():
                text.append(" " + attributes["alt"] + " ")
        element = None
        if tag in INTERACTIVE_TAGS or any(name in attributes for name in _MARKER_ATTRIBUTES):
            if not (tag == "input" and attributes.get("type", "").lower() == "hidden"):
                element = {"tag": tag, "attributes": attributes, "_text": []}
                if tag == "select":
                    element["options"] = []
                    self._select = element
                self.elements.append(element)
                for label in self._open_labels():
                    label["wraps"].append(element)
        label = None
        if tag == "label":
            label = {"text": [], "for": attributes.get("for"), "wraps": []}
        if tag not in _VOID_TAGS:
            self._stack.append((tag, element, label))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCK_TAGS:
            self._space()
        if tag == "option":
            self._option = None
        if not any(open_tag == tag for open_tag, _, _ in self._stack):
            return  # stray end tag: browsers ignore it, so do we
        while self._stack:
            open_tag, element, label = self._stack.pop()
            if open_tag in _SKIP_CONTENT:
                self._skip_depth -= 1
            if element is not None and element is self._select:
                self._select = None
            if label is not None:
                self._close_label(label)
            if open_tag == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._option is not None:
            self._option["text"].append(data)
            return
        for text in self._open_texts():
            text.append(data)

    def _close_label(self, label: dict[str, Any]) -> None:
        text = " ".join("".join(label["text"]).split())
        if not text:
            return
        if label["for"]:
            self.labels_for.setdefault(label["for"], []).append(text)
        for element in label["wraps"]:
            element["attributes"].setdefault("label", text)


def page_from_html(html: str, url: str | None = None) -> Page:
    """Parse ``html`` into a :class:`Page` of its interactive elements (see the module docstring)."""
    if not isinstance(html, str):
        raise TypeError(f"page_from_html needs HTML text, not {type(html).__name__}")
    parser = _PageParser()
    parser.feed(html)
    parser.close()
    while parser._stack:  # unclosed tags at the end of the document still close their labels
        parser.handle_endtag(parser._stack[-1][0])
    elements = []
    for n, raw in enumerate(parser.elements, start=1):
        attributes = raw["attributes"]
        dom_id = attributes.get("id")
        if dom_id and dom_id in parser.labels_for and "label" not in attributes:
            attributes["label"] = " ".join(parser.labels_for[dom_id])
        options = None
        if "options" in raw:
            options = [
                {"value": o["value"] if o["value"] is not None else " ".join("".join(o["text"]).split()),
                 "text": " ".join("".join(o["text"]).split()), "selected": o["selected"]}
                for o in raw["options"]
            ]
        text = "" if raw["tag"] == "select" else " ".join("".join(raw["_text"]).split())
        elements.append(Element(id=f"e{n}", tag=raw["tag"], attributes=attributes, text=text, options=options))
    return Page(elements, url=url)
