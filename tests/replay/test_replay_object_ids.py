"""A replay never acts on another object than the recording did (the outside tester's R01), in Chromium.

A sessions page with one "Revoke" button per row, each a form posting to ``/sessions/<id>/revoke``.
The plan revoked "Old iPhone" (1001). At replay the only row is the current session (2002): the
same button, the same URL pattern, the same field names. The request guard compares the ids the
URL names with the recorded ones and stops the POST before it leaves the browser.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from actioncache import open_store
from actioncache.replay import PlanCache

from .browser_support import sync_chromium

pytestmark = pytest.mark.xdist_group(name="replay_object_ids")


class _Site:
    def __init__(self) -> None:
        self.rows = [(1001, "Old iPhone, last seen 2023")]
        self.posts: list[str] = []
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
                rows = "".join(f'<li>{text} <form method="post" action="/sessions/{i}/revoke">'
                               f'<input type="hidden" name="sid" value="{i}"><button>Revoke</button></form></li>'
                               for i, text in site.rows)
                self._send(200, f"<!doctype html><title>Sessions</title><h1>Active sessions</h1><ul>{rows}</ul>")

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                site.posts.append(self.path)
                self._send(303, location="/sessions")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/sessions"

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
        return replay_plan(plans, page, "revoke the old iPhone session")
    finally:
        context.close()


def test_a_row_action_on_another_object_is_stopped_before_it_leaves_the_browser(tmp_path, site):
    from actioncache.replay.browser import PageRecorder

    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        with sync_chromium() as browser:
            context = browser.new_context(service_workers="block")
            page = context.new_page()
            page.goto(site.url)
            rec = PageRecorder(page)
            rec.click("li button")
            rec.complete()
            rec.save(plans, "revoke the old iPhone session")
            context.close()
            assert site.posts == ["/sessions/1001/revoke"]

            same = _replay(browser, plans, site)  # the same row: the same object, replayed
            assert same.finished, same.message
            assert site.posts[-1] == "/sessions/1001/revoke"

            site.posts.clear()
            site.rows = [(2002, "This laptop (current session)")]
            other = _replay(browser, plans, site)
        assert not other.finished
        assert other.reason == "unexpected_request", other.message
        assert "another object" in (other.message or "")
        assert site.posts == []  # the current session was never revoked
    finally:
        plans.store.close()
