"""Instructions an `actioncache exec` hit executes, against `python -c pass` (valgrind's callgrind).

    python bench/bench_hit_instructions.py            # 3 runs of each case, medians
    python bench/bench_hit_instructions.py --runs 1 --imports   # plus a per-module import profile

Hardware counters are not available on every machine (not in most VMs); callgrind counts the
instructions a process executes (Ir), the same on a loaded machine as on a quiet one. Cases, all
with this environment's interpreter (the one bin/actioncache uses):

* `python -c pass` (the target: a hit should cost <= 1.0x) and `python -S -c pass` (the floor the
  launcher starts from);
* hits of bench_exec.py's commands, `cat PROMPT.md` and `git log --oneline -5` (scope read),
  `shellcheck loop.sh` (scope verify, when installed) and an `llm_ro` REPORT script (a Python
  stand-in for an LLM call that reads HEAD and the prompt), through the installed `actioncache`
  command's own code (bin/actioncache, python -S), replayed from a store filled just before.

Under valgrind the real hit path declines to answer (valgrind holds descriptors of its own, which
the hit path would have to key, so it leaves the run to the full command): the hit case runs
`hit_harness.py`, which makes the inherited-descriptor and outer-tracer checks report nothing and
then runs bin/actioncache unchanged (compiling its text, as python does a script's); the entry is made under valgrind as well (valgrind lowers
RLIMIT_NOFILE, which the key covers). Everything else (config memo, key, lookup, read-set check,
replay, journal) is the real path. Each measured run is checked to be a hit (exit code 0, the
bytes the hit gave before on stdout, a hit as the last line of the store's hit journal).

The harness is imported as a module (`python -S -c "import hit_harness"`, its bytecode cached after
the warm-up runs), not run as a script: python compiles a script's text on every run, which cost
each hit case ~1.1 M instructions a real hit never pays. What it still costs is measured in the
same run (`harness alone`: the harness running an empty launcher, against `python -S` running
that launcher) and printed, not subtracted: the hit rows include it.

Needs valgrind. Stdlib only. Prints a Markdown table and writes bench/results/hit_instructions.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
ACTIONCACHE = str(BIN / "actioncache")
PY = str(BIN / "python")

HARNESS = '''import sys
source, launcher = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
sys.path[0] = launcher.rpartition("/")[0]  # as python sets it for the script (bin/: the launcher's module)
if source != "-":
    sys.path.append(source)  # another checkout's package, found before the installed one
from _frozen_importlib_external import PathFinder


class PatchKeys:
    # Finds actioncache.runs.keys as the import system would and patches it once loaded; every other
    # import goes on as usual (in the order the launcher does them: its own search is measured too).
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "actioncache.runs.keys":
            return None
        sys.meta_path.remove(PatchKeys)
        spec = PathFinder.find_spec(name, path, target)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            module.inherited_fds = lambda: []  # valgrind's own descriptors
            module.under_trace = lambda: False

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, PatchKeys)
with open(launcher, encoding="utf-8") as handle:
    source_text = handle.read()
# exec of the text, as python runs a script (compile() would first set up the ast module's types)
exec(source_text, {"__name__": "__main__", "__file__": launcher})
'''


def callgrind(argv: list[str], env: dict[str, str], cwd: Path, out: Path) -> tuple[int, bytes, int]:
    """Total instructions (Ir) of one run, its stdout and exit code."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
                          env=env, cwd=cwd, capture_output=True, check=False)
    match = re.search(rb"Collected : (\d+)", proc.stderr)
    if match is None:
        raise SystemExit(f"valgrind gave no total for {argv}: {proc.stderr[-500:].decode(errors='replace')}")
    return int(match.group(1)), proc.stdout, proc.returncode


LLM = """import subprocess, time
head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
prompt = open("PROMPT.md").read()
time.sleep(0.2)  # the model thinking (a stand-in: no LLM runs here)
print(f"REPORT at {head[:12]}: {len(prompt.split())} words of prompt, all tasks on track")
"""


def make_tree(work: Path) -> None:
    """The files bench_exec.py's hit cases use, in a git repository (git log; llm_ro keys HEAD)."""
    work.mkdir()
    (work / "PROMPT.md").write_text("Build the thing. Test it. Commit.\n" * 20)
    (work / "loop.sh").write_text('#!/bin/sh\nfor f in "$@"; do\n  printf "%s\\n" "$f"\ndone\n')
    (work / "report.py").write_text(LLM)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    for git in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *git], cwd=work, env=env, check=True, capture_output=True)


def commands() -> list[tuple[str, list[str], list[str]]]:
    """(name, exec flags, command): bench_exec.py's hit cases."""
    found = [("cat PROMPT.md", ["--scope", "read"], ["cat", "PROMPT.md"]),
             ("git log --oneline -5", ["--scope", "read"], ["git", "log", "--oneline", "-5"])]
    if shutil.which("shellcheck"):
        found.append(("shellcheck loop.sh", [], ["shellcheck", "loop.sh"]))
    found.append(("llm_ro REPORT script", ["--scope", "llm_ro", "--phase", "REPORT"], [PY, "report.py"]))
    return found


def hit_journals(store: Path, cache_home: Path) -> list[Path]:
    """Where a launcher keeps the store's hit journal: in the user cache directory (named by the
    store's path, as ``_lean.hit_journal`` names it), or beside the store (earlier versions, which
    ``--compare`` may measure)."""
    name = hashlib.sha256(os.path.abspath(store).encode()).hexdigest()[:32]
    return [cache_home / "actioncache" / "exec-sidecars" / f"{name}-exec-hits.jsonl", Path(f"{store}-exec-hits.jsonl")]


def journal_lines(journals: list[Path]) -> list[bytes]:
    lines: list[bytes] = []
    for journal in journals:
        try:
            lines += journal.read_bytes().splitlines()
        except OSError:
            pass
    return lines


def was_hit(journal: list[Path], before: list[bytes]) -> bool:
    """The run appended one line to the hit journal, and it says hit (the fast path answered)."""
    after = journal_lines(journal)
    return len(after) == len(before) + 1 and json.loads(after[-1]).get("outcome") == "hit"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--imports", action="store_true", help="also print python -X importtime of a hit")
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="also the hits with another checkout's launcher and package, DIR/bin/actioncache and "
                             "DIR/src (e.g. `git archive main bin src | tar -x -C /tmp/before`), in the same run")
    parser.add_argument("--no-write", action="store_true", help="print only (no bench/results/hit_instructions.md)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to measure", file=sys.stderr)
        return 1
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ac-hit-ir-") as tmp_text:
        tmp = Path(tmp_text)
        work = tmp / "work"
        make_tree(work)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CACHE_", "ACTIONCACHE_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(XDG_CACHE_HOME=str(tmp / "xdg"), ACTIONCACHE_CHEAP_MS="0", CACHE_SCOPE="verify,read,llm_ro")
        (tmp / "hit_harness.py").write_text(HARNESS)
        (tmp / "empty_launcher.py").write_text("pass\n")
        harness = [PY, "-S", "-c", f"import sys; sys.path[0] = {str(tmp)!r}; import hit_harness"]  # ("" there: the cwd)
        launchers = {"": ("-", ACTIONCACHE)}  # "-": the package the launcher finds
        for other in args.compare:
            root = Path(other).resolve()
            launchers[f" ({other})"] = (str(root / "src"), str(root / "bin" / "actioncache"))
        # name: (argv, the hit's stdout or None, the environment, the store's hit journal or None)
        cases: dict[str, tuple[list[str], bytes | None, dict[str, str], list[Path] | None]] = {"python -c pass": ([PY, "-c", "pass"], None, env, None),
                                  "python -S -c pass": ([PY, "-S", "-c", "pass"], None, env, None)}
        for number, (label, (source, launcher)) in enumerate(launchers.items()):
            # A store per launcher: two checkouts whose entry memos differ in format would each read
            # the other's memo as not theirs and every hit would query SQLite.
            store = tmp / f"store{number}.db"
            own_env = {**env, "ACTIONCACHE_URL": f"sqlite:///{store}"}
            journal = hit_journals(store, tmp / "xdg")
            for name, flags, command in commands():
                argv = [*harness, source, launcher, "exec", "--mode", "use", *flags,
                        "--", *command]
                # The entry is made under valgrind too: valgrind lowers RLIMIT_NOFILE, which is in the key.
                for _ in range(3):  # a miss, the measured run, then hits; and the bytecode is written
                    before = journal_lines(journal)
                    out = subprocess.run(["valgrind", "--tool=none", "-q", *argv], env=own_env, cwd=work,
                                         stdout=subprocess.PIPE, check=True).stdout
                if not was_hit(journal, before):
                    raise SystemExit(f"{name}{label}: the third run was not a hit")
                cases[f"exec hit: {name}{label}"] = (argv, out, own_env, journal)
        empty = str(tmp / "empty_launcher.py")
        cases["harness alone (empty launcher)"] = ([*harness, "-", empty], None, env, None)
        cases["python -S, the empty launcher"] = ([PY, "-S", empty], None, env, None)
        counts: dict[str, list[int]] = {name: [] for name in cases}
        for i in range(args.runs):
            for name, (argv, expected, case_env, journal) in cases.items():
                before = journal_lines(journal) if journal else []
                total, stdout, code = callgrind(argv, case_env, work, tmp / f"cg.{i}.out")
                if journal and (code != 0 or stdout != expected or not was_hit(journal, before)):
                    raise SystemExit(f"{name} was not a hit (exit {code}): {stdout[:200]!r}")
                counts[name].append(total)
        floor = statistics.median(counts["python -c pass"])
        load_after = os.getloadavg()
        lines = [f"`python bench/bench_hit_instructions.py --runs {args.runs}`: Python {sys.version.split()[0]}, "
                 f"{args.runs} run(s) each, median instructions (callgrind Ir; load average (1 min) "
                 f"{load_before[0]:.1f} before, {load_after[0]:.1f} after, which does not change these counts)", "",
                 "| case | instructions (M) | x python -c pass |", "|---|---:|---:|"]
        for name, values in counts.items():
            median = statistics.median(values)
            lines.append(f"| {name} | {median / 1e6:.2f} | {median / floor:.2f} |")
        print("\n".join(lines))
        if not args.no_write:
            (HERE / "results").mkdir(exist_ok=True)
            (HERE / "results" / "hit_instructions.md").write_text(
                "# Instructions of an `actioncache exec` hit against `python -c pass`\n\n" + "\n".join(lines) + "\n")
        if args.imports:
            argv, _, case_env, _ = cases["exec hit: cat PROMPT.md"]
            proc = subprocess.run(["valgrind", "--tool=none", "-q", PY, "-S", "-X", "importtime", *argv[2:]], env=case_env,
                                  cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
            print("\n```\n" + proc.stderr + "```")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
