"""The types of actioncache's public API, for type checkers (mypy, pyright) and readers.

``CachedFunction`` is what ``@cached`` / ``@cache.cached`` return: the function's own signature
(parameters and return type, sync or async), plus ``cache_key``, ``invalidate``, ``refresh``,
``uncached`` and ``cache_name``. The ``*Response`` typed dicts are the shapes ``Cache.wrap``,
``get``, ``invalidate``, ``cleanup`` and ``stats`` return. Importing this module costs nothing at
run time beyond ``typing``.
"""

from __future__ import annotations

from typing import Any, Callable, Concatenate, NotRequired, ParamSpec, Protocol, TypedDict, TypeVar, overload

__all__ = ["CachedFunction", "CleanupResponse", "GetResponse", "HashResponse", "InvalidateResponse", "P", "R",
           "StatsReport", "WrapResponse"]

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
_S = TypeVar("_S")
_Q = ParamSpec("_Q")
_T = TypeVar("_T")


class InvalidateResponse(TypedDict):
    """``Cache.invalidate`` / ``f.invalidate()``: what was deleted."""

    success: bool
    deleted_count: int
    deleted_keys: list[str]
    error: NotRequired[str]


class CachedFunction(Protocol[P, R_co]):
    """A function memoized by ``@cached``: called as the function itself, plus its cache handles."""

    cache_name: str

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def cache_key(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """The key a call with these arguments reads and writes."""
        ...

    def invalidate(self, *args: Any, **kwargs: Any) -> InvalidateResponse:
        """Delete the entry of a call with these arguments; with none, every entry of this function."""
        ...

    def refresh(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        """Run the function now and overwrite its entry (the policy's store rule still applies)."""
        ...

    @property
    def uncached(self) -> Callable[P, R_co]:
        """The function itself, never cached."""
        ...

    # A cached method: through the class it takes the instance first; through an instance it is
    # bound, its handles too (``shop.price.invalidate("apple")``).
    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None, /) -> CachedFunction[P, R_co]: ...

    @overload
    def __get__(self: CachedFunction[Concatenate[_S, _Q], _T], instance: _S, owner: type[Any] | None = None, /
                ) -> CachedFunction[_Q, _T]: ...

    def __get__(self, instance: Any, owner: type[Any] | None = None, /) -> Any: ...


class WrapResponse(TypedDict):
    """``Cache.wrap`` / ``awrap``: the action's result and what the cache did."""

    success: bool
    _cache_hit: bool
    _cache_key: str | None
    result: NotRequired[Any]
    error: NotRequired[Any]
    _cache_created_at: NotRequired[str]
    _cache_error: NotRequired[str]
    _cache_bypass: NotRequired[str]
    _cache_stale: NotRequired[bool]


class GetResponse(TypedDict):
    """``Cache.get``: one entry, read without running anything."""

    success: bool
    found: bool
    value: Any
    expired: bool
    key: NotRequired[str]
    stale: NotRequired[bool]
    metadata: NotRequired[dict[str, Any] | None]
    removed: NotRequired[str]
    error: NotRequired[str]


class CleanupResponse(TypedDict):
    """``Cache.cleanup``: how many expired entries were deleted."""

    success: bool
    deleted_count: int
    error: NotRequired[str]


class HashResponse(TypedDict):
    """``storage_hash``: a content hash, or ``success: False`` with ``error`` (never raised)."""

    success: bool
    algorithm: str
    path: str
    hash: NotRequired[str]
    size_bytes: NotRequired[int]
    error: NotRequired[str]


class StatsReport(TypedDict, total=False):
    """``Cache.stats()``: totals across every process that used the store, and this process's own
    counts (``session``). Every counter of ``by_action`` buckets has the same names as the totals."""

    success: bool
    store: str
    entries: int
    size_bytes: int
    hits: int
    misses: int
    stores: int
    errors: int
    hit_rate: float
    time_saved_s: float
    by_action: dict[str, dict[str, float]]
    session: dict[str, float]
    error: str
