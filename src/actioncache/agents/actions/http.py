"""``http.request``: one HTTP(S) request with urllib (no extra dependency).

``success`` means a 2xx status; other statuses and network errors come back as data, not
exceptions, so an agent can branch on them and ``cache.wrap`` never caches them. A failure carries
``error_type``: ``validation_error`` (not an http(s) URL), ``http_error`` (the request failed or the
status is not 2xx).
"""

from __future__ import annotations

import json as _json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Mapping

from ...actions import ActionTable, Engine, bad_arg, failure
from ..key_context import declare_key_context, headers_context

ONLY_HTTP = "only http:// and https:// URLs are allowed"


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only after ``check(new_url)`` accepts it (urllib keeps the
    Authorization header across hosts, so an unchecked redirect could carry a key anywhere)."""

    def __init__(self, check: Callable[[str], None]) -> None:
        self.check = check

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        self.check(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def send(url: str, method: str = "GET", headers: Mapping[str, str] | None = None, data: bytes | None = None,
         timeout_s: float = 30, check_redirect: Callable[[str], None] | None = None,
         ) -> tuple[int | None, dict[str, str], bytes, str | None]:
    """(status, headers, body, error). Only http and https URLs are allowed; ``check_redirect``
    vets every redirect target (it raises to refuse)."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        return None, {}, b"", f"{ONLY_HTTP}, not {url!r}"
    request = urllib.request.Request(url, data=data, method=method.upper(), headers=dict(headers or {}))
    opener = urllib.request.build_opener(_CheckedRedirects(check_redirect)) if check_redirect else None
    try:
        with (opener.open(request, timeout=timeout_s) if opener else
              urllib.request.urlopen(request, timeout=timeout_s)) as response:
            return response.status, dict(response.headers.items()), response.read(), None
    except urllib.error.HTTPError as exc:
        body = exc.read() if exc.fp is not None else b""
        return exc.code, dict(exc.headers.items()) if exc.headers else {}, body, f"HTTP {exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, {}, b"", f"request to {url} failed: {reason}"


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def request(state: Mapping[str, Any], url: str, method: str = "GET", headers: Mapping[str, str] | None = None,
                params: Mapping[str, Any] | None = None, json: Any = None, body: str | None = None,
                timeout: float = 30) -> dict[str, Any]:
        problem = (bad_arg("http.request url", url, "string", optional=False)
                   or bad_arg("http.request method", method, "string", optional=False)
                   or bad_arg("http.request headers", headers, "mapping") or bad_arg("http.request params", params, "mapping")
                   or bad_arg("http.request body", body, "string") or bad_arg("http.request timeout", timeout, "number"))
        if problem:
            return failure("validation_error", problem, status=None, headers={}, body="", url=str(url), json=None)
        headers = dict(headers or {})
        url = full_url(url, params)
        if urllib.parse.urlsplit(url).scheme.lower() not in ("http", "https"):
            return failure("validation_error", f"{ONLY_HTTP}, not {url!r}", status=None, headers={}, body="",
                           url=url, json=None)
        trust = getattr(engine, "trust", None)
        check_redirect = None
        if trust is not None and not trust.trusted:
            trust.check_url(url, f"http.request {method.upper()}")
            check_redirect = lambda target: trust.check_url(target, f"http.request redirect from {url}")  # noqa: E731
        data = None
        if json is not None:
            data = _json.dumps(json).encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
        elif body is not None:
            data = body.encode("utf-8")
        status, response_headers, raw, error = send(url, method, headers, data, timeout, check_redirect)
        text = raw.decode("utf-8", "replace")
        out: dict[str, Any] = {"success": error is None and status is not None and 200 <= status < 300,
                               "status": status, "headers": response_headers, "body": text, "url": url}
        try:
            out["json"] = _json.loads(text) if text else None
        except ValueError:
            out["json"] = None
        if error:
            out["error"] = error
        if not out["success"]:
            out.setdefault("error", f"HTTP {status}")
            out["error_type"] = "http_error"
        return out

    def context(args: Mapping[str, Any]) -> dict[str, Any]:
        """Method, final URL and headers (credentials hashed): what the server answers to."""
        return {"method": str(args.get("method") or "GET").upper(),
                "url": full_url(str(args.get("url")), args.get("params")),
                "headers": headers_context(args.get("headers"))}

    registry["http.request"] = declare_key_context(request, context)


def full_url(url: str, params: Mapping[str, Any] | None) -> str:
    """``url`` with ``params`` appended as a query string."""
    if params:
        url += ("&" if "?" in url else "?") + urllib.parse.urlencode(params, doseq=True)
    return url
