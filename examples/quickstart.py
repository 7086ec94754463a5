"""The core in one file: run it twice and watch the second run come from the cache.

    python examples/quickstart.py            # uses ./quickstart-cache.db
"""

from __future__ import annotations

import time
from pathlib import Path

from actioncache import Cache

HERE = Path(__file__).resolve().parent
cache = Cache(f"sqlite:///{Path.cwd() / 'quickstart-cache.db'}")


def slow_word_count(path: str) -> dict:
    """Stands in for an expensive extraction (an LLM, an OCR service...)."""
    time.sleep(1.0)
    text = Path(path).read_text()
    return {"words": len(text.split()), "lines": text.count("\n")}


@cache.cached(ttl_hours=1)
def slow_square(x: int) -> int:
    time.sleep(0.5)
    return x * x


if __name__ == "__main__":
    doc = HERE / "data" / "report.txt"
    started = time.perf_counter()
    r = cache.wrap("word_count", slow_word_count, {"path": str(doc)},
                   key_strategy="file_content", key_source="path")
    print(f"word_count: {r['result']}  hit={r['_cache_hit']}  ({time.perf_counter() - started:.2f}s)")
    started = time.perf_counter()
    print(f"slow_square(12) = {slow_square(12)}  ({time.perf_counter() - started:.2f}s)")
    stats = cache.stats()
    print(f"hits={stats['hits']} misses={stats['misses']} time saved={stats['time_saved_s']}s")
