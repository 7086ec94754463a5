"""Where the default store lives.

``$ACTIONCACHE_URL`` wins; otherwise a SQLite file in the platform's user cache directory
(the base install has no platformdirs dependency, so the three conventions are spelled out).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import quote

ENV_URL = "ACTIONCACHE_URL"
DEFAULT_FILENAME = "actioncache.db"


def user_cache_dir() -> Path:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "actioncache" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "actioncache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "actioncache"


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
