"""SQLite specifics: WAL, the expiry index, fork safety, many processes, and SIGKILL mid-write."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache import Cache, open_store
from actioncache.stores.base import Entry
from actioncache.stores.registry import store_targets
from actioncache.stores.sqlite import SQLiteStore


def test_wal_mode_and_default_location(tmp_path, monkeypatch):
    store = open_store(f"sqlite:///{tmp_path}/x.db")
    store.put(Entry("k", b"j1", {}, 0, None))
    assert sqlite3.connect(tmp_path / "x.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    monkeypatch.delenv("ACTIONCACHE_URL")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    default = Cache()
    assert default.url == "sqlite://" + str(tmp_path / "xdg" / "actioncache" / "actioncache.db")
    default.wrap("a", lambda: 1, {})
    assert (tmp_path / "xdg" / "actioncache" / "actioncache.db").exists()


def test_cleanup_uses_the_expiry_index(tmp_path):
    store = SQLiteStore(tmp_path / "x.db")
    store.count()
    from actioncache.stores.sqlite import _DELETE_EXPIRED

    plan = store._conn().execute("EXPLAIN QUERY PLAN " + _DELETE_EXPIRED, (1.0, 5)).fetchall()
    details = [str(row[-1]) for row in plan]
    assert any("entries_expires_at" in d for d in details), details
    assert not any(d.startswith("SCAN entries") for d in details), details


def test_action_filter_uses_the_action_index(tmp_path):
    store = SQLiteStore(tmp_path / "x.db")
    store.count()
    plan = store._conn().execute("EXPLAIN QUERY PLAN SELECT key, metadata FROM entries WHERE action = ?", ("a",)).fetchall()
    assert "entries_action" in " ".join(str(r[-1]) for r in plan)


def test_bad_urls_name_the_fix():
    with pytest.raises(ValueError, match="three slashes"):
        open_store("sqlite://host/x.db")
    with pytest.raises(ValueError, match="names no file"):
        open_store("sqlite:///")
    with pytest.raises(ValueError, match="unknown store scheme 'nosuch'"):
        open_store("nosuch://x")
    with pytest.raises(ValueError, match="not a store URL"):
        open_store("/just/a/path.db")


@pytest.mark.parametrize("url", ["sqlite:///tmp/x/c#d.db", "sqlite:///tmp/x/a.db#frag", "duckdb:///tmp/x/c#d.duckdb",
                                 "libsql+file:///tmp/x/c#d.db"])
def test_a_hash_in_a_file_store_url_is_refused_not_cut(url):
    # urlsplit ends the path at '#': c#d.db would open c, a file the user never named
    with pytest.raises(ValueError, match="%23"):
        open_store(url)


@settings(max_examples=60, deadline=None)
@given(name=st.text(st.sampled_from("ab#?% &=;+é."), min_size=1, max_size=12).filter(lambda n: n not in (".", "..")))
def test_a_file_url_opens_exactly_the_file_it_names(tmp_path_factory, name):
    from actioncache.config import file_url
    from actioncache.stores.registry import store_file

    path = tmp_path_factory.mktemp("u") / name
    url = file_url("sqlite", path)
    store = open_store(url)
    assert str(store.path) == str(path) == store_file(url)   # the store and every other reader agree
    store.count()                                          # opens (makes) the database
    assert path.is_file() and sorted(p.name for p in path.parent.iterdir() if not p.name.startswith(name + "-")) == [name]
    store.close()


@pytest.mark.parametrize("form", ["sqlite:///{p}", "sqlite:////{p}", "sqlite://localhost/{p}", "sqlite:///{p}%23x",
                                  "sqlite:///{p}#x", "sqlite://otherhost/{p}", "sqlite:{p}", "sqlite:/{p}",
                                  "duckdb:///{p}", "duckdb:///:memory:", "libsql+file:///{p}"])
def test_the_store_file_every_reader_names_is_the_one_the_store_opens(tmp_path, form):
    """One parser: the CLI's "no store at" check and exec's own-file and secret locations read a store
    URL with the store's own (stores.registry.store_file), so they name the file it opens, or none
    when opening it is refused."""
    from actioncache.errors import StoreURLError
    from actioncache.stores.registry import store_file

    url = form.format(p=str(tmp_path / "a.db").lstrip("/"))
    try:
        targets = store_targets(url)
    except StoreURLError:
        with pytest.raises(ValueError):
            open_store(url)
        assert store_file(url) is None
        return
    assert store_file(url) == (targets.paths[0] if targets and targets.paths else None)
    if url.startswith("sqlite:"):
        store = open_store(url)
        try:
            assert str(store.path) == store_file(url)
        finally:
            store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_store_is_usable_after_fork(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path}/f.db", cleanup_probability=0)
    cache.wrap("a", lambda: 1, {})
    pid = os.fork()
    if pid == 0:  # child: same objects, new connections
        try:
            ok = cache.wrap("a", lambda: 2, {})["_cache_hit"] and cache.wrap("b", lambda: 3, {})["success"]
            os._exit(0 if ok else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert cache.wrap("b", lambda: 9, {})["result"] == 3


HAMMER = """
import sys, random
from actioncache import Cache
cache = Cache(sys.argv[1], cleanup_probability=0.2, cleanup_limit=3)
writer = int(sys.argv[2])
rng = random.Random(writer)
for i in range(300):
    k = rng.randrange(40)
    r = cache.wrap("hammer", lambda k: {"k": k, "writer": writer}, {"k": k}, ttl_seconds=3600)
    assert r["success"] and r["result"]["k"] == k, r
    assert "_cache_error" not in r, r
cache.close()
"""


def test_four_processes_hammer_one_file(tmp_path, src_env):
    url = f"sqlite:///{tmp_path}/hammer.db"
    procs = [subprocess.Popen([sys.executable, "-c", HAMMER, url, str(n)], env=src_env, stderr=subprocess.PIPE)
             for n in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    cache = Cache(url)
    keys = cache.store.find(pattern="cache:hammer:*")
    assert 0 < len(keys) <= 40
    for key in keys:
        value = cache.get(key)["value"]
        assert value["writer"] in range(4)
    stats = cache.stats()
    assert stats["hits"] + stats["misses"] == 1200 and stats["errors"] == 0


WRITER = """
import os, sys
from actioncache.stores.sqlite import SQLiteStore
from actioncache.stores.base import Entry
store = SQLiteStore(sys.argv[1], synchronous="FULL")
i = 0
while True:
    body = os.urandom(32) * 2048  # 64 KiB, checksummed through metadata
    import hashlib
    store.put(Entry(f"k{i % 50}", body, {"sha": hashlib.sha256(body).hexdigest(), "i": i}, 0.0, None))
    if i == 20:
        print("ready", flush=True)
    i += 1
"""


def test_sigkill_mid_write_leaves_a_healthy_store(tmp_path, src_env):
    import hashlib

    path = tmp_path / "killed.db"
    for round_ in range(4):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], env=src_env, stdout=subprocess.PIPE)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.07 * round_)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        store = SQLiteStore(path)
        assert store.integrity_check() == "ok"
        keys = store.find(pattern="k*")
        assert keys
        for key in keys:
            entry = store.get(key)
            assert hashlib.sha256(entry.value).hexdigest() == entry.metadata["sha"]
        store.close()


OPEN_NEW = """
import sys
from actioncache import Cache
c = Cache(sys.argv[1], cleanup_probability=0)
r = c.wrap("first", lambda n: {"n": n}, {"n": int(sys.argv[2])})
assert r["success"] and "_cache_error" not in r, r
"""


def test_processes_opening_a_new_file_at_once(tmp_path, src_env):
    """Four processes create the same new file together: WAL switch and schema must not fail."""
    for attempt in range(3):
        url = f"sqlite:///{tmp_path}/new{attempt}.db"
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_NEW, url, str(n)], env=src_env, stderr=subprocess.PIPE)
                 for n in range(4)]
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err.decode()


def test_a_read_only_file_still_serves_hits(src_env):
    """Another user's cache file (or a read-only mount): hits are served, writes fail softly.

    Run as root, the reader is a subprocess run as user nobody by setpriv (root ignores file modes);
    otherwise the file and its directory are made read-only for this user.
    """
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    folder = tempfile.mkdtemp(prefix="ac-ro-")
    try:
        os.chmod(folder, 0o755)
        url = f"sqlite:///{folder}/cache.db"
        writer = Cache(url)
        key = writer.wrap("a", lambda: {"v": 1})["_cache_key"]
        writer.close()
        reader = (
            "import json, sys\nfrom actioncache import Cache\n"
            "c = Cache(sys.argv[1])\n"
            "hit = c.wrap('a', lambda: {'v': 2})\nmiss = c.wrap('b', lambda: 3)\n"
            "print(json.dumps([hit, miss, c.get(sys.argv[2])]))\n"
        )
        as_root = os.geteuid() == 0
        if not as_root:
            os.chmod(f"{folder}/cache.db", 0o444)
            os.chmod(folder, 0o555)

        command = [sys.executable, "-c", reader, url, key]
        if as_root:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv: cannot act as another user")
            command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        out = subprocess.run(command, env=src_env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        hit, miss, got = json.loads(out.stdout)
        assert hit["_cache_hit"] is True and hit["result"] == {"v": 1}
        assert miss["success"] is True and miss["result"] == 3 and "readonly" in miss["_cache_error"]
        assert got["found"] is True and got["value"] == {"v": 1}
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_cleanly_closed_file_on_a_read_only_mount_serves_hits(tmp_path, src_env):
    """On a read-only mount SQLite cannot make the WAL's -shm file and says "unable to open
    database file", not "readonly": the store must still open it read-only and serve hits."""
    import os
    import shutil
    import subprocess
    import sys

    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare(1) to make a private read-only bind mount")
    source, mount = tmp_path / "src", tmp_path / "ro"
    source.mkdir()
    mount.mkdir()
    writer = Cache(f"sqlite:///{source}/cache.db")
    assert writer.wrap("a", lambda: {"v": 1})["_cache_hit"] is False
    writer.close()
    assert sorted(os.listdir(source)) == ["cache.db"]  # closed cleanly: no -wal or -shm left
    reader = (
        "import json, sys\nfrom actioncache import Cache\nc = Cache(sys.argv[1])\n"
        "print(json.dumps([c.wrap('a', lambda: {'v': 2}), c.wrap('b', lambda: 3)]))\n"
    )
    script = (f'mount --bind "{source}" "{mount}" && mount -o remount,ro,bind "{mount}" && '
              f'exec "{sys.executable}" -c "$0" "sqlite:///{mount}/cache.db"')
    out = subprocess.run([unshare, "--mount", "sh", "-c", script, reader], env=src_env, capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0 and "mount" in out.stderr and "ermission" in out.stderr:
        pytest.skip(f"this machine refuses private mounts: {out.stderr.strip()}")
    assert out.returncode == 0, out.stderr
    hit, miss = json.loads(out.stdout)
    assert hit["_cache_hit"] is True and hit["result"] == {"v": 1}
    assert miss["success"] is True and miss["result"] == 3 and "read-only" in miss["_cache_error"]
