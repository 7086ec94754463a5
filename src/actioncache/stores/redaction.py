"""The one redaction for anything a user sees of a store URL or a driver's message about it:
``repr(cache)``, ``cache.url``, ``stats()["store"]``, ``_cache_error``, CLI output and logs."""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import unquote

__all__ = ["redact_secrets", "redact_url", "url_secrets"]


# A URL's password (``scheme://user:PASSWORD@host``): everything from the first ``:`` after ``://``
# to the LAST ``@`` that is followed by something shaped like a host, whatever the password holds
# (spaces, ``/``, ``#``, ``?``, ``@``: a URL written by hand may not percent-encode them). A user
# name without a password (``postgresql://postgres@host``) is kept. The password never spans a line;
# in a text holding two URLs it may take the text between them too: more hidden, never less.
_USERINFO_SECRET = re.compile(
    r"(://[^:@/\s]*:)([^\n]*)@(?=[\w.\-\[\]:%]*(?:[/?#\s'\"),;\]]|$))"
)
# Secret options: a query or conninfo parameter whose NAME contains (case-insensitively) one of
# these words, e.g. ``?password=``, ``sslpassword=``, ``authToken=``, ``AccountKey=``, SAS ``sig=``.
# A pattern, not a list of names, so a driver's next option (``sslkey_password``) is covered too.
_SECRET_WORDS = ("password", "passwd", "pwd", "secret", "token", "key", "signature", "sig", "credential", "auth")
_OPTION_SECRET = re.compile(
    r"(?i)(?<![\w.\-])([\w.\-]*(?:" + "|".join(_SECRET_WORDS) + r")[\w.\-]*=)"
    r"(\"[^\"]*\"|'[^']*'|[^&;\s'\"]+)"
)
# Pieces of a password shorter than this are not scrubbed from driver messages (they would
# mangle ordinary words and reveal next to nothing).
_MIN_FRAGMENT = 3


def url_secrets(url: str) -> tuple[str, ...]:
    """The password of ``url``'s userinfo and the pieces a driver's parse error may quote
    (split at the URL delimiters it holds, raw and percent-decoded), longest first; for
    ``redact_secrets(message, url_secrets(url))`` on a driver's message about that URL."""
    match = _USERINFO_SECRET.search(url)
    if not match or not match.group(2):
        return ()
    secret = match.group(2)
    pieces = {secret, unquote(secret)}
    for piece in list(pieces):
        pieces.update(re.split(r"[/?#@:\s]+", piece))
    return tuple(sorted((p for p in pieces if len(p) >= _MIN_FRAGMENT), key=len, reverse=True))


def redact_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every password and token a store URL or connection string may carry
    replaced by ``***``: the one redaction for anything shown (``repr(cache)``, ``stats()["store"]``,
    ``_cache_error``, CLI output, logs). ``secrets`` (see ``url_secrets``) are scrubbed as well,
    wherever they appear: a driver's message may quote a piece of a password it could not parse."""
    for secret in secrets:
        text = text.replace(secret, "***")
    if "=" not in text and "@" not in text:
        return text
    return _OPTION_SECRET.sub(r"\1***", _USERINFO_SECRET.sub(r"\1***@", text))


def redact_url(url: str) -> str:
    """``url`` with its password and secret options replaced by ``***``, for error messages and logs."""
    return redact_secrets(url)
