"""Misconfiguration is said at once, in words that name the problem and the fix: a store that is
not a store, a lease time out of range, metadata no store can keep, an argument that cannot be
keyed, and a store that fails on every call (said once per Cache, not per call)."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from actioncache import Cache, CacheWarning, cached


@pytest.mark.parametrize("bad", [123, 1.5, ["memory://"]])
def test_a_store_that_is_not_a_url_or_a_store_is_refused(bad):
    with pytest.raises(TypeError, match=r"store URL string .*memory://.* not "):
        Cache(bad)
    with pytest.raises(TypeError, match="store="):
        Cache(store=bad)
    with pytest.raises(TypeError, match=r"Cache\('memory://'\)"):
        Cache(store="memory://")


@pytest.mark.parametrize("bad", [-5, 0, float("nan"), float("inf"), "60", True])
def test_a_lock_timeout_out_of_range_is_refused_before_anything_runs(cache, bad):
    runs = []

    async def arun():
        runs.append(1)

    with pytest.raises(ValueError, match="lock_timeout_s must be a finite number of seconds > 0"):
        cache.wrap("a", lambda: runs.append(1), {}, lock=True, lock_timeout_s=bad)
    with pytest.raises(ValueError, match="lock_timeout_s"):
        asyncio.run(cache.awrap("a", arun, {}, lock=True, lock_timeout_s=bad))
    with pytest.raises(ValueError, match="lock_timeout_s"):
        cached(cache=cache, lock=True, lock_timeout_s=bad)(lambda x: x)
    assert runs == []


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
def test_metadata_every_store_cannot_keep_is_refused_alike(url, sqlite_url):
    cache = Cache(sqlite_url if url == "sqlite" else url)
    runs = []
    for bad, field in (({"ok": 1, "x": object()}, "'x'"), ({"n": float("nan")}, "'n'"),
                       ({"deep": {"inf": float("inf")}}, "'deep'")):
        with pytest.raises(ValueError, match=f"metadata field {field} is not JSON"):
            cache.wrap("m", lambda: runs.append(1), {}, metadata=bad)
    with pytest.raises(ValueError, match="field names must be strings"):
        cache.wrap("m", lambda: runs.append(1), {}, metadata={1: "a"})
    with pytest.raises(ValueError, match="metadata must be a dict"):
        cache.wrap("m", lambda: runs.append(1), {}, metadata=["a"])
    assert runs == []
    good = cache.wrap("m", lambda: 1, {}, metadata={"team": "x", "n": 2, "tags": ["a"], "none": None})
    assert cache.get(good["_cache_key"], include_metadata=True)["metadata"]["tags"] == ["a"]


def test_an_unkeyable_argument_is_named_once_with_its_real_type(cache):
    np = pytest.importorskip("numpy")

    @cache.cached
    def ident(x):
        return repr(x)

    with pytest.warns(CacheWarning) as seen:
        ident(object())
        ident(np.bool_(True))
    messages = [str(w.message) for w in seen]
    assert "from a object argument;" in messages[0]
    assert "numpy.bool" in messages[1]
    assert all(m.count("cannot build a cache key") == 1 and "KeyStrategyError" not in m for m in messages)


def test_a_failing_store_is_warned_about_once_per_cache_and_actions_still_run(tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database " * 100)
    cache = Cache(f"sqlite:///{garbage}")
    runs = []

    @cache.cached
    def f(x):
        runs.append(x)
        return x

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert [f(1), f(1), f(2)] == [1, 1, 2]
        assert cache.wrap("w", lambda: 3, {})["result"] == 3
    assert runs == [1, 1, 2]
    store_warnings = [str(w.message) for w in seen if "cache store" in str(w.message)]
    assert len(store_warnings) == 1, store_warnings
    assert str(garbage) in store_warnings[0] and "not a database" in store_warnings[0]
    assert cache.stats()["errors"] >= 6
    other = Cache(f"sqlite:///{garbage}")  # another cache says it again, once
    with pytest.warns(CacheWarning, match="cache store"):
        other.wrap("w", lambda: 3, {})


def test_the_store_warning_never_shows_a_password(tmp_path):
    """Nothing listens on port 1: every store call fails, and the one warning names the store
    by its URL with the password redacted."""
    cache = Cache("postgresql://postgres:hunter2@127.0.0.1:1/test?connect_timeout=1")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert cache.wrap("w", lambda: 3, {})["result"] == 3
    store_warnings = [str(w.message) for w in seen if "cache store" in str(w.message)]
    assert len(store_warnings) == 1 and "127.0.0.1" in store_warnings[0]
    assert "hunter2" not in store_warnings[0]


@pytest.mark.parametrize("option", ["cache_enabled", "skip_cache"])
def test_a_yes_no_option_must_be_a_bool(option):
    cache = Cache("memory://")
    with pytest.raises(TypeError, match=f"{option} must be True or False"):
        cache.wrap("a", lambda: 1, {}, **{option: "false"})
