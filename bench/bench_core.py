"""Core benchmark: actioncache against diskcache, cachier, joblib.Memory and cachetools, in one run.

    python bench/bench_core.py            # full run (1 GB file for storage_hash), ~2-3 minutes
    python bench/bench_core.py --quick    # smaller sizes, for a smoke check

Writes bench/results/core.md (tables and the ratios of its targets) and bench/results/core.png.
Every figure is the best of several repeats of many calls (the usual way to measure a hot path
on a shared machine: the minimum is the run least disturbed by other work). Numbers are
wall-clock microseconds per call on this machine; the ratios are what carries to other machines.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE.parent / "src"))

from actioncache import Cache, storage_hash  # noqa: E402

VALUE = {"answer": 42, "text": "a typical small JSON result", "items": [1, 2, 3]}


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def best_us(fn: Callable[[], Any], number: int, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


# --- decorator hit -------------------------------------------------------------------------

def hit_candidates(tmp: Path) -> dict[str, Callable[[int], Any]]:
    import cachetools
    import diskcache
    import joblib
    from cachier import cachier

    def body(x: int, y: int = 2) -> dict[str, Any]:
        return dict(VALUE, x=x, y=y)

    out: dict[str, Callable[[int], Any]] = {}
    sqlite_cache = Cache(f"sqlite:///{tmp}/ac-hit.db", cleanup_probability=0)
    out["actioncache (sqlite)"] = sqlite_cache.cached(name="hit")(body)
    memory_cache = Cache("memory://", cleanup_probability=0)
    out["actioncache (memory)"] = memory_cache.cached(name="hit")(body)
    dc = diskcache.Cache(str(tmp / "diskcache-hit"))
    out["diskcache memoize"] = dc.memoize()(body)
    out["cachetools TTLCache"] = cachetools.cached(cachetools.TTLCache(maxsize=10_000, ttl=3600))(body)
    out["joblib.Memory"] = joblib.Memory(str(tmp / "joblib"), verbose=0).cache(body)
    out["cachier (pickle)"] = cachier(cache_dir=str(tmp / "cachier"), separate_files=False)(body)
    return out


def bench_hits(tmp: Path, number: int) -> dict[str, float]:
    results: dict[str, float] = {}
    for name, fn in hit_candidates(tmp).items():
        progress(f"decorator hit: {name}")
        fn(1)
        fn(1)
        n = number if "joblib" not in name and "cachier" not in name else max(number // 20, 200)
        results[name] = best_us(lambda: fn(1), n)
    return results


# --- miss + store --------------------------------------------------------------------------

def bench_miss(tmp: Path, number: int) -> dict[str, float]:
    import diskcache

    results: dict[str, float] = {}
    counter = iter(range(10**9))

    progress("miss + store: actioncache (sqlite) @cached")
    cache = Cache(f"sqlite:///{tmp}/ac-miss.db", cleanup_probability=0)

    @cache.cached(name="miss")
    def f(x: int) -> dict[str, Any]:
        return VALUE

    results["actioncache (sqlite) @cached miss"] = best_us(lambda: f(next(counter)), number)

    progress("miss + store: actioncache (sqlite) wrap")
    results["actioncache (sqlite) wrap miss"] = best_us(
        lambda: cache.wrap("miss.wrap", lambda x: VALUE, {"x": next(counter)}), number)

    progress("miss + store: diskcache set / memoize")
    dc = diskcache.Cache(str(tmp / "diskcache-miss"))
    results["diskcache set"] = best_us(lambda: dc.set(("miss", next(counter)), VALUE), number)

    @dc.memoize()
    def g(x: int) -> dict[str, Any]:
        return VALUE

    results["diskcache memoize miss"] = best_us(lambda: g(next(counter)), number)
    return results


# --- several processes on one file ---------------------------------------------------------

WORKER = r"""
import json, random, sys, time
sys.path.insert(0, {src!r})
kind, path, seed, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
value = {{"answer": 42, "items": [1, 2, 3]}}
if kind == "actioncache":
    from actioncache import Cache
    cache = Cache("sqlite:///" + path, cleanup_probability=0.05)
    @cache.cached(name="mp")
    def f(k):
        return value
else:
    import diskcache
    dc = diskcache.Cache(path)
    @dc.memoize()
    def f(k):
        return value
rng = random.Random(seed)
lat, errors = [], 0
t0 = time.perf_counter()
for _ in range(calls):
    k = rng.randrange(2000)
    s = time.perf_counter()
    try:
        r = f(k)
        assert r == value
    except Exception:
        errors += 1
    lat.append(time.perf_counter() - s)
print(json.dumps({{"elapsed": time.perf_counter() - t0, "lat": lat, "errors": errors}}))
"""


def bench_processes(tmp: Path, procs: int, calls: int) -> dict[str, dict[str, float]]:
    script = WORKER.format(src=str(HERE.parent / "src"))
    results: dict[str, dict[str, float]] = {}
    for kind, path in (("actioncache", str(tmp / "mp.db")), ("diskcache", str(tmp / "mp-diskcache"))):
        progress(f"{procs} processes on one file: {kind}")
        started = time.perf_counter()
        workers = [subprocess.Popen([sys.executable, "-c", script, kind, path, str(seed), str(calls)],
                                    stdout=subprocess.PIPE, text=True) for seed in range(procs)]
        outputs = [json.loads(w.communicate()[0]) for w in workers]
        wall = time.perf_counter() - started
        lat = sorted(x for o in outputs for x in o["lat"])
        results[kind] = {
            "ops_per_s": len(lat) / max(o["elapsed"] for o in outputs),
            "p50_us": lat[len(lat) // 2] * 1e6,
            "p99_us": lat[int(len(lat) * 0.99)] * 1e6,
            "max_us": lat[-1] * 1e6,
            "errors": sum(o["errors"] for o in outputs),
            "wall_s": wall,
        }
    return results


# --- storage_hash --------------------------------------------------------------------------

def bench_hash(tmp: Path, size_mb: int) -> dict[str, float]:
    path = tmp / "big.bin"
    progress(f"storage_hash: writing a {size_mb} MB file")
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(size_mb):
            f.write(block)
    size = path.stat().st_size
    subprocess.run(["sha256sum", str(path)], check=True, capture_output=True)  # warm the page cache

    def timed(fn: Callable[[], Any]) -> float:
        times = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    progress("storage_hash: sha256sum")
    tool = timed(lambda: subprocess.run(["sha256sum", str(path)], check=True, capture_output=True))
    progress("storage_hash: actioncache")
    ours = timed(lambda: storage_hash(str(path)))
    expected = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True).stdout.split()[0]
    assert storage_hash(str(path))["hash"] == expected
    progress("storage_hash: hashlib.file_digest (reference)")
    with open(path, "rb") as f:
        ref = timed(lambda: (f.seek(0), hashlib.file_digest(f, "sha256")))
    path.unlink()
    mb = size / 1e6
    return {"size_mb": mb, "sha256sum_MBps": mb / tool, "actioncache_MBps": mb / ours, "file_digest_MBps": mb / ref}


# --- report --------------------------------------------------------------------------------

def write_report(hits: dict[str, float], miss: dict[str, float], mp: dict[str, dict[str, float]],
                 hashing: dict[str, float], args: argparse.Namespace) -> str:
    dc_hit = hits["diskcache memoize"]
    lines = [
        "# Core benchmark",
        "",
        f"`python bench/bench_core.py{' --quick' if args.quick else ''}` on {platform.machine()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "Best of 5 repeats; microseconds per call.",
        "",
        "## Decorator hit",
        "",
        "| library | µs per hit | × diskcache memoize | × cachetools |",
        "|---|---:|---:|---:|",
    ]
    for name, us in sorted(hits.items(), key=lambda kv: kv[1]):
        lines.append(f"| {name} | {us:.2f} | {us / dc_hit:.2f} | {us / hits['cachetools TTLCache']:.1f} |")
    dc_set = miss["diskcache set"]
    lines += ["", "## Miss + store (a new key each call, value stored)", "",
              "| operation | µs per call | × diskcache set |", "|---|---:|---:|"]
    for name, us in miss.items():
        lines.append(f"| {name} | {us:.2f} | {us / dc_set:.2f} |")
    lines += ["", f"## {args.procs} processes on one file ({args.mp_calls} calls each, 2000 keys, hits and misses mixed)", "",
              "| library | ops/s (all processes) | p50 µs | p99 µs | max µs | errors |", "|---|---:|---:|---:|---:|---:|"]
    for name, r in mp.items():
        lines.append(f"| {name} | {r['ops_per_s']:.0f} | {r['p50_us']:.1f} | {r['p99_us']:.1f} | {r['max_us']:.0f} | {r['errors']} |")
    lines += ["", f"## storage_hash of a {hashing['size_mb']:.0f} MB file (page cache warm)", "",
              "| tool | MB/s | × sha256sum |", "|---|---:|---:|"]
    for label, key in (("sha256sum", "sha256sum_MBps"), ("actioncache storage_hash", "actioncache_MBps"),
                       ("hashlib.file_digest", "file_digest_MBps")):
        lines.append(f"| {label} | {hashing[key]:.0f} | {hashing[key] / hashing['sha256sum_MBps']:.2f} |")
    targets = [
        ("SQLite decorator hit ≤ 0.5× diskcache memoize hit", hits["actioncache (sqlite)"] / dc_hit, 0.5, "≤"),
        ("miss + store (@cached) ≤ 1.0× diskcache set", miss["actioncache (sqlite) @cached miss"] / dc_set, 1.0, "≤"),
        ("memory-store hit ≤ 3× cachetools hit", hits["actioncache (memory)"] / hits["cachetools TTLCache"], 3.0, "≤"),
        ("storage_hash ≥ 0.9× sha256sum throughput", hashing["actioncache_MBps"] / hashing["sha256sum_MBps"], 0.9, "≥"),
        ("processes on one SQLite file: no errors", float(mp["actioncache"]["errors"]), 0.0, "≤"),
    ]
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---:|:---:|"]
    for label, value, bound, op in targets:
        met = value <= bound if op == "≤" else value >= bound
        lines.append(f"| {label} | {value:.2f} | {'yes' if met else 'NO'} |")
    return "\n".join(lines) + "\n"


def plot(hits: dict[str, float], miss: dict[str, float], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        progress("matplotlib not installed: no plot (pip install 'actioncache[bench]')")
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, data, title in ((axes[0], hits, "decorator hit (µs, log scale)"), (axes[1], miss, "miss + store (µs)")):
        names = sorted(data, key=data.get)
        colors = ["#2b7bba" if n.startswith("actioncache") else "#999999" for n in names]
        ax.barh(names, [data[n] for n in names], color=colors)
        ax.set_title(title)
        if data is hits:
            ax.set_xscale("log")
        for i, n in enumerate(names):
            ax.text(data[n], i, f" {data[n]:.1f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    number = 2000 if args.quick else 20000
    args.mp_calls = 500 if args.quick else 3000
    size_mb = 64 if args.quick else 1024
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="actioncache-bench-"))
    try:
        hits = bench_hits(tmp, number)
        miss = bench_miss(tmp, max(number // 4, 500))
        mp = bench_processes(tmp, args.procs, args.mp_calls)
        hashing = bench_hash(tmp, size_mb)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = write_report(hits, miss, mp, hashing, args)
    name = "core-quick" if args.quick else "core"
    (args.out / f"{name}.md").write_text(report)
    (args.out / f"{name}.json").write_text(json.dumps({"hits_us": hits, "miss_us": miss, "processes": mp,
                                                      "hash": hashing}, indent=2))
    plot(hits, miss, args.out / f"{name}.png")
    print(report)
    progress(f"wrote {args.out / (name + '.md')} and {name}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
