"""Every shell and Python example in README.md, docs/*.md and YAML_REFERENCE.md runs as written.

A fenced ```bash or ```python block runs unless the line before it says why it cannot:
``<!-- not run: REASON -->`` (a server or an account it needs, a placeholder for the reader's own
code, a listing that is not a program). The Python blocks of one file run in order in one
interpreter (a later block may use what an earlier one defined); each shell block runs with
``bash -e``. Both run in a copy of the checkout, with the default store in a temporary file and
``actioncache`` on PATH; the default store exists, as after a first use (reading commands never
create one).

An output block introduced by ``<!-- output of: COMMAND -->`` must match what COMMAND prints:
each of its lines matches a printed line (stdout and stderr, as a terminal shows them), in order,
where ``...`` stands for any text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group(name="docs_examples")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")), "YAML_REFERENCE.md"]
RUNNABLE = {"bash", "sh", "python"}
NOT_RUN = re.compile(r"^<!-- not run: (?P<reason>.*\S.*) -->$")
OUTPUT_OF = re.compile(r"^<!-- output of: (?P<command>.+) -->$")
SKIP = shutil.ignore_patterns(".git", ".venv", "node_modules", "__pycache__", ".hypothesis", ".pytest_cache",
                              ".state", "*.egg-info", "*.db", "*.db-*")


@dataclass
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marker: str  # the line before the fence ("" when it is not a comment)

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str) -> list[Block]:
    lines = (ROOT / doc).read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            marker = lines[i - 1].strip() if i and lines[i - 1].startswith("<!--") else ""
            out.append(Block(doc, i + 1, fence.group(1), "\n".join(lines[i + 1:end]) + "\n", marker))
            i = end
        i += 1
    return out


ALL = [b for doc in DOCS for b in blocks(doc)]
TO_RUN = [b for b in ALL if b.lang in RUNNABLE and not NOT_RUN.match(b.marker)]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A copy of the checkout and an environment in which `actioncache` and `python` are this checkout's."""
    base = tmp_path_factory.mktemp("docs")
    checkout = base / "actioncache"
    shutil.copytree(ROOT, checkout, ignore=SKIP, symlinks=True)
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.invalid"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "a clone"]):  # as a clone is
        subprocess.run(git + command, cwd=checkout, check=True, capture_output=True, timeout=120)
    (checkout / ".venv").symlink_to(Path(sys.prefix).resolve())  # the scripts find the venv already there
    bin_dir = base / "bin"
    bin_dir.mkdir()
    for name in ("python", "python3"):
        (bin_dir / name).symlink_to(sys.executable)
    (bin_dir / "actioncache").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m actioncache "$@"\n')
    (bin_dir / "actioncache").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CACHE_", "ACTIONCACHE_"))}
    env.update(PATH=os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")]),
               PYTHONPATH=str(checkout / "src"), ACTIONCACHE_URL=f"sqlite:///{str(base / 'default.db').lstrip('/')}",
               XDG_CACHE_HOME=str(base / "xdg-cache"), HOME=str(base / "home"))
    # The ONNX export of the embedding model is the machine's (kept in the user's cache, as a user's
    # is): under the sandbox's HOME the semantic examples exported it again in every run (30 s at
    # load 3, minutes under load). tests/semantic/test_embedders_index.py checks the exported model
    # against sentence-transformers; the export itself now runs when the machine has none.
    env["ACTIONCACHE_MODEL_CACHE"] = str(Path.home() / ".cache" / "actioncache" / "onnx")
    (base / "home").mkdir()
    (base / "tmp").mkdir()  # the examples' /tmp/...: this run's own (see in_sandbox)
    first_use = "from actioncache import Cache; Cache().wrap('first.use', lambda: 1, {})"
    subprocess.run([sys.executable, "-c", first_use], env=env, check=True, timeout=120)
    return checkout, env


def test_every_block_that_is_not_run_says_why():
    for block in ALL:
        if block.marker.startswith("<!-- not run"):
            assert NOT_RUN.match(block.marker), f"{block.id}: write <!-- not run: REASON -->"
    assert len(TO_RUN) >= 10, "the extraction found too few examples"


# Runs each block of a file in one namespace; the file name and line of a failing block are in the traceback.
DRIVER = """
import sys
namespace = {"__name__": "__main__"}
for path, line, code in BLOCKS:
    print(f"--- {path}:{line}", flush=True)
    exec(compile("\\n" * line + code, path, "exec"), namespace)
"""


def in_sandbox(code: str, checkout: Path) -> str:
    """An example's /tmp/... paths moved under this run's own directory: a run leaves nothing in the
    machine's /tmp, and two runs at once never share an example's database."""
    return code.replace("/tmp/", f"{checkout.parent}/tmp/")


@pytest.mark.parametrize("doc", sorted({b.doc for b in TO_RUN if b.lang == "python"}))
def test_python_examples_run(doc, sandbox):
    checkout, env = sandbox
    runnable = [(b.doc, b.line, in_sandbox(b.code, checkout)) for b in TO_RUN if b.doc == doc and b.lang == "python"]
    proc = subprocess.run([sys.executable, "-c", f"BLOCKS = {runnable!r}\n{DRIVER}"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


@pytest.mark.parametrize("block", [b for b in TO_RUN if b.lang in ("bash", "sh")], ids=lambda b: b.id)
def test_shell_example_runs(block, sandbox):
    checkout, env = sandbox
    proc = subprocess.run(["bash", "-e", "-c", in_sandbox(block.code, checkout)], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"{block.id} failed:\n{block.code}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


OUTPUTS = [b for b in ALL if OUTPUT_OF.match(b.marker)]


@pytest.mark.parametrize("block", OUTPUTS, ids=lambda b: b.id)
def test_shown_output_is_what_the_command_prints(block, sandbox):
    checkout, env = sandbox
    command = OUTPUT_OF.match(block.marker).group("command")
    proc = subprocess.run(["bash", "-e", "-c", command], cwd=checkout, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, stdin=subprocess.DEVNULL)  # as a terminal shows
    assert proc.returncode == 0, proc.stdout
    printed = proc.stdout.splitlines()
    at = 0
    for shown in (line for line in block.code.splitlines() if line.strip()):
        pattern = re.compile(".*".join(re.escape(part) for part in shown.strip().split("...")))
        while at < len(printed) and not pattern.fullmatch(printed[at].strip()):
            at += 1
        assert at < len(printed), f"{block.id}: {shown!r} is not printed (in this order) by {command!r}:\n{proc.stdout}"
        at += 1


# Labels of the project's internal planning that mean nothing to a reader.
INTERNAL_LABEL = re.compile(r"\bseed \d{3}\b|\bseed's\b|\b(?:AC|FR|SC)-\d+\b|DESIGN\.md")


def test_what_users_read_cites_no_internal_labels():
    """Docs, help texts and docstrings, examples, scripts and benchmark tables speak in user words."""
    found = []
    for folder, pattern in (("docs", "*.md"), ("src", "*.py"), ("examples", "*"), ("scripts", "*"), ("bench", "*.py"),
                            ("bench/results", "*.md")):
        for path in sorted((ROOT / folder).rglob(pattern)):
            if path.is_file() and "__pycache__" not in path.parts:
                text = path.read_text(encoding="utf-8", errors="replace")
                found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in INTERNAL_LABEL.finditer(text)]
    for name in ("README.md", "YAML_REFERENCE.md"):
        found += [f"{name}: {m.group(0)}" for m in INTERNAL_LABEL.finditer((ROOT / name).read_text(encoding="utf-8"))]
    assert not found, found
