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
import json, resource, sys
from actioncache import Cache, open_store
from actioncache.stores.base import Entry

url, path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
frame = open(path, "rb").read()
cache = Cache(url)
calls = []
key = cache.wrap("bomb.read", lambda x: calls.append(x) or "computed", {"x": 1})["_cache_key"]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
store = open_store(url)
entry = store.get(key)
store.put(Entry(key, frame, dict(entry.metadata), entry.created_at, entry.expires_at))  # the planted bomb
out = cache.wrap("bomb.read", lambda x: calls.append(x) or "recomputed", {"x": 1})
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
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
    assert said["result"] == "recomputed" and said["hit"] is False and said["corrupt"] == 1
    # The decode limit is 256 MiB; the old limit (2 GiB) let this frame grow the reader by over 2 GB.
    limit_kib = 600 * 1024
    assert said["grew_kib"] < limit_kib, f"the reader grew by {said['grew_kib'] / 1024:.0f} MiB decoding {kind}"
