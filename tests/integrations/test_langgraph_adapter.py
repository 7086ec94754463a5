"""ActionCacheNodeCache in LangGraph's own runtime: CachePolicy nodes, a fake chat model inside."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.types import CachePolicy

from actioncache import Cache
from actioncache.integrations.langgraph import ActionCacheNodeCache


class State(TypedDict, total=False):
    question: str
    model: str
    temperature: float
    answer: str
    calls: Annotated[list, operator.add]


def build(cache: Cache, llm: FakeListChatModel, runs: list):
    def ask(state: State) -> dict:
        runs.append(state["question"])
        reply = llm.invoke(state["question"], model=state["model"], temperature=state["temperature"])
        return {"answer": reply.content, "calls": [1]}

    builder = StateGraph(State)
    builder.add_node("ask", ask, cache_policy=CachePolicy(ttl=600))
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(cache=ActionCacheNodeCache(cache))


@pytest.fixture
def sqlite_cache(tmp_path):
    c = Cache(f"sqlite:///{tmp_path}/graph.db", cleanup_probability=0.0)
    yield c
    c.close()


def test_second_identical_run_hits_and_survives_a_new_graph(sqlite_cache) -> None:
    llm, runs = FakeListChatModel(responses=[f"answer {i}" for i in range(10)]), []
    request = {"question": "why?", "model": "m1", "temperature": 0}
    first = build(sqlite_cache, llm, runs).invoke(request)
    second = build(sqlite_cache, llm, runs).invoke(request)   # a new graph, same store
    assert second == first and type(second) is dict and first["answer"] == "answer 0"
    assert runs == ["why?"]
    assert sqlite_cache.stats()["by_action"]["langgraph.node"]["hits"] == 1


@pytest.mark.parametrize("change", [{"model": "m2"}, {"temperature": 0.7}, {"question": "how?"}])
def test_a_changed_input_misses(sqlite_cache, change) -> None:
    llm, runs = FakeListChatModel(responses=[f"answer {i}" for i in range(10)]), []
    graph = build(sqlite_cache, llm, runs)
    request = {"question": "why?", "model": "m1", "temperature": 0}
    graph.invoke(request)
    changed = graph.invoke({**request, **change})
    assert len(runs) == 2 and changed["answer"] == "answer 1"


def test_a_streamed_run_replays_the_node_update(sqlite_cache) -> None:
    llm, runs = FakeListChatModel(responses=["a", "b"]), []
    graph = build(sqlite_cache, llm, runs)
    request = {"question": "q", "model": "m1", "temperature": 0}
    live = list(graph.stream(request, stream_mode="updates"))
    replayed = list(graph.stream(request, stream_mode="updates"))
    assert len(runs) == 1
    assert replayed[0]["ask"] == live[0]["ask"] == {"answer": "a", "calls": [1]}
    assert replayed[0]["__metadata__"] == {"cached": True}


def test_async_graph_and_clear(sqlite_cache) -> None:
    llm, runs = FakeListChatModel(responses=[f"answer {i}" for i in range(10)]), []
    graph = build(sqlite_cache, llm, runs)
    request = {"question": "async?", "model": "m1", "temperature": 0}

    async def main() -> tuple:
        return await graph.ainvoke(request), await graph.ainvoke(request)

    first, second = asyncio.run(main())
    assert first == second and runs == ["async?"]
    graph.clear_cache()
    graph.invoke(request)
    assert len(runs) == 2


def test_clearing_one_namespace_leaves_a_namespace_that_joins_to_the_same_text(sqlite_cache) -> None:
    adapter = ActionCacheNodeCache(sqlite_cache)
    adapter.set({(("a", "b"), "k"): (1, None), (("a/b",), "k"): (2, None)})
    adapter.clear([("a", "b")])
    assert adapter.get([(("a", "b"), "k"), (("a/b",), "k")]) == {(("a/b",), "k"): 2}


def test_a_policy_with_a_ttl_of_zero_runs_the_node_every_time_and_never_fails_the_graph(sqlite_cache) -> None:
    llm, runs = FakeListChatModel(responses=[f"answer {i}" for i in range(10)]), []

    def ask(state: State) -> dict:
        runs.append(state["question"])
        return {"answer": llm.invoke(state["question"]).content}

    builder = StateGraph(State)
    builder.add_node("ask", ask, cache_policy=CachePolicy(ttl=0))
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(cache=ActionCacheNodeCache(sqlite_cache))
    assert [graph.invoke({"question": "q"})["answer"] for _ in range(2)] == ["answer 0", "answer 1"]
