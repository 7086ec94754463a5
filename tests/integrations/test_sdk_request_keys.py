"""The SDK adapters key the HTTP request the SDK actually sends (issue 27, adapter keys).

The official OpenAI and Anthropic clients talk real HTTP to local protocol stand-ins
(``llm_standin.StandIn``; no LLM runs here). Every reconfiguration below must be a miss that
reaches the server the reconfigured client really talks to, as the account it really uses, and
the same configuration again must be a hit. Before request-level keys, the adapters keyed the
client as it was when wrapped, so each of these returned the old server's or account's answer.
"""

from __future__ import annotations

import asyncio

import anthropic
import httpx
import httpx2
import openai
import pytest

from actioncache.integrations.anthropic import cached as cached_anthropic
from actioncache.integrations.openai import cached as cached_openai

MESSAGES = [{"role": "user", "content": "name a colour"}]


@pytest.fixture
def second_standin():
    from integrations.llm_standin import StandIn

    server = StandIn().start()
    yield server
    server.stop()


def chat(client, **overrides):
    return client.chat.completions.create(**{"model": "gpt-a", "messages": MESSAGES, "temperature": 0, **overrides})


def message(client, **overrides):
    return client.messages.create(**{"model": "claude-a", "max_tokens": 64, "messages": MESSAGES, **overrides})


def last_request(server) -> dict:
    return server.requests[-1]


# --- OpenAI --------------------------------------------------------------------------------------


@pytest.mark.parametrize("on", ["view", "client"])
def test_a_base_url_changed_after_wrapping_reaches_the_new_server(standin, second_standin, mem_cache, on) -> None:
    raw = openai.OpenAI(base_url=standin.url + "/v1", api_key="k", max_retries=0)
    client = cached_openai(raw, cache=mem_cache)
    chat(client)
    (client if on == "view" else raw).base_url = second_standin.url + "/v1"
    chat(client)
    assert (standin.count("/v1/chat/completions"), second_standin.count("/v1/chat/completions")) == (1, 1)
    chat(client)                                                                 # then a hit
    (client if on == "view" else raw).base_url = standin.url + "/v1"
    chat(client)                                                                 # and back: the first one's entry
    assert (standin.count("/v1/chat/completions"), second_standin.count("/v1/chat/completions")) == (1, 1)


@pytest.mark.parametrize("attribute,value,header", [
    ("organization", "org-2", "openai-organization"),
    ("project", "proj-2", "openai-project"),
    ("api_key", "k-2", "authorization"),
])
def test_an_account_changed_after_wrapping_is_another_entry(standin, mem_cache, attribute, value, header) -> None:
    raw = openai.OpenAI(base_url=standin.url + "/v1", api_key="k", organization="org-1", project="proj-1",
                        max_retries=0)
    client = cached_openai(raw, cache=mem_cache)
    chat(client)
    setattr(client, attribute, value)
    chat(client)
    assert standin.count("/v1/chat/completions") == 2
    assert value in last_request(standin)["headers"][header]   # the request really went as the new account
    chat(client)
    assert standin.count("/v1/chat/completions") == 2


@pytest.mark.parametrize("flavour", [httpx, httpx2])
def test_a_custom_http_clients_headers_and_query_parameters_enter_the_key(standin, mem_cache, flavour) -> None:
    def client(**http_options):
        http = flavour.Client(**http_options)
        return cached_openai(openai.OpenAI(base_url=standin.url + "/v1", api_key="k", max_retries=0,
                                           http_client=http), cache=mem_cache)

    chat(client(headers={"X-Model-Route": "small"}))
    chat(client(headers={"X-Model-Route": "small"}))
    assert standin.count("/v1/chat/completions") == 1
    chat(client(headers={"X-Model-Route": "big"}))
    assert last_request(standin)["headers"]["x-model-route"] == "big"
    chat(client(params={"deployment": "eu"}))
    chat(client(params={"deployment": "us"}))
    assert last_request(standin)["target"].endswith("?deployment=us")
    chat(client(params={"deployment": "us"}))
    assert standin.count("/v1/chat/completions") == 4


def test_a_gateway_route_set_by_an_event_hook_enters_the_key(standin, mem_cache) -> None:
    route = {"value": "anthropic"}

    def add_route(request: httpx.Request) -> None:   # a gateway client that routes per request
        request.headers["x-portkey-provider"] = route["value"]

    http = httpx.Client(event_hooks={"request": [add_route]})
    client = cached_openai(openai.OpenAI(base_url=standin.url + "/v1", api_key="k", max_retries=0,
                                         http_client=http), cache=mem_cache)
    chat(client)
    route["value"] = "openai"
    chat(client)
    assert standin.count("/v1/chat/completions") == 2
    assert last_request(standin)["headers"]["x-portkey-provider"] == "openai"
    chat(client)
    assert standin.count("/v1/chat/completions") == 2


def test_telemetry_headers_do_not_split_entries(standin, mem_cache) -> None:
    # the retry count, timeouts, idempotency keys and the SDK's platform headers differ per attempt
    # or per machine, not per question: they stay out (llm_keys.TELEMETRY_HEADERS)
    raw = openai.OpenAI(base_url=standin.url + "/v1", api_key="k", max_retries=0)
    client = cached_openai(raw, cache=mem_cache)
    chat(client)
    chat(client, timeout=5, extra_headers={"Idempotency-Key": "once", "X-Stainless-Retry-Count": "3",
                                           "traceparent": "00-abc-def-01"})
    chat(client.with_options(timeout=9, max_retries=1))
    assert standin.count("/v1/chat/completions") == 1


def test_a_raw_client_sharing_the_http_client_stays_uncached(standin, mem_cache) -> None:
    raw = openai.OpenAI(base_url=standin.url + "/v1", api_key="k", max_retries=0)
    client = cached_openai(raw, cache=mem_cache)
    chat(client)
    chat(raw)
    chat(raw)
    assert standin.count("/v1/chat/completions") == 3
    assert chat(client).id == chat(client).id and standin.count("/v1/chat/completions") == 3


def test_a_client_without_an_http_client_to_key_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="needs an OpenAI or Anthropic SDK client"):
        cached_openai(object())


def test_a_stream_asked_for_several_choices_through_extra_body_is_judged_as_sent(standin, mem_cache) -> None:
    # n=2 travels in extra_body; the stand-in finishes one choice only: the stream is not whole
    client = cached_openai(openai.OpenAI(base_url=standin.url + "/v1", api_key="k", max_retries=0),
                           cache=mem_cache)
    list(chat(client, stream=True, extra_body={"n": 2}))
    list(chat(client, stream=True, extra_body={"n": 2}))
    assert standin.count("/v1/chat/completions") == 2


def test_async_client_reconfigured_after_wrapping(standin, second_standin, mem_cache) -> None:
    async def main() -> None:
        raw = openai.AsyncOpenAI(base_url=standin.url + "/v1", api_key="k", max_retries=0)
        client = cached_openai(raw, cache=mem_cache)
        await chat(client)
        client.base_url = second_standin.url + "/v1"
        await chat(client)
        [c async for c in await chat(client, stream=True)]
        [c async for c in await chat(client, stream=True)]
        client.organization = "org-9"
        await chat(client)
        await raw.close()

    asyncio.run(main())
    assert standin.count("/v1/chat/completions") == 1
    assert second_standin.count("/v1/chat/completions") == 3
    assert last_request(second_standin)["headers"]["openai-organization"] == "org-9"


# --- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_reconfigured_after_wrapping(standin, second_standin, mem_cache) -> None:
    raw = anthropic.Anthropic(base_url=standin.url, api_key="k", max_retries=0)
    client = cached_anthropic(raw, cache=mem_cache)
    message(client)
    client.base_url = second_standin.url
    message(client)
    assert second_standin.count("/v1/messages") == 1
    client.api_key = "k-2"
    message(client)
    message(client)
    assert second_standin.count("/v1/messages") == 2
    routed = cached_anthropic(anthropic.Anthropic(
        base_url=standin.url, api_key="k", max_retries=0,
        http_client=httpx2.Client(headers={"X-Model-Route": "big"}, params={"region": "eu"})), cache=mem_cache)
    message(routed)
    message(routed)
    assert standin.count("/v1/messages") == 2
    assert last_request(standin)["target"].endswith("?region=eu")
