"""Scratchpad errors. Each one carries a ``code`` the tool face returns to the LLM and a message
that says what went wrong and what to do next (chunk, delete, clean up, continue in context)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from ..errors import ActionCacheError, StoreError


class ScratchpadError(ActionCacheError):
    """Base class; ``code`` is the short machine name the tool answer carries, ``details`` the
    figures it adds beside the message (e.g. the bytes a refused write needed)."""

    code = "error"

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = dict(details or {})


class InvalidKeyError(ScratchpadError, ValueError):
    """A storage key that is not ``{sessionId}_{taskId}_{turnId}`` or is too long."""

    code = "invalid_key"


class InvalidArgumentError(ScratchpadError, ValueError):
    """Data that is not JSON, a missing description, custom metadata that is too big, a bad id."""

    code = "invalid_argument"


class ItemTooLargeError(ScratchpadError):
    """One item over the per-item limit (5 MB by default)."""

    code = "item_too_large"


class QuotaExceededError(ScratchpadError):
    """A write that would take the session past its quota (50 MB by default). ``details``:
    ``usedBytes`` (what the session holds, as usage reports it), ``neededBytes`` (what the write
    adds) and ``quotaBytes``; always ``usedBytes + neededBytes > quotaBytes``."""

    code = "quota_exceeded"


class ItemNotFoundError(ScratchpadError):
    """No such item in this session (items of other sessions are never visible)."""

    code = "not_found"


class CorruptItemError(ScratchpadError):
    """An item whose stored bytes do not decode; it can still be listed and deleted."""

    code = "corrupt_item"


class StoreUnavailableError(ScratchpadError):
    """The store behind the scratchpad cannot be reached or failed."""

    code = "store_unavailable"


class ScratchpadBusyError(ScratchpadError):
    """Another writer held the session lock for longer than the bounded wait."""

    code = "busy"


@contextmanager
def store_guard(what: str) -> Iterator[None]:
    """Turn any store failure into one error the LLM can act on: keep working in context."""
    try:
        yield
    except StoreError as exc:
        raise StoreUnavailableError(
            f"the scratchpad store is unavailable ({what} failed: {exc}); nothing was saved or changed. "
            "Continue the task in context without the scratchpad, or retry later."
        ) from exc
    except (OSError, ConnectionError, TimeoutError) as exc:
        raise StoreUnavailableError(
            f"the scratchpad store is unavailable ({what} failed: {type(exc).__name__}: {exc}); "
            "continue the task in context without the scratchpad, or retry later."
        ) from exc
