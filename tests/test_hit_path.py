"""The lean hit path of @cached: the key memo, the decode memo, the metadata parse memo and the
lock-free hit tally must never change an answer. A wrong key or a shared mutable value is a wrong
hit; a lost or doubled count is a wrong statistic."""

from __future__ import annotations

import asyncio
import math
import threading
import time
import unicodedata
import uuid

import pytest
import services
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache import Cache, cached
from actioncache.codec import JSONCodec, make_codec
from actioncache.stores.base import LazyMetadata


class Clock:
    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


class Text(str):
    """A str subclass: equal to its plain twin, but never remembered under the same slot."""


class Number(int):
    pass


def _odd_scalar() -> st.SearchStrategy:
    return st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-3, max_value=3), st.integers(),
        st.sampled_from([0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, 1e16, 2.0**53]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(["é", unicodedata.normalize("NFD", "é"), "", "1", "True", "null", "\u212b", "\u00c5"]),
        st.text(max_size=5),
        st.builds(Text, st.sampled_from(["a", "1", "é"])),
        st.builds(Number, st.integers(-2, 2)),
    )


def _fresh_key(cache: Cache, args: tuple) -> str:
    """The key a wrapper with an empty memo derives (same name, so the same key space)."""
    return cached(cache=cache, name="memo")(lambda *a: None).cache_key(*args)


@settings(max_examples=150, deadline=None)
@given(calls=st.lists(st.lists(_odd_scalar(), min_size=0, max_size=3).map(tuple), min_size=1, max_size=12))
def test_remembered_keys_equal_freshly_derived_keys(calls):
    cache = Cache("memory://", cleanup_probability=0)
    memo = cached(cache=cache, name="memo")(lambda *a: None)
    for args in calls + calls:  # the second pass answers from the memo
        assert memo.cache_key(*args) == _fresh_key(cache, args), args


def test_equal_arguments_of_other_types_or_signs_get_their_own_results():
    cache = Cache("memory://", cleanup_probability=0)

    @cached(cache=cache)
    def spell(x):
        return [type(x).__name__, repr(x)]

    odd = [1, True, 1.0, 0, False, 0.0, -0.0, "é", unicodedata.normalize("NFD", "é"), None, "1", "None"]
    for _ in range(3):  # the first round stores, the others hit through the memo
        for x in odd:
            assert spell(x) == [type(x).__name__, repr(x)], x


def test_keyword_order_and_defaults_give_one_key():
    cache = Cache("memory://", cleanup_probability=0)

    @cached(cache=cache)
    def f(a, b=2):
        return a + b

    assert f.cache_key(1) == f.cache_key(1, 2) == f.cache_key(a=1, b=2) == f.cache_key(b=2, a=1)
    assert f.cache_key(1) != f.cache_key(True) != f.cache_key(1.0)


def test_a_mutable_default_is_read_on_every_call():
    cache = Cache("memory://", cleanup_probability=0)
    options: dict = {}

    @cached(cache=cache)
    def f(x, opts=options):
        return dict(opts)

    before = f.cache_key(1)
    options["mode"] = "other"
    assert f.cache_key(1) != before


@pytest.fixture(params=["memory", "sqlite"])
def any_cache(request, tmp_path):
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/hits.db"
    cache = Cache(url, cleanup_probability=0)
    yield cache
    cache.close()


def test_a_caller_mutating_its_hit_never_changes_the_next_hit(any_cache):
    @cached(cache=any_cache)
    def answer(x):
        return {"x": x, "items": [1, [2, 3]], "meta": {"tags": ["a"]}, "text": "t"}

    expected = answer(1)
    for _ in range(3):
        got = answer(1)
        assert got == expected
        got["items"][1].append(4)
        got["meta"]["tags"].clear()
        got["x"] = "changed"
        got.pop("text")
    assert answer(1) == {"x": 1, "items": [1, [2, 3]], "meta": {"tags": ["a"]}, "text": "t"}


def test_decoded_values_are_new_objects_equal_to_a_plain_decode():
    codec = JSONCodec()
    values = [{"a": [1, {"b": [2.5, None, True]}], "c": "é"}, [[], {}, [[]]], "text", 3, None, -0.0,
              {"deep": [[[[[[1]]]]]]}, list(range(100)), [{"i": i} for i in range(100)]]
    for value in values:
        data = codec.encode(value)
        first, second = codec.decode(data), codec.decode(data)
        assert first == second == JSONCodec().decode(data)
        assert repr(first) == repr(value) or value != value
        if isinstance(first, (dict, list)):
            assert first is not second
            if isinstance(first, dict):
                first.clear()
            else:
                first.append("x")
            assert codec.decode(data) == second


def test_pickle_codec_decodes_through_the_same_memo():
    codec = make_codec("pickle", "s" * 32)
    data = codec.encode({"a": [1]})
    got = codec.decode(data)
    got["a"].append(2)
    assert codec.decode(data) == {"a": [1]}


def test_shared_metadata_parses_never_leak_a_mutable_value():
    flat = '{"_cache_duration_ms": 1.5, "k": "v"}'
    nested = '{"tags": ["a"], "k": "v"}'
    a, b = LazyMetadata(flat), LazyMetadata(flat)
    assert a.get("k") == b.get("k") == "v" and a == {"_cache_duration_ms": 1.5, "k": "v"}
    first = LazyMetadata(nested)
    first["tags"].append("b")  # a caller mutating a nested value changes only its own parse
    assert LazyMetadata(nested)["tags"] == ["a"]
    assert LazyMetadata("[1, 2]").get("_corrupt_metadata") and LazyMetadata("not json").get("_corrupt_metadata")


def test_hits_counted_from_many_threads_add_up_exactly(any_cache):
    calls: list[int] = []

    @cached(cache=any_cache)
    def value(x):
        calls.append(x)
        return {"x": x}

    for x in range(4):
        value(x)
    threads_n, per_thread = 8, 400
    start = threading.Barrier(threads_n)

    def hammer(seed: int) -> None:
        start.wait()
        for i in range(per_thread):
            value((seed + i) % 4)
            if i == per_thread // 2 and seed == 0:
                any_cache.flush_stats()  # folds while the others keep counting

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = any_cache.stats()
    assert len(calls) == 4
    assert stats["hits"] == threads_n * per_thread
    assert stats["session"]["hits"] == threads_n * per_thread
    assert stats["by_action"][value.cache_name]["hits"] == threads_n * per_thread
    assert any_cache.stats()["hits"] == threads_n * per_thread  # a second read adds nothing


def test_a_thread_that_ended_before_the_fold_still_counts(any_cache):
    @cached(cache=any_cache)
    def value(x):
        return x

    value(1)
    for _ in range(5):
        t = threading.Thread(target=lambda: [value(1) for _ in range(10)])
        t.start()
        t.join()
    assert any_cache.stats()["session"]["hits"] == 50


@pytest.fixture(params=["memory", "sqlite"])
def clocked(request, tmp_path):
    clock = Clock()
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/clocked.db"
    cache = Cache(url, clock=clock, cleanup_probability=0)
    yield cache, clock
    cache.close()


def test_a_hit_after_its_ttl_is_a_miss(clocked):
    cache, clock = clocked
    runs: list[int] = []

    @cached(cache=cache, ttl_seconds=10)
    def f(x):
        runs.append(x)
        return len(runs)

    assert f(1) == 1 and f(1) == 1  # the second call is a hit through the memos
    clock.now += 9.9
    assert f(1) == 1
    clock.now += 0.2
    assert f(1) == 2 and runs == [1, 1]
    assert f(1) == 2


def test_stale_while_revalidate_still_serves_and_refreshes(clocked):
    cache, clock = clocked
    runs: list[int] = []

    @cached(cache=cache, ttl_seconds=10, stale_ttl_seconds=100)
    def f(x):
        runs.append(x)
        return {"version": len(runs)}

    assert f(1) == {"version": 1}
    assert f(1) == {"version": 1}
    clock.now += 30
    assert f(1) == {"version": 1}  # stale, served at once; refreshed in the background
    deadline = time.monotonic() + 60
    while f(1) != {"version": 2} and time.monotonic() < deadline:
        time.sleep(0.01)
    assert f(1) == {"version": 2} and runs == [1, 1]
    clock.now += 200  # past the stale window too: a plain miss
    assert f(1) == {"version": 3}


def test_async_hits_take_the_same_path(any_cache):
    runs: list[int] = []

    @cached(cache=any_cache)
    async def f(x):
        runs.append(x)
        return {"x": [x]}

    async def main() -> list:
        first = await f(1)
        second = await f(1)
        second["x"].append(2)
        return [first, second, await f(1), await f(True)]

    first, second, third, other = asyncio.run(main())
    assert first == third == {"x": [1]} and other == {"x": [True]} and runs == [1, True]
    assert any_cache.stats()["session"]["hits"] == 2


# --- remembered verdicts: a repeat hit skips the shape check and decode of an entry it judged
# before, only while the store hands back that same entry. Another writer's change must show.


def _two_writers(kind: str, tmp_path) -> tuple[Cache, Cache]:
    unique = f"verdicts_{uuid.uuid4().hex[:12]}"
    if kind == "redis":
        services.require_redis()
        url = f"{services.REDIS_URL}?prefix={unique}"
    elif kind == "postgres":
        services.require_postgres()
        url = f"{services.POSTGRES_URL}?connect_timeout_s=2&table={unique}"
    else:
        url = f"memory://{unique}" if kind == "memory" else f"sqlite:///{tmp_path}/verdicts.db"
    return Cache(url, cleanup_probability=0), Cache(url, cleanup_probability=0)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis", "postgres"])
@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["call", "call", "overwrite", "invalidate"]), st.integers(0, 2)),
                      min_size=1, max_size=25))
def test_repeat_hits_always_serve_what_the_store_holds_now(kind, steps, tmp_path_factory):
    reader, writer = _two_writers(kind, tmp_path_factory.mktemp("v"))
    made = iter(range(10**6))

    def body(x):
        return {"x": x, "run": next(made), "items": [x]}

    mine = cached(cache=reader, name="shared")(body)
    theirs = cached(cache=writer, name="shared")(body)
    held: dict[int, dict] = {}  # what the store holds per argument, by the model
    for op, x in steps:
        if op == "call":
            got = mine(x)
            if x in held:
                assert got == held[x]
            held[x] = got
        elif op == "overwrite":
            held[x] = theirs.refresh(x)
        else:
            theirs.invalidate(x)
            held.pop(x, None)
    if kind in ("redis", "postgres"):
        writer.store.drop()
    reader.close()
    writer.close()


def test_a_row_changed_under_a_remembered_hit_is_read_anew(tmp_path):
    import sqlite3

    cache = Cache(f"sqlite:///{tmp_path}/planted.db", cleanup_probability=0)
    runs: list[int] = []

    @cached(cache=cache)
    def f(x):
        runs.append(x)
        return {"x": x}

    assert f(1) == f(1) == f(1) == {"x": 1} and runs == [1]  # the last two: a remembered verdict
    raw = sqlite3.connect(f"{tmp_path}/planted.db", isolation_level=None)
    key = f.cache_key(1)
    raw.execute("UPDATE entries SET value = ? WHERE key = ?", (cache.codec.encode({"x": "planted"}), key))
    assert f(1) == {"x": "planted"}  # what the store holds now, not the remembered value
    raw.execute("UPDATE entries SET value = ? WHERE key = ?", (b"\xffgarbage", key))
    assert f(1) == {"x": 1} and runs == [1, 1]  # corrupt: a miss, removed, run again
    assert cache.stats()["session"]["corrupt"] == 1
    raw.execute("UPDATE entries SET expires_at = 1000000000.0 WHERE key = ?", (key,))
    assert f(1) == {"x": 1} and runs == [1, 1, 1]  # expired by another writer: a miss
    raw.close()
    cache.close()


def test_a_new_codec_forgets_what_the_old_one_decoded(tmp_path):
    cache = Cache("memory://", cleanup_probability=0)

    @cached(cache=cache)
    def f(x):
        return [x]

    assert f(1) == f(1) == [1]

    class Doubling(JSONCodec):
        def decode(self, data):
            return super().decode(data) * 2

    cache.codec = Doubling()
    for _ in range(3):  # decoded by the new codec every time, never copied from a memo it bypasses
        assert f(1) == [1, 1]
    own = Cache("memory://", codec=Doubling(), cleanup_probability=0)
    g = cached(cache=own)(lambda x: [x])
    assert g(2) == [2]  # the run's own value
    assert g(2) == g(2) == g(2) == [2, 2]


def test_entries_are_values_a_reader_cannot_change(tmp_path):
    """A store may hand every reader the same entry object (the memory store keeps its entries;
    the SQL stores hand back the entry built for an unchanged row): no reader can edit it."""
    for url in ("memory://", f"sqlite:///{tmp_path}/values.db"):
        cache = Cache(url, cleanup_probability=0)
        f = cached(cache=cache)(lambda x: {"x": x})
        assert f(1) == f(1)
        entry = cache.store.get(f.cache_key(1))
        for field, value in (("value", b"jplanted"), ("expires_at", "garbage"), ("metadata", {})):
            with pytest.raises(AttributeError):  # a frozen value (dataclasses' FrozenInstanceError is one too)
                setattr(entry, field, value)
        cache.close()


# --- a damaged fresh-until: an entry written with a stale window expires at TTL + window and is
# fresh only until _cache_fresh_until. That field present but not a time makes the entry corrupt:
# ignoring it would serve the entry as fresh past its TTL, on the first read or a remembered one.

_NOT_TIMES = ["abc", "1e300", None, True, [1], {"t": 1}, math.nan, math.inf, 1e300]


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_a_fresh_until_that_is_not_a_time_is_corrupt_never_fresh(kind, tmp_path):
    from actioncache._flow import FRESH_UNTIL

    clock = Clock()
    if kind == "redis":
        services.require_redis()
        url = f"{services.REDIS_URL}?prefix=fresh_until_{uuid.uuid4().hex[:12]}"
    else:
        url = "memory://" if kind == "memory" else f"sqlite:///{tmp_path}/fresh_until.db"
    cache = Cache(url, clock=clock, cleanup_probability=0)
    runs: list[int] = []

    def body(x):
        runs.append(x)
        return {"run": len(runs)}

    writer = cached(cache=cache, name="shared", ttl_seconds=10, stale_ttl_seconds=1000)(body)
    reader = cached(cache=cache, name="shared", ttl_seconds=10)(body)  # accepts no stale value
    key = reader.cache_key(1)

    def plant(bad):
        writer.refresh(1)
        entry = cache.store.get(key)
        assert entry.metadata[FRESH_UNTIL] == entry.created_at + 10
        cache.store.put(entry.replace(metadata={**dict(entry.metadata), FRESH_UNTIL: bad}))

    corrupt = 0
    for bad in _NOT_TIMES:
        plant(bad)
        clock.now += 30  # past the TTL, inside the writer's stale window
        before = len(runs)
        assert reader(1) == {"run": before + 1}, bad  # not the planted entry, served as fresh
        corrupt += 1
        plant(bad)
        assert reader(1) == {"run": before + 3}, bad  # within the TTL too: never judged, never remembered
        assert reader(1) == reader(1) == {"run": before + 3}, bad  # the run's own entry, a plain hit
        corrupt += 1
        plant(bad)
        clock.now += 30
        got = cache.get(key)
        assert got["found"] is False and "_cache_fresh_until" in got["removed"], bad
        corrupt += 1
    assert cache.stats()["session"]["corrupt"] == corrupt
    if kind == "redis":
        cache.store.drop()
    cache.close()
