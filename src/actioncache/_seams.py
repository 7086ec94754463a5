"""The two seams through which the core reaches the layers above it without importing them.

The package root (``actioncache/__init__.py``) fills them when ``actioncache`` is imported:

* ``policy``: the built-in policy as a ``decision.PolicyProvider`` (``attach(cache)``,
  ``block(cache, **fields)``); scoped calls on a cache without its own hook consult it.
* ``decorator``: ``actioncache.cached``, what ``Cache.cached`` delegates to.

A leaf with no imports at all: importing it costs nothing at start-up.
"""

policy = None
decorator = None
