"""The canonical key of an LLM request (chat completions, responses, messages, ...).

The rule, in one line: **every request field enters the key except the ones listed in
``NON_OUTPUT_FIELDS``**. Those are fields known not to change what the model answers: transport
(timeouts, retries, headers), accounting (user ids, metadata, prompt-cache hints) and the stream
flag. A field this module has never heard of (a provider adds one next month) is *in* the key:
an extra miss costs one call, a wrong hit returns another request's answer.

Headers follow the same rule: every header enters except a known list that cannot change the
answer (``TELEMETRY_HEADERS``: the SDKs' ``X-Stainless-*`` telemetry, user agent, idempotency keys,
request and trace ids, retry counters, content negotiation), so a gateway's routing header
(``x-portkey-provider``, ``X-Model-Route``) keeps two routes apart. Credentials (the API key,
organization and project, and any header whose name says it holds a key, token, secret or auth)
enter as one SHA-256 digest, never in clear: two accounts on one URL never share answers (see
:func:`output_headers` and :func:`credentials_digest`). ``extra_query`` and ``extra_body`` are
request fields like any other. What else goes in: the API (``openai.chat``, ``anthropic.messages``, ...), the provider's base URL
(the same model name on two endpoints is two models) and the form of the stored answer (a streamed
call is stored as its chunks, so it is kept apart from a plain call of the same request).

Normalisation, so equal requests get equal keys: ``None`` and SDK "not given" sentinels at the top
level count as absent; ``1`` and ``1.0`` are one number (the wire format cannot tell them apart);
dict key order never matters, list order always does (messages, tools, stop sequences); pydantic
models and classes (``response_format=MyModel``) are spelled by their JSON and JSON schema.

Provider-side state: a request naming a conversation, a container or a background run, or a
stored prompt without a pinned version, is never cached (``STATEFUL_FIELDS``).

Sampling: a request whose temperature is above 0 without a ``seed`` gives a different answer each
time, so it is cached only with ``cache_nondeterministic=True`` (replaying one sample is a choice).
A request that states no temperature uses the provider's default, which is sampling (1.0) for
OpenAI, Anthropic and the compatible servers: such requests are not cached by default either
(Anthropic's current SDK has no temperature argument at all: pass ``extra_body={"temperature": 0}``
or opt in).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple

from ..errors import KeyStrategyError
from ..keys import args_key, sha256_hex

#: Fields that never change the answer. Everything else enters the key.
NON_OUTPUT_FIELDS = frozenset({
    # transport and client behaviour
    "stream", "timeout", "request_timeout", "max_retries", "num_retries",
    "extra_headers",  # not as a whole: its headers enter through output_headers / credentials_digest
    "api_key", "organization", "project",  # not in clear: they enter through credentials_digest
    # accounting, tracing and storage on the provider's side
    "user", "safety_identifier", "metadata", "store", "prompt_cache_key", "prompt_cache_retention",
    "service_tier",
})

#: Fields that point at state the provider keeps and changes (a conversation that grows, a code
#: container, a response still running in the background): the same request can mean another input
#: tomorrow, so a request holding one is never cached. ``previous_response_id`` names a fixed
#: response and is keyed like any field.
STATEFUL_FIELDS = frozenset({"conversation", "container", "background"})

#: Headers that cannot change the answer; every other header enters the key.
TELEMETRY_HEADERS = frozenset({
    "user-agent", "accept", "accept-encoding", "accept-language", "content-type", "content-length",
    "connection", "keep-alive", "host", "idempotency-key", "x-idempotency-key", "request-id",
    "x-request-id", "x-client-request-id", "x-correlation-id", "traceparent", "tracestate", "baggage",
    "sentry-trace", "x-amzn-trace-id", "x-cloud-trace-context", "x-b3-traceid", "x-b3-spanid",
    "x-b3-parentspanid", "x-b3-sampled", "b3", "retry-count", "x-retry-count",
})
TELEMETRY_HEADER_PREFIXES = ("x-stainless-",)

#: Header names that carry credentials (also any name holding one of ``CREDENTIAL_NAME_PARTS``).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "api-key", "x-api-key",
                                "openai-organization", "openai-project", "x-goog-api-key"})
CREDENTIAL_NAME_PARTS = ("key", "token", "secret", "auth", "password", "cookie", "signature")

#: The temperature a provider uses when the request states none (all sample by default).
DEFAULT_TEMPERATURE = 1.0


class LLMKey(NamedTuple):
    """``key`` is None when the request is not cached (``reason`` says why)."""

    key: str | None
    action: str
    document: dict[str, Any] | None
    reason: str | None = None


def llm_request_key(
    request: Mapping[str, Any],
    *,
    api: str,
    base_url: str | None = None,
    headers: Mapping[str, Any] | None = None,
    credentials: Mapping[str, Any] | None = None,
    streamed: bool = False,
    cache_nondeterministic: bool = False,
    default_temperature: float = DEFAULT_TEMPERATURE,
) -> LLMKey:
    """The cache key of one request: ``cache:{api}:{sha256 of the canonical request}``.

    ``request`` is the keyword arguments of the SDK call (or the JSON body). ``api`` names the
    endpoint and is the action name in stats and metrics. ``credentials`` is the client's identity
    (``api_key``, ``organization``, ``project``, ...): it enters as a digest only. Returns ``LLMKey(None, ...)`` for a
    sampling request without ``cache_nondeterministic=True`` and for a request holding a value that
    has no stable spelling (the call then runs uncached; ``reason`` says which).
    """
    if not isinstance(api, str) or not api:
        raise ValueError("api must name the endpoint, e.g. 'openai.chat' or 'anthropic.messages'")
    fields = present_fields(request)
    stateful = stateful_reference(fields)
    if stateful:
        return LLMKey(None, api, None, f"the request refers to provider-side state that changes ({stateful})")
    if not cache_nondeterministic and is_sampling(fields, default_temperature):
        return LLMKey(None, api, None, "sampling request (temperature > 0 without a seed): "
                                       "pass cache_nondeterministic=True to replay one sample")
    document: dict[str, Any] = {"api": api, "request": {}}
    try:
        document["request"] = {name: normalize(value) for name, value in fields.items()
                               if name not in NON_OUTPUT_FIELDS}
    except KeyStrategyError as exc:
        return LLMKey(None, api, None, str(exc))
    if base_url:
        document["base_url"] = str(base_url).rstrip("/")
    extra_headers = fields.get("extra_headers")
    all_headers = {**dict(headers or {}), **(dict(extra_headers) if isinstance(extra_headers, Mapping) else {})}
    chosen = output_headers(all_headers)
    if chosen:
        document["headers"] = chosen
    identity = {**{name: fields[name] for name in ("api_key", "organization", "project") if name in fields},
                **dict(credentials or {})}
    digest = credentials_digest(all_headers, identity)
    if digest:
        document["credentials_sha256"] = digest
    if streamed:
        document["stored_as"] = "stream"
    try:
        return LLMKey(args_key(api, document), api, document)
    except KeyStrategyError as exc:
        return LLMKey(None, api, None, str(exc))


def output_headers(headers: Mapping[str, Any]) -> dict[str, str]:
    """The headers that enter the key in clear: all of them (names lower-cased) except the telemetry
    ones (``TELEMETRY_HEADERS``, ``X-Stainless-*``), which cannot change the answer, and the
    credentials, which enter through :func:`credentials_digest`."""
    chosen = {}
    for name, value in headers.items():
        name = str(name).lower()
        if value is None or _is_sentinel(value) or _is_telemetry_header(name) or _is_credential_header(name):
            continue
        chosen[name] = str(value)
    return chosen


def credentials_digest(headers: Mapping[str, Any], identity: Mapping[str, Any] | None = None) -> str | None:
    """SHA-256 of the credential headers and the client's identity (API key, organization, project):
    requests made as two accounts never share a key, and no secret is kept in clear. None without any."""
    found = {f"header:{str(name).lower()}": str(value) for name, value in headers.items()
             if value is not None and not _is_sentinel(value) and _is_credential_header(str(name).lower())}
    found.update({f"client:{name}": str(value) for name, value in (identity or {}).items()
                  if value is not None and not _is_sentinel(value)})
    return sha256_hex(found) if found else None


def _is_telemetry_header(name: str) -> bool:
    return name in TELEMETRY_HEADERS or name.startswith(TELEMETRY_HEADER_PREFIXES)


def _is_credential_header(name: str) -> bool:
    if _is_telemetry_header(name):  # Idempotency-Key names a key but holds none
        return False
    return name in CREDENTIAL_HEADERS or any(part in name for part in CREDENTIAL_NAME_PARTS)


def stateful_reference(fields: Mapping[str, Any]) -> str | None:
    """The field naming mutable provider-side state, if any (see ``STATEFUL_FIELDS``); a stored
    prompt template without a pinned ``version`` counts, since its latest version can change."""
    for name in sorted(STATEFUL_FIELDS):
        if name in fields and fields[name] is not False:
            return name
    prompt = fields.get("prompt")
    if isinstance(prompt, Mapping) and prompt.get("id") and not prompt.get("version"):
        return "prompt without a version"
    return None


def present_fields(request: Mapping[str, Any]) -> dict[str, Any]:
    """The fields actually given: ``None`` and SDK sentinels (``NOT_GIVEN``, ``omit``) dropped."""
    if not isinstance(request, Mapping):
        raise ValueError(f"request must be a dict of the call's keyword arguments, not {type(request).__name__}")
    return {str(k): v for k, v in request.items() if v is not None and not _is_sentinel(v)}


def is_sampling(fields: Mapping[str, Any], default_temperature: float = DEFAULT_TEMPERATURE) -> bool:
    """True when the request samples: temperature above 0 (stated or by default) and no seed.

    ``extra_body`` counts: the SDKs send its fields over the named ones (an SDK without a
    ``temperature`` argument still takes ``extra_body={"temperature": 0}``)."""
    extra = fields.get("extra_body")
    if isinstance(extra, Mapping):
        fields = {**fields, **{k: v for k, v in extra.items() if k in ("temperature", "seed") and v is not None}}
    if fields.get("seed") is not None:
        return False
    temperature = fields.get("temperature", default_temperature)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        return True  # a temperature we cannot read: assume the unsafe case
    return temperature > 0


def normalize(value: Any) -> Any:
    """A JSON-like value whose canonical JSON is the same for requests that mean the same."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise KeyStrategyError(f"cannot key a request holding {value!r}")
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, Mapping):
        return {str(k): normalize(v) for k, v in value.items() if not _is_sentinel(v)}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, type) and hasattr(value, "model_json_schema"):
        return {"json_schema_of": value.__name__, "schema": normalize(value.model_json_schema())}
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return normalize(value.model_dump(mode="json", exclude_unset=True))
    if isinstance(value, (bytes, bytearray, memoryview)):
        import hashlib

        return {"bytes_sha256": hashlib.sha256(bytes(value)).hexdigest()}
    raise KeyStrategyError(f"cannot key a request holding a {type(value).__name__}; pass JSON-like values")


def _is_sentinel(value: Any) -> bool:
    # openai/anthropic spell "argument not given" as instances of NotGiven / Omit
    return type(value).__name__ in ("NotGiven", "Omit")
