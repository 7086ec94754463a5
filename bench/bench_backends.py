"""Per-backend benchmark: hit and miss latency (p50/p99) and ops/s, through ``Cache.wrap`` and
through the raw store, for every backend the conformance suite knows and this machine reaches.

    python bench/bench_backends.py            # 2000 operations per measurement (~1-2 minutes)
    python bench/bench_backends.py --quick    # 200, a smoke run
    python bench/bench_backends.py --only redis,postgres
    python bench/bench_backends.py --only none    # only the floors and peers below

Then, side by side in interleaved rounds (medians of per-round means, reported as ratios): a Redis
Cluster hit against a raw cluster GET, a near-cache hit against a memory-store hit, a hit with
lock=True against one without, and a rate-limit check against the ``limits`` package (moving
window) on the same Redis and in memory.

Each backend is opened by its conformance factory (tests/stores/backends.py): an isolated, empty
store (a unique Redis prefix, a unique PostgreSQL table, a fresh file); one whose server or
package is missing is listed with the reason instead of a number. Servers run on loopback, so
a remote figure is this plus your network's round trip. Single thread; every call is timed on
its own (perf_counter_ns), so p99 includes the occasional stats flush, fsync or GC pause that
a real caller also meets. Writes bench/results/backends.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))

from actioncache import Cache  # noqa: E402
from actioncache.stores.base import Entry  # noqa: E402

VALUE = {"answer": 42, "text": "a typical small JSON result", "items": [1, 2, 3]}
ORDER = ["memory", "sqlite", "duckdb", "libsql", "blob-memory", "blob-file", "blob-s3", "blob-gs", "blob-az",
         "redis", "postgres", "firestore"]


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


class Sample:
    """Per-call latencies of one operation."""

    def __init__(self, ns: list[int]) -> None:
        self.ns = sorted(ns)

    def pct_us(self, q: float) -> float:
        return self.ns[min(len(self.ns) - 1, int(q * len(self.ns)))] / 1000

    @property
    def ops(self) -> float:
        return len(self.ns) / (sum(self.ns) / 1e9)


def measure(calls: list[Callable[[], Any]], budget_s: float) -> Sample:
    """Time each call; stop early (after at least 20) when the budget is spent, for slow backends."""
    out: list[int] = []
    deadline = time.monotonic() + budget_s
    clock = time.perf_counter_ns
    for call in calls:
        start = clock()
        call()
        out.append(clock() - start)
        if len(out) >= 20 and time.monotonic() > deadline:
            break
    return Sample(out)


def open_backend(name: str, factory: Callable[[Path], Any], tmp: Path) -> tuple[Any, str | None]:
    """The factory's store, or None and why (pytest's skip/fail outcomes carry the reason)."""
    try:
        return factory(tmp), None
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None, " ".join(str(getattr(exc, "msg", None) or exc).split())[:140]


def bench_backend(store: Any, n: int, budget_s: float) -> dict[str, Sample]:
    from actioncache.codec import make_codec

    encoded = make_codec(None, None).encode(VALUE)
    now = time.time()
    meta = {"_cache_type": "action_result", "_cache_action": "raw", "_cache_duration_ms": 12.5}
    keys = [f"cache:raw:{i:064x}" for i in range(n)]
    results: dict[str, Sample] = {}
    results["raw put"] = measure([lambda k=k: store.put(Entry(k, encoded, dict(meta, _cache_key=k), now, now + 3600))
                                  for k in keys], budget_s)
    stored = keys[:len(results["raw put"].ns)]
    results["raw get hit"] = measure([lambda k=k: store.get(k) for k in stored * (n // len(stored) + 1)][:n], budget_s)
    results["raw get miss"] = measure([lambda i=i: store.get(f"cache:absent:{i}") for i in range(n)], budget_s)

    cache = Cache(store=store, cleanup_probability=0.0)

    def work(i: int) -> dict[str, Any]:
        return dict(VALUE, i=i)

    results["wrap miss"] = measure([lambda i=i: cache.wrap("bench", work, {"i": i}) for i in range(n)], budget_s)
    cached = len(results["wrap miss"].ns)
    results["wrap hit"] = measure([lambda i=i: cache.wrap("bench", work, {"i": i % cached}) for i in range(n)], budget_s)
    cache.flush_stats()
    return results


def interleaved(variants: dict[str, Callable[[], Any]], rounds: int, batch: int) -> dict[str, float]:
    """Median over ``rounds`` of each variant's mean µs per call in a batch, the variants taking
    turns in every round (so a burst of load on the shared machine hits them all alike)."""
    per: dict[str, list[float]] = {name: [] for name in variants}
    clock = time.perf_counter_ns
    for _ in range(rounds):
        for name, call in variants.items():
            start = clock()
            for _ in range(batch):
                call()
            per[name].append((clock() - start) / batch / 1000)
    return {name: sorted(v)[len(v) // 2] for name, v in per.items()}


def floors(tmp: Path, rounds: int, batch: int) -> tuple[list[str], dict[str, str]]:
    """The rows of the floors-and-peers table, and what could not be measured."""
    import services
    from stores.backends import BACKENDS

    from actioncache.stores.ratelimit import take

    rows: list[str] = []
    missing: dict[str, str] = {}

    def row(what: str, ours: str, peer: str, results: dict[str, float], goal: str) -> None:
        rows.append(f"| {what} | {results[ours]:.1f} | {peer} {results[peer]:.1f} | "
                    f"{results[ours] / results[peer]:.2f}× | {goal} |")

    def opened(name: str) -> Any:
        store, why = open_backend(name, BACKENDS[name], tmp / f"floor-{name}")
        if store is None:
            missing[name] = why or "unavailable"
        return store

    (tmp / "floor-redis-cluster").mkdir()
    cluster = opened("redis-cluster")
    if cluster is not None:
        try:
            cache = Cache(store=cluster, cleanup_probability=0.0)

            @cache.cached(ttl_seconds=3600)
            def hot(x: int) -> dict[str, Any]:
                return dict(VALUE, x=x)

            hot(1)
            assert cache.wrap("bench", lambda i: VALUE, {"i": 1})["result"] == VALUE
            raw = cluster.client  # the same cluster, redis-py's RedisCluster: GET of a key of the same size
            raw.set("{bench}:raw", cache.codec.encode(VALUE))
            got = interleaved({"decorator hit": lambda: hot(1), "wrap hit": lambda: cache.wrap("bench", lambda i: VALUE, {"i": 1}),
                               "raw GET": lambda: raw.get("{bench}:raw")}, rounds, batch)
            row("Redis Cluster: `@cached` hit", "decorator hit", "raw GET", got, "≤ 1.3×")
            row("Redis Cluster: `Cache.wrap` hit", "wrap hit", "raw GET", got, "-")
            raw.delete("{bench}:raw")
            cache.flush_stats()
        finally:
            cluster.drop()
            cluster.close()

    (tmp / "floor-redis-near").mkdir()
    (tmp / "floor-memory").mkdir()
    near, memory = opened("redis-near"), opened("memory")
    if near is not None and memory is not None:
        try:
            deadline = time.monotonic() + 10
            while not near.health()["near"]["listening"] and time.monotonic() < deadline:
                time.sleep(0.01)
            caches = {name: Cache(store=s, cleanup_probability=0.0) for name, s in (("near", near), ("memory", memory))}
            fns = {}
            for name, c in caches.items():
                @c.cached(ttl_seconds=3600)
                def hot(x: int) -> dict[str, Any]:
                    return dict(VALUE, x=x)

                hot(1)
                hot(1)
                fns[name] = hot
            got = interleaved({"near hit": lambda: fns["near"](1), "memory hit": lambda: fns["memory"](1)}, rounds, batch)
            row("near cache over Redis: `@cached` hit", "near hit", "memory hit", got, "≤ 3×")
        finally:
            near.store.drop()
            near.close()
            memory.close()

    (tmp / "floor-redis").mkdir()
    redis_store = opened("redis")
    if redis_store is not None:
        try:
            cache = Cache(store=redis_store, cleanup_probability=0.0)
            assert cache.wrap("bench", lambda i: VALUE, {"i": 1})["result"] == VALUE
            assert cache.wrap("bench", lambda i: VALUE, {"i": 1}, lock=True)["_cache_hit"] is True
            got = interleaved({"lock=True": lambda: cache.wrap("bench", lambda i: VALUE, {"i": 1}, lock=True),
                               "lock=False": lambda: cache.wrap("bench", lambda i: VALUE, {"i": 1})}, rounds, batch)
            row("Redis: `Cache.wrap` hit with `lock=True`", "lock=True", "lock=False", got, "(single flight's price on a hit)")
            try:
                from limits import RateLimitItemPerMinute
                from limits.storage import MemoryStorage, RedisStorage
                from limits.strategies import MovingWindowRateLimiter
            except ImportError as exc:
                missing["limits"] = f"not installed ({exc}); pip install 'actioncache[bench]'"
            else:
                item = RateLimitItemPerMinute(600)
                url = f"redis://{services.REDIS_HOST}:{services.REDIS_PORT}/15"
                peers = {"redis": MovingWindowRateLimiter(RedisStorage(url, key_prefix=f"bench{os.getpid()}")),
                         "memory": MovingWindowRateLimiter(MemoryStorage())}
                (tmp / "floor-memory2").mkdir()
                ours_memory = BACKENDS["memory"](tmp / "floor-memory2")
                for where, store, peer in (("redis", redis_store, peers["redis"]), ("memory", ours_memory, peers["memory"])):
                    for _ in range(600):  # full, as in the measurement: every check is refused
                        take(store, "bench", 600, 60.0)
                        peer.hit(item, "bench")
                    got = interleaved({"ours": lambda s=store: take(s, "bench", 600, 60.0),
                                       "limits": lambda p=peer: p.hit(item, "bench")}, rounds, batch)
                    row(f"rate-limit check, 600/min, full ({where})", "ours", "limits", got, "≤ 2×")
                peers["redis"].storage.reset()
        finally:
            redis_store.drop()
            redis_store.close()
    return rows, missing


def fmt(us: float) -> str:
    return f"{us:,.0f}" if us >= 100 else f"{us:.1f}"


def render(rows: dict[str, dict[str, Sample]], skipped: dict[str, str], n: int, seconds: float) -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    lines = [
        "# Per-backend benchmark",
        "",
        f"`python bench/bench_backends.py{'' if n == 2000 else ' --quick' if n == 200 else f' -n {n}'}` on "
        f"{platform.node() or 'this machine'} ({platform.machine()}, Python {platform.python_version()}), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; up to {n} timed calls per cell, single thread, "
        f"servers on loopback; {seconds:.0f} s in all; load average {load}. Latencies in microseconds per call. "
        "The machine is shared: compare rows of one run (the ratio columns), not runs.",
        "",
        "## Through `Cache.wrap` (small JSON result; miss = lookup + run + encode + put)",
        "",
        "| backend | hit p50 | hit p99 | hit ops/s | miss p50 | miss p99 | miss ops/s | hit p50 vs sqlite | miss p50 vs sqlite |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base = rows.get("sqlite")
    for name, r in rows.items():
        hit, miss = r["wrap hit"], r["wrap miss"]
        ratio_hit = f"{hit.pct_us(0.5) / base['wrap hit'].pct_us(0.5):.2f}×" if base else "-"
        ratio_miss = f"{miss.pct_us(0.5) / base['wrap miss'].pct_us(0.5):.2f}×" if base else "-"
        lines.append(f"| {name} | {fmt(hit.pct_us(0.5))} | {fmt(hit.pct_us(0.99))} | {hit.ops:,.0f} | "
                     f"{fmt(miss.pct_us(0.5))} | {fmt(miss.pct_us(0.99))} | {miss.ops:,.0f} | {ratio_hit} | {ratio_miss} |")
    lines += [
        "",
        "## Raw store (`get` of a present key, `get` of an absent key, `put` upsert)",
        "",
        "| backend | get hit p50 | get hit p99 | get hit ops/s | get miss p50 | get miss p99 | put p50 | put p99 | put ops/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        hit, miss, put = r["raw get hit"], r["raw get miss"], r["raw put"]
        lines.append(f"| {name} | {fmt(hit.pct_us(0.5))} | {fmt(hit.pct_us(0.99))} | {hit.ops:,.0f} | "
                     f"{fmt(miss.pct_us(0.5))} | {fmt(miss.pct_us(0.99))} | {fmt(put.pct_us(0.5))} | "
                     f"{fmt(put.pct_us(0.99))} | {put.ops:,.0f} |")
    short = {name: len(r["wrap hit"].ns) for name, r in rows.items() if len(r["wrap hit"].ns) < n}
    if short:
        lines += ["", "Fewer calls (time budget spent): " + ", ".join(f"{k} {v}" for k, v in short.items()) + "."]
    if skipped:
        lines += ["", "Not measured on this run:", ""]
        lines += [f"- {name}: {why}" for name, why in skipped.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 calls per measurement")
    parser.add_argument("-n", type=int, default=None, help="calls per measurement (default 2000)")
    parser.add_argument("--only", default="", help="comma-separated backend names")
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per measurement before stopping early")
    parser.add_argument("--out", default=str(RESULTS / "backends.md"))
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds for the floors and peers")
    args = parser.parse_args()
    n = args.n or (200 if args.quick else 2000)

    from stores.backends import BACKENDS

    wanted = [b for b in args.only.split(",") if b and b != "none"] if args.only else sorted(BACKENDS, key=lambda b: (ORDER.index(b) if b in ORDER else 99, b))
    rows: dict[str, dict[str, Sample]] = {}
    skipped: dict[str, str] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ac-bench-") as tmp:
        for name in wanted:
            if name not in BACKENDS:
                skipped[name] = f"no such backend; known: {', '.join(sorted(BACKENDS))}"
                continue
            backend_dir = Path(tmp) / name
            backend_dir.mkdir()
            store, why = open_backend(name, BACKENDS[name], backend_dir)
            if store is None:
                skipped[name] = why or "unavailable"
                progress(f"{name}: skipped ({skipped[name]})")
                continue
            progress(f"{name}: measuring")
            try:
                rows[name] = bench_backend(store, n, args.budget)
            except Exception as exc:
                skipped[name] = f"failed: {' '.join(str(exc).split())[:140]}"
                progress(f"{name}: {skipped[name]}")
            finally:
                for tidy in (getattr(store, "drop", None), store.close):
                    try:
                        if tidy is not None:
                            tidy()
                    except Exception:
                        pass
        progress("floors and peers: measuring")
        floor_rows, floor_missing = floors(Path(tmp), args.rounds, max(20, n // 10))
    text = render(rows, skipped, n, time.monotonic() - started)
    if not rows:  # --only none: the floors and peers alone
        text = text.split("\n## ")[0].replace("`python bench/bench_backends.py`",
                                                "`python bench/bench_backends.py " + " ".join(sys.argv[1:]) + "`")
    text += "\n".join([
        "", "## Floors and peers (interleaved rounds; µs per call, medians of per-round means)", "",
        "| what | ours µs | peer µs | ratio | goal |", "|---|---:|---:|---:|---|", *floor_rows, ""])
    if floor_missing:
        text += "\nNot measured: " + "; ".join(f"{k}: {v}" for k, v in floor_missing.items()) + "\n"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(
        {name: {op: {"p50_us": s.pct_us(0.5), "p99_us": s.pct_us(0.99), "ops_s": s.ops, "calls": len(s.ns)}
                for op, s in r.items()} for name, r in rows.items()}, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
