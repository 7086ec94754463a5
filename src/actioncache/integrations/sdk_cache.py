"""What the OpenAI and Anthropic adapters share: a client view whose chosen methods go through a Cache.

``CachedClient(client, routes, settings)`` answers every attribute from the real client (and sets
attributes on it: ``view.base_url = ...`` reconfigures the client), except the paths in ``routes``
(``("chat", "completions", "create")``), which become cached calls. The key is the HTTP request the
SDK actually sends, computed by the keying transport in front of the client's HTTP client
(:mod:`.sdk_transport`), so a client reconfigured after wrapping, a custom ``http_client``'s headers
and query parameters, or a gateway route all enter the key:

* a plain call: a hit is rebuilt as the SDK's own response type (no HTTP); a miss returns the live
  SDK object; an SDK exception is raised as it was, and never cached;
* a streamed call (``stream=True``): a hit replays the stored chunks, one SDK chunk object per
  original chunk; a miss streams live while recording, and stores the chunks only when the stream
  ended with its final event (an interrupted, truncated or abandoned stream is never stored).
"""

from __future__ import annotations

import functools
import inspect
import time
import typing
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

from ..cache import Cache
from . import resolve_cache
from .sdk_transport import CallContext, Served, current_call, install


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
    deterministic_only: bool


def make_settings(cache: Cache | str | None, ttl_seconds: float | None, deterministic_only: bool) -> Settings:
    return Settings(resolve_cache(cache), ttl_seconds, bool(deterministic_only))


class CachedClient:
    """A view of an SDK client: the routed methods are cached, everything else is the client's own."""

    def __init__(self, target: Any, routes: Mapping[tuple[str, ...], Endpoint], settings: Settings,
                 path: tuple[str, ...] = (), root: Any = None) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_routes", routes)
        object.__setattr__(self, "_settings", settings)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_root", target if root is None else root)
        if root is None and not install(target):
            raise TypeError(f"cached() needs an OpenAI or Anthropic SDK client (OpenAI(), AsyncAnthropic(), ...), "
                            f"whose requests go through an httpx client it keeps; got {type(target).__name__}")

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        path = self._path + (name,)
        endpoint = self._routes.get(path)
        if endpoint is not None:
            if inspect.iscoroutinefunction(inspect.unwrap(attr)):  # SDK decorators hide the async def
                return _async_call(attr, endpoint, self._settings, self._root)
            return _sync_call(attr, endpoint, self._settings, self._root)
        if not self._path and name in ("with_options", "copy"):
            def configured(*args: Any, **kwargs: Any) -> CachedClient:  # a configured copy stays cached
                return CachedClient(attr(*args, **kwargs), self._routes, self._settings)
            return configured
        if any(route[:len(path)] == path for route in self._routes):
            return CachedClient(attr, self._routes, self._settings, path, self._root)
        return attr

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)  # the view holds no copy of the client's settings

    def __repr__(self) -> str:
        return f"<cached {self._target!r} via {self._settings.cache!r}>"


def _context(endpoint: Endpoint, settings: Settings, streamed: bool) -> CallContext:
    options = {} if settings.ttl_seconds is None else {"ttl_seconds": settings.ttl_seconds}
    return CallContext(endpoint.api, settings.cache, streamed, endpoint.response_final, usage_metadata, options,
                       settings.deterministic_only)


def _sync_call(create: Callable[..., Any], endpoint: Endpoint, settings: Settings, client: Any) -> Callable[..., Any]:
    def cached_create(*args: Any, **kwargs: Any) -> Any:
        if args or not install(client):
            return create(*args, **kwargs)
        streamed = bool(kwargs.get("stream"))
        call, started = _context(endpoint, settings, streamed), time.perf_counter()
        token = current_call().set(call)
        try:
            response = create(**kwargs)
        except Served as served:
            return _rebuild(endpoint, served.stored, streamed)
        finally:
            current_call().reset(token)
        if streamed and call.key is not None:
            return RecordingStream(response, _Recorder(endpoint, settings, call, started))
        return response

    return cached_create


def _async_call(create: Callable[..., Any], endpoint: Endpoint, settings: Settings, client: Any) -> Callable[..., Any]:
    async def cached_create(*args: Any, **kwargs: Any) -> Any:
        if args or not install(client):
            return await create(*args, **kwargs)
        streamed = bool(kwargs.get("stream"))
        call, started = _context(endpoint, settings, streamed), time.perf_counter()
        token = current_call().set(call)
        try:
            response = await create(**kwargs)
        except Served as served:
            return _rebuild(endpoint, served.stored, streamed, asynchronous=True)
        finally:
            current_call().reset(token)
        if streamed and call.key is not None:
            return AsyncRecordingStream(response, _Recorder(endpoint, settings, call, started))
        return response

    return cached_create


def _rebuild(endpoint: Endpoint, stored: Any, streamed: bool, asynchronous: bool = False) -> Any:
    if not streamed:
        return build_model(endpoint.response_type, stored)
    events = [build_model(endpoint.event_type, event) for event in stored["events"]]
    return AsyncReplayStream(events) if asynchronous else ReplayStream(events)


# --- rebuilding SDK objects ---------------------------------------------------------------------


def build_model(model_type: Any, data: Mapping[str, Any]) -> Any:
    """The SDK's own object for stored JSON (what the SDK made of the server's answer, dumped).

    pydantic's validation rebuilds it in compiled code, many times faster than the SDK's
    ``construct`` it uses on a live answer; data the models do not validate (a provider that sent
    fields off the spec, which the SDK tolerated) is rebuilt with ``construct``, as the SDK did."""
    from pydantic import ValidationError

    cls: Any = model_type if isinstance(model_type, type) else _union_members(model_type).get(data.get("type"))
    if cls is None:
        from pydantic import TypeAdapter

        return TypeAdapter(model_type).validate_python(dict(data))
    try:
        return cls.model_validate(data)
    except ValidationError:
        return cls.construct(**data)


@functools.cache
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


def usage_metadata(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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

    def __init__(self, endpoint: Endpoint, settings: Settings, call: CallContext, started: float) -> None:
        self.endpoint, self.settings, self.call, self.started = endpoint, settings, call, started
        self.events: list[dict[str, Any]] = []
        self.broken = False
        self.stored = False

    def add(self, chunk: Any) -> None:
        self.events.append(chunk.to_dict(mode="json"))

    def finish(self) -> None:
        # judged against the request as sent (n, stream_options may come from extra_body)
        if self.broken or self.stored or not self.endpoint.stream_finished(self.events, self.call.fields):
            return
        self.stored = True
        metadata = usage_metadata(self.events)
        metadata["llm_duration_ms"] = round((time.perf_counter() - self.started) * 1000, 3)
        events = self.events
        self.settings.cache.wrap(self.endpoint.api, lambda: {"events": events}, {}, key=self.call.key,
                                 skip_cache=True, metadata=metadata, **self.call.wrap_options)


class RecordingStream:
    """The live SDK stream, recorded as it is read (``for chunk in stream``, ``with stream:``).

    Other attributes (``response``, ...) are the SDK stream's own."""

    def __init__(self, live: Any, recorder: _Recorder) -> None:
        self._live, self._recorder, self._iterator = live, recorder, iter(live)

    def __iter__(self) -> RecordingStream:
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

    def __enter__(self) -> RecordingStream:
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

    def __aiter__(self) -> AsyncRecordingStream:
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

    async def __aenter__(self) -> AsyncRecordingStream:
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

    def __iter__(self) -> ReplayStream:
        return self

    def __next__(self) -> Any:
        return next(self._chunks)

    def close(self) -> None:
        self._chunks = iter(())

    def __enter__(self) -> ReplayStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncReplayStream:
    """``ReplayStream`` for the async clients."""

    response = None

    def __init__(self, chunks: list[Any]) -> None:
        self._chunks: Iterator[Any] = iter(chunks)

    def __aiter__(self) -> AsyncReplayStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None

    async def close(self) -> None:
        self._chunks = iter(())

    async def __aenter__(self) -> AsyncReplayStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
