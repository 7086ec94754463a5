"""Read a live DOM into a :class:`~actioncache.replay.Page`, by the same rule as ``page_from_html``.

:data:`SNAPSHOT_JS` runs in the page (``page.evaluate(SNAPSHOT_JS, PAGE_RULE)``) and returns the
page as JSON text. It walks the document exactly as :mod:`actioncache.replay.html` walks a parsed
tree: the tag and role tables come from the same :data:`~actioncache.replay.html.PAGE_RULE`, the
text, label, name, item and option rules are the same, and whitespace is collapsed on the same
characters as Python's ``str.split()``. Same-origin iframes are read where they stand (the HTML
reader can only read ``srcdoc``). It keeps the elements it collected in a page-side registry (under a
``Symbol`` of the top window, not in the DOM), so the driver can act on element ``e7`` as the 7th
entry of the last snapshot.

What only a live page knows is added beside the rule, never in place of it: ``was_password`` (a text
box that was a password field earlier in the page's life: a "Show password" toggle does not make
its text storable), ``idle_ms`` (how long the DOM has been still, so a replay can stop waiting for an
element that is not coming) and ``unread_frames`` (iframes of another origin, not readable here).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..html import MAX_ITEM_CHARS, PAGE_RULE
from ..models import Element, Page

REGISTRY = "actioncache.elements"
#: Page-side state kept across snapshots: the password history and the time of the last DOM change.
STATE = "actioncache.state"

#: Python's str.split() whitespace, so JS and Python collapse text the same way.
_WHITESPACE = r"[\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"

SNAPSHOT_JS = r"""
(rule) => {
  const set = (xs) => new Set(xs);
  const interactive = set(rule.interactive), skip = set(rule.skip), inputContent = set(rule.inputContent);
  const block = set(rule.block), labelable = set(rule.labelable), markers = rule.markers;
  const itemTags = set(rule.itemTags), itemRoles = set(rule.itemRoles), noRoleInputs = set(rule.noRoleInputs);
  const nameFromContent = set(rule.nameFromContent), contentTags = set(rule.contentTags);
  const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const WS = new RegExp("%(ws)s", "g");
  const words = (t) => t.split(WS).filter((w) => w.length);
  const collapseText = (t) => words(t).join(" ");
  const collapse = (pieces) => collapseText(pieces.join(""));
  const typeOf = (attrs) => (attrs.type || "").replace(WS, "").toLowerCase();
  const attrsOf = (el) => {
    const out = Object.create(null);
    for (const a of el.attributes) { const n = a.name.toLowerCase(); if (!(n in out)) out[n] = a.value; }
    return out;
  };
  const isInteractive = (tag, attrs) =>
    !(tag === "input" && typeOf(attrs) === "hidden") && (interactive.has(tag) || markers.some((m) => m in attrs));
  const isLabelable = (tag, attrs) => labelable.has(tag) && !(tag === "input" && typeOf(attrs) === "hidden");
  const firstRole = (attrs) => { const r = words(attrs.role || ""); return r.length ? r[0].toLowerCase() : ""; };
  const isItem = (tag, attrs) => itemTags.has(tag) || rule.itemAttribute in attrs || itemRoles.has(firstRole(attrs));
  const submitInputs = set(rule.submitInputs), nonSubmitButtons = set(rule.nonSubmitButtons);
  const submits = (tag, attrs) => (tag === "button" && !nonSubmitButtons.has(typeOf(attrs)))
    || (tag === "input" && submitInputs.has(typeOf(attrs)));
  const addDestination = (attrs, owner) => {
    if (!owner && !("formaction" in attrs)) return;
    owner = owner || {};
    if (!("formaction" in attrs)) attrs.formaction = "action" in owner ? owner.action : "";
    if (!("formmethod" in attrs)) attrs.formmethod = "method" in owner ? owner.method : "";
  };
  const roleOf = (tag, attrs) => {
    const explicit = firstRole(attrs);
    if (explicit) return explicit;
    if (tag === "input") {
      const kind = typeOf(attrs);
      if (noRoleInputs.has(kind)) return "";
      return own(rule.inputRoles, kind) ? rule.inputRoles[kind] : "textbox";
    }
    if (tag === "a") return "href" in attrs ? "link" : "";
    if (tag === "select") {
      const size = (attrs.size || "").replace(WS, "");
      return "multiple" in attrs || (/^[0-9]+$/.test(size) && parseInt(size, 10) > 1) ? "listbox" : "combobox";
    }
    return own(rule.tagRoles, tag) ? rule.tagRoles[tag] : "";
  };
  const nameOf = (tag, attrs, role, text, label, labelledby) => {
    const candidates = [labelledby, attrs["aria-label"] || ""];
    if (tag === "input") {
      const kind = typeOf(attrs);
      if (kind === "button" || kind === "submit" || kind === "reset")
        candidates.push(attrs.value || (own(rule.defaultButtonNames, kind) ? rule.defaultButtonNames[kind] : ""));
      else if (kind === "image") candidates.push(attrs.alt || attrs.value || rule.defaultButtonNames.image);
    }
    candidates.push(label);
    if (contentTags.has(tag) || nameFromContent.has(role)) candidates.push(text);
    candidates.push(attrs.title || "");
    if (tag === "input" || tag === "textarea") candidates.push(attrs.placeholder || "");
    for (const c of candidates) { const name = collapseText(c); if (name) return name; }
    return "";
  };
  const frameLabel = (attrs) => {
    for (const n of ["name", "title"]) { const v = collapseText(attrs[n] || ""); if (v) return v; }
    const src = collapseText((attrs.src || "").split("#")[0].split("?")[0]);
    if (src) return src;
    return "srcdoc" in attrs ? "srcdoc" : "iframe";
  };

  const STATE = Symbol.for("%(state)s");
  const state = window[STATE] || (window[STATE] = {passwords: new WeakSet(), observed: new WeakSet(), lastChange: Date.now()});
  if (!state.history) Object.assign(state, {history: new WeakMap(), uids: new WeakMap(), next: 0,
                                            token: Math.random().toString(36).slice(2)});
  // What makes a field secret, as it was at each moment the page was looked at or changed: a field
  // that was a PIN box, or had a one-time-code token, at any time of the recording stays secret.
  const FACTS = ["type", "autocomplete", "name", "id", "aria-label", "placeholder", "title", "inputmode", "pattern"];
  const remember = (el, facts) => {
    let h = state.history.get(el);
    if (!h) state.history.set(el, h = []);
    const key = JSON.stringify(facts);
    if (h.length < 32 && !h.some((x) => x.key === key)) h.push({key, facts});
  };
  // The text right next to a form field and outside its label (a unit, a currency sign, a suffix):
  // what a typed amount means. Up to two siblings each way, stopping at a label, a control or a block.
  const NEXT_STOP = /^(input|select|textarea|button|label|br|hr|p|div|li|ul|ol|tr|td|th|table|form|fieldset|section|h[1-6])$/;
  const adjacentOf = (el) => {
    const side = (dir) => {
      const out = [];
      let n = el[dir];
      for (let k = 0; n && k < 2; n = n[dir]) {
        if (n.nodeType === 1) {
          if (NEXT_STOP.test(n.tagName.toLowerCase()) || n.querySelector("input,select,textarea,button,label")) break;
        } else if (n.nodeType !== 3) continue;
        const t = collapseText(n.textContent || "");
        if (t) { out.push(t.slice(0, 40)); k++; }
      }
      return out;
    };
    const before = side("previousSibling").reverse(), after = side("nextSibling");
    return before.length || after.length ? before.join(" ") + " | " + after.join(" ") : "";
  };
  const uidOf = (el) => {
    let uid = state.uids.get(el);
    if (!uid) state.uids.set(el, uid = state.token + ":" + (++state.next));
    return uid;
  };
  const observe = (doc) => {
    if (state.observed.has(doc)) return;
    state.observed.add(doc);
    const Observer = (doc.defaultView && doc.defaultView.MutationObserver) || MutationObserver;
    new Observer((changes) => {
      state.lastChange = Date.now();
      for (const c of changes) {
        if (c.type === "attributes" && c.attributeName === "type" && (c.oldValue || "").replace(WS, "").toLowerCase() === "password")
          state.passwords.add(c.target);
        if (c.type === "attributes" && FACTS.includes(c.attributeName))
          remember(c.target, {[c.attributeName]: c.oldValue === null ? "" : c.oldValue});
      }
    }).observe(doc, {subtree: true, childList: true, characterData: true, attributes: true, attributeOldValue: true});
  };

  const walk = {records: [], handles: [], unread: 0};
  const Reader = (frame, into) => {
    const r = {own: [], labels: [], waiting: [], firstById: new Map(), firstNodeById: new Map(), collectors: [],
               forms: [], items: []};
    const addText = (t) => { for (const c of r.collectors) c.push(t); };
    const walkChildren = (node) => {
      for (let child = node.firstChild; child; child = child.nextSibling) {
        if (child.nodeType === 3) addText(child.data);
        else if (child.nodeType === 1) r.enter(child);
      }
    };
    const readOptions = (select, record) => {
      for (const option of select.querySelectorAll("option")) {
        const inner = Reader("", null), pieces = [];
        inner.collectors.push(pieces);
        inner.enter(option);
        const text = collapse(pieces), value = option.getAttribute("value");
        record.options.push({value: value === null ? text : value, text, selected: option.hasAttribute("selected")});
      }
    };
    const readFrame = (el, attrs) => {
      let doc = null;
      try { doc = el.contentDocument; } catch (e) { doc = null; }
      if (!doc || !doc.documentElement) { walk.unread += 1; return; }
      const label = frameLabel(attrs);
      observe(doc);
      const inner = Reader(frame ? frame + " > " + label : label, into);
      inner.enter(doc.documentElement);
      inner.finishDocument();
    };
    const textOf = (node) => {
      const label = collapseText(attrsOf(node)["aria-label"] || "");
      if (label) return label;
      const inner = Reader("", null), pieces = [];
      inner.collectors.push(pieces);
      inner.enter(node);
      return collapse(pieces);
    };
    r.enter = (el) => {
      const tag = el.localName;
      const attrs = attrsOf(el);
      if (attrs.id && !r.firstNodeById.has(attrs.id)) r.firstNodeById.set(attrs.id, el);
      if (tag === "iframe" && into) readFrame(el, attrs);
      if (skip.has(tag)) return;
      let record = null;
      if (isInteractive(tag, attrs)) {
        record = {tag, attributes: attrs, text: [], labels: [], labelable: isLabelable(tag, attrs), frame,
                  item: r.items.length ? r.items[r.items.length - 1] : null, el};
        if (tag === "select") record.options = [];
        record.owner = r.forms.length ? r.forms[r.forms.length - 1] : null;
        r.own.push(record);
        if (into) { into.records.push(record); into.handles.push(el); }
        if (into && tag === "input" && typeOf(attrs) === "password") state.passwords.add(el);
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
      const ownText = record && record.text !== null ? record.text : null;
      let item = null;
      if (isItem(tag, attrs)) { item = []; r.items.push(item); if (record) record.item = item; }
      let label = null;
      if (tag === "label") {
        label = {text: [], for: ("for" in attrs) ? attrs.for : null, control: null};
        r.labels.push(label);
        if (label.for === null) r.waiting.push(label);
      }
      if (ownText) r.collectors.push(ownText);
      if (label) r.collectors.push(label.text);
      if (item) r.collectors.push(item);
      if (tag === "form") r.forms.push(attrs);
      walkChildren(el);
      if (tag === "form") r.forms.pop();
      if (block.has(tag)) addText(" ");
      if (item) { r.collectors.pop(); r.items.pop(); }
      if (label) {
        r.collectors.pop();
        const i = r.waiting.indexOf(label);
        if (i >= 0) r.waiting.splice(i, 1);
      }
      if (ownText) r.collectors.pop();
    };
    r.finishDocument = () => {
      for (const label of r.labels) {
        const text = collapse(label.text);
        const control = label.for !== null ? r.firstById.get(label.for) : label.control;
        if (text && control && control.labelable) control.labels.push(text);
      }
      for (const raw of r.own) {
        const attributes = raw.attributes, labelText = raw.labels.join(" ");
        if (raw.labels.length && !("label" in attributes)) attributes.label = labelText;
        if (submits(raw.tag, attributes)) {
          const ref = "form" in attributes ? r.firstById.get(attributes.form) : undefined;
          addDestination(attributes, "form" in attributes ? (ref && ref.form) || null : raw.owner);
        }
        const text = inputContent.has(raw.tag) ? "" : collapse(raw.text);
        const labelledby = words(attributes["aria-labelledby"] || "").filter((i) => r.firstNodeById.has(i))
          .map((i) => textOf(r.firstNodeById.get(i))).filter((t) => t).join(" ");
        const role = roleOf(raw.tag, attributes);
        const done = {tag: raw.tag, attributes, text, role, name: nameOf(raw.tag, attributes, role, text, labelText, labelledby),
                      item: raw.item ? collapse(raw.item) : "", frame: raw.frame};
        if (raw.options) done.options = raw.options;
        if (state.passwords.has(raw.el) && typeOf(attributes) !== "password") done.was_password = true;
        // The live on/off state of a checkbox, radio, switch or toggle button (not an attribute: a click flips it).
        const kind = typeOf(attributes);
        if (raw.tag === "input" && (kind === "checkbox" || kind === "radio")) done.state = raw.el.checked ? "on" : "off";
        else if ("aria-checked" in attributes) done.state = attributes["aria-checked"] === "true" ? "on" : "off";
        else if ("aria-pressed" in attributes) done.state = attributes["aria-pressed"] === "true" ? "on" : "off";
        if (into) {
          const facts = {label: labelText, accessible_name: done.name};
          for (const f of FACTS) if (f in attributes) facts[f] = attributes[f];
          remember(raw.el, facts);
          const h = state.history.get(raw.el);
          if (h.length > 1) done.history = h.map((x) => x.facts);
          done.uid = uidOf(raw.el);
          if (raw.labelable && raw.el) done.adjacent = adjacentOf(raw.el);
        }
        raw.done = done;
      }
    };
    return r;
  };
  observe(document);
  const main = Reader("", walk);
  if (document.documentElement) main.enter(document.documentElement);
  main.finishDocument();
  const elements = walk.records.map((raw, i) => Object.assign({id: "e" + (i + 1)}, raw.done));
  window[Symbol.for("%(registry)s")] = walk.handles;
  // A JSON string: Playwright's own serialization of 10k objects is ten times slower.
  return JSON.stringify({url: location.href, elements, idle_ms: Date.now() - state.lastChange, unread_frames: walk.unread});
}
""" % {"ws": _WHITESPACE.replace("\\", "\\\\"), "registry": REGISTRY, "state": STATE}

#: The registry of the last snapshot, read from the top window (an element may sit in a same-origin
#: iframe, whose own window evaluates these); ``null`` in a frame of another origin.
_REGISTRY_JS = """
  let handles = null;
  try { handles = window.top[Symbol.for("%(registry)s")] || []; } catch (e) { handles = null; }
""" % {"registry": REGISTRY}

#: ``(el) => index`` of ``el`` (or of its nearest collected ancestor) in the last snapshot, -1 if it
#: is none of them, :data:`OTHER_ORIGIN` when ``el`` is in a frame of another origin.
OTHER_ORIGIN = -2
INDEX_OF_JS = """
(el) => {%(registry)s
  if (handles === null) return %(other)d;
  for (let node = el; node; node = node.parentElement) {
    const i = handles.indexOf(node);
    if (i >= 0) return i;
  }
  return -1;
}
""" % {"registry": _REGISTRY_JS, "other": OTHER_ORIGIN}

#: ``(index) => element`` of the last snapshot, or null when it left the document.
ELEMENT_AT_JS = """
(i) => {%(registry)s
  const el = (handles || [])[i];
  return el && el.isConnected ? el : null;
}
""" % {"registry": _REGISTRY_JS}


def page_from_snapshot(data: Mapping[str, Any] | str) -> Page:
    """The :class:`Page` of a :data:`SNAPSHOT_JS` result (its JSON text, or that text decoded)."""
    if isinstance(data, str):
        data = json.loads(data)
    assert isinstance(data, Mapping)
    elements = []
    for raw in data.get("elements") or []:
        element = Element.from_dict(raw)
        element.item = element.item[:MAX_ITEM_CHARS]
        elements.append(element)
    page = Page(elements, url=data.get("url"))
    page.unread_frames = int(data.get("unread_frames") or 0)
    idle = data.get("idle_ms")
    page.idle_ms = float(idle) if isinstance(idle, (int, float)) else None
    return page


def snapshot_arguments() -> dict[str, Any]:
    """The argument :data:`SNAPSHOT_JS` takes: the page rule shared with ``page_from_html``."""
    return dict(PAGE_RULE)
