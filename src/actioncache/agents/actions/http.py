"""``http.request``: one HTTP(S) request with urllib (no extra dependency).

``success`` means a 2xx status; other statuses and network errors come back as data, not
exceptions, so an agent can branch on them and ``cache.wrap`` never caches them.
"""

from __future__ import annotations

import json as _json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping


def send(url: str, method: str = "GET", headers: Mapping[str, str] | None = None, data: bytes | None = None,
         timeout: float = 30) -> tuple[int | None, dict[str, str], bytes, str | None]:
    """(status, headers, body, error). Only http and https URLs are allowed."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        return None, {}, b"", f"only http:// and https:// URLs are allowed, not {url!r}"
    request = urllib.request.Request(url, data=data, method=method.upper(), headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - scheme checked above
            return response.status, dict(response.headers.items()), response.read(), None
    except urllib.error.HTTPError as exc:
        body = exc.read() if exc.fp is not None else b""
        return exc.code, dict(exc.headers.items()) if exc.headers else {}, body, f"HTTP {exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, {}, b"", f"request to {url} failed: {reason}"


def register(registry: Any, engine: Any) -> None:
    def request(state: Mapping[str, Any], url: str, method: str = "GET", headers: Mapping[str, str] | None = None,
                params: Mapping[str, Any] | None = None, json: Any = None, body: str | None = None,
                timeout: float = 30) -> dict[str, Any]:
        headers = dict(headers or {})
        if params:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(params, doseq=True)
        data = None
        if json is not None:
            data = _json.dumps(json).encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
        elif body is not None:
            data = body.encode("utf-8")
        status, response_headers, raw, error = send(url, method, headers, data, timeout)
        text = raw.decode("utf-8", "replace")
        out: dict[str, Any] = {"success": error is None and status is not None and 200 <= status < 300,
                               "status": status, "headers": response_headers, "body": text, "url": url}
        try:
            out["json"] = _json.loads(text) if text else None
        except ValueError:
            out["json"] = None
        if error:
            out["error"] = error
        return out

    registry["http.request"] = request
