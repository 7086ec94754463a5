"""One vocabulary across faces: ``ttl=`` takes seconds or a ``timedelta`` wherever a TTL is given;
old spellings keep working and warn once (the contract's own spellings, ``ttl_seconds``/``ttl_hours``/
``ttl_days``, are never deprecated)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from datetime import timedelta

import pytest

from actioncache import Cache, cached


def _expiry(cache: Cache, key: str) -> float:
    entry = cache.store.get(key)
    assert entry is not None and entry.expires_at is not None
    return entry.expires_at - entry.created_at


@pytest.mark.parametrize("ttl, seconds", [(90, 90), (2.5, 2.5), (timedelta(hours=2), 7200), (timedelta(days=1), 86400)])
def test_wrap_and_cached_take_ttl_as_seconds_or_a_timedelta(tmp_path, ttl, seconds):
    cache = Cache(f"sqlite:///{tmp_path}/v.db", cleanup_probability=0)
    key = cache.wrap("a", lambda: 1, ttl=ttl)["_cache_key"]
    assert _expiry(cache, key) == pytest.approx(seconds)
    f = cached(cache=cache, ttl=ttl)(lambda x: x)
    f(1)
    assert _expiry(cache, f.cache_key(1)) == pytest.approx(seconds)
    g = cache.cached(ttl=ttl)(lambda y: y)
    g(1)
    assert _expiry(cache, g.cache_key(1)) == pytest.approx(seconds)


def test_the_contract_spellings_keep_working_without_a_warning(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path}/v.db", cleanup_probability=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        key = cache.wrap("a", lambda: 1, ttl_days=2)["_cache_key"]
        f = cache.cached(ttl_seconds=30)(lambda x: x)
        f(1)
    assert _expiry(cache, key) == pytest.approx(2 * 86400) and _expiry(cache, f.cache_key(1)) == pytest.approx(30)


def test_a_ttl_given_twice_is_refused_naming_both(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path}/v.db")
    with pytest.raises(ValueError, match="ttl= and ttl_seconds="):
        cache.wrap("a", lambda: 1, ttl=5, ttl_seconds=6)
    with pytest.raises(ValueError, match="ttl= and ttl_days="):
        cached(cache=cache, ttl=timedelta(seconds=5), ttl_days=1)(lambda: 1)


@pytest.mark.parametrize("bad", [timedelta(0), timedelta(seconds=-1), -3, "60", float("nan")])
def test_a_bad_ttl_is_refused_before_anything_runs(tmp_path, bad):
    runs = []
    cache = Cache(f"sqlite:///{tmp_path}/v.db")
    with pytest.raises(ValueError, match="ttl"):
        cache.wrap("a", lambda: runs.append(1), ttl=bad)
    assert runs == []


def test_default_ttl_takes_a_timedelta(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path}/v.db", default_ttl=timedelta(minutes=5), cleanup_probability=0)
    assert _expiry(cache, cache.wrap("a", lambda: 1)["_cache_key"]) == pytest.approx(300)


def test_the_old_spelling_of_default_ttl_works_and_warns_once_per_process(tmp_path, src_env):
    script = ("import sys, warnings\nwarnings.simplefilter('always')\nfrom actioncache import Cache\n"
              "with warnings.catch_warnings(record=True) as said:\n"
              "    warnings.simplefilter('always')\n"
              "    a = Cache(sys.argv[1], default_ttl_seconds=60, cleanup_probability=0)\n"
              "    b = Cache(sys.argv[1], default_ttl_seconds=60, cleanup_probability=0)\n"
              "key = a.wrap('b', lambda: 1)['_cache_key']\n"
              "entry = a.store.get(key)\n"
              "print(len([w for w in said if issubclass(w.category, DeprecationWarning)]), "
              "round(entry.expires_at - entry.created_at), str(said[0].message))\n")
    out = subprocess.run([sys.executable, "-c", script, f"sqlite:///{tmp_path}/w.db"], env=src_env,
                         capture_output=True, text=True, timeout=120)
    count, seconds, message = out.stdout.split(" ", 2)
    assert (count, seconds) == ("1", "60") and "use Cache(default_ttl=...)" in message, out.stderr
