"""The `actioncache` command's Python part (bin/_actioncache_launch.py, imported by bin/actioncache):
it finds the installed package the way `site` would, without running `site`."""

from __future__ import annotations

import importlib.util
import os
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


def test_the_command_gets_the_callers_variables_even_those_named_like_the_launchers(tmp_path):
    """The command's shell part sets variables of its own before it execs Python or the command;
    a caller's exported variable of the same name (``me``, ``py``, ``_ac_*``) reaches the command
    with the caller's value: in mode off, on a record and on the lookups after it."""
    names = ["me", "py", "_ac_me", "_ac_env", "_ac_py", "_ac_run", "_ac_at"]
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
