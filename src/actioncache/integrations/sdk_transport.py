"""Where the SDK adapters see the request the SDK actually sends: a keying transport.

The OpenAI and Anthropic SDKs send every request through an httpx client (``httpx`` or ``httpx2``).
``install(sdk_client)`` puts a :class:`KeyingTransport` in front of that client's transports (the
default one and each mounted one, e.g. a proxy). The transport passes every request through
untouched, except while an adapter call is in progress (a :class:`CallContext` in a context
variable): then it keys the request it was handed (:func:`llm_keys.http_request_key`), the last
thing before the wire, so whatever shaped it is in the key by construction: the client's
``base_url``, API key, ``organization`` or ``project`` as they are now, a custom ``http_client``'s
headers, query parameters and event hooks, ``extra_headers`` / ``extra_query`` / ``extra_body``.

* A plain call runs through ``Cache.wrap`` (single flight, leases, failures never stored): a miss
  forwards the request and stores the server's JSON answer once the status is 2xx and the answer
  is final; the SDK gets the live response as usual.
* A streamed call is looked up only; a miss forwards it, and the adapter records the stream and
  stores it under the key computed here once it ended with its final event.
* A hit raises :class:`Served` with the stored answer. It is a ``BaseException`` so that it passes
  the SDKs' retry loops and error wrapping (which catch ``Exception``) up to the adapter, which
  rebuilds the SDK's own objects; nothing goes on the wire. (An SDK that traces its calls with
  OpenTelemetry records such a call as ended by that exception.)

Only the SDK's private attribute for its HTTP client (``client._client``) and httpx's transport
slots (``_transport``, ``_mounts``) are touched; ``cached()`` refuses a client without them.
"""

from __future__ import annotations

import contextvars
import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..errors import ActionCacheError
from .llm_keys import DEFAULT_TEMPERATURE, http_request_key

if TYPE_CHECKING:
    from ..cache import Cache


class Served(BaseException):
    """A cache hit on its way from the transport to the adapter (past the SDK's error handling)."""

    def __init__(self, stored: Any) -> None:
        super().__init__("served from the cache")
        self.stored = stored


class NotStored(ActionCacheError):
    """An answer that is returned but not stored (an HTTP error status, a run still queued)."""


@dataclass
class CallContext:
    """One adapter call in progress: what to key and store, and what the transport found."""

    api: str
    cache: Cache
    streamed: bool
    is_final: Callable[[Mapping[str, Any]], bool]
    usage: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]
    wrap_options: Mapping[str, Any]
    deterministic_only: bool = False
    default_temperature: float = DEFAULT_TEMPERATURE
    key: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # the JSON body as sent
    metadata: dict[str, Any] = field(default_factory=dict)  # token usage of the stored answer

    def key_request(self, request: Any) -> str | None:
        """Key the request about to be sent (every attempt: a retry keys alike but is keyed again)."""
        try:
            body = request.content
        except Exception:  # noqa: BLE001 - a streamed upload has no body to read up front: not cached
            self.key = None
            return None
        found, self.fields = http_request_key(
            request.method, str(request.url), request.headers.raw, body,
            api=self.api, streamed=self.streamed, deterministic_only=self.deterministic_only,
            default_temperature=self.default_temperature)
        self.key = found.key
        return found.key

    def storable(self, response: Any) -> dict[str, Any]:
        """The JSON answer to store, read from a live response whose body has been read."""
        if not 200 <= response.status_code < 300:
            raise NotStored(f"{self.api}: HTTP {response.status_code} is not an answer to keep")
        data = json.loads(response.content)
        if not isinstance(data, dict) or not self.is_final(data):
            status = data.get("status") if isinstance(data, dict) else None
            raise NotStored(f"{self.api}: status {status!r} is not a final answer")
        self.metadata.update(self.usage([data]))
        return data


_CURRENT: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar("actioncache_sdk_call", default=None)


def current_call() -> contextvars.ContextVar[CallContext | None]:
    """The context variable an adapter sets around one SDK call (``token = var.set(call)``)."""
    return _CURRENT


class KeyingTransport:
    """An httpx transport in front of another: keys and caches the adapter's calls, passes the rest."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    # --- sync ---------------------------------------------------------------------------

    def handle_request(self, request: Any) -> Any:
        call = _CURRENT.get()
        key = None if call is None else call.key_request(request)
        if call is None or key is None:
            return self.inner.handle_request(request)
        if call.streamed:
            hit = call.cache.lookup(call.api, key)
            if hit is not None:
                raise Served(hit["result"])
            return self.inner.handle_request(request)
        sent: dict[str, Any] = {}

        def run() -> dict[str, Any]:
            try:
                response = self.inner.handle_request(request)
            except Exception as exc:
                sent["error"] = exc
                raise
            sent["response"] = response
            response.read()
            return call.storable(response)

        answer = call.cache.wrap(call.api, run, {}, key=key, metadata=call.metadata, **call.wrap_options)
        return _outcome(sent, answer)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> KeyingTransport:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.inner.__exit__(*exc)

    # --- async --------------------------------------------------------------------------

    async def handle_async_request(self, request: Any) -> Any:
        call = _CURRENT.get()
        key = None if call is None else call.key_request(request)
        if call is None or key is None:
            return await self.inner.handle_async_request(request)
        if call.streamed:
            hit = call.cache.lookup(call.api, key)
            if hit is not None:
                raise Served(hit["result"])
            return await self.inner.handle_async_request(request)
        sent: dict[str, Any] = {}

        async def run() -> dict[str, Any]:
            try:
                response = await self.inner.handle_async_request(request)
            except Exception as exc:
                sent["error"] = exc
                raise
            sent["response"] = response
            await response.aread()
            return call.storable(response)

        answer = await call.cache.awrap(call.api, run, {}, key=key, metadata=call.metadata, **call.wrap_options)
        return _outcome(sent, answer)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> KeyingTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _outcome(sent: Mapping[str, Any], answer: Mapping[str, Any]) -> Any:
    """The live response when this call went to the server, else the stored answer as a hit."""
    if "response" in sent:
        return sent["response"]  # live: the SDK reads it (and raises its own error for a 4xx/5xx)
    if "error" in sent:
        raise sent["error"]  # the transport failed: the SDK retries or wraps it as it would
    if answer.get("success") and "result" in answer:
        raise Served(answer["result"])  # a hit, or the answer a concurrent identical call stored
    raise RuntimeError(answer.get("error") or "the cache produced neither an answer nor a response")


_INSTALL_LOCK = threading.Lock()


def install(sdk_client: Any) -> bool:
    """Put a keying transport in front of ``sdk_client``'s HTTP client (once); False when the client
    has no httpx client where the OpenAI and Anthropic SDKs keep it (its calls then run uncached)."""
    http = getattr(sdk_client, "_client", None)
    transport = getattr(http, "_transport", None)
    if http is None or transport is None:
        return False
    mounts = getattr(http, "_mounts", None)
    if type(transport) is KeyingTransport and not mounts:
        return True
    with _INSTALL_LOCK:
        if type(http._transport) is not KeyingTransport:
            http._transport = KeyingTransport(http._transport)
        if isinstance(mounts, dict):
            for pattern, mounted in list(mounts.items()):
                if mounted is not None and type(mounted) is not KeyingTransport:
                    mounts[pattern] = KeyingTransport(mounted)
    return True
