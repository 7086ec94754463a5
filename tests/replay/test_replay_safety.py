"""Plan replay that cannot do harm (issue 29): the tester's findings, end to end in Chromium.

Each test replays a plan recorded on the original version of a local site (tests/replay/shop_sites.py)
on a changed version and checks, on the server's log, that nothing it must not receive arrived:

* a button whose onclick now posts to /account/delete: the request is aborted in the browser;
* a captcha newly required (403): the replay stops, finished=False, and the plan loses trust;
* "Email" relabelled "Phone" through aria-labelledby: nothing is typed or sent;
* another user's query: the result that query names is added, never the recorded one;
* "Show password" and a PIN: no typed secret in any stored byte (database and WAL);
* same-origin iframes are replayed; a target in a cross-origin iframe is refused when recording;
* a page a service worker controls (whose requests the guard cannot see) is refused.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from actioncache import open_store
from actioncache.replay import FallbackReason, PlanCache

from .browser_support import sync_chromium
from .shop_sites import CARD, CVC, PASSWORD, PIN, VARIANTS, Shop, record_all, record_site, replay_variant

pytestmark = pytest.mark.xdist_group(name="replay_shop_sites")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shop")
    with Shop() as shop, sync_chromium() as browser:
        yield shop, browser, record_all(browser, shop, folder), folder


def variant(site: str, name: str):
    return next(v for v in VARIANTS if v.site == site and v.name == name)


def replay(recorded, site: str, name: str):
    shop, browser, databases, folder = recorded
    return replay_variant(browser, shop, databases[site], folder, variant(site, name)), shop


def test_a_button_that_now_posts_to_account_delete_never_reaches_the_server(recorded):
    decision, shop = replay(recorded, "checkout", "pay-deletes-account")
    assert decision.reason == FallbackReason.UNEXPECTED_REQUEST and not decision.finished
    assert any("/account/delete" in b for b in decision.blocked)
    assert shop.posts("/account/delete") == [] and shop.orders == []
    assert CARD not in decision.message and CVC not in " ".join(decision.blocked)  # names, never values


def test_a_beacon_to_account_delete_is_aborted_too(recorded):
    decision, shop = replay(recorded, "login", "beacon-delete")
    assert decision.reason == FallbackReason.UNEXPECTED_REQUEST
    assert shop.posts("/account/delete") == []


@pytest.mark.parametrize("site, name", [("login", "captcha"), ("checkout", "payment-captcha"), ("search", "captcha")])
def test_a_new_captcha_stops_the_replay_and_the_plan_loses_trust(recorded, site, name):
    decision, shop = replay(recorded, site, name)
    assert not decision.finished and decision.reason == FallbackReason.CAPTCHA_REQUIRED
    plans = PlanCache(open_store(f"sqlite:///{decision.db}"))
    try:
        [(key, body)] = [(k, plans.plan_store.records.codec.decode(plans.store.get(k).value))
                         for k in plans.store.find(pattern="plan:*:p:*")]
    finally:
        plans.store.close()
    assert body["trust"] < 1.0 and body["failures"] == 1


def test_a_relabelled_field_gets_nothing_typed_and_nothing_sent(recorded):
    decision, shop = replay(recorded, "checkout", "label-changed")
    assert decision.reason == FallbackReason.NAME_CHANGED and "'Email'" in decision.message
    assert shop.posts("/checkout") == []


def test_another_query_adds_the_item_it_names_never_the_recorded_one(recorded):
    decision, shop = replay(recorded, "search", "other-query")
    assert decision.finished
    assert [r.form["sku"] for r in shop.posts("/cart/add")] == ["oak-floor-lamp"]
    decision, shop = replay(recorded, "search", "query-not-found")
    assert decision.reason == FallbackReason.INTENT_UNRESOLVED and shop.posts("/cart/add") == []


def _forms(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, secret.encode("utf-16-le"), base64.b64encode(raw), secret.encode("unicode_escape")]


def _scan(folder: Path, name: str) -> bytes:
    files = sorted(folder.glob(name + "*"))
    assert files, "nothing was stored"
    return b"".join(p.read_bytes() for p in files)


def test_no_typed_secret_in_any_stored_byte(recorded, tmp_path):
    """Show password (the field was type=password, then text), a PIN, a card number and its code."""
    shop, browser, _, _ = recorded
    for site in ("login", "checkout"):
        plans = PlanCache(open_store(f"sqlite:///{tmp_path}/{site}.db"), shared_metrics=True)
        context = browser.new_context(service_workers="block")
        record_site(site, context.new_page(), shop, plans)
        context.close()
        while_open = _scan(tmp_path, f"{site}.db")  # the database and its WAL, as written
        stored = [plans.plan_store.records.codec.decode(plans.store.get(k).value)
                  for k in plans.store.find(pattern="plan:*:p:*")]
        plans.store.close()
        closed = _scan(tmp_path, f"{site}.db")
        for blob in (while_open, closed):
            assert b"alice" in blob or b"rec@example.org" in blob  # the scan sees what was stored
            for secret in (PASSWORD, PIN, CARD):
                assert not any(form in blob for form in _forms(secret)), f"{site}: a secret reached the store"
        typed = [a for a in stored[0]["actions"] if a["action_type"] == "input_text"]
        secret_names = [a.get("secret") for a in typed if "text" not in a]
        assert secret_names == (["password", "pin"] if site == "login" else ["card", "cvc"])


def test_a_target_in_an_iframe_of_another_origin_is_refused_when_recording(recorded):
    from actioncache.replay.browser import PageRecorder

    shop, browser, _, _ = recorded
    shop.reset(variant("login", "cross-origin-iframe"))
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    page.goto(shop.url + "/login")
    rec = PageRecorder(page, inputs={"user": "alice"})
    with pytest.raises(ValueError, match="another origin"):
        rec.fill(page.frame_locator("iframe").locator("[name=user]"), "alice")
    assert rec.actions == []
    context.close()


SW_PAGE = """<!doctype html><form method=post action=/save><input name=note aria-label=Note>
<button>Save</button></form><script>navigator.serviceWorker.register('/sw.js')</script>"""
SW_SCRIPT = "self.addEventListener('install', () => self.skipWaiting());\n" \
            "self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));\n" \
            "self.addEventListener('fetch', () => {});"


def test_a_page_a_service_worker_controls_is_refused(recorded, tmp_path):
    """A service worker's own requests bypass Playwright's routing: the replay refuses instead of trusting it."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from actioncache.replay import Action, page_from_html
    from actioncache.replay.browser import replay_plan

    posts = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body, kind = (SW_SCRIPT, "text/javascript") if self.path == "/sw.js" else (SW_PAGE, "text/html")
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            posts.append(self.path)
            self.send_response(204)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/"
    _, browser, _, _ = recorded
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    note, save = page_from_html(SW_PAGE).elements
    plans.record((url, "save a note"), [Action.for_element("input_text", note, text="hi"),
                                        Action.for_element("click", save), Action("complete")], completed=True)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("() => !!navigator.serviceWorker.controller", timeout=10_000)
        outcome = replay_plan(plans, page, "save a note")
        assert outcome.reason == FallbackReason.UNGUARDED_PAGE and outcome.served == 0
        assert "service_workers='block'" in outcome.message and posts == []
        blocked = browser.new_context(service_workers="block")
        page = blocked.new_page()
        page.goto(url)
        # A plan built from HTML text has no recorded requests: in a browser, its form post is not let through.
        assert replay_plan(plans, page, "save a note").reason == FallbackReason.UNEXPECTED_REQUEST
        assert posts == []
        blocked.close()
    finally:
        context.close()
        plans.store.close()
        server.shutdown()
        server.server_close()
