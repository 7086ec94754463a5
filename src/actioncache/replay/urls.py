"""URL patterns: which pages count as "the same page" when plans are filed and found.

``url_pattern(url, rule)`` normalizes a URL under a :class:`UrlRule`. The default rule treats
``http`` and ``https`` as one site (patterns are written ``https://``), ignores a leading ``www.``
and drops tracking parameters (``utm_*``, ``gclid``, ``fbclid``...), so a link from a newsletter
finds the plan recorded on the plain page. A site where those differences matter gets its own
rule: ``PlanCache(store, url_rule=UrlRule(ignore_scheme=False, ignore_www=False, ignore_params=()))``.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlsplit

ID_PLACEHOLDER = "{id}"

#: Query parameters that say where a visitor came from, not what page they are on.
TRACKING_PARAMS = (
    "utm_*", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "yclid", "twclid", "ttclid",
    "igshid", "li_fat_id", "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "mkt_tok", "ref_src",
)

_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.I)
_HEXISH = re.compile(r"^[0-9a-f]{8,}$", re.I)
_DIGIT = re.compile(r"\d")
_ALPHA = re.compile(r"[A-Za-z]")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,}$")
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Schemes the URL standard calls "special": in them a backslash is a path separator, as "/" is.
_SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
#: Characters a browser removes from anywhere in a URL before parsing it.
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")
#: Left as they are in a pattern's query; everything else is percent-encoded, so re-parsing it
#: gives back the same names and values (the rule stays idempotent).
_QUERY_SAFE = "!$'()*,-./:;@_~[]{}"


@dataclass(frozen=True)
class UrlRule:
    """How :func:`url_pattern` normalizes a URL (see the module docstring for the defaults).

    ``ignore_scheme``: ``http`` and ``https`` are one site, written ``https``. ``ignore_www``: a
    leading ``www.`` of the host is dropped. ``ignore_params``: query parameter names (globs,
    case-insensitive) left out of the pattern. ``ids_in_path``: path segments that look like ids
    become ``{id}``.
    """

    ignore_scheme: bool = True
    ignore_www: bool = True
    ignore_params: tuple[str, ...] = TRACKING_PARAMS
    ids_in_path: bool = True

    def __post_init__(self) -> None:
        params = self.ignore_params
        if isinstance(params, str) or not all(isinstance(p, str) and p for p in params):
            raise TypeError("UrlRule.ignore_params is a tuple of parameter names or globs, e.g. ('utm_*', 'gclid')")
        object.__setattr__(self, "ignore_params", tuple(p.lower() for p in params))
        # One regex for all the globs: a page's links are normalized by the thousand.
        matcher = re.compile("|".join(fnmatch.translate(p) for p in self.ignore_params)) if params else None
        object.__setattr__(self, "_param_matcher", matcher)

    def ignores_param(self, name: str) -> bool:
        matcher = self.__dict__["_param_matcher"]
        return matcher is not None and matcher.match(name.lower()) is not None


DEFAULT_URL_RULE = UrlRule()


def looks_like_id(segment: str) -> bool:
    if segment.isdigit():
        return True
    if _UUID.match(segment):
        return True
    if _HEXISH.match(segment) and _DIGIT.search(segment):
        return True
    # Long opaque tokens (session ids, slugs with hashes): letters and digits mixed, no words.
    return bool(_TOKEN.match(segment) and _DIGIT.search(segment) and _ALPHA.search(segment))


def url_pattern(url: str, rule: UrlRule = DEFAULT_URL_RULE) -> str:
    """Normalize a URL into the pattern plans are filed under.

    The rule (idempotent: a pattern maps to itself):

    * scheme and host are lower-cased, a default port (80 for http, 443 for https) is dropped,
      and so are a user name and password;
    * by default ``http`` becomes ``https`` and a leading ``www.`` is dropped (``rule``);
    * the fragment is dropped, and so is a trailing ``/`` (except the root path);
    * a path segment that looks like an id becomes ``{id}``: all digits, a UUID, a hex string of
      8+ characters with a digit, or an opaque token of 16+ letters/digits/``-_`` mixing both;
    * query values are dropped and the parameter *names* kept, sorted and de-duplicated
      (``?sid=9&q=lamp&q=x`` becomes ``?q&sid``): which parameters a page takes is part of the
      task, their values (search terms, session ids) are not. Tracking parameters (``utm_*``,
      ``gclid``... see :data:`TRACKING_PARAMS`) are dropped by default.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError("a URL is required to build a plan signature (e.g. 'https://shop.example/search')")
    if not isinstance(rule, UrlRule):
        raise TypeError(f"rule must be a UrlRule, not {type(rule).__name__}")
    return _pattern(url.strip(), rule, False)


def destination_pattern(url: str, rule: UrlRule = DEFAULT_URL_RULE) -> str:
    """Normalize where a link or form goes: :func:`url_pattern`, but query *values* are kept.

    ``/acct?action=view`` and ``/acct?action=delete`` share a page pattern (``/acct?action``) yet
    do different things, so an element's destination keeps each ``name=value`` pair (sorted;
    tracking parameters dropped). A value holding a digit becomes ``{id}`` (with ``ids_in_path``):
    session ids, item numbers and timestamps change on every visit, while the words that say what
    a link does (``view``, ``delete``) stay. Element fingerprints use it for ``href`` and
    ``formaction``.
    """
    if not isinstance(url, str):
        raise TypeError(f"a destination URL must be a string, not {type(url).__name__}")
    if not isinstance(rule, UrlRule):
        raise TypeError(f"rule must be a UrlRule, not {type(rule).__name__}")
    return _pattern(url.strip(), rule, True)


def _browser_form(url: str) -> str:
    """``url`` as a browser reads it: tabs and newlines removed, and in a special scheme (or a
    relative URL, resolved against a web page) a backslash before the query is a ``/``."""
    url = _TAB_OR_NEWLINE.sub("", url)
    match = _SCHEME.match(url)
    if match is None or match.group(1).lower() in _SPECIAL_SCHEMES:
        end = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
        url = url[:end].replace("\\", "/") + url[end:]
    return url


def _query_part(text: str) -> str:
    return quote(text, safe=_QUERY_SAFE)


@functools.lru_cache(maxsize=8192)  # pure, and a page's links repeat on every snapshot of it
def _pattern(url: str, rule: UrlRule, keep_values: bool) -> str:
    try:
        parts = urlsplit(_browser_form(url))
    except ValueError as exc:  # an unclosed "[" of an IPv6 host
        raise ValueError(f"the URL {url!r} cannot be parsed ({exc}); check its host") from exc
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"the URL {url!r} has an invalid port; give a port number 0-65535 or none") from exc
    if port is not None and port == _DEFAULT_PORTS.get(scheme):
        port = None
    # http on port 443 stays http: written https, its port would read as the default one and the
    # pattern would merge with https on 443, another server.
    if rule.ignore_scheme and scheme == "http" and port != _DEFAULT_PORTS["https"]:
        scheme = "https"
    while rule.ignore_www and host.startswith("www.") and len(host) > 4:
        host = host[4:]
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    if port is not None:
        host = f"{host}:{port}"
    segments = [ID_PLACEHOLDER if rule.ids_in_path and looks_like_id(s) else s for s in parts.path.split("/")]
    # Spaces and control characters are written encoded, as a browser sends them: a trailing one
    # would otherwise be stripped on the next pass.
    path = _CONTROL_OR_SPACE.sub(lambda m: f"%{ord(m.group()):02X}", "/".join(segments))
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    if not path and (scheme or host):
        path = "/"
    # An empty name is no parameter (``?=x``): kept, it would print as a bare ``?`` that the next
    # pass drops, and the rule would not be idempotent.
    pairs = [(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True)
             if name and not rule.ignores_param(name)]
    if keep_values:
        kept = sorted({f"{_query_part(n)}={ID_PLACEHOLDER if rule.ids_in_path and _DIGIT.search(v) else _query_part(v)}"
                       for n, v in pairs})
    else:
        kept = sorted({_query_part(name) for name, _ in pairs})
    query = "?" + "&".join(kept) if kept else ""
    if scheme and not host:  # mailto:x, urn:y: no authority, so no "//" either
        prefix = f"{scheme}:"
    else:
        prefix = f"{scheme}://{host}" if scheme else f"//{host}" if host else ""
    return f"{prefix}{path}{query}"
