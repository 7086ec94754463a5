"""Secrets by history (issue 29 item 5, by construction): what makes a value secret, and that it is
stored nowhere but as a placeholder.

Unit rules first (page_from_html + PlanCache.record on real SQLite, then every byte of the database,
its WAL and shared memory is scanned), then one recording in Chromium where each field turns secret
another way (the field was a one-time-code box before it was typed into, its label said PIN for a
moment, the password typed again into a plain box, a plain box whose value the page posts as the
password, the password echoed into a URL) and a replay of it: no typed secret, nor any part of one, in
any store file after recording nor after replaying, nor in the outcome, its messages or the log.

The secrets typed in Chromium are drawn at random for each run, and long: the store holds numbers and
hex digests that change every run (the site's port, timestamps to the microsecond, the plan id's
nanoseconds, the signature's SHA-256), and a short fixed secret sits inside them by chance now and
then: the fixed PIN "7305" once failed this test; it is in the store when the site listens on port
37305, or when the plan id or a timestamp holds those digits (each run ~26 of the 10,000 4-digit
strings are, so 1 run in ~400). The test computes the chance that any part it looks for is in the store's bytes by chance (a union bound
over every position, see ``chance_of_a_false_alarm``) and fails if it exceeds 1e-6: it is ~1e-7.
"""

from __future__ import annotations

import base64
import logging
import secrets as random_source
import string
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


def store_bytes(folder: Path) -> bytes:
    """Every byte of the SQLite store in ``folder``: the database, its WAL and its shared memory."""
    files = sorted(p for p in folder.iterdir() if p.name.startswith("plans.db"))
    assert files, "nothing was stored"
    return b"".join(p.read_bytes() for p in files)


def scan(folder: Path, *secrets: str) -> None:
    blob = store_bytes(folder)
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

ALNUM, DIGITS = string.ascii_letters + string.digits, string.digits
#: The shortest run of a secret looked for, per alphabet: any 10 letters/digits in a row of a typed
#: password (9 when one of them is its space or "!"), any 15 digits in a row of a PIN or a code.
#: Each is at least 1e14 equally likely strings, even casefolded (36 ** 9): shorter parts (a "last 4
#: digits") cannot be told from chance in ~250 kB of store, whatever the test does.
WIDTH = {ALNUM: 10, DIGITS: 15}


def random_secret(alphabet: str, *runs: int, sep: str = " ") -> str:
    """Runs of random characters of ``alphabet`` (a new value each test run), joined by ``sep``."""
    return sep.join("".join(random_source.choice(alphabet) for _ in range(n)) for n in runs)


def parts_of(secret: str, alphabet: str) -> list[str]:
    """The secret and every run of ``WIDTH[alphabet]`` characters in it: what a leak of a part would be
    (a value cut at a length, a word of it split at its space, a prefix kept in a message)."""
    width = WIDTH[alphabet]
    return [secret, *{secret[i:i + width] for i in range(len(secret) - width + 1)}]


def looked_for(secret: str, alphabet: str) -> list[tuple[bytes, int]]:
    """Each byte string a leak of ``secret`` could leave, with how many values it takes at random:
    the whole secret in every form of ``forms_of``, each part raw, URL-quoted, UTF-16 and casefolded."""
    out: dict[bytes, int] = {}
    for part in parts_of(secret, alphabet):
        randoms = sum(ch in alphabet for ch in part)
        folded = len({ch.casefold() for ch in alphabet})
        forms = forms_of(part) if part == secret else [part.encode(), quote(part, safe="").encode(),
                                                      quote_plus(part, safe="").encode(), part.encode("utf-16-le")]
        for form in forms:
            out[form] = len(alphabet) ** randoms
        for form in (part.casefold().encode(), quote(part.casefold(), safe="").encode()):
            out.setdefault(form, folded ** randoms)
    return list(out.items())


def chance_of_a_false_alarm(size: int, typed: dict[str, str]) -> float:
    """A bound on the chance that ``size`` bytes holding no secret still hold one of the strings
    ``scan_parts`` looks for: each string drawn among N equally likely values sits at a given position
    with chance 1/N (the bytes do not depend on the draw), so at most ``size / N``, summed."""
    return sum(size / values for secret, alphabet in typed.items() for _, values in looked_for(secret, alphabet))


def scan_parts(where: str, data: bytes, typed: dict[str, str]) -> None:
    """No typed secret, nor any part of one (``looked_for``), in ``data``."""
    chance = chance_of_a_false_alarm(len(data), typed)
    assert chance < 1e-6, f"the secrets are too short to be told from chance in {len(data)} bytes ({chance:.1e})"
    for secret, alphabet in typed.items():
        for form, _ in looked_for(secret, alphabet):
            at = data.find(form)
            assert at < 0, (f"{form!r}, of the typed {secret!r}, is in {where} at byte {at}: "
                            f"{data[max(0, at - 60):at + len(form) + 20]!r} (chance of a false alarm {chance:.1e})")


# Typed when recording: the password (with a space and a "!": URL forms differ), a PIN, a one-time
# code, and a value the page posts as the password; typed on replay: the new values.
PW = random_secret(ALNUM, 12, 12) + "!"
PIN, OTP = random_secret(DIGITS, 20), random_secret(DIGITS, 20)
PLAIN = random_secret(ALNUM, 24)
NEW_PW, NEW_PIN, NEW_OTP, NEW_PLAIN = (random_secret(ALNUM, 12, 12), random_secret(DIGITS, 20),
                                       random_secret(DIGITS, 20), random_secret(ALNUM, 24))
RECORDED = {PW: ALNUM, PIN: DIGITS, OTP: DIGITS, PLAIN: ALNUM}
REPLAYED = {NEW_PW: ALNUM, NEW_PIN: DIGITS, NEW_OTP: DIGITS, NEW_PLAIN: ALNUM}
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
            rec.fill("#plain", PLAIN)         # a plain box the page posts as the password
            rec.click("#go")
            rec.complete()
            assert rec.save(plans, "save") is not None
            context.close()
            scan_parts("the store after recording", store_bytes(tmp_path), RECORDED)
            stored = plans.plan_store.newest(PlanSignature.of(site.url, "save"))[1]
            names = [a.get("secret") for a in stored["actions"] if a["action_type"] == "input_text"]
            assert names[0] is None and all(names[1:]), names

            context = browser.new_context(service_workers="block")
            page = context.new_page()
            page.goto(site.url)
            secrets = dict(zip(names[1:], [NEW_PW, NEW_PW, NEW_PIN, NEW_OTP, NEW_PLAIN], strict=True))
            outcome = replay_plan(plans, page, "save", secrets=secrets)
            context.close()
        assert outcome.finished, outcome.message
        posted = f"user=alice&password={NEW_PLAIN}&again={quote(NEW_PW)}&nick={NEW_PIN}&code={NEW_OTP}"
        assert site.posts[-1].startswith(posted.encode())
        plans.store.close()
        scan_parts("the store after replaying", store_bytes(tmp_path), {**RECORDED, **REPLAYED})
        shown = repr(outcome) + str(outcome.to_dict()) + (outcome.message or "") + caplog.text
        scan_parts("the outcome, its message or the log", shown.encode(), {**RECORDED, **REPLAYED})
    finally:
        site.server.shutdown()
        site.server.server_close()
