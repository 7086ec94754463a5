"""actioncache: make an agent's expensive work free the second time.

Public names (DESIGN.md "The public contract"); everything else is internal.
"""

from .cache import Cache, CacheWarning, Decision, default_cache, set_default_cache
from .decorator import cached
from .errors import ActionCacheError, CodecError, HashError, StoreError, StoreURLError
from .hashing import storage_hash
from .keys import canonical_json, sha256_hex
from .stores.base import CacheStore, Entry, open_store, register_store

__all__ = [
    "ActionCacheError",
    "Cache",
    "CacheStore",
    "CacheWarning",
    "CodecError",
    "Decision",
    "Entry",
    "HashError",
    "StoreError",
    "StoreURLError",
    "cached",
    "canonical_json",
    "default_cache",
    "open_store",
    "register_store",
    "set_default_cache",
    "sha256_hex",
    "storage_hash",
]

__version__ = "0.1.0"
