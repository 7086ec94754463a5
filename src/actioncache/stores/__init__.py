"""Backends behind one protocol; ``open_store(url)`` picks one by URL scheme, importing it lazily."""

from .base import CacheStore, Entry, escape_glob, open_store, register_store, registered_schemes

__all__ = ["CacheStore", "Entry", "escape_glob", "open_store", "register_store", "registered_schemes"]
