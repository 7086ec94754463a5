"""What a recorded step *did*: the requests it sent and where it led.

A fingerprint says the page still looks the same; it cannot say that the button still does the
same thing. So the browser recorder keeps, with each element action, its *effects*:

* ``sent``: the state-changing requests the step made (:class:`SentRequest`): every request whose
  method is not ``GET`` or ``HEAD`` (``OPTIONS`` included), every WebSocket it opened, and every
  navigation of the page or of any of its frames (of any origin), described by method, URL pattern
  and the *names* of the fields in its body, never their values (a password goes in a body too);
  a field (or query parameter) that carried what a step of the plan typed is kept as a reference to
  that step (``typed``), so a replay must send there what *it* typed in that step;
* ``status``: the status class (``"2xx"``, ``"3xx"``...) of the last document the page loaded in
  that step, ``None`` when the step loaded none;
* ``url``: the URL pattern (:func:`~actioncache.replay.url_pattern`) the page was on once the step
  settled, or :data:`TARGET` when that was where the clicked link pointed (a re-decided click goes
  where *its* link points);
* ``captcha``: whether the page then showed a captcha or another challenge;
* ``prompt``, ``dialogs``, ``alert``, ``js_dialogs``: whether it showed a box asking for a password or
  a one-time code, how many modal dialogs, whether an alert with text, and how many JavaScript dialogs
  the step opened.

A replay compares each step with these (:mod:`.guard` before a request leaves the browser,
:mod:`.outcomes` once the step settled). A request is described from what the browser is about to
send, by :func:`describe_request`, the same way when recording and when replaying.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping
from urllib.parse import parse_qsl, quote, unquote, urljoin, urlsplit

from .urls import DEFAULT_URL_RULE, UrlRule, destination_pattern, looks_like_id

#: How a landing URL is compared: exactly, path segments and query values as they are (``/product/123``
#: is not ``/product/456``); only what never names a page is dropped (the fragment, tracking parameters,
#: default ports, the order of query parameters).
EXACT_RULE = UrlRule(ids_in_path=False)
#: Typed texts shorter than this are not written as :data:`TYPED_VALUE` in a page's identity.
_TYPED_IN_TEXT_MIN = 3

#: Methods that only read. Everything else (``OPTIONS`` too: a page can send one with ``fetch``) changes
#: state and is guarded.
SAFE_METHODS = frozenset({"GET", "HEAD"})
#: The method a WebSocket open is described with (its HTTP request is a GET upgrade, but it opens a channel).
WEBSOCKET = "WEBSOCKET"
#: What a query value that a step of the plan typed becomes in a request pattern.
TYPED_VALUE = "{typed}"
#: ``url`` of a step that led where the clicked element's link pointed.
TARGET = "{target}"
_MULTIPART_NAME = re.compile(rb'content-disposition:[^\r\n]*?\bname="([^"]*)"', re.IGNORECASE)
_MULTIPART_PART = re.compile(rb'content-disposition:[^\r\n]*?\bname="([^"]*)"[^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n'
                             rb'(.*?)\r\n--', re.IGNORECASE | re.DOTALL)


def status_class(status: int | None) -> str | None:
    """``403`` -> ``"4xx"``; ``None`` (no response) stays ``None``."""
    if status is None or isinstance(status, bool) or not 100 <= int(status) <= 599:
        return None
    return f"{int(status) // 100}xx"


def navigation_pattern(url: str, typed: Mapping[int, str] | None = None) -> str:
    """Where a navigation goes: origin, path pattern and query, values kept as for a request
    (:func:`request_pattern`: ``/account?action=delete`` is not ``/account``; a value with a digit is
    ``{id}``, a value a step typed ``{typed}``), without the fragment."""
    try:
        return destination_pattern(_typed_query(url, typed))
    except ValueError:
        return url.split("#", 1)[0]


def landing_url(url: str, typed: Mapping[int, str] | None = None) -> str:
    """Where a step landed, compared exactly (:data:`EXACT_RULE`): ids and query values kept, a value
    a step typed written :data:`TYPED_VALUE` (so a replay for another query lands on the same pattern)."""
    try:
        return destination_pattern(_typed_query(url, typed), EXACT_RULE)
    except ValueError:
        return url.split("#", 1)[0]


def page_identity(title: Any, heading: Any, typed: Mapping[int, str] | None = None) -> str:
    """What a page says it is: its title and its main heading (the first ``h1``), whitespace collapsed,
    each text a step typed written :data:`TYPED_VALUE` (a results page titled after the query)."""
    text = " | ".join(" ".join(str(part or "").split()) for part in (title, heading))
    for typed_text in sorted({t for t in (typed or {}).values() if t and len(t.strip()) >= _TYPED_IN_TEXT_MIN},
                             key=len, reverse=True):
        text = text.replace(" ".join(typed_text.split()), TYPED_VALUE)
    return text


def request_pattern(url: str) -> str:
    """Where a state-changing request goes: :func:`destination_pattern` (query values count,
    values with digits are ``{id}``), so ``/account?action=delete`` is not ``/account?action=view``."""
    try:
        return destination_pattern(url)
    except ValueError:
        return url


_HAS_DIGIT = re.compile(r"\d")


def request_ids(url: str, typed: Mapping[int, str] | None = None) -> tuple[str, ...]:
    """The object ids a URL names, each as ``"/<segment index>=<value>"`` (a path segment that looks
    like an id) or ``"?<name>=<value>"`` (a query value holding a digit), sorted: what the URL
    pattern writes ``{id}``. A value a step of the plan typed is left out (it is this run's own input)."""
    texts = {" ".join(t.split()) for t in (typed or {}).values() if t}
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    out = [f"/{i}={segment}" for i, segment in enumerate(parts.path.split("/"))
           if looks_like_id(segment) and " ".join(unquote(segment).split()) not in texts]
    out += sorted(f"?{name}={value}" for name, value in parse_qsl(parts.query, keep_blank_values=True)
                  if name and not DEFAULT_URL_RULE.ignores_param(name) and _HAS_DIGIT.search(value)
                  and " ".join(value.split()) not in texts)
    return tuple(out)


def id_changes(recorded: Iterable[str], now: Iterable[str]) -> dict[str, str]:
    """Which id values changed between two :func:`request_ids` of the same pattern: ``{old: new}``."""
    before = dict(i.split("=", 1) for i in recorded if "=" in i)
    after = dict(i.split("=", 1) for i in now if "=" in i)
    return {before[k]: after[k] for k in before.keys() & after.keys() if before[k] != after[k]}


def link_target(href: str | None, base_url: str | None) -> str | None:
    """The navigation pattern of a link's ``href`` on the page at ``base_url``, ``None`` without one."""
    if not href or href.startswith(("javascript:", "#", "mailto:", "tel:")):
        return None
    try:
        return navigation_pattern(urljoin(base_url or "", href))
    except ValueError:
        return None


def same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.hostname, pa.port) == (pb.scheme, pb.hostname, pb.port)


@dataclass(frozen=True)
class Body:
    """The shape of a request body: its kind, its field names, and which of them were sent empty."""

    kind: str
    fields: tuple[str, ...] = ()
    empty: tuple[str, ...] = ()


def _typed_query(url: str, typed: Mapping[int, str] | None) -> str:
    """``url`` with every query value equal to a typed text written :data:`TYPED_VALUE` (never the text)."""
    if not typed or "?" not in url:
        return url
    texts = {t for t in typed.values() if t}
    head, _, rest = url.partition("?")
    query, hash_mark, fragment = rest.partition("#")
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(v in texts for _, v in pairs):
        return url
    kept = "&".join(f"{quote(n, safe='')}={TYPED_VALUE if v in texts else quote(v, safe='')}" for n, v in pairs)
    return f"{head}?{kept}{hash_mark}{fragment}"


def typed_fields(pairs: Iterable[tuple[str, Any]], typed: Mapping[int, str] | None) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Which fields carried what a step typed: ``((field, (step, ...)), ...)``, sorted; no value is kept."""
    if not typed:
        return ()
    out: dict[str, set[int]] = {}
    for name, value in pairs:
        if not isinstance(value, str) or not value:
            continue
        steps = {i for i, text in typed.items() if text and text == value}
        if steps:
            out.setdefault(str(name), set()).update(steps)
    return tuple(sorted((name, tuple(sorted(steps))) for name, steps in out.items()))


def body_pairs(content_type: str | None, body: bytes | None) -> list[tuple[str, Any]]:
    """The ``(name, value)`` pairs of a form or JSON object body (``[]`` for anything else).

    Values are for comparing in memory only (:func:`typed_fields`, the secrets rule); never stored.
    """
    if not body:
        return []
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    text = body.decode("utf-8", "replace")
    if kind == "application/x-www-form-urlencoded":
        return list(parse_qsl(text, keep_blank_values=True))
    if kind == "multipart/form-data":
        return [(m.group(1).decode("utf-8", "replace"), m.group(2).decode("utf-8", "replace"))
                for m in _MULTIPART_PART.finditer(body)]
    if kind == "application/json" or kind.endswith("+json") or kind.startswith("text/"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return [(str(k), v) for k, v in data.items()]
        if data is None and kind == "text/plain":
            return [tuple(line.split("=", 1)) for line in text.splitlines() if "=" in line]  # type: ignore[misc]
    return []


def _form(pairs: Iterable[tuple[str, Any]], kind: str) -> Body:
    values: dict[str, bool] = {}
    for name, value in pairs:
        values[name] = values.get(name, False) or value not in ("", None)
    return Body(kind, tuple(sorted(values)), tuple(sorted(n for n, filled in values.items() if not filled)))


def body_fields(content_type: str | None, body: bytes | None) -> Body:
    """The kind of a request body, the names of its fields (sorted, each once) and the empty ones.

    Forms (urlencoded, ``text/plain``) give their field names, multipart bodies their part names, JSON
    objects their keys; an empty body is ``"none"``, a body the browser did not hand over ``"unknown"``.
    Only names and emptiness are kept, never a value.
    """
    if body is None:
        return Body("unknown")
    if not body:
        return Body("none")
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind == "application/x-www-form-urlencoded":
        return _form(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True), "form")
    if kind == "multipart/form-data":
        return Body("multipart", tuple(sorted({n.decode("utf-8", "replace") for n in _MULTIPART_NAME.findall(body)})))
    if kind == "application/json" or kind.endswith("+json") or kind.startswith("text/"):
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            data = None
        if isinstance(data, dict):
            return _form(((str(k), v) for k, v in data.items()), "json")
        if data is not None:
            return Body("json")
        if kind == "text/plain":  # a form with enctype=text/plain: name=value lines
            lines = body.decode("utf-8", "replace").splitlines()
            return _form((tuple(line.split("=", 1)) for line in lines if "=" in line), "form")  # type: ignore[misc]
    return Body("other")


@dataclass(frozen=True)
class SentRequest:
    """One state-changing request of a step, as it is compared: no values, only shape."""

    method: str
    url: str
    navigation: bool = False
    body: str = "none"
    fields: tuple[str, ...] = ()
    #: Fields the recording sent empty: a replay may leave them out (a removed optional field).
    empty: tuple[str, ...] = ()
    #: The status class of its response, when one came.
    status: str | None = None
    #: A navigation that went where the clicked element's link pointed.
    target: bool = False
    #: Fields that carried what a step of the plan typed: ``((field, (step, ...)), ...)``.
    typed: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: The object ids its URL named (:func:`request_ids`); ``None``: not recorded (an older plan).
    ids: tuple[str, ...] | None = None
    #: The scheme the request really used (patterns write ``https`` for ``http``): for messages only.
    scheme: str = field(default="", compare=False)

    @property
    def shape(self) -> tuple[Any, ...]:
        """What tells two requests apart (fields included)."""
        if self.navigation and self.method in SAFE_METHODS:
            return ("navigate", TARGET if self.target else self.url)
        return (self.method, self.url, self.body, self.fields)

    def admits(self, request: SentRequest, target: str | None = None,
               remap: Mapping[str, str] | None = None) -> bool:
        """Whether ``request`` (about to be sent by a replay) is this recorded request.

        Same method, URL pattern and body kind; its fields are this request's, except that it may
        leave out one the recording sent empty. A navigation goes to the same pattern, or, when the
        recorded one went where the clicked link pointed, where the replayed element's link points.
        A state-changing request names the same objects in its URL (path ids, query values with a
        digit) as the recorded one, except an id this replay's own choices changed: ``remap`` maps a
        recorded id to the one a re-decided click landed on instead.
        """
        if self.navigation and self.method in SAFE_METHODS:
            if not (request.navigation and request.method in SAFE_METHODS):
                return False
            return request.url == (target if self.target else self.url)
        if (request.method, request.url, request.body) != (self.method, self.url, self.body):
            return False
        sent, recorded = set(request.fields), set(self.fields)
        if not (sent <= recorded and recorded - set(self.empty) <= sent):
            return False
        # A field that carried what a step typed must carry what this replay typed in that step.
        now = dict(request.typed)
        if not all(any(step in now.get(name, ()) for step in steps) for name, steps in self.typed):
            return False
        return self.ids is None or self.same_objects(request, remap or {})

    def same_objects(self, request: SentRequest, remap: Mapping[str, str]) -> bool:
        """Whether ``request`` names the objects this one named (ids equal, or changed as ``remap`` says)."""
        recorded = dict(i.split("=", 1) for i in self.ids or () if "=" in i)
        sent = dict(i.split("=", 1) for i in request.ids or () if "=" in i)
        if recorded.keys() != sent.keys():
            return False
        return all(sent[k] == v or remap.get(v) == sent[k] for k, v in recorded.items())

    def describe(self) -> str:
        """A short text for messages: method and pattern, field names, never a value."""
        fields = f" with fields {', '.join(self.fields)}" if self.fields else ""
        url = self.url
        if self.scheme == "http" and url.startswith("https://"):
            url = "http://" + url[len("https://"):]  # as the page sent it, not as the pattern writes it
        if self.navigation and self.method in SAFE_METHODS:
            return f"a navigation to {url}"
        return f"{self.method} {url}{fields}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "url": self.url}
        if self.navigation:
            out["navigation"] = True
        if self.body != "none":
            out["body"] = self.body
        if self.fields:
            out["fields"] = list(self.fields)
        if self.empty:
            out["empty"] = list(self.empty)
        if self.status is not None:
            out["status"] = self.status
        if self.target:
            out["target"] = True
        if self.typed:
            out["typed"] = {name: list(steps) for name, steps in self.typed}
        if self.ids is not None:
            out["ids"] = list(self.ids)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SentRequest:
        return cls(method=str(data.get("method", "GET")).upper(), url=str(data.get("url", "")),
                   navigation=data.get("navigation") is True, body=str(data.get("body", "none")),
                   fields=tuple(str(f) for f in data.get("fields") or ()),
                   empty=tuple(str(f) for f in data.get("empty") or ()),
                   status=data.get("status") if isinstance(data.get("status"), str) else None,
                   target=data.get("target") is True, typed=_typed_from(data.get("typed")),
                   ids=tuple(str(i) for i in data["ids"]) if isinstance(data.get("ids"), list) else None)


def _typed_from(data: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    if not isinstance(data, Mapping):
        return ()
    return tuple(sorted((str(name), tuple(sorted(int(i) for i in steps if isinstance(i, int) and not isinstance(i, bool))))
                        for name, steps in data.items() if isinstance(steps, list)))


def describe_request(method: str, url: str, *, navigation: bool, content_type: str | None = None,
                     body: bytes | None = b"", status: int | None = None,
                     typed: Mapping[int, str] | None = None) -> SentRequest | None:
    """The :class:`SentRequest` of a request about to be sent, or ``None`` when it changes nothing
    (a ``GET``/``HEAD`` that is not a navigation: a subresource, a read).

    ``typed`` is what each step of the plan typed (by plan index): a query value or body field equal
    to one is kept as a reference to that step, never as the text.
    """
    method = method.upper()
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if navigation and method in SAFE_METHODS:
        return SentRequest(method, navigation_pattern(url, typed), navigation=True, status=status_class(status),
                           scheme=scheme)
    if method in SAFE_METHODS:
        return None
    shape = body_fields(content_type, body)
    pairs = body_pairs(content_type, body) if typed else []
    return SentRequest(method, request_pattern(_typed_query(url, typed)), navigation=navigation, body=shape.kind,
                       fields=shape.fields, empty=shape.empty, status=status_class(status),
                       typed=typed_fields(pairs, typed), ids=request_ids(url, typed), scheme=scheme)


@dataclass
class StepEffects:
    """The effects of one recorded element action (see the module docstring)."""

    sent: list[SentRequest] = field(default_factory=list)
    status: str | None = None
    url: str | None = None
    captcha: bool = False
    prompt: bool = False
    dialogs: int = 0
    alert: bool = False
    js_dialogs: int = 0
    #: Where the step landed, exactly (:func:`landing_url`), and what that page said it was
    #: (:func:`page_identity`).
    landing: str | None = None
    identity: str | None = None
    #: The same of the page the step acted on (a replay checks it on the first step it serves).
    before: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sent": [r.to_dict() for r in self.sent], "url": self.url}
        if self.status is not None:
            out["status"] = self.status
        for name in ("landing", "identity", "before"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for name in ("captcha", "prompt", "dialogs", "alert", "js_dialogs"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> StepEffects | None:
        if not isinstance(data, Mapping):
            return None
        sent = [SentRequest.from_dict(r) for r in data.get("sent") or () if isinstance(r, Mapping)]
        url = data.get("url")
        status = data.get("status")
        before = data.get("before")
        return cls(landing=_str(data.get("landing")), identity=_str(data.get("identity")),
                   before={str(k): str(v) for k, v in before.items() if isinstance(v, str)}
                   if isinstance(before, Mapping) else None,
                   sent=sent, status=status if isinstance(status, str) else None,
                   url=url if isinstance(url, str) else None, captcha=data.get("captcha") is True,
                   prompt=data.get("prompt") is True, dialogs=_int(data.get("dialogs")),
                   alert=data.get("alert") is True, js_dialogs=_int(data.get("js_dialogs")))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def unique(requests: Iterable[SentRequest]) -> list[SentRequest]:
    """Each request shape once, in first-seen order (a step that posted twice records one)."""
    seen: dict[tuple[Any, ...], SentRequest] = {}
    for request in requests:
        seen.setdefault((request.shape, request.navigation, request.status), request)
    return list(seen.values())
