"""One fork registry for the stores whose connections must never cross ``fork``.

A store registers itself once; in a forked child, every registered store's ``after_fork()`` runs
before any user code, so the child starts over with its own connections and leaves the parent's
alone (closing them in the child could disturb the parent's locks).
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol

__all__ = ["ForkAware", "track_for_fork"]


class ForkAware(Protocol):
    def after_fork(self) -> None:
        """Drop every connection inherited from the parent (without closing it)."""


_tracked: weakref.WeakSet[ForkAware] = weakref.WeakSet()


def track_for_fork(store: ForkAware) -> None:
    _tracked.add(store)


def _reset_after_fork() -> None:
    for store in list(_tracked):
        store.after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
