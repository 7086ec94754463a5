"""`actioncache exec` in an agent loop: what a hit costs, and what the cache saves a whole loop.

    python bench/bench_exec.py            # 9 rounds of the hit cases, 3 rounds of each loop (~7 minutes)
    python bench/bench_exec.py --quick    # 5 rounds, 2 rounds of each loop
    python bench/bench_exec.py --variants default   # the loop with the default threshold only

Part 1, hits against interpreter start-up. Each case is a new process, started as a loop starts it
(the installed `actioncache` command, .venv/bin/actioncache), in interleaved rounds; medians:

* `python -c pass` in the same environment (the floor, and the target: a hit should cost <= 1.0x);
* each command alone, and `actioncache exec` replaying it from the cache (a hit): `cat PROMPT.md`,
  `git log --oneline -5`, `shellcheck loop.sh` (when installed) and an `llm_ro` REPORT script (a
  Python stand-in for an LLM call: no LLM runs here; it sleeps 0.8 s and prints a report of the
  prompt and HEAD). The hit cases set ACTIONCACHE_CHEAP_MS=0 so that quick commands are cached too.

Part 2, a 20-iteration loop in a Ralph loop's shape (PLAN/BUILD by a stand-in agent that edits a script
and commits every 5th iteration; VERIFY: shellcheck; read: cat, ls, git log; REPORT: the llm_ro
script), run with the same commands bare ("without") and through `actioncache exec` with
CACHE_MODE=use and a new store ("with"), alternating. The cache's own account (`actioncache stats
--since`, net time saved) is compared with the measured saving (without - with). Three variants,
each with its own "without" run right before its "with" run: the defaults (commands cheaper than a
hit are not cached), ACTIONCACHE_CHEAP_MS=0 (every command cached, even cheap ones: more misses
traced under strace, more hits whose command alone takes a few milliseconds) and churn (the
defaults, with a commit in every iteration: REPORT, keyed by HEAD, never hits, and what the cache
costs such a loop is the figure).

Stdlib only. Writes bench/results/exec.md.
"""

from __future__ import annotations

import argparse
import json
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
BIN = Path(sys.executable).parent
ACTIONCACHE = str(BIN / "actioncache")
PY = sys.executable
ITERATIONS = 20

LLM = '''import subprocess, sys, time
head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
prompt = open("PROMPT.md").read()
time.sleep(0.8)  # the model thinking (a stand-in: no LLM runs in this benchmark)
print(f"REPORT at {head[:12]}: {len(prompt.split())} words of prompt, all tasks on track")
'''


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms of the process and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


@dataclass
class Case:
    name: str
    argv: list[str]
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)

    def run(self, env: dict[str, str], cwd: Path) -> None:
        wall, cpu = timed(self.argv, env, cwd)
        self.walls.append(wall)
        self.cpus.append(cpu)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


def git(work: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)


def make_tree(work: Path) -> None:
    work.mkdir(parents=True)
    (work / "PROMPT.md").write_text("# Task\n\nKeep the loop green. " * 20 + "\n")
    (work / "loop.sh").write_text('#!/bin/sh\nfor f in "$@"; do\n  printf "%s\\n" "$f"\ndone\n')
    (work / "workers").mkdir()
    (work / "workers" / "build.sh").write_text('#!/bin/sh\necho "building $1"\n')
    (work / "report.py").write_text(LLM)
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "start")


def base_env(db: Path, xdg: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CACHE_", "ACTIONCACHE_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from cached bytecode
    env.update(ACTIONCACHE_URL=f"sqlite:///{db}", XDG_CACHE_HOME=str(xdg))
    return env


# --- part 1: hits against python -c pass -------------------------------------------------------------------


def hit_cases(work: Path, env: dict[str, str], rounds: int) -> tuple[list[Case], list[tuple[str, str]], bool]:
    use = [ACTIONCACHE, "exec", "--mode", "use"]
    commands = [("cat PROMPT.md", ["--scope", "read"], ["cat", "PROMPT.md"]),
                ("git log --oneline -5", ["--scope", "read"], ["git", "log", "--oneline", "-5"])]
    shellcheck = shutil.which("shellcheck") is not None
    if shellcheck:
        commands.append(("shellcheck loop.sh", [], ["shellcheck", "loop.sh"]))
    commands.append(("llm_ro REPORT script", ["--scope", "llm_ro", "--phase", "REPORT"], [PY, "report.py"]))
    cases = [Case("python -c pass", [PY, "-c", "pass"])]
    pairs = []
    for name, flags, command in commands:
        cases += [Case(f"{name} (alone)", command), Case(f"exec hit: {name}", [*use, *flags, "--", *command])]
        pairs.append((f"{name} (alone)", f"exec hit: {name}"))
    cases.append(Case("exec, mode off: cat PROMPT.md", [ACTIONCACHE, "exec", "--", "cat", "PROMPT.md"]))
    for case in cases:  # warm: fill the entries, the page cache, the bytecode
        for _ in range(2):
            case.run(env, work)
        case.walls.clear()
        case.cpus.clear()
    for i in range(rounds):
        progress(f"hits: round {i + 1}/{rounds}")
        for case in cases:
            case.run(env, work)
    return cases, pairs, shellcheck


# --- part 2: the 20-iteration loop -------------------------------------------------------------------------


def loop_commands() -> list[tuple[list[str], list[str]]]:
    """(exec flags, command) per step of one iteration, in a Ralph loop's order."""
    steps = [(["--scope", "read"], ["cat", "PROMPT.md"]),
             (["--scope", "read"], ["ls", "workers"]),
             (["--scope", "read"], ["git", "log", "--oneline", "-5"])]
    if shutil.which("shellcheck"):
        steps.append(([], ["shellcheck", "loop.sh", "workers/build.sh"]))
    steps.append((["--scope", "llm_ro", "--phase", "REPORT"], [PY, "report.py"]))
    return steps


def build_step(work: Path, iteration: int, commit_every: int = 5) -> None:
    """The stand-in agent's BUILD phase: every ``commit_every``-th iteration it edits a script and commits."""
    if iteration % commit_every == commit_every - 1:
        with open(work / "workers" / "build.sh", "a") as handle:
            handle.write(f'echo "step {iteration}"\n')
        git(work, "commit", "-qam", f"build {iteration}")


def run_loop(work: Path, env: dict[str, str], cached: bool, commit_every: int = 5) -> float:
    """One 20-iteration loop; the seconds spent in the loop's commands (BUILD excluded: the same in both)."""
    spent = 0.0
    for iteration in range(ITERATIONS):
        build_step(work, iteration, commit_every)
        for flags, command in loop_commands():
            argv = [ACTIONCACHE, "exec", *flags, "--", *command] if cached else command
            started = time.perf_counter()
            subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            spent += time.perf_counter() - started
    return spent


# name: (the loop's environment with the cache, a commit every N iterations)
VARIANTS: dict[str, tuple[dict[str, str], int]] = {"default": ({}, 5), "cheap0": ({"ACTIONCACHE_CHEAP_MS": "0"}, 5),
                                                   "churn": ({}, 1)}


def loop_rounds(tmp: Path, rounds: int, variants: list[str]) -> dict[str, list[dict[str, float]]]:
    """``rounds`` rounds; in each, every variant's loop without the cache, then with it."""
    results: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    for i in range(rounds):
        for name in variants:
            progress(f"loop ({name}): round {i + 1}/{rounds} (without, then with the cache)")
            results[name].append(loop_round(tmp / f"{name}-{i}", *VARIANTS[name]))
    return results


def loop_round(tmp: Path, extra: dict[str, str], commit_every: int) -> dict[str, float]:
    tmp.mkdir()
    out: dict[str, float] = {"load": os.getloadavg()[0]}
    for cached in (False, True):
        work = tmp / f"loop-{cached}"
        make_tree(work)
        env = base_env(tmp / "loop.db", tmp / "xdg-loop")
        if cached:
            env.update(CACHE_MODE="use", CACHE_SCOPE="verify,read,llm_ro", **extra)
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
        out["with" if cached else "without"] = run_loop(work, env, cached, commit_every)
        if cached:
            report = json.loads(subprocess.run([ACTIONCACHE, "stats", "--json", "--since", started], env=env,
                                               cwd=work, capture_output=True, check=True).stdout)
            out.update(reported=report["time_saved_s"], by_hits=report["saved_by_hits_s"],
                       hit_cost=report["hit_cost_s"], overhead=report["overhead_s"], hits=report["hits"],
                       misses=report["misses"], cheap=report.get("uncached_cheap", 0),
                       unrecorded=report.get("unrecorded", 0),
                       failures=report.get("failures", 0))
    out["measured"] = out["without"] - out["with"]
    out["load_after"] = os.getloadavg()[0]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 hit rounds, 2 loop rounds")
    parser.add_argument("--rounds", type=int, help="hit rounds (default 9)")
    parser.add_argument("--loops", type=int, help="loop rounds (default 3)")
    parser.add_argument("--variants", default="default,cheap0,churn",
                        help="the loops to run, in each round: default (commands cheaper than a hit not cached), "
                             "cheap0 (ACTIONCACHE_CHEAP_MS=0: every command cached), churn (a commit every "
                             "iteration: REPORT never hits); default all three")
    args = parser.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants or any(v not in VARIANTS for v in variants):
        parser.error(f"--variants: a comma-separated list of {', '.join(VARIANTS)}")
    rounds = args.rounds or (5 if args.quick else 9)
    loops = args.loops or (2 if args.quick else 3)
    if not os.access(ACTIONCACHE, os.X_OK):
        sys.exit(f"bench_exec: {ACTIONCACHE} is missing; run `bash scripts/install.sh` (it installs bin/actioncache)")
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "src")], check=False)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        work = tmp / "hits"
        make_tree(work)
        env = base_env(tmp / "hits.db", tmp / "xdg-hits")
        env.update(ACTIONCACHE_CHEAP_MS="0", CACHE_SCOPE="verify,read,llm_ro")
        cases, pairs, shellcheck = hit_cases(work, env, rounds)
        loops_out = loop_rounds(tmp, loops, variants)
    write_report(cases, pairs, shellcheck, loops_out, rounds, load_before, os.getloadavg())
    return 0


def write_report(cases: list[Case], pairs: list[tuple[str, str]], shellcheck: bool,
                 loops: dict[str, list[dict[str, float]]], rounds: int, load_before: tuple[float, ...],
                 load_after: tuple[float, ...]) -> None:
    by = {c.name: c for c in cases}
    floor = by["python -c pass"]
    lines = [
        "# `actioncache exec`: what a hit costs, and what the cache saves a loop",
        "",
        f"`python bench/bench_exec.py` on {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs. Load average (1 min) "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after: a shared machine, so the CPU column "
        "(user + system of the process and its children) is the steadier one.",
        "",
        f"## Hits against `python -c pass` ({rounds} interleaved rounds, medians; the installed "
        "`actioncache` command)",
        "",
        "| case | wall ms | CPU ms | hit / `python -c pass` (wall) | (CPU) |",
        "|---|---:|---:|---:|---:|",
        f"| python -c pass | {floor.wall:.1f} | {floor.cpu:.1f} | 1.00x | 1.00x |",
    ]
    for alone, hit in pairs:
        a, h = by[alone], by[hit]
        lines.append(f"| {alone} | {a.wall:.1f} | {a.cpu:.1f} | | |")
        lines.append(f"| {hit} | {h.wall:.1f} | {h.cpu:.1f} | **{h.wall / floor.wall:.2f}x** | "
                     f"{h.cpu / floor.cpu:.2f}x |")
    off = by["exec, mode off: cat PROMPT.md"]
    lines.append(f"| exec, mode off: cat PROMPT.md | {off.wall:.1f} | {off.cpu:.1f} | {off.wall / floor.wall:.2f}x | "
                 f"{off.cpu / floor.cpu:.2f}x |")
    if not shellcheck:
        lines.append("\nshellcheck is not installed here: its case was left out.")
    titles = {"default": f"## A {ITERATIONS}-iteration loop in a Ralph loop's shape",
              "cheap0": "## The same loop with ACTIONCACHE_CHEAP_MS=0 (every command cached, even cheap ones)",
              "churn": "## The same loop with a commit every iteration (REPORT never hits)"}
    intro = {"default": "Seconds spent in the loop's commands (BUILD excluded), without the cache (the commands run "
                        "directly) and with it (`actioncache exec`, CACHE_MODE=use, a new store), then the cache's own "
                        "account from `actioncache stats --since` (net time saved = what hits saved less the overhead "
                        "of misses and of commands not worth caching).",
             "cheap0": "As above, with ACTIONCACHE_CHEAP_MS=0 in the loop's environment: no command is judged cheap, "
                       "so `cat`, `ls` and `git log` are traced on a miss and replayed on a hit like the rest, and no "
                       "measuring run times a command untraced (a hit's saving rests on the traced run's figure for "
                       "the command's own time, `trace.command_ms`). The \"without\" run of each round is its own, "
                       "right before the \"with\" run.",
             "churn": "As the first loop, but the stand-in agent commits in every iteration, as a loop whose BUILD "
                      "commits every time does: REPORT (`llm_ro`, keyed by HEAD) is a new request in every iteration "
                      "and never hits, and shellcheck reads a changed script every time. What the cache costs such a "
                      "loop is the point: after three misses whose overhead no hit repaid, a command's misses run "
                      "directly, untraced and not recorded (docs/agent-loops.md, churning commands)."}
    for name, rows in loops.items():
        lines += ["", titles[name], "", intro[name], ""]
        lines += loop_table(rows)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "exec.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def loop_table(loops: list[dict[str, float]]) -> list[str]:
    lines = ["| round | load (1 min) | without s | with s | measured saving s | reported (net) s | reported / measured "
             "| hits | misses | not cached (cheap) | misses not recorded | failures | hit cost s | overhead s |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(loops, 1):
        ratio = r["reported"] / r["measured"] if r["measured"] else float("nan")
        lines.append(f"| {i} | {r['load']:.1f} | {r['without']:.2f} | {r['with']:.2f} | {r['measured']:.2f} | {r['reported']:.2f} | "
                     f"{ratio:.2f} | {int(r['hits'])} | {int(r['misses'])} | {int(r['cheap'])} | {int(r.get('unrecorded', 0))} | "
                     f"{int(r['failures'])} | "
                     f"{r['hit_cost']:.2f} | {r['overhead']:.2f} |")
    measured = statistics.median(r["measured"] for r in loops)
    reported = statistics.median(r["reported"] for r in loops)
    worst = max(loops, key=lambda r: abs(r["reported"] - r["measured"]))
    verdict = "never cost the loop time" if all(r["measured"] > 0 for r in loops) else "cost the loop time in a round"
    per_round = ", ".join("%.2f s" % r["measured"] for r in loops)
    lines += ["", f"- Median measured saving {measured:.2f} s, median reported {reported:.2f} s "
              f"({(reported - measured) / abs(measured):+.1%} of the measured saving)." if measured else "",
              f"- The round furthest off: reported {worst['reported']:.2f} s against {worst['measured']:.2f} s measured "
              f"({(worst['reported'] - worst['measured']) / abs(worst['measured'] or 1.0):+.1%})." if loops else "",
              f"- The cache {verdict}: saving per round {per_round}.",
              f"- With the cache, the loop's commands took {min(r['with'] / r['without'] for r in loops):.2f}x to "
              f"{max(r['with'] / r['without'] for r in loops):.2f}x their time without it.", ""]
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
