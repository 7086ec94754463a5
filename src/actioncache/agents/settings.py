"""``settings:`` of an agent: ``${VAR}`` expansion and the ``ltm`` block -> a store URL.

``ltm`` takes either ``{url: ...}`` (any store URL open_store knows) or ``{backend: NAME, ...}``
with the backend's few fields; relative paths are relative to the YAML file, so an agent and its
cache travel together.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import quote

from .. import config
from .errors import AgentDefinitionError, suggest

_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")

LTM_BACKENDS = ("sqlite", "memory", "duckdb", "turso", "libsql", "firestore", "redis", "postgres", "blob-sqlite")
LTM_KEYS = {
    "backend", "url", "path", "uri", "host", "port", "db", "user", "password", "database",
    "project", "collection", "auth_token", "max_size_bytes", "eviction",
}
# ltm keys that are store options, whatever the backend: they travel in the URL's query.
LTM_SIZE_KEYS = ("max_size_bytes", "eviction")
CACHE_KEYS = {"namespace", "cleanup_probability", "cleanup_limit", "default_ttl_seconds", "default_ttl_days",
              "max_value_bytes"}


def expand_env(value: Any, where: str = "settings", env: Mapping[str, str] | None = None,
               check: Callable[[str, str], None] | None = None) -> Any:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in every string; an unset ``${VAR}`` is an error.

    ``check(name, where)`` vets each variable before it is read (untrusted mode's allow list).
    """
    env = os.environ if env is None else env
    if isinstance(value, str):
        def replace(match: re.Match[str]) -> str:
            name, default = match["name"], match["default"]
            if check is not None:
                check(name, where)
            if name in env and (env[name] != "" or default is None):
                return env[name]
            if default is not None:
                return default
            raise AgentDefinitionError(
                f"{where} uses ${{{name}}} but {name} is not set; set it or write ${{{name}:-default}}"
            )
        return _VAR.sub(replace, value)
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}.{k}", env, check) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, f"{where}[{i}]", env, check) for i, v in enumerate(value)]
    return value


def _abs(path: str, base_dir: Path) -> str:
    p = Path(os.path.expanduser(path))
    return str(p if p.is_absolute() else (base_dir / p).resolve())


def ltm_store_url(ltm: Any, base_dir: Path) -> str | None:
    """The store URL an ``ltm:`` block names (None: the default store), with its size limit."""
    url = _ltm_base_url(ltm, base_dir)
    limits = {name: ltm[name] for name in LTM_SIZE_KEYS if isinstance(ltm, dict) and ltm.get(name) is not None}
    if not limits:
        return url
    if url is None:
        from ..config import default_store_url

        url = default_store_url()
    return url + ("&" if "?" in url else "?") + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in limits.items())


def _ltm_base_url(ltm: Any, base_dir: Path) -> str | None:
    if ltm is None:
        return None
    if not isinstance(ltm, dict):
        raise AgentDefinitionError("settings.ltm must be a mapping such as {backend: sqlite, path: ./cache.db} or {url: ...}")
    for name in ltm:
        if name not in LTM_KEYS:
            raise AgentDefinitionError(f"settings.ltm: unknown key {name!r}{suggest(name, LTM_KEYS)}")
    if ltm.get("url"):
        url = str(ltm["url"])
        if ltm.get("auth_token") and url.partition(":")[0].lower() in ("libsql", "libsql+file", "turso"):
            url += ("&" if "?" in url else "?") + "authToken=" + quote(str(ltm["auth_token"]), safe="")
        return url
    backend = str(ltm.get("backend", "sqlite")).lower()
    path = ltm.get("path")
    if backend == "sqlite":
        target = _abs(str(path), base_dir) if path else str(config.user_cache_dir() / config.DEFAULT_FILENAME)
        return "sqlite:///" + target.lstrip("/")
    if backend == "memory":
        return "memory://"
    if backend == "duckdb":
        return "duckdb:///" + _abs(str(path or "actioncache.duckdb"), base_dir).lstrip("/")
    if backend in ("turso", "libsql"):
        if path:
            return "libsql+file:///" + _abs(str(path), base_dir).lstrip("/")
        raise AgentDefinitionError(f"settings.ltm backend {backend!r} needs url: libsql://... or path: ./local.db")
    if backend == "firestore":
        if not ltm.get("project"):
            raise AgentDefinitionError("settings.ltm backend 'firestore' needs project: (and optionally collection:)")
        return f"firestore://{ltm['project']}/{ltm.get('collection', 'actioncache')}"
    if backend == "redis":
        return f"redis://{_auth(ltm)}{ltm.get('host', '127.0.0.1')}:{ltm.get('port', 6379)}/{ltm.get('db', 0)}"
    if backend == "postgres":
        return (f"postgresql://{_auth(ltm)}{ltm.get('host', '127.0.0.1')}:{ltm.get('port', 5432)}/"
                f"{ltm.get('database', 'postgres')}")
    if backend == "blob-sqlite":
        uri = str(ltm.get("uri") or "")
        scheme, sep, rest = uri.partition("://")
        if not sep:
            raise AgentDefinitionError("settings.ltm backend 'blob-sqlite' needs uri: s3://bucket/path.db (or gs://, az://, file://)")
        return f"blob-sqlite+{scheme}://{rest}"
    raise AgentDefinitionError(
        f"settings.ltm: unknown backend {backend!r}{suggest(backend, LTM_BACKENDS)}; "
        f"known backends: {', '.join(LTM_BACKENDS)}, or give url: with any store URL"
    )


def _auth(ltm: Mapping[str, Any]) -> str:
    user, password = ltm.get("user"), ltm.get("password")
    if not user and not password:
        return ""
    text = quote(str(user or ""), safe="")
    if password:
        text += ":" + quote(str(password), safe="")
    return text + "@"


def cache_options(cache_settings: Any) -> dict[str, Any]:
    """Keyword arguments for :class:`Cache` from ``settings.cache`` (namespace is the engine's)."""
    if cache_settings is None:
        return {}
    if not isinstance(cache_settings, dict):
        raise AgentDefinitionError("settings.cache must be a mapping, e.g. {namespace: my-agent}")
    for name in cache_settings:
        if name not in CACHE_KEYS:
            raise AgentDefinitionError(f"settings.cache: unknown key {name!r}{suggest(name, CACHE_KEYS)}")
    options: dict[str, Any] = {}
    for name in ("cleanup_probability", "cleanup_limit", "default_ttl_seconds", "max_value_bytes"):
        if name in cache_settings:
            options[name] = cache_settings[name]
    if "default_ttl_days" in cache_settings:
        options["default_ttl_seconds"] = float(cache_settings["default_ttl_days"]) * 86400.0
    return options
