"""Read a live DOM into a :class:`~actioncache.replay.Page`, by the same rule as ``page_from_html``.

:data:`SNAPSHOT_JS` runs in the page (``page.evaluate(SNAPSHOT_JS, PAGE_RULE)``) and returns the
page as JSON text. It walks the
document exactly as :mod:`actioncache.replay.html` walks a parsed tree: the tag lists come from
the same :data:`~actioncache.replay.html.PAGE_RULE`, the text, label and option rules are the
same, and whitespace is collapsed on the same characters as Python's ``str.split()``. It keeps
the elements it collected in a page-side registry (under a ``Symbol``, not in the DOM), so the
driver can act on element ``e7`` as the 7th entry of the last snapshot.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..html import PAGE_RULE
from ..models import Element, Page

REGISTRY = "actioncache.elements"

#: Python's str.split() whitespace, so JS and Python collapse text the same way.
_WHITESPACE = r"[\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"

SNAPSHOT_JS = r"""
(rule) => {
  const set = (xs) => new Set(xs);
  const interactive = set(rule.interactive), skip = set(rule.skip), inputContent = set(rule.inputContent);
  const block = set(rule.block), labelable = set(rule.labelable), markers = rule.markers;
  const WS = new RegExp("%(ws)s", "g");
  const collapse = (pieces) => pieces.join("").split(WS).filter((w) => w.length).join(" ");
  const typeOf = (attrs) => (attrs.type || "").replace(WS, "").toLowerCase();
  const attrsOf = (el) => {
    const out = {};
    for (const a of el.attributes) { const n = a.name.toLowerCase(); if (!(n in out)) out[n] = a.value; }
    return out;
  };
  const isInteractive = (tag, attrs) =>
    !(tag === "input" && typeOf(attrs) === "hidden") && (interactive.has(tag) || markers.some((m) => m in attrs));
  const isLabelable = (tag, attrs) => labelable.has(tag) && !(tag === "input" && typeOf(attrs) === "hidden");
  const submitInputs = set(rule.submitInputs), nonSubmitButtons = set(rule.nonSubmitButtons);
  const submits = (tag, attrs) => (tag === "button" && !nonSubmitButtons.has(typeOf(attrs)))
    || (tag === "input" && submitInputs.has(typeOf(attrs)));
  const addDestination = (attrs, owner) => {
    if (!owner && !("formaction" in attrs)) return;
    owner = owner || {};
    if (!("formaction" in attrs)) attrs.formaction = "action" in owner ? owner.action : "";
    if (!("formmethod" in attrs)) attrs.formmethod = "method" in owner ? owner.method : "";
  };

  const Reader = () => {
    const r = {elements: [], handles: [], labels: [], waiting: [], firstById: new Map(), collectors: [], forms: []};
    const addText = (t) => { for (const c of r.collectors) c.push(t); };
    const walk = (node) => {
      for (let child = node.firstChild; child; child = child.nextSibling) {
        if (child.nodeType === 3) addText(child.data);
        else if (child.nodeType === 1) r.enter(child);
      }
    };
    const readOptions = (select, record) => {
      for (const option of select.querySelectorAll("option")) {
        const inner = Reader(), pieces = [];
        inner.collectors.push(pieces);
        inner.enter(option);
        const text = collapse(pieces), value = option.getAttribute("value");
        record.options.push({value: value === null ? text : value, text, selected: option.hasAttribute("selected")});
      }
    };
    r.enter = (el) => {
      const tag = el.localName;
      if (skip.has(tag)) return;
      const attrs = attrsOf(el);
      let record = null;
      if (isInteractive(tag, attrs)) {
        record = {tag, attributes: attrs, text: [], labels: [], labelable: isLabelable(tag, attrs)};
        if (tag === "select") record.options = [];
        record.owner = r.forms.length ? r.forms[r.forms.length - 1] : null;
        r.elements.push(record);
        r.handles.push(el);
      } else if (labelable.has(tag)) {
        record = {tag, attributes: attrs, labels: [], labelable: true, text: null};
      }
      const nodeRecord = record || {labelable: false};
      if (tag === "form") nodeRecord.form = attrs;
      if (attrs.id && !r.firstById.has(attrs.id)) r.firstById.set(attrs.id, nodeRecord);
      if (nodeRecord.labelable && r.waiting.length) {
        for (const label of r.waiting) label.control = nodeRecord;
        r.waiting.length = 0;
      }
      if (tag === "img" && attrs.alt) addText(" " + attrs.alt + " ");
      if (block.has(tag)) addText(" ");
      if (inputContent.has(tag)) { if (tag === "select" && record) readOptions(el, record); return; }
      const own = record && record.text !== null ? record.text : null;
      let label = null;
      if (tag === "label") {
        label = {text: [], for: ("for" in attrs) ? attrs.for : null, control: null};
        r.labels.push(label);
        if (label.for === null) r.waiting.push(label);
      }
      if (own) r.collectors.push(own);
      if (label) r.collectors.push(label.text);
      if (tag === "form") r.forms.push(attrs);
      walk(el);
      if (tag === "form") r.forms.pop();
      if (block.has(tag)) addText(" ");
      if (label) {
        r.collectors.pop();
        const i = r.waiting.indexOf(label);
        if (i >= 0) r.waiting.splice(i, 1);
      }
      if (own) r.collectors.pop();
    };
    r.finish = () => {
      for (const label of r.labels) {
        const text = collapse(label.text);
        const control = label.for !== null ? r.firstById.get(label.for) : label.control;
        if (text && control && control.labelable) control.labels.push(text);
      }
      return r.elements.map((raw, i) => {
        const attributes = raw.attributes;
        if (raw.labels.length && !("label" in attributes)) attributes.label = raw.labels.join(" ");
        if (submits(raw.tag, attributes)) {
          const ref = "form" in attributes ? r.firstById.get(attributes.form) : undefined;
          addDestination(attributes, "form" in attributes ? (ref && ref.form) || null : raw.owner);
        }
        const out = {id: "e" + (i + 1), tag: raw.tag, attributes,
                     text: inputContent.has(raw.tag) ? "" : collapse(raw.text)};
        if (raw.options) out.options = raw.options;
        return out;
      });
    };
    return r;
  };
  const reader = Reader();
  if (document.documentElement) reader.enter(document.documentElement);
  const elements = reader.finish();
  window[Symbol.for("%(registry)s")] = reader.handles;
  // A JSON string: Playwright's own serialization of 10k objects is ten times slower.
  return JSON.stringify({url: location.href, elements});
}
""" % {"ws": _WHITESPACE.replace("\\", "\\\\"), "registry": REGISTRY}

#: ``(el) => index`` of ``el`` (or of its nearest collected ancestor) in the last snapshot, or -1.
INDEX_OF_JS = """
(el) => {
  const handles = window[Symbol.for("%(registry)s")] || [];
  for (let node = el; node; node = node.parentElement) {
    const i = handles.indexOf(node);
    if (i >= 0) return i;
  }
  return -1;
}
""" % {"registry": REGISTRY}

#: ``(index) => element`` of the last snapshot, or null when it left the document.
ELEMENT_AT_JS = """
(i) => {
  const el = (window[Symbol.for("%(registry)s")] || [])[i];
  return el && el.isConnected ? el : null;
}
""" % {"registry": REGISTRY}


def page_from_snapshot(data: Mapping[str, Any] | str) -> Page:
    """The :class:`Page` of a :data:`SNAPSHOT_JS` result (its JSON text, or that text decoded)."""
    if isinstance(data, str):
        data = json.loads(data)
    return Page([Element.from_dict(e) for e in data.get("elements") or []], url=data.get("url"))


def snapshot_arguments() -> dict[str, Any]:
    """The argument :data:`SNAPSHOT_JS` takes: the page rule shared with ``page_from_html``."""
    return dict(PAGE_RULE)
