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

from .. import config
from ..errors import StoreURLError
from ..stores._eviction import limits_to_add
from ..stores._url import with_query
from ..stores.registry import field_backends, registered_stores, scheme_of, url_from_fields
from .errors import AgentDefinitionError, suggest

_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")

LTM_BACKENDS = tuple(field_backends())  # the built-in stores that write their URL from fields
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


def ltm_store_url(ltm: Any, base_dir: Path) -> str | None:
    """The store URL an ``ltm:`` block names (None: the default store), with its size limit.

    The store writes its own URL from the fields (``stores.registry.url_from_fields``); this face
    knows only the keys, that relative paths start at the YAML file, and the size limit."""
    url = _ltm_base_url(ltm, base_dir)
    limits = {name: ltm[name] for name in LTM_SIZE_KEYS if isinstance(ltm, dict) and ltm.get(name) is not None}
    if not limits:
        return url
    base = url if url is not None else config.default_store_url()
    try:  # a limit url: already gives is not appended again; one it gives another value is refused
        return with_query(base, limits_to_add(base, limits))
    except StoreURLError as exc:
        raise AgentDefinitionError(f"settings.ltm: {str(exc).replace('the keyword', 'settings.ltm')}") from None


def _ltm_base_url(ltm: Any, base_dir: Path) -> str | None:
    if ltm is None:
        return None
    if not isinstance(ltm, dict):
        raise AgentDefinitionError("settings.ltm must be a mapping such as {backend: sqlite, path: ./cache.db} or {url: ...}")
    for name in ltm:
        if name not in LTM_KEYS:
            raise AgentDefinitionError(f"settings.ltm: unknown key {name!r}{suggest(name, LTM_KEYS)}")
    fields = {k: v for k, v in ltm.items() if k not in ("backend", *LTM_SIZE_KEYS) and v is not None}
    if ltm.get("url"):
        url = str(ltm["url"])
        named = ltm.get("backend")
        if len(fields) == 1 and named is None:
            return url
        try:
            backend = scheme_of(url)  # the URL's store adds the other fields (a token) to it
        except StoreURLError as exc:
            raise AgentDefinitionError(f"settings.ltm: {exc}") from None
        if named is not None and not _same_store(str(named), backend):
            raise AgentDefinitionError(
                f"settings.ltm: give url: or backend: with its fields, not both (url: opens a {backend!r} store, "
                f"backend: says {named!r})")
        if len(fields) == 1:
            return url
    else:
        fields.pop("url", None)
        backend = str(ltm.get("backend", "sqlite")).lower()
    try:
        return url_from_fields(backend, fields, base_dir=base_dir)
    except StoreURLError as exc:
        raise AgentDefinitionError(f"settings.ltm: {exc}") from None


def _same_store(backend: str, scheme: str) -> bool:
    """Whether backend name ``backend`` opens the store a ``scheme://`` URL does (``turso`` and
    ``libsql``, ``postgres`` and ``postgresql``)."""
    stores = registered_stores()
    mine, theirs = stores.get(backend.lower()), stores.get(scheme)
    return mine is not None and theirs is not None and mine.target == theirs.target


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
    for name in ("cleanup_probability", "cleanup_limit", "max_value_bytes"):
        if name in cache_settings:
            options[name] = cache_settings[name]
    if "default_ttl_seconds" in cache_settings:
        options["default_ttl"] = cache_settings["default_ttl_seconds"]
    if "default_ttl_days" in cache_settings:
        options["default_ttl"] = float(cache_settings["default_ttl_days"]) * 86400.0
    return options
