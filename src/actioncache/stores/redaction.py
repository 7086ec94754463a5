"""The one redaction for anything a user sees of a store URL or a driver's message about it:
``repr(cache)``, ``cache.url``, ``stats()["store"]``, ``_cache_error``, CLI output and logs."""

from __future__ import annotations

import functools
import re
from typing import Iterable, NamedTuple

__all__ = ["redact_secrets", "redact_url", "url_secrets"]


# The password of a URL given alone (``scheme://user:PASSWORD@host``, redact_url): everything from
# the first ``:`` after ``://`` to the LAST ``@`` that is followed by something shaped like a host,
# whatever the password holds (spaces, ``/``, ``#``, ``?``, ``@``: a URL written by hand may not
# percent-encode them). A user name without a password (``postgresql://postgres@host``) is kept.
_USERINFO_SECRET = r"(://[^:@/\s]*:)([^\n]*)@(?=[\w.\-\[\]:%]*(?:[/?#\s'\"),;\]]|$))"
# A password inside a message (a driver's text may quote a URL): only what a URL's userinfo can be
# in running text, without whitespace, '/' or '@'. The greedy form above would read everything from
# "redis://127.0.0.1:" to the '@' of a later "@user_script:23" as a password and hide the message;
# the passwords that can hold such characters are the ones the store was opened with, which it
# scrubs exactly (url_secrets).
_TEXT_USERINFO_SECRET = r"(://[^:@/\s]*:)([^\s@/]*)@(?=[\w.\-\[\]:%]*(?:[/?#\s'\"),;\]]|$))"
# Secret options: a query or conninfo parameter whose NAME contains (case-insensitively) one of
# these words, e.g. ``?password=``, ``sslpassword=``, ``authToken=``, ``AccountKey=``, SAS ``sig=``.
# A pattern, not a list of names, so a driver's next option (``sslkey_password``) is covered too.
_SECRET_WORDS = ("password", "passwd", "pwd", "secret", "token", "key", "signature", "sig", "credential", "auth")
_OPTION_SECRET = (r"(?i)(?<![\w.\-])([\w.\-]*(?:" + "|".join(_SECRET_WORDS) + r")[\w.\-]*=)"
                  r"(\"[^\"]*\"|'[^']*'|[^&;\s'\"]+)")
# Pieces of a password shorter than this are not scrubbed from driver messages (they would
# mangle ordinary words and reveal next to nothing).
_MIN_FRAGMENT = 3


class _Patterns(NamedTuple):
    userinfo: re.Pattern[str]
    text_userinfo: re.Pattern[str]
    option: re.Pattern[str]


@functools.cache
def _patterns() -> _Patterns:
    """The patterns above, compiled on first use: compiling them costs about a fifth of
    ``python -c pass``, and most processes never show a store URL."""
    return _Patterns(re.compile(_USERINFO_SECRET), re.compile(_TEXT_USERINFO_SECRET), re.compile(_OPTION_SECRET))


def url_secrets(url: str) -> tuple[str, ...]:
    """The password of ``url``'s userinfo and the pieces a driver's parse error may quote
    (split at the URL delimiters it holds, raw and percent-decoded), longest first; for
    ``redact_secrets(message, url_secrets(url))`` on a driver's message about that URL."""
    from urllib.parse import unquote

    match = _patterns().userinfo.search(url)
    if not match or not match.group(2):
        return ()
    secret = match.group(2)
    pieces = {secret, unquote(secret)}
    for piece in list(pieces):
        pieces.update(re.split(r"[/?#@:\s]+", piece))
    return tuple(sorted((p for p in pieces if len(p) >= _MIN_FRAGMENT), key=len, reverse=True))


def _hide_option(match: re.Match[str]) -> str:
    # In running text a bare "key=" is a cache key (a driver's or our own message), not a secret.
    if match.group(1).lower() == "key=":
        return match.group(0)
    return match.group(1) + "***"


def redact_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` (a message: an error, a log line) with the passwords and tokens it may quote replaced
    by ``***``, and nothing else: ``secrets`` (see ``url_secrets``: those of the URL the store was
    opened with) wherever they appear, the password of any URL it quotes, and credential options
    (``password=``, ``sslpassword=``, ``authToken=``, ``AccountKey=``...). The driver's own words, an
    ``@`` in them, ``host:port`` and URLs without a password are kept."""
    for secret in secrets:
        text = text.replace(secret, "***")
    if "=" not in text and "@" not in text:
        return text
    patterns = _patterns()
    return patterns.option.sub(_hide_option, patterns.text_userinfo.sub(r"\1***@", text))


def redact_url(url: str) -> str:
    """``url`` (a URL alone) with its password and secret options replaced by ``***``, whatever the
    password holds, for ``repr(cache)``, ``stats()["store"]``, error messages and logs."""
    if "=" not in url and "@" not in url:
        return url
    patterns = _patterns()
    return patterns.option.sub(r"\1***", patterns.userinfo.sub(r"\1***@", url))
