"""element_fingerprint: deterministic, blind to churn, sensitive to what an element is."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.replay import STABLE_ATTRIBUTES, Element, element_fingerprint, fingerprint_payload

CHURN = ("id", "class", "style", "data-reactid", "tabindex", "data-v-7ab2", "jsaction")
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
stable_attrs = st.dictionaries(st.sampled_from([a for a in STABLE_ATTRIBUTES if a != "value"]), text.filter(str.strip),
                               max_size=6)
churn_attrs = st.dictionaries(st.sampled_from(CHURN), text, max_size=len(CHURN))


@settings(max_examples=150, deadline=None)
@given(stable=stable_attrs, churn=churn_attrs, label=text, seed=st.integers(0, 2**32))
def test_attribute_order_never_matters(stable, churn, label, seed):
    attributes = {**churn, **stable}
    items = list(attributes.items())
    random.Random(seed).shuffle(items)
    one = Element("e1", "button", attributes, label)
    other = {"id": "e99", "tag": "button", "attributes": dict(items), "text": label}
    assert element_fingerprint(one) == element_fingerprint(other)


@settings(max_examples=150, deadline=None)
@given(stable=stable_attrs, churn=churn_attrs, other_churn=churn_attrs, label=text)
def test_ids_classes_and_styles_do_not_count(stable, churn, other_churn, label):
    before = Element("e1", "a", {**churn, **stable}, label)
    after = Element("e7", "a", {**other_churn, **stable}, label)
    assert element_fingerprint(before) == element_fingerprint(after)


@settings(max_examples=100, deadline=None)
@given(stable=stable_attrs, name=st.sampled_from([a for a in STABLE_ATTRIBUTES if a not in ("value", "href", "formaction", "formmethod")]),
       value=text.filter(str.strip))
def test_a_stable_attribute_changes_the_fingerprint(stable, name, value):
    before = Element("e1", "input", dict(stable))
    changed = dict(stable)
    changed[name] = changed.get(name, "") + " " + value + "!"
    assert element_fingerprint(before) != element_fingerprint(Element("e1", "input", changed))


def test_whitespace_and_case_are_normalized():
    a = Element("e1", "BUTTON", {"TYPE": "Submit", "aria-label": "  Go   now "}, "\n  Search \t")
    b = Element("e2", "button", {"type": "submit", "aria-label": "Go now"}, "Search")
    assert element_fingerprint(a) == element_fingerprint(b)
    assert fingerprint_payload(b) == {"v": 3, "tag": "button", "text": "Search",
                                      "attributes": {"type": "submit", "aria-label": "Go now"}}


def test_value_counts_only_where_it_is_a_label():
    radio_s = Element("e1", "input", {"type": "radio", "name": "size", "value": "s"})
    radio_l = Element("e2", "input", {"type": "radio", "name": "size", "value": "l"})
    assert element_fingerprint(radio_s) != element_fingerprint(radio_l)
    typed = Element("e1", "input", {"type": "text", "name": "q", "value": "lamp"})
    empty = Element("e1", "input", {"type": "text", "name": "q"})
    assert element_fingerprint(typed) == element_fingerprint(empty)


def test_links_compare_by_url_pattern_and_text_boxes_not_by_content():
    a = Element("e1", "a", {"href": "/cart?sid=8f3a9"}, "Cart")
    b = Element("e5", "a", {"href": "/cart?sid=00c41"}, "Cart")
    c = Element("e5", "a", {"href": "/deals?sid=00c41"}, "Cart")
    assert element_fingerprint(a) == element_fingerprint(b) != element_fingerprint(c)
    draft = Element("e1", "textarea", {"name": "note"}, "half-typed text")
    assert element_fingerprint(draft) == element_fingerprint(Element("e1", "textarea", {"name": "note"}))


def test_ignore_leaves_parts_out():
    old = Element("e1", "button", {"type": "submit", "title": "Search"}, "Search")
    new = Element("e1", "button", {"type": "submit", "title": "Search"}, "Find")
    assert element_fingerprint(old) != element_fingerprint(new)
    assert element_fingerprint(old, ignore=("text",)) == element_fingerprint(new, ignore=["TEXT"])
    div = Element("e1", "div", {"role": "button", "title": "Search"}, "Search")
    assert element_fingerprint(old, ignore=("tag", "type", "role")) == element_fingerprint(div, ignore=("tag", "type", "role"))


def test_fingerprint_is_sha256_hex():
    fp = element_fingerprint({"id": "e1", "tag": "a", "attributes": {}, "text": "Home"})
    assert len(fp) == 64 and int(fp, 16) >= 0
