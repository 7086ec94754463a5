"""storage_hash (AC-12) and the sha256 helper behind the Jinja filter (AC-13)."""

from __future__ import annotations

import hashlib
import tracemalloc

import fsspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache import sha256_hex, storage_hash


@pytest.mark.parametrize("algorithm", ["sha256", "md5", "blake2b"])
def test_local_file_every_algorithm(tmp_path, algorithm):
    path = tmp_path / "doc.bin"
    data = bytes(range(256)) * 9000  # 2.3 MB: spans three 1 MiB chunks
    path.write_bytes(data)
    r = storage_hash(str(path), algorithm)
    assert r == {"success": True, "hash": hashlib.new(algorithm, data).hexdigest(), "algorithm": algorithm,
                 "size_bytes": len(data), "path": str(path)}
    assert storage_hash("file://" + str(path), algorithm)["hash"] == r["hash"]


def test_fsspec_url(tmp_path):
    with fsspec.open("memory://bucket/x.txt", "wb") as f:
        f.write(b"hello")
    r = storage_hash("memory://bucket/x.txt")
    assert r["success"] and r["hash"] == hashlib.sha256(b"hello").hexdigest() and r["size_bytes"] == 5


def test_failures_are_reported_not_raised(tmp_path):
    r = storage_hash(str(tmp_path / "missing"))
    assert r["success"] is False and "no such file" in r["error"]
    r = storage_hash(str(tmp_path))
    assert r["success"] is False and "directory" in r["error"]
    r = storage_hash(str(tmp_path / "missing"), "crc32")
    assert r["success"] is False and "sha256, md5, blake2b" in r["error"]
    r = storage_hash("nosuchproto://x/y")
    assert r["success"] is False


def test_constant_memory(tmp_path):
    path = tmp_path / "big.bin"
    with open(path, "wb") as f:
        for _ in range(48):
            f.write(b"\xab" * (1 << 20))
    tracemalloc.start()
    r = storage_hash(str(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert r["size_bytes"] == 48 << 20
    assert peak < 4 << 20  # one 1 MiB buffer, not the 48 MiB file


@given(st.text())
def test_sha256_helper_on_text_is_utf8(text):
    assert sha256_hex(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_sha256_helper_on_bytes_and_structures():
    assert sha256_hex(b"\x00") == hashlib.sha256(b"\x00").hexdigest()
    assert sha256_hex({"b": 1, "a": 2}) == sha256_hex({"a": 2, "b": 1}) == hashlib.sha256(b'{"a":2,"b":1}').hexdigest()
