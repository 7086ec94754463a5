"""Secrets by history (issue 29 item 5, by construction): what makes a value secret, and that it is
stored nowhere but as a placeholder.

Unit rules first (page_from_html + PlanCache.record on real SQLite, then every byte of the database,
its WAL and shared memory is scanned), then one recording in Chromium where each field turns secret
another way (the field was a one-time-code box before it was typed into, its label said PIN for a
moment, the password typed again into a plain box, a plain box whose value the page posts as the
password, the password echoed into a URL) and a replay of it: no typed secret in any store file after
recording nor after replaying, nor in the outcome, its messages or the log.
"""

from __future__ import annotations

import base64
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from actioncache import open_store
from actioncache.replay import Action, FallbackReason, PlanCache, PlanSignature, page_from_html
from actioncache.replay.secrets import secret_name

SIG = ("https://bank.example/settings", "change my password")


def forms_of(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, quote(secret, safe="").encode(), quote_plus(secret, safe="").encode(), secret.encode("utf-16-le"),
            base64.b64encode(raw), secret.encode("unicode_escape")]


def scan(folder: Path, *secrets: str) -> None:
    files = sorted(p for p in folder.iterdir() if p.name.startswith("plans.db"))
    assert files, "nothing was stored"
    blob = b"".join(p.read_bytes() for p in files)
    for secret in secrets:
        for form in forms_of(secret):
            assert form not in blob, f"a secret ({len(secret)} characters) is in the store as {form[:3]!r}..."


@pytest.mark.parametrize("html", [
    "<label for=p>Password</label><input id=p name=pw type=text>",
    "<input aria-label=Password type=text name=x>",
    "<label for=p>PIN</label><input id=p name=pin>",
    "<label for=s>Enter the 6-digit code we texted you</label><input id=s name=sms inputmode=numeric>",
    "<label for=k>API key</label><input id=k name=k>",
    "<input name=client_secret>",
    "<label for=t>Access token</label><input id=t name=t>",
    "<label for=q>Passphrase</label><input id=q name=q1>",
    "<label for=a>Security answer</label><input id=a name=a>",
    "<textarea aria-label='Private key' name=pk></textarea>",
])
def test_a_field_that_says_it_is_a_secret_is_one_whatever_its_type(html):
    action = Action.for_element("input_text", page_from_html(html).elements[0], text="typed-value-1234")
    assert secret_name(action) is not None


def test_a_field_that_was_a_code_box_at_any_moment_stays_secret():
    element = page_from_html("<input name=verify>").elements[0].to_dict()
    assert secret_name(Action.for_element("input_text", element, text="481516")) is None
    element["history"] = [{"autocomplete": "one-time-code"}]
    assert secret_name(Action.for_element("input_text", element, text="481516")) == "verify"
    element["history"] = [{"label": "PIN", "accessible_name": "PIN"}]
    assert secret_name(Action.for_element("input_text", element, text="4815")) == "verify"


def _record(tmp_path, actions, **options):
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"), shared_metrics=True)
    plan_id = plans.record(SIG, actions, completed=True, **options)
    assert plan_id
    return plans


def test_a_secret_typed_again_elsewhere_is_the_same_placeholder_and_replays(tmp_path):
    """The password typed again into a plain "confirm" box: stored nowhere, and typed again from secrets=."""
    page = page_from_html("<input type=password name=pw aria-label=Password>"
                          "<input name=again aria-label='Type it again'><input name=nick aria-label=Nickname>")
    pw, again, nick = page.elements
    secret = "Tr0ub4dor&3-horse"
    plans = _record(tmp_path, [Action.for_element("input_text", pw, text=secret),
                               Action.for_element("input_text", again, text=secret),
                               Action.for_element("input_text", nick, text="me and " + secret),
                               Action("complete")])
    result = plans.lookup(SIG, page, secrets={"pw": "new-value-99", "nick": "bob"})
    assert [a.text for a in result.actions[:3]] == ["new-value-99", "new-value-99", "bob"]
    assert secret not in repr(result) and "new-value-99" not in repr(result) and "new-value-99" not in str(result.to_dict())
    plans.store.close()
    scan(tmp_path, secret)


def test_values_the_page_sent_in_secret_fields_are_secrets(tmp_path):
    page = page_from_html("<input name=nick aria-label=Nickname>")
    plans = _record(tmp_path, [Action.for_element("input_text", page.elements[0], text="copied-into-password"),
                               Action("complete")], secret_values={"copied-into-password"})
    assert plans.lookup(SIG, page).reason == FallbackReason.SECRET_REQUIRED
    plans.store.close()
    scan(tmp_path, "copied-into-password")


def test_an_echo_in_any_encoding_or_grouping_is_not_stored(tmp_path):
    card, pw = "4929501234567893", "p@ss w0rd!/x"
    page = page_from_html(f"""<input name=cardnumber autocomplete=cc-number aria-label='Card number'>
        <input type=password name=pw aria-label=Password>
        <article><p>4929 5012 3456 7893</p><a href="/next?c=4929-5012-3456-7893&p={quote_plus(pw)}&q={quote(pw)}">
        Pay with {pw.replace('&', '&amp;')}</a></article>""")
    box, pw_box, link = page.elements
    plans = _record(tmp_path, [Action.for_element("input_text", box, text=card),
                               Action.for_element("input_text", pw_box, text=pw),
                               Action.for_element("click", link), Action("complete")])
    plans.store.close()
    scan(tmp_path, card, pw, "4929 5012 3456 7893", "4929-5012-3456-7893")


def test_two_different_secrets_in_fields_of_one_name_get_two_placeholders(tmp_path):
    page = page_from_html("<form><input type=password name=password aria-label='Current password'></form>"
                          "<form><input type=password name=password aria-label='New password'></form>")
    old, new = page.elements
    plans = _record(tmp_path, [Action.for_element("input_text", old, text="Old-Pw-1"),
                               Action.for_element("input_text", new, text="New-Pw-2"), Action("complete")])
    result = plans.lookup(SIG, page, secrets={"password": "Old-Pw-1"})
    assert result.reason == FallbackReason.SECRET_REQUIRED and "password#2" in result.message
    both = plans.lookup(SIG, page, secrets={"password": "a1", "password#2": "b2"})
    assert [a.text for a in both.actions[:2]] == ["a1", "b2"]
    plans.store.close()


def test_an_empty_secret_is_no_value_and_a_secret_that_is_not_text_is_an_error(tmp_path):
    page = page_from_html("<input type=password name=password aria-label=Password>")
    plans = _record(tmp_path, [Action.for_element("input_text", page.elements[0], text="x-secret-1"), Action("complete")])
    assert plans.lookup(SIG, page, secrets={"password": ""}).reason == FallbackReason.SECRET_REQUIRED
    for wrong in (None, b"Hunter2", 0, True):
        with pytest.raises(TypeError, match=r"secrets\['password'\] must be a str") as raised:
            plans.lookup(SIG, page, secrets={"password": wrong})
        assert "Hunter2" not in str(raised.value)
    plans.store.close()


# --- in Chromium -------------------------------------------------------------------------------------

PW, PIN, OTP = "Pw-hist-7f3!Kq z", "7305", "918273"
PAGE = """<!doctype html><html><body>
<label for=user>User</label><input id=user name=user>
<label for=pw>Password</label><input id=pw name=pw type=password>
<button type=button id=show>Show password</button>
<label for=again>Type it again</label><input id=again name=again>
<label for=nick id=nick-label>PIN</label><input id=nick name=nick>
<label for=code>Code</label><input id=code name=code autocomplete=one-time-code>
<label for=plain>Backup</label><input id=plain name=plain>
<button type=button id=go>Save</button>
<script>
document.getElementById('show').onclick = () => { document.getElementById('pw').type = 'text'; };
// The code box loses its one-time-code token when it is focused; the PIN label is renamed after a moment.
document.getElementById('code').addEventListener('focus', (e) => e.target.removeAttribute('autocomplete'));
setTimeout(() => { document.getElementById('nick-label').textContent = 'Nickname'; }, 900);
document.getElementById('go').onclick = () => {
  const v = (n) => encodeURIComponent(document.getElementById(n).value);
  fetch('/save?echo=' + v('pw'), {method: 'POST', headers: {'content-type': 'application/x-www-form-urlencoded'},
        body: 'user=' + v('user') + '&password=' + v('plain') + '&again=' + v('again') + '&nick=' + v('nick')
              + '&code=' + v('code')}).then(() => { location.href = '/done?u=' + v('user'); });
};
</script></body></html>"""


class _Site:
    def __init__(self) -> None:
        self.posts: list[bytes] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, body: str) -> None:
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(PAGE if self.path.startswith("/form") else "<!doctype html><h1>Saved</h1>")

            def do_POST(self):
                site.posts.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self._send("ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/form"


def test_no_typed_secret_in_any_store_file_after_recording_and_replaying_in_chromium(tmp_path, caplog):
    from actioncache.replay.browser import PageRecorder, replay_plan

    from .browser_support import sync_chromium

    caplog.set_level(logging.DEBUG)
    site = _Site()
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"), shared_metrics=True)
    try:
        with sync_chromium() as browser:
            context = browser.new_context(service_workers="block")
            page = context.new_page()
            page.goto(site.url)
            rec = PageRecorder(page, inputs={"user": "alice"})
            rec.fill("#user", "alice")
            rec.click("#show")
            rec.fill("#pw", PW)              # typed after "Show password": the box is type=text now
            rec.fill("#again", PW)           # the password again, in a box that says nothing
            page.wait_for_timeout(1000)      # the "PIN" label now reads "Nickname"
            rec.fill("#nick", PIN)           # ... but it was a PIN box while the recording ran
            rec.fill("#code", OTP)           # its one-time-code token went away on focus
            rec.fill("#plain", "plain-but-posted-as-password")
            rec.click("#go")
            rec.complete()
            assert rec.save(plans, "save") is not None
            context.close()
            scan(tmp_path, PW, PIN, OTP, "plain-but-posted-as-password")
            stored = plans.plan_store.newest(PlanSignature.of(site.url, "save"))[1]
            names = [a.get("secret") for a in stored["actions"] if a["action_type"] == "input_text"]
            assert names[0] is None and all(names[1:]), names

            context = browser.new_context(service_workers="block")
            page = context.new_page()
            page.goto(site.url)
            secrets = dict(zip(names[1:], ["New-Pw-2 x", "New-Pw-2 x", "1111", "222333", "new-plain"], strict=True))
            outcome = replay_plan(plans, page, "save", secrets=secrets)
            context.close()
        assert outcome.finished, outcome.message
        assert site.posts[-1].startswith(b"user=alice&password=new-plain&again=New-Pw-2%20x&nick=1111&code=222333")
        plans.store.close()
        scan(tmp_path, PW, PIN, OTP, "plain-but-posted-as-password", "New-Pw-2 x", "222333", "new-plain")
        shown = repr(outcome) + str(outcome.to_dict()) + (outcome.message or "") + caplog.text
        for secret in (PW, "New-Pw-2 x", "222333", "new-plain"):
            assert secret not in shown and quote(secret, safe="") not in shown
    finally:
        site.server.shutdown()
        site.server.server_close()
