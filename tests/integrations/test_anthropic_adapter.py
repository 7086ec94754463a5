"""actioncache.integrations.anthropic against the real Anthropic SDK and a local protocol stand-in.

No LLM runs on this machine: the SDK talks real HTTP to ``llm_standin.StandIn``, a local server
speaking the Messages wire protocol (JSON and SSE events). Each answer carries a call number, so a
hit (same number) is told from a fresh call. The current SDK has no ``temperature`` argument, so
the tests set it through ``extra_body`` as a caller would.
"""

from __future__ import annotations

import asyncio

import anthropic
import pytest
from anthropic.types import Message, RawContentBlockDeltaEvent, RawMessageStopEvent

from actioncache.integrations.anthropic import cached

MESSAGES = [{"role": "user", "content": "name a colour"}]
TOOL = {"name": "lookup", "description": "find", "input_schema": {"type": "object", "properties": {}}}
GREEDY = {"extra_body": {"temperature": 0}}


@pytest.fixture
def client(standin, mem_cache):
    raw = anthropic.Anthropic(base_url=standin.url, api_key="test", max_retries=0)
    yield cached(raw, cache=mem_cache)
    raw.close()


def create(client, **overrides):
    return client.messages.create(**{"model": "claude-a", "max_tokens": 64, "messages": MESSAGES, **GREEDY, **overrides})


def test_second_identical_call_hits_and_returns_a_message(client, standin, mem_cache) -> None:
    first, second = create(client), create(client)
    assert type(first) is Message and type(second) is Message
    assert second.content[0].text == first.content[0].text and second.usage.output_tokens == first.usage.output_tokens
    assert standin.count("/v1/messages") == 1
    assert mem_cache.stats()["by_action"]["anthropic.messages"]["hits"] == 1


@pytest.mark.parametrize("change", [
    {"model": "claude-b"},
    {"tools": [TOOL]},
    {"extra_body": {"temperature": 0.5}},   # a different temperature is another entry
    {"system": "be brief"},
    {"max_tokens": 65},
])
def test_changing_an_output_field_misses(standin, mem_cache, change) -> None:
    client = cached(anthropic.Anthropic(base_url=standin.url, api_key="test", max_retries=0), cache=mem_cache)
    create(client)
    create(client, **change)
    assert standin.count("/v1/messages") == 2
    create(client, **change)
    assert standin.count("/v1/messages") == 2


def test_without_a_temperature_one_sample_is_cached_unless_deterministic_only(client, standin, mem_cache) -> None:
    first, second = create(client, extra_body=None), create(client, extra_body=None)
    assert standin.count("/v1/messages") == 1 and second.id == first.id
    strict = cached(anthropic.Anthropic(base_url=standin.url, api_key="test", max_retries=0), cache=mem_cache,
                    deterministic_only=True)
    create(strict, extra_body=None, max_tokens=65)
    create(strict, extra_body=None, max_tokens=65)
    assert standin.count("/v1/messages") == 3
    create(strict, max_tokens=65)      # temperature 0 (GREEDY): cached even under deterministic_only
    create(strict, max_tokens=65)
    assert standin.count("/v1/messages") == 4


def test_a_stream_replays_as_the_sdks_events_and_a_broken_one_is_not_stored(client, standin) -> None:
    live = list(create(client, stream=True))
    replayed = list(create(client, stream=True))
    assert standin.count("/v1/messages") == 1
    assert [e.to_dict() for e in replayed] == [e.to_dict() for e in live]
    assert isinstance(replayed[2], RawContentBlockDeltaEvent) and isinstance(replayed[-1], RawMessageStopEvent)
    broken = [{"role": "user", "content": "INTERRUPT now"}]
    for _ in range(2):
        with pytest.raises(Exception):
            list(create(client, messages=broken, stream=True))
    truncated = [{"role": "user", "content": "TRUNCATE now"}]
    list(create(client, messages=truncated, stream=True))
    list(create(client, messages=truncated, stream=True))
    assert standin.count("/v1/messages") == 5


def test_async_client_plain_and_streamed(standin, mem_cache) -> None:
    async def main() -> None:
        raw = anthropic.AsyncAnthropic(base_url=standin.url, api_key="test", max_retries=0)
        client = cached(raw, cache=mem_cache)
        first, second = await create(client), await create(client)
        assert type(second) is Message and second.id == first.id
        live = [e async for e in await create(client, stream=True)]
        replayed = [e async for e in await create(client, stream=True)]
        assert [e.to_dict() for e in replayed] == [e.to_dict() for e in live]
        assert standin.count("/v1/messages") == 2
        await raw.close()

    asyncio.run(main())
