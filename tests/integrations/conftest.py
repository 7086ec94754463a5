from __future__ import annotations

import pytest

from actioncache import Cache


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
