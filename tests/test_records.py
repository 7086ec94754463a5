"""records.py: what faces store (put/get with expiry and corrupt-entry removal, leases, ema) and
the one table of key prefixes."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache import open_store
from actioncache.records import KEYSPACE, Records, ema, space_of
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
