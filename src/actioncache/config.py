"""Where the default store lives.

``$ACTIONCACHE_URL`` wins; otherwise a SQLite file in the platform's user cache directory
(the base install has no platformdirs dependency, so the three conventions are spelled out).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

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


def store_file(url: str) -> str | None:
    """The local file a file-backed store URL names (``sqlite:``, ``duckdb:``, ``libsql+file:``), else None."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("sqlite", "duckdb", "libsql+file") or parts.netloc not in ("", "localhost"):
        return None
    if "sync_url=" in parts.query:  # an embedded replica: its first open fetches the file from the server
        return None
    if "#" in url or not parts.path.startswith("/"):
        return None  # the stores refuse it (a '#' cuts the path; a relative path is no file URL): no file to name
    path = unquote(parts.path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")  # four slashes: the file the stores open (``_sql.file_path``)
    return path if path not in ("", "/", "/:memory:") else None


def missing_store_file(url: str, shown_url: str) -> str | None:
    """Why a reading command must not open ``url`` (a store file that is not there), or None;
    the message quotes ``shown_url``, the URL redacted by the caller (its query may hold a token)."""
    path = store_file(url)
    if path is None or os.path.exists(path):
        return None
    shown = "/" + path.lstrip("/")
    return (f"no store at {shown}: nothing was ever cached there. Check --store or $ACTIONCACHE_URL "
            f"(the store URL was {shown_url})")
