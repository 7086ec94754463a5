"""Properties of exec keys: content decides, creation order and iteration do not."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.runs import keys
from actioncache.runs.keys import file_digest, key_parts, path_candidates, run_key, tree_digest

names = st.text(alphabet="abcdefgh", min_size=1, max_size=6)
trees = st.dictionaries(st.tuples(names, names), st.binary(max_size=64), min_size=1, max_size=6)


def write(root: Path, tree: dict, order: list) -> None:
    for key in order:
        path = root / key[0] / (key[1] + ".txt")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(tree[key])


@settings(max_examples=30, deadline=None)
@given(tree=trees, data=st.data())
def test_tree_digest_depends_on_content_not_creation_order(tree, data):
    order = list(tree)
    shuffled = data.draw(st.permutations(order))
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        write(Path(a), tree, order)
        write(Path(b), tree, shuffled)
        assert tree_digest(a) == tree_digest(b)
        first = order[0]
        (Path(b) / first[0] / (first[1] + ".txt")).write_bytes(tree[first] + b"!")
        assert tree_digest(a) != tree_digest(b)


@settings(max_examples=30, deadline=None)
@given(content=st.binary(max_size=4096))
def test_file_digest_is_sha256_of_the_bytes(content):
    with tempfile.NamedTemporaryFile(delete=False) as handle:
        handle.write(content)
    try:
        assert file_digest(handle.name) == hashlib.sha256(content).hexdigest()
    finally:
        os.unlink(handle.name)


def test_fallback_key_follows_content_and_read_scope_adds_mtime(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a.sh").write_text("echo a\n")

    def key(tool: str, scope: str) -> str:
        return run_key(tool, key_parts([tool, "a.sh"], scope=scope, traced=False))

    verify, read = key("shellcheck", "verify"), key("cat", "read")
    assert verify == key("shellcheck", "verify")
    os.utime("a.sh", ns=(1, 10**9))
    assert verify == key("shellcheck", "verify")
    assert read != key("cat", "read")
    Path("a.sh").write_text("echo b\n")
    assert verify != key("shellcheck", "verify")


def test_traced_key_leaves_content_to_the_read_set_but_keeps_the_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a.sh").write_text("echo a\n")
    traced = run_key("shellcheck", key_parts(["shellcheck", "a.sh"], scope="verify"))
    Path("a.sh").write_text("echo b\n")
    assert traced == run_key("shellcheck", key_parts(["shellcheck", "a.sh"], scope="verify"))
    assert traced != run_key("shellcheck", key_parts(["shellcheck", "a.sh"], scope="verify", traced=False))
    Path("sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert traced != run_key("shellcheck", key_parts(["shellcheck", "a.sh"], scope="verify"))


def test_option_values_are_path_candidates():
    assert list(path_candidates("--config=x.toml")) == ["--config=x.toml", "x.toml"]
    assert list(path_candidates("plain")) == ["plain"]


# --- environment values are keyed, never stored recoverably (attack report F10) -------------------


def test_env_values_are_not_recoverable_from_the_store_and_store_files_are_private(ex):
    import hashlib
    import stat

    secret = "hunter2-very-secret"
    first = ex.run("--mode", "use", "--", sys.executable, "tool.py", "runs", extra_env={"PGPASSWORD": secret})
    assert first.returncode == 0, first.stderr
    changed = ex.run("--mode", "use", "--explain", "--", sys.executable, "tool.py", "runs", extra_env={"PGPASSWORD": "other"})
    assert b"PGPASSWORD changed" in changed.stderr  # --explain still names the variable
    assert secret.encode() not in changed.stderr
    from actioncache import Cache

    with Cache(ex.url) as cache:
        keys = cache.store.find(pattern="cache:exec-env:*")
        assert keys  # the record --explain reads is there
        blob = b"".join(bytes(cache.store.get(k).value) for k in keys)
    for value in (secret, "other"):  # the record holds the last stored run's environment
        plain = hashlib.sha256(value.encode()).hexdigest()
        assert plain[:16].encode() not in blob  # an unsalted digest of the value would let a dictionary find it
    for path in ex.db.parent.iterdir():
        if path.name.startswith(ex.db.name) and path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    key_file = ex.db.parent / (ex.db.name + ".envkey")
    assert key_file.exists() and stat.S_IMODE(key_file.stat().st_mode) == 0o600


# --- process state is keyed (attack report F1) ------------------------------------------------------


def test_umask_and_rlimits_are_part_of_the_key(ex):
    import subprocess

    def run(prefix: str) -> bytes:
        line = f"{prefix}; exec {sys.executable} -m actioncache exec --mode use -- sh -c 'umask; ulimit -n'"
        done = subprocess.run(["sh", "-c", line], cwd=ex.work, env=ex.env, capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run("umask 022; ulimit -n 512").split() == [b"0022", b"512"]
    assert run("umask 077; ulimit -n 512").split() == [b"0077", b"512"]
    assert run("umask 077; ulimit -n 256").split() == [b"0077", b"256"]
    assert run("umask 022; ulimit -n 512").split() == [b"0022", b"512"]  # the first is still there: a hit


@settings(max_examples=40, deadline=None)
@given(core=st.integers(0, 2**62), fsize=st.one_of(st.just(-1), st.integers(1 << 20, 2**62)),
       nofile=st.integers(64, 1024))
def test_rlimits_read_from_proc_are_what_resource_reports(core, fsize, nofile):
    """The key reads resource limits from /proc/self/limits (the resource module costs a hit more):
    every value and name must be the one resource.getrlimit gives, whatever the limits are."""
    import resource

    from actioncache.runs.keys import process_state

    names = [resource.RLIMIT_CORE, resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE]
    saved = [resource.getrlimit(name) for name in names]
    try:
        for name, soft in zip(names, (core, fsize, nofile)):
            hard = resource.getrlimit(name)[1]
            if hard != resource.RLIM_INFINITY and (soft == -1 or soft > hard):
                soft = hard
            resource.setrlimit(name, (soft, hard))
        expected = {name: list(resource.getrlimit(getattr(resource, name)))
                    for name in sorted(dir(resource)) if name.startswith("RLIMIT_")}
        assert process_state()["rlimits"] == expected
    finally:
        for name, limits in zip(names, saved):
            resource.setrlimit(name, limits)


@settings(max_examples=200, deadline=None)
@given(secret=st.binary(max_size=64), name=st.text(min_size=1, max_size=20).filter(lambda s: "\0" not in s),
       value=st.text(max_size=40).filter(lambda s: "\0" not in s))
def test_keyed_digest_is_hmac_sha256(secret, name, value):
    """An environment value's key part is HMAC-SHA-256 (the pads are made once per secret: the digest
    must stay the one entries were stored under)."""
    import hmac

    from actioncache.runs.keys import keyed_digest, keyed_digests

    message = os.fsencode(name) + b"\0" + os.fsencode(value)
    assert keyed_digest(secret, name, value) == hmac.new(secret, message, hashlib.sha256).hexdigest()[:32]
    assert keyed_digest(secret, name, value) == keyed_digest(bytes(secret), name, value)  # again, from the pads
    # key_parts digests all of the environment in one loop: the same digests
    assert keyed_digests(secret, {name: value, "OTHER": value[::-1]}) == {
        name: keyed_digest(secret, name, value), "OTHER": keyed_digest(secret, "OTHER", value[::-1])}


# --- the store file exec creates is the one its store opens (outside tester: a refused URL left an empty file) ---


@pytest.mark.parametrize("name", ["bad.db?bogus=1", "c#d.db", "a.db#part"])
def test_a_store_url_the_store_refuses_creates_no_file(ex, tmp_path, name):
    where = tmp_path / "urls"
    where.mkdir()
    done = ex.run("--mode", "record", "--", sys.executable, "tool.py", "runs",
                  extra_env={"ACTIONCACHE_URL": f"sqlite:///{where}/{name}"})
    assert done.returncode == 0 and b"cache unavailable" in done.stderr       # the command ran, uncached
    assert list(where.iterdir()) == []                                          # and nothing was made


def test_a_percent_encoded_hash_makes_the_file_it_names_private(ex, tmp_path):
    import stat

    from actioncache.config import file_url

    where = tmp_path / "urls"
    where.mkdir()
    url = file_url("sqlite", where / "c#d.db")
    for _ in range(2):
        done = ex.run("--mode", "use", "--", sys.executable, "tool.py", "runs", extra_env={"ACTIONCACHE_URL": url})
        assert done.returncode == 0, done.stderr
    made = where / "c#d.db"
    assert made.is_file() and stat.S_IMODE(made.stat().st_mode) == 0o600
    assert not (where / "c").exists()


def test_the_inherited_status_fields_are_what_a_walk_of_the_lines_finds(monkeypatch):
    """``/proc/self/status``'s fields are found by their line (the last one that starts with the name
    and a colon), not by a walk of every line: the same values, also for a process name holding a
    line separator Python splits on (the kernel escapes newlines in it, not \\x1c)."""
    text = ("Name:\tx\x1cSigBlk:\tffffffffffffffff\nUmask:\t0022\nSigBlk:\t0000000000000001\n"
            "SigIgn:\t0000000001001000\nCapEff:\t000001fffeffffff\nSeccomp:\t2\nMems_allowed_list:\t0-1\n")

    def walk(text: str) -> dict[str, str]:  # what the key read before, line by line
        found = {}
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name in keys._STATUS_FIELDS:
                value = value.strip()
                found[name] = format(int(value, 16) & ~keys._PYTHON_IGNORED, "016x") if name == "SigIgn" else value
        return found

    monkeypatch.setattr(keys, "_STATUS", [text])
    found = keys._inherited_status()
    assert found.pop("oom_score_adj").lstrip("-").isdigit()
    assert found == walk(text) and found["SigBlk"] == "0000000000000001" and found["SigIgn"] == "0000000000000000"
