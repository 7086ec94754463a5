"""The README's set-up on fresh copies of the checkout: each checkout gets a virtual environment of
its own, nothing goes into the system Python, and two checkouts never import each other's code.

Runs the essential steps of the README's two commands: scripts/install.sh (what both run first;
here without extras or install.d parts, which the full suite's own run of it covers) and
scripts/quickstart.sh, from copies of this checkout. uv's package cache is the machine's (what a
second checkout on the same machine shares); uv itself is the one the outer install used. Needs
the package index when the cache lacks the base dependencies.
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
                              ".state", "*.egg-info", "*.db", "*.db-*", ".grimp_cache")


def freeze() -> str:
    return subprocess.run([str(SYSTEM_PYTHON), "-m", "pip", "freeze", "--all"], capture_output=True, text=True,
                          check=True, timeout=120).stdout


def setup_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a new user's shell: no venv active, the machine's uv cache, this machine's uv."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "ACTIONCACHE_URL")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix)]
    dev_home = Path(os.environ.get("ACTIONCACHE_DEV_HOME") or Path.home() / ".cache" / "actioncache" / "dev")
    uv = shutil.which("uv") or str(dev_home / "uv" / "bin" / "uv")
    if Path(uv).exists():
        path.insert(0, str(Path(uv).parent))
    env.update(PYTHON=str(SYSTEM_PYTHON), ACTIONCACHE_DEV_HOME=str(tmp_path / "dev-home"), ACTIONCACHE_EXTRAS="",
               ACTIONCACHE_PARTS="", UV_CACHE_DIR=os.environ.get("UV_CACHE_DIR") or str(dev_home / "uv-cache"),
               PATH=os.pathsep.join(path))
    return env


def clone(tmp_path: Path, name: str) -> Path:
    checkout = tmp_path / name
    shutil.copytree(ROOT, checkout, ignore=SKIP, symlinks=True)
    return checkout


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def imported_from(checkout: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([str(checkout / ".venv" / "bin" / "python"), "-c", "import actioncache; print(actioncache.__file__)"],
               cwd, env, timeout=60)


@pytest.mark.slow
def test_install_and_quickstart_use_a_venv_and_leave_the_system_python_as_it_was(tmp_path):
    assert SYSTEM_PYTHON.exists(), SYSTEM_PYTHON
    checkout = clone(tmp_path, "actioncache")
    env = setup_env(tmp_path)
    before = freeze()

    install = run(["bash", "scripts/install.sh"], checkout, env, timeout=900)
    assert install.returncode == 0, install.stdout + install.stderr
    quick = run(["bash", "scripts/quickstart.sh"], checkout, env)
    assert quick.returncode == 0, quick.stdout + quick.stderr

    assert freeze() == before, "the set-up changed the system Python's packages"
    venv = checkout / ".venv"
    assert venv.is_dir() and not venv.is_symlink(), "the checkout's .venv must be its own, not a link to a shared one"
    assert "_cache_hit=false" in quick.stdout and "_cache_hit=true" in quick.stdout
    assert not list(checkout.rglob("node_modules"))
    where = imported_from(checkout, env, tmp_path)
    assert where.stdout.strip() == str(checkout / "src" / "actioncache" / "__init__.py"), where.stderr

    again = run(["bash", "scripts/install.sh"], checkout, env, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Installed" not in again.stdout + again.stderr, "a second install reinstalled"

    # The README's way to remove it all: this checkout's .venv and what the set-up keeps for every
    # checkout (here a private ACTIONCACHE_DEV_HOME; the machine's uv cache is UV_CACHE_DIR's own).
    (tmp_path / "dev-home" / "npm").mkdir(parents=True, exist_ok=True)
    gone = run(["bash", "scripts/uninstall.sh"], checkout,
               {**env, "ACTIONCACHE_MODEL_CACHE": str(tmp_path / "onnx"), "TMPDIR": str(tmp_path)})
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert not venv.exists() and not (tmp_path / "dev-home" / "npm").exists()
    assert Path(env["UV_CACHE_DIR"]).is_dir(), "uninstall removed a uv cache it did not make"


@pytest.mark.slow
def test_two_checkouts_each_import_their_own_code_and_outlive_each_other(tmp_path):
    """The failure this replaces: every clone's .venv linked to one shared environment whose editable
    install pointed at whichever clone installed last, so clone A imported clone B's code and broke
    when B was deleted."""
    env = setup_env(tmp_path)
    first, second = clone(tmp_path, "first"), clone(tmp_path, "second")
    marker = "\nCHECKOUT_MARK = {!r}\n"
    for checkout in (first, second):
        with (checkout / "src" / "actioncache" / "__init__.py").open("a", encoding="utf-8") as init:
            init.write(marker.format(checkout.name))
    for checkout in (first, second):
        done = run(["bash", "scripts/install.sh"], checkout, env, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
    probe = "import actioncache; print(actioncache.CHECKOUT_MARK, actioncache.__file__)"
    for checkout in (first, second):
        out = run([str(checkout / ".venv" / "bin" / "python"), "-c", probe], tmp_path, env, timeout=60)
        assert out.stdout.split() == [checkout.name, str(checkout / "src" / "actioncache" / "__init__.py")], out.stderr

    shutil.rmtree(second)
    still = run([str(first / ".venv" / "bin" / "python"), "-c", probe], tmp_path, env, timeout=60)
    assert still.returncode == 0 and still.stdout.split()[0] == "first", still.stdout + still.stderr
    demo = run([str(first / ".venv" / "bin" / "python"), "-m", "actioncache", "--version"], first, env, timeout=60)
    assert demo.returncode == 0, demo.stderr


def test_every_install_part_that_installs_system_packages_is_named_in_the_readme():
    """System packages only where nothing else serves, each named in the README with why."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for part in sorted((ROOT / "scripts" / "install.d").glob("*.sh")):
        if "apt-get install" in part.read_text(encoding="utf-8"):
            assert f"`{part.name}`" in readme, f"README.md does not say what {part.name} installs and why"
