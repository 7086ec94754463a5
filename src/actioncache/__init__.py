"""actioncache: make an agent's expensive work free the second time.

Public names (a contract: they are never renamed); everything else is internal. They load on first
use (PEP 562), so a command-line hit of ``actioncache exec`` does not import the whole library.
"""

from __future__ import annotations

from . import _seams

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms

if TYPE_CHECKING:
    from typing import Any
    from .cache import Cache, CacheWarning, Decision, default_cache, set_default_cache
    from .decorator import cached
    from .errors import ActionCacheError, CodecError, HashError, StoreError, StoreURLError
    from .hashing import storage_hash
    from .keys import canonical_json, sha256_hex
    from .stores.base import CacheStore, Entry, open_store, register_store

# public name -> the module that defines it
_HOMES = {
    "Cache": "cache", "CacheWarning": "cache", "Decision": "cache", "default_cache": "cache",
    "set_default_cache": "cache", "cached": "decorator", "ActionCacheError": "errors", "CodecError": "errors",
    "HashError": "errors", "StoreError": "errors", "StoreURLError": "errors", "storage_hash": "hashing",
    "canonical_json": "keys", "sha256_hex": "keys", "CacheStore": "stores.base", "Entry": "stores.base",
    "open_store": "stores.base", "register_store": "stores.base",
}

__all__ = sorted(_HOMES)

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'actioncache' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


# The root wires the layers together so that no layer imports the one above it: the core reaches
# the policy and the decorator only through the seams in _seams.py. Both load on first use.
class _LazyPolicy:
    """The built-in policy (``actioncache.policy``), imported on first use: only scoped calls pay for it."""

    def attach(self, cache: Cache) -> object:
        from .policy import provider

        return provider.attach(cache)

    def block(self, cache: Cache, **fields: object) -> object:
        from .policy import provider

        return provider.block(cache, **fields)


def _cached(*args: object, **options: object) -> object:
    from .decorator import cached

    return cached(*args, **options)  # type: ignore[arg-type]


_seams.policy = _LazyPolicy()  # type: ignore[assignment]
_seams.decorator = _cached  # type: ignore[assignment]
