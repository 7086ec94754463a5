"""A value the page shows is not public (the outside tester's L18-L22, P06-P16), end to end in Chromium.

Pages show secrets all the time: a temporary password in a focusable ``<code>``, a new API key, a
birth year that is also the PIN (an option of a year list), a city link that is also the security
answer. The user copies them into plain text boxes labelled in any language. None of it may be
stored (every byte of the database and its WAL is scanned), and a replay for a second user types
that user's values, never the first user's.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from actioncache import open_store
from actioncache.replay import PlanCache

from .browser_support import sync_chromium
from .loopback_port import serve_on_loopback
from .test_secrets_by_history import forms_of

pytestmark = pytest.mark.xdist_group(name="replay_shown")

ALICE = {"f1": "Hunter2-Zq9xP", "f2": "Grenoble", "f3": "ak_9f8e7d6c5b4a3", "f4": "1987"}
BOB = {"f1": "BobPass-777x", "f2": "Lyon-bob", "f3": "ak_bobbobbob111", "f4": "2468"}
LABELS = {
    "ja": ("パスワード", "秘密の質問の答え：出生地", "APIキー", "暗証番号"),
    "fr": ("Mot de passe", "Réponse secrète : ville natale", "Clé d'API", "Code"),
    "ar": ("كلمة المرور", "جواب السؤال", "مفتاح", "الرمز"),
    "en": ("Paste it here", "Answer", "Paste it here to confirm", "Code"),
}
PAGE = """<!doctype html><html><head><title>Settings</title></head><body><h1>Settings</h1>
<p>Your temporary password: <code tabindex="0">Hunter2-Zq9xP</code></p>
<p>Your new key: <code tabindex="0">ak_9f8e7d6c5b4a3</code></p>
<p>Cities: <a href="/city/1">Grenoble</a> <a href="/city/2">Lyon-bob</a></p>
<form method="post" action="/save">
<label for="f0">Name</label><input id="f0" name="f0">
<label for="by">Year</label><select id="by" name="by"><option>1986</option><option>1987</option>
<option>2468</option></select>
%s
<button id="go">Save</button></form></body></html>"""


class _Site:
    def __init__(self, lang: str) -> None:
        self.posts: list[bytes] = []
        site = self
        boxes = "".join(f'<label for="f{i}">{label}</label><input id="f{i}" name="f{i}" type="text">'
                        for i, label in enumerate(LABELS[lang], start=1))

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
                if self.path.startswith("/settings"):
                    return self._send(200, PAGE % boxes)
                return self._send(200, "<!doctype html><title>Saved</title><h1>Saved</h1>")

            def do_POST(self):
                site.posts.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self._send(303, location="/saved")

        self.server = serve_on_loopback(Handler, avoiding=[*ALICE.values(), *BOB.values()])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/settings"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _scan(folder: Path, values: list[str]) -> None:
    files = sorted(p for p in folder.iterdir() if p.name.startswith("plans.db"))
    assert files, "nothing was stored"
    blob = b"".join(p.read_bytes() for p in files)
    for value in values:
        for form in forms_of(value):
            assert form not in blob, f"a value copied from the page ({value[:3]}...) is in the store as {form[:3]!r}"


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module (each test makes its own contexts): not a launch per test."""
    with sync_chromium() as chromium:
        yield chromium


@pytest.mark.parametrize("lang", ["ja", "fr", "ar", "en"])
def test_values_shown_on_the_page_and_typed_are_placeholders_and_a_second_user_gets_his_own(browser, tmp_path, lang):
    from actioncache.replay.browser import PageRecorder, replay_plan

    site = _Site(lang)
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        rec = PageRecorder(page, inputs={"name": "Alice Martin"})
        rec.fill("#f0", "Alice Martin")
        for name, value in ALICE.items():
            rec.fill(f"#{name}", value)  # copied from the page: not proof that it is public
        rec.click("#go")
        rec.complete()
        assert rec.save(plans, "update my settings") is not None
        context.close()
        assert site.posts[-1].endswith(b"f1=Hunter2-Zq9xP&f2=Grenoble&f3=ak_9f8e7d6c5b4a3&f4=1987")
        _scan(tmp_path, [v for v in ALICE.values() if v != "1987"])  # 1987 is also an option's text

        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        outcome = replay_plan(plans, page, "update my settings", secrets=BOB)
        context.close()
        assert outcome.finished, outcome.message
        body = site.posts[-1]
        assert body == b"f0=Alice+Martin&by=1986&f1=BobPass-777x&f2=Lyon-bob&f3=ak_bobbobbob111&f4=2468", body
        for value in ALICE.values():
            if value != "1987":
                assert f"={value}".encode() not in body
        plans.store.close()
        _scan(tmp_path, [v for v in [*ALICE.values(), *BOB.values()] if v not in ("1987", "2468")])
    finally:
        plans.store.close()
        site.close()


def test_a_value_given_for_a_field_stored_in_clear_wins_over_the_recorded_one(browser, tmp_path):
    from actioncache.replay.browser import PageRecorder, replay_plan

    site = _Site("en")
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        rec = PageRecorder(page, inputs={"name": "Alice Martin"})
        rec.fill("#f0", "Alice Martin")  # a declared input: stored in clear
        rec.click("#go")
        rec.complete()
        rec.save(plans, "update my settings")
        context.close()

        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        outcome = replay_plan(plans, page, "update my settings", secrets={"f0": "Bob Stone"})
        context.close()
        assert outcome.finished, outcome.message
        assert site.posts[-1].startswith(b"f0=Bob+Stone"), site.posts[-1]
    finally:
        plans.store.close()
        site.close()
