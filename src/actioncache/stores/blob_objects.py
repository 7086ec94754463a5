"""One object in an object store, read with its version and written only if that version still holds.

``BlobSQLiteStore`` needs exactly three things from S3, GCS, Azure Blob, a local directory or
fsspec's in-process memory filesystem: the current version of one object, its bytes together
with the version they belong to, and a write that fails when someone else wrote first. Each
class here maps those onto the service's own compare-and-swap:

* S3: ``PutObject`` with ``If-Match: <ETag>`` (``If-None-Match: *`` to create), through s3fs's
  aiobotocore client.
* GCS: JSON-API upload with ``ifGenerationMatch=<generation>`` (``0`` to create), through gcsfs's
  authenticated session. The plain ``gcsfs.core.GCSFileSystem`` is used on purpose: the default
  class of gcsfs 2026.x probes every bucket's type over gRPC (``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT``)
  and stalls for about a minute against an emulator.
* Azure: ``upload_blob(etag=..., match_condition=IfNotModified)`` (``overwrite=False`` to create),
  through adlfs's ``BlobServiceClient``.
* ``file``: an ``fcntl`` lock beside the file; the version is (inode, size, mtime); the new
  content goes to a temporary file that is renamed over the old one (atomic on POSIX).
* ``memory``: a process-wide lock; the version is a digest of the content.

Credentials and endpoints come from the usual fsspec storage options and environment variables
(``AWS_*``, ``GOOGLE_APPLICATION_CREDENTIALS``/``STORAGE_EMULATOR_HOST``, ``AZURE_STORAGE_*``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol, TypeVar
from urllib.parse import quote

from ..errors import ActionCacheError, MissingStoreExtraError, StoreURLError
from ..extras import EXTRA_FOR_PROTOCOL, missing

T = TypeVar("T")


class WriteConflict(ActionCacheError):
    """Someone else wrote the object since the version the writer started from."""


class RemoteObject(Protocol):
    """A versioned object. ``expected=None`` in :meth:`write` means "only if it does not exist"."""

    location: str

    def version(self) -> str | None: ...

    def read(self) -> tuple[bytes, str] | None: ...

    def write(self, data: bytes, expected: str | None) -> str: ...


def _split_bucket(path: str, what: str) -> tuple[str, str]:
    bucket, _, key = path.strip("/").partition("/")
    if not bucket or not key:
        raise StoreURLError(f"{what} path {path!r} needs a bucket and an object name, e.g. bucket/dir/cache.db")
    return bucket, key


# How long one transfer of the database object may take before it is given up (a hung object
# store must not hold a sync, or the first open, for ever); docs/backends.md, "Timeouts".
REMOTE_TIMEOUT_S = 10.0


class _AsyncFsspecObject:
    """Runs coroutines of an async fsspec filesystem on that filesystem's own event loop, each
    within ``REMOTE_TIMEOUT_S`` (fsspec raises ``FSTimeoutError``, a ``TimeoutError``)."""

    fs: Any
    timeout_s: float = REMOTE_TIMEOUT_S

    def _run(self, func: Callable[[], Awaitable[T]]) -> T:
        from fsspec.asyn import sync

        result: T = sync(self.fs.loop, func, timeout=self.timeout_s)
        return result


# --- S3 --------------------------------------------------------------------------------------


class S3Object(_AsyncFsspecObject):
    def __init__(self, path: str, storage_options: dict[str, Any]) -> None:
        import s3fs

        self.bucket, self.key = _split_bucket(path, "S3")
        self.location = f"s3://{self.bucket}/{self.key}"
        self.fs = s3fs.S3FileSystem(**storage_options)

    @staticmethod
    def _is_conflict(exc: BaseException | None) -> bool:
        # s3fs turns botocore's ClientError into an OSError; the S3 error code stays on the cause.
        while exc is not None:
            response = getattr(exc, "response", None) or {}
            code = str(response.get("Error", {}).get("Code", ""))
            if code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                return True
            exc = exc.__cause__ or exc.__context__
        return False

    def version(self) -> str | None:
        async def head() -> str | None:
            try:
                out = await self.fs._call_s3("head_object", Bucket=self.bucket, Key=self.key)
            except FileNotFoundError:
                return None
            return str(out["ETag"])

        return self._run(head)

    def read(self) -> tuple[bytes, str] | None:
        async def get() -> tuple[bytes, str] | None:
            try:
                out = await self.fs._call_s3("get_object", Bucket=self.bucket, Key=self.key)
            except FileNotFoundError:
                return None
            async with out["Body"] as body:
                data = await body.read()
            return data, str(out["ETag"])

        return self._run(get)

    def write(self, data: bytes, expected: str | None) -> str:
        condition = {"IfNoneMatch": "*"} if expected is None else {"IfMatch": expected}

        async def put() -> str:
            out = await self.fs._call_s3("put_object", Bucket=self.bucket, Key=self.key, Body=data, **condition)
            return str(out["ETag"])

        try:
            return self._run(put)
        except OSError as exc:
            if self._is_conflict(exc):
                raise WriteConflict(self.location) from exc
            raise


# --- GCS -------------------------------------------------------------------------------------


class GCSObject(_AsyncFsspecObject):
    def __init__(self, path: str, storage_options: dict[str, Any]) -> None:
        from gcsfs.core import GCSFileSystem

        self.bucket, self.key = _split_bucket(path, "GCS")
        self.location = f"gs://{self.bucket}/{self.key}"
        self.fs = GCSFileSystem(**storage_options)

    async def _meta(self) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] | None = await self.fs._call("GET", "b/{}/o/{}", self.bucket, self.key, json_out=True)
            return found
        except FileNotFoundError:
            return None

    def version(self) -> str | None:
        meta = self._run(self._meta)
        return None if meta is None else str(meta["generation"])

    def read(self) -> tuple[bytes, str] | None:
        async def get() -> tuple[bytes, str] | None:
            meta = await self._meta()
            if meta is None:
                return None
            generation = str(meta["generation"])
            # Asking for that generation makes bytes and version agree on real GCS.
            try:
                headers, data = await self.fs._call(
                    "GET", "b/{}/o/{}", self.bucket, self.key, alt="media", generation=generation
                )
            except FileNotFoundError:
                return None
            served = headers.get("x-goog-generation")
            return data, str(served or generation)

        return self._run(get)

    def write(self, data: bytes, expected: str | None) -> str:
        async def upload() -> str:
            url = f"{self.fs._location}/upload/storage/v1/b/{quote(self.bucket, safe='')}/o"
            out = await self.fs._call(
                "POST",
                url,
                uploadType="media",
                name=self.key,
                ifGenerationMatch="0" if expected is None else expected,
                headers={"Content-Type": "application/octet-stream"},
                data=data,
                json_out=True,
            )
            return str(out["generation"])

        try:
            return self._run(upload)
        except FileExistsError as exc:  # gcsfs's translation of 412 Precondition Failed
            raise WriteConflict(self.location) from exc


# --- Azure Blob ------------------------------------------------------------------------------


class AzureObject(_AsyncFsspecObject):
    def __init__(self, path: str, storage_options: dict[str, Any]) -> None:
        from adlfs import AzureBlobFileSystem

        self.container, self.blob = _split_bucket(path, "Azure")
        self.location = f"az://{self.container}/{self.blob}"
        self.fs = AzureBlobFileSystem(**storage_options)

    def _client(self) -> Any:
        return self.fs.service_client.get_blob_client(self.container, self.blob)

    def version(self) -> str | None:
        from azure.core.exceptions import ResourceNotFoundError

        async def head() -> str | None:
            try:
                props = await self._client().get_blob_properties()
            except ResourceNotFoundError:
                return None
            return str(props.etag)

        return self._run(head)

    def read(self) -> tuple[bytes, str] | None:
        from azure.core.exceptions import ResourceNotFoundError

        async def get() -> tuple[bytes, str] | None:
            try:
                downloader = await self._client().download_blob()
                data = await downloader.readall()
            except ResourceNotFoundError:
                return None
            return data, str(downloader.properties.etag)

        return self._run(get)

    def write(self, data: bytes, expected: str | None) -> str:
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceExistsError, ResourceModifiedError

        async def upload() -> str:
            client = self._client()
            if expected is None:
                out = await client.upload_blob(data, overwrite=False)
            else:
                out = await client.upload_blob(
                    data, overwrite=True, etag=expected, match_condition=MatchConditions.IfNotModified
                )
            return str(out["etag"])

        try:
            return self._run(upload)
        except (ResourceExistsError, ResourceModifiedError) as exc:
            raise WriteConflict(self.location) from exc


# --- local file ------------------------------------------------------------------------------


class LocalFileObject:
    def __init__(self, path: str) -> None:
        if not path.startswith("/"):
            raise StoreURLError(f"blob-sqlite+file needs an absolute path (blob-sqlite+file:///abs/cache.db), not {path!r}")
        self.path = Path(path)
        self.location = f"file://{self.path}"
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    @staticmethod
    def _version_of(st: os.stat_result) -> str:
        return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"

    def version(self) -> str | None:
        try:
            return self._version_of(self.path.stat())
        except FileNotFoundError:
            return None

    def read(self) -> tuple[bytes, str] | None:
        try:
            with open(self.path, "rb") as fh:  # the replaced-by-rename file stays whole while open
                version = self._version_of(os.fstat(fh.fileno()))
                return fh.read(), version
        except FileNotFoundError:
            return None

    def write(self, data: bytes, expected: str | None) -> str:
        import fcntl  # POSIX only; imported here so the module loads everywhere

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            if self.version() != expected:
                raise WriteConflict(self.location)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            version = self.version()
            assert version is not None
            return version


# --- fsspec memory ---------------------------------------------------------------------------

_MEMORY_LOCK = threading.Lock()


class MemoryObject:
    """An object in fsspec's process-wide ``MemoryFileSystem`` (tests, notebooks, one process)."""

    def __init__(self, path: str) -> None:
        import fsspec

        self.fs = fsspec.filesystem("memory")
        self.path = "/" + path.strip("/")
        self.location = f"memory://{self.path}"

    def _current(self) -> bytes | None:
        try:
            data: bytes | None = self.fs.cat_file(self.path)
            return data
        except FileNotFoundError:
            return None

    @staticmethod
    def _digest(data: bytes) -> str:
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    def version(self) -> str | None:
        with _MEMORY_LOCK:
            data = self._current()
        return None if data is None else self._digest(data)

    def read(self) -> tuple[bytes, str] | None:
        with _MEMORY_LOCK:
            data = self._current()
        return None if data is None else (data, self._digest(data))

    def write(self, data: bytes, expected: str | None) -> str:
        with _MEMORY_LOCK:
            current = self._current()
            if (None if current is None else self._digest(current)) != expected:
                raise WriteConflict(self.location)
            self.fs.pipe_file(self.path, bytes(data))
        return self._digest(data)


# --- factory ---------------------------------------------------------------------------------

_PROTOCOLS: dict[str, type[_AsyncFsspecObject]] = {
    "s3": S3Object,
    "s3a": S3Object,
    "gs": GCSObject,
    "gcs": GCSObject,
    "az": AzureObject,
    "abfs": AzureObject,
    "abfss": AzureObject,
}


def open_remote_object(protocol: str, path: str, storage_options: dict[str, Any]) -> RemoteObject:
    """The versioned object for ``protocol://path`` (``path`` without the protocol)."""
    protocol = protocol.lower()
    if protocol == "file":
        return LocalFileObject(path)
    if protocol == "memory":
        return MemoryObject(path)
    cls = _PROTOCOLS.get(protocol)
    if cls is None:
        known = ", ".join(sorted({*_PROTOCOLS, "file", "memory"}))
        raise StoreURLError(
            f"blob-sqlite does not support {protocol!r}: it needs an object store with conditional writes; "
            f"use one of {known}"
        )
    try:
        remote: RemoteObject = cls(path, storage_options)  # type: ignore[call-arg,assignment]  # each class there is one
        return remote
    except ImportError as exc:
        raise missing(f"blob-sqlite+{protocol}", EXTRA_FOR_PROTOCOL[protocol], exc, MissingStoreExtraError) from exc
