"""Every step's outcome is compared with the recorded one (issue 29 item 2, by construction).

A plan is recorded on a one-form site: "Save" posts the note, then the page goes to ``/done``. Each
changed version keeps the URL, the status class and the fingerprints, and changes only what the step
led to: a human check in the heading, a one-time-code box (a second factor at the same URL), an alert
("Payment declined"), a modal dialog, a JavaScript confirm, or no request at all. Each stops the replay
with ``finished=False`` and ``outcome_changed`` (or ``captcha_required``) and lowers the plan's trust.
Real Chromium; the server logs every request.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from actioncache import open_store
from actioncache.replay import FallbackReason, PlanCache
from actioncache.replay.browser import PageRecorder, replay_plan

from .browser_support import sync_chromium

pytestmark = pytest.mark.xdist_group(name="replay_outcomes_seen")

FORM = """<!doctype html><html><body><input name=note aria-label=Note><button type=button id=go>Save</button>
<script>document.getElementById('go').onclick = async () => { %s };</script>%s</body></html>"""
#: A page that sends from its unload listeners (attack-replay F29): routing no longer covers a document being left.
UNLOAD = """<script>addEventListener('pagehide', () => {
  navigator.sendBeacon('/evil?via=beacon', 'confirm=1');
  fetch('/evil?via=keepalive', {method: 'POST', body: 'x', keepalive: true});
});</script>"""
#: The same, from references the page took before any replay could touch ``fetch`` or ``sendBeacon``:
#: Playwright's server lets such a request go without routing it (the browser's network inspector
#: does not know it), so only the guard's backstop sees it.
UNLOAD_OWN = """<script>const ownFetch = window.fetch.bind(window), ownBeacon = navigator.sendBeacon.bind(navigator);
addEventListener('pagehide', () => {
  ownBeacon('/evil?via=own-beacon', 'confirm=1');
  ownFetch('/evil?via=own-keepalive', {method: 'POST', body: 'x', keepalive: true});
});</script>"""
#: A frame of another origin (another process: its own DevTools target) that sends from its own saved
#: ``fetch`` as the page around it is left: the frame's target goes with the page.
WIDGET = """<!doctype html><script>const ownFetch = window.fetch;
addEventListener('pagehide', () => ownFetch('/evil?via=widget', {method: 'POST', body: 'x', keepalive: true}));
</script><p>widget</p>"""
SAVE = ("await fetch('/save', {method: 'POST', headers: {'content-type': 'application/x-www-form-urlencoded'}, "
        "body: 'note=' + encodeURIComponent(document.querySelector('[name=note]').value)}); location.href = '/done';")
DONE = {
    "base": "<h1>Saved</h1>",
    "human-check": "<h1>Please verify you are a human</h1><button>Press &amp; hold</button>",
    "second-factor": "<h1>Saved</h1><label>Code <input name=c autocomplete=one-time-code></label>",
    "declined": "<h1>Saved</h1><p role=alert>Payment declined. No order was placed.</p>",
    "modal": "<h1>Saved</h1><div role=alertdialog aria-modal=true>Your session expired</div>",
}
CLICK = {"confirm": "if (!confirm('Delete everything?')) return; " + SAVE, "nothing": "/* no longer saves */"}
REASONS = {"human-check": FallbackReason.CAPTCHA_REQUIRED}


class Site:
    def __init__(self) -> None:
        self.variant = "base"
        self.posts: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path.startswith("/widget"):
                    body = WIDGET
                elif self.path.startswith("/done"):
                    body = "<!doctype html>" + DONE.get(site.variant, DONE["base"])
                else:
                    body = FORM % (CLICK.get(site.variant, SAVE), {"unload": UNLOAD, "unload-own": UNLOAD_OWN,
                                                                     "unload-widget": site.widget}.get(site.variant, ""))
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                site.posts.append(self.path)
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/form"
        self.widget = f'<iframe src="http://localhost:{self.server.server_port}/widget"></iframe>'



@pytest.fixture(scope="module")
def site_and_browser():
    site = Site()
    with sync_chromium() as browser:
        yield site, browser
    site.server.shutdown()
    site.server.server_close()


def _record(site, browser, plans) -> None:
    site.variant = "base"
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    page.goto(site.url)
    rec = PageRecorder(page, inputs={"note": "hello"})
    rec.fill("[name=note]", "hello")
    rec.click("#go")
    page.wait_for_url("**/done")
    rec.complete()
    rec.save(plans, "save a note")
    context.close()


@pytest.mark.parametrize("variant", [*sorted(v for v in DONE if v != "base"), *sorted(CLICK)])
def test_a_step_that_led_elsewhere_than_recorded_stops_and_the_plan_loses_trust(site_and_browser, tmp_path, variant):
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        _record(site, browser, plans)
        site.variant, site.posts[:] = variant, []
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        outcome = replay_plan(plans, page, "save a note")
        context.close()
        assert not outcome.finished
        assert outcome.reason == REASONS.get(variant, FallbackReason.OUTCOME_CHANGED), outcome.message
        [plan] = plans.history_of((site.url, "save a note"))
        assert plan["trust"] < 1.0
    finally:
        plans.store.close()


def test_the_recorded_outcome_replays(site_and_browser, tmp_path):
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        _record(site, browser, plans)
        site.posts[:] = []
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        outcome = replay_plan(plans, page, "save a note")
        context.close()
        assert outcome.finished, outcome.message
        assert site.posts == ["/save"]
    finally:
        plans.store.close()


def test_what_a_page_sends_while_it_is_left_does_not_leave(site_and_browser, tmp_path):
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        _record(site, browser, plans)
        site.variant, site.posts[:] = "unload", []
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        outcome = replay_plan(plans, page, "save a note")
        page.wait_for_timeout(500)
        context.close()
        assert [p for p in site.posts if p.startswith("/evil")] == [], site.posts
        assert site.posts == ["/save"], site.posts
        # The page's plain fetch dies with the document it is sent from, or (on a slow machine) reaches
        # the guard first: then the guard refuses it and the replay says so. Either way nothing leaves.
        assert outcome.finished or (outcome.reason == FallbackReason.UNEXPECTED_REQUEST
                                    and "/evil" in outcome.message), outcome.message
    finally:
        plans.store.close()


@pytest.mark.parametrize("variant", ["unload-own", pytest.param("unload-widget", marks=pytest.mark.xfail(
    reason="known hole (docs/replay.md): a frame of another origin the page had before the replay sends from its "
           "own saved fetch as the page is left by a recorded navigation; Chromium drops the frame's DevTools target "
           "with the page, and the request can leave before any interception holds it", strict=False))])
def test_what_a_page_sends_while_it_is_left_from_its_own_references_does_not_leave(site_and_browser, tmp_path,
                                                                                  variant):
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        _record(site, browser, plans)
        site.variant, site.posts[:] = variant, []
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        outcome = replay_plan(plans, page, "save a note")
        page.wait_for_timeout(500)
        context.close()
        assert [p for p in site.posts if p.startswith("/evil")] == [], site.posts
        assert site.posts == ["/save"], site.posts
        assert not outcome.finished and outcome.reason == FallbackReason.UNEXPECTED_REQUEST, outcome.message
        assert "/evil" in outcome.message and "aborted before it left the browser" in outcome.message, outcome.message
        assert any("/evil" in b for b in outcome.blocked), outcome.blocked
    finally:
        plans.store.close()
