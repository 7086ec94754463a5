"""One fingerprint for HTML and DOM (issue 14): page_from_html(html) equals headless Chromium's DOM.

Each page is served on loopback, loaded by Chromium (real Playwright, Debian's chromium), read by
snapshot_page, and compared with page_from_html of the same bytes: the same elements, ids,
attributes, texts, labels and options, hence the same fingerprints.
"""

from __future__ import annotations

import pytest

from actioncache.replay import element_fingerprint, page_from_html

from .browser_support import sync_chromium
from .conftest import FIXTURES
from .loopback_site import RAW_PAGES, Site

PAGES = {
    "issue-select": "<select><option>One<option>Two</select><button>Go</button>",
    "issue-list": "<ul><li><a>One<li><a>Two</ul>",
    "signup-form": """<!doctype html><html><head><title>Sign up</title><style>label{display:block}</style></head>
<body><form action="/signup" method="post">
  <fieldset><legend>Account</legend>
  <label for="email">E-mail</label><input id="email" name="email" type="email" placeholder="you@example.com" required>
  <label>Password <input name="password" type="password" autocomplete="new-password"></label>
  <label><input type="checkbox" name="terms" value="yes"> I accept the <a href="/terms?ref=signup">terms</a></label>
  </fieldset>
  <p>Plan: <label><input type="radio" name="plan" value="free" checked> Free</label>
           <label><input type="radio" name="plan" value="pro"> Pro &ndash; 9&nbsp;&euro;</label>
  <input type="hidden" name="csrf" value="x1">
  <textarea name="about" placeholder="About you">Hello
  world</textarea>
  <input type="submit" value="Create account"> <button type="reset">Clear</button>
</form></body></html>""",
    "implied-end-tags": """<body><p>Some <b>bold <i>text</b> here</i>
<p><a href=/one>One<p>Two</a>
<dl><dt><a href=/t>Term<dd><a href=/d>Definition</dl>
<ol><li>First <button>A</button><li>Second <button>B</button></ol>""",
    "tables": """<table class=grid><caption>Orders</caption>
<tr><th>Item<th>Qty<th></tr>
<tr><td>Lamp<td><input name=qty1 value=1 aria-label="Quantity of lamp"><td><button>Remove</button>
<tr><td>Desk<td><input name=qty2 aria-label="Quantity of desk"><td><button>Remove</button>
<a href="/help">Stray link in a table</a>
</table><table><tbody><tr><td><table><tr><td><a href="/deep">Nested table link</a></table></table>""",
    "nested-lists": """<nav><ul class=menu><li><a href="/shop">Shop</a><ul><li><a href="/shop/lamps">Lamps</a>
<li><a href="/shop/desks">Desks</a><ul><li><a href="/shop/desks/standing">Standing</a></ul></ul>
<li><a href="/about">About <img src=x.png alt="(info)"></a></ul></nav>""",
    "select-option": """<label for=sort>Sort by</label><select id=sort name=sort>
<optgroup label="Price"><option value=asc>Low to high<option value=desc selected>High to low</optgroup>
<option>  Rating   </option><option value="">None</select>
<select name=multi multiple><option value=a>A<option value=b selected>B</select><button type=submit>Apply</button>""",
    "templates-iframes": """<div id=app><template id=row><tr><td><button>Template button</button></td></tr></template>
<iframe src="about:blank"><a href="/fallback">Fallback link</a></iframe>
<noscript><a href="/nojs">No JS</a></noscript>
<div role=button tabindex=0 onclick="go()">Custom <span>button</span></div>
<div contenteditable=true aria-label="Editor">Editable <b>text</b></div>
<summary>More</summary><details><summary>Details summary</summary><p>Hidden <a href=/in>inside</a></details></div>""",
    "sloppy": """<div role=button onclick=go()>Open <b>menu<img alt='icon'></div></span>
<a href='/x'>Next<p>unclosed <a href=/y TITLE="Y" Title=dup>Why</a>
<button disabled>Off</button><input type=HIDDEN name=h><input type=" hidden" name=spaced>
<label for="">Empty for</label><input id="" name=empty-id>""",
    "destinations": """<form id=pay method=POST action="/pay?step=2"><button>Continue</button>
<button type=button>Help</button><button type=reset>Clear</button><button type=BOGUS>Odd type</button>
<input type=submit value=Pay><input type=image alt=Go src=x.png><button formaction="/delete-account">Delete</button>
<button formmethod=get>Preview</button></form><form><button>Own page</button></form>
<button form=pay>Outside, names the form</button><button form=nowhere>Names no form</button>
<button form=later>Names a later form</button><form id=later action=/later></form>
<button>No form at all</button><a href="/acct?action=view&utm_source=x">Open</a>""",
    "whitespace": "<button>\u3000Wide\u2003space\u00a0here\t</button><a href=/z>\u200bzero\u200bwidth</a>"
                  "<button>tab\tand\nnewline</button><a href=/bom>\ufeffbom</a>",
}
PAGES.update({f"fixture-{p.stem}": p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.html"))})


@pytest.fixture(scope="module")
def chromium_page():
    RAW_PAGES.update(PAGES)
    with Site() as site, sync_chromium() as browser:
        page = browser.new_page()
        yield site, page
        page.close()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_fingerprints_from_html_equal_those_from_chromium(chromium_page, name):
    from actioncache.replay.browser import snapshot_page

    site, page = chromium_page
    page.goto(f"{site.url}/raw/{name}")
    live = snapshot_page(page)
    parsed = page_from_html(PAGES[name], url=page.url)
    assert [e.to_dict() for e in parsed.elements] == [e.to_dict() for e in live.elements]
    assert [element_fingerprint(e) for e in parsed.elements] == [element_fingerprint(e) for e in live.elements]
    assert len(live) > 0


def test_the_issue_cases_in_chromium(chromium_page):
    from actioncache.replay.browser import snapshot_page

    site, page = chromium_page
    page.goto(f"{site.url}/raw/issue-select")
    assert [(e.tag, e.text) for e in snapshot_page(page).elements][-1] == ("button", "Go")
    page.goto(f"{site.url}/raw/issue-list")
    assert [(e.tag, e.text) for e in snapshot_page(page).elements] == [("a", "One"), ("a", "Two")]
