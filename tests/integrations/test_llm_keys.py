"""llm_request_key and http_request_key: every output field and header is in the key, the others
are not; credentials enter as a digest; sampling is cached unless deterministic_only."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.integrations.llm_keys import (
    NON_OUTPUT_FIELDS,
    TELEMETRY_HEADER_PREFIXES,
    TELEMETRY_HEADERS,
    http_request_key,
    llm_request_key,
    normalize,
)

BASE = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}

json_scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8) | \
    st.floats(allow_nan=False, allow_infinity=False, width=32)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
CREDENTIAL_FIELDS = {"api_key", "organization", "project"}   # they enter, as a digest
field_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)


def key(request: dict, **options) -> str | None:
    return llm_request_key(request, api="openai.chat", **options).key


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(field_names, json_values, max_size=6), st.randoms(use_true_random=False))
def test_field_order_never_matters(extra: dict, rnd: random.Random) -> None:
    request = {**extra, **BASE}
    items = list(request.items())
    rnd.shuffle(items)
    assert key(dict(items)) == key(request)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(NON_OUTPUT_FIELDS - CREDENTIAL_FIELDS - {"extra_headers"})),
       json_values.filter(lambda v: v is not None))
def test_non_output_fields_never_enter_the_key(name: str, value) -> None:
    assert key({**BASE, name: value}) == key(BASE)


@settings(max_examples=150, deadline=None)
@given(field_names.filter(lambda n: n not in NON_OUTPUT_FIELDS and n not in BASE and n != "seed"),
       json_values.filter(lambda v: v is not None))
def test_an_unknown_field_enters_the_key(name: str, value) -> None:
    # a miss beats a wrong hit: a field this library never heard of is assumed to change the answer
    assert key({**BASE, name: value}) != key(BASE)


@settings(max_examples=100, deadline=None)
@given(st.integers(-1000, 1000))
def test_an_int_and_its_float_are_one_number(n: int) -> None:
    assert normalize(n) == normalize(float(n))
    assert key({**BASE, "max_tokens": n}) == key({**BASE, "max_tokens": float(n)})


@pytest.mark.parametrize("field,a,b", [
    ("model", "gpt-x", "gpt-y"),
    ("temperature", 0, 0.5),
    ("top_p", 1, 0.9),
    ("seed", 1, 2),
    ("max_tokens", 10, 11),
    ("max_completion_tokens", 10, 11),
    ("stop", ["a"], ["b"]),
    ("response_format", {"type": "text"}, {"type": "json_object"}),
    ("tool_choice", "auto", "none"),
    ("tools", [{"type": "function", "function": {"name": "a"}}], [{"type": "function", "function": {"name": "b"}}]),
    ("messages", [{"role": "user", "content": "hi"}], [{"role": "user", "content": "ho"}]),
    ("extra_body", {"x": 1}, {"x": 2}),
    ("extra_query", {"api-version": "1"}, {"api-version": "2"}),
])
def test_every_output_field_changes_the_key(field: str, a, b) -> None:
    assert key({**BASE, field: a}) != key({**BASE, field: b})


def test_provider_url_and_every_header_enter_but_telemetry_does_not() -> None:
    assert key(BASE, base_url="http://a/v1") != key(BASE, base_url="http://b/v1")
    assert key(BASE, base_url="http://a/v1/") == key(BASE, base_url="http://a/v1")
    assert key(BASE, headers={"anthropic-beta": "x"}) != key(BASE)
    assert key({**BASE, "extra_headers": {"OpenAI-Beta": "assistants=v2"}}) != key(BASE)
    assert key({**BASE, "extra_headers": {"x-portkey-provider": "anthropic"}}) != key(BASE)   # gateway routing
    assert key(BASE, headers={"X-Model-Route": "big"}) != key(BASE, headers={"X-Model-Route": "small"})
    assert key(BASE, headers={"traceparent": "00-1", "Idempotency-Key": "k", "User-Agent": "OpenAI/Python 9",
                              "X-Stainless-Package-Version": "9.9", "X-Stainless-Retry-Count": "2",
                              "x-request-id": "r1"}) == key(BASE)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20), st.text(min_size=1, max_size=10))
def test_any_header_outside_the_telemetry_list_changes_the_key(name: str, value: str) -> None:
    if name in TELEMETRY_HEADERS or name.startswith(TELEMETRY_HEADER_PREFIXES):
        return
    assert key(BASE, headers={name: value}) != key(BASE)


@pytest.mark.parametrize("credentials", [
    {"headers": {"Authorization": "Bearer sk-other"}},
    {"headers": {"x-portkey-api-key": "pk-other"}},
    {"credentials": {"api_key": "sk-other"}},
    {"credentials": {"api_key": "sk-one", "organization": "org-2"}},
    {"credentials": {"api_key": "sk-one", "project": "proj-2"}},
])
def test_credentials_enter_as_a_digest_never_in_clear(credentials) -> None:
    one = llm_request_key(BASE, api="openai.chat", credentials={"api_key": "sk-one"})
    other = llm_request_key(BASE, api="openai.chat", **credentials)
    assert one.key != other.key and other.document["credentials_sha256"]
    for secret in ("sk-other", "pk-other", "org-2", "proj-2", "sk-one"):
        assert secret not in repr(other.document)
    assert key({**BASE, "api_key": "a"}) != key({**BASE, "api_key": "b"})   # a per-call key too (LiteLLM)


def test_a_stream_is_kept_apart_from_a_plain_call() -> None:
    assert key(BASE, streamed=True) != key(BASE)
    assert key({**BASE, "stream": True}) == key(BASE)  # the flag itself is not what keeps them apart


def test_sampling_is_cached_unless_deterministic_only() -> None:
    sampled = {**BASE, "temperature": 0.7}
    no_temperature = {k: v for k, v in BASE.items() if k != "temperature"}
    assert key(sampled) is not None and key(no_temperature) is not None      # cached, as peers do
    found = llm_request_key(sampled, api="openai.chat", deterministic_only=True)
    assert found.key is None and "deterministic_only=True" in found.reason
    assert key(no_temperature, deterministic_only=True) is None               # the provider default samples (1.0)
    assert key({**sampled, "seed": 7}, deterministic_only=True) is not None   # a seed makes it reproducible
    assert key({**no_temperature, "extra_body": {"temperature": 0}}, deterministic_only=True) is not None
    with pytest.warns(DeprecationWarning, match="deterministic_only"):
        assert key(sampled, cache_nondeterministic=False) is None            # the old spelling, the old rule


def test_absent_none_and_sdk_sentinels_are_the_same() -> None:
    from openai import NOT_GIVEN, omit

    assert key({**BASE, "top_p": None}) == key({**BASE, "top_p": NOT_GIVEN}) == key({**BASE, "top_p": omit}) == key(BASE)


def test_pydantic_response_formats_are_keyed_by_schema() -> None:
    from pydantic import BaseModel

    class A(BaseModel):
        x: int

    class B(BaseModel):
        x: str

    assert key({**BASE, "response_format": A}) != key({**BASE, "response_format": B})
    assert key({**BASE, "response_format": A}) == key({**BASE, "response_format": A})


def test_values_without_a_stable_spelling_turn_caching_off_not_on() -> None:
    found = llm_request_key({**BASE, "messages": [object()]}, api="openai.chat")
    assert found.key is None and "object" in found.reason
    assert llm_request_key({**BASE, "top_p": float("nan")}, api="openai.chat").key is None


def test_bad_arguments_name_the_fix() -> None:
    with pytest.raises(ValueError, match="api must name the endpoint"):
        llm_request_key(BASE, api="")
    with pytest.raises(ValueError, match="dict of the call's keyword arguments"):
        llm_request_key(["model"], api="openai.chat")  # type: ignore[arg-type]


@pytest.mark.parametrize("field,value", [
    ("conversation", "conv_123"),
    ("container", "cntr_1"),
    ("background", True),
    ("prompt", {"id": "pmpt_1"}),
])
def test_requests_naming_mutable_provider_state_are_never_cached(field, value) -> None:
    found = llm_request_key({**BASE, field: value}, api="openai.responses")
    assert found.key is None and "provider-side state" in found.reason


def test_a_pinned_prompt_version_and_a_previous_response_are_keyed() -> None:
    pinned = key({**BASE, "prompt": {"id": "pmpt_1", "version": "3"}})
    assert pinned is not None and pinned != key({**BASE, "prompt": {"id": "pmpt_1", "version": "4"}})
    assert key({**BASE, "previous_response_id": "resp_1"}) != key({**BASE, "previous_response_id": "resp_2"})
    assert key({**BASE, "background": False}) is not None


# --- http_request_key: the request as sent ----------------------------------------------------------

URL = "http://gateway.local/v1/chat/completions"
SENT_HEADERS = [("authorization", "Bearer sk-one"), ("content-type", "application/json"),
                ("user-agent", "OpenAI/Python 9"), ("x-stainless-retry-count", "0")]


def sent(body: dict | bytes = BASE, url: str = URL, headers=SENT_HEADERS, **options) -> str | None:
    import json

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http_request_key("POST", url, headers, data, api="openai.chat", **options)[0].key


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.text("xyz", max_size=3)), max_size=5), st.randoms(use_true_random=False))
def test_query_parameter_order_does_not_matter_but_values_do(params, rnd) -> None:
    from urllib.parse import urlencode

    shuffled = sorted(params, key=lambda p: p[0])  # each name's values keep their order (they may mean a list)
    names = sorted({p[0] for p in params})
    rnd.shuffle(names)
    regrouped = [p for name in names for p in shuffled if p[0] == name]
    assert sent(url=f"{URL}?{urlencode(params)}") == sent(url=f"{URL}?{urlencode(regrouped)}")
    assert sent(url=f"{URL}?{urlencode(params)}") != sent(url=f"{URL}?{urlencode(params + [('e', '1')])}")


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20), st.text("abc12", min_size=1, max_size=8))
def test_a_sent_header_enters_the_key_unless_it_is_telemetry(name: str, value: str) -> None:
    with_header = sent(headers=SENT_HEADERS + [(name, value)])
    telemetry = name in TELEMETRY_HEADERS or name.startswith(TELEMETRY_HEADER_PREFIXES)
    assert (with_header == sent()) is telemetry


def test_the_method_url_body_and_account_of_the_sent_request_are_the_key() -> None:
    assert sent(url=URL.replace("gateway.local", "other.local")) != sent()
    assert sent(url=URL + "?api-version=2") != sent(url=URL + "?api-version=1")
    assert sent({**BASE, "model": "gpt-y"}) != sent()
    assert sent({**BASE, "user": "u2", "metadata": {"run": 1}, "stream": True}) == sent()   # non-output fields
    assert sent(headers=[("authorization", "Bearer sk-two")]) != sent(headers=[("authorization", "Bearer sk-one")])
    assert sent(b"not json") != sent(b"not json either") and sent(b"not json") is not None
    assert sent(streamed=True) != sent()
    assert http_request_key("GET", URL, [], b"", api="openai.chat")[0].key != sent()


def test_the_sent_request_keeps_secrets_out_of_the_key_document() -> None:
    found, _ = http_request_key("POST", URL, SENT_HEADERS + [("openai-organization", "org-secret")],
                                b'{"model": "m", "api_key": "sk-in-body"}', api="openai.chat")
    assert found.document["credentials_sha256"]
    for secret in ("sk-one", "org-secret", "sk-in-body"):
        assert secret not in repr(found.document)


def test_the_sent_request_obeys_the_state_and_sampling_rules() -> None:
    assert sent({**BASE, "conversation": "conv_1"}) is None
    sampled = {**BASE, "temperature": 0.8}
    assert sent(sampled) is not None and sent(sampled, deterministic_only=True) is None
