"""The text next to a field is part of what typing into it means (the outside tester's C01), in Chromium.

A tip box labelled "Tip" with its unit in a ``<span>`` after it, outside the label. The plan typed
"5" next to "USD". When the unit becomes "JPY" the label and every attribute are the same, so the
fingerprint is too; the replay reads the field's adjacent text again at the moment of typing and
stops (``name_changed``) before anything is typed or paid. Same unit, other class names: replayed.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from actioncache import open_store
from actioncache.replay import PlanCache

from .browser_support import sync_chromium

pytestmark = pytest.mark.xdist_group(name="replay_adjacent")


class _Site:
    def __init__(self) -> None:
        self.unit, self.cls = "USD", "u1"
        self.posts: list[bytes] = []
        site = self

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
                if self.path.startswith("/pay"):
                    return self._send(200, '<!doctype html><title>Payment</title><h1>Payment</h1><form method="post" '
                                           'action="/pay"><label for="tip">Tip</label><input id="tip" name="tip">'
                                           f'<span class="{site.cls}">{site.unit}</span><button>Pay</button></form>')
                return self._send(200, "<!doctype html><title>Done</title><h1>Thank you</h1>")

            def do_POST(self):
                site.posts.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self._send(303, location="/done")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/pay"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    s = _Site()
    yield s
    s.close()


def _replay(browser, plans: PlanCache, site: _Site):
    from actioncache.replay.browser import replay_plan

    context = browser.new_context(service_workers="block")
    try:
        page = context.new_page()
        page.goto(site.url)
        return replay_plan(plans, page, "pay for my order")
    finally:
        context.close()


def test_a_changed_unit_next_to_a_typed_amount_stops_the_replay_before_typing(tmp_path, site):
    from actioncache.replay.browser import PageRecorder

    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        with sync_chromium() as browser:
            context = browser.new_context(service_workers="block")
            page = context.new_page()
            page.goto(site.url)
            rec = PageRecorder(page, inputs={"tip": "5"})
            rec.fill("#tip", "5")
            rec.click("form button")
            rec.complete()
            rec.save(plans, "pay for my order")
            context.close()
            assert site.posts == [b"tip=5"]

            site.cls = "unit-x9"  # cosmetic: the same unit
            same = _replay(browser, plans, site)
            assert same.finished, same.message
            assert site.posts[-1] == b"tip=5"

            site.posts.clear()
            site.unit = "JPY"
            other = _replay(browser, plans, site)
        assert not other.finished
        assert other.reason == "name_changed", other.message
        assert "JPY" in (other.message or "")
        assert site.posts == []
    finally:
        plans.store.close()
