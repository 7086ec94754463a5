"""Hits against their floors, in one run: each actioncache hit beside the cheapest way to read the
same bytes from the same place, and beside its peer.

    python bench/bench_hit_floor.py            # ~1 minute; Redis and PostgreSQL on 127.0.0.1
    python bench/bench_hit_floor.py --quick    # fewer rounds

| actioncache hit | floor | peer |
|---|---|---|
| `@cached` on sqlite:// | one indexed `SELECT value FROM entries WHERE key = ?` (sqlite3, same file) | diskcache `memoize` |
| `@cached` on memory:// | — | cachetools `@cached` (a dict lookup behind a key function) |
| `@cached` on redis:// | one raw `GET` of a bytes value (redis-py, same server) | — |
| `@cached` on postgresql:// | one raw `SELECT value ... WHERE key = %s` (psycopg `conn.execute`, prepared; same server); also through a kept binary cursor | — |

Each group (a store's hit with its floor and peer) runs its own interleaved rounds (each round
times every candidate of the group once, in a rotating order), groups one after another in the
same run. The report gives the median over rounds of the per-call time and the ratio of the
medians (held against the target), and beside it the median of the per-round ratios, so a burst
of load from other work on this 2-core machine lands on both sides of a ratio alike. Writes
bench/results/hit_floor.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from actioncache import Cache  # noqa: E402

VALUE = {"answer": 42, "text": "a typical small JSON result", "items": [1, 2, 3]}
REDIS_URL = "redis://127.0.0.1:6379/15"
POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def body(x: int) -> dict[str, Any]:
    return dict(VALUE, x=x)


def per_call_us(fn: Callable[[], Any], number: int) -> float:
    started = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - started) / number * 1e6


def sqlite_group(tmp: Path) -> dict[str, Callable[[], Any]]:
    import sqlite3

    import diskcache

    cache = Cache(f"sqlite:///{tmp}/hit.db", cleanup_probability=0)
    hit = cache.cached(name="hit")(body)
    hit(1)
    key = hit.cache_key(1)
    raw = sqlite3.connect(f"{tmp}/hit.db", isolation_level=None)
    select = "SELECT value FROM entries WHERE key = ?"

    def floor() -> Any:
        return raw.execute(select, (key,)).fetchone()[0]

    dc = diskcache.Cache(str(tmp / "diskcache"))
    peer = dc.memoize()(body)
    peer(1)
    return {"actioncache sqlite hit": lambda: hit(1), "raw indexed SELECT": floor, "diskcache memoize": lambda: peer(1)}


def memory_group() -> dict[str, Callable[[], Any]]:
    import cachetools

    cache = Cache("memory://", cleanup_probability=0)
    hit = cache.cached(name="hit")(body)
    hit(1)
    peer = cachetools.cached(cachetools.LRUCache(maxsize=1024))(body)
    peer(1)
    return {"actioncache memory hit": lambda: hit(1), "cachetools @cached": lambda: peer(1)}


def redis_group() -> dict[str, Callable[[], Any]]:
    import redis

    cache = Cache(REDIS_URL + "?prefix=benchfloor", cleanup_probability=0)
    hit = cache.cached(name="hit")(body)
    hit(1)
    client = redis.Redis.from_url(REDIS_URL)
    client.set("benchfloor:raw", cache.codec.encode(body(1)))
    return {"actioncache redis hit": lambda: hit(1), "raw GET": lambda: client.get("benchfloor:raw")}


def postgres_group() -> dict[str, Callable[[], Any]]:
    import psycopg

    cache = Cache(POSTGRES_URL + "?table=bench_floor", cleanup_probability=0)
    hit = cache.cached(name="hit")(body)
    hit(1)
    key = hit.cache_key(1)
    conn = psycopg.connect(POSTGRES_URL.replace("postgresql://", "postgresql://", 1), autocommit=True)
    select = "SELECT value FROM bench_floor WHERE key = %s"
    conn.execute(select, (key,)).fetchone()  # prepare on the server as the store does after 5 uses
    # Also the cheapest read psycopg offers, as the store's own hit path reads: one cursor kept,
    # binary results (conn.execute makes a cursor per call and reads text).
    cursor = conn.cursor(binary=True)
    return {"actioncache postgres hit": lambda: hit(1),
            "raw SELECT by key": lambda: conn.execute(select, (key,), prepare=True).fetchone()[0],
            "raw SELECT by key, kept binary cursor": lambda: cursor.execute(select, (key,), prepare=True).fetchone()[0]}


GROUPS: list[tuple[str, str, str | None, float]] = [
    # (group, actioncache candidate, floor or peer it is held against, target ratio)
    ("sqlite", "actioncache sqlite hit", "raw indexed SELECT", 2.0),
    ("memory", "actioncache memory hit", "cachetools @cached", 2.0),
    ("redis", "actioncache redis hit", "raw GET", 1.2),
    ("postgres", "actioncache postgres hit", "raw SELECT by key", 1.2),
]


def measure(group: dict[str, Callable[[], Any]], rounds: int, number: int) -> dict[str, list[float]]:
    """Per-call µs of each candidate of one group, one sample per round. Rounds rotate the order
    within the group, so a burst of load lands on every candidate alike; groups run one after
    another, so a sample follows its own group's calls (a PostgreSQL round trip just before a
    memory hit would cool the caches of one and not the other)."""
    flat = list(group.items())
    samples: dict[str, list[float]] = {name: [] for name, _ in flat}
    for fn in (fn for _, fn in flat):  # warm every path (connections, prepared statements)
        per_call_us(fn, 200)
    for r in range(rounds):
        order = flat[r % len(flat):] + flat[:r % len(flat)]
        for name, fn in order:
            samples[name].append(per_call_us(fn, number))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "hit_floor.md")
    args = parser.parse_args()
    rounds, number = (5, 500) if args.quick else (15, 2000)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        candidates: dict[str, dict[str, Callable[[], Any]]] = {"sqlite": sqlite_group(Path(tmp)),
                                                                "memory": memory_group()}
        skipped = []
        for group, make in (("redis", redis_group), ("postgres", postgres_group)):
            try:
                candidates[group] = make()
            except Exception as exc:
                skipped.append(f"{group}: {type(exc).__name__}: {exc}")
        samples: dict[str, list[float]] = {}
        for group in candidates.values():
            samples.update(measure(group, rounds, number))
        medians = {name: statistics.median(times) for name, times in samples.items()}
    load_after = os.getloadavg()[0]
    lines = ["# Hits against their floors", "",
             f"`python bench/bench_hit_floor.py{' --quick' if args.quick else ''}`: median over {rounds} interleaved "
             f"rounds of {number} calls, microseconds per call, on this machine (2 cores, shared with other work "
             f"while measured: load average {load_before:.1f} before, {load_after:.1f} after; the ratios are what carries).",
             "",
             "| store | actioncache hit (µs) | held against | its time (µs) | ratio | median of round ratios | target |",
             "|---|---|---|---|---|---|---|"]
    for group, ours, floor, target in GROUPS:
        if group not in candidates:
            continue
        ratio = medians[ours] / medians[floor]
        # Each round times both back to back: the ratio within a round cancels most of the load.
        paired = statistics.median(a / b for a, b in zip(samples[ours], samples[floor]))
        verdict = "met" if ratio <= target else "missed"
        lines.append(f"| {group} | {medians[ours]:.1f} | {floor} | {medians[floor]:.1f} | {ratio:.2f}x | {paired:.2f}x | "
                     f"≤ {target}x ({verdict}) |")
    if "sqlite" in candidates:
        lines += ["", f"diskcache `memoize` hit: {medians['diskcache memoize']:.1f} µs "
                      f"(actioncache sqlite hit = {medians['actioncache sqlite hit'] / medians['diskcache memoize']:.2f}x)"]
    if "postgres" in candidates:
        kept = medians["raw SELECT by key, kept binary cursor"]
        lines += ["", f"PostgreSQL's cheapest raw read (one kept binary cursor, the store's own way): {kept:.1f} µs "
                      f"(actioncache postgres hit = {medians['actioncache postgres hit'] / kept:.2f}x; median of round ratios "
                      f"{statistics.median(a / b for a, b in zip(samples['actioncache postgres hit'], samples['raw SELECT by key, kept binary cursor'])):.2f}x)"]
    for note in skipped:
        lines.append(f"\nnot measured: {note}")
    report = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
