"""The built-in actions every agent gets: cache, ratelimit, ltm, storage, file, command, http, llm.

Each module has the one hook every action module has, ``register_actions(registry, engine)``
(:mod:`actioncache.actions`); this package's calls them all.
"""

from __future__ import annotations

from ...actions import ActionTable, Engine
from . import cache, command, file, http, llm, ltm, ratelimit, storage

MODULES = (cache, ratelimit, ltm, storage, file, command, http, llm)


def register_actions(registry: ActionTable, engine: Engine) -> None:
    for module in MODULES:
        module.register_actions(registry, engine)
