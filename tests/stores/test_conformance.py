"""The one conformance suite (actioncache.testing.StoreConformance): every backend in
backends.BACKENDS must pass all of it; the planted-data tests write each backend's own garbage."""

from __future__ import annotations

from actioncache.testing import StoreConformance

from .planting import plant


class TestStoreConformance(StoreConformance):
    def plant(self, store, key, kind):
        return plant(store, key, kind)
