"""A compressed entry is bounded before its output is allocated (issue 27, item 5).

A 96 KB zstd frame can stand for gigabytes. Planted in a shared store, it must be a corrupt entry
(a miss, removed), and the reader's peak memory must stay small: measured here as the peak RSS of a
real subprocess that serves the planted entry through the public API.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

zstandard = pytest.importorskip("zstandard")

READER = """
import json, sys
from actioncache import Cache, open_store
from actioncache.stores.base import Entry

def peak_kib():
    # This process's own peak RSS (VmHWM, per address space: getrusage's ru_maxrss would carry the
    # parent's peak across fork and exec, and hide the growth when the test process is bigger).
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

url, path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
frame = open(path, "rb").read()
cache = Cache(url)
calls = []
key = cache.wrap("bomb.read", lambda x: calls.append(x) or "computed", {"x": 1})["_cache_key"]
before = peak_kib()
store = open_store(url)
entry = store.get(key)
store.put(Entry(key, frame, dict(entry.metadata), entry.created_at, entry.expires_at))  # the planted bomb
out = cache.wrap("bomb.read", lambda x: calls.append(x) or "recomputed", {"x": 1})
peak = peak_kib()
print(json.dumps({"result": out["result"], "hit": out["_cache_hit"], "corrupt": cache.stats().get("corrupt", 0),
                  "grew_kib": peak - before}))
"""


def _bomb(kind: str) -> bytes:
    size = 3 * 1024**3  # 3 GB of one byte: about 96 KB compressed
    if kind == "zstd-declared":  # as compress() writes it: the frame says how big it is
        cctx = zstandard.ZstdCompressor(level=3, write_content_size=True)
        chunk = b"0" * (64 * 1024**2)
        writer = cctx.compressobj(size=size)
        body = b"".join(writer.compress(chunk) for _ in range(size // len(chunk))) + writer.flush()
        return b"z" + body
    if kind == "zstd-undeclared":  # a planted frame that does not say
        cctx = zstandard.ZstdCompressor(level=3, write_content_size=False)
        chunk = b"0" * (64 * 1024**2)
        writer = cctx.compressobj()
        body = b"".join(writer.compress(chunk) for _ in range(size // len(chunk))) + writer.flush()
        return b"z" + body
    import zlib

    deflate = zlib.compressobj(9)
    chunk = b"0" * (64 * 1024**2)
    body = b"".join(deflate.compress(chunk) for _ in range(2)) + deflate.flush()  # zlib tops out near 1032:1
    return b"x" + body


@pytest.mark.parametrize("kind", ["zstd-declared", "zstd-undeclared", "zlib"])
def test_a_planted_compression_bomb_is_a_miss_and_the_reader_stays_small(kind, tmp_path, src_env):
    frame = _bomb(kind)
    assert len(frame) < 200 * 1024
    path = tmp_path / "bomb.bin"
    path.write_bytes(frame)
    url = f"sqlite:///{tmp_path}/cache.db"
    done = subprocess.run([sys.executable, "-c", READER, url, str(path), kind], env=src_env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["result"] == "recomputed" and said["hit"] is False
    # A zstd frame is refused at its header (a declared size past the limit, or none declared:
    # compress() always declares it): nothing is inflated. zlib declares no size: it inflates up to
    # the reader's own limit, its max_value_bytes (64 MiB by default), not the 256 MiB cap.
    limit_kib = 16 * 1024 if kind.startswith("zstd") else (64 + 16) * 1024
    assert said["grew_kib"] < limit_kib, f"the reader grew by {said['grew_kib'] / 1024:.0f} MiB decoding {kind}"
    print(f"{kind}: the reader grew by {said['grew_kib'] / 1024:.1f} MiB")


WRITER_AND_READERS = """
import json, sys
from actioncache import Cache

url = sys.argv[1]
value = "0" * (3 * 1024**2)  # 3 MiB encoded, a few KiB compressed
big = Cache(url, max_value_bytes=4 * 1024**2)
stored = big.wrap("big.value", lambda x: value, {"x": 1})
small = Cache(url, max_value_bytes=1024**2)
calls = []
read_small = small.wrap("big.value", lambda x: calls.append(x) or value, {"x": 1})
read_big = Cache(url, max_value_bytes=4 * 1024**2).wrap("big.value", lambda x: "recomputed", {"x": 1})
too_big = small.wrap("small.value", lambda x: value, {"x": 1})
again = small.wrap("small.value", lambda x: "recomputed", {"x": 1})
print(json.dumps({"small_hit": read_small["_cache_hit"], "small_computed": len(calls),
                  "big_hit": read_big["_cache_hit"], "big_result_ok": read_big["result"] == value,
                  "small_cached": again["_cache_hit"]}))
"""


def test_the_decode_limit_is_the_readers_max_value_bytes(tmp_path, src_env):
    """max_value_bytes bounds a value's encoding before compression, so a reader never inflates
    past the largest value it could have stored itself. A value a cache with a larger
    max_value_bytes stored is a miss for a smaller reader, left in place for the larger one."""
    url = f"sqlite:///{tmp_path}/cache.db"
    done = subprocess.run([sys.executable, "-c", WRITER_AND_READERS, url], env=src_env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said == {"small_hit": False, "small_computed": 1, "big_hit": True, "big_result_ok": True,
                    "small_cached": False}
