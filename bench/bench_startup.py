"""What a short process pays for actioncache: the import, and a whole `actioncache run` that hits.

    python bench/bench_startup.py            # ~1 minute
    python bench/bench_startup.py --quick    # fewer rounds

Each candidate is a fresh process of this checkout's interpreter, timed from start to exit, beside
the floor (`python -c pass`) and a peer (`import cachetools`), in interleaved rounds (each round
runs every candidate once, in a rotating order); the report gives the median per candidate, what it
adds over `python -c pass`, and its ratio to it. Bytecode is written and warm (a first, untimed run
of each candidate), as on a user's machine: PYTHONDONTWRITEBYTECODE is removed from the
environment, since without bytecode every import compiles its module again.

Beside the wall times it counts instructions (`valgrind --tool=callgrind`, one run each, when
valgrind is installed): a count does not move with the load of the machine, so it tells whether a
change made the import cheaper even when the clock cannot. Writes bench/results/startup.md.

The targets: `from actioncache import Cache, cached` adds at most 40 ms over
`python -c pass`; a hit of `actioncache run` on a cached agent is at most 3x `python -c pass`.
A plain hit is answered from the run record before the engine loads (agents/runhit.py); the
`--stream` row is the same hit through the full engine (a streamed run is never replayed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
AGENT = ROOT / "examples" / "document_extraction.yaml"
AGENT_INPUT = '{"file_path": "examples/data/report.txt"}'


def candidates() -> dict[str, list[str]]:
    return {
        "python -c pass": [PY, "-c", "pass"],
        "import cachetools (peer)": [PY, "-c", "import cachetools"],
        "from actioncache import Cache, cached": [PY, "-c", "from actioncache import Cache, cached"],
        "... and a Cache() hit on SQLite": [PY, "-c", "from actioncache import Cache; "
                                            "Cache().wrap('bench', lambda: 1, key='startup')"],
        "actioncache run (a hit)": [PY, "-m", "actioncache", "run", str(AGENT), "--input", AGENT_INPUT],
        "actioncache run --stream (a hit, full engine)": [PY, "-m", "actioncache", "run", str(AGENT), "--input",
                                                         AGENT_INPUT, "--stream"],
    }


def environment(store_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT / "src")
    env["ACTIONCACHE_URL"] = f"sqlite:///{store_dir / 'startup.db'}"
    env["XDG_CACHE_HOME"] = str(store_dir / "xdg")  # the run index (agent-runs.db) stays in the run's directory
    return env


def run_once(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def instructions(command: list[str], env: dict[str, str]) -> int | None:
    if shutil.which("valgrind") is None:
        return None
    # Twice, the second counted: valgrind's own variables (LD_PRELOAD) are a new environment, so the
    # first `actioncache run` under it is the full engine leaving a run record for that environment.
    for _ in range(2):
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command], cwd=ROOT,
                             env=env, capture_output=True, text=True)
    for line in out.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds instead of 21")
    parser.add_argument("--no-instructions", action="store_true", help="skip the valgrind instruction counts")
    args = parser.parse_args()
    rounds = 5 if args.quick else 21
    with tempfile.TemporaryDirectory() as tmp:
        env = environment(Path(tmp))
        cands = candidates()
        for _ in range(2):  # warm: bytecode written; the agent's entry stored (a miss), then its run
            for command in cands.values():  # recorded by a hit of the full engine (agents/runrecord.py)
                run_once(command, env)
        times: dict[str, list[float]] = {name: [] for name in cands}
        names = list(cands)
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                times[name].append(run_once(cands[name], env))
        counts = {} if args.no_instructions else {name: instructions(cmd, env) for name, cmd in cands.items()}
    floor = statistics.median(times["python -c pass"])
    floor_ir = counts.get("python -c pass")
    lines = [f"# Start-up: import and `actioncache run` hit vs `python -c pass` ({rounds} interleaved rounds)", "",
             f"`python bench/bench_startup.py`; load average at the end: {os.getloadavg()[0]:.1f}; "
             f"Python {sys.version.split()[0]}.", "",
             "| process | median ms | over `python -c pass` | x pass | instructions (M) | x pass (instructions) |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in names:
        med = statistics.median(times[name])
        ir = counts.get(name)
        ir_cells = (f"{ir / 1e6:.0f} | {ir / floor_ir:.2f}" if ir and floor_ir else "— | —")
        lines.append(f"| {name} | {med * 1000:.1f} | {(med - floor) * 1000:+.1f} ms | {med / floor:.2f} | {ir_cells} |")
    report = "\n".join(lines) + "\n"
    print(report)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "startup.md").write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
