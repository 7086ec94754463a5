"""LangChain's own standard cache suites (the langchain-tests package) against ActionCacheLLMCache.

The suites are LangChain's contract for a ``BaseCache``: an empty cache finds nothing, ``update``
then ``lookup`` returns the generations given, ``clear`` empties it. They run with the adapter's
default constructor: its defaults are what a user who calls ``set_llm_cache`` gets.
"""

from __future__ import annotations

import pytest
from langchain_tests.integration_tests.cache import AsyncCacheTestSuite, SyncCacheTestSuite

from actioncache import Cache
from actioncache.integrations.langchain import ActionCacheLLMCache


@pytest.fixture
def empty_store(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path}/langchain.db", cleanup_probability=0.0)
    yield cache
    cache.close()


class TestSyncStandardSuite(SyncCacheTestSuite):
    @pytest.fixture
    def cache(self, empty_store) -> ActionCacheLLMCache:
        return ActionCacheLLMCache(empty_store)


# the async suite's cases are coroutines, run by pytest-asyncio; its one plain case (the suite's own
# "no overrides" check) carries the class's mark too, which pytest-asyncio would warn about
@pytest.mark.asyncio
@pytest.mark.filterwarnings("ignore:The test <Function test_no_overrides_DO_NOT_OVERRIDE>")
class TestAsyncStandardSuite(AsyncCacheTestSuite):
    @pytest.fixture
    def cache(self, empty_store) -> ActionCacheLLMCache:
        return ActionCacheLLMCache(empty_store)


class TestDefaultCacheStandardSuite(SyncCacheTestSuite):
    """``ActionCacheLLMCache()`` with no argument: the process-wide cache ($ACTIONCACHE_URL)."""

    @pytest.fixture
    def cache(self) -> ActionCacheLLMCache:
        llm_cache = ActionCacheLLMCache()
        llm_cache.clear()
        return llm_cache
