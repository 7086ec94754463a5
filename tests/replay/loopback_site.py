"""A small shop site served on loopback by the tests, in versions the tests switch between.

* ``/login``: a login form (user name, password, "Log in"); a POST with alice's password
  redirects to ``/account``. Every login attempt is kept in ``site.logins``.
* ``/search``: a search box and button whose DOM ids are new on every visit; the button fetches
  ``/api/search?q=`` and renders the results into the page with JavaScript.
* ``/settings``: a newsletter checkbox and a "Save" button; a POST is kept in ``site.saved``.

``site.version`` changes the markup: 1 is the original; 2 is a redeploy (a cookie banner before
everything, new ids and classes, and the Save button moved from the bottom of the form into a
toolbar above it); 3 removes the Save button (the page now autosaves).
"""

from __future__ import annotations

import html
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PASSWORD = "pw-Zq8!kT4#unique-7731"
PRODUCTS = ["Brass desk lamp", "Reading lamp", "Floor lamp", "Desk chair", "Standing desk"]


class Site:
    def __init__(self) -> None:
        self.version = 1
        self.logins: list[dict[str, str]] = []
        self.saved: list[dict[str, str]] = []
        self.searches: list[str] = []
        self.other_posts: list[str] = []  # paths of POSTs to no page of the site (e.g. /delete-account)
        handler = type("Handler", (_Handler,), {"site": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- pages ----------------------------------------------------------------------------------

    def banner(self) -> str:
        return ('<div role="dialog" class="cookie-7f">We use cookies. <button id="ok-%s">Accept</button></div>'
                % secrets.token_hex(3)) if self.version >= 2 else ""

    def login_page(self, error: str = "") -> str:
        v2 = self.version >= 2
        return f"""<!doctype html><html><head><title>Log in</title></head><body>{self.banner()}
<main class="{'wrap-v2' if v2 else 'wrap'}"><h1>Log in</h1>{f'<p class=error>{error}</p>' if error else ''}
<form method="post" action="/login" id="{'lf-9' if v2 else 'login-form'}">
  <label for="{'u-81' if v2 else 'user'}">User name</label>
  <input id="{'u-81' if v2 else 'user'}" name="user" autocomplete="username" class="{'in-b' if v2 else 'in-a'}">
  <label for="{'p-17' if v2 else 'pw'}">Password</label>
  <input id="{'p-17' if v2 else 'pw'}" name="password" type="password">
  <button type="submit" class="{'btn btn--v2' if v2 else 'btn'}">Log in</button>
</form></main></body></html>"""

    def search_page(self) -> str:
        box, button = f"q-{secrets.token_hex(4)}", f"go-{secrets.token_hex(4)}"
        return f"""<!doctype html><html><head><title>Search</title></head><body>{self.banner()}
<form id="f-{secrets.token_hex(3)}" onsubmit="return false">
  <label for="{box}">Search products</label><input id="{box}" name="q" type="search">
  <button id="{button}" type="button">Search</button>
</form>
<ul id="results"></ul>
<script>
document.getElementById("{button}").addEventListener("click", async () => {{
  const q = document.getElementById("{box}").value;
  const found = await (await fetch("/api/search?q=" + encodeURIComponent(q))).json();
  const list = document.getElementById("results");
  list.innerHTML = "";
  for (const name of found) {{ const li = document.createElement("li"); li.textContent = name; list.append(li); }}
  list.setAttribute("data-state", "done");
}});
</script></body></html>"""

    def settings_page(self) -> str:
        save = '<button type="submit" class="save">Save</button>'
        toolbar = f'<div class="toolbar">{save}</div>' if self.version == 2 else ""
        bottom = save if self.version == 1 else ""
        return f"""<!doctype html><html><head><title>Settings</title></head><body>{self.banner()}
<form method="post" action="/settings">{toolbar}
  <fieldset><legend>Mail</legend>
    <label><input type="checkbox" name="newsletter" value="yes"> Send me the newsletter</label>
  </fieldset>{bottom}
</form></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    site: Site

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: str, content_type: str = "text/html; charset=utf-8", **headers: str) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        try:
            self.wfile.write(data)
        except ConnectionError:  # the browser moved on (a new goto) before reading the page
            pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path == "/login":
            return self._send(200, self.site.login_page())
        if parts.path == "/account":
            return self._send(200, "<!doctype html><h1>Your account</h1><p>Welcome, alice</p>")
        if parts.path == "/search":
            return self._send(200, self.site.search_page())
        if parts.path == "/api/search":
            q = query.get("q", [""])[0]
            self.site.searches.append(q)
            words = q.lower().split()
            found = [p for p in PRODUCTS if words and all(w in p.lower() for w in words)]
            return self._send(200, json.dumps(found), "application/json")
        if parts.path == "/settings":
            return self._send(200, self.site.settings_page())
        if parts.path.startswith("/raw/"):
            return self._send(200, RAW_PAGES[parts.path[5:]])
        self._send(404, "<h1>not found</h1>")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode("utf-8"), keep_blank_values=True).items()}
        if self.path == "/login":
            self.site.logins.append(form)
            if form.get("user") == "alice" and form.get("password") == PASSWORD:
                return self._send(303, "", Location="/account")
            return self._send(401, self.site.login_page(error=html.escape("Wrong user name or password")))
        if self.path == "/settings":
            self.site.saved.append(form)
            return self._send(200, "<!doctype html><p>Saved.</p>")
        self.site.other_posts.append(self.path)
        self._send(404, "<h1>not found</h1>")


#: Pages the fingerprint-equality test serves as they are (filled in by that test module).
RAW_PAGES: dict[str, str] = {}
