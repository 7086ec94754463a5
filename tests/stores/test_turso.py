"""Turso/libSQL beyond the conformance suite: URL forms and credentials, embedded files shared
by processes, failures against an unreachable server, and (only when a real Turso database is
named) the remote mode.

The real peer is the ``libsql`` package, embedded (a local file). No libSQL server exists on
this machine or in CI, so the remote tests run only when ``TURSO_DATABASE_URL`` (and
``TURSO_AUTH_TOKEN``) are set and skip otherwise, even with CI=true."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import uuid

import pytest
import services

services.require_module("libsql", "turso")

from actioncache import Cache  # noqa: E402
from actioncache.errors import StoreError, StoreURLError  # noqa: E402
from actioncache.stores import open_store  # noqa: E402
from actioncache.stores.base import Entry  # noqa: E402
from actioncache.stores.turso import TursoStore  # noqa: E402

NOW = 1_900_000_000.0
TOKEN = "tok-" + "s3cr3t" * 4


@pytest.fixture(autouse=True)
def _no_token_in_env(monkeypatch):
    for name in ("TURSO_AUTH_TOKEN", "LIBSQL_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- URL forms (parsing only: nothing connects before first use) ----------------------------


def test_embedded_file_url(tmp_path):
    store = open_store(f"libsql+file:///{tmp_path}/c.db")
    assert isinstance(store, TursoStore) and not store.remote and store.sync_url is None
    assert store.database == f"{tmp_path}/c.db"
    assert store.url == f"libsql+file:///{str(tmp_path).lstrip('/')}/c.db"


def test_remote_url_keeps_the_token_out_of_the_store_url():
    store = open_store(f"libsql://db-org.turso.io?authToken={TOKEN}")
    assert store.remote and store.database == "libsql://db-org.turso.io"
    assert store.auth_token == TOKEN and TOKEN not in store.url


def test_turso_scheme_and_plain_http_to_a_local_sqld():
    assert open_store("turso://db-org.turso.io").database == "libsql://db-org.turso.io"
    assert open_store("libsql://127.0.0.1:8080?tls=0").database == "http://127.0.0.1:8080"


def test_token_from_the_environment(monkeypatch):
    monkeypatch.setenv("TURSO_AUTH_TOKEN", TOKEN)
    assert open_store("libsql://db-org.turso.io").auth_token == TOKEN
    # a token in the URL wins over the environment
    assert open_store("libsql://db-org.turso.io?auth_token=other").auth_token == "other"


def test_embedded_replica_url(tmp_path):
    store = open_store(f"libsql+file:///{tmp_path}/r.db?sync_url=libsql://db-org.turso.io&authToken={TOKEN}&sync_interval=30")
    assert not store.remote and store.sync_url == "libsql://db-org.turso.io"
    assert store.sync_interval == 30 and store.auth_token == TOKEN
    assert TOKEN not in store.url and "sync_url=" in store.url


@pytest.mark.parametrize(
    "url, fix",
    [
        ("libsql+file://host/x.db", "libsql+file:///abs/path.db"),
        ("libsql+file:///", "libsql+file:///abs/path.db"),
        ("libsql://", "libsql://HOST"),
        ("libsql://h.turso.io?sync_url=libsql://h.turso.io", "libsql+file:///abs/replica.db?sync_url="),
        ("libsql+file:///tmp/x.db?sync_interval=5", "sync_interval needs sync_url"),
        ("libsql+file:///tmp/x.db?tls=0", "remote URLs only"),
        ("libsql://h.turso.io?tls=maybe", "tls must be 0 or 1"),
        ("libsql+file:///tmp/x.db?timeout=soon", "number of seconds"),
        (f"libsql://h.turso.io?authToken={TOKEN}&token=x", "known: authToken"),
    ],
)
def test_bad_urls_name_the_fix_and_never_echo_the_token(url, fix):
    with pytest.raises(StoreURLError) as info:
        open_store(url)
    assert fix in str(info.value) and TOKEN not in str(info.value)


# --- embedded file ------------------------------------------------------------------------


def test_embedded_file_is_sqlite_compatible(tmp_path):
    """A libSQL file keeps SQLite's format and this library's schema: sqlite:// reads what libsql+file:// wrote."""
    store = open_store(f"libsql+file:///{tmp_path}/c.db")
    store.put(Entry("cache:a:1", b"jv", {"_cache_action": "a", "n": 1}, NOW, NOW + 60))
    store.close()
    plain = open_store(f"sqlite:///{tmp_path}/c.db")
    got = plain.get("cache:a:1")
    assert got.value == b"jv" and got.metadata["n"] == 1 and got.expires_at == NOW + 60
    assert plain.integrity_check() == "ok"
    plain.close()


_WORKER = textwrap.dedent(
    """
    import sys, time
    from actioncache import Cache
    url, log = sys.argv[1], sys.argv[2]
    cache = Cache(url, cleanup_probability=0.0)

    def slow(x):
        with open(log, "a") as f:
            f.write("computed\\n")
        time.sleep(0.5)
        return {"x": x}

    r = cache.wrap("slow", slow, {"x": 1}, lock=True)
    print("hit" if r["_cache_hit"] else "miss", r["result"]["x"], flush=True)
    cache.close()
    """
)


def test_processes_on_one_embedded_file_share_entries_and_single_flight(tmp_path, src_env):
    """Three processes ask for one cold key with lock=True: one computes, the others get its entry."""
    url = f"libsql+file:///{tmp_path}/shared.db"
    log = tmp_path / "computed.log"
    Cache(url).close()  # create the file before the race so no process waits on schema creation
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, url, str(log)], env=src_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    results = sorted(out.strip() for out, _ in outputs)
    assert results == ["hit 1", "hit 1", "miss 1"]
    assert log.read_text().count("computed") == 1
    # and this process sees the entry they stored
    reader = Cache(url)
    assert reader.wrap("slow", lambda x: {"x": -1}, {"x": 1})["result"] == {"x": 1}
    reader.close()


# --- failures -----------------------------------------------------------------------------


def test_unreachable_server_is_a_store_error_that_says_what_to_check():
    store = open_store(f"libsql://127.0.0.1:{closed_port()}?tls=0&authToken={TOKEN}")
    with pytest.raises(StoreError) as info:
        store.get("k")
    text = str(info.value)
    assert "cannot reach the libSQL server" in text and "tls=0" in text and TOKEN not in text


def test_unreachable_replica_primary_fails_on_first_use_and_wrap_still_runs(tmp_path):
    url = f"libsql+file:///{tmp_path}/r.db?sync_url=http://127.0.0.1:{closed_port()}"
    with pytest.raises(StoreError) as info:
        open_store(url).get("k")
    assert "cannot reach" in str(info.value)
    cache = Cache(url, cleanup_probability=0.0)
    result = cache.wrap("work", lambda x: {"x": x}, {"x": 2})
    assert result["success"] is True and result["result"] == {"x": 2} and result["_cache_hit"] is False
    assert cache.stats()["errors"] >= 1


def test_a_garbage_file_is_a_store_error_naming_the_fix(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as info:
        open_store(f"libsql+file:///{path}").get("k")
    assert "move it aside" in str(info.value)


# --- remote (a real Turso database, only when one is named) --------------------------------

REMOTE_URL = os.environ.get("TURSO_DATABASE_URL", "")
remote = pytest.mark.skipif(
    not REMOTE_URL,
    reason="no Turso database here: set TURSO_DATABASE_URL (and TURSO_AUTH_TOKEN) to run the remote tests; "
    "skipped under CI too, since no libSQL server is available on this machine",
)


@remote
def test_remote_round_trip_find_counters_and_lease():
    store = open_store(REMOTE_URL)  # the token comes from $TURSO_AUTH_TOKEN
    prefix = f"actioncache-test:{uuid.uuid4().hex}:"
    try:
        store.put(Entry(prefix + "a", b"\x00jv", {"_cache_action": "t", "n": 1}, NOW, NOW - 1))
        store.put(Entry(prefix + "b", b"jw", {"_cache_action": "t", "n": 2}, NOW, None))
        assert store.get(prefix + "a").value == b"\x00jv"
        assert sorted(store.find(pattern=prefix + "*")) == [prefix + "a", prefix + "b"]
        assert store.find(pattern=prefix + "*", metadata_filter={"n": 2}) == [prefix + "b"]
        store.add_counters({prefix + "hits": 2})
        store.add_counters({prefix + "hits": 1})
        assert store.counters(prefix) == {prefix + "hits": 3}
        token = store.acquire_lease(prefix + "lease", 30)
        assert token and store.acquire_lease(prefix + "lease", 30) is None
        store.release_lease(prefix + "lease", token)
    finally:
        store.delete_many(store.find(pattern=prefix + "*"))
        store.close()


@remote
def test_remote_embedded_replica_reads_what_it_wrote(tmp_path):
    url = f"libsql+file:///{tmp_path}/replica.db?sync_url={REMOTE_URL}"
    store = open_store(url)
    key = f"actioncache-test:{uuid.uuid4().hex}"
    try:
        store.put(Entry(key, b"jv", {}, NOW, None))
        store.sync()
        assert store.get(key).value == b"jv"
    finally:
        store.delete(key)
        store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_opens_its_own_connection_and_shares_the_file(tmp_path):
    store = open_store(f"libsql+file:///{tmp_path}/fork.db")
    store.put(Entry("parent", b"jp", {}, NOW, None))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        message = b"crashed"
        try:
            seen = store.get("parent").value
            store.put(Entry("child", b"jc", {}, NOW, None))
            message = seen
        except BaseException as exc:
            message = repr(exc).encode()
        finally:
            os.write(write_end, message[:4000])
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0 and message == b"jp"
    assert store.get("child").value == b"jc" and store.get("parent").value == b"jp"
    store.close()
