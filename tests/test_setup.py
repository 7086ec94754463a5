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
               PATH=os.pathsep.join(path),
               # Copies, not hard links into the shared uv cache: a new link to a cached file changes
               # its link count and ctime, and that file is also in the suite's own .venv, where the
               # exec tests running beside this one observe them ("... changed while the command ran").
               UV_LINK_MODE="copy")
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


# --- the clean-up acts only on what is provably its own ------------------------------------------

def _bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_a_pid_file_naming_another_process_stops_nothing(tmp_path):
    """A killed run's pid file outlives its server; the pid may belong to an unrelated process by the
    time a later run sweeps it (or the file was planted). The clean-up checks the process's start
    time and leaves anything else alone; a pid of 1 or text is never used."""
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        env = {**os.environ, "ACTIONCACHE_TEST_RUN_DIR": str(tmp_path)}
        for content in (f"{victim.pid}", f"{victim.pid} 12345", "1 0", "-1", "$(touch x)"):
            (tmp_path / "planted.pid").write_text(content + "\n")
            out = _bash(". scripts/services.d/_background.inc && stop_pid \"$ACTIONCACHE_TEST_RUN_DIR/planted.pid\"", env)
            assert out.returncode == 0, out
            assert victim.poll() is None, f"stop_pid killed an unrelated process for a pid file holding {content!r}"
        # What the run recorded itself (pid and start time) is stopped.
        out = _bash(f". scripts/services.d/_background.inc && record_pid \"$ACTIONCACHE_TEST_RUN_DIR/own.pid\" {victim.pid}"
                    " && stop_pid \"$ACTIONCACHE_TEST_RUN_DIR/own.pid\"", env)
        assert out.returncode == 0, out
        assert victim.wait(timeout=10) is not None
    finally:
        if victim.poll() is None:
            victim.kill()


def test_a_run_directory_of_another_user_or_outside_the_users_own_is_not_swept(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    home = _bash(". scripts/services.d/_background.inc && runs_home", env)
    assert home.returncode == 0, home
    runs = Path(home.stdout.strip())
    assert runs.parent == tmp_path and oct(runs.stat().st_mode & 0o777) == "0o711"
    # The shared, old location is never read: a directory planted there is left as it is.
    planted = tmp_path / "actioncache-test-runs" / "run.planted"
    planted.mkdir(parents=True)
    (planted / "owner.lock").write_text("")
    out = _bash(". scripts/services.d/_background.inc && sweep_dead_runs", env)
    assert out.returncode == 0 and planted.is_dir(), out


def test_uninstall_system_keeps_a_dev_home_that_holds_the_users_files(tmp_path):
    """ACTIONCACHE_DEV_HOME may be a directory the user chose (~/.cache, another disk): --system
    removes the set-up's own notes there, never the directory with the user's files in it."""
    dev_home = tmp_path / "devhome"
    (dev_home / "actioncache").mkdir(parents=True)
    (dev_home / "actioncache" / "actioncache.db").write_text("the user's cache")
    (dev_home / "apt-installed.txt").write_text("")
    (dev_home / "uv.lock").write_text("")
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "scripts", checkout / "scripts")
    env = {**os.environ, "ACTIONCACHE_DEV_HOME": str(dev_home), "TMPDIR": str(tmp_path),
           "ACTIONCACHE_MODEL_CACHE": str(tmp_path / "no-models")}
    out = subprocess.run(["bash", "scripts/uninstall.sh", "--system"], cwd=checkout, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out
    assert (dev_home / "actioncache" / "actioncache.db").read_text() == "the user's cache"
    assert not (dev_home / "apt-installed.txt").exists() and not (dev_home / "uv.lock").exists()


def test_a_moved_checkout_gets_its_environment_built_again(tmp_path):
    """A checkout renamed or moved keeps a .venv whose programs start the interpreter at the old
    path (pytest, lint-imports: 'cannot execute'); install.sh notices and builds it again."""
    env = setup_env(tmp_path)
    first = clone(tmp_path, "before")
    assert run(["bash", "scripts/install.sh"], first, env).returncode == 0
    moved = tmp_path / "after"
    first.rename(moved)
    out = run(["bash", "scripts/install.sh"], moved, env)
    assert out.returncode == 0 and "building it again here" in out.stdout, out.stdout + out.stderr
    assert f"VIRTUAL_ENV='{moved}/.venv'" in (moved / ".venv/bin/activate").read_text()
    assert run([str(moved / ".venv/bin/actioncache"), "--help"], moved, env).returncode == 0
