"""`actioncache exec` in front of a tool: what a hit costs, and what it adds on a miss.

    python bench/bench_exec.py            # 7 runs per case (~1.5 minutes)
    python bench/bench_exec.py --quick    # 3 runs per case

Cases, each a fresh process as a loop would start it:

* ``python -c pass``: the interpreter's own start-up, the floor of any Python CLI, and the target:
  a hit should take at most twice as long;
* ``sleep 1`` alone, a "1-second tool", and through ``actioncache exec``:
  on a hit (the replay), on a miss (a new ``--env`` value each run makes every run a real miss:
  lookup, traced run, read-set, store, log), the same miss with tracing off
  (``ACTIONCACHE_TRACE=off``), and with mode ``off`` (pass-through);
* real verifiers (shellcheck on a script, pyflakes on a small tree) alone, on a hit, and on a
  traced miss: the tracing overhead on a tool that reads real files.

Offline, stdlib-only harness (hyperfine is not needed). Figures are wall-clock milliseconds per
process; the median is reported with the minimum beside it. Writes bench/results/exec.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
EXEC = [sys.executable, "-m", "actioncache", "exec"]


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms) of one process and its children. CPU time barely moves with the machine's
    load, so it is the steadier figure on a shared machine; wall time is what a loop waits."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


@dataclass
class Case:
    name: str
    argv: list[str]
    per_run_env: str | None = None  # a variable given a new value each run (a new key: a real miss)
    extra_env: dict[str, str] = field(default_factory=dict)
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)

    def run(self, env: dict[str, str], cwd: Path, i: int) -> None:
        run_env = {**env, **self.extra_env}
        if self.per_run_env:
            run_env[self.per_run_env] = f"{time.time_ns()}-{i}"
        wall, cpu = timed(self.argv, run_env, cwd)
        self.walls.append(wall)
        self.cpus.append(cpu)

    def row(self) -> tuple[str, float, float, float]:
        return self.name, statistics.median(self.walls), min(self.walls), statistics.median(self.cpus)


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
        cases = [
            Case("python -c pass (interpreter start-up)", [sys.executable, "-c", "pass"]),
            Case("sleep 1 (the tool alone)", ["sleep", "1"]),
            Case("exec hit: sleep 1", [*use, "--", "sleep", "1"]),
            Case("exec miss: sleep 1 (new key each run)", [*use, "--env", "BENCH_NONCE", "--", "sleep", "1"],
                 per_run_env="BENCH_NONCE"),
            Case("exec miss, tracing off: sleep 1", [*use, "--env", "BENCH_NONCE", "--", "sleep", "1"],
                 per_run_env="BENCH_NONCE", extra_env={"ACTIONCACHE_TRACE": "off"}),
            Case("exec mode off: sleep 1 (pass-through)", [*EXEC, "--", "sleep", "1"]),
        ]
        if shutil.which("shellcheck"):
            cases += [Case("shellcheck loop.sh (alone)", ["shellcheck", "loop.sh"]),
                      Case("exec hit: shellcheck loop.sh", [*use, "--", "shellcheck", "loop.sh"]),
                      Case("exec miss: shellcheck loop.sh", [*use, "--env", "BENCH_NONCE", "--", "shellcheck", "loop.sh"],
                           per_run_env="BENCH_NONCE")]
        pyflakes = [sys.executable, "-m", "pyflakes", "app"]
        if subprocess.run([*pyflakes[:3], "--version"], capture_output=True).returncode == 0:
            cases += [Case("pyflakes app/ (20 files) (alone)", pyflakes),
                      Case("exec hit: pyflakes app/ (20 files)", [*use, "--", *pyflakes]),
                      Case("exec miss: pyflakes app/ (20 files)", [*use, "--env", "BENCH_NONCE", "--", *pyflakes],
                           per_run_env="BENCH_NONCE")]
        for case in cases:  # warm: fill the hit entries, the page cache and the bytecode
            case.run(env, work, -1)
            case.walls.clear()
            case.cpus.clear()
        # Round-robin, so that a burst of load from elsewhere lands on every case alike.
        for i in range(runs):
            progress(f"round {i + 1}/{runs}")
            for case in cases:
                case.run(env, work, i)
        rows = [case.row() for case in cases]
    write_report(rows, runs)
    return 0


def write_report(rows: list[tuple[str, float, float, float]], runs: int) -> None:
    by_name = {name: median for name, median, _, _ in rows}
    cpu = {name: c for name, _, _, c in rows}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    tool = by_name["sleep 1 (the tool alone)"]
    hit = by_name["exec hit: sleep 1"]
    miss = by_name["exec miss: sleep 1 (new key each run)"]
    off = by_name["exec mode off: sleep 1 (pass-through)"]
    start = by_name["python -c pass (interpreter start-up)"]
    untraced = by_name["exec miss, tracing off: sleep 1"]
    lines = [
        "# `actioncache exec`: hit and miss cost",
        "",
        f"`python bench/bench_exec.py` on {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; {runs} runs per case, each a new process. "
        "Wall-clock ms per run (median and minimum) and CPU ms (user + system, median) of the process "
        f"and its children. Cases run round-robin. Load average at the end: {load:.1f} "
        f"(a shared machine: the CPU column is the steadier one).",
        "",
        "| case | wall median ms | wall min ms | CPU median ms |",
        "|---|---:|---:|---:|",
        *[f"| {name} | {median:.1f} | {low:.1f} | {c:.1f} |" for name, median, low, c in rows],
        "",
        "## A hit against the interpreter's start-up (target: at most 2x)",
        "",
        f"- **Hit / `python -c pass` = {hit / start:.2f}x** ({hit:.0f} ms vs {start:.0f} ms, medians in the same "
        f"run). Per CPU: {cpu['exec hit: sleep 1'] / max(cpu['python -c pass (interpreter start-up)'], 1e-9):.2f}x.",
        "",
        "## In front of a 1-second tool",
        "",
        f"- A hit takes **{hit:.0f} ms**, {hit / tool:.1%} of running the tool ({tool:.0f} ms): "
        f"{tool / hit:.1f}x faster. Of that, {start:.0f} ms is the Python interpreter starting.",
        f"- A miss adds **{miss - tool:.0f} ms** to the tool ({miss:.0f} ms vs {tool:.0f} ms): start-up, "
        "the key, capture, one store write and one run-log write.",
        f"- Of that, tracing (strace, the read-set) adds {miss - untraced:.0f} ms: the same miss with "
        f"`ACTIONCACHE_TRACE=off` takes {untraced:.0f} ms.",
        f"- Mode `off` (the default) adds {off - tool:.0f} ms: start-up and the pass-through.",
        f"- CPU per run: a hit {cpu['exec hit: sleep 1']:.0f} ms, a miss "
        f"{cpu['exec miss: sleep 1 (new key each run)']:.0f} ms, the bare interpreter "
        f"{cpu['python -c pass (interpreter start-up)']:.0f} ms (`sleep` itself uses ~0).",
        f"- Break-even: the cache pays for itself once more than {(miss - tool) / max(tool - hit, 1e-9):.1%} "
        "of runs hit.",
        "",
    ]
    for name, median, _, _ in rows:
        if name.startswith("exec hit: ") and name != "exec hit: sleep 1":
            tool_name = name[len("exec hit: "):]
            alone = by_name.get(tool_name + " (alone)")
            missed = by_name.get("exec miss: " + tool_name)
            if alone:
                lines.append(f"- {tool_name}: {alone:.0f} ms alone, {median:.0f} ms on a hit "
                             f"({alone / median:.2f}x)" + (f", {missed:.0f} ms on a traced miss "
                                                            f"({missed / alone:.2f}x the tool alone)." if missed else "."))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "exec.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
