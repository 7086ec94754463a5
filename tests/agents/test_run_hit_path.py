"""The `actioncache run` hit path (agents/runhit.py) against the full engine.

A run decided by what it read leaves a record; the next identical command replays it without
loading the engine. The rule under test: the replay gives the same bytes and the same hit/miss
verdict as the full engine, whatever changed in between (the YAML, an imported file, a file the
key reads, the input, the environment, trust, the store's rows), and a run that is not decided by
what it read is never replayed. Every run is a real `python -m actioncache run` process; whether
the hit path answered is read from `-X importtime` (the engine module was not imported).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.agents.loader import compile_run_block
from actioncache.agents.runrecord import import_problem, pure_block_problem, template_problem

AGENT = """\
name: reader
imports:
  - path: ./extract.py
    namespace: docs
state_schema:
  file_path: {type: str, required: true}
  who: {type: str, default: alice}
nodes:
  - name: extract
    uses: cache.wrap
    with:
      action: docs.extract
      key_strategy: file_content
      key_source: file
      args:
        file: "{{ state.file_path }}"
        who: "{{ state.who }}"
    output: extracted
  - name: report
    run: |
      hit = state["extracted"].get("_cache_hit", False)
      print("hit" if hit else "miss", "for", state["who"])
      return {"words": state["extracted"]["result"]["words"]}
"""

EXTRACT = """\
from pathlib import Path

def extract(state, file, who="alice"):
    return {"words": len(Path(file).read_text(encoding="utf-8").split()), "who": who}

def register_actions(registry, engine):
    registry["extract"] = extract
"""


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    lean: bool  # answered by the hit path (the engine was never imported)


class World:
    """A directory with an agent, its import, a data file, a store and a run index."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.work = root / "work"
        self.state = root / "state"
        self.work.mkdir()
        self.state.mkdir()
        (self.work / "agent.yaml").write_text(AGENT, encoding="utf-8")
        (self.work / "extract.py").write_text(EXTRACT, encoding="utf-8")
        (self.work / "data.txt").write_text("one two three\n", encoding="utf-8")
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
        self.env.update(XDG_CACHE_HOME=str(self.state / "xdg"), ACTIONCACHE_URL=f"sqlite:///{self.state / 'store.db'}",
                        PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
        self.input = {"file_path": "data.txt"}
        self.extra: list[str] = []

    @property
    def index(self) -> Path:
        return self.state / "xdg" / "actioncache" / "agent-runs.db"

    def run(self) -> Outcome:
        argv = ["run", "agent.yaml", "--input", json.dumps(self.input), *self.extra]
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "actioncache", *argv], cwd=self.work,
                              env=self.env, capture_output=True, text=True, timeout=120)
        lines = done.stderr.splitlines(keepends=True)
        imports = [line for line in lines if line.startswith("import time:")]
        stderr = "".join(line for line in lines if not line.startswith("import time:"))
        # answered without the engine (a process that failed before loading it answered nothing)
        lean = done.returncode == 0 and not any("actioncache.agents.engine" in line for line in imports)
        return Outcome(done.returncode, done.stdout, stderr, lean)

    def reference(self) -> Outcome:
        """What the full engine gives now (the store and index are put back afterwards)."""
        saved = self.root / "saved"
        shutil.copytree(self.state, saved)
        try:
            if self.index.exists():
                self.index.unlink()
            outcome = self.run()
            assert not outcome.lean
            return outcome
        finally:
            shutil.rmtree(self.state)
            shutil.move(str(saved), str(self.state))

    def rows(self) -> list[tuple[str]]:
        with sqlite3.connect(self.state / "store.db") as db:
            return list(db.execute("SELECT key FROM entries"))


def warm(world: World) -> None:
    first = world.run()  # a miss: stores the entry
    assert first.code == 0 and '"_cache_hit": false' in first.stdout
    second = world.run()  # a hit by the full engine: leaves the record
    assert second.code == 0 and not second.lean and '"_cache_hit": true' in second.stdout


def test_an_unchanged_run_is_answered_by_the_hit_path_with_the_same_bytes(tmp_path: Path) -> None:
    world = World(tmp_path)
    warm(world)
    full = world.reference()
    lean = world.run()
    assert lean.lean, "the hit path did not answer an unchanged run"
    assert (lean.code, lean.stdout, lean.stderr) == (full.code, full.stdout, full.stderr)
    assert "hit for alice" in lean.stderr


def _mutate(world: World, change: str) -> None:
    work = world.work
    if change == "yaml":
        (work / "agent.yaml").write_text(AGENT.replace("default: alice", "default: bob"), encoding="utf-8")
    elif change == "yaml-comment":
        (work / "agent.yaml").write_text("# a comment\n" + AGENT, encoding="utf-8")
    elif change == "include":
        (work / "extract.py").write_text(EXTRACT.replace('"who": who', '"who": who, "v": 2'), encoding="utf-8")
    elif change == "data":
        (work / "data.txt").write_text("one two three four\n", encoding="utf-8")
    elif change == "input":
        world.input = {"file_path": "data.txt", "who": "carol"}
    elif change == "env":
        world.env["ACTIONCACHE_MODE"] = "off"
    elif change == "untrusted":
        world.extra = ["--untrusted"]
    elif change == "store-flag":
        world.extra = ["--store", f"sqlite:///{world.state / 'other.db'}"]
    elif change in ("expired", "invalidated", "replaced"):
        with sqlite3.connect(world.state / "store.db") as db:
            if change == "expired":
                db.execute("UPDATE entries SET expires_at = 1.0")
            elif change == "invalidated":
                db.execute("DELETE FROM entries")
            else:
                db.execute("UPDATE entries SET created_at = created_at - 60, metadata = '{}'")
        db.close()
    elif change == "config":
        (work / "actioncache.toml").write_text('mode = "off"\n', encoding="utf-8")
    elif change == "shadow":
        (work / "json.py").write_text("raise SystemExit('shadowed')\n", encoding="utf-8")
    else:
        raise AssertionError(change)


CHANGES = ["yaml", "yaml-comment", "include", "data", "input", "env", "untrusted", "store-flag", "expired",
           "invalidated", "replaced", "config", "shadow"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.sampled_from(CHANGES), min_size=1, max_size=2, unique=True))
def test_after_any_change_the_hit_path_agrees_with_the_full_engine(tmp_path_factory: object, changes: list[str]) -> None:
    root = tmp_path_factory.mktemp("world")  # type: ignore[attr-defined]
    world = World(root)
    warm(world)
    for change in changes:
        _mutate(world, change)
    full = world.reference()
    fast = world.run()
    assert (fast.code, fast.stdout, fast.stderr) == (full.code, full.stdout, full.stderr), changes
    assert not fast.lean, f"the hit path answered after {changes}"  # every change here is one it must see


def test_a_run_block_that_reads_the_clock_is_never_replayed(tmp_path: Path) -> None:
    world = World(tmp_path)
    (world.work / "agent.yaml").write_text(AGENT.replace(
        'print("hit" if hit else "miss", "for", state["who"])',
        'import time\n      print("at", time.time())'), encoding="utf-8")
    warm(world)
    third = world.run()
    assert third.code == 0 and not third.lean
    assert not world.index.exists() or not sqlite3.connect(world.index).execute("SELECT 1 FROM runs").fetchall()


def test_a_stream_run_is_never_replayed(tmp_path: Path) -> None:
    world = World(tmp_path)
    warm(world)
    world.extra = ["--stream"]
    outcome = world.run()
    assert outcome.code == 0 and not outcome.lean and '"duration_ms"' in outcome.stdout


def test_an_import_that_decides_at_import_time_is_never_skipped_by_a_replay(tmp_path: Path) -> None:
    """A module's top level that declares a key context only when a file is non-empty (or after
    some hour): the replay would skip that decision, so such a run writes no record and the next
    run, after the file changed, gets the full engine's answer."""
    world = World(tmp_path)
    (world.work / "flag").write_text("", encoding="utf-8")
    (world.work / "extract.py").write_text(EXTRACT.replace("from pathlib import Path\n", (
        "import os\nfrom pathlib import Path\nfrom actioncache.agents import declare_key_context\n")) + (
        "if os.stat('flag').st_size > 0:\n    declare_key_context(extract, lambda args: {'variant': 2})\n"),
        encoding="utf-8")
    warm(world)
    (world.work / "flag").write_text("x\n", encoding="utf-8")
    full = world.reference()
    fast = world.run()
    assert (fast.code, fast.stdout, fast.stderr) == (full.code, full.stdout, full.stderr)
    assert not fast.lean and '"_cache_hit": false' in fast.stdout


def test_input_from_a_pipe_is_read_once_by_the_engine(tmp_path: Path) -> None:
    """``--input @/dev/stdin`` (a pipe) after a warm run: the hit path does not read it (it could
    not give it back), the engine gets all of it."""
    world = World(tmp_path)
    warm(world)
    done = subprocess.run([sys.executable, "-m", "actioncache", "run", "agent.yaml", "--input", "@/dev/stdin"],
                          cwd=world.work, env=world.env, input=json.dumps(world.input), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and '"_cache_hit": true' in done.stdout, done.stderr


@pytest.mark.parametrize("source, allowed", [
    (EXTRACT, True),
    ("from __future__ import annotations\nimport os\nfrom typing import Any\nX = 3\n"
     "def f(state: dict[str, Any]) -> dict: return {}\ndef register_actions(registry, engine):\n"
     "    registry['f'] = f\n", True),
    ("import os\nif os.environ.get('X'):\n    pass\n", False),  # a branch at import
    ("import time\nT = time.time()\n", False),  # a call at import
    ("import os\nflag = os.environ.get('X') and 1\n", False),
    ("import mylocalhelper\n", False),  # a module of the user's, whose own top level would be skipped
    ("from . import sibling\n", False),
    ("import functools\n@functools.cache\ndef f(): return 1\n", False),  # a decorator is a call
    ("class A:\n    x = 1\n", False),  # a class body runs at import
    ("X = [i for i in range(3)]\n", False),
    ("def register_actions(registry, engine):\n    if engine:\n        registry['f'] = len\n", False),
    ("def register_actions(registry, engine):\n    helper(registry)\n", False),
])
def test_only_declarative_action_modules_may_be_skipped(tmp_path: Path, source: str, allowed: bool) -> None:
    import importlib.util
    import types

    path = tmp_path / "mod.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("actioncache_test_declarative_mod", path)
    assert spec is not None and spec.loader is not None
    module = types.ModuleType(spec.name)
    module.__spec__ = spec
    if "def register_actions" in source:
        namespace: dict[str, object] = {}
        exec(compile(source, str(path), "exec"), namespace)
        module.register_actions = namespace["register_actions"]  # type: ignore[attr-defined]
    problem = import_problem(module)
    assert (problem is None) == allowed, problem


# --- the whitelists that decide whether a run may be recorded -----------------------------------


@pytest.mark.parametrize("block", [
    'return {"n": len(state["items"])}',
    'print("hit" if state.get("x") else "miss", sorted(state))',
    'total = sum(i * 2 for i in range(3))\nreturn {"t": total, "d": dict(a=1)}',
])
def test_blocks_that_only_compute_are_pure(block: str) -> None:
    assert pure_block_problem(compile_run_block("n", block)) is None


@pytest.mark.parametrize("block", [
    "import time\nreturn {'t': time.time()}",
    "return {'f': open('x').read()}",
    "return {'k': list({'a', 'b'})}",
    "return {'k': [x for x in {'a', 'b'}]}",
    "return {'c': '{0.__class__}'.format(state)}",
    "return {'c': state.__class__.__name__}",
    "return actions['docs.extract'](state)",
    "return {'v': cache.get('k')}",
    "return {'g': globals()}",
    "return {'h': hash('a'), 'i': id(state)}",
    "global counter\ncounter = 1",
    "return {'e': eval('1')}",
])
def test_blocks_that_reach_outside_are_not(block: str) -> None:
    assert pure_block_problem(compile_run_block("n", block)) is not None


@pytest.mark.parametrize("value", ["plain", 3, {"a": ["{{ state.x }}", "x-{{ variables.y.z }}-y"]}, None])
def test_plain_path_templates_render_the_same_everywhere(value: object) -> None:
    assert template_problem(value) is None


@pytest.mark.parametrize("value", ["{{ state.get }}", "{{ range(3) }}", "{{ state.x | random }}", "{{ lipsum() }}",
                                   "{% if state.x %}a{% endif %}", "{{ state }}", "{{ state.items }}",
                                   "{{ agent_dir }}", "{{ state._x }}", "{{ state.x }"])
def test_other_templates_are_not_replayed(value: str) -> None:
    assert template_problem(value) is not None


def test_one_output_stream_is_left_to_the_engine_when_the_record_holds_two(tmp_path: Path) -> None:
    """With stdout and stderr as one stream (`2>&1`, as agent harnesses capture), a record that kept
    them apart cannot give back their interleaving: the engine answers, in its own order."""
    world = World(tmp_path)
    warm(world)
    argv = ["run", "agent.yaml", "--input", json.dumps(world.input)]
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "actioncache", *argv], cwd=world.work,
                          env=world.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    lines = done.stdout.splitlines(keepends=True)
    assert done.returncode == 0
    assert any("actioncache.agents.engine" in line for line in lines if line.startswith("import time:")), \
        "the hit path replayed two recorded streams into one"
    merged = "".join(line for line in lines if not line.startswith("import time:"))
    assert "hit for alice" in merged and '"_cache_hit": true' in merged
