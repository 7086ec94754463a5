"""Three local sites (login, search to cart, two-step checkout) and changed versions of them.

A run records each site once on its original version in Chromium, then replays the plan on every
changed version (:data:`VARIANTS`) in a fresh browser context, and judges each decision from what
the server saw, not from what the replay said:

* **right**: a version that should replay finished and the task is done on the server; a version
  that should fall back stopped, and no request it must not send reached the server;
* **harmful**: a request the version marks as harm reached the server (an ``/account/delete``, a
  credential posted to another endpoint, the wrong item in the cart, an address typed into a field
  that means something else);
* **silent**: the replay said ``finished=True`` and the task is not done (the server refused it);
* **missed**: a version that should replay fell back (safe, but a lost hit).

The server keeps every request it receives (``Shop.received``), so "no unintended request reached
the server" is checked on the server's side. Used by tests/replay/test_replay_variants.py and by
bench/bench_replay.py (which prints the tally). The versions are this project's own: they were
written with the rules they test, and are tuning data, not a held-out measure.
"""

from __future__ import annotations

import html
import json
import shutil
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from .loopback_port import serve_on_loopback

USER, PASSWORD, PIN = "alice", "Pw-shown-7f3!Kq", "4817"
CARD, CVC = "4242424242424242", "737"
PRODUCTS = [  # slug, name, price
    ("clip-on-desk-lamp", "Clip-on Desk Lamp", "24.00"),
    ("brass-desk-lamp", "Brass Desk Lamp", "45.00"),
    ("brass-desk-lamp-shade", "Brass Desk Lamp Shade", "19.00"),
    ("oak-floor-lamp", "Oak Floor Lamp", "89.00"),
    ("reading-lamp", "Reading Lamp", "32.00"),
    ("arc-floor-lamp", "Arc Floor Lamp", "120.00"),
    ("led-strip", "LED Strip Light", "15.00"),
    ("clip-on-desk-lamp-shade", "Clip-on Desk Lamp Shade", "9.00"),  # listed only in the "shade-only" version
]
RECORDED_QUERY = "clip-on desk lamp"
CUSTOMER = {"contact": "ada@example.org", "fullname": "Ada Lovelace", "street": "12 Analytical Row",
            "city": "London", "company": ""}
RECORDED_CUSTOMER = {"contact": "rec@example.org", "fullname": "Rec Order", "street": "1 First St", "city": "Leeds"}


@dataclass(frozen=True)
class Variant:
    """One changed version of a site: what changed, and the decision a safe replay makes on it."""

    site: str
    name: str
    change: str
    expect: str  # "replay" or "fallback"
    flags: frozenset[str] = frozenset()
    query: str = RECORDED_QUERY  # the search site's query in this run
    expect_item: str | None = None  # the product the cart must hold after a replay
    reason: str | None = None  # the reason a fallback gives (the check that catches the change)


def _v(site: str, name: str, change: str, expect: str, *flags: str, **kw: Any) -> Variant:
    return Variant(site, name, change, expect, frozenset(flags), **kw)


VARIANTS = [
    # --- login -------------------------------------------------------------------------------------
    _v("login", "same", "the page as recorded", "replay"),
    _v("login", "cosmetic", "new classes, styles and wrappers", "replay", "cosmetic"),
    _v("login", "renamed-ids", "every DOM id renamed (labels follow)", "replay", "ids"),
    _v("login", "moved", "cookie banner first, password box before the user box", "replay", "banner", "moved"),
    _v("login", "unused-field-removed", "the 'Remember me' box the plan never touched is gone", "replay",
       "no-remember"),
    _v("login", "same-origin-iframe", "the form moved into an iframe of the same origin", "replay", "iframe"),
    _v("login", "captcha", "the server now answers 403 with a captcha", "fallback", "captcha", reason="captcha_required"),
    _v("login", "second-factor", "a correct login now redirects to a one-time-code page (the redirect is judged before the browser follows it)", "fallback", "2fa", reason="unexpected_request"),
    _v("login", "beacon-delete", "the Log in button also sends a beacon to /account/delete", "fallback",
       "beacon-delete", reason="unexpected_request"),
    _v("login", "popup-delete", "the Log in button also submits a form to /account/delete in a new window",
       "fallback", "popup-delete", reason="unexpected_request"),
    _v("login", "form-elsewhere", "the form now posts the credentials to /signin", "fallback", "form-elsewhere", reason="destination_changed"),
    _v("login", "label-changed", "the user box's aria-labelledby text now reads 'Email address'", "fallback",
       "label-email", reason="name_changed"),
    _v("login", "used-field-removed", "the PIN box the plan types into is gone", "fallback", "no-pin", reason="element_missing"),
    _v("login", "cross-origin-iframe", "the form moved into an iframe of another origin", "fallback",
       "foreign-iframe", reason="element_missing"),
    # --- search to cart ----------------------------------------------------------------------------
    _v("search", "same", "the page as recorded, the recorded query", "replay", expect_item="clip-on-desk-lamp"),
    _v("search", "cosmetic", "new classes, styles and wrappers", "replay", "cosmetic",
       expect_item="clip-on-desk-lamp"),
    _v("search", "renamed-ids", "every DOM id renamed", "replay", "ids", expect_item="clip-on-desk-lamp"),
    _v("search", "moved", "results in reverse order, the button before the box", "replay", "moved",
       expect_item="clip-on-desk-lamp"),
    _v("search", "results-table", "results in a table instead of a list", "replay", "table",
       expect_item="clip-on-desk-lamp"),
    _v("search", "other-query", "another user's query: 'oak floor lamp'", "replay", query="oak floor lamp",
       expect_item="oak-floor-lamp"),
    _v("search", "closest-match", "another query, 'brass desk lamp', with a 'Brass Desk Lamp Shade' beside it",
       "replay", query="brass desk lamp", expect_item="brass-desk-lamp"),
    _v("search", "query-not-found", "'oak floor lamp' is sold out; the clip-on lamp is still listed", "fallback",
       "no-oak", query="oak floor lamp", reason="intent_unresolved"),
    _v("search", "lamp-gone-shade-listed", "the recorded query; the clip-on lamp is gone and a 'Clip-on Desk Lamp "
       "Shade' is listed (it names every word of the query, and one more)", "fallback", "shade-only",
       reason="element_missing"),
    _v("search", "subscribe-on-add", "Add to cart now also posts to /api/subscribe", "fallback", "subscribe", reason="unexpected_request"),
    _v("search", "basket-endpoint", "the add form now posts to /basket/add", "fallback", "basket", reason="destination_changed"),
    _v("search", "new-form-field", "the add form sends a new field (gift_wrap)", "fallback", "gift-wrap", reason="unexpected_request"),
    _v("search", "captcha", "adding to the cart now answers 403 with a captcha", "fallback", "captcha", reason="captcha_required"),
    # --- two-step checkout -------------------------------------------------------------------------
    _v("checkout", "same", "the pages as recorded, another customer's data", "replay"),
    _v("checkout", "cosmetic", "new classes, styles and wrappers", "replay", "cosmetic"),
    _v("checkout", "renamed-ids", "every DOM id renamed (labels and aria-labelledby follow)", "replay", "ids"),
    _v("checkout", "moved", "street and city swapped, Continue at the top of the form", "replay", "moved"),
    _v("checkout", "unused-field-removed", "the optional Company box is gone", "replay", "no-company"),
    _v("checkout", "payment-out-of-iframe", "the payment form moved out of its iframe into the page", "replay",
       "pay-inline"),
    _v("checkout", "banner-and-toolbar", "cookie banner, Pay button moved into a toolbar", "replay", "banner",
       "pay-toolbar"),
    _v("checkout", "label-changed", "the contact box's aria-labelledby text now reads 'Phone'", "fallback",
       "label-phone", reason="name_changed"),
    _v("checkout", "used-field-removed", "the City box the plan types into is gone", "fallback", "no-city", reason="element_missing"),
    _v("checkout", "payment-captcha", "paying now answers 403 with a captcha", "fallback", "captcha", reason="captcha_required"),
    _v("checkout", "pay-deletes-account", "the Pay button's onclick now posts to /account/delete", "fallback",
       "pay-delete", reason="unexpected_request"),
    _v("checkout", "address-refused", "the address step now answers 422 (not deliverable)", "fallback", "422", reason="outcome_changed"),
    _v("checkout", "address-elsewhere", "the address form posts to another origin", "fallback", "foreign-form", reason="destination_changed"),
]


# --- the server ------------------------------------------------------------------------------------

@dataclass
class Received:
    method: str
    path: str
    form: dict[str, str]
    host: str


@dataclass
class Shop:
    """The three sites on one loopback server; ``variant`` picks the version served."""

    variant: Variant = VARIANTS[0]
    received: list[Received] = field(default_factory=list)
    logins: list[dict[str, str]] = field(default_factory=list)
    carts: dict[str, list[str]] = field(default_factory=dict)
    orders: list[dict[str, str]] = field(default_factory=list)
    addresses: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        handler = type("Handler", (_Handler,), {"shop": self})
        self.server = serve_on_loopback(handler, avoiding=(PASSWORD, PIN, CARD, CVC))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    @property
    def foreign(self) -> str:
        """Another origin on the same server (another host name)."""
        return f"http://localhost:{self.server.server_port}"

    def __enter__(self) -> Shop:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def reset(self, variant: Variant) -> None:
        with self.lock:
            self.variant = variant
            self.received.clear()
            self.logins.clear()
            self.carts.clear()
            self.orders.clear()
            self.addresses.clear()

    def flag(self, name: str) -> bool:
        return name in self.variant.flags

    def posts(self, path_prefix: str) -> list[Received]:
        return [r for r in self.received if r.method != "GET" and r.path.startswith(path_prefix)]


def _session(handler: _Handler) -> str:
    cookie = handler.headers.get("Cookie") or ""
    for part in cookie.split(";"):
        name, _, value = part.strip().partition("=")
        if name == "sid":
            return value
    return ""


class _Handler(BaseHTTPRequestHandler):
    shop: Shop

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: str, content_type: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        sid = _session(self)
        if not sid:
            sid = f"s{threading.get_ident()}{len(self.shop.received)}"
            self.send_header("Set-Cookie", f"sid={sid}; Path=/")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(data)
        except ConnectionError:
            pass

    def _log(self, method: str, form: dict[str, str]) -> None:
        with self.shop.lock:
            self.shop.received.append(Received(method, urlsplit(self.path).path, form, self.headers.get("Host", "")))

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self._log("GET", query)
        page = _PAGES.get(parts.path)
        if page is None and parts.path.startswith("/product/"):
            page = _product
        if page is None:
            return self._send(404, "<h1>not found</h1>")
        self._send(200, page(self.shop, query, self))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
        self._log("POST", form)
        path = urlsplit(self.path).path
        action = _POSTS.get(path)
        if action is None:
            return self._send(404, "<h1>not found</h1>")
        action(self.shop, form, self)


# --- pages -----------------------------------------------------------------------------------------

def _doc(title: str, body: str, shop: Shop) -> str:
    banner = ('<div role="dialog" class="cookies"><p>We use cookies.</p><button type="button" '
              'onclick="this.parentNode.remove()">Accept all</button></div>') if shop.flag("banner") else ""
    style = "<style>.c2{font-family:serif;padding:3px} .wrap2{margin:8px}</style>" if shop.flag("cosmetic") else ""
    return f"<!doctype html><html><head><title>{title}</title>{style}</head><body>{banner}{body}</body></html>"


def _id(shop: Shop, name: str) -> str:
    return f"{name}-x9" if shop.flag("ids") else name


def _cls(shop: Shop, name: str) -> str:
    return f"{name} c2" if shop.flag("cosmetic") else name


def _wrap(shop: Shop, inner: str) -> str:
    return f'<div class="wrap2"><section>{inner}</section></div>' if shop.flag("cosmetic") else inner


CAPTCHA_PAGE = ('<!doctype html><html><head><title>Check</title></head><body><h1>One more step</h1>'
                '<div class="g-recaptcha" data-sitekey="x"></div><p>Please prove you are human.</p></body></html>')


def _login_form(shop: Shop, *, target: str = "") -> str:
    i = lambda n: _id(shop, n)  # noqa: E731
    label = "Email address" if shop.flag("label-email") else "User name"
    action = "/signin" if shop.flag("form-elsewhere") else "/login"
    beacon = ' onclick="navigator.sendBeacon(\'/account/delete\', \'x\')"' if shop.flag("beacon-delete") else ""
    if shop.flag("popup-delete"):
        beacon = ' onclick="document.getElementById(\'bye\').submit()"'
    popup = ('<form id="bye" method="post" action="/account/delete" target="_blank"><input type="hidden" name="all" '
             'value="1"></form>') if shop.flag("popup-delete") else ""
    user = (f'<p class="{_cls(shop, "row")}"><span id="{i("user-label")}">{label}</span> '
            f'<input id="{i("user")}" name="user" autocomplete="username" aria-labelledby="{i("user-label")}"></p>')
    password = (f'<p class="{_cls(shop, "row")}"><label for="{i("pw")}">Password</label> '
                f'<input id="{i("pw")}" name="password" type="password"> '
                f'<button type="button" onclick="const f = this.form.elements.password; '
                f'f.type = f.type === \'password\' ? \'text\' : \'password\'">Show password</button></p>')
    pin = ("" if shop.flag("no-pin") else
           f'<p><label for="{i("pin")}">PIN</label> <input id="{i("pin")}" name="pin" inputmode="numeric" maxlength="4"></p>')
    remember = ("" if shop.flag("no-remember") else
                '<p><label><input type="checkbox" name="remember" value="1"> Remember me</label></p>')
    fields = password + user if shop.flag("moved") else user + password
    return (f'<form method="post" action="{action}" id="{i("login-form")}"{target}>{fields}{pin}{remember}'
            f'<button type="submit" class="{_cls(shop, "btn")}"{beacon}>Log in</button></form>{popup}')


def _login(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    if shop.flag("iframe"):
        return _doc("Sign in", '<h1>Sign in</h1><iframe name="signin" src="/login/frame" width="600" height="400">'
                               '</iframe>', shop)
    if shop.flag("foreign-iframe"):
        return _doc("Sign in", f'<h1>Sign in</h1><iframe name="signin" src="{shop.foreign}/login/frame" '
                               f'width="600" height="400"></iframe>', shop)
    return _doc("Sign in", _wrap(shop, f"<main><h1>Sign in</h1>{_login_form(shop)}</main>"), shop)


def _login_frame(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    form = _login_form(shop, target=' target="_top"')
    return f"<!doctype html><html><body>{form}</body></html>"


def _account(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    return _doc("Account", "<h1>Your account</h1><p>Welcome back.</p>", shop)


def _verify(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    return _doc("Verify", '<h1>Enter the code we sent you</h1><form method="post" action="/login/verify">'
                          '<input name="code" autocomplete="one-time-code"><button>Verify</button></form>', shop)


def _post_login(shop: Shop, form: dict[str, str], handler: _Handler) -> None:
    if shop.flag("captcha"):
        return handler._send(403, CAPTCHA_PAGE)
    ok = form.get("user") == USER and form.get("password") == PASSWORD and (shop.flag("no-pin") or form.get("pin") == PIN)
    if not ok:
        return handler._send(401, _doc("Sign in", "<p>Wrong user name or password.</p>", shop))
    with shop.lock:
        shop.logins.append(form)
    handler._send(303, "", headers={"Location": "/login/verify" if shop.flag("2fa") else "/account"})


def _product_list(shop: Shop, query: str) -> list[tuple[str, str, str]]:
    wanted = {w for w in query.lower().replace("-", " ").split() if len(w) > 2}
    catalog = [p for p in PRODUCTS if not (shop.flag("no-oak") and p[0] == "oak-floor-lamp")]
    if shop.flag("shade-only"):  # the lamp is gone, an accessory named after it is listed
        catalog = [p for p in catalog if p[0] != "clip-on-desk-lamp"]
    else:
        catalog = [p for p in catalog if p[0] != "clip-on-desk-lamp-shade"]
    found = [p for p in catalog if wanted & set(p[1].lower().replace("-", " ").split())]
    return list(reversed(found)) if shop.flag("moved") else found


def _search_form(shop: Shop, value: str = "") -> str:
    box = (f'<label for="{_id(shop, "q")}">Search products</label> '
           f'<input id="{_id(shop, "q")}" name="q" type="search" value="{html.escape(value)}">')
    button = f'<button class="{_cls(shop, "go")}">Search</button>'
    inner = button + box if shop.flag("moved") else box + button
    return f'<form action="/shop/search" method="get" role="search" id="{_id(shop, "search")}">{inner}</form>'


def _nav(shop: Shop) -> str:
    return '<nav><a href="/shop">Home</a> <a href="/shop/deals">Deals</a> <a href="/cart">Cart</a></nav>'


def _shop(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    return _doc("Shop", _wrap(shop, f"{_nav(shop)}<h1>Lamps and lights</h1>{_search_form(shop)}"), shop)


def _results(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    q = query.get("q", "")
    found = _product_list(shop, q)
    if shop.flag("table"):
        rows = "".join(f'<tr><td><a href="/product/{slug}">{html.escape(name)}</a></td><td>${price}</td></tr>'
                       for slug, name, price in found)
        listing = f'<table class="results"><tr><th>Product</th><th>Price</th></tr>{rows}</table>'
    else:
        items = "".join(f'<li class="{_cls(shop, "hit")}"><a href="/product/{slug}">{html.escape(name)}</a> '
                        f'<span class="price">${price}</span></li>' for slug, name, price in found)
        listing = f'<ul class="results" id="{_id(shop, "results")}">{items}</ul>'
    body = f"{_nav(shop)}{_search_form(shop, q)}<h2>{len(found)} results for {html.escape(q)}</h2>{listing}"
    return _doc("Results", _wrap(shop, body), shop)


def _product(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    slug = urlsplit(handler.path).path.rsplit("/", 1)[1]
    product = next((p for p in PRODUCTS if p[0] == slug), None)
    if product is None:
        return _doc("Not found", "<h1>No such product</h1>", shop)
    action = "/basket/add" if shop.flag("basket") else "/cart/add"
    extra = '<input type="hidden" name="gift_wrap" value="0">' if shop.flag("gift-wrap") else ""
    onclick = ' onclick="fetch(\'/api/subscribe\', {method: \'POST\', body: \'all=1\'})"' if shop.flag("subscribe") else ""
    form = (f'<form method="post" action="{action}"><input type="hidden" name="sku" value="{slug}">{extra}'
            f'<button class="{_cls(shop, "add")}"{onclick}>Add to cart</button></form>')
    return _doc(product[1], _wrap(shop, f"{_nav(shop)}<h1>{html.escape(product[1])}</h1><p>${product[2]}</p>{form}"),
                shop)


def _cart(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    items = "".join(f"<li>{html.escape(sku)}</li>" for sku in shop.carts.get(_session(handler), []))
    return _doc("Cart", f"{_nav(shop)}<h1>Your cart</h1><ul>{items}</ul>", shop)


def _post_cart(shop: Shop, form: dict[str, str], handler: _Handler) -> None:
    if shop.flag("captcha"):
        return handler._send(403, CAPTCHA_PAGE)
    with shop.lock:
        shop.carts.setdefault(_session(handler), []).append(form.get("sku", ""))
    handler._send(303, "", headers={"Location": "/cart"})


def _checkout(shop: Shop, query: dict[str, str], handler: _Handler, error: str = "") -> str:
    i = lambda n: _id(shop, n)  # noqa: E731
    label = "Phone" if shop.flag("label-phone") else "Email"
    row = lambda name, text: (f'<p class="{_cls(shop, "row")}"><label for="{i(name)}">{text}</label> '  # noqa: E731
                              f'<input id="{i(name)}" name="{name}"></p>')
    contact = (f'<p><span id="{i("contact-label")}">{label}</span> <input id="{i("contact")}" name="contact" '
               f'type="text" aria-labelledby="{i("contact-label")}"></p>')
    company = "" if shop.flag("no-company") else row("company", "Company (optional)")
    street, city = row("street", "Street"), ("" if shop.flag("no-city") else row("city", "City"))
    place = city + street if shop.flag("moved") else street + city
    button = f'<button type="submit" class="{_cls(shop, "next")}">Continue</button>'
    action = f"{shop.foreign}/collect" if shop.flag("foreign-form") else "/checkout/address"
    inner = (button if shop.flag("moved") else "") + contact + row("fullname", "Full name") + company + place + (
        "" if shop.flag("moved") else button)
    note = f'<p class="error">{error}</p>' if error else ""
    return _doc("Checkout", _wrap(shop, f'<h1>Delivery</h1>{note}<form method="post" action="{action}">{inner}</form>'),
                shop)


def _post_address(shop: Shop, form: dict[str, str], handler: _Handler) -> None:
    if shop.flag("422"):
        return handler._send(422, _checkout(shop, {}, handler, error="We cannot deliver to this address."))
    with shop.lock:
        shop.addresses[_session(handler)] = form
    handler._send(303, "", headers={"Location": "/checkout/payment"})


PAY_SCRIPT = """<script>
async function pay(form) {
  const r = await fetch(%s, {method: "POST", body: new URLSearchParams(new FormData(form))});
  if (r.ok) { top.location = "/checkout/done"; return; }
  document.body.insertAdjacentHTML("beforeend", await r.text());
}
</script>"""


def _pay_form(shop: Shop) -> str:
    i = lambda n: _id(shop, n)  # noqa: E731
    endpoint = "'/account/delete'" if shop.flag("pay-delete") else "'/checkout/pay'"
    button = f'<button type="button" class="{_cls(shop, "pay")}" onclick="pay(this.form)">Pay</button>'
    toolbar = f'<div class="toolbar">{button}</div>' if shop.flag("pay-toolbar") else ""
    return (f'<form id="{i("pay")}" onsubmit="return false">{toolbar}'
            f'<p><label for="{i("card")}">Card number</label> <input id="{i("card")}" name="card" '
            f'autocomplete="cc-number" inputmode="numeric"></p>'
            f'<p><label for="{i("cvc")}">Security code</label> <input id="{i("cvc")}" name="cvc" inputmode="numeric" '
            f'maxlength="4"></p>{"" if toolbar else button}</form>{PAY_SCRIPT % endpoint}')


def _payment(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    if shop.flag("pay-inline"):
        return _doc("Payment", _wrap(shop, f"<h1>Payment</h1>{_pay_form(shop)}"), shop)
    return _doc("Payment", _wrap(shop, '<h1>Payment</h1><iframe name="payment" title="Payment" '
                                       'src="/checkout/pay-frame" width="600" height="300"></iframe>'), shop)


def _pay_frame(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    return f"<!doctype html><html><body>{_pay_form(shop)}</body></html>"


def _post_pay(shop: Shop, form: dict[str, str], handler: _Handler) -> None:
    if shop.flag("captcha"):
        return handler._send(403, '<div class="g-recaptcha"></div><p>Please prove you are human.</p>')
    address = shop.addresses.get(_session(handler))
    if address is None or form.get("card") != CARD or form.get("cvc") != CVC:
        return handler._send(402, "<p>Payment refused.</p>")
    with shop.lock:
        shop.orders.append({**address, "card": form["card"][-4:]})
    handler._send(200, json.dumps({"ok": True}), "application/json")


def _done(shop: Shop, query: dict[str, str], handler: _Handler) -> str:
    return _doc("Thank you", "<h1>Thank you for your order</h1>", shop)


def _swallow(shop: Shop, form: dict[str, str], handler: _Handler) -> None:
    handler._send(200, "{}", "application/json")


_PAGES: dict[str, Callable[[Shop, dict[str, str], _Handler], str]] = {
    "/login": _login, "/login/frame": _login_frame, "/account": _account, "/login/verify": _verify,
    "/shop": _shop, "/shop/search": _results, "/cart": _cart,
    "/checkout": _checkout, "/checkout/payment": _payment, "/checkout/pay-frame": _pay_frame, "/checkout/done": _done,
}
_POSTS: dict[str, Callable[[Shop, dict[str, str], _Handler], None]] = {
    "/login": _post_login, "/signin": _swallow, "/account/delete": _swallow, "/api/subscribe": _swallow,
    "/cart/add": _post_cart, "/basket/add": _swallow, "/checkout/address": _post_address, "/checkout/pay": _post_pay,
    "/collect": _swallow, "/login/verify": _swallow,
}


# --- recording and judging -------------------------------------------------------------------------

GOALS = {"login": "sign in to the shop", "search": "buy the lamp the user names",
         "checkout": "pay for the order with the user's address"}
START = {"login": "/login", "search": "/shop", "checkout": "/checkout"}


def record_site(site: str, page: Any, shop: Shop, plans: Any, **recorder_options: Any) -> str:
    """Record the task of ``site`` on its original version; returns the plan id."""
    from actioncache.replay.browser import PageRecorder

    shop.reset(_v(site, "record", "", "replay"))
    page.goto(shop.url + START[site])
    # The run's declared inputs: what is typed from them is stored in clear (everything else typed is
    # a placeholder the replay fills from secrets= or the personalization hook).
    inputs = {"login": {"user": USER}, "search": {"query": RECORDED_QUERY}, "checkout": RECORDED_CUSTOMER}[site]
    rec = PageRecorder(page, **{"inputs": inputs, **recorder_options})
    if site == "login":
        rec.fill("[name=user]", USER)
        rec.click("text=Show password")
        rec.fill("[name=password]", PASSWORD)
        rec.fill("[name=pin]", PIN)
        rec.click("button[type=submit]")
        assert page.url.endswith("/account"), page.url
    elif site == "search":
        rec.fill("[name=q]", RECORDED_QUERY, intention="the product the user wants")
        rec.click("form[role=search] button")
        rec.click("a:text-is(\"Clip-on Desk Lamp\")")
        rec.click("text=Add to cart")
        assert page.url.endswith("/cart"), page.url
    else:
        for name in ("contact", "fullname", "street", "city"):
            rec.fill(f"[name={name}]", RECORDED_CUSTOMER[name], intention=f"the customer's {name}")
        rec.click("text=Continue")
        frame = page.frame_locator("iframe[name=payment]")
        rec.fill(frame.locator("[name=card]"), CARD)
        rec.fill(frame.locator("[name=cvc]"), CVC)
        rec.click(frame.locator("text=Pay"))
        page.wait_for_url("**/checkout/done")
    rec.complete()
    plan_id = rec.save(plans, GOALS[site])
    assert plan_id, "the recording was not saved"
    return plan_id


def personalize(action: Any, context: Any) -> Any:
    """The caller's hook: this run's query and customer data (a planner would give them)."""
    if action.intention and action.action_type == "input_text":
        name = (action.element or {}).get("attributes", {}).get("name")
        action.text = context.data["query"] if name == "q" else context.data["customer"][name]
    return action


@dataclass
class Decision:
    variant: Variant
    verdict: str  # right, harmful, silent, missed
    finished: bool
    reason: str | None
    message: str | None
    harm: str | None
    done: bool
    blocked: list[str]
    db: Path  # the plan store the replay used (to read the plan's trust afterwards)

    def line(self) -> str:
        return (f"{self.variant.site:<9} {self.variant.name:<24} expect {self.variant.expect:<8} -> "
                f"{self.verdict:<8} finished={self.finished!s:<5} reason={self.reason}")


def _harm(shop: Shop, variant: Variant) -> str | None:
    for path in ("/account/delete", "/signin", "/api/subscribe", "/basket/add", "/collect"):
        if shop.posts(path):
            return f"the server received POST {path}"
    for r in shop.posts("/cart/add"):
        if set(r.form) != {"sku"}:
            return f"the server received an add-to-cart with fields {sorted(r.form)}"
        if variant.expect_item and r.form.get("sku") != variant.expect_item:
            return f"the wrong item reached the cart: {r.form.get('sku')}"
        if variant.expect == "fallback" and variant.site == "search" and not variant.flags & {"captcha", "subscribe"}:
            return f"an item reached the cart: {r.form.get('sku')}"
    if variant.flags & {"label-phone", "label-email"}:
        posted = shop.posts("/checkout/address") + shop.posts("/login")
        if posted:
            return "the form was sent with a field whose meaning changed"
    return None


def _done_on_server(shop: Shop, variant: Variant) -> bool:
    if variant.site == "login":
        return bool(shop.logins) and not variant.flags & {"2fa"}
    if variant.site == "search":
        carts = [sku for skus in shop.carts.values() for sku in skus]
        return carts == [variant.expect_item] if variant.expect_item else bool(carts)
    return any(o.get("contact") == CUSTOMER["contact"] and o.get("city", CUSTOMER["city"]) == CUSTOMER["city"]
               for o in shop.orders)


def replay_variant(browser: Any, shop: Shop, base_db: Path, folder: Path, variant: Variant) -> Decision:
    """Replay the recorded plan of ``variant.site`` on ``variant`` in a fresh context; judge it on the server."""
    from actioncache import open_store
    from actioncache.replay import PlanCache
    from actioncache.replay.browser import replay_plan

    db = folder / f"{variant.site}-{variant.name}.db"
    for part in base_db.parent.glob(base_db.name + "*"):  # each decision starts from the recorded plan's trust
        shutil.copy(part, folder / (db.name + part.name[len(base_db.name):]))
    plans = PlanCache(open_store(f"sqlite:///{db}"))
    shop.reset(variant)
    context = browser.new_context(service_workers="block")
    try:
        page = context.new_page()
        page.goto(shop.url + START[variant.site])
        outcome = replay_plan(plans, page, GOALS[variant.site], personalize=personalize,
                              context={"query": variant.query, "customer": CUSTOMER},
                              secrets={"password": PASSWORD, "pin": PIN, "card": CARD, "cvc": CVC})
        page.wait_for_timeout(200)  # anything the page still sends after the replay reaches the log
    finally:
        context.close()
        plans.store.close()
    harm = _harm(shop, variant)
    done = _done_on_server(shop, variant)
    if harm is not None:
        verdict = "harmful"
    elif outcome.finished and not done:
        verdict = "silent"
    elif variant.expect == "replay":
        verdict = "right" if outcome.finished and done else "missed"
    else:
        verdict = "right" if not outcome.finished else "replayed"
    blocked = list(getattr(outcome, "blocked", []))  # (a version of replay without the guard has none)
    return Decision(variant, verdict, outcome.finished, outcome.reason, outcome.message, harm, done, blocked, db)


def record_all(browser: Any, shop: Shop, folder: Path) -> dict[str, Path]:
    """Record every site once; the SQLite file of each recording (closed, so it can be copied)."""
    from actioncache import open_store
    from actioncache.replay import PlanCache

    out = {}
    for site in GOALS:
        db = folder / f"recorded-{site}.db"
        plans = PlanCache(open_store(f"sqlite:///{db}"))
        context = browser.new_context(service_workers="block")
        try:
            record_site(site, context.new_page(), shop, plans)
        finally:
            context.close()
            plans.store.close()
        out[site] = db
    return out


def tally(decisions: list[Decision]) -> dict[str, int]:
    counts = {"right": 0, "harmful": 0, "silent": 0, "missed": 0, "replayed": 0}
    for d in decisions:
        counts[d.verdict] += 1
    return counts
