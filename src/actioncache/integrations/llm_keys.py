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

Two ways in. The SDK adapters (``openai``, ``anthropic``) key the HTTP request the SDK actually
sends (:func:`http_request_key`): method, URL with its query, the JSON body under the field rule
above, and every header but the telemetry list, credentials as a digest. Whatever shaped the request
(the client's ``base_url``, ``organization`` or API key set after wrapping, a custom ``http_client``
with its own headers or query parameters, a gateway route, an event hook) is in the key because it
is in the request. Adapters that decide before any request exists (LiteLLM's cache flow, LangChain's
``BaseCache``) key the call's arguments (:func:`llm_request_key`) by the same rules.

Sampling: an adapter caches what is routed through it, as LangChain's own caches, LiteLLM and
GPTCache do: a request that samples (temperature above 0 without a ``seed``, or no temperature,
which means the provider's default of 1.0) is stored once and its one sample is replayed to every
later identical request. ``deterministic_only=True`` keeps sampling requests out of the cache (they
run every time); the old ``cache_nondeterministic=`` argument still works and warns once.
"""

from __future__ import annotations

import functools
import json
import math
import warnings
from typing import Any, Iterable, Mapping, NamedTuple
from urllib.parse import urlsplit, urlunsplit

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

#: Headers that cannot change the answer; every other header enters the key. They describe the
#: client and the attempt, not the question: the SDKs' ``X-Stainless-*`` telemetry (package, OS,
#: runtime, retry count, timeouts), the user agent, content negotiation and framing, per-attempt
#: idempotency keys, request ids and the trace ids tracers inject (W3C, B3, Jaeger, Datadog, ...).
TELEMETRY_HEADERS = frozenset({
    "user-agent", "accept", "accept-encoding", "accept-language", "content-type", "content-length",
    "connection", "keep-alive", "host", "idempotency-key", "x-idempotency-key", "request-id",
    "x-request-id", "x-client-request-id", "x-correlation-id", "traceparent", "tracestate", "baggage",
    "sentry-trace", "x-amzn-trace-id", "x-cloud-trace-context", "x-b3-traceid", "x-b3-spanid",
    "x-b3-parentspanid", "x-b3-sampled", "x-b3-flags", "b3", "uber-trace-id", "newrelic",
    "elastic-apm-traceparent", "x-ot-span-context", "sw8", "grpc-trace-bin", "retry-count", "x-retry-count",
})
TELEMETRY_HEADER_PREFIXES = ("x-stainless-", "x-datadog-")

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
    deterministic_only: bool = False,
    default_temperature: float = DEFAULT_TEMPERATURE,
    cache_nondeterministic: bool | None = None,
) -> LLMKey:
    """The cache key of one call: ``cache:{api}:{sha256 of the canonical request}``.

    ``request`` is the keyword arguments of the call. ``api`` names the endpoint and is the action
    name in stats and metrics. ``credentials`` is the client's identity (``api_key``,
    ``organization``, ``project``, ...): it enters as a digest only. Returns ``LLMKey(None, ...)``
    for a request naming provider-side state, a sampling request under ``deterministic_only=True``
    and a request holding a value that has no stable spelling (the call then runs uncached;
    ``reason`` says which).
    """
    if not isinstance(api, str) or not api:
        raise ValueError("api must name the endpoint, e.g. 'openai.chat' or 'anthropic.messages'")
    deterministic_only = resolve_deterministic_only(deterministic_only, cache_nondeterministic)
    fields = present_fields(request)
    refused = refusal(fields, deterministic_only, default_temperature)
    if refused:
        return LLMKey(None, api, None, refused)
    document: dict[str, Any] = {"api": api, "request": {}}
    try:
        document["request"] = output_fields(fields)
    except KeyStrategyError as exc:
        return LLMKey(None, api, None, str(exc))
    if base_url:
        document["base_url"] = str(base_url).rstrip("/")
    extra_headers = fields.get("extra_headers")
    all_headers = {**dict(headers or {}), **(dict(extra_headers) if isinstance(extra_headers, Mapping) else {})}
    return _finish(document, all_headers, {**_identity(fields), **dict(credentials or {})}, streamed)


def _identity(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {name: fields[name] for name in ("api_key", "organization", "project") if name in fields}


def _finish(document: dict[str, Any], headers: Mapping[str, Any], identity: Mapping[str, Any],
            streamed: bool) -> LLMKey:
    """Add the headers (in clear, less telemetry), the credentials digest and the stored form; hash."""
    api = document["api"]
    chosen = output_headers(headers)
    if chosen:
        document["headers"] = chosen
    digest = credentials_digest(headers, identity)
    if digest:
        document["credentials_sha256"] = digest
    if streamed:
        document["stored_as"] = "stream"
    try:
        return LLMKey(args_key(api, document), api, document)
    except KeyStrategyError as exc:
        return LLMKey(None, api, None, str(exc))


def http_request_key(
    method: str,
    url: str,
    headers: Iterable[tuple[str | bytes, str | bytes]],
    body: bytes,
    *,
    api: str,
    streamed: bool = False,
    deterministic_only: bool = False,
    default_temperature: float = DEFAULT_TEMPERATURE,
) -> tuple[LLMKey, dict[str, Any]]:
    """The cache key of the HTTP request an SDK is about to send, and its JSON body's fields.

    In: the method, the URL (query parameters in sorted order), the body (a JSON object under the
    field rule: ``NON_OUTPUT_FIELDS`` left out, the rest normalized; any other body as its SHA-256),
    every header but ``TELEMETRY_HEADERS`` (names lower-cased, repeated headers joined in order; as
    text or as the raw bytes on the wire, read as Latin-1), and
    the credential headers as one digest (:func:`credentials_digest`). ``streamed`` keeps a stream's
    chunks apart from a plain answer. The fields are returned so the caller judges the request it
    really sent (a stream's ``n`` or ``stream_options`` may come from ``extra_body``).
    """
    fields: dict[str, Any] = {}
    document: dict[str, Any] = {"api": api, "method": method.upper(), "url": canonical_url(url)}
    parsed = _json_object(body)
    if parsed is None:
        if body:
            document["body_sha256"] = sha256_hex(bytes(body))
    else:
        fields = present_fields(parsed)
        refused = refusal(fields, deterministic_only, default_temperature)
        if refused:
            return LLMKey(None, api, None, refused), fields
        try:
            document["request"] = output_fields(fields)
        except KeyStrategyError as exc:
            return LLMKey(None, api, None, str(exc)), fields
    joined: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = (raw_name.decode("latin-1") if isinstance(raw_name, bytes) else raw_name).lower()
        value = raw_value.decode("latin-1") if isinstance(raw_value, bytes) else raw_value
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return _finish(document, joined, _identity(fields), streamed), fields


def canonical_url(url: str) -> str:
    """The URL as sent with its query parameters in sorted order of their names (repeated
    parameters keep their order among themselves, each spelled as sent) and no fragment."""
    url = str(url)
    if "?" not in url and "#" not in url:
        return url  # nothing to reorder (most API calls)
    parts = urlsplit(url)
    pairs = sorted((p for p in parts.query.split("&") if p), key=lambda pair: pair.split("=", 1)[0])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(pairs), ""))


def _json_object(body: bytes) -> dict[str, Any] | None:
    """The body as a JSON object, or None for any other body (keyed by its digest instead)."""
    if body.lstrip()[:1] != b"{":
        return None
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def refusal(fields: Mapping[str, Any], deterministic_only: bool, default_temperature: float) -> str | None:
    """Why a request is not cached, or None: it names provider-side state that changes, or it
    samples while the adapter caches deterministic requests only."""
    stateful = stateful_reference(fields)
    if stateful:
        return f"the request refers to provider-side state that changes ({stateful})"
    if deterministic_only and is_sampling(fields, default_temperature):
        return ("sampling request (temperature > 0 without a seed) and deterministic_only=True: "
                "give temperature=0 or a seed to cache it")
    return None


def output_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that can change the answer, normalized (``NON_OUTPUT_FIELDS`` left out)."""
    return {name: normalize(value) for name, value in fields.items() if name not in NON_OUTPUT_FIELDS}


def resolve_deterministic_only(deterministic_only: bool, cache_nondeterministic: bool | None) -> bool:
    """``deterministic_only``, or the deprecated ``cache_nondeterministic`` spelling of its opposite
    (a ``DeprecationWarning`` at the caller's line: Python's filters show it once per line)."""
    if cache_nondeterministic is None:
        return bool(deterministic_only)
    warnings.warn("cache_nondeterministic= is deprecated: sampling requests are cached by default now; "
                  "pass deterministic_only=True to keep them out", DeprecationWarning, stacklevel=3)
    return bool(deterministic_only) or not cache_nondeterministic


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


@functools.lru_cache(maxsize=4096)  # a client sends the same few header names on every request
def _is_telemetry_header(name: str) -> bool:
    return name in TELEMETRY_HEADERS or name.startswith(TELEMETRY_HEADER_PREFIXES)


@functools.lru_cache(maxsize=4096)
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
