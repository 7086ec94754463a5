"""A toggle the recording switched on is not switched back off (attack-replay F19).

"Do not share my data" is a switch that saves itself on change. The recording found it off and
switched it on. A replay on a page where it is already on does not click it (a click would switch it
off and post that); where it is off, the replay switches it on. Real Chromium; the server keeps the
setting and logs every save.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from actioncache import open_store
from actioncache.replay import PlanCache
from actioncache.replay.browser import PageRecorder, replay_plan

from .browser_support import sync_chromium

PAGE = """<!doctype html><html><body><h1>Privacy</h1>
<label><input type=checkbox role=switch name=noshare %s> Do not share my data with partners</label>
<script>document.querySelector('[name=noshare]').addEventListener('change', (e) => fetch('/settings/save', {
  method: 'POST', headers: {'content-type': 'application/x-www-form-urlencoded'},
  body: 'noshare=' + (e.target.checked ? '1' : '0')}));</script></body></html>"""


def test_a_switch_already_in_the_recorded_after_state_is_left_alone(tmp_path):
    saved: list[bytes] = []
    state = {"noshare": False}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            data = (PAGE % ("checked" if state["noshare"] else "")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            saved.append(body)
            state["noshare"] = body == b"noshare=1"
            self.send_response(204)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/privacy"
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        with sync_chromium() as browser:
            context = browser.new_context(service_workers="block")
            page = context.new_page()
            page.goto(url)
            rec = PageRecorder(page)
            rec.click("[name=noshare]")
            rec.complete()
            rec.save(plans, "stop sharing my data")
            assert saved == [b"noshare=1"] and state["noshare"]

            saved.clear()
            page.goto(url)  # the server remembers: the switch is on
            outcome = replay_plan(plans, page, "stop sharing my data")
            page.wait_for_timeout(300)
            assert outcome.finished, outcome.message
            assert saved == [] and state["noshare"]

            state["noshare"] = False
            page.goto(url)  # off again: the replay switches it on
            outcome = replay_plan(plans, page, "stop sharing my data")
            page.wait_for_timeout(300)
            assert outcome.finished and saved == [b"noshare=1"] and state["noshare"]
            context.close()
    finally:
        plans.store.close()
        server.shutdown()
        server.server_close()
