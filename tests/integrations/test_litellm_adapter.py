"""ActionCacheLiteLLM as ``litellm.cache``, LiteLLM calling the local protocol stand-in.

No LLM runs on this machine: LiteLLM's OpenAI provider talks real HTTP to ``llm_standin.StandIn``,
a local server speaking the chat-completions protocol (JSON and SSE). Answers carry a call number,
so a hit (same number) is told from a fresh call.
"""

from __future__ import annotations

import asyncio
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the price list at import

import litellm
from litellm.types.utils import ModelResponse, ModelResponseStream

from actioncache.integrations.litellm import ActionCacheLiteLLM, request_fields

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture
def call(standin, mem_cache):
    previous = litellm.cache
    litellm.cache = ActionCacheLiteLLM(mem_cache)

    def completion(**overrides):
        request = {"model": "openai/gpt-a", "api_base": standin.url + "/v1", "api_key": "test",
                   "messages": [{"role": "user", "content": "hi"}], "temperature": 0, "caching": True, **overrides}
        return litellm.completion(**request)

    yield completion
    litellm.cache = previous


def text(response) -> str:
    return response.choices[0].message.content


def test_second_identical_call_hits_and_returns_a_model_response(call, standin, mem_cache) -> None:
    first, second = call(), call()
    assert type(second) is ModelResponse and text(second) == text(first)
    assert standin.count("/v1/chat/completions") == 1
    assert mem_cache.stats()["by_action"]["litellm.completion"]["hits"] == 1


@pytest.mark.parametrize("change", [{"model": "openai/gpt-b"}, {"tools": [TOOL]}, {"temperature": 0.4, "seed": 2},
                                    {"max_tokens": 9}])
def test_changing_an_output_field_misses(call, standin, change) -> None:
    call()
    assert text(call(**change)) != text(call())
    assert standin.count("/v1/chat/completions") == 2


def test_another_api_base_is_another_provider(call, standin) -> None:
    call()
    call(api_base=standin.url.replace("127.0.0.1", "localhost") + "/v1")
    assert standin.count("/v1/chat/completions") == 2


def test_sampling_is_cached_unless_deterministic_only(call, standin, mem_cache) -> None:
    call(temperature=0.8)
    call(temperature=0.8)
    assert standin.count("/v1/chat/completions") == 1                  # as LiteLLM's own caches do
    litellm.cache = ActionCacheLiteLLM(mem_cache, deterministic_only=True)
    call(temperature=0.8, max_tokens=3)
    call(temperature=0.8, max_tokens=3)
    assert standin.count("/v1/chat/completions") == 3


def test_a_hit_replays_as_litellm_stream_chunks(call, standin) -> None:
    first = call()
    chunks = list(call(stream=True))
    assert all(type(c) is ModelResponseStream for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == text(first)
    assert standin.count("/v1/chat/completions") == 1


def test_async_completion(call, standin, mem_cache) -> None:
    async def main():
        kwargs = {"model": "openai/gpt-a", "api_base": standin.url + "/v1", "api_key": "test",
                  "messages": [{"role": "user", "content": "async"}], "temperature": 0, "caching": True}
        first = await litellm.acompletion(**kwargs)
        for _ in range(200):  # LiteLLM stores from a background task after answering: wait for it (10 s at most)
            if mem_cache.stats()["by_action"].get("litellm.completion", {}).get("stores"):
                break
            await asyncio.sleep(0.05)
        return first, await litellm.acompletion(**kwargs)

    first, second = asyncio.run(main())
    assert type(second) is ModelResponse and text(second) == text(first)
    assert standin.count("/v1/chat/completions") == 1


BASE_REQUEST = {"model": "openai/gpt-a", "messages": [{"role": "user", "content": "hi"}], "temperature": 0,
                "custom_llm_provider": "openai"}


@pytest.mark.parametrize("extra", [
    {"api_version": "2024-01-01"}, {"headers": {"X-Model-Route": "big"}}, {"headers": {"anthropic-beta": "x"}},
    {"region_name": "eu-west-1"}, {"base_model": "azure/gpt-4o"}, {"api_key": "other"},
    {"azure_ad_token": "t2"}, {"a_new_litellm_argument": 1},
])
def test_every_argument_that_can_change_the_answer_enters_the_litellm_key(extra) -> None:
    from actioncache import Cache

    adapter = ActionCacheLiteLLM(Cache("memory://"))
    assert adapter.key_for(**BASE_REQUEST, **extra) != adapter.key_for(**BASE_REQUEST)
    for secret in ("other", "t2"):
        assert secret not in repr(request_fields({**BASE_REQUEST, **extra}))   # credentials: a digest only


def test_bookkeeping_arguments_do_not_enter_and_mock_requests_are_never_cached() -> None:
    from actioncache import Cache

    adapter = ActionCacheLiteLLM(Cache("memory://"))
    same = {"metadata": {"x": 1}, "litellm_call_id": "c1", "num_retries": 3, "timeout": 5,
            "input_cost_per_token": 1.0, "headers": {"User-Agent": "x", "x-request-id": "r"}}
    assert adapter.key_for(**BASE_REQUEST, **same) == adapter.key_for(**BASE_REQUEST)
    assert adapter.key_for(**BASE_REQUEST, mock_response="canned") is None
    assert not adapter.should_use_cache(**BASE_REQUEST, mock_response="canned", caching=True)
