"""Firestore beyond the conformance suite, against the @firestore-emulator/server emulator."""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

from actioncache import Cache
from actioncache.errors import StoreURLError
from actioncache.stores.base import Entry, escape_glob, open_store
from actioncache.stores.firestore import CHUNK_BYTES, INLINE_BYTES, doc_id, metadata_field

from .cloud_stores import open_firestore

NOW = 1_900_000_000.0


def entry(key: str, value: bytes = b"v", expires_in: float | None = 3600.0, **meta) -> Entry:
    return Entry(key, value, meta, NOW, None if expires_in is None else NOW + expires_in)


@pytest.fixture
def collection() -> str:
    return f"f{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(collection):
    s = open_firestore(collection)
    yield s
    s.close()


def chunk_docs(store) -> int:
    """How many chunk documents exist (read directly: orphans are invisible through the protocol)."""
    return len(list(store.client.collection(store.collection + "-chunks").stream()))


def test_keys_firestore_forbids_as_ids_round_trip(store):
    keys = ["a/b/c", ".", "..", "__reserved__", "k" * 2000, "ü/..", "tab\tand\nnewline"]
    for k in keys:
        store.put(entry(k, k.encode()[:100]))
    for k in keys:
        assert store.get(k).value == k.encode()[:100]
    assert sorted(store.find(pattern="*")) == sorted(keys)
    assert store.find(pattern=escape_glob("a/b/") + "*") == ["a/b/c"]


def test_document_ids_are_safe_for_any_key():
    for key in ["/", "..", "__x__", "x" * 5000]:
        ident = doc_id(key)
        assert len(ident) == 64 and "/" not in ident and not ident.startswith("__")


def test_metadata_fields_with_any_name_are_queryable(store):
    store.put(entry("k1", **{"a.b": "x", "with space": 1, "plain": True, "nested": {"n": 1}}))
    store.put(entry("k2", **{"a.b": "y", "with space": 1, "plain": False}))
    assert store.find(metadata_filter={"a.b": "x"}) == ["k1"]
    assert sorted(store.find(metadata_filter={"with space": 1})) == ["k1", "k2"]
    assert store.find(metadata_filter={"plain": False}) == ["k2"]
    assert store.find(metadata_filter={"nested": {"n": 1}}) == ["k1"]  # not indexable: checked on read
    assert metadata_field("a.b").startswith("mh_") and metadata_field("plain") == "m_plain"


def test_large_values_are_chunked_and_replaced_without_orphans(store):
    big = os.urandom(3 * CHUNK_BYTES + 123)
    assert len(big) > INLINE_BYTES
    store.put(entry("big", big))
    assert store.get("big").value == big
    first = chunk_docs(store)
    assert first == 4
    bigger = os.urandom(5 * CHUNK_BYTES)
    store.put(entry("big", bigger))
    assert store.get("big").value == bigger
    assert chunk_docs(store) == 5  # the previous version's chunks are gone
    store.put(entry("big", b"small now"))
    assert store.get("big").value == b"small now" and chunk_docs(store) == 0
    store.put(entry("big", big))
    assert store.delete("big") and chunk_docs(store) == 0
    assert store.size_bytes() == 0


def test_reader_never_sees_a_mix_of_two_chunked_values(store):
    size = 2 * CHUNK_BYTES + 10
    stop = threading.Event()
    bad: list[str] = []

    def writer() -> None:
        i = 0
        while not stop.is_set():
            store.put(entry("torn", bytes([i % 2]) * size, fill=i % 2))
            i += 1

    store.put(entry("torn", bytes([1]) * size, fill=1))
    t = threading.Thread(target=writer)
    t.start()
    try:
        reads = 0
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            got = store.get("torn")
            if got is None:
                continue
            reads += 1
            if got.value != bytes([got.metadata["fill"]]) * size:
                bad.append("torn")
                break
    finally:
        stop.set()
        t.join()
    assert reads > 0 and not bad


def test_expired_chunked_entries_take_their_chunks_with_them(store):
    store.put(Entry("old", os.urandom(2 * CHUNK_BYTES), {}, NOW - 100, NOW - 10))
    store.put(entry("live"))
    assert store.delete_expired(NOW) == 1
    assert store.find(pattern="*") == ["live"] and chunk_docs(store) == 0


def test_counters_and_leases_are_shared_between_clients(collection):
    a, b = open_firestore(collection), open_firestore(collection)
    a.add_counters({"stats:hits": 2, "stats:time_saved_ms": 0.5})
    b.add_counters({"stats:hits": 3})
    assert a.counters("stats:") == b.counters("stats:") == {"stats:hits": 5, "stats:time_saved_ms": 0.5}
    token = a.acquire_lease("lease:x", 30)
    assert token and b.acquire_lease("lease:x", 30) is None
    b.release_lease("lease:x", "wrong")
    assert b.acquire_lease("lease:x", 30) is None
    a.release_lease("lease:x", token)
    assert b.acquire_lease("lease:x", 30)
    a.close()
    b.close()


def test_two_caches_share_entries(collection):
    first = Cache(store=open_firestore(collection), cleanup_probability=0.0)
    second = Cache(store=open_firestore(collection), cleanup_probability=0.0)
    assert first.wrap("work", lambda x: {"x": x}, {"x": 1})["_cache_hit"] is False
    hit = second.wrap("work", lambda x: {"x": -1}, {"x": 1})
    assert hit["_cache_hit"] is True and hit["result"] == {"x": 1}
    assert second.invalidate(metadata_filter={"_cache_action": "work"})["deleted_count"] == 1
    assert first.get(hit["_cache_key"])["found"] is False
    first.close()
    second.close()


@pytest.mark.parametrize(
    "bad, message",
    [
        ("firestore://project-only", "needs a project and a collection"),
        ("firestore://p/a/b", "not valid"),
        ("firestore://p/c?colour=red", "unknown Firestore URL option"),
    ],
)
def test_bad_urls_name_the_fix(bad, message):
    with pytest.raises(StoreURLError, match=message):
        open_store(bad)


def test_url_selects_a_named_database():
    store = open_store("firestore://proj/coll?database=other")
    assert store.database == "other" and store.url.endswith("?database=other")
