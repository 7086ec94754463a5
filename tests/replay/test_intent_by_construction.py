"""Intent: a click whose target depended on typed input is never replayed for other input unless the
resolver re-decides it (issue 29 item 4, by construction).

* In Chromium on the shop site (tests/replay/shop_sites.py, its server logs the cart): a plan recorded
  with ``infer_intents=False`` (so the result click carries no choice at all) and replayed for
  another user's query adds the item that query names, never the recorded one; a query that names no
  result falls back with nothing added.
* Through ``PlanCache.begin`` (the path the browser driver takes, one page per step): the default
  resolver does not take a result named by the query *and more* (an accessory) when the recorded
  result was named exactly; a chat-model resolver's "-1" or two numbers decline (a stand-in callable
  replies: there is no LLM here); a resolver that picks the recorded item for another query is refused;
  "cheapest" declines when an item names several prices.
"""

from __future__ import annotations

import pytest

from actioncache import open_store
from actioncache.replay import Action, FallbackReason, PlanCache, llm_resolver, page_from_html

from .browser_support import sync_chromium
from .shop_sites import VARIANTS, Shop, record_site, replay_variant

SIG = ("https://shop.example/", "buy what the user names")
SEARCH = "<form><input name=q aria-label=Search><button type=button>Go</button></form>"


def results(*items: str) -> str:
    return SEARCH + "<ul>" + "".join(f"<li><a href='/p/{i}'>{name}</a> {price}</li>"
                                     for i, (name, price) in enumerate(i.split("|") for i in items)) + "</ul>"


def _plan(tmp_path, clicked: str, listing: str, **choose):
    search, listed = page_from_html(SEARCH), page_from_html(listing)
    link = next(e for e in listed.elements if e.text == clicked)
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    plans.record(SIG, [Action.for_element("input_text", search.elements[0], text="clip-on desk lamp"),
                       Action.for_element("click", link, **choose), Action("complete")], completed=True)
    return plans


def _run(plans, query: str, listing: str, **options):
    def typed(action, context):
        if action.action_type == "input_text":
            action.text = query
        return action

    run = plans.begin(SIG, personalize=typed, **options)
    assert run.next(page_from_html(SEARCH)) is not None
    served = run.next(page_from_html(listing))
    return run, served


def test_a_plain_click_after_other_input_is_re_decided_not_replayed_by_identity(tmp_path):
    recorded = results("Clip-on Desk Lamp|$24")
    plans = _plan(tmp_path, "Clip-on Desk Lamp", recorded)  # no choice recorded: a plain click
    now = results("Oak Floor Lamp|$89") + "<aside>Recently viewed <a href='/p/0'>Clip-on Desk Lamp</a></aside>"
    run, served = _run(plans, "sku 2002", now)
    assert served is None and run.reason == FallbackReason.INTENT_UNRESOLVED
    run, served = _run(plans, "oak floor lamp", now)
    assert [a.element["text"] for a in served] == ["Oak Floor Lamp"]
    run, served = _run(plans, "clip-on desk lamp", now)  # the recording's own query: its own click stands
    assert served is not None and served[0].element["text"] == "Clip-on Desk Lamp"
    plans.store.close()


def test_a_result_named_by_the_query_and_more_is_not_what_the_query_named(tmp_path):
    recorded = results("Clip-on Desk Lamp|$24", "Brass Desk Lamp|$45")
    plans = _plan(tmp_path, "Clip-on Desk Lamp", recorded, choose={"rule": "query_match", "query": 0})
    run, served = _run(plans, "oak floor lamp", results("Oak Floor Lamp Bulb (spare)|$4", "Brass Desk Lamp|$45"))
    assert served is None and run.reason == FallbackReason.INTENT_UNRESOLVED
    run, served = _run(plans, "oak floor lamp", results("Oak Floor Lamp|$89", "Oak Floor Lamp Bulb (spare)|$4"))
    assert [a.element["text"] for a in served] == ["Oak Floor Lamp"]
    plans.store.close()


@pytest.mark.parametrize("reply", ["-1", "Not 1; the answer is 2", "1"])
def test_a_model_reply_that_is_not_one_other_candidate_declines(tmp_path, reply):
    """A stand-in for a small chat model (no LLM here): "-1", two numbers, or the recorded item itself."""
    listing = results("Clip-on Desk Lamp|$24", "Oak Floor Lamp|$89")
    plans = _plan(tmp_path, "Clip-on Desk Lamp", listing, choose={"rule": "custom", "query": 0},
                  intention="the lamp the user asked for")
    run, served = _run(plans, "oak floor lamp", listing, resolve=llm_resolver(lambda messages: reply))
    assert served is None and run.reason == FallbackReason.INTENT_UNRESOLVED
    plans.store.close()


def test_cheapest_declines_when_an_item_names_several_prices(tmp_path):
    listing = results("Lamp A|Save $100! Now $450.00", "Lamp B|$120.00")
    plans = _plan(tmp_path, "Lamp B", listing, choose={"rule": "cheapest", "query": 0})
    run, served = _run(plans, "oak floor lamp", listing)
    assert served is None and run.reason == FallbackReason.INTENT_UNRESOLVED
    plans.store.close()


@pytest.fixture(scope="module")
def plain_plan(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain")
    with Shop() as shop, sync_chromium() as browser:
        plans = PlanCache(open_store(f"sqlite:///{folder}/search.db"))
        context = browser.new_context(service_workers="block")
        record_site("search", context.new_page(), shop, plans, infer_intents=False)
        context.close()
        plans.store.close()
        yield shop, browser, folder / "search.db", folder


@pytest.mark.parametrize("name", ["other-query", "query-not-found"])
def test_in_chromium_a_result_click_recorded_without_a_choice_follows_the_new_query(plain_plan, name):
    shop, browser, db, folder = plain_plan
    variant = next(v for v in VARIANTS if v.site == "search" and v.name == name)
    decision = replay_variant(browser, shop, db, folder, variant)
    assert decision.harm is None, decision.line()
    carts = [sku for skus in shop.carts.values() for sku in skus]
    if name == "other-query":
        assert decision.finished and carts == ["oak-floor-lamp"], decision.message
    else:
        assert decision.reason == FallbackReason.INTENT_UNRESOLVED and carts == []
