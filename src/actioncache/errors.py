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


class CodecError(ActionCacheError):
    """A value cannot be encoded (so it is not cached) or an entry cannot be decoded."""


class CorruptEntryError(CodecError):
    """A stored entry is damaged or its signature does not verify; it is a miss and is removed."""


class UnsupportedEntryError(CodecError):
    """An entry in a format this cache is not configured to read (e.g. signed pickle without the secret)."""


class KeyStrategyError(ActionCacheError, ValueError):
    """A key cannot be computed from the arguments given."""


class HashError(ActionCacheError):
    """Content could not be hashed (missing file, unreadable URL, unknown algorithm)."""
