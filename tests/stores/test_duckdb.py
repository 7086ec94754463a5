"""DuckDB-specific behaviour beyond the conformance suite: URLs, the one-writer-process rule,
read-only opening, the expiry index, SQL metadata filters and recovery after a kill.

The real peer is the duckdb package itself (DESIGN.md, "Real components")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import services
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

services.require_module("duckdb", "duckdb")

from actioncache import Cache  # noqa: E402
from actioncache.errors import StoreError, StoreURLError  # noqa: E402
from actioncache.stores import open_store  # noqa: E402
from actioncache.stores.base import Entry, metadata_matches  # noqa: E402
from actioncache.stores.duckdb import EXPIRED_KEYS, DuckDBStore  # noqa: E402

NOW = 1_900_000_000.0


def test_url_forms(tmp_path):
    store = open_store(f"duckdb:///{tmp_path}/c.duckdb")
    assert isinstance(store, DuckDBStore) and store.path == f"{tmp_path}/c.duckdb"
    assert store.url == f"duckdb:///{str(tmp_path).lstrip('/')}/c.duckdb"
    memory = open_store("duckdb:///:memory:")
    assert memory.path == ":memory:"
    ro = open_store(f"duckdb:///{tmp_path}/c.duckdb?read_only=true")
    assert ro.read_only is True and ro.url.endswith("?read_only=true")


@pytest.mark.parametrize(
    "url, fix",
    [
        ("duckdb://host/x.duckdb", "duckdb:///abs/path.duckdb"),
        ("duckdb:///", "duckdb:///abs/path.duckdb"),
        ("duckdb:///tmp/x.duckdb?threads=2", "read_only=true"),
        ("duckdb:///tmp/x.duckdb?read_only=maybe", "true or false"),
    ],
)
def test_bad_urls_name_the_fix(url, fix):
    with pytest.raises(StoreURLError) as info:
        open_store(url)
    assert fix in str(info.value)


def test_memory_stores_are_separate_databases():
    a, b = open_store("duckdb:///:memory:"), open_store("duckdb:///:memory:")
    a.put(Entry("k", b"ja", {}, NOW, None))
    assert a.get("k").value == b"ja" and b.get("k") is None


def test_entries_survive_close_and_reopen(tmp_path):
    url = f"duckdb:///{tmp_path}/c.duckdb"
    store = open_store(url)
    store.put(Entry("k", b"jv", {"_cache_action": "a", "_cache_duration_ms": 12.5}, NOW, NOW + 60))
    store.add_counters({"stats:hits": 3})
    store.close()
    again = open_store(url)
    got = again.get("k")
    assert got.value == b"jv" and got.metadata["_cache_action"] == "a"
    assert got.metadata.get("_cache_duration_ms") == 12.5
    assert again.counters("stats:") == {"stats:hits": 3}
    again.close()


def test_two_store_objects_on_one_file_share_entries_and_writes(tmp_path):
    """Two stores on one file in one process share DuckDB's instance and its write lock."""
    url = f"duckdb:///{tmp_path}/c.duckdb"
    a, b = open_store(url), open_store(url)
    errors: list[BaseException] = []

    def writer(store, n):
        try:
            for i in range(30):
                store.put(Entry(f"shared:{i % 5}", f"w{n}".encode(), {"writer": n}, NOW, None))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s, n)) for n, s in enumerate([a, b, a, b])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(b.find(pattern="shared:*")) == [f"shared:{i}" for i in range(5)]
    got = a.get("shared:0")
    assert got.value == f"w{got.metadata['writer']}".encode()
    a.close()
    b.close()


_HOLD = textwrap.dedent(
    """
    import sys, time
    from actioncache.stores import open_store
    from actioncache.stores.base import Entry
    store = open_store(sys.argv[1])
    store.put(Entry("held", b"jh", {}, 0.0, None))
    print("ready", flush=True)
    time.sleep(60)
    """
)


@pytest.fixture
def held_file(tmp_path, src_env):
    """A DuckDB file that another (real) process has open for writing."""
    url = f"duckdb:///{tmp_path}/held.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, url], env=src_env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield url
    finally:
        proc.kill()
        proc.wait()


def test_a_second_process_gets_a_clear_store_error(held_file):
    store = open_store(held_file)
    with pytest.raises(StoreError) as info:
        store.get("held")
    text = str(info.value)
    assert "one process" in text and "read_only=true" in text and "postgresql://" in text


def test_wrap_in_a_second_process_still_runs_fresh_and_records_the_error(held_file):
    cache = Cache(held_file, cleanup_probability=0.0)
    result = cache.wrap("work", lambda x: {"x": x}, {"x": 1})
    assert result["success"] is True and result["result"] == {"x": 1} and result["_cache_hit"] is False
    assert cache.stats()["errors"] >= 1
    cache.close()


def test_read_only_lets_several_processes_read_and_refuses_writes(tmp_path, src_env):
    url = f"duckdb:///{tmp_path}/ro.duckdb"
    writer = open_store(url)
    writer.put(Entry("k", b"jv", {}, NOW, None))
    writer.close()
    reader = open_store(url + "?read_only=true")
    assert reader.get("k").value == b"jv"
    # another process reads the same file at the same time
    code = "import sys; from actioncache.stores import open_store; print(open_store(sys.argv[1]).get('k').value.decode())"
    out = subprocess.run([sys.executable, "-c", code, url + "?read_only=true"], env=src_env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "jv"
    with pytest.raises(StoreError) as info:
        reader.put(Entry("k2", b"jw", {}, NOW, None))
    assert "read_only" in str(info.value)
    reader.close()


def test_cleanup_query_uses_the_expiry_index(tmp_path):
    store = open_store(f"duckdb:///{tmp_path}/c.duckdb")
    db = store._database()
    # Many live rows, three expired: DuckDB answers the selective range from the ART index.
    db.execute(
        "INSERT INTO entries SELECT 'k' || i, 'jv'::BLOB, '{}', ?, ? + i, NULL FROM range(20000) t(i)",
        [NOW, NOW + 10],
    )
    for i in range(3):
        store.put(Entry(f"old{i}", b"jx", {}, NOW, NOW - 10 + i))
    plan = db.execute("EXPLAIN ANALYZE " + EXPIRED_KEYS + " LIMIT 2", [NOW]).fetchall()[0][1]
    assert "Index Scan" in plan
    assert store.delete_expired(NOW, limit=2) == 2
    assert store.get("old2") is not None and store.get("old0") is None
    assert store.delete_expired(NOW) == 1 and store.count() == 20000
    store.close()


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 2.5, -0.0]),
                    st.sampled_from(["", "1", "true", "a", "ü", 'q"uote', "back\\slash"]))
NAMES = st.sampled_from(["a", "b", "_cache_action", 'we"ird', "sp ace", "dot.ted", "back\\slash"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.dictionaries(NAMES, SCALARS | st.lists(SCALARS, max_size=2), max_size=4), min_size=1, max_size=6),
       wanted=st.dictionaries(NAMES, SCALARS | st.lists(SCALARS, max_size=2), min_size=1, max_size=2))
def test_sql_metadata_filter_agrees_with_the_reference(rows, wanted):
    """JSON types stay apart in SQL (1, 1.0, true, "1", null), exactly as metadata_matches decides."""
    store = DuckDBStore(":memory:")
    try:
        for i, meta in enumerate(rows):
            store.put(Entry(f"k{i}", b"jv", meta, NOW, None))
        expected = sorted(f"k{i}" for i, meta in enumerate(rows) if metadata_matches(meta, wanted))
        assert sorted(store.find(metadata_filter=wanted)) == expected
    finally:
        store.close()


_WRITE_FOREVER = textwrap.dedent(
    """
    import os, sys
    from actioncache.stores import open_store
    from actioncache.stores.base import Entry
    store = open_store(sys.argv[1])
    i = 0
    while True:
        store.put(Entry(f"k{i % 300}", os.urandom(2048), {"i": i}, 0.0, float(i)))
        if i % 7 == 0:
            store.delete_expired(float(i - 50), limit=5)
        if i == 200:
            print("ready", flush=True)
        i += 1
    """
)


def test_a_process_killed_mid_write_leaves_a_store_that_opens_and_cleans_up(tmp_path, src_env):
    url = f"duckdb:///{tmp_path}/killed.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", _WRITE_FOREVER, url], env=src_env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    store = open_store(url)
    total = store.count()
    assert 0 < total <= 300
    # the expiry index survived the WAL replay: cleanup deletes through it without an error
    removed = store.delete_expired(1e12)
    assert removed == total and store.count() == 0
    store.put(Entry("after", b"ja", {}, NOW, None))
    store.close()
    store = open_store(url)
    assert store.get("after").value == b"ja"
    store.close()


def test_store_metadata_is_valid_json_in_the_database(tmp_path):
    store = open_store(f"duckdb:///{tmp_path}/c.duckdb")
    store.put(Entry("k", b"jv", {"s": "ü", "n": 1}, NOW, None))
    raw = store._database().execute("SELECT metadata::VARCHAR, json_valid(metadata) FROM entries").fetchone()
    assert json.loads(raw[0]) == {"s": "ü", "n": 1} and raw[1] is True
    store.close()



@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_the_parents_database(tmp_path):
    """The child must not touch the parent's DuckDB instance (using it crashes the child): its copy
    of the store refuses every call with a StoreError; the parent carries on unharmed."""
    store = open_store(f"duckdb:///{tmp_path}/fork.duckdb")
    store.put(Entry("k", b"jv", {}, NOW, None))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        try:
            store.get("k")
            message = b"no error"
        except StoreError as exc:
            message = str(exc).encode()
        except BaseException as exc:
            message = repr(exc).encode()
        finally:
            os.write(write_end, message[:4000] if "message" in locals() else b"crashed")
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(pid, 0)
    assert "forked from process" in message and "sqlite:///" in message
    assert store.get("k").value == b"jv"
    store.close()
