"""PostgreSQL specifics beyond the conformance suite: URL options, the indexes the planner can
use for cleanup/action/metadata/prefix queries, reconnecting after the server drops the
connection, concurrent first opens of one table, and clear errors. Real server."""

from __future__ import annotations

import threading

import pytest
import services
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Cache, open_store
from actioncache.errors import StoreError, StoreURLError
from actioncache.stores.base import Entry

from .backends import BACKENDS, unique

psycopg = pytest.importorskip("psycopg") if not services.in_ci() else __import__("psycopg")


@pytest.fixture
def store(tmp_path):
    s = BACKENDS["postgres"](tmp_path)
    yield s
    s.drop()
    s.close()


def admin():
    return psycopg.connect(services.POSTGRES_URL, autocommit=True)


def plan(store, statement, params) -> str:
    """EXPLAIN with sequential scans priced out: shows whether an index *can* serve the query
    (on a tiny table the planner would rightly prefer a scan)."""
    conn = store._conn()
    conn.execute("SET enable_seqscan = off")
    try:
        rows = conn.execute(psycopg.sql.SQL("EXPLAIN ") + statement, params).fetchall()
    finally:
        conn.execute("RESET enable_seqscan")
    return "\n".join(r[0] for r in rows)


def test_url_options_and_errors():
    with pytest.raises(StoreURLError, match="table name"):
        open_store("postgresql://u@127.0.0.1/db?table=bad-name;drop")
    with pytest.raises(StoreURLError, match="schema name"):
        open_store("postgresql://u@127.0.0.1/db?schema=1x")
    store = open_store("postgres://u:s3cret@127.0.0.1:1/db?table=t1&sslmode=disable")
    assert store.table == "t1" and "sslmode=disable" in store.conninfo and "connect_timeout=2" in store.conninfo
    assert "s3cret" not in store.url, "the URL that stats and logs show has no password"
    with pytest.raises(StoreError) as err:
        store.count()
    assert "s3cret" not in str(err.value) and "***" in str(err.value) and "start the server" in str(err.value)


def test_a_url_without_a_host_in_its_authority_connects():
    """postgresql:///db?host=...: the host in the query (libpq's form for a socket directory)."""
    database = services.POSTGRES_URL.rsplit("/", 1)[1]
    table = unique("hostless_")
    store = open_store(f"postgresql:///{database}?host={services.POSTGRES_HOST}&port={services.POSTGRES_PORT}"
                       f"&user=postgres&table={table}")
    try:
        store.put(Entry("k", b"v", {}, 1.0, None))
        entry = store.get("k")
        assert entry is not None and bytes(entry.value) == b"v"
    finally:
        store.drop()
        store.close()


def test_commits_do_not_wait_for_the_wal_flush_unless_asked(store):
    assert store._conn().execute("SHOW synchronous_commit").fetchone()[0] == "off"
    durable = open_store(f"{services.POSTGRES_URL}?connect_timeout_s=2&table={store.table}&synchronous_commit=on")
    try:
        assert durable._conn().execute("SHOW synchronous_commit").fetchone()[0] == "on"
    finally:
        durable.close()
    with pytest.raises(StoreURLError, match="synchronous_commit"):
        open_store(f"{services.POSTGRES_URL}?connect_timeout_s=2&synchronous_commit=sometimes")


def test_schema_option_puts_the_tables_there(store):
    schema = unique("ac_s")
    with admin() as conn:
        conn.execute(psycopg.sql.SQL("CREATE SCHEMA {}").format(psycopg.sql.Identifier(schema)))
    other = open_store(f"{services.POSTGRES_URL}?connect_timeout_s=2&schema={schema}&table=entries")
    try:
        other.put(Entry("k", b"v", {}, 1.0, None))
        with admin() as conn:
            found = conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = %s",
                                 (schema,)).fetchone()[0]
        assert found == 3 and other.get("k").value == b"v" and store.get("k") is None
    finally:
        other.close()
        with admin() as conn:
            conn.execute(psycopg.sql.SQL("DROP SCHEMA {} CASCADE").format(psycopg.sql.Identifier(schema)))


def test_queries_can_use_their_indexes(store):
    store.put(Entry("cache:a:1", b"v", {"_cache_action": "a", "tag": "t"}, 1.0, 2.0))
    cleanup = plan(store, store._sql_delete_expired, (10.0, 5))
    assert f"{store.table}_expires_at" in cleanup, cleanup
    by_action = plan(store, store._q("SELECT key FROM {entries} WHERE action = %s"), ("a",))
    assert f"{store.table}_action" in by_action, by_action
    by_meta = plan(store, store._q("SELECT key FROM {entries} WHERE metadata @> %s::jsonb"), ('{"tag": "t"}',))
    assert f"{store.table}_metadata" in by_meta, by_meta
    by_prefix = plan(store, store._q("SELECT key FROM {entries} WHERE key >= %s AND key < %s"), ("cache:a:", "cache:a;"))
    assert f"{store.table}_pkey" in by_prefix, by_prefix


def test_reconnects_after_the_server_drops_the_connection(store):
    store.put(Entry("k", b"v", {}, 1.0, None))
    backend_pid = store._conn().info.backend_pid
    with admin() as conn:
        assert conn.execute("SELECT pg_terminate_backend(%s)", (backend_pid,)).fetchone()[0] is True
    assert store.get("k").value == b"v", "a stale connection is replaced and the read retried"
    assert store._conn().info.backend_pid != backend_pid


def test_the_hit_path_reconnects_after_its_connection_is_dropped_between_reads(store):
    """A read keeps its cursor for the next one: a killed server connection, or one closed and
    replaced by another call meanwhile, must not leave later reads failing on that cursor."""
    store.put(Entry("k", b"v", {}, 1.0, None))
    assert store.get("k").value == b"v"
    backend_pid = store._conn().info.backend_pid
    with admin() as conn:
        assert conn.execute("SELECT pg_terminate_backend(%s)", (backend_pid,)).fetchone()[0] is True
    assert store.get("k").value == b"v"
    assert store._conn().info.backend_pid != backend_pid
    store._conn().close()
    store.put(Entry("k", b"w", {}, 2.0, None))  # opens a new connection; the kept cursor was the old one's
    assert store.get("k").value == b"w"
    assert store.get("k").value == b"w"


def test_tables_dropped_under_the_store_are_made_again(store):
    store.put(Entry("k", b"v", {}, 1.0, None))
    with admin() as conn:
        conn.execute(psycopg.sql.SQL("DROP TABLE {}").format(psycopg.sql.Identifier(store.table)))
    assert store.get("k") is None
    store.put(Entry("k", b"again", {}, 1.0, None))
    assert store.get("k").value == b"again"


def test_a_finished_thread_does_not_keep_its_connection(store):
    def use() -> None:
        store.count()

    for _ in range(5):
        t = threading.Thread(target=use)
        t.start()
        t.join()
    import gc

    gc.collect()
    assert len(store._conns) == 0


def test_concurrent_first_opens_of_one_table(tmp_path):
    url = f"{services.POSTGRES_URL}?connect_timeout_s=2&table={unique('ac_')}"
    errors: list[BaseException] = []
    stores = [open_store(url) for _ in range(4)]

    def first_use(i: int) -> None:
        try:
            stores[i].put(Entry(f"k{i}", b"v", {}, 1.0, None))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_use, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors
        assert sorted(stores[0].find(pattern="k*")) == ["k0", "k1", "k2", "k3"]
    finally:
        stores[0].drop()
        for s in stores:
            s.close()


def test_nul_in_a_key_is_a_clear_error(store):
    with pytest.raises(StoreError, match="NUL"):
        store.put(Entry("a\x00b", b"v", {}, 1.0, None))
    store.put(Entry("fine", b"v", {}, 1.0, None))  # the connection is still usable
    assert store.get("fine").value == b"v"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(number=st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                        st.sampled_from([1e300, 1e16, 1e308, -1e300, 1.2345678901234568e+29, 1e-300, 0.1])))
def test_float_metadata_round_trips_and_matches_exactly(store, number):
    """jsonb keeps a number's digits but not its notation: 1e300 must not come back as the integer
    10**300, so a filter on the float deletes the entry (no wrong hit after invalidation) and an
    integer of the same size stays."""
    cache = Cache(store)
    cache.wrap("m", lambda: 1, key="float", metadata={"x": number})
    got = cache.get("float", include_metadata=True)["metadata"]["x"]
    assert got == number and isinstance(got, float)
    decoy = int(number) if number.is_integer() and abs(number) >= 1e16 else None
    if decoy is not None and decoy != number:
        cache.wrap("m", lambda: 1, key="int", metadata={"x": decoy})
    deleted = cache.invalidate(metadata_filter={"x": number})["deleted_keys"]
    assert deleted == ["cache:float"]
    assert cache.wrap("m", lambda: 2, key="float")["result"] == 2  # the entry is gone: no wrong hit
    cache.invalidate(pattern="*")


_TRICKY = st.text(st.sampled_from(["\0", "\ue000", "\ue001", "\\", "u", "0", "a", '"']), max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_TRICKY.filter(lambda n: not n.startswith("_cache")), value=_TRICKY)
def test_nul_in_metadata_round_trips_and_matches_exactly(store, name, value):
    """jsonb cannot hold NUL: metadata holding it (or the private-use character its escape uses)
    is stored escaped, reads back exactly, and a filter on it deletes that entry and no decoy."""
    cache = Cache(store)
    result = cache.wrap("m", lambda: 1, key="nul", metadata={name: value})
    assert "_cache_error" not in result
    cache.wrap("m", lambda: 1, key="decoy", metadata={name: value + "\0"})
    assert cache.get("nul", include_metadata=True)["metadata"][name] == value
    assert cache.invalidate(metadata_filter={name: value})["deleted_keys"] == ["cache:nul"]
    cache.invalidate(pattern="*")


@pytest.mark.parametrize("suffix", ["_leases", "_counters", "_totals", "_action", "_expires_at"])
def test_a_table_named_like_another_tables_own_relations_is_refused(tmp_path, suffix):
    """Tables ``t`` and ``t_leases`` would share ``t_leases`` (one store's entries, the other's
    leases): caching silently stopped for ``t``. Such names are refused, saying why and what to do."""
    base = BACKENDS["postgres"](tmp_path)
    try:
        url = services.POSTGRES_URL + ("&" if "?" in services.POSTGRES_URL else "?")
        tenant = base.table
        with pytest.raises(StoreURLError, match=f"ends with '{suffix}'.*choose a table name"):
            open_store(f"{url}table={tenant}{suffix}")
        cache = Cache(f"{url}table={tenant}")
        try:
            calls = []
            for _ in range(2):
                cache.wrap("tenant.f", lambda x: calls.append(x) or x, {"x": 1}, lock=True)
            assert calls == [1], "the tenant at ?table=t still caches"
        finally:
            cache.close()
    finally:
        base.drop()
        base.close()
