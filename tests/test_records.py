"""records.py: what faces store (put/get with expiry and corrupt-entry removal, leases, ema) and
the one table of key prefixes."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache import open_store
from actioncache.records import DEFAULT_EMA_ALPHA, DEFAULT_TRUST_FLOOR, KEYSPACE, Records, Tally, ema, space_of
from actioncache.stores.base import Entry


@pytest.fixture
def records(tmp_path):
    return Records(open_store(f"sqlite:///{tmp_path}/r.db"))


def test_put_get_round_trip_with_bookkeeping(records):
    entry = records.put("runs:log:1", {"tool": "pytest", "n": [1, 2]}, kind="run_log", ttl_s=60, action="pytest",
                        metadata={"tool": "pytest"})
    found = records.get("runs:log:1")
    assert found is not None and found.value == {"tool": "pytest", "n": [1, 2]}
    meta = found.entry.metadata
    assert meta["_cache_type"] == "run_log" and meta["_cache_key"] == "runs:log:1" and meta["tool"] == "pytest"
    assert meta["_cache_action"] == "pytest" and meta["_cache_expires_at"].endswith("Z")
    assert entry.expires_at == pytest.approx(entry.created_at + 60)


def test_no_ttl_never_expires_and_expired_is_absent(tmp_path):
    now = [1000.0]
    records = Records(open_store("memory://"), clock=lambda: now[0])
    records.put("scratch:a", 1, kind="t")
    records.put("scratch:b", 2, kind="t", ttl_s=10)
    now[0] += 11
    assert records.get("scratch:a").value == 1 and records.get("scratch:b") is None
    assert "_cache_expires_at" not in records.get("scratch:a").entry.metadata


@pytest.mark.parametrize("planted", [b"\x00garbage", b"{not json", b""])
def test_corrupt_content_is_absent_and_removed(records, planted):
    records.store.put(Entry("plan:x", planted, {}, 0.0, None))
    assert records.get("plan:x") is None
    assert records.store.get("plan:x") is None  # removed, so the next write starts clean


def test_lease_excludes_and_times_out(records):
    with records.lease("lease:job", ttl_s=30) as held:
        assert held
        with records.lease("lease:job", ttl_s=30, wait_s=0.05) as second:
            assert not second  # bounded wait, then the body decides
    with records.lease("lease:job", ttl_s=30) as again:
        assert again  # released on exit


def test_writes_under_a_lost_lease_are_refused_and_counted(records):
    """Inside ``lease``, a Records write is fenced by the lease's token: once the lease lapsed and
    another holder took it, the write raises LeaseLostError and the newer holder's value stays."""
    from actioncache import Cache
    from actioncache.errors import LeaseLostError

    other = Records(records.store)  # another Records on the same store: fenced just the same
    with records.lease("scratchpad:fence", ttl_s=0.2) as held:
        assert held
        records.put("scratch:fence:a", "mine", kind="item")  # still held: written
        time.sleep(0.4)  # paused past the lease
        with Records(records.store).lease("scratchpad:fence", ttl_s=30) as newer:
            assert newer
            other.put("scratch:fence:a", "newer", kind="item")
        with pytest.raises(LeaseLostError, match="lost before 'scratch:fence:a' was written"):
            other.put("scratch:fence:a", "stale", kind="item")
        with pytest.raises(LeaseLostError):
            records.rewrite(records.get("scratch:fence:a").entry, "stale")
    assert records.get("scratch:fence:a").value == "newer"
    records.put("scratch:fence:a", "after", kind="item")  # outside the lease: a plain put
    assert records.get("scratch:fence:a").value == "after"
    assert Cache(records.store).stats()["by_action"]["scratchpad"]["lease_lost"] == 2


def test_lease_serializes_threads(records):
    inside, overlaps = [], []

    def work():
        with records.lease("lease:shared", ttl_s=30, wait_s=10) as held:
            assert held
            inside.append(1)
            overlaps.append(len(inside))
            inside.pop()

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [1] * 6


@given(old=st.one_of(st.none(), st.floats(-1e6, 1e6)), new=st.floats(-1e6, 1e6), alpha=st.floats(0.01, 1.0))
def test_ema_moves_toward_the_new_value(old, new, alpha):
    value = ema(old, new, alpha)
    if old is None:
        assert value == new
    else:
        assert min(old, new) - 1e-6 <= value <= max(old, new) + 1e-6


def test_ema_refuses_a_bad_alpha():
    with pytest.raises(ValueError, match="alpha"):
        ema(1.0, 2.0, 0)


def test_keyspace_prefixes_are_distinct_and_named():
    prefixes = list(KEYSPACE)
    for a in prefixes:
        for b in prefixes:
            # one prefix inside another would make pattern scans of one face see the other's keys
            assert a == b or not b.startswith(a), (a, b)
    assert space_of("cache:f:abc") == "cache:" and space_of("runs:fail:1") == "runs:fail:" and space_of("x") is None


def test_every_key_prefix_constant_is_in_the_keyspace():
    """Any ``*_PREFIX = "name:"`` constant in the package names a key space: it must be in KEYSPACE."""
    import ast
    from pathlib import Path

    import actioncache

    missing = []
    for path in Path(actioncache.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.endswith("_PREFIX") and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str) and node.value.value.endswith(":")
                    and node.value.value not in KEYSPACE):
                missing.append(f"{path.name}: {node.targets[0].id} = {node.value.value!r}")
    assert missing == []


def test_put_at_a_given_time_and_plain_metadata(records):
    entry = records.put("scratch:s:a", {"x": 1}, kind="t", ttl_s=10, now=1_000.0)
    assert entry.created_at == 1_000.0 and entry.expires_at == 1_010.0
    assert entry.metadata["_cache_created_at"].startswith("1970-01-01T00:16:40")
    # kind=None: the caller's metadata exactly as given (an ltm.store may seed another face's fields)
    plain = records.put("doc:1", "v", kind=None, metadata={"kind": "doc", "_cache_type": "action_result"})
    assert records.get("doc:1").entry.metadata == {"kind": "doc", "_cache_type": "action_result"}
    assert plain.expires_at is None


def test_put_raw_stores_bytes_as_given(records):
    records.put_raw("scratch-session:s", b'j{"layout":2}', kind="scratchpad_session", ttl_s=60)
    found = records.get("scratch-session:s")
    assert found.value == {"layout": 2} and bytes(found.entry.value) == b'j{"layout":2}'


def test_rewrite_keeps_created_and_expiry_times(tmp_path):
    now = [1_000.0]
    records = Records(open_store(f"sqlite:///{tmp_path}/r.db"), clock=lambda: now[0])
    first = records.put("plan:n:d:p:1", {"trust": 1.0}, kind="plan", ttl_s=100, metadata={"_plan_id": "1"})
    now[0] += 50
    records.rewrite(records.get("plan:n:d:p:1").entry, {"trust": 0.7})
    again = records.get("plan:n:d:p:1")
    assert again.value == {"trust": 0.7}
    assert again.entry.created_at == first.created_at and again.entry.expires_at == first.expires_at
    assert dict(again.entry.metadata) == dict(first.metadata)  # bookkeeping and face fields kept
    records.rewrite(again.entry, metadata={**again.entry.metadata, "score": 0.5})  # metadata only: value kept
    last = records.get("plan:n:d:p:1")
    assert last.value == {"trust": 0.7} and last.entry.metadata["score"] == 0.5
    assert last.entry.expires_at == first.expires_at


def test_find_and_scan_take_the_prefix_literally(tmp_path):
    now = [1_000.0]
    records = Records(open_store(f"sqlite:///{tmp_path}/r.db"), clock=lambda: now[0])
    records.put("scratch:a*b:1", 1, kind="t")
    records.put("scratch:a*b:2", 2, kind="t", ttl_s=5)
    records.put("scratch:axb:3", 3, kind="t")  # would match the prefix if its '*' were a glob
    records.put("scratch:a*b:4", 4, kind="u")
    records.store.put(Entry("scratch:a*b:5", b"\x00bad", {}, 0.0, None))
    assert sorted(records.find("scratch:a*b:")) == ["scratch:a*b:1", "scratch:a*b:2", "scratch:a*b:4",
                                                    "scratch:a*b:5"]
    assert records.find("scratch:a*b:", "?", metadata_filter={"_cache_type": "u"}) == ["scratch:a*b:4"]
    now[0] += 10
    # expired (2) and corrupt (5) records are skipped; the corrupt one is removed
    assert sorted((key, rec.value) for key, rec in records.scan("scratch:a*b:")) == [("scratch:a*b:1", 1),
                                                                                    ("scratch:a*b:4", 4)]
    assert records.store.get("scratch:a*b:5") is None


def test_a_value_only_another_reader_can_decode_is_left_in_place(records):
    """Signed pickle read without the secret: absent here, but never removed (its writer reads it)."""
    records.store.put(Entry("cache:f:pickled", b"p" + b"\x00" * 40, {}, 1.0, None))
    assert records.get("cache:f:pickled") is None
    assert records.store.get("cache:f:pickled") is not None


def _failing_store(tmp_path):
    """A real SQLite store over a file that is not a database: every store call fails."""
    bad = tmp_path / "garbage.db"
    bad.write_bytes(b"this is not sqlite" * 500)
    return open_store(f"sqlite:///{bad}")


def test_lease_on_a_failing_store_is_not_held_or_raises_when_strict(tmp_path):
    records = Records(_failing_store(tmp_path))
    with records.lease("scratchpad:s", ttl_s=5, wait_s=1) as held:
        assert not held  # the body decides (works on without it)
    with pytest.raises(Exception, match="(?i)database"):
        with records.lease("scratchpad:s", ttl_s=5, wait_s=1, strict=True):
            pass


def test_lease_backoff_is_bounded_by_the_wait(records):
    with records.lease("scratchpad:s", ttl_s=30) as held:
        assert held
        with records.lease("scratchpad:s", ttl_s=30, wait_s=0.1, first_delay_s=0.002, max_delay_s=0.01) as second:
            assert not second


def test_tally_counts_here_and_across_processes(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    one = Tally(open_store(url), "replay:ns:", shared=True, names=("hits",))
    two = Tally(open_store(url), "replay:ns:", shared=True)
    private = Tally(open_store(url), "replay:ns:")
    assert one.local() == {"hits": 0}
    assert one.add({"hits": 1, "fallback:no_plan": 1}) is None
    two.add(hits=2)
    private.add(hits=5)  # not shared: never reaches the store
    assert one.local() == {"hits": 1, "fallback:no_plan": 1} and two.local() == {"hits": 2}
    assert one.totals() == {"hits": 3, "fallback:no_plan": 1}


def test_tally_survives_a_failing_store(tmp_path):
    tally = Tally(_failing_store(tmp_path), "replay:ns:", shared=True)
    error = tally.add(hits=1)
    assert error and tally.local() == {"hits": 1}


def test_the_learning_faces_share_one_reward_rule():
    from actioncache.replay import REWARD_ALPHA, TRUST_FLOOR
    from actioncache.semantic.cache import DEFAULT_ALPHA, DEFAULT_FLOOR

    assert REWARD_ALPHA == DEFAULT_ALPHA == DEFAULT_EMA_ALPHA and TRUST_FLOOR == DEFAULT_FLOOR == DEFAULT_TRUST_FLOOR
    assert ema(1.0, 0.0) == pytest.approx(1.0 - DEFAULT_EMA_ALPHA)



def test_a_tally_of_this_object_only_needs_no_prefix(records):
    tally = Tally(records.store)
    tally.add(lookups=1)
    tally.add({"rejection:negation": 1, "lookups": 2})
    assert tally.local() == {"lookups": 3, "rejection:negation": 1}
    with pytest.raises(ValueError, match="prefix"):
        Tally(records.store, shared=True)


# Modules that may build an ``Entry(...)``: the store layer, the core's miss path, records.py (what
# faces store through) and transfer.py (it copies entries exactly as a store holds them, bytes and
# times untouched, for every face at once: re-stamping them through Records would change them).
_ENTRY_BUILDERS = {"records.py", "_flow.py", "transfer.py", "testing.py"}  # testing.py: the store suite writes entries on purpose


def test_no_face_builds_entries_by_hand():
    import ast
    from pathlib import Path

    import actioncache

    root = Path(actioncache.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("stores/") or relative in _ENTRY_BUILDERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (
                    (isinstance(node.func, ast.Name) and node.func.id == "Entry")
                    or (isinstance(node.func, ast.Attribute) and node.func.attr == "Entry")):
                found.append(f"{relative}:{node.lineno}")
            elif isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "_cache_type"
                                                    for k in node.keys):
                found.append(f"{relative}:{node.lineno} (hand-written _cache_type)")
    assert found == [], "store through actioncache.records.Records (put/put_raw/rewrite) instead"
