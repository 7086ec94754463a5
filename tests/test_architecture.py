"""The house's structural rules, checked: the layer contract of pyproject.toml (import-linter),
"no module imports a private name of another module" and "no two modules import each other"."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "actioncache"


def _private_imports() -> list[str]:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            inside = node.level > 0 or (node.module or "").split(".")[0] == "actioncache"
            if not inside:
                continue
            for alias in node.names:
                # A private *module* with public names inside (``from ._flow import run_miss``) is
                # fine; a private *name* of another module (``from .cache import _helper``) is not.
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    imported_module = node.module is None  # ``from . import _time`` imports a module
                    if imported_module:
                        continue
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}")
    return found


def test_no_module_imports_a_private_name_of_another():
    assert _private_imports() == []


def test_layer_contract_holds(src_env):
    """``lint-imports`` against this checkout (not an installed copy): layers, no upward import."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not os.path.exists(exe):
        if os.environ.get("CI") == "true":
            pytest.fail("lint-imports is not installed: pip install 'actioncache[test]'")
        pytest.skip("lint-imports is not installed: pip install 'actioncache[test]'")
    done = subprocess.run([exe, "--no-cache"], cwd=ROOT, env=src_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _import_cycles() -> list[list[str]]:
    """Every cycle of imports among the package's modules, of any length, lazy imports included:
    the strongly connected components of the import graph that hold more than one module (or a
    module importing itself)."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter: pip install 'actioncache[test]'")
    # Imports under ``if TYPE_CHECKING:`` never run, so they cannot make a module see its partner
    # half-initialised; they are how an annotation names a class of the module that imports this one.
    graph = grimp.build_graph("actioncache", exclude_type_checking_imports=True, cache_dir=None)  # no .grimp_cache
    edges = {module: sorted(graph.find_modules_directly_imported_by(module)) for module in sorted(graph.modules)}
    return strongly_connected(edges)


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components of ``edges`` that are cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_cycles_of_any_length():
    assert strongly_connected({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert strongly_connected({"a": ["a"]}) == [["a"]]
    assert strongly_connected({"a": ["b"], "b": ["c"], "c": []}) == []
    assert sorted(strongly_connected({"a": ["b"], "b": ["a"], "c": ["d"], "d": ["e"], "e": ["c"]})) == \
        [["a", "b"], ["c", "d", "e"]]


def test_no_import_cycles_of_any_length():
    """A cycle means none of its modules is the lower one: move what they share into the lowest
    module or a small new one, instead of a lazy import that hides it."""
    assert _import_cycles() == []
