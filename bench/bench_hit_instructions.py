"""Instructions an `actioncache exec` hit executes, against `python -c pass` (valgrind's callgrind).

    python bench/bench_hit_instructions.py            # 3 runs of each case, medians
    python bench/bench_hit_instructions.py --runs 1 --imports   # plus a per-module import profile

Hardware counters are not available on every machine (not in most VMs); callgrind counts the
instructions a process executes (Ir), the same on a loaded machine as on a quiet one. Cases, all
with this environment's interpreter (the one bin/actioncache uses):

* `python -c pass` (the target: a hit should cost <= 1.0x) and `python -S -c pass` (the floor the
  launcher starts from);
* a hit of `cat PROMPT.md` (scope read) through the installed `actioncache` command's own code
  (bin/actioncache, python -S), replayed from a store filled just before.

Under valgrind the real hit path declines to answer (valgrind holds descriptors of its own, which
the hit path would have to key, so it leaves the run to the full command): the hit case runs
`hit_harness.py`, which makes the inherited-descriptor and outer-tracer checks report nothing and
then runs bin/actioncache unchanged; the entry is made under valgrind as well (valgrind lowers
RLIMIT_NOFILE, which the key covers). Everything else (config memo, key, lookup, read-set check,
replay, journal) is the real path. The harness asserts that the run was a hit (exit code 0, the
file's bytes on stdout).

Needs valgrind. Stdlib only. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--imports", action="store_true", help="also print python -X importtime of a hit")
    parser.add_argument("--compare", metavar="SRC", action="append", default=[],
                        help="also a hit with the package from this source directory (another checkout's src/, "
                             "e.g. `git archive main src | tar -x -C /tmp/before`), in the same run")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to measure", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="ac-hit-ir-") as tmp_text:
        tmp = Path(tmp_text)
        work = tmp / "work"
        work.mkdir()
        (work / "PROMPT.md").write_text("Build the thing. Test it. Commit.\n" * 20)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CACHE_", "ACTIONCACHE_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(ACTIONCACHE_URL=f"sqlite:///{tmp / 'store.db'}", XDG_CACHE_HOME=str(tmp / "xdg"),
                   ACTIONCACHE_CHEAP_MS="0")
        hit = [ACTIONCACHE, "exec", "--mode", "use", "--scope", "read", "--", "cat", "PROMPT.md"]
        (tmp / "hit_harness.py").write_text(HARNESS)
        harnessed = [PY, "-S", str(tmp / "hit_harness.py"), "-", *hit]  # the package the launcher finds
        # The entry is made under valgrind too: valgrind lowers RLIMIT_NOFILE, which is in the key.
        for _ in range(3):  # a miss, the measured run, then hits; and the bytecode is written
            subprocess.run(["valgrind", "--tool=none", "-q", *harnessed], env=env, cwd=work,
                           stdout=subprocess.DEVNULL, check=True)
        expected = (work / "PROMPT.md").read_bytes()
        cases = {"python -c pass": [PY, "-c", "pass"], "python -S -c pass": [PY, "-S", "-c", "pass"],
                 "exec hit: cat PROMPT.md": harnessed}
        for other in args.compare:
            cases[f"exec hit: cat PROMPT.md ({other})"] = compared = [*harnessed[:3], str(Path(other).resolve()), *hit]
            for _ in range(2):  # its bytecode written, its own entry if its key differs
                subprocess.run(["valgrind", "--tool=none", "-q", *compared], env=env, cwd=work,
                               stdout=subprocess.DEVNULL, check=True)
        counts: dict[str, list[int]] = {name: [] for name in cases}
        for i in range(args.runs):
            for name, argv in cases.items():
                total, stdout, code = callgrind(argv, env, work, tmp / f"cg.{i}.out")
                if name.startswith("exec") and (code != 0 or stdout != expected):
                    raise SystemExit(f"the hit case was not a hit (exit {code}): {stdout[:200]!r}")
                counts[name].append(total)
        floor = statistics.median(counts["python -c pass"])
        print(f"Python {sys.version.split()[0]}, {args.runs} run(s) each, median instructions (callgrind Ir)\n")
        print("| case | instructions (M) | x python -c pass |\n|---|---:|---:|")
        for name, values in counts.items():
            median = statistics.median(values)
            print(f"| {name} | {median / 1e6:.2f} | {median / floor:.2f} |")
        if args.imports:
            proc = subprocess.run(["valgrind", "--tool=none", "-q", PY, "-S", "-X", "importtime",
                                   *harnessed[2:]], env=env,
                                  cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
            print("\n```\n" + proc.stderr + "```")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
