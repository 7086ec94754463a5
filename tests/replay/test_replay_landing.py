"""Where a click landed is part of its outcome (issue 29, the tester's N2), end to end in Chromium.

A local shop whose product pages have numeric ids (``/product/101``): the URL pattern of every product
page is ``/product/{id}``, and an element fingerprint blurs the id of a link's ``href`` the same way.
So a result link that now points to another product, a product id reused for another product, or a
plan recorded on one product page replayed on another, all look the same to fingerprints and to the
request guard. The rule: a step's landing URL is compared exactly (ids and query values kept, a typed
query written ``{typed}``), and so is what the landing page says it is (title and main heading); a
click the resolver re-decided for this run's query must land where its own link points, on a page that
names what it clicked. A different landing stops the replay (``landing_changed``) before the next
state-changing step: the server's log shows no add-to-cart; a replay that starts on another page than
the recording's first step acted on stops before acting (``start_page_changed``).
"""

from __future__ import annotations

import html
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from actioncache import open_store
from actioncache.replay import FallbackReason, PlanCache

from .browser_support import sync_chromium

pytestmark = pytest.mark.xdist_group(name="replay_landing")

PRODUCTS = {"101": "Clip-on Desk Lamp", "102": "Brass Desk Lamp", "104": "Oak Floor Lamp"}
PRICES = {"101": "$24.00", "102": "$45.00", "104": "$89.00", "105": "$9/mo"}


class LandingShop:
    """``/deals`` (links), ``/shop`` (a search box), ``/search?q=`` (results), ``/product/<id>``,
    ``POST /cart/add`` (kept in ``carted``), ``/cart``. ``flags``: ``stale-link`` (the link named
    "Clip-on Desk Lamp" points to /product/104), ``renumbered`` (id 101 is now the Oak Floor Lamp),
    ``rental`` (the deals and the search also list a "Lamp Rental" at $9/mo)."""

    def __init__(self) -> None:
        self.flags: set[str] = set()
        self.carted: list[str] = []
        shop = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: str = "", location: str | None = None) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                if location:
                    self.send_header("Location", location)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path == "/deals":
                    listed = {**PRODUCTS, "105": "Lamp Rental"} if "rental" in shop.flags else PRODUCTS
                    return self._send(200, shop.page("Deals", "Deals", shop.links(listed)))
                if parts.path == "/shop":
                    return self._send(200, shop.page("Shop", "Lamps", shop.search_form()))
                if parts.path == "/search":
                    q = query.get("q", "")
                    wanted = set(q.lower().split())
                    listed = {**PRODUCTS, "105": "Lamp Rental"} if "rental" in shop.flags else PRODUCTS
                    found = {i: n for i, n in listed.items() if wanted & set(n.lower().split())}
                    return self._send(200, shop.page("Search results", f"Results for {html.escape(q)}",
                                                     shop.search_form(q) + shop.links(found)))
                if parts.path.startswith("/product/"):
                    return self._send(200, shop.product(parts.path.rsplit("/", 1)[1]))
                if parts.path == "/cart":
                    return self._send(200, shop.page("Cart", "Your cart", f"<p>{len(shop.carted)} items</p>"))
                return self._send(404, "<h1>Not found</h1>")

            def do_POST(self):
                form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
                if self.path == "/cart/add":
                    shop.carted.append(form.get("sku", [""])[0])
                    return self._send(303, location="/cart")
                return self._send(404)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def name_of(self, product_id: str) -> str:
        if "renumbered" in self.flags and product_id == "101":
            return PRODUCTS["104"]
        return {**PRODUCTS, "105": "Lamp Rental"}[product_id]

    def href(self, product_id: str) -> str:
        if "stale-link" in self.flags and product_id == "101":
            return "/product/104"
        if "renumbered" in self.flags and product_id == "104":
            return "/product/101"
        return f"/product/{product_id}"

    def links(self, products: dict[str, str]) -> str:
        items = "".join(f'<li><a href="{self.href(i)}">{html.escape(n)}</a> <span>{PRICES[i]}</span></li>'
                        for i, n in products.items())
        return f'<ul class="results">{items}</ul>'

    @staticmethod
    def search_form(value: str = "") -> str:
        return ('<form action="/search" method="get" role="search"><label for="q">Search products</label> '
                f'<input id="q" name="q" type="search" value="{html.escape(value)}"><button>Search</button></form>')

    @staticmethod
    def page(title: str, heading: str, body: str) -> str:
        nav = '<nav><a href="/deals">Deals</a> <a href="/cart">Cart</a></nav>'
        return f"<!doctype html><html><head><title>{title}</title></head><body>{nav}<h1>{heading}</h1>{body}</body></html>"

    def product(self, product_id: str) -> str:
        name = html.escape(self.name_of(product_id))
        form = (f'<form method="post" action="/cart/add"><input type="hidden" name="sku" value="{product_id}">'
                '<button>Add to cart</button></form>')
        return self.page(name, name, form)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def env():
    shop = LandingShop()
    try:
        with sync_chromium() as browser:
            yield shop, browser
    finally:
        shop.close()


@pytest.fixture(scope="module")
def recorded(env, tmp_path_factory):
    """``plans_for(tmp_path, start, goal, steps, query)``: a PlanCache in tmp_path holding the plan
    ``_record`` makes. The same recording (start, goal, steps, query) is made once per module (a few
    seconds of real Chromium) and each test gets its own copy of its database."""
    folder = tmp_path_factory.mktemp("landing-recordings")
    made: dict[tuple[Any, ...], Path] = {}

    def plans_for(tmp_path: Path, start: str, goal: str, steps, query: str = "clip-on desk lamp") -> PlanCache:
        key = (start, goal, steps, query)
        if key not in made:
            db = folder / f"plans-{len(made)}.db"
            _record(env, db, start, goal, steps, query).store.close()
            made[key] = db
        shutil.copyfile(made[key], tmp_path / "plans.db")
        return PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))

    return plans_for


def _record(env, db: Path, start: str, goal: str, steps, query: str = "clip-on desk lamp") -> PlanCache:
    from actioncache.replay.browser import PageRecorder

    shop, browser = env
    shop.flags, shop.carted = set(), []
    plans = PlanCache(open_store(f"sqlite:///{db}"))
    context = browser.new_context(service_workers="block")
    try:
        page = context.new_page()
        page.goto(shop.url + start)
        rec = PageRecorder(page, inputs={"query": query})
        steps(rec)
        rec.complete()
        assert rec.save(plans, goal)
    finally:
        context.close()
    assert shop.carted == ["101"]
    return plans


def _replay(env, plans: PlanCache, start: str, goal: str, *flags: str, query: str | None = None):
    from actioncache.replay.browser import replay_plan

    shop, browser = env
    shop.flags, shop.carted = set(flags), []

    def personalize(action, context):
        if query is not None and action.action_type == "input_text":
            action.text = query
        return action

    context = browser.new_context(service_workers="block")
    try:
        page = context.new_page()
        page.goto(shop.url + start)
        outcome = replay_plan(plans, page, goal, personalize=personalize)
        page.wait_for_timeout(100)
    finally:
        context.close()
    return outcome, list(shop.carted)


def _deals(rec) -> None:
    rec.click('a:text-is("Clip-on Desk Lamp")')
    rec.click("text=Add to cart")


def _search(rec) -> None:
    rec.fill("[name=q]", "clip-on desk lamp")
    rec.click("form[role=search] button")
    rec.click('a:text-is("Clip-on Desk Lamp")')
    rec.click("text=Add to cart")


DEALS, SEARCH = ("/deals", "add the clip-on desk lamp to the cart"), ("/shop", "buy the lamp the user names")


def test_a_link_that_now_points_to_another_product_is_not_followed_into_a_purchase(env, recorded, tmp_path):
    plans = recorded(tmp_path, *DEALS, _deals)
    outcome, carted = _replay(env, plans, *DEALS, "stale-link")
    assert not outcome.finished and outcome.reason == FallbackReason.LANDING_CHANGED, outcome.message
    assert "/product/104" in outcome.message and "/product/101" in outcome.message
    assert carted == []  # the other product was not bought
    plans.store.close()


def test_a_product_id_reused_for_another_product_is_told_by_the_page_it_lands_on(env, recorded, tmp_path):
    plans = recorded(tmp_path, *DEALS, _deals)
    outcome, carted = _replay(env, plans, *DEALS, "renumbered")
    assert not outcome.finished and outcome.reason == FallbackReason.LANDING_CHANGED, outcome.message
    assert "Oak Floor Lamp" in outcome.message
    assert carted == []
    plans.store.close()


def test_a_search_result_link_that_now_points_to_another_product_is_not_bought(env, recorded, tmp_path):
    # The recorded query again: the click is re-decided by the resolver (it picks the link named like
    # the query), and the page that link now opens names another product.
    plans = recorded(tmp_path, *SEARCH, _search)
    outcome, carted = _replay(env, plans, *SEARCH, "stale-link")
    assert not outcome.finished and outcome.reason == FallbackReason.LANDING_CHANGED, outcome.message
    assert carted == []
    plans.store.close()


def test_a_plan_recorded_on_one_product_page_does_not_buy_another(env, recorded, tmp_path):
    goal = "add this lamp to the cart"
    plans = recorded(tmp_path, "/product/101", goal, lambda rec: rec.click("text=Add to cart"))
    outcome, carted = _replay(env, plans, "/product/104", goal)
    assert not outcome.finished and outcome.reason == FallbackReason.START_PAGE_CHANGED, outcome.message
    assert outcome.served == 0 and carted == []
    same, carted = _replay(env, plans, "/product/101", goal)
    assert same.finished, same.message
    assert carted == ["101"]
    plans.store.close()


@pytest.mark.parametrize("where, query, item", [(DEALS, None, "101"), (SEARCH, None, "101"),
                                                (SEARCH, "oak floor lamp", "104")])
def test_unchanged_pages_and_another_query_still_replay(env, recorded, tmp_path, where, query, item):
    plans = recorded(tmp_path, *where, _deals if where == DEALS else _search)
    outcome, carted = _replay(env, plans, *where, query=query)
    assert outcome.finished, outcome.message
    assert carted == [item]
    plans.store.close()


def _cheapest(rec) -> None:
    rec.fill("[name=q]", "lamp")
    rec.click("form[role=search] button")
    rec.click('a:text-is("Clip-on Desk Lamp")', intent="cheapest")
    rec.click("text=Add to cart")


def test_a_monthly_rate_is_not_read_as_the_cheapest_price(env, recorded, tmp_path):
    # "The cheapest" was chosen among prices; a rate ($9/mo) is not a price to compare them with.
    goal = "add the cheapest lamp to the cart"
    plans = recorded(tmp_path, "/shop", goal, _cheapest, query="lamp")
    outcome, carted = _replay(env, plans, "/shop", goal, "rental")
    assert outcome.finished and carted == ["101"], outcome.message  # the recorded query's own choice stands
    other, carted = _replay(env, plans, "/shop", goal, "rental", query="desk lamp")
    assert not other.finished and other.reason == FallbackReason.INTENT_UNRESOLVED, other.message
    assert carted == []  # the rental was not taken for the cheapest desk lamp
    plans.store.close()
