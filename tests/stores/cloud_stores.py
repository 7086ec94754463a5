"""Factories for the blob-sqlite and Firestore stores against the local emulators.

Each returns a fresh, empty store under a unique object path or collection, after
services.require(...) (skip locally, fail under CI=true). backends.py registers them.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import services

from actioncache.stores.base import CacheStore, open_store

BUCKET = "actioncache-tests"
AZURITE_CONNECTION_STRING = (
    # Azurite's documented development account; it only exists inside the local emulator.
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
    "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
    f"BlobEndpoint=http://127.0.0.1:{services.AZURITE_BLOB_PORT}/devstoreaccount1;"
)


def _host_port(endpoint: str) -> tuple[str, int]:
    parts = urlsplit(endpoint if "://" in endpoint else "tcp://" + endpoint)
    return parts.hostname or "127.0.0.1", int(parts.port or 80)


# protocol -> (service name, endpoint, module, extra, storage options)
BLOB_SERVICES: dict[str, tuple[str, str, str, str, dict[str, Any]]] = {
    "s3": ("moto_server (S3)", services.S3_ENDPOINT, "s3fs", "s3",
           {"endpoint_url": services.S3_ENDPOINT, "key": "testing", "secret": "testing"}),
    "gs": ("gcp-storage-emulator (GCS)", services.GCS_ENDPOINT, "gcsfs", "gcs",
           {"endpoint_url": services.GCS_ENDPOINT, "token": "anon", "project": "actioncache-tests"}),
    "az": ("Azurite (Azure Blob)", f"http://127.0.0.1:{services.AZURITE_BLOB_PORT}", "adlfs", "azure",
           {"connection_string": AZURITE_CONNECTION_STRING}),
}


@functools.cache
def _ensure_bucket(protocol: str) -> None:
    _, _, _, _, options = BLOB_SERVICES[protocol]
    if protocol == "s3":
        import s3fs

        fs: Any = s3fs.S3FileSystem(**options)
    elif protocol == "gs":
        from gcsfs.core import GCSFileSystem

        fs = GCSFileSystem(**options)
    else:
        from adlfs import AzureBlobFileSystem

        fs = AzureBlobFileSystem(**options)
    try:
        fs.mkdir(BUCKET)
    except Exception:
        pass


def require_blob(protocol: str) -> dict[str, Any]:
    """Skip/fail unless the emulator for ``protocol`` answers; return its storage options."""
    name, endpoint, module, extra, options = BLOB_SERVICES[protocol]
    services.require_module(module, extra)
    services.require(name, *_host_port(endpoint))
    _ensure_bucket(protocol)
    return dict(options)


def blob_url(protocol: str, tmp_path: Path, name: str) -> str:
    if protocol == "file":
        return f"blob-sqlite+file://{tmp_path}/{name}/cache.db"
    if protocol == "memory":
        return f"blob-sqlite+memory://{name}/cache.db"
    return f"blob-sqlite+{protocol}://{BUCKET}/{name}/cache.db"


def open_blob(url: str, **options: Any) -> CacheStore:
    protocol = urlsplit(url).scheme.partition("+")[2]
    storage_options = require_blob(protocol) if protocol in BLOB_SERVICES else {}
    return open_store(url, storage_options=storage_options, **options)


def require_firestore() -> None:
    services.require_module("google.cloud.firestore", "firestore")
    services.require("Firestore emulator", *_host_port(services.FIRESTORE_HOST))
    # The client library reads this when a Client is made; it selects an insecure local channel.
    os.environ.setdefault("FIRESTORE_EMULATOR_HOST", services.FIRESTORE_HOST)


def open_firestore(collection: str, **options: Any) -> CacheStore:
    require_firestore()
    return open_store(f"firestore://actioncache-tests/{collection}", **options)
