"""Roles and accessible names in the page model and the fingerprint (issue 29, accessible names).

A label whose meaning changed through ``aria-labelledby`` (same id, name and type) is another
element; the name is computed in the ARIA order (aria-labelledby, aria-label, <label>, content,
title, placeholder). The live-DOM reader computes the same names: tests/replay/test_browser_fingerprints.py
compares the two, and both with Chromium's own accessibility tree.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from actioncache.replay import Action, FallbackReason, PlanCache, element_fingerprint, page_from_html
from actioncache.replay.accname import name_of, role_of

CONTACT = """<form method=post action=/checkout/address>
<p><span id=contact-label>{label}</span> <input id=contact name=contact type=text aria-labelledby=contact-label></p>
<p><label for=city>City</label><input id=city name=city></p>
<button type=submit>Continue</button></form>"""
SIG = ("https://shop.example/checkout", "pay with the user's address")


def names(html: str) -> list[tuple[str, str]]:
    return [(e.role, e.name) for e in page_from_html(html).elements]


def test_the_name_follows_the_aria_order():
    assert names("""<span id=a>From labelledby</span>
        <input aria-labelledby=a aria-label="From aria-label" title=T placeholder=P id=x><label for=x>From label</label>
        <input aria-label="From aria-label" title=T placeholder=P id=y><label for=y>From label</label>
        <input title=T placeholder=P id=z><label for=z>From label</label>
        <input title=T placeholder=P><input placeholder=P><input>""") == [
        ("textbox", "From labelledby"), ("textbox", "From aria-label"), ("textbox", "From label"),
        ("textbox", "T"), ("textbox", "P"), ("textbox", "")]


def test_labelledby_joins_the_texts_of_the_first_elements_with_those_ids():
    assert names("""<span id=a>Card</span><span id=b aria-label="Number">ignored text</span><span id=a>second a</span>
        <input aria-labelledby="a missing b"><input aria-labelledby="nothing-here" aria-label=Fallback>""") == [
        ("textbox", "Card Number"), ("textbox", "Fallback")]


def test_buttons_links_and_content():
    assert names("""<button>Save <img alt="(disk)"></button><button aria-label=Close>X</button><button title=Help></button>
        <input type=submit><input type=submit value=Send><input type=reset><input type=image alt=Go>
        <a href=/x>Go <b>home</b></a><a href=/y><img alt=Logo></a><a onclick="x()">No href</a>
        <div role=button tabindex=0>Div</div><div role=textbox contenteditable aria-label=Editor>typed</div>""") == [
        ("button", "Save (disk)"), ("button", "Close"), ("button", "Help"), ("button", "Submit"), ("button", "Send"),
        ("button", "Reset"), ("button", "Go"), ("link", "Go home"), ("link", "Logo"), ("", ""),
        ("button", "Div"), ("textbox", "Editor")]


def test_roles_of_fields():
    assert [r for r, _ in names("""<input type=checkbox><input type=radio><input type=number><input type=range>
        <input type=search><input type=email><input type=password><input type=date><input type=BOGUS>
        <select><option>a</select><select multiple><option>a</select><select size=3><option>a</select>
        <textarea></textarea><input role="switch checkbox" type=checkbox>""")] == [
        "checkbox", "radio", "spinbutton", "slider", "searchbox", "textbox", "textbox", "", "textbox",
        "combobox", "listbox", "listbox", "textbox", "switch"]


def test_role_and_name_rules_directly():
    assert role_of("a", {}) == "" and role_of("a", {"href": ""}) == "link"
    assert role_of("input", {"type": " Sub mit "}) == "button"  # whitespace removed, as a browser reads it
    assert name_of("input", {"type": "submit", "value": ""}, "button", text="", label="", labelledby="") == "Submit"
    assert name_of("input", {"placeholder": "  two   words "}, "textbox", text="", label="", labelledby="") == "two words"


def test_a_label_whose_meaning_changed_is_another_element():
    """The tester's harmful case: "Email" became "Phone" through aria-labelledby, same id, name and type."""
    email = page_from_html(CONTACT.format(label="Email"))
    phone = page_from_html(CONTACT.format(label="Phone"))
    assert email.elements[0].attributes == phone.elements[0].attributes
    assert element_fingerprint(email.elements[0]) != element_fingerprint(phone.elements[0])
    assert element_fingerprint(email.elements[1]) == element_fingerprint(phone.elements[1])


def test_replay_stops_at_a_renamed_field_and_says_what_it_was_and_is(store):
    email = page_from_html(CONTACT.format(label="Email"))
    contact, city, button = email.elements
    plans = PlanCache(store)
    plans.record(SIG, [Action.for_element("input_text", contact, text="ada@example.org"),
                       Action.for_element("input_text", city, text="London"),
                       Action.for_element("click", button), Action("complete")], completed=True)
    result = plans.lookup(SIG, CONTACT.format(label="Phone"))
    assert result.actions == [] and result.reason == FallbackReason.NAME_CHANGED
    assert "'Email'" in result.message and "'Phone'" in result.message
    assert plans.lookup(SIG, CONTACT.format(label="Email")).reason is None


def test_ignoring_the_text_also_ignores_a_name_that_is_the_text():
    old, new = page_from_html("<button>Search (3)</button>").elements[0], page_from_html("<button>Search (4)</button>").elements[0]
    assert element_fingerprint(old) != element_fingerprint(new)
    assert element_fingerprint(old, ignore=("text",)) == element_fingerprint(new, ignore=("text",))


def test_items_say_which_result_an_element_belongs_to():
    page = page_from_html("""<ul><li><a href=/p/1>Clip-on Desk Lamp</a> <span>$24.00</span>
        <button>Add to cart</button></li><li><a href=/p/2>Oak Floor Lamp</a> $89</li></ul>
        <table><tr><td>Row text<td><button>Edit</button></tr></table><nav><a href=/>Home</a></nav>
        <div role=listitem>Role item <button>In it</button></div><div itemscope>Card <a href=/c>Buy</a></div>""")
    assert [(e.text, e.item) for e in page.elements] == [
        ("Clip-on Desk Lamp", "Clip-on Desk Lamp $24.00 Add to cart"),
        ("Add to cart", "Clip-on Desk Lamp $24.00 Add to cart"),
        ("Oak Floor Lamp", "Oak Floor Lamp $89"), ("Edit", "Row text Edit"), ("Home", ""),
        ("Role item In it", "Role item In it"),  # an element with a role is collected, and is its own item
        ("In it", "Role item In it"), ("Buy", "Card Buy")]


def test_a_srcdoc_frame_is_read_in_place_with_its_own_labels():
    page = page_from_html("""<label for=x>Outer</label><input id=x name=outer>
        <iframe name=payment srcdoc="<label for=x>Card number</label><input id=x name=card>"></iframe>
        <iframe src="https://pay.example/frame"></iframe><button>Pay</button>""")
    assert [(e.attributes.get("name"), e.name, e.frame) for e in page.elements] == [
        ("outer", "Outer", ""), ("card", "Card number", "payment"), (None, "Pay", "")]
    assert page.unread_frames == 1


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30))
def test_a_name_is_collapsed_text_whatever_it_holds(label):
    from html import escape

    element = page_from_html(f'<input aria-label="{escape(label)}">').elements[0]
    assert element.name == " ".join(element.attributes.get("aria-label", "").split())
