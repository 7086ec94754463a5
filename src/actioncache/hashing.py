"""Content hashes of files anywhere fsspec reaches, in constant memory.

``storage_hash`` reads in 1 MiB chunks into one reused buffer, so a 1 GB file costs 1 MiB of
memory and runs at the hash function's own speed (bench/ compares it with ``sha256sum``).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from .errors import HashError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .types import HashResponse

ALGORITHMS = ("sha256", "md5", "blake2b")
CHUNK_BYTES = 1 << 20

__all__ = ["ALGORITHMS", "storage_hash", "content_sha256"]


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local_path(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def _new_hasher(algorithm: str) -> Any:
    if algorithm not in ALGORITHMS:
        raise HashError(f"unknown hash algorithm {algorithm!r}; use one of {', '.join(ALGORITHMS)}")
    return hashlib.new(algorithm)


def _hash_stream(stream: Any, hasher: Any) -> int:
    buffer = bytearray(CHUNK_BYTES)
    view = memoryview(buffer)
    size = 0
    readinto = getattr(stream, "readinto", None)
    if readinto is not None:
        while True:
            n = readinto(view)
            if not n:
                break
            hasher.update(view[:n])
            size += n
    else:
        while True:
            chunk = stream.read(CHUNK_BYTES)
            if not chunk:
                break
            hasher.update(chunk)
            size += len(chunk)
    return size


def hash_file(path: str | os.PathLike[str], algorithm: str = "sha256", **storage_options: Any) -> tuple[str, int]:
    """(hex digest, size in bytes) of the content at ``path``; raises :class:`HashError`."""
    hasher = _new_hasher(algorithm)
    path = os.fspath(path)
    try:
        if _is_local(path):
            with open(_local_path(path), "rb", buffering=0) as stream:
                size = _hash_stream(stream, hasher)
        else:
            import fsspec

            with fsspec.open(path, "rb", **storage_options) as stream:
                size = _hash_stream(stream, hasher)
    except HashError:
        raise
    except FileNotFoundError as exc:
        raise HashError(f"cannot hash {path!r}: no such file") from exc
    except IsADirectoryError as exc:
        raise HashError(f"cannot hash {path!r}: it is a directory, not a file") from exc
    except ImportError as exc:
        from .extras import EXTRA_FOR_PROTOCOL, missing

        protocol = path.split("://", 1)[0].lower()
        extra = EXTRA_FOR_PROTOCOL.get(protocol)
        if extra is None:  # a protocol no extra covers: fsspec's own advice names the package
            raise HashError(f"cannot hash {path!r}: {exc}") from exc
        raise HashError(f"cannot hash {path!r}: {missing(f'reading {protocol}://', extra, exc)}") from exc
    except Exception as exc:
        raise HashError(f"cannot hash {path!r}: {type(exc).__name__}: {exc}") from exc
    return hasher.hexdigest(), size


def content_sha256(path: str) -> str:
    return hash_file(path, "sha256")[0]


def storage_hash(path: str | os.PathLike[str], algorithm: str = "sha256", **storage_options: Any) -> HashResponse:
    """Hash a file's content from any URI (local, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).

    Returns ``{"success", "hash", "algorithm", "size_bytes", "path"}``, or ``success: False`` with
    ``error``: a hash failure is reported, never raised, so callers can go on without caching.
    """
    path_text = os.fspath(path)
    try:
        digest, size = hash_file(path_text, algorithm, **storage_options)
    except HashError as exc:
        return {"success": False, "error": str(exc), "algorithm": algorithm, "path": path_text}
    return {"success": True, "hash": digest, "algorithm": algorithm, "size_bytes": size, "path": path_text}
