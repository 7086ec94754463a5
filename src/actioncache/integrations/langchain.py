"""LangChain adapter: ``ActionCacheLLMCache``, a ``BaseCache`` for ``set_llm_cache``, and stream replay.

    from langchain_core.globals import set_llm_cache
    from actioncache import Cache
    from actioncache.integrations.langchain import ActionCacheLLMCache

    llm_cache = ActionCacheLLMCache(Cache())
    set_llm_cache(llm_cache)                    # every chat model's invoke/generate now goes through it
    for chunk in llm_cache.stream(model, "hi"):  # LangChain's .stream() never asks a BaseCache: this does
        ...

The key is LangChain's own pair, the prompt (the serialized messages) and the ``llm_string`` (the
model's class and every parameter, bound tools and call options included), plus a digest of the
account the model calls as, hashed as one canonical document under the action ``langchain.llm``.
A hit returns LangChain's own generation objects.

Credentials: LangChain masks a model's secrets in the ``llm_string`` (the API key appears as the
name of its environment variable), so two API keys would share entries. The adapter reads them
from the model LangChain is calling it for: the fields the model's ``lc_secrets`` names and every
``SecretStr`` field, plus the headers and query parameters of a custom ``http_client``, enter as
one SHA-256 digest (:func:`model_credentials`). A ``lookup``/``update`` whose ``llm_string`` names
a secret but that does not come from a model (so the secret cannot be read) is not cached.

Streams (:meth:`ActionCacheLLMCache.stream`) are stored only when a chunk reported why the model
stopped (``finish_reason``, ``stop_reason`` or ``done_reason`` in its ``response_metadata``): a
stream cut off before its end, which LangChain still closes normally, is never replayed as whole.

Sampling: cached like any other request (one sample replayed); ``deterministic_only=True`` keeps
requests whose ``llm_string`` samples (temperature above 0 without a seed, or none stated) out.
Install with ``pip install 'actioncache[langchain]'``.
"""

from __future__ import annotations

import json
import re
import sys
import time
import warnings
from datetime import timedelta
from types import FrameType
from typing import Any, AsyncIterator, Iterator, Sequence

from langchain_core.caches import BaseCache
from langchain_core.load import dumps, load

from .._time import face_ttl
from ..cache import Cache
from ..keys import args_key, sha256_hex
from . import resolve_cache
from .llm_keys import DEFAULT_TEMPERATURE, is_sampling, resolve_deterministic_only

ACTION = "langchain.llm"
STREAM_ACTION = "langchain.stream"

#: ``response_metadata`` fields in which LangChain's chat models report why the model stopped
#: (OpenAI and most others: ``finish_reason``; Anthropic, Bedrock: ``stop_reason``; Ollama:
#: ``done_reason``). A stream stored without one could be a stream cut off halfway.
FINISH_FIELDS = ("finish_reason", "stop_reason", "done_reason")

#: How LangChain spells a masked secret in an ``llm_string``.
_SECRET_MARK = re.compile(r'"type":\s*"secret"')
#: How far up the stack the calling model is looked for (LangChain calls the cache from
#: ``_generate_with_cache`` or, for completion models, a helper one level below ``generate``).
_CALLER_DEPTH = 6

_PARAM = r"""['"]{name}['"]\s*[:,]\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?|None|null)"""


def sampling_params(llm_string: str) -> dict[str, Any]:
    """``temperature`` and ``seed`` as LangChain spelled them into an ``llm_string`` (absent when absent)."""
    found: dict[str, Any] = {}
    for name in ("temperature", "seed"):
        values = re.findall(_PARAM.format(name=name), llm_string)
        values = [v for v in values if v not in ("None", "null")]
        if values:
            found[name] = float(values[-1])  # call options come after the model's own fields
    return found


class ActionCacheLLMCache(BaseCache):
    """A LangChain ``BaseCache`` over an actioncache :class:`Cache` (any store: SQLite, Redis, ...)."""

    def __init__(self, cache: Cache | str | None = None, *, ttl: float | timedelta | None = None,
                 deterministic_only: bool = False, default_temperature: float = DEFAULT_TEMPERATURE,
                 ttl_seconds: float | None = None, cache_nondeterministic: bool | None = None) -> None:
        self.cache = resolve_cache(cache)
        self.deterministic_only = resolve_deterministic_only(deterministic_only, cache_nondeterministic)
        self.default_temperature = default_temperature
        lifetime = face_ttl(ttl, ttl_seconds, "ActionCacheLLMCache")
        self._options = {} if lifetime is None else {"ttl_seconds": lifetime}

    # --- BaseCache ---------------------------------------------------------------------

    def key_for(self, prompt: str, llm_string: str, action: str = ACTION, model: Any = None) -> str | None:
        """The entry's key, or None when the request is not cached: it samples under
        ``deterministic_only=True``, or its ``llm_string`` names a secret and no ``model`` was
        given (nor found calling) to read it from."""
        if self.deterministic_only and is_sampling(sampling_params(llm_string), self.default_temperature):
            return None
        model = model if model is not None else calling_model()
        document = {"prompt": prompt, "llm": llm_string}
        if model is not None:
            digest = credentials_digest(model)
            if digest:
                document["credentials_sha256"] = digest
        elif _SECRET_MARK.search(llm_string):
            return None  # another account's answer must not be served: we cannot tell whose this is
        return args_key(action, document)

    def lookup(self, prompt: str, llm_string: str) -> list[Any] | None:
        return self._lookup(self.key_for(prompt, llm_string))

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        self._update(self.key_for(prompt, llm_string), return_val)

    def clear(self, **kwargs: Any) -> None:
        """Delete every LangChain entry of this cache (plain and streamed)."""
        for action in (ACTION, STREAM_ACTION):
            self.cache.invalidate_action(action)

    # LangChain's defaults run these in a thread pool, where the calling model cannot be seen
    async def alookup(self, prompt: str, llm_string: str) -> list[Any] | None:
        return self._lookup(self.key_for(prompt, llm_string))

    async def aupdate(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        self._update(self.key_for(prompt, llm_string), return_val)

    async def aclear(self, **kwargs: Any) -> None:
        self.clear(**kwargs)

    def _lookup(self, key: str | None) -> list[Any] | None:
        if key is None:
            return None
        hit = self.cache.lookup(ACTION, key)
        return None if hit is None else [revive(g) for g in hit["result"]]

    def _update(self, key: str | None, return_val: Sequence[Any]) -> None:
        if key is None:
            return
        generations = [json.loads(dumps(g)) for g in return_val]  # plain JSON (dumpd keeps str subclasses)
        self.cache.wrap(ACTION, lambda: generations, {}, key=key, skip_cache=True,
                        metadata=_usage(return_val), **self._options)

    # --- stream replay -----------------------------------------------------------------

    def stream(self, model: Any, input: Any, *, stop: list[str] | None = None, **kwargs: Any) -> Iterator[Any]:
        """``model.stream(input, ...)`` through the cache: a hit replays the stored ``AIMessageChunk``s,
        one per original chunk; a miss streams live and is stored once the stream ended normally."""
        key = self._stream_key(model, input, stop, kwargs)
        if key is not None:
            hit = self.cache.lookup(STREAM_ACTION, key)
            if hit is not None:
                yield from (revive(c) for c in hit["result"])
                return
        chunks, started = [], time.perf_counter()
        for chunk in model.stream(input, **_with_stop(stop, kwargs)):
            chunks.append(chunk)
            yield chunk
        if key is not None:  # reached only when the stream ended and the consumer read it all
            self._store_stream(key, chunks, started)

    async def astream(self, model: Any, input: Any, *, stop: list[str] | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        """``stream`` for ``model.astream``."""
        key = self._stream_key(model, input, stop, kwargs)
        if key is not None:
            hit = self.cache.lookup(STREAM_ACTION, key)
            if hit is not None:
                for c in hit["result"]:
                    yield revive(c)
                return
        chunks, started = [], time.perf_counter()
        async for chunk in model.astream(input, **_with_stop(stop, kwargs)):
            chunks.append(chunk)
            yield chunk
        if key is not None:
            self._store_stream(key, chunks, started)

    def _stream_key(self, model: Any, input: Any, stop: list[str] | None, kwargs: dict[str, Any]) -> str | None:
        from langchain_core.messages import convert_to_messages

        messages = input.to_messages() if hasattr(input, "to_messages") else \
            convert_to_messages([input] if isinstance(input, str) else input)
        prompt = dumps([m.model_copy(update={"id": None}) for m in messages])  # as LangChain's own lookup
        unbound = _unbind(model, stop, kwargs)
        if unbound is None:  # a runnable we cannot spell completely: a miss beats a wrong hit
            return None
        chat_model, call = unbound
        llm_string = chat_model._get_llm_string(**call)  # the llm_string LangChain gives BaseCache.lookup
        return self.key_for(prompt, llm_string, STREAM_ACTION, model=chat_model)

    def _store_stream(self, key: str, chunks: list[Any], started: float) -> None:
        if not finished(chunks):
            return  # ended without saying why the model stopped: possibly cut off, never replayed as whole
        stored = [json.loads(dumps(c)) for c in chunks]
        metadata = {"llm_duration_ms": round((time.perf_counter() - started) * 1000, 3)}
        self.cache.wrap(STREAM_ACTION, lambda: stored, {}, key=key, skip_cache=True, metadata=metadata, **self._options)


def finished(chunks: Sequence[Any]) -> bool:
    """True when a chunk reports why the model stopped (``FINISH_FIELDS`` in its ``response_metadata``)."""
    for chunk in chunks:
        metadata = getattr(chunk, "response_metadata", None) or {}
        if any(metadata.get(name) for name in FINISH_FIELDS):
            return True
    return False


def calling_model() -> Any:
    """The LangChain language model whose call reached this cache, or None.

    ``BaseCache.lookup``/``update`` receive only the prompt and the ``llm_string``, in which
    LangChain masks the secrets; the model object is ``self`` in LangChain's caller
    (``_generate_with_cache``), a few frames up."""
    from langchain_core.language_models import BaseLanguageModel

    frame: FrameType | None = sys._getframe(2)  # past key_for and its caller in this class
    for _ in range(_CALLER_DEPTH):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, BaseLanguageModel):
            return candidate
        frame = frame.f_back
    return None


def model_credentials(model: Any) -> dict[str, str]:
    """What identifies the account ``model`` calls as, as LangChain masks it: the values of the
    fields its ``lc_secrets`` names and of every ``SecretStr``/``SecretBytes`` field, and the
    headers and query parameters of a custom HTTP client (``http_client``, ``http_async_client``),
    which the ``llm_string`` leaves out."""
    from pydantic import SecretBytes, SecretStr

    found: dict[str, str] = {}
    names = set(getattr(model, "lc_secrets", None) or {}) | set(getattr(type(model), "model_fields", {}))
    for name in sorted(names):
        value: Any = getattr(model, name, None)
        if isinstance(value, (SecretStr, SecretBytes)):
            found[f"secret:{name}"] = str(value.get_secret_value())
        elif name in (getattr(model, "lc_secrets", None) or {}) and isinstance(value, str) and value:
            found[f"secret:{name}"] = value
        elif _is_http_client(value):
            found[f"http:{name}"] = repr((sorted((str(k).lower(), str(v)) for k, v in value.headers.items()),
                                          str(value.params), str(getattr(value, "base_url", ""))))
    return found


def credentials_digest(model: Any) -> str | None:
    """SHA-256 of :func:`model_credentials`, or None when the model holds none."""
    found = model_credentials(model)
    return sha256_hex(found) if found else None


def _is_http_client(value: Any) -> bool:
    return hasattr(value, "headers") and hasattr(value, "params") and hasattr(value, "send")


def _with_stop(stop: list[str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's keyword arguments; ``stop=None`` is left out so it cannot override a bound ``stop``."""
    return kwargs if stop is None else {**kwargs, "stop": stop}


def _unbind(model: Any, stop: list[str] | None, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
    """The language model under ``model.bind(...)`` / ``bind_tools(...)`` layers and the keyword
    arguments it will really receive (bound ones first, the call's over them, as ``RunnableBinding``
    merges them), or None when ``model`` is anything else (retries, fallbacks, configurable fields,
    chains): their output depends on more than we can see, so they are not cached."""
    from langchain_core.language_models import BaseLanguageModel
    from langchain_core.runnables import RunnableBinding

    bound: dict[str, Any] = {}
    while isinstance(model, RunnableBinding):  # bind(), bind_tools(): kwargs merged, nothing else
        if model.config_factories:
            return None
        bound = {**model.kwargs, **bound}  # the inner binding is applied first, the outer over it
        model = model.bound
    if not isinstance(model, BaseLanguageModel):
        return None
    call = {**bound, **_with_stop(stop, kwargs)}
    call.setdefault("stop", None)
    return model, call


def revive(stored: Any) -> Any:
    """LangChain's object for stored JSON, through its own loader (langchain_core classes only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # load() announces itself as beta on every call
        return load(stored, allowed_objects="core")


def _usage(generations: Sequence[Any]) -> dict[str, Any]:
    """Token usage LangChain put on the messages (``usage_metadata``), for the metrics."""
    out: dict[str, Any] = {}
    for generation in generations:
        message = getattr(generation, "message", None)
        usage = getattr(message, "usage_metadata", None) or {}
        for name, target in (("input_tokens", "llm_input_tokens"), ("output_tokens", "llm_output_tokens")):
            if isinstance(usage.get(name), int):
                out[target] = out.get(target, 0) + usage[name]
        model = (getattr(message, "response_metadata", None) or {}).get("model_name")
        if isinstance(model, str):
            out.setdefault("llm_model", model)
    return out
