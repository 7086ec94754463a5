"""A store that hangs: what each call costs while the server accepts connections and never answers,
and how soon caching resumes once it answers again.

    python bench/bench_hung_store.py              # Redis and PostgreSQL of this run (scripts/services.sh start)
    python bench/bench_hung_store.py --only redis

The server is real; in front of it runs a fault injector of the benchmark's own
(tests/stores/fault_proxy.py: a loopback TCP proxy that can stop answering, a fault injector, not a
stand-in). Each call is ``Cache.wrap`` of a new key (a miss: a read, the action, a write), timed
whole; the action itself takes nothing. Goals: the first calls add at most 250 ms each,
after at most 3 failures a call adds at most 2 ms, caching resumes within 30 s of the server
answering again. Writes bench/results/hung_store.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))

from actioncache import Cache, open_store  # noqa: E402

CALLS = 12


def url_through(backend: str, port: int, name: str) -> tuple[str, str]:
    """(the URL through the proxy, the same store's URL direct, for the tidy-up)."""
    import services

    if backend == "redis":
        direct = f"redis://{services.REDIS_HOST}:{services.REDIS_PORT}/15?prefix={name}"
        return f"redis://127.0.0.1:{port}/15?prefix={name}", direct
    database = services.POSTGRES_URL.rsplit("/", 1)[1]
    direct = f"postgresql://postgres@{services.POSTGRES_HOST}:{services.POSTGRES_PORT}/{database}?table={name}"
    return f"postgresql://postgres@127.0.0.1:{port}/{database}?table={name}", direct


def timed_call(cache: Cache, n: int) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    result = cache.wrap("bench", lambda n: {"n": n}, {"n": n})
    return (time.perf_counter() - start) * 1000, result


def scenario(backend: str, hang_after_warmup: bool) -> dict[str, Any]:
    import services
    from stores.fault_proxy import FaultProxy

    target = (services.REDIS_HOST, services.REDIS_PORT) if backend == "redis" else (services.POSTGRES_HOST, services.POSTGRES_PORT)
    services.require(backend, *target)
    proxy = FaultProxy(target)
    if not hang_after_warmup:
        proxy.hang()  # from the first connection on
    name = f"hung{os.getpid()}{int(hang_after_warmup)}"
    url, direct = url_through(backend, proxy.port, name)
    cache = Cache(url, cleanup_probability=0)
    out: dict[str, Any] = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if hang_after_warmup:
                answering = [timed_call(cache, -i)[0] for i in range(1, 21)]
                out["answering_ms"] = sorted(answering)[len(answering) // 2]
                proxy.hang()
            calls = [timed_call(cache, i) for i in range(CALLS)]
            out["calls_ms"] = [ms for ms, _ in calls]
            out["correct"] = all(r["result"] == {"n": i} for i, (_, r) in enumerate(calls))
            proxy.answer()  # the server answers again
            answered = time.monotonic()
            while time.monotonic() - answered < 60:
                _, result = timed_call(cache, 1000)
                if "_cache_error" not in result:
                    break
                time.sleep(0.01)
            out["resumed_s"] = time.monotonic() - answered
    finally:
        cache.close()
        proxy.close()
        try:
            tidy = open_store(direct)
            tidy.drop()
            tidy.close()
        except Exception:
            pass
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def render(results: dict[str, list[dict[str, Any]]], loads: list[float]) -> str:
    rounds = max((len(runs) for runs in results.values()), default=0)
    lines = [
        "# A store that hangs",
        "",
        f"`python bench/bench_hung_store.py --rounds {rounds}` on {platform.node()} ({platform.machine()}, Python "
        f"{platform.python_version()}), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{min(loads):.1f}-{max(loads):.1f} during the run (a shared machine, 2 cores). Each call is `Cache.wrap` "
        "of a new key (read, action, write), in ms, timed whole; each cell is the median over the rounds "
        "(interleaved: every case once per round), but the max column, the largest of any round. The server is "
        "real, behind a loopback proxy that stops answering (tests/stores/fault_proxy.py); \"never answered\": "
        "hung from the first connection on.",
        "",
        "| backend, case | answering (median) | call 1 | call 2 | call 3 | calls 4-12 median | calls 4-12 max | results correct | caching resumed after |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for label, runs in results.items():
        calls = [r["calls_ms"] for r in runs]
        answering = f"{_median([r['answering_ms'] for r in runs]):.2f}" if "answering_ms" in runs[0] else "-"
        resumed = f"{_median([r['resumed_s'] for r in runs]):.2f} s" if "resumed_s" in runs[0] else "-"
        first = [_median([ms[i] for ms in calls]) for i in range(3)]
        rest_median = _median([_median(ms[3:]) for ms in calls])
        rest_max = max(max(ms[3:]) for ms in calls)
        correct = all(r["correct"] for r in runs)
        lines.append(f"| {label} | {answering} | {first[0]:.1f} | {first[1]:.1f} | {first[2]:.1f} | {rest_median:.2f} | "
                     f"{rest_max:.2f} | {'yes' if correct else 'NO'} | {resumed} |")
    lines += ["", "Goals: calls 1-3 at most 250 ms more than answering; after at most 3 failures at most 2 ms; "
              "caching resumed within 30 s.", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="redis,postgres")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(HERE / "results" / "hung_store.md"))
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {}
    loads = [os.getloadavg()[0]]
    for n in range(args.rounds):
        for backend in args.only.split(","):
            for hang_after_warmup, case in ((True, "hangs after warm-up"), (False, "never answered")):
                print(f"[bench] round {n + 1}: {backend}: {case}", file=sys.stderr, flush=True)
                try:
                    results.setdefault(f"{backend}, {case}", []).append(scenario(backend, hang_after_warmup))
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    print(f"[bench] {backend}: skipped ({' '.join(str(exc).split())[:120]})", file=sys.stderr)
                loads.append(os.getloadavg()[0])
    text = render(results, loads)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
