"""``storage.hash``: content hash of a file anywhere fsspec reaches.

Failures carry ``error_type``: ``validation_error`` (no path, unknown algorithm), ``file_error`` (cannot read it).
"""

from __future__ import annotations

from typing import Any, Mapping

from ...actions import ActionTable, Engine
from ...hashing import ALGORITHMS, storage_hash
from .failures import failure, typed


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def hash_action(state: Mapping[str, Any], path: str, algorithm: str = "sha256") -> dict[str, Any]:
        if not path or not isinstance(path, str):
            return failure("validation_error", f"storage.hash needs path: a file path or URI, not {path!r}",
                           path=path, algorithm=algorithm)
        if algorithm not in ALGORITHMS:
            return failure("validation_error", f"storage.hash algorithm: unknown {algorithm!r}; use one of "
                           f"{', '.join(ALGORITHMS)}", path=path, algorithm=algorithm)
        trust = getattr(engine, "trust", None)
        if trust is not None and not trust.trusted:
            path = str(trust.local_path(path, "storage.hash"))
        return typed(storage_hash(path, algorithm), "file_error")

    registry["storage.hash"] = hash_action
