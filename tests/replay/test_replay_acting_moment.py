"""Fingerprints are read again at the moment of acting (issue 29 item 3, by construction).

A page can change what a field or button means between the replay's lookup and its action: on
focus, on hover, or a moment later. The replay focuses the field (or moves the mouse onto the
button), reads the element's role and accessible name again as the browser computes them, and acts
only when it is still the recorded element. Real Chromium; the server logs every request.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from actioncache import open_store
from actioncache.replay import FallbackReason, PlanCache
from actioncache.replay.browser import PageRecorder, replay_plan

from .browser_support import sync_chromium

pytestmark = pytest.mark.xdist_group(name="replay_acting_moment")

BASE = """<!doctype html><html><body>
<span id=l1>Email</span><input id=contact name=contact aria-labelledby=l1>
<button type=button id=go>Save</button>
<script>
document.getElementById('go').onclick = () => fetch('/save', {method: 'POST',
  headers: {'content-type': 'application/x-www-form-urlencoded'},
  body: 'contact=' + encodeURIComponent(document.getElementById('contact').value)});
%s
</script></body></html>"""

CHANGES = {
    "base": "",
    # The field's label now reads "Phone" once it has the focus (the typed email would go into a phone field).
    "relabel-on-focus": "document.getElementById('contact').addEventListener('focus', () => "
                        "{ document.getElementById('l1').textContent = 'Phone'; });",
    # The button becomes "Delete account" when the mouse is on it.
    "rename-on-hover": "document.getElementById('go').addEventListener('mouseover', (e) => "
                       "{ e.target.textContent = 'Delete account'; });",
}


class Site:
    def __init__(self) -> None:
        self.change = "base"
        self.posts: list[bytes] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                data = (BASE % CHANGES[site.change]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                site.posts.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/contact"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("moment")
    site = Site()
    plans = PlanCache(open_store(f"sqlite:///{folder}/plans.db"))
    with sync_chromium() as browser:
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        rec = PageRecorder(page, inputs={"contact": "ada@example.org"})
        rec.fill("#contact", "ada@example.org")
        rec.click("#go")
        rec.complete()
        rec.save(plans, "save my contact")
        context.close()
        yield site, browser, plans
    plans.store.close()
    site.server.shutdown()
    site.server.server_close()


def _replay(recorded, change: str):
    site, browser, plans = recorded
    site.change, site.posts[:] = change, []
    context = browser.new_context(service_workers="block")
    try:
        page = context.new_page()
        page.goto(site.url)
        outcome = replay_plan(plans, page, "save my contact")
        time.sleep(0.3)
        return outcome, page.input_value("#contact") if not page.is_closed() else None
    finally:
        context.close()


def test_a_label_that_changes_on_focus_gets_nothing_typed(recorded):
    outcome, typed = _replay(recorded, "relabel-on-focus")
    assert outcome.reason == FallbackReason.NAME_CHANGED and "'Phone'" in outcome.message
    assert typed == "" and recorded[0].posts == []


def test_a_button_renamed_on_hover_is_not_clicked(recorded):
    outcome, _ = _replay(recorded, "rename-on-hover")
    assert outcome.reason == FallbackReason.NAME_CHANGED and "Delete account" in outcome.message
    assert recorded[0].posts == []


def test_the_unchanged_page_replays(recorded):
    outcome, typed = _replay(recorded, "base")
    assert outcome.finished, outcome.message
    assert typed == "ada@example.org" and recorded[0].posts == [b"contact=ada%40example.org"]


def test_a_name_changed_message_says_what_changed():
    """attack-replay F5: a placeholder added to a labelled field: the name is the same, the message says so."""
    from actioncache.replay import Action, page_from_html

    plans = PlanCache(open_store("memory://"))
    box = page_from_html("<label for=f>Full name</label><input id=f name=fullname>").elements[0]
    plans.record(("https://x.example/a", "g"), [Action.for_element("input_text", box, text="Ada"), Action("complete")],
                 completed=True)
    same = plans.lookup(("https://x.example/a", "g"),
                        "<label for=f>Full name</label><input id=f name=fullname placeholder='Jane Doe'>")
    assert same.reason == FallbackReason.NAME_CHANGED
    assert "placeholder: None -> 'Jane Doe'" in same.message and "still 'Full name'" in same.message
    other = plans.lookup(("https://x.example/a", "g"), "<label for=f>Phone</label><input id=f name=fullname>")
    assert "recorded 'Full name', now 'Phone'" in other.message
