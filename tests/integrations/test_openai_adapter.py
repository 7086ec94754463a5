"""actioncache.integrations.openai against the real OpenAI SDK and a local protocol stand-in.

No LLM runs on this machine: the SDK talks real HTTP to ``llm_standin.StandIn``, a local server
speaking the chat-completions and responses wire protocol, JSON and SSE streams included. Each
answer carries a call number, so a hit (same number as before) is told from a fresh call.
"""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseCompletedEvent, ResponseTextDeltaEvent

from actioncache.integrations.openai import cached

MESSAGES = [{"role": "user", "content": "name a colour"}]
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture
def client(standin, mem_cache):
    raw = openai.OpenAI(base_url=standin.url + "/v1", api_key="test", max_retries=0)
    yield cached(raw, cache=mem_cache)
    raw.close()


def chat(client, **overrides):
    return client.chat.completions.create(**{"model": "gpt-a", "messages": MESSAGES, "temperature": 0, **overrides})


def test_second_identical_call_hits_and_returns_a_chat_completion(client, standin, mem_cache) -> None:
    first, second = chat(client), chat(client)
    assert type(first) is ChatCompletion and type(second) is ChatCompletion
    assert second.choices[0].message.content == first.choices[0].message.content
    assert second.usage.total_tokens == first.usage.total_tokens
    assert standin.count("/v1/chat/completions") == 1
    assert mem_cache.stats()["by_action"]["openai.chat"]["hits"] == 1
    # the non-output fields do not split the entry
    chat(client, user="someone-else", timeout=30, metadata={"run": "2"})
    assert standin.count("/v1/chat/completions") == 1


@pytest.mark.parametrize("change", [
    {"model": "gpt-b"},
    {"tools": [TOOL]},
    {"temperature": 0.5, "seed": 3},
    {"max_tokens": 5},
    {"messages": [{"role": "user", "content": "name a fruit"}]},
])
def test_changing_an_output_field_misses(client, standin, change) -> None:
    chat(client)
    changed = chat(client, **change)
    assert standin.count("/v1/chat/completions") == 2
    assert changed.choices[0].message.content != chat(client).choices[0].message.content


def test_sampling_calls_are_cached_by_default_and_deterministic_only_keeps_them_out(standin, mem_cache) -> None:
    # issue 26: an LLM cache caches what is routed through it, as LangChain's caches and LiteLLM do
    raw = openai.OpenAI(base_url=standin.url + "/v1", api_key="test", max_retries=0)
    plain, strict = cached(raw, cache=mem_cache), cached(raw, cache=mem_cache, deterministic_only=True)
    no_temperature = {"model": "gpt-a", "messages": MESSAGES}
    a = plain.chat.completions.create(**no_temperature)
    b = plain.chat.completions.create(**no_temperature)
    assert standin.count("/v1/chat/completions") == 1 and a.id == b.id          # one sample, replayed
    strict.chat.completions.create(**no_temperature, temperature=0.9)
    strict.chat.completions.create(**no_temperature, temperature=0.9)
    assert standin.count("/v1/chat/completions") == 3                           # sampling: runs every time
    strict.chat.completions.create(**no_temperature, temperature=0)
    strict.chat.completions.create(**no_temperature, temperature=0)
    assert standin.count("/v1/chat/completions") == 4                           # greedy: cached


def test_the_old_opt_in_still_works_and_warns(standin, mem_cache) -> None:
    raw = openai.OpenAI(base_url=standin.url + "/v1", api_key="test", max_retries=0)
    with pytest.warns(DeprecationWarning, match="deterministic_only=True"):
        old_strict = cached(raw, cache=mem_cache, cache_nondeterministic=False)
    old_strict.chat.completions.create(model="gpt-a", messages=MESSAGES)
    old_strict.chat.completions.create(model="gpt-a", messages=MESSAGES)
    assert standin.count("/v1/chat/completions") == 2


def test_a_stream_is_stored_when_whole_and_replays_chunk_for_chunk(client, standin) -> None:
    live = list(chat(client, stream=True, stream_options={"include_usage": True}))
    replay_stream = chat(client, stream=True, stream_options={"include_usage": True})
    replayed = list(replay_stream)
    assert standin.count("/v1/chat/completions") == 1
    assert all(type(c) is ChatCompletionChunk for c in replayed)
    assert [c.to_dict() for c in replayed] == [c.to_dict() for c in live]   # same chunks, same boundaries
    assert replayed[-1].usage.total_tokens > 0
    # a streamed entry does not answer a plain call (it holds chunks, not a completion)
    assert type(chat(client, stream_options=None)) is ChatCompletion
    assert standin.count("/v1/chat/completions") == 2


def test_an_interrupted_stream_is_never_stored(client, standin) -> None:
    broken = [{"role": "user", "content": "INTERRUPT please"}]
    for _ in range(2):
        with pytest.raises((httpx.HTTPError, openai.APIError)):
            list(chat(client, messages=broken, stream=True))
    assert standin.count("/v1/chat/completions") == 2


def test_a_stream_without_its_final_chunk_or_read_halfway_is_never_stored(client, standin) -> None:
    truncated = [{"role": "user", "content": "TRUNCATE please"}]
    list(chat(client, messages=truncated, stream=True))
    list(chat(client, messages=truncated, stream=True))
    assert standin.count("/v1/chat/completions") == 2
    with chat(client, stream=True) as stream:
        next(iter(stream))                      # the consumer stops after one chunk
    assert list(stream) == []                   # closed: nothing more comes out of it
    list(chat(client, stream=True))
    assert standin.count("/v1/chat/completions") == 4


def test_sdk_errors_are_raised_as_they_were_and_not_cached(standin, mem_cache) -> None:
    raw = openai.OpenAI(base_url=standin.url + "/nowhere", api_key="test", max_retries=0)
    client = cached(raw, cache=mem_cache)
    for _ in range(2):
        with pytest.raises(openai.NotFoundError):
            chat(client)
    assert mem_cache.stats()["by_action"]["openai.chat"].get("stores", 0) == 0


def test_responses_api_plain_and_streamed(client, standin) -> None:
    first = client.responses.create(model="gpt-a", input="hello", temperature=0)
    second = client.responses.create(model="gpt-a", input="hello", temperature=0)
    assert type(second) is Response and second.output_text == first.output_text
    events = list(client.responses.create(model="gpt-a", input="hello", temperature=0, stream=True))
    again = list(client.responses.create(model="gpt-a", input="hello", temperature=0, stream=True))
    assert standin.count("/v1/responses") == 2
    assert [type(e) for e in again] == [type(e) for e in events]
    assert isinstance(again[1], ResponseTextDeltaEvent) and isinstance(again[-1], ResponseCompletedEvent)
    assert "".join(e.delta for e in again if isinstance(e, ResponseTextDeltaEvent)) == again[-1].response.output_text


def test_the_cached_view_keeps_the_rest_of_the_client(client, standin) -> None:
    assert client.base_url == openai.OpenAI(base_url=standin.url + "/v1", api_key="x").base_url
    other = client.with_options(base_url=standin.url + "/v1/")   # same provider: same entries
    chat(client)
    chat(other)
    assert standin.count("/v1/chat/completions") == 1


def test_async_client_plain_and_streamed(standin, mem_cache) -> None:
    async def main() -> None:
        raw = openai.AsyncOpenAI(base_url=standin.url + "/v1", api_key="test", max_retries=0)
        client = cached(raw, cache=mem_cache)
        first = await chat(client)
        second = await chat(client)
        assert type(second) is ChatCompletion and second.id == first.id
        live = [c async for c in await chat(client, stream=True)]
        async with await chat(client, stream=True) as replay:
            replayed = [c async for c in replay]
        assert [c.to_dict() for c in replayed] == [c.to_dict() for c in live]
        assert all(type(c) is ChatCompletionChunk for c in replayed)
        assert standin.count("/v1/chat/completions") == 2
        other = {"messages": [{"role": "user", "content": "abandoned"}], "stream": True}
        abandoned = await chat(client, **other)
        await abandoned.__anext__()
        await abandoned.close()
        assert [c async for c in abandoned] == []
        [c async for c in await chat(client, **other)]             # ran again: the half stream was not stored
        assert standin.count("/v1/chat/completions") == 4
        await raw.close()

    asyncio.run(main())


def test_the_clients_default_query_is_part_of_the_key(standin, mem_cache) -> None:
    # Azure's api-version travels as a default query parameter: two API versions, two entries
    def client(version: str):
        return cached(openai.OpenAI(base_url=standin.url + "/v1", api_key="t", max_retries=0,
                                    default_query={"api-version": version}), cache=mem_cache)

    chat(client("2024-10-01"))
    chat(client("2024-10-01"))
    chat(client("2025-01-01"))
    assert standin.count("/v1/chat/completions") == 2


def test_a_routing_header_or_another_account_on_the_same_url_never_shares_answers(standin, mem_cache) -> None:
    def client(**options):
        return cached(openai.OpenAI(base_url=standin.url + "/v1", max_retries=0, **options), cache=mem_cache)

    chat(client(api_key="k1"))
    chat(client(api_key="k1"))                                          # the same account: a hit
    chat(client(api_key="k1", default_headers={"X-Model-Route": "big"}))
    chat(client(api_key="k2"))
    chat(client(api_key="k1", organization="org-2"))
    chat(client(api_key="k1", project="proj-2"))
    assert standin.count("/v1/chat/completions") == 5


def test_a_response_that_is_not_final_is_returned_but_not_stored(client, standin) -> None:
    first = client.responses.create(model="gpt-a", input="FAILSTATUS please", temperature=0)
    second = client.responses.create(model="gpt-a", input="FAILSTATUS please", temperature=0)
    assert type(first) is Response and first.status == "failed"
    assert second.id != first.id and standin.count("/v1/responses") == 2


def test_cache_accepts_a_store_url_and_refuses_other_things(standin, tmp_path) -> None:
    raw = openai.OpenAI(base_url=standin.url + "/v1", api_key="t", max_retries=0)
    client = cached(raw, cache=f"sqlite:///{tmp_path}/llm.db")
    chat(client)
    chat(cached(raw, cache=f"sqlite:///{tmp_path}/llm.db"))
    assert standin.count("/v1/chat/completions") == 1
    with pytest.raises(ValueError, match="a store URL such as"):
        cached(raw, cache=42)
