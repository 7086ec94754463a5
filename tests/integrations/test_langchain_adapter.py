"""ActionCacheLLMCache in LangChain's own runtime (set_llm_cache) with its fake chat models.

LangChain's fake models stand in for a provider here (no LLM runs on this machine); the tests with
a real LangChain chat model (ChatOpenAI over the official SDK, against the local protocol stand-in)
are in test_langchain_openai.py.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.globals import set_llm_cache
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from actioncache.integrations.langchain import ActionCacheLLMCache, sampling_params

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}


class FinishingFakeChatModel(GenericFakeChatModel):
    """LangChain's fake streaming model, ending its stream as providers do: with a finish reason."""

    def _stream(self, *args, **kwargs):
        yield from super()._stream(*args, **kwargs)
        yield ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata={"finish_reason": "stop"}))


def model() -> FakeListChatModel:
    return FakeListChatModel(responses=[f"answer {i}" for i in range(10)])


def test_second_identical_call_hits_and_returns_langchains_message(llm_cache, mem_cache) -> None:
    m = model()
    first = m.invoke("hello", temperature=0)
    second = m.invoke("hello", temperature=0)
    assert type(second) is AIMessage and second.content == first.content == "answer 0"
    assert mem_cache.stats()["by_action"]["langchain.llm"]["hits"] == 1


@pytest.mark.parametrize("change", [
    {"temperature": 0, "tools": [TOOL]},
    {"temperature": 0.5, "seed": 1},
    {"temperature": 0, "model": "another"},
])
def test_changing_the_model_a_tool_or_the_temperature_misses(llm_cache, change) -> None:
    m = model()
    assert m.invoke("hello", temperature=0).content == "answer 0"
    assert m.invoke("hello", **change).content == "answer 1"
    assert m.invoke("hello", **change).content == "answer 1"     # and that one is cached too
    other = FakeListChatModel(responses=["from another model"], sleep=0.01)  # other model fields
    assert other.invoke("hello", temperature=0).content == "from another model"


def test_sampling_is_cached_unless_deterministic_only(mem_cache) -> None:
    # issue 26: with the default constructor, FakeListLLM-style models (no temperature) are cached
    set_llm_cache(ActionCacheLLMCache(mem_cache))
    try:
        m = model()
        assert [m.invoke("hi").content for _ in range(2)] == ["answer 0", "answer 0"]   # no temperature: default 1.0
        assert [m.invoke("hi", temperature=0.7).content for _ in range(2)] == ["answer 1", "answer 1"]
        set_llm_cache(ActionCacheLLMCache(mem_cache, deterministic_only=True))
        assert [m.invoke("ho", temperature=0.7).content for _ in range(2)] == ["answer 2", "answer 3"]
        assert [m.invoke("ho", temperature=0).content for _ in range(2)] == ["answer 4", "answer 4"]
    finally:
        set_llm_cache(None)


def test_sampling_params_reads_both_llm_string_spellings() -> None:
    assert sampling_params("""[('stop', None), ('temperature', 0.5)]""") == {"temperature": 0.5}
    assert sampling_params('''{"kwargs": {"temperature": 0, "seed": 3}}---[('stop', None)]''') == {"temperature": 0, "seed": 3}
    assert sampling_params("""[('temperature', None)]""") == {}


def test_a_stream_replays_as_message_chunks_with_the_same_boundaries(llm_cache) -> None:
    m = FinishingFakeChatModel(messages=iter([AIMessage(content="red green blue"), AIMessage(content="other words")]))
    live = list(llm_cache.stream(m, "colours?", temperature=0))
    replayed = list(llm_cache.stream(m, "colours?", temperature=0))
    assert all(isinstance(c, AIMessageChunk) for c in replayed)
    assert [c.content for c in replayed] == [c.content for c in live] and len(live) > 3
    assert "".join(c.content for c in replayed) == "red green blue"


def _streamed(llm_cache, model, **kwargs) -> str:
    return "".join(c.content for c in llm_cache.stream(model, "colours?", **kwargs))


def _answers(n: int) -> GenericFakeChatModel:
    return FinishingFakeChatModel(messages=iter([AIMessage(content=f"answer {i}") for i in range(n)]))


@pytest.mark.parametrize("bind", [
    lambda m: m.bind(stop=["zzz"]),
    lambda m: m.bind(temperature=0.5, seed=7),
    lambda m: m.bind(tools=[TOOL]),
    lambda m: m.bind(tools=[TOOL]).bind(stop=["zzz"]),
])
def test_a_bound_models_stream_never_hits_the_unbound_models_entry(llm_cache, bind) -> None:
    m = _answers(4)
    assert _streamed(llm_cache, m, temperature=0) == "answer 0"
    bound = bind(m)
    assert _streamed(llm_cache, bound, temperature=0) == "answer 1"     # its own entry, not the unbound one
    assert _streamed(llm_cache, bound, temperature=0) == "answer 1"     # which is then replayed


def test_a_bound_temperature_is_seen_by_the_sampling_rule_and_bound_kwargs_reach_the_model(llm_cache) -> None:
    m = _answers(4)
    sampled = m.bind(temperature=0.9)
    strict = ActionCacheLLMCache(llm_cache.cache, deterministic_only=True)
    assert [_streamed(strict, sampled) for _ in range(2)] == ["answer 0", "answer 1"]   # sampling: not cached
    assert _streamed(llm_cache, m.bind(stop=["x"]), temperature=0) == "answer 2"
    assert _streamed(llm_cache, m, temperature=0, stop=["x"]) == "answer 2"   # the same request spelled the other way


def test_a_runnable_that_cannot_be_keyed_streams_live_and_is_not_cached(llm_cache, mem_cache) -> None:
    m = _answers(4)
    retrying = m.with_retry()
    assert [_streamed(llm_cache, retrying, temperature=0) for _ in range(2)] == ["answer 0", "answer 1"]
    assert "langchain.stream" not in mem_cache.stats()["by_action"]


def test_an_interrupted_or_abandoned_stream_is_not_stored(llm_cache) -> None:
    m = FinishingFakeChatModel(messages=iter([AIMessage(content="one two three"), AIMessage(content="four five six"),
                                              AIMessage(content="seven eight")]))
    stream = llm_cache.stream(m, "q", temperature=0)
    next(stream)
    stream.close()                                        # the consumer stopped early
    assert "".join(c.content for c in llm_cache.stream(m, "q", temperature=0)) == "four five six"

    class Broken(GenericFakeChatModel):
        def _stream(self, *args, **kwargs):
            yield from list(super()._stream(*args, **kwargs))[:2]
            raise ConnectionError("provider dropped the stream")

    b = Broken(messages=iter([AIMessage(content="a b c d"), AIMessage(content="e f g h")]))
    with pytest.raises(ConnectionError):
        list(llm_cache.stream(b, "q2", temperature=0))
    with pytest.raises(ConnectionError):
        list(llm_cache.stream(b, "q2", temperature=0))    # not replayed from a half stream: ran again


def test_async_invoke_and_stream(llm_cache) -> None:
    async def main() -> None:
        m = model()
        first, second = await m.ainvoke("hey", temperature=0), await m.ainvoke("hey", temperature=0)
        assert type(second) is AIMessage and second.content == first.content
        g = FinishingFakeChatModel(messages=iter([AIMessage(content="x y z"), AIMessage(content="no")]))
        live = [c async for c in llm_cache.astream(g, "s", temperature=0)]
        replayed = [c async for c in llm_cache.astream(g, "s", temperature=0)]
        assert [c.content for c in replayed] == [c.content for c in live]

    asyncio.run(main())


def test_clear_removes_the_entries(llm_cache) -> None:
    m = model()
    m.invoke("hello", temperature=0)
    llm_cache.clear()
    assert m.invoke("hello", temperature=0).content == "answer 1"


def test_a_stream_that_never_says_why_it_stopped_is_not_stored(llm_cache) -> None:
    # issue 27: LangChain closes a cut-off provider stream normally (it even adds a "last" chunk);
    # without a finish reason it must not be replayed as a whole answer
    m = GenericFakeChatModel(messages=iter([AIMessage(content="cut off"), AIMessage(content="second try")]))
    assert _streamed(llm_cache, m, temperature=0) == "cut off"
    assert _streamed(llm_cache, m, temperature=0) == "second try"


def test_a_secret_naming_llm_string_outside_a_model_call_is_not_cached(llm_cache) -> None:
    # whose account would it be? the secret's value cannot be read, so the entry cannot be keyed by it
    masked = '{"kwargs": {"api_key": {"id": ["OPENAI_API_KEY"], "lc": 1, "type": "secret"}}}---[]'
    from langchain_core.outputs import Generation

    llm_cache.update("prompt", masked, [Generation(text="x")])
    assert llm_cache.lookup("prompt", masked) is None
    llm_cache.update("prompt", "no secret here", [Generation(text="x")])
    assert llm_cache.lookup("prompt", "no secret here") == [Generation(text="x")]


def test_a_completion_model_is_cached_with_the_default_constructor(llm_cache, mem_cache) -> None:
    # issue 26: LangChain's FakeListLLM (a BaseLLM, no temperature) was never cached
    from langchain_core.language_models.fake import FakeListLLM

    llm = FakeListLLM(responses=["first", "second"])
    assert [llm.invoke("q"), llm.invoke("q")] == ["first", "first"]
    assert mem_cache.stats()["by_action"]["langchain.llm"]["hits"] == 1
