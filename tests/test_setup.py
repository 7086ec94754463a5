"""The README's set-up on a fresh copy of the checkout: everything goes into a virtual environment,
nothing into the system Python.

Runs the essential steps of the README's two commands: scripts/install.sh (what both run first;
here without extras or install.d parts, which the full suite's own run of it covers) and
scripts/quickstart.sh, from a copy of this checkout, with the shared environment directory in a
temporary place. Needs the package index (pip installs the base dependencies).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = Path(sys.base_prefix) / "bin" / "python3"
SKIP = shutil.ignore_patterns(".git", ".venv", "node_modules", "__pycache__", ".hypothesis", ".pytest_cache",
                              ".state", "*.egg-info", "*.db", "*.db-*")


def freeze() -> str:
    return subprocess.run([str(SYSTEM_PYTHON), "-m", "pip", "freeze", "--all"], capture_output=True, text=True,
                          check=True, timeout=120).stdout


@pytest.mark.slow
def test_install_and_quickstart_use_a_venv_and_leave_the_system_python_as_it_was(tmp_path):
    assert SYSTEM_PYTHON.exists(), SYSTEM_PYTHON
    checkout = tmp_path / "actioncache"
    shutil.copytree(ROOT, checkout, ignore=SKIP, symlinks=True)
    dev_home = tmp_path / "dev-home"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "ACTIONCACHE_URL")}
    env.update(PYTHON=str(SYSTEM_PYTHON), ACTIONCACHE_DEV_HOME=str(dev_home), ACTIONCACHE_EXTRAS="",
               ACTIONCACHE_PARTS="", PATH=os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                                         if not p.startswith(sys.prefix)))
    before = freeze()

    install = subprocess.run(["bash", "scripts/install.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                             timeout=900)
    assert install.returncode == 0, install.stdout + install.stderr
    quick = subprocess.run(["bash", "scripts/quickstart.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                           timeout=600)
    assert quick.returncode == 0, quick.stdout + quick.stderr

    assert freeze() == before, "the set-up changed the system Python's packages"
    venv = checkout / ".venv"
    assert venv.is_symlink() and venv.resolve() == (dev_home / f"venv-py{sys.version_info[0]}.{sys.version_info[1]}")
    assert "_cache_hit=false" in quick.stdout and "_cache_hit=true" in quick.stdout
    assert not list(checkout.rglob("node_modules"))
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import actioncache; print(actioncache.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(checkout / "src" / "actioncache" / "__init__.py")

    again = subprocess.run(["bash", "scripts/install.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0 and "== install: actioncache" not in again.stdout, "a second install reinstalled"


def test_every_install_part_that_installs_system_packages_is_named_in_the_readme():
    """System packages only where nothing else serves, each named in the README with why."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for part in sorted((ROOT / "scripts" / "install.d").glob("*.sh")):
        if "apt-get install" in part.read_text(encoding="utf-8"):
            assert f"`{part.name}`" in readme, f"README.md does not say what {part.name} installs and why"
