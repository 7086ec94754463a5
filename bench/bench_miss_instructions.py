"""Instructions an `actioncache exec` traced miss executes besides its command (valgrind's callgrind).

    python bench/bench_miss_instructions.py                      # 3 misses, medians
    python bench/bench_miss_instructions.py --compare /tmp/before --imports

A traced miss is the cost a loop pays for every run that cannot hit: the first run of each
command, and every run of a command whose inputs changed. Its command (``python report.py``, a
script that sleeps 50 ms and prints a line) runs under strace, the read-set is built and hashed,
the entry stored, the run logged. Callgrind counts the instructions of the ``exec`` process alone
(``--trace-children=no``): strace and the command run outside it, so the figure is what the miss
path itself executes (start-up, imports, key, lookup, reading the trace, hashing and stat'ing the
read-set, the store write, the records), the same on a loaded machine as on a quiet one.

Every measured run is a miss of its own: a keyed variable (``BENCH_NONCE``, every visible variable
is in the key) takes a new value per run, in a store that already exists (warmed by two misses
first, which also write the bytecode and the tracer's memo), as in a loop past its first
iteration. ``ACTIONCACHE_CHEAP_MS=0``: no measuring run, every command cached. Each run is checked:
exit 0, the command's output, one more entry in the store.

Runs through ``DIR/bin/actioncache`` (python -S, as installed) with ``DIR/src`` first on the path,
for this checkout and each ``--compare DIR`` (e.g. ``git archive main bin src | tar -x -C
/tmp/before``), in the same run. ``--imports`` adds the modules a miss imports (their number, and
``-X importtime``'s total, a wall time, so only indicative on a loaded machine).

Needs valgrind and strace. Stdlib only. Prints a Markdown table and writes
bench/results/miss_instructions.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_hit_instructions import callgrind  # one run's instructions under callgrind (children not followed)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = str(Path(sys.executable).parent / "python")

REPORT = """import time
time.sleep(0.05)
print("ok")
"""


def entries(store: Path) -> int:
    with sqlite3.connect(store) as conn:
        return int(conn.execute("SELECT count(*) FROM entries WHERE key LIKE 'cache:exec:%'").fetchone()[0])


def importtime(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, float]:
    """(modules imported, -X importtime's total in ms) of one miss."""
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    rows = [line.split("|") for line in proc.stderr.splitlines() if line.startswith("import time:") and "self [us]" not in line]
    top = [int(row[1]) for row in rows if not row[2].startswith("  ")]  # cumulative of the top-level imports
    return len(rows), sum(top) / 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="also another checkout's misses: DIR/bin/actioncache with DIR/src first on the path")
    parser.add_argument("--imports", action="store_true", help="also the modules a miss imports and their import time")
    parser.add_argument("--no-write", action="store_true", help="print only (no bench/results/miss_instructions.md)")
    args = parser.parse_args()
    for tool in ("valgrind", "strace"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed: nothing to measure", file=sys.stderr)
            return 1
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ac-miss-ir-") as tmp_text:
        tmp = Path(tmp_text)
        work = tmp / "work"
        work.mkdir()
        (work / "report.py").write_text(REPORT)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CACHE_", "ACTIONCACHE_", "PYTHON"))}
        env.update(XDG_CACHE_HOME=str(tmp / "xdg"), ACTIONCACHE_CHEAP_MS="0", ACTIONCACHE_TRUST_FILE=str(tmp / "trust"))
        checkouts = {"": ROOT, **{f" ({other})": Path(other).resolve() for other in args.compare}}
        cases: dict[str, tuple[list[str], dict[str, str], Path | None]] = {
            "python -c pass": ([PY, "-c", "pass"], env, None), "python -S -c pass": ([PY, "-S", "-c", "pass"], env, None)}
        for number, (label, root) in enumerate(checkouts.items()):
            store = tmp / f"store{number}.db"
            own = {**env, "PYTHONPATH": str(root / "src"), "ACTIONCACHE_URL": f"sqlite:///{store}"}
            argv = [PY, "-S", str(root / "bin" / "actioncache"), "exec", "--mode", "use", "--", PY, "report.py"]
            for warm in range(2):
                subprocess.run(argv, env={**own, "BENCH_NONCE": f"warm{warm}"}, cwd=work, check=True,
                               stdout=subprocess.DEVNULL)
            cases[f"exec traced miss{label}"] = (argv, own, store)
        counts: dict[str, list[int]] = {name: [] for name in cases}
        for i in range(args.runs):
            for name, (argv, case_env, store) in cases.items():
                before = entries(store) if store else 0
                total, stdout, code = callgrind(argv, {**case_env, "BENCH_NONCE": str(i)}, work, tmp / f"cg.{i}.out")
                if store and (code != 0 or stdout != b"ok\n" or entries(store) != before + 1):
                    raise SystemExit(f"{name} was not a stored miss (exit {code}): {stdout[:200]!r}")
                counts[name].append(total)
        floor = statistics.median(counts["python -c pass"])
        load_after = os.getloadavg()
        lines = [f"`python bench/bench_miss_instructions.py --runs {args.runs}`: Python {sys.version.split()[0]}, "
                 f"{args.runs} run(s) each, median instructions of the exec process (callgrind Ir, the command and "
                 f"strace not included; load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after, "
                 "which does not change these counts)", "",
                 "| case | instructions (M) | x python -c pass |", "|---|---:|---:|"]
        for name, values in counts.items():
            median = statistics.median(values)
            lines.append(f"| {name} | {median / 1e6:.2f} | {median / floor:.2f} |")
        if args.imports:
            lines += ["", "| case | modules imported | -X importtime total (ms, wall) |", "|---|---:|---:|"]
            for name, (argv, case_env, store) in cases.items():
                if store:
                    runs = [importtime(argv, {**case_env, "BENCH_NONCE": f"imports{i}"}, work) for i in range(3)]
                    lines.append(f"| {name} | {runs[-1][0]} | {statistics.median(r[1] for r in runs):.1f} |")
        print("\n".join(lines))
        if not args.no_write:
            (HERE / "results").mkdir(exist_ok=True)
            (HERE / "results" / "miss_instructions.md").write_text(
                "# Instructions of an `actioncache exec` traced miss (the exec process alone)\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
