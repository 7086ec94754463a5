"""actioncache: make an agent's expensive work free the second time.

Public names (a contract: they are never renamed); everything else is internal. They load on first
use (PEP 562), so a command-line hit of ``actioncache exec`` does not import the whole library;
type checkers read the static imports below.
"""

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms

if TYPE_CHECKING:
    from typing import Any

    from .cache import Cache as Cache
    from .cache import Decision as Decision
    from .cache import cached as cached
    from .cache import default_cache as default_cache
    from .cache import set_default_cache as set_default_cache
    from .errors import ActionCacheError as ActionCacheError
    from .errors import CacheWarning as CacheWarning
    from .errors import CodecError as CodecError
    from .errors import HashError as HashError
    from .errors import StoreError as StoreError
    from .errors import StoreURLError as StoreURLError
    from .hashing import storage_hash as storage_hash
    from .keys import canonical_json as canonical_json
    from .keys import sha256_hex as sha256_hex
    from .stores.base import CacheStore as CacheStore
    from .stores.base import Entry as Entry
    from .stores.base import open_store as open_store
    from .stores.base import register_store as register_store
    from .types import CachedFunction as CachedFunction

__all__ = [
    "ActionCacheError", "Cache", "CacheStore", "CacheWarning", "CachedFunction", "CodecError", "Decision", "Entry",
    "HashError", "StoreError", "StoreURLError", "cached", "canonical_json", "default_cache", "open_store",
    "register_store", "set_default_cache", "sha256_hex", "storage_hash",
]

# public name -> the module that defines it
_HOMES = {
    "Cache": "cache", "Decision": "cache", "cached": "cache", "default_cache": "cache",
    "set_default_cache": "cache", "ActionCacheError": "errors", "CacheWarning": "errors", "CodecError": "errors",
    "HashError": "errors", "StoreError": "errors", "StoreURLError": "errors", "storage_hash": "hashing",
    "canonical_json": "keys", "sha256_hex": "keys", "CacheStore": "stores.base", "Entry": "stores.base",
    "open_store": "stores.base", "register_store": "stores.base", "CachedFunction": "types",
}

__version__ = "0.1.0"


def __getattr__(name: str) -> "Any":
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'actioncache' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
