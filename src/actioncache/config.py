"""Where the default store lives.

``$ACTIONCACHE_URL`` wins; otherwise a SQLite file in the platform's user cache directory
(the base install has no platformdirs dependency, so the three conventions are spelled out).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

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
    return "sqlite:///" + str(user_cache_dir() / DEFAULT_FILENAME).lstrip("/")
