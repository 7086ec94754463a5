"""URL patterns, signatures, the action and page models, and page_from_html on real HTML."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.replay import (
    Action,
    Page,
    PlanSignature,
    UrlRule,
    as_signature,
    destination_pattern,
    page_from_html,
    url_pattern,
)

from .conftest import find, load_page


@pytest.mark.parametrize("url, pattern", [
    ("https://Shop.Example/search?q=lamp&sid=9", "https://shop.example/search?q&sid"),
    ("https://shop.example:443/search/?sid=1&q=a&q=b#top", "https://shop.example/search?q&sid"),
    ("http://shop.example:8080/orders/12345/items", "https://shop.example:8080/orders/{id}/items"),  # issue 14
    ("https://shop.example/u/550e8400-e29b-41d4-a716-446655440000", "https://shop.example/u/{id}"),
    ("https://shop.example/s/9f86d081884c7d65", "https://shop.example/s/{id}"),
    ("https://shop.example/t/AbC123xyz789QrsT0", "https://shop.example/t/{id}"),
    ("https://shop.example/blog/deadbeef", "https://shop.example/blog/deadbeef"),  # a word, no digit
    ("https://shop.example/checkout-step", "https://shop.example/checkout-step"),
    ("https://user:secret@shop.example", "https://shop.example/"),
    ("/cart?sid=8f", "/cart?sid"),
    ("http://[::1]:8080/a?x=1", "https://[::1]:8080/a?x"),
    ("//cdn.example/lib/", "//cdn.example/lib"),
])
def test_url_pattern_rule(url, pattern):
    assert url_pattern(url) == pattern


@pytest.mark.parametrize("url", [
    "http://shop.example/search?q=lamp", "https://www.shop.example/search?q=desk",
    "HTTP://WWW.Shop.Example:80/search/?q=x&utm_source=news&utm_medium=mail#top",
    "https://shop.example/search?gclid=abc&q=1&fbclid=z&UTM_Campaign=spring",
])
def test_default_rule_ignores_scheme_www_and_tracking_parameters(url):
    """Issue 14: "same or similar URL" means http/https, www. and utm_* links find the same plans."""
    assert url_pattern(url) == "https://shop.example/search?q"


def test_url_rule_is_configurable():
    strict = UrlRule(ignore_scheme=False, ignore_www=False, ignore_params=())
    assert url_pattern("http://www.shop.example/s?q=1&utm_source=x", strict) == "http://www.shop.example/s?q&utm_source"
    assert url_pattern("https://shop.example/s?q=1&ref=mail&refcode=2", UrlRule(ignore_params=("ref*",))) == \
        "https://shop.example/s?q"
    assert url_pattern("https://shop.example/orders/123", UrlRule(ids_in_path=False)) == "https://shop.example/orders/123"
    assert url_pattern("https://www.shop.example/", UrlRule(ignore_www=False)) == "https://www.shop.example/"
    with pytest.raises(TypeError, match="ignore_params"):
        UrlRule(ignore_params="utm_*")


hosts = st.sampled_from(["shop.example", "www.shop.example", "WWW.www.Shop.example", "a.b.example:8443", "x:80", "x:443",
                         "[::1]", "[2001:DB8::1]:8080"])
schemes = st.sampled_from(["http", "https", "HTTP"])
param_names = st.sampled_from(["q", "sid", "utm_source", "UTM_x", "gclid", "page", "ref"])
rules = st.builds(UrlRule, ignore_scheme=st.booleans(), ignore_www=st.booleans(),
                  ignore_params=st.sampled_from([(), ("utm_*",), ("utm_*", "gclid", "ref")]), ids_in_path=st.booleans())


@settings(max_examples=200, deadline=None)
@given(scheme=schemes, host=hosts, path=st.lists(st.sampled_from(["a", "123", "deadbeef99", "x-y"]), max_size=3),
       params=st.lists(st.tuples(param_names, st.text("abc123", max_size=4)), max_size=4), rule=rules)
def test_every_url_rule_is_idempotent(scheme, host, path, params, rule):
    url = f"{scheme}://{host}/" + "/".join(path) + ("?" + "&".join(f"{k}={v}" for k, v in params) if params else "")
    pattern = url_pattern(url, rule)
    assert url_pattern(pattern, rule) == pattern
    assert PlanSignature.of(url, "g", rule).url_pattern == pattern


segment = st.one_of(st.integers(0, 10**9).map(str), st.text("abcdefghij0123456789-_", min_size=1, max_size=24))


@settings(max_examples=200, deadline=None)
@given(segments=st.lists(segment, max_size=5),
       params=st.dictionaries(st.text("abcxyz", min_size=1, max_size=4), st.text("0123456789ab", max_size=6), max_size=4))
def test_url_pattern_is_idempotent_and_ignores_query_values(segments, params):
    url = "https://shop.example/" + "/".join(segments) + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
    pattern = url_pattern(url)
    assert url_pattern(pattern) == pattern
    other_values = "https://shop.example/" + "/".join(segments) + (
        "?" + "&".join(f"{k}=zz{v}" for k, v in reversed(list(params.items()))) if params else "")
    assert url_pattern(other_values) == pattern


def test_signatures_from_tuple_and_dict_agree():
    a = as_signature(("https://shop.example/search?q=1", "Buy  a lamp"))
    b = as_signature({"url": "https://shop.example/search?q=2", "goal": "Buy a lamp "})
    assert a == b == PlanSignature("https://shop.example/search?q", "Buy a lamp")
    assert a.digest == b.digest and len(a.digest) == 64
    assert as_signature(a.to_dict()) == a
    with pytest.raises(ValueError, match="URL"):
        as_signature(("", "goal"))


def test_action_round_trips_through_dict():
    action = Action("click", element_id="e4", fingerprint="f" * 64, reasoning="open the cart",
                    data={"frame": "main"})
    assert Action.from_dict(action.to_dict()) == action
    loose = Action.from_dict({"type": "CLICK", "element_id": "e1", "x": 3})
    assert loose.action_type == "click" and loose.data == {"x": 3}
    with pytest.raises(ValueError, match="action_type"):
        Action.from_dict({"element_id": "e1"})


def test_page_from_dict_and_errors():
    page = Page.from_dict({"url": "https://a.example/", "elements": [
        {"id": "n1", "tag": "button", "attributes": {"type": "submit"}, "text": "Go"}]})
    assert page.element("n1").text == "Go" and page.to_dict()["elements"][0]["id"] == "n1"
    assert Page.from_dict(page.to_dict()).to_dict() == page.to_dict()
    with pytest.raises(ValueError, match="'id' and 'tag'"):
        Page.from_dict([{"tag": "a"}])


def test_page_from_html_keeps_interactive_elements_with_labels(v1):
    tags = [e.tag for e in v1.elements]
    assert tags == ["a", "a", "input", "select", "input", "button"]  # hidden input and script left out
    assert [e.id for e in v1.elements] == ["e1", "e2", "e3", "e4", "e5", "e6"]
    box = find(v1, "input", name="q")
    assert box.attributes["label"] == "Search products" and box.attributes["id"] == "q"
    assert find(v1, "input", name="in_stock").attributes["label"] == "In stock only"
    select = find(v1, "select", name="sort")
    assert select.text == "" and select.attributes["label"] == "Sort by"
    assert select.options[0] == {"value": "relevance", "text": "Relevance", "selected": True}
    assert find(v1, "button").text == "Search"


def test_page_from_html_copes_with_sloppy_html():
    page = page_from_html("<div role=button onclick=go()>Open <b>menu<img alt='icon'></div></span>"
                          "<a href='/x'>Next<p>unclosed")
    assert [(e.tag, e.text) for e in page.elements] == [("div", "Open menu icon"), ("a", "Next unclosed")]
    with pytest.raises(TypeError, match="HTML text"):
        page_from_html(b"<a>x</a>")


def test_changed_page_keeps_fingerprints_but_moves_ids(v1):
    v2 = load_page("search_v2.html")
    from actioncache.replay import element_fingerprint

    old, new = find(v1, "input", name="q"), find(v2, "input", name="q")
    assert old.id != new.id
    assert element_fingerprint(old) == element_fingerprint(new)
    assert v2.ids_for(element_fingerprint(old)) == [new.id]


url_text = st.lists(st.sampled_from(list("aZ0 %=&?#/\\:@.[]-_+~!é\t") + ["%20", "%zz", "%ff", "http://", "www.", ":443"]),
                    max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(base=st.sampled_from(["https://shop.example/a", "http://shop.example:443", "https://shop.example", "", "/p"]),
       tail=url_text, rule=rules)
def test_url_pattern_is_idempotent_on_odd_urls(base, tail, rule):
    url = base + tail
    try:
        destination = destination_pattern(url, rule)
        pattern = url_pattern(url, rule) if base else None  # a page URL is absolute; a link's may not be
    except ValueError as exc:
        assert "the URL" in str(exc)  # a clear error: an invalid port or host
        return
    assert destination_pattern(destination, rule) == destination
    if pattern is not None:
        assert url_pattern(pattern, rule) == pattern


@pytest.mark.parametrize("url, pattern", [
    ("https://shop.example/a?=x", "https://shop.example/a"),        # an empty name is no parameter
    ("https://shop.example/a?%20=1", "https://shop.example/a?%20"),  # names are written encoded
    ("https://shop.example/a?a%26b=1&c=2", "https://shop.example/a?a%26b&c"),
])
def test_query_names_survive_a_second_pass(url, pattern):
    assert url_pattern(url) == pattern == url_pattern(pattern)


def test_a_backslash_is_a_slash_as_in_a_browser():
    # A browser goes to shop.example, path /@evil.example/: the host is never evil.example.
    assert url_pattern("https://shop.example\\@evil.example/") == "https://shop.example/@evil.example"
    assert url_pattern("https:\\\\shop.example\\a\\b") == "https://shop.example/a/b"
    assert url_pattern("https://shop.example/a?next=\\x") == "https://shop.example/a?next"  # the query keeps it
    assert url_pattern("https://shop.exa\tmple/a\n") == "https://shop.example/a"
    assert url_pattern("mailto:a\\b@x.example") != url_pattern("mailto:a/b@x.example")  # not a special scheme


def test_a_port_default_for_the_other_scheme_stays_distinct():
    assert url_pattern("http://shop.example:443/a") == "http://shop.example:443/a"
    assert url_pattern("https://shop.example/a") == url_pattern("https://shop.example:443/a") == \
        url_pattern("http://shop.example/a") == url_pattern("http://shop.example:80/a") == "https://shop.example/a"
    assert url_pattern("https://shop.example:80/a") == "https://shop.example:80/a"
    patterns = {url_pattern(u) for u in ("http://shop.example:443/a", "https://shop.example/a", "https://shop.example:80/a")}
    assert len(patterns) == 3


def test_destinations_keep_query_values_but_not_ids_or_tracking():
    assert destination_pattern("/acct?action=view") != destination_pattern("/acct?action=delete")
    assert destination_pattern("/acct?utm_source=mail&action=view") == "/acct?action=view"
    assert destination_pattern("/cart?sid=8f3a9") == destination_pattern("/cart?sid=00c41") == "/cart?sid={id}"
    assert destination_pattern("/item/1001?ref=search") == "/item/{id}?ref=search"
    assert destination_pattern("/a?b=2&a=1&a=1") == "/a?a={id}&b={id}"
