"""Exceptions. Each message names the problem and the fix."""

from __future__ import annotations


class ActionCacheError(Exception):
    """Base class of every error actioncache raises."""


class StoreError(ActionCacheError):
    """A store could not do what was asked (down, locked, corrupt, misconfigured).

    The cache core catches it: a failing store never fails the user's action.
    """


class MissingExtraError(ActionCacheError, ModuleNotFoundError):
    """An optional dependency is not installed; the message gives the extra to install.

    ``extra`` names it (``pip install 'actioncache[extra]'``). A ``ModuleNotFoundError``, so code
    that skips a face whose dependency is missing keeps doing so.
    """

    extra: str = ""


class MissingStoreExtraError(MissingExtraError, StoreError):
    """A store's optional dependency is not installed (raised when the store is opened)."""


class StoreURLError(StoreError, ValueError):
    """A store URL that cannot be parsed or names an unknown scheme."""


class EntryTooLargeError(StoreError):
    """An entry over the store's ``max_size_bytes``: the store refuses it (it would evict everything
    else and then itself). The store is fine; the cache returns such a value uncached."""

    def __init__(self, message: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class LeaseLostError(ActionCacheError):
    """A write under a lease the writer no longer holds (it was paused or slow past the lease, and
    another holder took it): the store refused it, nothing was written. The caller still has its
    value; retrying takes the lease again."""

    def __init__(self, message: str, lease: str, key: str) -> None:
        super().__init__(message)
        self.lease = lease
        self.key = key


class CodecError(ActionCacheError):
    """A value cannot be encoded (so it is not cached) or an entry cannot be decoded."""


class CorruptEntryError(CodecError):
    """A stored entry is damaged or its signature does not verify; it is a miss and is removed."""


class UnsupportedEntryError(CodecError):
    """An entry in a format this cache is not configured to read (e.g. signed pickle without the secret)."""


class ValueTooLargeError(ActionCacheError, ValueError):
    """A result over ``max_value_bytes``: returned to the caller, not cached."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the result is {size / 2**20:.1f} MB encoded, over max_value_bytes "
                         f"({limit / 2**20:.1f} MB); raise Cache(max_value_bytes=...) to cache results this big")
        self.size = size
        self.limit = limit


class PolicyError(ActionCacheError, ValueError):
    """A cache policy setting that cannot be understood (a mode, scope, phase or config file value)."""


class DumpError(ActionCacheError, ValueError):
    """A dump line that is not an exported entry; the message names the line and what is wrong."""


class CacheWarning(ActionCacheError, UserWarning):
    """A result was returned but could not be cached (not encodable, too large), or the store fails:
    said once, never raised over the user's work."""


class KeyStrategyError(ActionCacheError, ValueError):
    """A key cannot be computed from the arguments given."""


class ConfigError(ActionCacheError, ValueError):
    """An option or argument given to the cache is not valid (a TTL of zero, an unknown key
    strategy, metadata that is not JSON, ...). The message names the option and the fix. It is a
    ``ValueError`` too, so ``except ValueError`` keeps working."""


class ConfigTypeError(ActionCacheError, TypeError):
    """An option or argument given to the cache has the wrong type (a store object where a URL
    goes, a flag that is not a bool, ...). A ``TypeError`` too."""


class HashError(ActionCacheError):
    """Content could not be hashed (missing file, unreadable URL, unknown algorithm)."""
