"""actioncache._os: os's core for the hit path, which runs without os (python -S). Its own path
functions and environ must give exactly what os gives: checked here in a process without os."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2] / "src"

# Runs under python -S, where os is not imported: every answer comes from _os's own functions.
PROBE = """import json, sys
sys.path.insert(0, sys.argv[1])
from actioncache._os import os
cases = json.loads(sys.stdin.read())
out = {
    "realpath": [os.path.realpath(p) for p in cases["paths"]],
    "abspath": [os.path.abspath(p) for p in cases["paths"]],
    "normpath": [os.path.normpath(p) for p in cases["paths"]],
    "dirname": [os.path.dirname(p) for p in cases["paths"]],
    "basename": [os.path.basename(p) for p in cases["paths"]],
    "isfile": [os.path.isfile(p) for p in cases["paths"]],
    "isdir": [os.path.isdir(p) for p in cases["paths"]],
    "exists": [os.path.exists(p) for p in cases["paths"]],
    "join": [os.path.join(*j) for j in cases["joins"]],
    "environ": dict(os.environ),
    "fsencode": [list(os.fsencode(p)) for p in cases["paths"]],
    "cwd": os.getcwd(),
    "home": [os.path.expanduser(p) for p in cases["users"] if p == "~" or p.startswith("~/") or p[:1] != "~"],
}
assert "os" not in sys.modules, "os was imported"
out["expanduser"] = [os.path.expanduser(p) for p in cases["users"]]  # ~user: os's (pwd)
print(json.dumps(out))
"""


def probe(cases: dict, cwd: Path, env: dict[str, str] | None = None) -> dict:
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE, str(ROOT)], input=json.dumps(cases), text=True,
                          capture_output=True, cwd=cwd, env=env, check=True)
    return json.loads(proc.stdout)


def expected(cases: dict, cwd: Path) -> dict:
    """os's answers, in ``cwd``."""
    before = os.getcwd()
    os.chdir(cwd)
    try:
        return _expected(cases)
    finally:
        os.chdir(before)


def _expected(cases: dict) -> dict:
    paths = cases["paths"]
    return {"realpath": [os.path.realpath(p) for p in paths], "abspath": [os.path.abspath(p) for p in paths],
            "normpath": [os.path.normpath(p) for p in paths], "dirname": [os.path.dirname(p) for p in paths],
            "basename": [os.path.basename(p) for p in paths], "isfile": [os.path.isfile(p) for p in paths],
            "isdir": [os.path.isdir(p) for p in paths], "exists": [os.path.exists(p) for p in paths],
            "join": [os.path.join(*j) for j in cases["joins"]],
            "expanduser": [os.path.expanduser(p) for p in cases["users"]]}


def tree(root: Path) -> list[str]:
    """Files, directories and symbolic links of every kind realpath walks: relative and absolute,
    chained, through "..", dangling, a loop, a link to a link's parent."""
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("x")
    (root / "rel").symlink_to("a/b")
    (root / "abs").symlink_to(root / "a")
    (root / "chain").symlink_to("rel")
    (root / "up").symlink_to("a/b/..")
    (root / "a" / "b" / "back").symlink_to("../../abs/b")
    (root / "dangling").symlink_to("nowhere/at/all")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "self").symlink_to("self/x")
    names = ["", ".", "..", "a", "a/b", "a/b/f", "a/b/f/", "rel", "rel/f", "rel/../b", "abs/b/f", "chain/f",
             "chain/../b/f", "up", "up/b/f", "a/b/back/f", "a/b/back/../b", "dangling", "dangling/x", "loop1",
             "loop1/x", "self", "missing/../a", "a//b///f", "./a/./b/", "a/b/f/..", "/", "//", "///", "//a/b"]
    return [*names, *(str(root / n) for n in names if n and not n.startswith("/"))]


def test_path_functions_environ_and_fsencode_are_os_s(tmp_path):
    paths = tree(tmp_path)
    cases = {"paths": paths, "joins": [[p, q] for p in paths[:12] for q in ("x", "/y", "", "a/")] + [["a"], ["", ""]],
             "users": ["~", "~/x", "~/", "~user/x", "x~", ""]}
    env = {**os.environ, "HOME": "/home/someone/", "ODD": "caf\udce9"}  # a value that is not UTF-8
    env_bytes = {k.encode(): v.encode("utf-8", "surrogateescape") for k, v in env.items()}
    got = probe(cases, tmp_path, env=env_bytes)  # type: ignore[arg-type]
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = env["HOME"]
    try:
        want = expected(cases, tmp_path)
    finally:
        if old_home is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old_home
    for name, values in want.items():
        assert got[name] == values, name
    assert got["environ"]["ODD"] == env["ODD"] and got["environ"]["HOME"] == env["HOME"]
    assert got["fsencode"] == [list(os.fsencode(p)) for p in paths]
    assert got["cwd"] == os.path.realpath(tmp_path)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(alphabet="ab./~", max_size=12), min_size=1, max_size=20))
def test_any_path_text_gets_os_s_answer(tmp_path_factory, paths):
    root = tmp_path_factory.mktemp("paths")
    (root / "a").mkdir()
    (root / "b").symlink_to("a/..")
    cases = {"paths": paths, "joins": [[p, q] for p in paths for q in paths[:3]], "users": paths}
    got = probe(cases, root)
    want = expected(cases, root)
    for name, values in want.items():
        assert got[name] == values, name


def test_once_os_is_imported_its_environ_is_what_the_hit_path_sees():
    from actioncache._os import os as lean_os

    os.environ["ACTIONCACHE_TEST_LEAN_OS"] = "1"
    try:
        assert lean_os.environ is os.environ and lean_os.environ["ACTIONCACHE_TEST_LEAN_OS"] == "1"
    finally:
        del os.environ["ACTIONCACHE_TEST_LEAN_OS"]
    assert lean_os.stat is os.stat and lean_os.path.join("a", "b") == "a/b" and lean_os.walk is os.walk


@pytest.mark.parametrize("xdg", [None, "/tmp/some cache", "relative/cache"])
def test_the_cache_directory_is_where_the_hit_path_and_the_library_look(monkeypatch, xdg):
    # The hit path finds a store's memos and verdicts (``_lean.store_sidecar``) where the full command
    # put them: both name the same user cache directory, $XDG_CACHE_HOME's or ~/.cache's.
    from actioncache import config
    from actioncache._lean import store_sidecar, user_cache_dir

    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    expected = os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"), "actioncache")
    assert user_cache_dir() == str(config.user_cache_dir()) == expected
    assert store_sidecar("/p/s.db", "memo").startswith(os.path.join(expected, "exec-sidecars") + "/")
    assert store_sidecar("/p/../p/s.db", "memo") == store_sidecar("/p/s.db", "memo") != store_sidecar("/q/s.db", "memo")
