"""``@cached``, kept importable from here: it lives under the facade (``actioncache.cache.cached``,
with its machinery in ``actioncache._memo``). Import it from the package root: ``from actioncache
import cached``."""

from __future__ import annotations

from .cache import cached

__all__ = ["cached"]
