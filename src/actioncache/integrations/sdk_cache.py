"""What the OpenAI and Anthropic adapters share: a client view whose chosen methods go through a Cache.

``CachedClient(client, routes, settings)`` answers every attribute from the real client, except the
paths in ``routes`` (``("chat", "completions", "create")``), which become cached calls:

* a plain call goes through ``Cache.wrap`` / ``Cache.awrap``: a hit is rebuilt as the SDK's own
  response type; a miss returns the live SDK object; an SDK exception is raised as it was, and
  never cached;
* a streamed call (``stream=True``) is looked up first; a hit replays the stored chunks, one SDK
  chunk object per original chunk; a miss streams live while recording, and stores the chunks only
  when the stream ended with its final event (an interrupted, truncated or abandoned stream is
  never stored).

Keys come from :func:`actioncache.integrations.llm_keys.llm_request_key`.
"""

from __future__ import annotations

import functools
import inspect
import time
import typing
from typing import Any, Callable, Iterator, Mapping, NamedTuple

from ..cache import Cache
from .llm_keys import DEFAULT_TEMPERATURE, llm_request_key
from . import resolve_cache


class Endpoint(NamedTuple):
    """One cached SDK method: its action name, the types to rebuild and when a stream is whole."""

    api: str
    response_type: Any
    event_type: Any
    stream_finished: Callable[[list[dict[str, Any]], Mapping[str, Any]], bool]
    response_final: Callable[[Mapping[str, Any]], bool] = lambda data: True  # e.g. not "queued" or "failed"


class Settings(NamedTuple):
    cache: Cache
    ttl_seconds: float | None
    cache_nondeterministic: bool
    default_temperature: float
    base_url: str
    headers: Mapping[str, Any]
    query: Mapping[str, Any]  # the client's default query (Azure's api-version lives there)
    credentials: Mapping[str, Any]  # api key, organization, project: enter the key as a digest only


def make_settings(client: Any, cache: Cache | None, ttl_seconds: float | None, cache_nondeterministic: bool,
                  default_temperature: float = DEFAULT_TEMPERATURE) -> Settings:
    return Settings(resolve_cache(cache), ttl_seconds, bool(cache_nondeterministic), default_temperature,
                    str(getattr(client, "base_url", "") or ""), dict(getattr(client, "default_headers", None) or {}),
                    dict(getattr(client, "default_query", None) or {}), client_credentials(client))


def client_credentials(client: Any) -> dict[str, Any]:
    """The account a client calls as (the SDKs' ``api_key``/``auth_token``/``organization``/``project``)."""
    found = {name: getattr(client, name, None) for name in ("api_key", "auth_token", "organization", "project")}
    return {name: value for name, value in found.items() if isinstance(value, str) and value}


class CachedClient:
    """A view of an SDK client: the routed methods are cached, everything else is the client's own."""

    def __init__(self, target: Any, routes: Mapping[tuple[str, ...], Endpoint], settings: Settings,
                 path: tuple[str, ...] = ()) -> None:
        self._target, self._routes, self._settings, self._path = target, routes, settings, path

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        path = self._path + (name,)
        endpoint = self._routes.get(path)
        if endpoint is not None:
            if inspect.iscoroutinefunction(inspect.unwrap(attr)):  # SDK decorators hide the async def
                return _async_call(attr, endpoint, self._settings)
            return _sync_call(attr, endpoint, self._settings)
        if not self._path and name in ("with_options", "copy"):
            # a configured copy of the client stays cached, keyed by its own base URL and headers
            def configured(*args: Any, **kwargs: Any) -> CachedClient:
                other = attr(*args, **kwargs)
                s = self._settings
                return CachedClient(other, self._routes, make_settings(other, s.cache, s.ttl_seconds,
                                                                        s.cache_nondeterministic, s.default_temperature))
            return configured
        if any(route[:len(path)] == path for route in self._routes):
            return CachedClient(attr, self._routes, self._settings, path)
        return attr

    def __repr__(self) -> str:
        return f"<cached {self._target!r} via {self._settings.cache!r}>"


def _key(endpoint: Endpoint, settings: Settings, kwargs: Mapping[str, Any]) -> tuple[str | None, bool]:
    streamed = bool(kwargs.get("stream"))
    if settings.query:
        kwargs = {**kwargs, "extra_query": {**settings.query, **dict(kwargs.get("extra_query") or {})}}
    found = llm_request_key(kwargs, api=endpoint.api, base_url=settings.base_url, headers=settings.headers,
                            credentials=settings.credentials,
                            streamed=streamed, cache_nondeterministic=settings.cache_nondeterministic,
                            default_temperature=settings.default_temperature)
    return found.key, streamed


def _wrap_options(settings: Settings) -> dict[str, Any]:
    return {} if settings.ttl_seconds is None else {"ttl_seconds": settings.ttl_seconds}


def _sync_call(create: Callable[..., Any], endpoint: Endpoint, settings: Settings) -> Callable[..., Any]:
    def cached_create(*args: Any, **kwargs: Any) -> Any:
        key, streamed = _key(endpoint, settings, kwargs)
        if key is None or args:
            return create(*args, **kwargs)
        cache = settings.cache
        if streamed:
            hit = cache.lookup(endpoint.api, key)
            if hit is not None:
                return ReplayStream(_rebuild_events(endpoint, hit["result"]))
            started = time.perf_counter()
            return RecordingStream(create(**kwargs), _Recorder(endpoint, settings, key, kwargs, started))
        outcome: list[Any] = []
        metadata: dict[str, Any] = {}

        def run() -> dict[str, Any]:
            try:
                response = create(**kwargs)
            except Exception as exc:
                outcome.append(exc)
                raise
            return _keep(endpoint, response, outcome, metadata)

        answer = cache.wrap(endpoint.api, run, {}, key=key, metadata=metadata, **_wrap_options(settings))
        return _answer(endpoint, answer, outcome)

    return cached_create


def _async_call(create: Callable[..., Any], endpoint: Endpoint, settings: Settings) -> Callable[..., Any]:
    async def cached_create(*args: Any, **kwargs: Any) -> Any:
        key, streamed = _key(endpoint, settings, kwargs)
        if key is None or args:
            return await create(*args, **kwargs)
        cache = settings.cache
        if streamed:
            hit = cache.lookup(endpoint.api, key)
            if hit is not None:
                return AsyncReplayStream(_rebuild_events(endpoint, hit["result"]))
            started = time.perf_counter()
            live = await create(**kwargs)
            return AsyncRecordingStream(live, _Recorder(endpoint, settings, key, kwargs, started))
        outcome: list[Any] = []
        metadata: dict[str, Any] = {}

        async def run() -> dict[str, Any]:
            try:
                response = await create(**kwargs)
            except Exception as exc:
                outcome.append(exc)
                raise
            return _keep(endpoint, response, outcome, metadata)

        answer = await cache.awrap(endpoint.api, run, {}, key=key, metadata=metadata, **_wrap_options(settings))
        return _answer(endpoint, answer, outcome)

    return cached_create


class NotFinal(Exception):
    """A response that is not a final answer (a run still queued, a failed one): returned, not stored."""


def _keep(endpoint: Endpoint, response: Any, outcome: list[Any], metadata: dict[str, Any]) -> dict[str, Any]:
    """Remember the live SDK object (a miss returns it as is) and its JSON and token usage for the store."""
    outcome.append(response)
    data = response.to_dict(mode="json")
    if not endpoint.response_final(data):
        raise NotFinal(f"{endpoint.api}: status {data.get('status')!r} is not a final answer")
    metadata.update(usage_metadata([data]))
    return data


def _answer(endpoint: Endpoint, answer: dict[str, Any], outcome: list[Any]) -> Any:
    if answer.get("_cache_hit"):
        return build_model(endpoint.response_type, answer["result"])
    if outcome and isinstance(outcome[0], BaseException):
        raise outcome[0]
    if outcome:
        return outcome[0]
    raise RuntimeError(answer.get("error") or "the cached call produced no response")  # not reached in practice


# --- rebuilding SDK objects ---------------------------------------------------------------------


def build_model(model_type: Any, data: Mapping[str, Any]) -> Any:
    """The SDK's own object for stored JSON (what the SDK made of the server's answer, dumped).

    pydantic's validation rebuilds it in compiled code, many times faster than the SDK's
    ``construct`` it uses on a live answer; data the models do not validate (a provider that sent
    fields off the spec, which the SDK tolerated) is rebuilt with ``construct``, as the SDK did."""
    from pydantic import ValidationError

    cls = model_type if isinstance(model_type, type) else _union_members(model_type).get(data.get("type"))
    if cls is None:
        from pydantic import TypeAdapter

        return TypeAdapter(model_type).validate_python(dict(data))
    try:
        return cls.model_validate(data)
    except ValidationError:
        return cls.construct(**data)


@functools.lru_cache(maxsize=None)
def _union_members(union: Any) -> dict[Any, type]:
    """``{"response.completed": ResponseCompletedEvent, ...}`` for a (possibly Annotated) union."""
    members: dict[Any, type] = {}
    stack = [union]
    while stack:
        tp = stack.pop()
        if isinstance(tp, type):
            field = getattr(tp, "model_fields", {}).get("type")
            for literal in typing.get_args(field.annotation) if field is not None else ():
                members[literal] = tp
        else:
            stack.extend(typing.get_args(tp))
    return members


def _rebuild_events(endpoint: Endpoint, stored: Mapping[str, Any]) -> list[Any]:
    return [build_model(endpoint.event_type, event) for event in stored["events"]]


def usage_metadata(documents: list[Mapping[str, Any]]) -> dict[str, Any]:
    """``llm_model``, ``llm_input_tokens``, ``llm_output_tokens`` from a response or its stream events,
    wherever the provider reports them (top-level, ``response``, ``message``); what is absent stays absent."""
    out: dict[str, Any] = {}
    for doc in documents:
        for holder in (doc, doc.get("response"), doc.get("message")):
            if not isinstance(holder, Mapping):
                continue
            if isinstance(holder.get("model"), str):
                out.setdefault("llm_model", holder["model"])
            usage = holder.get("usage")
            if not isinstance(usage, Mapping):
                continue
            for name, target in (("prompt_tokens", "llm_input_tokens"), ("input_tokens", "llm_input_tokens"),
                                 ("completion_tokens", "llm_output_tokens"), ("output_tokens", "llm_output_tokens")):
                value = usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool) and value >= out.get(target, 0):
                    out[target] = value
    return out


# --- streams ------------------------------------------------------------------------------------


class _Recorder:
    """Collects one live stream's chunks; stores them once the stream ended with its final event."""

    def __init__(self, endpoint: Endpoint, settings: Settings, key: str, request: Mapping[str, Any],
                 started: float) -> None:
        self.endpoint, self.settings, self.key, self.request, self.started = endpoint, settings, key, request, started
        self.events: list[dict[str, Any]] = []
        self.broken = False
        self.stored = False

    def add(self, chunk: Any) -> None:
        self.events.append(chunk.to_dict(mode="json"))

    def finish(self) -> None:
        if self.broken or self.stored or not self.endpoint.stream_finished(self.events, self.request):
            return
        self.stored = True
        metadata = usage_metadata(self.events)
        metadata["llm_duration_ms"] = round((time.perf_counter() - self.started) * 1000, 3)
        events = self.events
        self.settings.cache.wrap(self.endpoint.api, lambda: {"events": events}, {}, key=self.key, skip_cache=True,
                                 metadata=metadata, **_wrap_options(self.settings))


class RecordingStream:
    """The live SDK stream, recorded as it is read (``for chunk in stream``, ``with stream:``).

    Other attributes (``response``, ...) are the SDK stream's own."""

    def __init__(self, live: Any, recorder: _Recorder) -> None:
        self._live, self._recorder, self._iterator = live, recorder, iter(live)

    def __iter__(self) -> "RecordingStream":
        return self

    def __next__(self) -> Any:
        try:
            chunk = next(self._iterator)
        except StopIteration:
            self._recorder.finish()
            raise
        except BaseException:
            self._recorder.broken = True
            raise
        self._recorder.add(chunk)
        return chunk

    def close(self) -> None:
        self._recorder.broken = not self._recorder.stored  # abandoned before the end: never stored
        self._iterator = iter(())  # a closed stream yields nothing more, whatever was buffered
        self._live.close()

    def __enter__(self) -> "RecordingStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._live, name)


class AsyncRecordingStream:
    """``RecordingStream`` for the async clients (``async for chunk in stream``)."""

    def __init__(self, live: Any, recorder: _Recorder) -> None:
        self._live, self._recorder, self._iterator = live, recorder, live.__aiter__()
        self._closed = False

    def __aiter__(self) -> "AsyncRecordingStream":
        return self

    async def __anext__(self) -> Any:
        if self._closed:
            raise StopAsyncIteration
        try:
            chunk = await self._iterator.__anext__()
        except StopAsyncIteration:
            self._recorder.finish()
            raise
        except BaseException:
            self._recorder.broken = True
            raise
        self._recorder.add(chunk)
        return chunk

    async def close(self) -> None:
        self._recorder.broken = not self._recorder.stored
        self._closed = True
        await self._live.close()

    async def __aenter__(self) -> "AsyncRecordingStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._live, name)


class ReplayStream:
    """A cached stream: the SDK's own chunk objects, one per chunk of the original stream."""

    response = None  # no HTTP response behind a replay

    def __init__(self, chunks: list[Any]) -> None:
        self._chunks: Iterator[Any] = iter(chunks)

    def __iter__(self) -> "ReplayStream":
        return self

    def __next__(self) -> Any:
        return next(self._chunks)

    def close(self) -> None:
        self._chunks = iter(())

    def __enter__(self) -> "ReplayStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncReplayStream:
    """``ReplayStream`` for the async clients."""

    response = None

    def __init__(self, chunks: list[Any]) -> None:
        self._chunks: Iterator[Any] = iter(chunks)

    def __aiter__(self) -> "AsyncReplayStream":
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None

    async def close(self) -> None:
        self._chunks = iter(())

    async def __aenter__(self) -> "AsyncReplayStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
