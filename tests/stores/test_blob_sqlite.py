"""blob-sqlite beyond the conformance suite: sharing one object between writers.

Every test runs against real object stores: moto_server (S3), gcp-storage-emulator (GCS),
Azurite (Azure) when they answer, and always a local directory and fsspec's memory filesystem.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import types
import uuid
from pathlib import Path

import pytest
import services
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Cache
from actioncache.errors import StoreError, StoreURLError
from actioncache.stores.base import Entry, open_store
from actioncache.stores.blob_sqlite import BlobSQLiteStore

from .cloud_stores import BLOB_SERVICES, blob_url, open_blob, require_blob

NOW = 1_900_000_000.0
PROTOCOLS = ["file", "memory", "s3", "gs", "az"]
# gcp-storage-emulator accepts ifGenerationMatch but does not enforce it, so a write racing in
# between another writer's version check and its upload is not refused there (real GCS refuses).
ENFORCED = ["file", "memory", "s3", "az"]


def entry(key: str, value: bytes = b"v", created_at: float = NOW, **meta) -> Entry:
    return Entry(key, value, meta, created_at, created_at + 3600)


@pytest.fixture(params=PROTOCOLS)
def protocol(request) -> str:
    return request.param


@pytest.fixture
def url(protocol, tmp_path) -> str:
    if protocol in BLOB_SERVICES:
        require_blob(protocol)
    return blob_url(protocol, tmp_path, f"w{uuid.uuid4().hex[:10]}")


def two_writers(url: str, **options) -> tuple[BlobSQLiteStore, BlobSQLiteStore]:
    """Two stores on one object, each with its own local copy: two machines, in effect."""
    return open_blob(url, **options), open_blob(url, **options)


def test_flush_shares_entries_between_writers(url):
    a, b = two_writers(url)
    a.put(entry("from-a"))
    b.put(entry("from-b"))
    a.flush()
    b.flush()  # B's base is stale: it merges A's upload before its own
    a.flush()  # pulls B's
    for store in (a, b):
        assert sorted(store.find(pattern="from-*")) == ["from-a", "from-b"]
    a.close()
    b.close()
    fresh = open_blob(url)
    assert sorted(fresh.find(pattern="*")) == ["from-a", "from-b"]
    fresh.close()


class RacingRemote:
    """The real remote object, except that right before the first upload another writer flushes.

    This places a competing upload exactly between this writer's version check and its own
    conditional write, the window only the object store's precondition can close.
    """

    def __init__(self, real, before_first_write) -> None:
        self.real = real
        self.location = real.location
        self._hook = before_first_write

    def version(self):
        return self.real.version()

    def read(self):
        return self.real.read()

    def write(self, data, expected):
        hook, self._hook = self._hook, None
        if hook is not None:
            hook()
        return self.real.write(data, expected)


@pytest.mark.parametrize("protocol", ENFORCED, indirect=True)
def test_conditional_write_conflict_loses_no_entry(url):
    other = open_blob(url)
    seed = open_blob(url)
    seed.put(entry("seed"))
    seed.close()

    def competing_flush() -> None:
        other.put(entry("from-other"))
        other.flush()

    racer = BlobSQLiteStore(RacingRemote(open_blob(url).remote, competing_flush))
    racer.put(entry("from-racer"))
    racer.flush()
    assert racer.conflicts == 1  # the store refused the stale upload; the racer merged and retried
    other.flush()
    expected = ["from-other", "from-racer", "seed"]
    assert sorted(racer.find(pattern="*")) == expected
    assert sorted(other.find(pattern="*")) == expected
    racer.close()
    other.close()


@pytest.mark.parametrize("protocol", ENFORCED, indirect=True)
def test_many_racing_writers_lose_nothing(url):
    """Writers that upload after every write, all at once: every acknowledged entry survives."""
    writers = [open_blob(url, flush_writes=1) for _ in range(4)]
    errors: list[BaseException] = []

    def work(n: int, store: BlobSQLiteStore) -> None:
        try:
            for i in range(8):
                store.put(entry(f"w{n}:{i}"))
            store.add_counters({"puts": 8})
            store.flush()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n, s)) for n, s in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for store in writers:
        store.close()
    reader = open_blob(url)
    assert sorted(reader.find(pattern="w*")) == sorted(f"w{n}:{i}" for n in range(4) for i in range(8))
    assert reader.counters() == {"puts": 32}
    reader.close()


def test_later_created_at_wins_and_deletes_spare_newer_writes(url):
    a, b = two_writers(url)
    a.put(entry("k", b"old", created_at=NOW))
    a.put(entry("gone", created_at=NOW))
    a.flush()
    b.flush()
    b.put(entry("k", b"new", created_at=NOW + 10))  # newer, written by B
    b.put(entry("gone", b"rewritten", created_at=NOW + 10))
    a.put(entry("k", b"stale", created_at=NOW + 5))  # older, but flushed last
    a.delete("gone")  # deletes the version A saw, not B's newer one
    b.flush()
    a.flush()
    b.flush()
    for store in (a, b):
        assert store.get("k").value == b"new"
        assert store.get("gone").value == b"rewritten"
    b.delete("gone")
    b.flush()
    a.flush()
    assert a.get("gone") is None
    a.close()
    b.close()


def test_counters_from_writers_add_up(url):
    a, b = two_writers(url)
    a.add_counters({"stats:hits": 2})
    b.add_counters({"stats:hits": 3, "stats:misses": 1})
    a.flush()
    b.flush()
    a.flush()
    assert a.counters("stats:") == b.counters("stats:") == {"stats:hits": 5, "stats:misses": 1}
    a.close()
    b.close()


def test_lease_is_exclusive_across_writers(url):
    a, b = two_writers(url)
    token = a.acquire_lease("lease:job", 30)
    assert token
    assert b.acquire_lease("lease:job", 30) is None
    a.release_lease("lease:job", token)
    assert b.acquire_lease("lease:job", 30) is not None
    a.close()
    b.close()


def test_flush_writes_and_sync_interval(url):
    writer = open_blob(url, flush_writes=1)
    reader = open_blob(url, sync_interval=0)  # syncs on every call
    lazy = open_blob(url, sync_interval=3600)
    lazy.count()  # downloaded once, then never synced until flush()
    writer.put(entry("k"))
    assert reader.get("k") is not None
    assert lazy.get("k") is None
    lazy.flush()
    assert lazy.get("k") is not None
    for s in (writer, reader, lazy):
        s.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(st.sampled_from("ab"), st.sampled_from(["k1", "k2", "k3"]), st.integers(0, 5)),
        min_size=1,
        max_size=12,
    )
)
def test_merge_keeps_the_newest_version_of_every_key(ops):
    """Whatever two writers put between syncs, each key ends as the newer (by created_at) of their
    last puts; on a tie the writer that uploads second (here b) keeps its own."""
    url = f"blob-sqlite+memory://prop{uuid.uuid4().hex}/cache.db"
    stores = {"a": open_store(url), "b": open_store(url)}
    last: dict[tuple[str, str], Entry] = {}
    for n, (who, key, age) in enumerate(ops):
        e = Entry(key, f"{who}{n}".encode(), {}, NOW + age, None)
        stores[who].put(e)
        last[(who, key)] = e
    stores["a"].flush()
    stores["b"].flush()
    stores["a"].flush()
    for key in {k for _, k, _ in ops}:
        mine, theirs = last.get(("a", key)), last.get(("b", key))
        if mine is None or (theirs is not None and mine.created_at <= theirs.created_at):
            expected = theirs
        else:
            expected = mine
        for store in stores.values():
            got = store.get(key)
            assert (got.value, got.created_at) == (expected.value, expected.created_at)
    for store in stores.values():
        store.close()


def test_two_processes_share_entries_on_s3(src_env):
    """Separate Cache objects in separate processes see each other's entries after a flush."""
    options = require_blob("s3")
    url = blob_url("s3", Path("."), f"p{uuid.uuid4().hex[:10]}")
    child = r"""
import json, sys
from actioncache import Cache
from actioncache.stores.base import open_store
url, options, mode = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
cache = Cache(store=open_store(url, storage_options=options), cleanup_probability=0.0)
if mode == "write":
    r = cache.wrap("work", lambda x: {"from": "child", "x": x}, {"x": 1})
else:
    r = cache.wrap("work", lambda x: {"from": "fresh", "x": x}, {"x": 2})
cache.close()
print(json.dumps(r))
"""

    def run(mode: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", child, url, json.dumps(options), mode],
            env=src_env, capture_output=True, text=True, timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    parent = Cache(store=open_store(url, storage_options=options, sync_interval=3600), cleanup_probability=0.0)
    assert parent.wrap("work", lambda x: {"from": "parent", "x": x}, {"x": 2})["_cache_hit"] is False
    parent.store.flush()
    seen_by_child = run("read")  # x=2: the parent's entry
    assert seen_by_child["_cache_hit"] is True and seen_by_child["result"]["from"] == "parent"
    assert run("write")["_cache_hit"] is False  # x=1, written by the child
    parent.store.flush()
    got = parent.wrap("work", lambda x: {"from": "parent", "x": x}, {"x": 1})
    assert got["_cache_hit"] is True and got["result"]["from"] == "child"
    parent.close()


def test_close_uploads_and_reopen_downloads(url):
    store = open_blob(url, flush_writes=10_000, sync_interval=3600)
    store.put(entry("kept", b"payload"))
    store.close()
    again = open_blob(url)
    assert again.get("kept").value == b"payload"
    again.close()


def test_a_corrupt_object_is_a_clear_error_and_never_fails_the_action(tmp_path):
    target = tmp_path / "bad" / "cache.db"
    target.parent.mkdir()
    target.write_bytes(b"this is not a sqlite database" * 10)
    store = open_store(f"blob-sqlite+file://{target}")
    with pytest.raises(StoreError, match="not a healthy SQLite database"):
        store.get("k")
    cache = Cache(store=store, cleanup_probability=0.0)
    result = cache.wrap("work", lambda: {"ok": True}, {})
    assert result["success"] is True and result["result"] == {"ok": True} and result["_cache_hit"] is False
    assert cache.stats()["session"]["errors"] >= 1
    assert target.read_bytes().startswith(b"this is not")  # nothing was overwritten


@pytest.mark.parametrize(
    "bad, message",
    [
        ("blob-sqlite+ftp://host/x.db", "does not support 'ftp'"),
        ("blob-sqlite+file://relative/x.db", "absolute path"),
        ("blob-sqlite+s3://bucket-only", "needs a bucket and an object name"),
        ("blob-sqlite+memory://x/c.db?flush_writes=zero", "not a number"),
        ("blob-sqlite+memory://x/c.db?flush_writes=0", "flush_writes must be at least 1"),
    ],
)
def test_bad_urls_name_the_fix(bad, message):
    with pytest.raises(StoreURLError, match=message):
        open_store(bad)


def test_url_query_configures_store_and_storage_options():
    options = require_blob("s3")
    query = "&".join(f"{k}={v}" for k, v in options.items())
    url = f"blob-sqlite+s3://actioncache-tests/q{uuid.uuid4().hex[:8]}/cache.db?flush_writes=1&{query}"
    writer = open_store(url)
    assert writer.flush_writes == 1 and "secret" not in writer.url
    writer.put(entry("k"))
    reader = open_store(url)
    assert reader.get("k") is not None
    writer.close()
    reader.close()


@pytest.fixture
def private_moto():
    """A moto_server of our own on a free port, which the test may stop and start again."""
    import shutil

    from .private_servers import free_port

    binary = shutil.which("moto_server")
    if binary is None:
        message = "moto_server is not installed; scripts/install.d/30-emulators.sh installs it"
        pytest.fail(message, pytrace=False) if services.in_ci() else pytest.skip(message)
    port = free_port()
    procs: list[subprocess.Popen] = []

    def start() -> None:
        procs.append(subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 20
        while not services.port_open("127.0.0.1", port, 0.2):
            assert time.monotonic() < deadline, "private moto_server did not start"
            time.sleep(0.05)

    def stop() -> None:
        proc = procs.pop()
        proc.terminate()
        proc.wait(timeout=10)

    start()
    yield types.SimpleNamespace(port=port, start=start, stop=stop)
    while procs:
        stop()


def test_outage_serves_the_local_copy_and_resumes(private_moto):
    import s3fs

    options = {
        "endpoint_url": f"http://127.0.0.1:{private_moto.port}", "key": "testing", "secret": "testing",
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2},
    }
    s3fs.S3FileSystem(skip_instance_cache=True, **options).mkdir("outage")
    url = "blob-sqlite+s3://outage/cache.db"
    store = open_store(url, storage_options=options, flush_writes=1)
    cache = Cache(store=store, cleanup_probability=0.0)
    calls: list[int] = []

    def work(x):
        calls.append(x)
        return {"x": x}

    assert cache.wrap("work", work, {"x": 1})["_cache_hit"] is False
    private_moto.stop()
    down = cache.wrap("work", work, {"x": 2})  # the upload fails: the action still runs and answers
    assert down["success"] is True and down["result"] == {"x": 2}
    assert cache.wrap("work", work, {"x": 1})["_cache_hit"] is True  # served from the local copy
    assert store.sync_errors >= 1 and "outage/cache.db" in store.last_sync_error
    with pytest.raises(StoreError, match="cannot"):
        store.flush()
    private_moto.start()
    s3fs.S3FileSystem(skip_instance_cache=True, **options).mkdir("outage")  # moto keeps nothing on restart
    store.flush()  # caching resumes: what was written during the outage goes up
    fresh = Cache(store=open_store(url, storage_options=options), cleanup_probability=0.0)
    assert fresh.wrap("work", work, {"x": 2})["_cache_hit"] is True
    assert calls == [1, 2]
    fresh.close()
    cache.close()
