"""What a traced miss of `actioncache exec` costs beyond its command, two checkouts interleaved.

    python bench/bench_exec_miss.py --rounds 15 --before /work/main/.venv/bin/python

Each round runs, in turn for each interpreter (this checkout's and ``--before``'s), one miss of
``python report.py`` (a script that runs ``git rev-parse HEAD`` and sleeps 0.8 s) through ``python -m
actioncache exec --mode use`` with a fresh value of a keyed variable, so every run is a miss that
traces, builds the read-set and stores. Bytecode writing is on (as for a user). Prints the medians
of wall time and CPU time (the exec process and its children, strace included) per interpreter,
and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPORT = """import subprocess, time
print(subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
time.sleep(0.8)
"""


def one_miss(python: str, work: Path, env: dict[str, str], nonce: str) -> tuple[float, float]:
    started = time.perf_counter()
    proc = subprocess.Popen([python, "-m", "actioncache", "exec", "--mode", "use", "--", python, "report.py"],
                            cwd=work, env={**env, "BENCH_NONCE": nonce}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{python}: exec failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--before", required=True, help="the interpreter of the checkout to compare against")
    args = parser.parse_args()
    pythons = {"after": sys.executable, "before": args.before}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        work = root / "work"
        work.mkdir()
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        subprocess.run(["git", "-C", str(work), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q",
                        "--allow-empty", "-m", "x"], check=True)
        (work / "report.py").write_text(REPORT)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CACHE_", "ACTIONCACHE_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(XDG_CACHE_HOME=str(root / "xdg"), ACTIONCACHE_CHEAP_MS="0",
                   ACTIONCACHE_TRUST_FILE=str(root / "trust"))
        envs = {name: {**env, "ACTIONCACHE_URL": f"sqlite:///{root / name}.db"} for name in pythons}
        for name, python in pythons.items():  # warm: compiled bytecode, the store, the tracer memo
            one_miss(python, work, envs[name], "warm")
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in pythons}
        load_before = os.getloadavg()[0]
        for i in range(args.rounds):
            order = list(pythons) if i % 2 == 0 else list(reversed(pythons))
            for name in order:
                results[name].append(one_miss(pythons[name], work, envs[name], f"{i}"))
        load_after = os.getloadavg()[0]
    print(f"rounds {args.rounds}, load average {load_before:.1f} -> {load_after:.1f}")
    print("| code | wall median s | CPU median s |")
    print("|---|---:|---:|")
    for name, rows in results.items():
        print(f"| {name} | {statistics.median(r[0] for r in rows):.3f} | {statistics.median(r[1] for r in rows):.3f} |")


if __name__ == "__main__":
    main()
