"""The error a traced run raises when its read-set cannot vouch for it (``readset.build``).

Its own module so that ``runs.readset``, which the exec hit path imports to check a read-set, does
not import ``actioncache.errors``: creating its exception classes costs a hit about 2.4 M
instructions (6% of starting Python), and a hit never raises it.
"""

from __future__ import annotations

from ..errors import ActionCacheError


class Unrecordable(ActionCacheError):
    """The run cannot be cached: a path it read was changed by the run itself or during it."""
