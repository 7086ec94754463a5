"""``storage.hash``: content hash of a file anywhere fsspec reaches (seed 000 AC-12)."""

from __future__ import annotations

from typing import Any, Mapping

from ...hashing import storage_hash


def register(registry: Any, engine: Any) -> None:
    def hash_action(state: Mapping[str, Any], path: str, algorithm: str = "sha256") -> dict[str, Any]:
        return storage_hash(path, algorithm)

    registry["storage.hash"] = hash_action
