"""The `actioncache` command's Python part (bin/_actioncache_launch.py, imported by bin/actioncache):
it finds the installed package the way `site` would, without running `site`."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = Path(sys.executable).parent


def launch_module():
    spec = importlib.util.spec_from_file_location("_actioncache_launch_under_test", ROOT / "bin" / "_actioncache_launch.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


file_names = st.text(alphabet=st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1,
                     max_size=30)
named = st.lists(st.one_of(file_names, file_names.map(lambda n: n + ".pth"),
                           file_names.map(lambda n: "__editable__.actioncache-" + n + ".pth"),
                           st.sampled_from(["actioncache", "actioncache.pth", "actioncache-0.1.0.dist-info",
                                            "xactioncachex.pth", "actioncache.pthx", ".pth"])), unique=True, max_size=40)


@settings(max_examples=300, deadline=None)
@given(names=named)
def test_pth_files_are_the_actioncache_pth_files_in_site_order(names):
    expected = sorted(name for name in names if name.endswith(".pth") and "actioncache" in name)
    assert launch_module()._pth_files(names) == expected


def test_import_main_leaves_sys_path_as_it_was(monkeypatch):
    module = launch_module()
    monkeypatch.setattr(sys, "path", [*sys.path])
    before = [*sys.path]
    main = module._import_main()
    assert main.__name__ == "actioncache.__main__" and sys.path == before


def test_the_installed_command_runs_from_its_modules_cached_bytecode(tmp_path):
    """bin/actioncache is a stub: the rest is a module beside it, which Python keeps compiled."""
    launcher = INSTALLED / "actioncache"
    assert (INSTALLED / "_actioncache_launch.py").read_bytes() == (ROOT / "bin" / "_actioncache_launch.py").read_bytes(), \
        "the installed launcher is older than bin/: run `bash scripts/install.sh`"
    # Python writes no bytecode where PYTHONDONTWRITEBYTECODE is set (some shells and CI images set it):
    # what is pinned here is what the launcher does where Python keeps bytecode, as by default.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run([str(launcher), "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert list((INSTALLED / "__pycache__").glob("_actioncache_launch.*.pyc"))
    assert len(launcher.read_bytes()) < 1500  # the part Python parses on every start stays small


def shell_names() -> tuple[set[str], set[str], set[str], set[str]]:
    """(the variables bin/actioncache's sh part names, those it checks before setting any; the same
    for _actioncache_direct.sh and the _actioncache_verdict.sh it sources, whose check opens _ac_direct)."""
    launcher = (ROOT / "bin" / "actioncache").read_text().split("'''")[1]
    direct = (ROOT / "bin" / "_actioncache_direct.sh").read_text()
    verdict = (ROOT / "bin" / "_actioncache_verdict.sh").read_text()
    functions = set(re.findall(r"^(_ac_[a-z0-9_]+)\(\)", direct + verdict, re.M))

    def names(text: str) -> set[str]:
        return set(re.findall(r"\b_ac_[a-z0-9_]+", text)) - functions

    def checked(text: str) -> set[str]:
        first = next(line for line in text.splitlines() if "+x}" in line)
        return set(re.findall(r"\$\{(_ac_[a-z0-9_]+)\+x\}", first))

    return (names(launcher), checked(launcher), names(direct + verdict),
            checked(direct[direct.index("_ac_direct() {"):]))


def test_every_variable_the_shell_part_sets_is_checked_before_it_is_set():
    """A variable a POSIX shell sets keeps the export flag it came with: each name either file sets must
    be in a check that saves the caller's variables first (or a caller's exported variable of that name
    would reach the command with the shell part's value, while no fork is paid for callers who export none)."""
    launcher, launcher_checked, direct, direct_checked = shell_names()
    assert launcher <= launcher_checked, launcher - launcher_checked
    assert direct <= launcher_checked | direct_checked, direct - launcher_checked - direct_checked
    # bin/actioncache sets its own names before _ac_direct runs: checking them there would always save
    assert not launcher_checked & direct_checked, launcher_checked & direct_checked


def forks_before_python(strace: str, tmp_path: Path, env: dict[str, str]) -> int:
    """How many processes the shell part of bin/actioncache (the repository's) starts before it execs."""
    log = tmp_path / "forks.log"
    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    for name in ("actioncache", "_actioncache_direct.sh", "_actioncache_verdict.sh"):
        (fake / name).write_bytes((ROOT / "bin" / name).read_bytes())
        (fake / name).chmod(0o755)
    if not (fake / "python").exists():
        (fake / "python").symlink_to("/bin/true")  # the Python part is not what this counts
    subprocess.run([strace, "-f", "-qq", "-e", "trace=fork,vfork,clone,clone3", "-o", str(log), str(fake / "actioncache"),
                    "exec", "--", "cat", "x"], env=env, cwd=tmp_path, capture_output=True, timeout=60, check=True)
    return sum(1 for line in log.read_text().splitlines() if re.search(r"\b(v?fork|clone3?)\(", line))


def test_a_caller_who_exports_none_of_the_shell_parts_names_pays_no_fork(strace, tmp_path):
    """Saving the caller's variables costs the shell a fork (``$(export -p)``): paid only by a caller
    who exports a name the shell part sets (and then paid, or that caller's value would be lost)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("_ac_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    assert forks_before_python(strace, tmp_path, env) == 0
    launcher, _, direct, _ = shell_names()
    for name in sorted(launcher | direct)[:3]:
        assert forks_before_python(strace, tmp_path, {**env, name: "x"}) == 1, name


def test_the_command_gets_the_callers_variables_even_those_named_like_the_launchers(tmp_path):
    """The command's shell part sets variables of its own before it execs Python or the command;
    a caller's exported variable of the same name (``me``, ``py``, ``_ac_*``) reaches the command
    with the caller's value: in mode off, on a record and on the lookups after it."""
    launcher, _, direct, _ = shell_names()
    names = ["me", "py", *sorted(launcher | direct)]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "ACTIONCACHE_URL": f"sqlite:///{tmp_path}/s.db",
           "ACTIONCACHE_CHEAP_MS": "0", **{name: f"caller's {name}" for name in names}}
    expected = "".join(f"caller's {name}\n" for name in names)
    for mode in ("off", "record", "use", "use"):
        run = subprocess.run([str(INSTALLED / "actioncache"), "exec", "--mode", mode, "--scope", "read", "--",
                              "printenv", *names], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120, check=False)
        assert (run.returncode, run.stdout) == (0, expected), (mode, run.stderr)


def test_a_callers_variable_named_like_the_shell_parts_flag_runs_nothing_else(tmp_path):
    """``_ac_run`` exported by the caller once made the shell part exec the option after `exec`
    (``--summary: not found``) instead of starting Python."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "_ac_run": "1", "_ac_at": "0"}
    for flags in (["--summary"], ["--force-fresh"], []):
        run = subprocess.run([str(INSTALLED / "actioncache"), "exec", *flags, "--mode", "off", "--", "printenv",
                              "_ac_run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                             check=False)
        assert (run.returncode, run.stdout) == (0, "1\n"), (flags, run.stderr)


def test_the_command_gets_no_locale_the_caller_did_not_set(tmp_path):
    """Python coerces the C locale to C.UTF-8 by setting LC_CTYPE in its own environment (PEP 538),
    which a command it starts would inherit: `wc -m` then counts characters differently than a
    fresh run. (A caller that sets PYTHONCOERCECLOCALE itself gets what it asked for: documented.)"""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONCOERCE"))}
    base.update(XDG_CACHE_HOME=str(tmp_path / "cache"), LANG="C")
    for mode in ("off", "use", "use"):
        run = subprocess.run([str(INSTALLED / "actioncache"), "exec", "--mode", mode, "--", "sh", "-c",
                              "env | grep -E '^(LC_|PYTHONCOERCE|_ACTIONCACHE)' | sort; echo done"], cwd=tmp_path,
                             env={**base, "ACTIONCACHE_CHEAP_MS": "0"}, capture_output=True, text=True,
                             timeout=120, check=False)
        assert (run.returncode, run.stdout) == (0, "done\n"), (mode, run.stderr)
