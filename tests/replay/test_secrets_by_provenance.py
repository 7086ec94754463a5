"""Secrets by provenance (issue 29, the tester's N1/N3), end to end in Chromium.

A field's words do not decide whether what is typed into it is a secret: a password box labelled
"Mot de passe", "Passwort" or "パスワード", a box named ``pass``, a recovery phrase, the answer to a
security question, all plain ``type=text`` boxes. A typed text is stored in clear only when it is shown
to be public (a declared input of the run, the task text, a field declared ``secret=False``; a text the
page shows is not proof); everything else is a placeholder the replay fills from ``secrets=``. Every byte of
the SQLite files (database and WAL) is scanned. Non-text secret values are a clear ``TypeError``.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from actioncache import open_store
from actioncache.replay import PlanCache, PlanSignature

from .browser_support import sync_chromium
from .test_secrets_by_history import forms_of

pytestmark = pytest.mark.xdist_group(name="replay_provenance")

FIELDS = [  # name, label, value typed while recording
    ("mdp", "Mot de passe", "Mdp-rec-93kQ"),
    ("passwort", "Passwort", "Pw-de-recorded-51"),
    ("jp", "パスワード", "jp-pass-77aa"),
    ("pass", None, "bare-pass-6612"),
    ("recovery", "Phrase de récupération", "orbit tulip canvas meadow"),
    ("answer", "Le nom de votre premier animal ?", "Rex-the-first-dog"),
]
PAGE = """<!doctype html><html><head><title>Compte</title></head><body><h1>Compte</h1>
<form method="post" action="/save">
<label for="user">Utilisateur</label><input id="user" name="user">
<label for="plan">Formule</label><input id="plan" name="plan">
<p>Formules : <button type="button">Essentiel</button></p>
%s
<button id="go">Enregistrer</button></form></body></html>"""


def _box(name: str, label: str | None) -> str:
    tag = (f'<textarea id="{name}" name="{name}"></textarea>' if name == "recovery"
           else f'<input id="{name}" name="{name}" type="text">')
    return (f'<label for="{name}">{label}</label>' if label else "") + tag


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
                if self.path.startswith("/form"):
                    return self._send(200, PAGE % "".join(_box(n, label) for n, label, _ in FIELDS))
                return self._send(200, "<!doctype html><title>Saved</title><h1>Saved</h1>")

            def do_POST(self):
                site.posts.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self._send(303, location="/saved")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/form"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    s = _Site()
    yield s
    s.close()


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module (a launch is seconds on a loaded machine); each test works in
    contexts of its own, which share no cookies, storage or cache with another's."""
    with sync_chromium() as chromium:
        yield chromium


def _scan(folder: Path, *values: str) -> None:
    files = sorted(p for p in folder.iterdir() if p.name.startswith("plans.db"))
    assert any(p.name.endswith("-wal") for p in files) or files, "nothing was stored"
    blob = b"".join(p.read_bytes() for p in files)
    for value in values:
        for form in forms_of(value):
            assert form not in blob, f"the value typed into a box ({value[:3]}...) is in the store as {form[:3]!r}..."


def _record(browser, site: _Site, plans: PlanCache) -> None:
    from actioncache.replay.browser import PageRecorder

    context = browser.new_context(service_workers="block")
    try:
        page = context.new_page()
        page.goto(site.url)
        rec = PageRecorder(page, inputs={"user": "ada", "plan": "Essentiel"})
        rec.fill("#user", "ada")          # a declared input: public
        rec.fill("#plan", "Essentiel")    # a declared input (shown on the page too, which alone proves nothing)
        for name, _, value in FIELDS:
            rec.fill(f"#{name}", value)   # typed, not shown to be public: placeholders
        rec.click("#go")
        rec.complete()
        assert rec.save(plans, "save my account") is not None
    finally:
        context.close()


def test_typed_values_not_shown_to_be_public_are_never_stored_whatever_the_field_says(tmp_path, site, browser):
    from actioncache.replay.browser import replay_plan

    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        _record(browser, site, plans)
        _scan(tmp_path, *(value for _, _, value in FIELDS))
        stored = plans.plan_store.newest(PlanSignature.of(site.url, "save my account"))[1]
        typed = [a for a in stored["actions"] if a["action_type"] == "input_text"]
        assert [a.get("text") for a in typed[:2]] == ["ada", "Essentiel"]
        assert [a.get("secret") for a in typed[2:]] == [name for name, _, _ in FIELDS]

        # Without the values the replay stops at the first placeholder, asking for it by name.
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        stopped = replay_plan(plans, page, "save my account")
        context.close()
        assert stopped.reason == "secret_required" and "'mdp'" in stopped.message

        new = {name: f"new-{name}-value" for name, _, _ in FIELDS}
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        outcome = replay_plan(plans, page, "save my account", secrets=new)
        context.close()
        assert outcome.finished, outcome.message
        assert site.posts[-1].startswith(b"user=ada&plan=Essentiel&mdp=new-mdp-value")
        plans.store.close()
        _scan(tmp_path, *(value for _, _, value in FIELDS), *new.values())
    finally:
        plans.store.close()


@pytest.mark.parametrize("value", [0, 1234, None, b"Hunter2", True, 1.5])
def test_a_secret_that_is_not_text_is_a_clear_error_before_anything_is_typed(tmp_path, site, browser, value):
    from actioncache.replay.browser import replay_plan

    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        _record(browser, site, plans)
        site.posts.clear()
        context = browser.new_context(service_workers="block")
        page = context.new_page()
        page.goto(site.url)
        secrets = {name: "fine" for name, _, _ in FIELDS}
        secrets["mdp"] = value
        with pytest.raises(TypeError, match=r"secrets\['mdp'\] must be a str, not "):
            replay_plan(plans, page, "save my account", secrets=secrets)
        assert page.input_value("#user") == "" and page.input_value("#mdp") == ""  # nothing typed
        context.close()
        assert site.posts == []
    finally:
        plans.store.close()
