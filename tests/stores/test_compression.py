"""Compression of large values, on every backend: round trips, entries written before compression
(or with it turned off) still read, a reader needs no setting, and a bad frame is a miss."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache import Cache
from actioncache.codec import make_codec

BIG = {"rows": [{"id": i, "text": "the same words again " * 4} for i in range(2000)]}


def _stored(cache: Cache, key: str) -> bytes:
    return bytes(cache.store.get(key).value)


def test_large_values_are_stored_compressed_and_read_back(store):
    cache = Cache(store=store, cleanup_probability=0.0)
    first = cache.wrap("big", lambda: BIG)
    raw = _stored(cache, first["_cache_key"])
    assert raw[:1] in (b"z", b"x") and len(raw) < len(make_codec(compress_threshold_bytes=None).encode(BIG)) // 5
    again = cache.wrap("big", lambda: {"fresh": True})
    assert again["_cache_hit"] is True and again["result"] == BIG
    small = cache.wrap("small", lambda: {"a": 1})
    assert _stored(cache, small["_cache_key"])[:1] == b"j"  # below the threshold: plain JSON


def test_old_and_new_entries_mix(store):
    old = Cache(store=store, cleanup_probability=0.0, compress_threshold_bytes=None)  # as before compression
    new = Cache(store=store, cleanup_probability=0.0, compress_threshold_bytes=1024)
    k_old = old.wrap("a", lambda: BIG)["_cache_key"]
    k_new = new.wrap("b", lambda: BIG)["_cache_key"]
    assert _stored(old, k_old)[:1] == b"j" and _stored(new, k_new)[:1] in (b"z", b"x")
    for reader in (old, new):  # either setting reads both: the format byte says how it was written
        assert reader.wrap("a", lambda: None)["result"] == BIG
        assert reader.wrap("b", lambda: None)["result"] == BIG


def test_a_corrupt_compressed_entry_is_a_miss_and_removed(store):
    cache = Cache(store=store, cleanup_probability=0.0)
    key = cache.wrap("big", lambda: BIG)["_cache_key"]
    entry = store.get(key)
    store.put(entry.replace(value=bytes(entry.value)[:1] + b"\x00garbage frame"))
    r = cache.wrap("big", lambda: {"fresh": 1})
    assert r["_cache_hit"] is False and r["result"] == {"fresh": 1}
    assert cache.wrap("big", lambda: {"fresh": 2})["result"] == {"fresh": 1}  # the fresh value replaced it


def _damaged_values() -> dict[str, bytes]:
    """Compressed values another writer, a torn write or a truncated copy could leave; each one
    decompressed without care decodes to a value (a number whose prefix is a number, or a value
    followed by whitespace), so serving it would be a wrong hit."""
    import random
    import zlib

    import services

    services.require_module("zstandard", "compression")
    import zstandard

    rng = random.Random(0)
    number = b"j" + "".join(rng.choice("123456789") for _ in range(3000)).encode()
    padded = b'j{"a": 1}' + "".join(rng.choice(" \t\n\r") for _ in range(400_000)).encode()  # 128 KiB blocks
    small = b'j{"a": 1}'
    x = b"x" + zlib.compress(number)
    z = b"z" + zstandard.ZstdCompressor().compress(padded)
    return {
        "zlib cut short": x[:-300],
        "zlib without its checksum": x[:-4],
        "zlib with bytes after it": b"x" + zlib.compress(small) + b"GARBAGE",
        "zlib of a compressed value": b"x" + zlib.compress(b"x" + zlib.compress(small)),
        "zstd cut short": z[:-5000],
        "zstd with bytes after it": b"z" + zstandard.ZstdCompressor().compress(small) + b" ",
        "zstd of a compressed value": b"z" + zstandard.ZstdCompressor().compress(b"x" + zlib.compress(small)),
    }


def test_a_cut_trailed_or_nested_compressed_value_is_a_miss_and_removed(store):
    cache = Cache(store=store, cleanup_probability=0.0)
    key = cache.wrap("big", lambda: BIG)["_cache_key"]
    entry = store.get(key)
    damaged = _damaged_values()
    for name, value in damaged.items():
        store.put(entry.replace(value=value))
        r = cache.wrap("big", lambda: {"fresh": name})
        assert r["_cache_hit"] is False and r["result"] == {"fresh": name}, name
        assert "corrupt cache entry removed" in r.get("_cache_error", ""), name
        assert cache.wrap("big", lambda: None)["result"] == {"fresh": name}, name  # removed, then replaced
    assert cache.stats()["session"]["corrupt"] == len(damaged)


@settings(max_examples=60, deadline=None)
@given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                          lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(), inner, max_size=6)),
       threshold=st.integers(min_value=0, max_value=64))
def test_round_trip_at_any_threshold(value, threshold):
    codec = make_codec(compress_threshold_bytes=threshold)
    assert codec.decode(codec.encode(value)) == value


def test_zlib_when_zstandard_is_missing(tmp_path, src_env):
    """A machine without the zstandard package writes zlib; one with it reads zlib entries too."""
    url = f"sqlite:///{tmp_path}/c.db"
    script = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def no_zstd(name, *a, **k):\n"
        "    if name == 'zstandard': raise ImportError('blocked for the test')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = no_zstd\n"
        "from actioncache import Cache\n"
        f"c = Cache({url!r}, cleanup_probability=0.0)\n"
        "r = c.wrap('big', lambda: {'t': 'abc' * 100000})\n"
        "print(bytes(c.store.get(r['_cache_key']).value)[:1].decode())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], env=src_env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "x"
    reader = Cache(url, cleanup_probability=0.0)
    assert reader.wrap("big", lambda: None)["result"] == {"t": "abc" * 100000}


def test_bad_threshold_is_refused():
    import pytest

    for bad in (-1, 1.5, "64k", True):
        with pytest.raises(ValueError, match="compress_threshold_bytes"):
            Cache("memory://", compress_threshold_bytes=bad)
