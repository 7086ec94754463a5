"""Where the default store lives.

``$ACTIONCACHE_URL`` wins; otherwise a SQLite file in the platform's user cache directory
(the base install has no platformdirs dependency, so the three conventions are spelled out).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from ._lean import user_cache_dir as _lean_user_cache_dir

ENV_URL = "ACTIONCACHE_URL"
DEFAULT_FILENAME = "actioncache.db"


def user_cache_dir() -> Path:
    """The user's cache directory, as the exec hit path finds it (``_lean.user_cache_dir``)."""
    return Path(_lean_user_cache_dir())


def default_store_url() -> str:
    url = os.environ.get(ENV_URL, "").strip()
    if url:
        return url
    return file_url("sqlite", user_cache_dir() / DEFAULT_FILENAME)


def file_url(scheme: str, path: str | os.PathLike[str]) -> str:
    """``scheme:///abs/path``: the URL of a local database file (``sqlite``, ``duckdb``, ``libsql+file``).

    The path is percent-encoded, so a ``?``, ``#`` or ``%`` in a file name stays part of the path
    (every ``from_url`` decodes it). The one place this spelling is written.
    """
    return f"{scheme}:///" + url_path(str(path).lstrip("/"))


def url_path(text: str) -> str:
    """``text`` percent-encoded as a URL's path: ``/`` stays, ``?``, ``#``, ``%``, spaces and
    non-ASCII are escaped (``unquote`` gives ``text`` back)."""
    return quote(text, safe="/:~")
