from __future__ import annotations

import importlib.util

import pytest
import services

from actioncache import Cache

# Each adapter's tests need its library (an extra). Without it they are left out locally; under
# CI=true they are collected anyway, so a missing extra fails the run instead of passing silently.
_NEEDS = {
    "test_openai_adapter.py": "openai", "test_anthropic_adapter.py": "anthropic",
    "test_langchain_adapter.py": "langchain_core", "test_langgraph_adapter.py": "langgraph",
    "test_litellm_adapter.py": "litellm", "test_metrics.py": "prometheus_client",
    "test_sdk_request_keys.py": "anthropic", "test_langchain_standard.py": "langchain_tests",
    "test_langchain_openai.py": "langchain_openai", "test_framework_contracts.py": "litellm",
}
collect_ignore = [] if services.in_ci() else [f for f, m in _NEEDS.items() if importlib.util.find_spec(m) is None]


@pytest.fixture
def standin():
    """The OpenAI/Anthropic protocol stand-in (no LLM runs here): see llm_standin.py."""
    from integrations.llm_standin import StandIn

    server = StandIn().start()
    yield server
    server.stop()


@pytest.fixture
def mem_cache() -> Cache:
    c = Cache("memory://", cleanup_probability=0.0)
    yield c
    c.close()


@pytest.fixture
def llm_cache(mem_cache):
    """An ActionCacheLLMCache over ``mem_cache``, set as LangChain's global cache for the test."""
    from langchain_core.globals import set_llm_cache

    from actioncache.integrations.langchain import ActionCacheLLMCache

    cache = ActionCacheLLMCache(mem_cache)
    set_llm_cache(cache)
    yield cache
    set_llm_cache(None)
