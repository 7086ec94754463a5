"""ActionCacheLLMCache with a real LangChain chat model: ChatOpenAI over the official OpenAI SDK,
talking real HTTP to the local protocol stand-in (``llm_standin.StandIn``; no LLM runs here).

Issue 27: LangChain masks the API key in the ``llm_string`` it hands a cache, so entries were shared
across API keys; and a stream the provider cut off (no finish reason) was stored and replayed as
whole. Each call below that must miss is checked to reach the server.
"""

from __future__ import annotations

import asyncio

import httpx
from langchain_openai import ChatOpenAI

PATH = "/v1/chat/completions"


def chat_model(standin, api_key: str = "k1", **options) -> ChatOpenAI:
    # temperature 0: these cases hold whatever the sampling rule says
    return ChatOpenAI(model="gpt-a", base_url=standin.url + "/v1", api_key=api_key, max_retries=0, temperature=0,
                      **options)


def test_two_api_keys_never_share_an_answer(llm_cache, standin) -> None:
    first = chat_model(standin, "k1").invoke("hello")
    assert chat_model(standin, "k1").invoke("hello").content == first.content      # same account: a hit
    assert standin.count(PATH) == 1
    chat_model(standin, "k2").invoke("hello")
    assert standin.count(PATH) == 2 and standin.requests[-1]["headers"]["authorization"] == "Bearer k2"
    chat_model(standin, "k2").invoke("hello")
    assert standin.count(PATH) == 2


def test_a_custom_http_clients_headers_are_part_of_the_account(llm_cache, standin) -> None:
    chat_model(standin, http_client=httpx.Client(headers={"X-Model-Route": "small"})).invoke("hi")
    chat_model(standin, http_client=httpx.Client(headers={"X-Model-Route": "big"})).invoke("hi")
    assert standin.count(PATH) == 2


def test_async_calls_key_the_account_too(llm_cache, standin) -> None:
    async def main() -> None:
        await chat_model(standin, "k1").ainvoke("async hello")
        await chat_model(standin, "k1").ainvoke("async hello")
        await chat_model(standin, "k2").ainvoke("async hello")

    asyncio.run(main())
    assert standin.count(PATH) == 2


def test_stream_replay_is_per_account(llm_cache, standin) -> None:
    live = [c.content for c in llm_cache.stream(chat_model(standin, "k1"), "stream me")]
    assert [c.content for c in llm_cache.stream(chat_model(standin, "k1"), "stream me")] == live
    assert standin.count(PATH) == 1
    list(llm_cache.stream(chat_model(standin, "k2"), "stream me"))
    assert standin.count(PATH) == 2


def test_a_stream_the_provider_cut_off_is_not_replayed_as_whole(llm_cache, standin) -> None:
    # the stand-in ends the HTTP body cleanly after two events, without the finish_reason chunk
    for _ in range(2):
        list(llm_cache.stream(chat_model(standin), "TRUNCATE please"))
    assert standin.count(PATH) == 2
    whole = list(llm_cache.stream(chat_model(standin), "whole please"))
    assert whole[-2].response_metadata["finish_reason"] == "stop"
    list(llm_cache.stream(chat_model(standin), "whole please"))
    assert standin.count(PATH) == 3


def test_a_model_at_its_default_temperature_is_cached(llm_cache, standin) -> None:
    # issue 26: ChatOpenAI() states no temperature (the provider samples at 1.0): it was never cached
    model = ChatOpenAI(model="gpt-a", base_url=standin.url + "/v1", api_key="k1", max_retries=0)
    assert model.invoke("default").content == model.invoke("default").content
    assert standin.count(PATH) == 1
