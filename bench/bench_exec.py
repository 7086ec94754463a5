"""`actioncache exec` in front of a tool: what a hit costs, and what it adds on a miss.

    python bench/bench_exec.py            # 7 runs per case (~1.5 minutes)
    python bench/bench_exec.py --quick    # 3 runs per case

Cases, each a fresh process as a loop would start it:

* ``sleep 1`` alone, the "1-second tool" of issue 5, and through ``actioncache exec``:
  on a hit (the replay), on a miss (a new ``--env`` value each run makes every run a real miss:
  lookup, run, capture, store, log), and with mode ``off`` (pass-through);
* real verifiers (shellcheck on a script, pyflakes on a small tree) alone and on a hit;
* ``python -c pass``: the interpreter's own start-up, the floor of any Python CLI.

Offline, stdlib-only harness (hyperfine is not needed). Figures are wall-clock milliseconds per
process; the median is reported with the minimum beside it. Writes bench/results/exec.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
EXEC = [sys.executable, "-m", "actioncache", "exec"]


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - started) * 1000


def measure(name: str, argv: list[str], env: dict[str, str], cwd: Path, runs: int,
            per_run_env: str | None = None) -> tuple[str, float, float]:
    samples = []
    for i in range(runs):
        run_env = dict(env)
        if per_run_env:
            run_env[per_run_env] = f"{time.time_ns()}-{i}"
        samples.append(timed(argv, run_env, cwd))
    progress(f"{name}: median {statistics.median(samples):.1f} ms")
    return name, statistics.median(samples), min(samples)


def make_tree(work: Path) -> None:
    (work / ".git").mkdir()
    (work / "loop.sh").write_text('#!/bin/sh\nfor f in "$@"; do\n  printf "%s\\n" "$f"\ndone\n')
    pkg = work / "app"
    pkg.mkdir()
    for i in range(20):
        (pkg / f"mod{i}.py").write_text(f'"""Module {i}."""\n\n\ndef f{i}(x):\n    return x + {i}\n')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs per case")
    parser.add_argument("--runs", type=int, help="runs per case (default 7, --quick 3)")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 7)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_tree(work)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CACHE_", "ACTIONCACHE_"))}
        env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
        env["ACTIONCACHE_URL"] = f"sqlite:///{work}/bench.db"
        # As installed: modules load from cached bytecode. (With PYTHONDONTWRITEBYTECODE, as in some
        # sandboxes, every run would recompile the package from source and measure that instead.)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], env=env, check=False)
        use = [*EXEC, "--mode", "use"]
        rows = []
        rows.append(measure("python -c pass (interpreter start-up)", [sys.executable, "-c", "pass"], env, work, runs))
        rows.append(measure("sleep 1 (the tool alone)", ["sleep", "1"], env, work, runs))
        subprocess.run([*use, "--", "sleep", "1"], env=env, cwd=work, check=True)  # warm the entry
        rows.append(measure("exec hit: sleep 1", [*use, "--", "sleep", "1"], env, work, runs))
        rows.append(measure("exec miss: sleep 1 (new key each run)", [*use, "--env", "BENCH_NONCE", "--", "sleep", "1"],
                            env, work, runs, per_run_env="BENCH_NONCE"))
        rows.append(measure("exec mode off: sleep 1 (pass-through)", [*EXEC, "--", "sleep", "1"], env, work, runs))
        tools = []
        if shutil.which("shellcheck"):
            tools.append(("shellcheck loop.sh", ["shellcheck", "loop.sh"]))
        pyflakes = [sys.executable, "-m", "pyflakes", "app"]
        if subprocess.run([*pyflakes[:3], "--version"], capture_output=True).returncode == 0:
            tools.append(("pyflakes app/ (20 files)", pyflakes))
        for label, argv in tools:
            rows.append(measure(f"{label} (alone)", argv, env, work, runs))
            subprocess.run([*use, "--", *argv], env=env, cwd=work, check=False)
            rows.append(measure(f"exec hit: {label}", [*use, "--", *argv], env, work, runs))
    write_report(rows, runs)
    return 0


def write_report(rows: list[tuple[str, float, float]], runs: int) -> None:
    by_name = {name: median for name, median, _ in rows}
    tool = by_name["sleep 1 (the tool alone)"]
    hit = by_name["exec hit: sleep 1"]
    miss = by_name["exec miss: sleep 1 (new key each run)"]
    off = by_name["exec mode off: sleep 1 (pass-through)"]
    start = by_name["python -c pass (interpreter start-up)"]
    lines = [
        "# `actioncache exec`: hit and miss cost",
        "",
        f"`python bench/bench_exec.py` on {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; {runs} runs per case, each a new process. "
        "Wall-clock ms per run (median, and the minimum).",
        "",
        "| case | median ms | min ms |",
        "|---|---:|---:|",
        *[f"| {name} | {median:.1f} | {low:.1f} |" for name, median, low in rows],
        "",
        "## In front of a 1-second tool",
        "",
        f"- A hit takes **{hit:.0f} ms**, {hit / tool:.1%} of running the tool ({tool:.0f} ms): "
        f"{tool / hit:.1f}x faster. Of that, {start:.0f} ms is the Python interpreter starting.",
        f"- A miss adds **{miss - tool:.0f} ms** to the tool ({miss:.0f} ms vs {tool:.0f} ms): start-up, "
        "the key, capture, one store write and one run-log write.",
        f"- Mode `off` (the default) adds {off - tool:.0f} ms: start-up and the pass-through.",
        f"- Break-even: the cache pays for itself once more than {(miss - tool) / max(tool - hit, 1e-9):.1%} "
        "of runs hit.",
        "",
    ]
    for name, median, _ in rows:
        if name.startswith("exec hit: ") and name != "exec hit: sleep 1":
            alone = by_name.get(name[len("exec hit: "):] + " (alone)")
            if alone:
                lines.append(f"- {name[len('exec hit: '):]}: {alone:.0f} ms alone, {median:.0f} ms on a hit "
                             f"({alone / median:.2f}x).")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "exec.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
