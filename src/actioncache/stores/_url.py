"""What the stores' ``url_from_fields`` share: a backend's named fields → its URL.

An agent's ``settings.ltm: {backend: redis, host: h, port: 6379}`` names a store by fields rather
than by URL. Each store owns its grammar both ways: ``from_url`` parses its URL, ``url_from_fields``
writes it from fields (``stores.registry.url_from_fields`` picks the store by backend name). The
helpers here check the fields and spell the common parts; a bad field is a ``StoreURLError``
naming the field and the fix.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any, Iterable, Mapping
from urllib.parse import SplitResult, parse_qs, quote

from ..config import file_url, url_path
from ..errors import StoreURLError
from .redaction import redact_url

__all__ = ["check_fields", "check_userinfo", "file_url", "host_part", "local_file", "positive_number",
           "prefixed_options", "query_options", "url_path", "userinfo", "with_query", "whole_number"]


def check_fields(store: str, fields: Mapping[str, Any], allowed: Iterable[str],
                 required: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``fields`` without empty values, after checking each is one ``store`` takes.

    ``required`` maps a field that must be given to the words of the fix (``"project: my-project"``).
    """
    allowed = tuple(allowed)
    given = {name: value for name, value in fields.items() if value is not None and value != ""}
    for name in sorted(given):
        if name not in allowed:
            import difflib  # only for this message: every process that opens a store imports this module

            close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            takes = ", ".join(allowed) if allowed else "no fields"
            raise StoreURLError(f"the {store} store has no field {name!r}{hint}; it takes {takes}")
    for name, fix in (required or {}).items():
        if name not in given:
            raise StoreURLError(f"the {store} store needs {name}: ({fix})")
    return given


def query_options(store: str, url: str, parts: SplitResult, known: Iterable[str], takes: str) -> dict[str, str]:
    """A URL's query as ``{option: last value}``, after checking each is one the store knows: an
    option it would ignore (a typo, another store's) is refused, naming what it takes (and showing
    ``url`` redacted: the query may hold a token)."""
    query = {name: values[-1] for name, values in parse_qs(parts.query, keep_blank_values=True).items()}
    unknown = set(query) - set(known)
    if unknown:
        raise StoreURLError(f"{store} URL {redact_url(url)!r}: unknown option(s) {sorted(unknown)}; {takes}")
    return query


def check_userinfo(store: str, url: str, parts: SplitResult) -> None:
    """Refuse a server URL whose ``user:password@`` part the driver would read another way than
    this URL's parser: a second ``@`` (the driver may split at the first, taking part of the
    password as the host) or a ``#`` (the rest of the URL becomes a fragment)."""
    if parts.netloc.count("@") > 1:
        raise StoreURLError(f"{store} URL {redact_url(url)!r} has more than one '@' before the host; "
                            "percent-encode '@' in the password as %40")
    if "#" in url:
        raise StoreURLError(f"{store} URL {redact_url(url)!r} holds a '#', which ends the URL there; "
                            "percent-encode '#' in the password as %23")


def local_file(path: Any, base_dir: str | os.PathLike[str] | None) -> str:
    """``path`` made absolute: ``~`` expanded, a relative path taken from ``base_dir`` (default: the
    working directory)."""
    p = Path(os.path.expanduser(str(path)))
    if not p.is_absolute():
        p = Path(base_dir if base_dir is not None else os.getcwd()) / p
    return str(p.resolve())


def whole_number(store: str, name: str, value: Any, lowest: int, highest: int | None = None) -> int:
    """A field that is a whole number (YAML may give ``"6379"`` after ``${VAR}`` expansion)."""
    text = str(value).strip()
    # ASCII digits only: str.isdigit() also takes '²' and other scripts' digits, which int() refuses or reads.
    if isinstance(value, bool) or not (text.isascii() and text.isdigit()) or int(text) < lowest or (highest is not None and int(text) > highest):
        upper = f" and <= {highest}" if highest is not None else ""
        raise StoreURLError(f"the {store} store's {name}: must be a whole number >= {lowest}{upper}, not {value!r}")
    return int(text)


def userinfo(user: Any, password: Any) -> str:
    """``user:password@`` percent-encoded (an ``@`` or ``:`` in a password stays in it), or ``""``."""
    if not user and not password:
        return ""
    text = quote(str(user or ""), safe="")
    if password:
        text += ":" + quote(str(password), safe="")
    return text + "@"


def host_part(store: str, host: Any, port: int) -> str:
    """``host:port`` (an IPv6 address in brackets); a host holding URL syntax is refused."""
    name = str(host).strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    bad = f"the {store} store's host: must be a host name or address such as 127.0.0.1, not {host!r}"
    if not name or any(c in name for c in "/?#@ []"):
        raise StoreURLError(bad)
    if ":" in name:  # an IPv6 address, or a port written into the host
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            raise StoreURLError(f"{bad}; give the port as port:, not in host") from None
        return f"[{name}]:{port}"
    return f"{name}:{port}"


def with_query(url: str, params: Mapping[str, Any]) -> str:
    """``url`` with ``params`` appended to its query (values percent-encoded)."""
    if not params:
        return url
    return url + ("&" if "?" in url else "?") + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items())


def positive_number(value: Any, name: str, where: str) -> float:
    """``value`` as a positive, finite number (a URL gives text), or a ``StoreURLError`` naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not 0 < number < float("inf"):
        raise StoreURLError(f"{where}: {name}={value!r} must be a positive number")
    return number


def prefixed_options(query: dict[str, str], options: dict[str, Any], switch: str, defaults: Mapping[str, float],
                     where: str, *, on_by_default: bool) -> dict[str, float] | None:
    """A family of options ``SWITCH=on|off`` and ``SWITCH_<field>=<positive number>`` (``breaker_failures=5``),
    taken out of a URL's ``query`` and the keyword ``options``: the fields over ``defaults``, or None
    when the family is off. A field not in ``defaults``, or fields given while it is off, are refused."""
    given: dict[str, Any] = {}
    for source in (query, options):
        for name in [n for n in source if n == switch or n.startswith(switch + "_")]:
            given[name] = source.pop(name)
    state = given.pop(switch, None)
    out = dict(defaults)
    for name, value in given.items():
        field = name[len(switch) + 1:]
        if field not in defaults:
            raise StoreURLError(f"{where}: unknown option {name!r}; {switch} options: {switch}=on|off, "
                                + ", ".join(f"{switch}_{n}" for n in defaults))
        out[field] = positive_number(value, name, where)
    text = str(state).lower()
    if state is not None and text not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
        raise StoreURLError(f"{where}: {switch}={state!r}: use {switch}=on or {switch}=off")
    on = on_by_default if state is None else text in ("on", "true", "1", "yes")
    if given and not on:
        raise StoreURLError(f"{where}: {switch} options without {switch}=on")
    return out if on else None
