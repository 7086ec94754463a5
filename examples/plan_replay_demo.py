"""Plan replay, offline: record a browser plan once, replay it on pages that changed.

    python examples/plan_replay_demo.py [--store sqlite:///tmp/plans.db]

1. A "fresh" run on the shop's search page: a tiny rule-based planner (standing in for the LLM)
   decides the actions; the run completes, so the plan is recorded.
2. The page is redeployed with a cookie banner, new DOM ids and classes: the plan replays whole,
   every element rebound to its new id by fingerprint, and the search text is personalized.
3. The page is redesigned, the Search button now reads "Find": replay serves the actions that
   still fit, stops at the button (element_missing) and the planner takes over from there. That
   run completes too and is recorded, so the next replay on the new page is whole again.
4. A click that depends on the input: on the results page the recorded run clicked the result its
   query named. Replayed for another user's query, that click is re-decided (the result the new
   query names); for a product that is not listed it falls back (intent_unresolved) rather than
   click the recorded item.
"""

from __future__ import annotations

import argparse
import sys

from actioncache import open_store
from actioncache.replay import Action, Page, PlanCache, page_from_html

URL = "https://shop.example/search?q=&sid=4f1c"
GOAL = "Search the shop for the product, cheapest first, in stock only"

PAGE_V1 = """
<nav><a href="/">Home</a> <a href="/cart?sid=4f1c">Cart</a></nav>
<form action="/search">
  <label for="q">Search products</label><input id="q" name="q" type="search">
  <label for="sort">Sort by</label>
  <select id="sort" name="sort"><option value="relevance" selected>Relevance</option>
    <option value="price_asc">Price: low to high</option></select>
  <label><input type="checkbox" name="in_stock" value="1"> In stock only</label>
  <button type="submit" class="btn">Search</button>
</form>"""

PAGE_V2 = """
<div role="dialog" class="cookies">We use cookies. <button id="ok-71">Accept</button></div>
<nav><a href="/">Home</a> <a href="/deals">Deals</a> <a href="/cart?sid=99aa">Cart</a></nav>
<form action="/search" id="f-8c1" data-reactid="4">
  <label for="search-x9">Search products</label><input class="big" id="search-x9" type="search" name="q">
  <label for="s-2">Sort by</label>
  <select name="sort" id="s-2"><option value="relevance">Relevance</option>
    <option value="price_asc">Price: low to high</option><option value="rating">Rating</option></select>
  <label class="c"><input name="in_stock" type="checkbox" value="1"> In stock only</label>
  <button class="btn btn--v2" type="submit">Search</button>
</form>"""

PAGE_V3 = PAGE_V2.replace(">Search</button>", ">Find</button>")

RESULTS = """
<form action="/search"><input name="q" type="search" aria-label="Search products"><button>Search</button></form>
<ul class="results"><li><a href="/product/clip-on-desk-lamp">Clip-on Desk Lamp</a> $24.00</li>
  <li><a href="/product/oak-floor-lamp">Oak Floor Lamp</a> $89.00</li>
  <li><a href="/product/reading-lamp">Reading Lamp</a> $32.00</li></ul>"""


def plan_fresh(page: Page, product: str, start: int = 0) -> list[Action]:
    """The rule-based planner: what an LLM planner would decide on this search form."""
    def pick(tag: str, **attrs: str):
        return next(e for e in page.elements if e.tag == tag and all(e.attributes.get(k) == v for k, v in attrs.items()))

    actions = [
        Action.for_element("input_text", pick("input", name="q"), text=product, intention="the product to search for"),
        Action.for_element("select_option", pick("select", name="sort"), option={"value": "price_asc"}),
        Action.for_element("click", pick("input", name="in_stock")),
        Action.for_element("click", pick("button", type="submit")),
        Action("complete", reasoning="the results page is showing"),
    ]
    return actions[start:]


def for_this_user(action: Action, context) -> Action:
    """Personalization hook: type this user's product and pick their sort order afresh.

    Replay resets a select's recorded option (``option is None``), so the hook chooses it now.
    """
    if action.intention and action.action_type == "input_text":
        action.text = context.data["product"]
    if action.action_type == "select_option" and action.option is None:
        action.option = {"value": context.data.get("sort", "relevance")}
    return action


def show(title: str, actions: list[Action]) -> None:
    print(title)
    for a in actions:
        target = ""
        if a.element:
            label = a.element["attributes"].get("label") or a.element["text"] or a.element["attributes"].get("name")
            target = f" -> {a.element_id:<4} ({a.element['tag']} {label!r})"
        extra = f" text={a.text!r}" if a.text else f" option={a.option['value']!r}" if a.option else ""
        print(f"    {a.action_type:<14}{target}{extra}".rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="memory://", help="store URL (default: in memory)")
    args = parser.parse_args(argv)
    plans = PlanCache(open_store(args.store), namespace="demo", personalize=for_this_user)
    signature = (URL, GOAL)

    print("1. fresh run on the original page")
    v1 = page_from_html(PAGE_V1, url=URL)
    first = plans.lookup(signature, v1, context={"product": "desk lamp"})
    print(f"   replay: {first.reason}  -> plan afresh")
    actions = plan_fresh(v1, "desk lamp")
    show("   planner decided:", actions)
    plans.record(signature, actions, completed=True)
    print("   run completed: plan recorded")

    print("\n2. the page was redeployed (cookie banner, new ids and classes)")
    v2 = page_from_html(PAGE_V2, url="https://shop.example/search?q=&sid=0b7e")
    result = plans.lookup(signature, v2, context={"product": "reading lamp", "sort": "price_asc"})
    show(f"   replay: {len(result.actions)} of {result.remaining} actions, no planner call:", result.actions)
    moved = [(old.element_id, new.element_id) for old, new in zip(actions, result.actions) if old.element_id]
    print("   rebound: " + ", ".join(f"{old}->{new}" for old, new in moved))
    plans.report(signature, success=True)

    print("\n3. the page was redesigned (the Search button now reads 'Find')")
    v3 = page_from_html(PAGE_V3, url=URL)
    result = plans.lookup(signature, v3, context={"product": "floor lamp", "sort": "price_asc"})
    show(f"   replay: {len(result.actions)} of {result.remaining} actions, then fallback ({result.reason}):",
         result.actions)
    rest = plan_fresh(v3, "floor lamp", start=len(result.actions))
    show("   planner takes over from there:", rest)
    plans.record(signature, result.actions + rest, completed=True)
    print("   run completed: the new plan is recorded (newest wins)")
    again = plans.lookup(signature, v3, context={"product": "floor lamp"})
    print(f"   next replay on this page: {len(again.actions)} of {again.remaining} actions, reason={again.reason}")

    print("\n4. a click chosen for the query: re-decided for another user's query")
    results = PlanCache(plans.store, namespace="demo-results", personalize=for_this_user)
    page = page_from_html(RESULTS, url=URL)
    box, _, clip_on = page.elements[:3]
    results.record((URL, "open the product the user names"), [
        Action.for_element("input_text", box, text="clip-on desk lamp", intention="the product to search for"),
        Action.for_element("click", clip_on, choose={"rule": "query_match", "query": 0},
                           intention="the result the query named")], completed=True)
    for product in ("oak floor lamp", "arc floor lamp"):
        chosen = results.lookup((URL, "open the product the user names"), page, context={"product": product})
        clicked = chosen.actions[1].element["text"] if len(chosen.actions) > 1 else None
        print(f"   query {product!r}: clicks {clicked!r}" + (f" ({chosen.reason})" if chosen.reason else ""))

    metrics = plans.stats()
    print("\nmetrics:")
    print(f"   retrievals={metrics['retrievals']} hits={metrics['hits']} partial={metrics['partial_hits']} "
          f"fallbacks={metrics['fallbacks']} reasons={metrics['fallback_reasons']} stops={metrics['stop_reasons']}")
    for kind, bucket in sorted(metrics["actions"].items()):
        print(f"   {kind:<14} hit rate {bucket['hit_rate']:.2f} ({bucket['replayed']} replayed, {bucket['missed']} missed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
