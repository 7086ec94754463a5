"""The public surface as users and their type checkers see it: the contract's names, a static
`__all__`, `py.typed`, errors under one root, and a typed user's script that mypy --strict and
pyright both accept (tests/typing/user_script.py)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import actioncache
from actioncache import Cache, cached, errors

ROOT = Path(__file__).resolve().parents[1]
USER_SCRIPT = ROOT / "tests" / "typing" / "user_script.py"
# The contract (DESIGN.md): these names are never renamed.
CONTRACT = ["Cache", "cached", "open_store", "storage_hash"]


def test_the_contract_names_are_public_and_listed():
    for name in CONTRACT:
        assert name in actioncache.__all__ and callable(getattr(actioncache, name))
    from actioncache.scratchpad import Scratchpad  # noqa: F401 - the faces' contract names import
    from actioncache.semantic import SemanticCache  # noqa: F401


def test_the_roots_all_is_a_literal_list_type_checkers_can_read():
    tree = ast.parse((ROOT / "src" / "actioncache" / "__init__.py").read_text(encoding="utf-8"))
    assigned = [node for node in tree.body if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)]
    assert len(assigned) == 1 and isinstance(assigned[0].value, ast.List)
    listed = [ast.literal_eval(element) for element in assigned[0].value.elts]
    assert sorted(listed) == sorted(actioncache.__all__) and set(listed) <= set(dir(actioncache))


def test_the_package_ships_py_typed():
    assert (Path(actioncache.__file__).parent / "py.typed").is_file()


def test_every_error_and_warning_class_is_under_the_root():
    for name in dir(errors):
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, errors.ActionCacheError), name


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_mypy_strict_accepts_a_typed_users_script():
    mypy = Path(sys.executable).with_name("mypy")
    if not mypy.exists():
        pytest.skip("mypy is not installed: pip install 'actioncache[test]'")
    done = _run([str(mypy), "--strict", "--no-incremental", "--cache-dir", os.devnull, str(USER_SCRIPT)])
    assert done.returncode == 0, done.stdout + done.stderr


def test_pyright_agrees_on_the_typed_users_script():
    home = Path(os.environ.get("ACTIONCACHE_DEV_HOME") or Path.home() / ".cache" / "actioncache" / "dev")
    pyright = shutil.which("pyright") or str(home / "npm" / "node_modules" / ".bin" / "pyright")
    if not Path(pyright).exists():
        import services

        if services.in_ci():
            pytest.fail("pyright is not installed (scripts/install.d/30-emulators.sh installs it)")
        pytest.skip("pyright is not installed (scripts/install.d/30-emulators.sh installs it)")
    done = _run([pyright, "--pythonpath", sys.executable, str(USER_SCRIPT)])
    assert done.returncode == 0, done.stdout + done.stderr


# --- one error root ------------------------------------------------------------------------------

def _exception_classes():
    import importlib
    import inspect
    import pkgutil

    import actioncache

    optional = ("actioncache.integrations.", "actioncache.replay.browser", "actioncache.semantic.")
    for info in pkgutil.walk_packages(actioncache.__path__, "actioncache."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            if info.name.startswith(optional):
                continue  # an optional extra that is not installed here
            raise
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == info.name and issubclass(obj, BaseException):
                yield obj


def test_every_exception_the_package_defines_is_under_the_error_root():
    """Internal ones included: one that escapes by mistake is still an ActionCacheError. Only
    control-flow signals that are not errors (BaseException, never Exception) are outside."""
    from actioncache.errors import ActionCacheError

    outside = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in _exception_classes()
                     if issubclass(cls, Exception) and not issubclass(cls, ActionCacheError))
    assert outside == []


@pytest.mark.parametrize("mistake", [
    lambda c: c.wrap("a", lambda: 1, key_strategy="bogus"), lambda c: c.wrap("a", lambda: 1, ttl=-1),
    lambda c: c.wrap("a", lambda: 1, ttl="1h"), lambda c: c.wrap("a", lambda: 1, metadata={1: 2}),
    lambda c: Cache(default_ttl=-5), lambda c: Cache("memory://e", codec="nope"),
    lambda c: Cache("memory://e", codec="pickle"), lambda c: cached(ttl=-1)(lambda: 1),
    lambda c: cached(lock_timeout_s=0), lambda c: c.cleanup(limit=-1), lambda c: Cache(object()),
])
def test_a_configuration_mistake_is_an_actioncache_error_and_a_value_or_type_error(mistake):
    from actioncache.errors import ActionCacheError

    with pytest.raises(ActionCacheError) as raised:
        mistake(Cache("memory://errors"))
    assert isinstance(raised.value, (ValueError, TypeError))
