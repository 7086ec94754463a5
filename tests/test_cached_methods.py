"""@cached on methods: the instance is part of what a method answers from.

A method's ``self`` is keyed by its class and its state (``__cache_key__()`` when the class defines
it, else its attributes), ``cls`` by the class: two instances with different state, or a subclass,
never answer each other. State that cannot be keyed runs the call uncached with a warning naming
both fixes; ``ignore=["self"]`` shares entries across instances on purpose. Reached through an
instance, the method and its handles (``invalidate``, ``refresh``, ``cache_key``, ``uncached``) are
bound to it, as the call is.
"""

from __future__ import annotations

import asyncio
import threading
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache import Cache
from actioncache.errors import CacheWarning


@pytest.fixture
def cache():
    return Cache("memory://methods")


def test_instances_with_different_state_do_not_answer_each_other(cache):
    class Client:
        def __init__(self, base: str) -> None:
            self.base = base

        @cache.cached
        def fetch(self, path: str) -> str:
            return f"GET {self.base}{path}"

    prod, staging = Client("https://prod.example"), Client("https://staging.example")
    assert prod.fetch("/users") == "GET https://prod.example/users"
    assert staging.fetch("/users") == "GET https://staging.example/users"  # was prod's answer
    assert Client("https://prod.example").fetch("/users") == "GET https://prod.example/users"
    assert cache.stats()["hits"] >= 1  # an equal instance shares


def test_a_subclass_is_not_answered_by_its_base_class(cache):
    class Parser:
        fmt = "json"

        @classmethod
        @cache.cached
        def parse(cls, text: str) -> str:
            return f"{cls.fmt}:{text}"

    class XmlParser(Parser):
        fmt = "xml"

    assert Parser.parse("<a/>") == "json:<a/>"
    assert XmlParser.parse("<a/>") == "xml:<a/>"  # was json:<a/>


def test_handles_reached_through_an_instance_are_bound_to_it(cache):
    prices = {"apple": 1.0}

    class Shop:
        def __init__(self, region: str) -> None:
            self.region = region

        @cache.cached
        def price(self, item: str, currency: str = "EUR") -> float:
            return prices[item]

    shop = Shop("eu")
    assert shop.price("apple", "EUR") == 1.0
    prices["apple"] = 2.5
    assert shop.price.cache_key("apple", "EUR") == Shop.price.cache_key(shop, "apple", "EUR")
    out = shop.price.invalidate("apple", "EUR")
    assert out["deleted_count"] == 1  # was 0: the first argument was taken as `self`
    assert shop.price("apple", "EUR") == 2.5
    prices["apple"] = 3.0
    assert shop.price.refresh("apple") == 3.0 and shop.price("apple") == 3.0
    assert shop.price.uncached("apple") == 3.0
    assert shop.price.cache_name.endswith("Shop.price")


def test_state_that_cannot_be_keyed_runs_uncached_and_says_how_to_fix_it(cache):
    calls = []

    class Service:
        def __init__(self) -> None:
            self.lock = threading.Lock()

        @cache.cached
        def answer(self, x: int) -> int:
            calls.append(x)
            return x

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert Service().answer(1) == 1 and Service().answer(1) == 1
    assert calls == [1, 1]
    text = " ".join(str(w.message) for w in seen if issubclass(w.category, CacheWarning))
    assert "'lock'" in text and "__cache_key__" in text and "ignore=['self']" in text


def test_cache_key_method_and_ignore_self(cache):
    runs = []

    class Keyed:
        def __init__(self, tenant: str) -> None:
            self.tenant, self.conn = tenant, threading.Lock()

        def __cache_key__(self) -> str:
            return self.tenant

        @cache.cached
        def report(self) -> str:
            runs.append(self.tenant)
            return f"report of {self.tenant}"

    class Shared:
        def __init__(self) -> None:
            self.conn = threading.Lock()

        @cache.cached(ignore=["self"])
        def version(self) -> str:
            runs.append("shared")
            return "v1"

    assert Keyed("a").report() == "report of a" and Keyed("b").report() == "report of b"
    assert Keyed("a").report() == "report of a" and runs == ["a", "b"]
    assert Shared().version() == "v1" and Shared().version() == "v1" and runs.count("shared") == 1
    assert Shared().version.invalidate()["deleted_count"] == 1


def test_an_async_method_is_bound_and_still_a_coroutine_function(cache):
    class Agent:
        def __init__(self, model: str) -> None:
            self.model = model

        @cache.cached
        async def ask(self, prompt: str) -> str:
            return f"{self.model}: {prompt}"

    a, b = Agent("small"), Agent("large")
    assert asyncio.iscoroutinefunction(a.ask) and asyncio.iscoroutinefunction(Agent.ask)
    assert asyncio.run(a.ask("hi")) == "small: hi" and asyncio.run(b.ask("hi")) == "large: hi"
    assert a.ask.invalidate("hi")["deleted_count"] == 1


STATE = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(st.integers(), st.text(max_size=3), st.none()),
                        max_size=3)


@settings(max_examples=60, deadline=None)
@given(first=STATE, second=STATE)
def test_two_instances_share_an_entry_exactly_when_their_state_is_equal(first, second):
    cache = Cache("memory://methods-prop")

    class Thing:
        def __init__(self, state: dict) -> None:
            self.__dict__.update(state)

        @cache.cached
        def describe(self) -> dict:
            return dict(vars(self))

    assert Thing(first).describe() == first
    assert Thing(second).describe() == second  # a fresh run's answer, whatever was cached first
    assert (Thing(first).describe.cache_key() == Thing(second).describe.cache_key()) == (first == second)
