"""The built-in actions every agent gets: cache, ratelimit, ltm, storage, file, command, http, llm.

Each module exposes ``register(registry, engine)``; this package's ``register_actions`` is the
entry point the registry loads, the same shape as an imported module's or a face's.
"""

from __future__ import annotations

from typing import Any

from . import cache, command, file, http, llm, ltm, ratelimit, storage

MODULES = (cache, ratelimit, ltm, storage, file, command, http, llm)


def register_actions(registry: Any, engine: Any) -> None:
    for module in MODULES:
        module.register(registry, engine)
