"""page_from_html follows the HTML standard's tree construction (issue 14): regression cases.

Each case is one a hand-rolled parser got wrong or could easily get wrong; the expected texts are
what a browser's DOM holds (test_browser_fingerprints.py checks the same pages in Chromium).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.replay import page_from_html


def texts(html: str) -> list[tuple[str, str]]:
    return [(e.tag, e.text) for e in page_from_html(html).elements]


def test_an_option_does_not_swallow_the_button_after_its_select():
    page = page_from_html("<select><option>One<option>Two</select><button>Go</button>")
    select, button = page.elements
    assert button.tag == "button" and button.text == "Go"
    assert [o["text"] for o in select.options] == ["One", "Two"] and select.text == ""


def test_an_implied_li_end_tag_closes_the_link_inside_it():
    assert texts("<ul><li><a>One<li><a>Two</ul>") == [("a", "One"), ("a", "Two")]


@pytest.mark.parametrize("html, expected", [
    # <p> is closed by a block start tag; the link after it is not inside it.
    ("<p>Intro<div><a href=/a>A</a></div>", [("a", "A")]),
    # Content in a table outside a cell is moved before the table (foster parenting).
    ("<table><tr><td><button>In cell</button></td></tr><a href=/x>Stray</a></table>",
     [("a", "Stray"), ("button", "In cell")]),
    # Template contents are not part of the document.
    ("<template><button>Hidden</button></template><button>Shown</button>", [("button", "Shown")]),
    # An iframe's content is its own document; a script's text is not text.
    ("<iframe><button>x</button></iframe><a href=/>Home<script>var a = '<b>'</script></a>", [("a", "Home")]),
    # Misnested formatting tags are repaired, not concatenated.
    ("<a href=/1><b>One</a><a href=/2>Two</b></a>", [("a", "One"), ("a", "Two")]),
    # A nested <a> closes the open one.
    ("<a href=/1>One<a href=/2>Two</a>", [("a", "One"), ("a", "Two")]),
    # Buttons do not nest: a button start tag closes the open button.
    ("<button>One<button>Two</button>", [("button", "One"), ("button", "Two")]),
    # Character references and whitespace.
    ("<button>Fish&nbsp;&amp;\n  chips</button>", [("button", "Fish & chips")]),
])
def test_tree_construction_cases(html, expected):
    assert texts(html) == expected


def test_labels_follow_the_standard_association():
    page = page_from_html(
        "<label for=a>First</label><label>Wrapped <input name=w> <input name=second></label>"
        "<input id=a name=a><input id=a name=dup><label for=a>Again</label>"
        "<label for=h>Hidden</label><input type=hidden id=h name=h>")
    by_name = {e.attributes.get("name"): e.attributes.get("label") for e in page.elements}
    # for= names the first element with that id; every label of a control counts, in order.
    assert by_name["a"] == "First Again" and by_name["dup"] is None
    # A wrapping label names its first labelable descendant only.
    assert by_name["w"] == "Wrapped" and by_name["second"] is None
    assert "h" not in by_name  # hidden inputs are not collected


def test_select_and_textarea_content_is_not_text():
    page = page_from_html("<label>Size <select name=s><option value=1>Small</option></select></label>"
                          "<label>Note <textarea name=n>draft</textarea></label>")
    select, textarea = page.elements
    assert select.attributes["label"] == "Size" and textarea.attributes["label"] == "Note"
    assert select.text == textarea.text == ""
    assert select.options == [{"value": "1", "text": "Small", "selected": False}]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="<>/abpuliotnsceq =\"'&;!-", max_size=80))
def test_any_text_parses_without_error(html):
    page = page_from_html(html)
    assert [e.id for e in page.elements] == [f"e{i}" for i in range(1, len(page) + 1)]
