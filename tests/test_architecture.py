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


def _mutual_imports() -> list[str]:
    """Pairs of modules of the package that import each other directly, lazy imports included."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter: pip install 'actioncache[test]'")
    # Imports under ``if TYPE_CHECKING:`` never run, so they cannot make a module see its partner
    # half-initialised; they are how an annotation names a class of the module that imports this one.
    graph = grimp.build_graph("actioncache", exclude_type_checking_imports=True, cache_dir=None)  # no .grimp_cache
    pairs = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if module in graph.find_modules_directly_imported_by(imported):
                pairs.add(" <-> ".join(sorted((module, imported))))
    return sorted(pairs)


def test_no_two_modules_import_each_other():
    """A cycle between two modules means neither is the lower one: move what both need into the
    lower module or a small new one, instead of a lazy import that hides it."""
    assert _mutual_imports() == []
