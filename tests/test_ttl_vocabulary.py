"""One spelling of a lifetime across the faces: ``ttl=`` takes seconds or a ``timedelta``
everywhere (the core, SemanticCache, the SDK adapters, LangChain, LiteLLM, the MCP proxy);
``ttl_seconds=`` keeps working with a DeprecationWarning; both at once, or a lifetime of zero or
less, is a ValueError that names ttl."""

from __future__ import annotations

import subprocess
import sys
import warnings
from datetime import timedelta

import pytest

from actioncache import Cache
from actioncache._time import face_ttl


@pytest.mark.parametrize("ttl, seconds", [(90, 90.0), (2.5, 2.5), (timedelta(minutes=2), 120.0)])
def test_ttl_takes_seconds_or_a_timedelta(ttl, seconds):
    assert face_ttl(ttl, None, "X") == seconds


def test_the_old_spelling_warns_and_keeps_working():
    with pytest.warns(DeprecationWarning, match=r"ttl="):
        assert face_ttl(None, 30, "Y-only-here") == 30.0


@pytest.mark.parametrize("ttl, ttl_seconds", [(0, None), (-1, None), (timedelta(0), None), (10, 10)])
def test_a_bad_or_doubled_ttl_is_refused(ttl, ttl_seconds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ValueError, match="ttl"):
            face_ttl(ttl, ttl_seconds, "Z")


def test_semantic_cache_entries_expire_after_ttl(tmp_path):
    pytest.importorskip("numpy")
    from actioncache.semantic import SemanticCache
    from actioncache.semantic.embedders import HashingEmbedder

    cache = SemanticCache(f"sqlite:///{tmp_path}/s.db", embedder=HashingEmbedder(), ttl=timedelta(hours=1))
    assert cache.ttl_seconds == 3600.0
    entry_id = cache.store("list the files in the docs folder", [{"tool": "ls", "args": {"path": "docs"}}])
    assert entry_id is not None and cache.get(entry_id) is not None
    stored = [e for e in (cache.backend.get(k) for k in cache.backend.find()) if e is not None and entry_id in e.key]
    assert len(stored) == 1 and stored[0].expires_at is not None
    stored = stored[0]
    assert stored.expires_at is not None and 3500 < stored.expires_at - stored.created_at <= 3600


def test_the_sdk_adapters_take_ttl(tmp_path):
    openai = pytest.importorskip("openai")
    from actioncache.integrations import openai as adapter

    client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    view = adapter.cached(client, Cache(f"sqlite:///{tmp_path}/o.db"), ttl=timedelta(minutes=5))
    assert view is not None
    with pytest.raises(ValueError, match="ttl"):
        adapter.cached(client, Cache(f"sqlite:///{tmp_path}/o.db"), ttl=0)


def test_the_mcp_proxy_names_a_bad_ttl():
    out = subprocess.run([sys.executable, "-m", "actioncache", "mcp-proxy", "--ttl", "-5", "--", "true"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "ttl must be positive" in out.stderr, out
