"""An option the personalize hook chooses that the list does not have (the outside tester's F6), in Chromium.

The replay stops with ``option_required`` and a message naming the missing option and the ones the
list offers, not with a browser timeout (``execution_error``) that costs the plan its trust: the
mistake was the caller's. The same plan then replays with an option the list has.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from actioncache import open_store
from actioncache.replay import PlanCache

from .browser_support import sync_chromium

pytestmark = pytest.mark.xdist_group(name="replay_option_missing")


class _Site:
    def __init__(self) -> None:
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
                if self.path.startswith("/ship"):
                    return self._send(200, '<!doctype html><title>Shipping</title><h1>Shipping</h1><form method="post" '
                                           'action="/ship"><label for="co">Country</label><select id="co" name="co">'
                                           '<option value="US">United States</option><option value="FR">France</option>'
                                           '</select><button>Continue</button></form>')
                return self._send(200, "<!doctype html><title>Done</title><h1>Done</h1>")

            def do_POST(self):
                site.posts.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self._send(303, location="/done")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/ship"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _hook(option):
    def hook(action, context):
        if action.action_type == "select_option":
            action.option = option
        return action
    return hook


def test_an_option_the_list_lacks_is_a_clear_stop_and_the_plan_keeps_serving(tmp_path):
    from actioncache.replay.browser import PageRecorder, replay_plan

    site = _Site()
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        with sync_chromium() as browser:
            context = browser.new_context(service_workers="block")
            page = context.new_page()
            page.goto(site.url)
            rec = PageRecorder(page)
            rec.select("#co", "FR")
            rec.click("form button")
            rec.complete()
            rec.save(plans, "ship my order")
            context.close()
            site.posts.clear()
            outcomes = []
            for option in ({"value": "DE"}, {"label": "Germany"}, {"label": "United States"}):
                context = browser.new_context(service_workers="block")
                page = context.new_page()
                page.goto(site.url)
                outcomes.append(replay_plan(plans, page, "ship my order", personalize=_hook(option)))
                context.close()
        for bad, missing in zip(outcomes[:2], ("value 'DE'", "label 'Germany'")):
            assert bad.reason == "option_required", bad.message
            assert f"no option with {missing}" in (bad.message or "")
            assert "'FR'" in str(bad.message) or "'France'" in str(bad.message)  # what the list offers
        assert outcomes[2].finished, outcomes[2].message
        assert site.posts == [b"co=US"]
    finally:
        plans.store.close()
        site.close()
