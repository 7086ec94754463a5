"""Keys are injective: two arguments a function can tell apart never build the same key (a shared
key is a wrong hit), while plain JSON keeps the spelling it always had (existing keys stay valid)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import math
import pathlib
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Cache, canonical_json
from actioncache.errors import KeyStrategyError

hashable_scalars = (st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, 1.5])
                    | st.sampled_from(["", "1", "true", "null", "__ac__", "a"]) | st.binary(max_size=2)
                    | st.dates(min_value=dt.date(2020, 1, 1), max_value=dt.date(2020, 1, 3)))
values = st.recursive(
    hashable_scalars | st.sampled_from(["2020-01-01", "2020-01-02"]),
    lambda inner: (st.lists(inner, max_size=3) | st.tuples(inner) | st.tuples(inner, inner)
                   | st.dictionaries(hashable_scalars, inner, max_size=3)
                   | st.dictionaries(st.sampled_from(["__ac__", "v", "1"]), inner, max_size=2)
                   | st.frozensets(hashable_scalars, max_size=3) | st.sets(hashable_scalars, max_size=3)),
    max_leaves=8,
)


def shape(value):
    """What a function can observe: the exact type and content, structurally (sets and dicts
    unordered, -0.0 apart from 0.0)."""
    kind = type(value)
    if kind is float:
        return ("float", "nan" if math.isnan(value) else repr(value))
    if kind in (list, tuple):
        return (kind.__name__, tuple(shape(v) for v in value))
    if kind is dict:
        return ("dict", tuple(sorted(repr((shape(k), shape(v))) for k, v in value.items())))
    if kind in (set, frozenset):
        return (kind.__name__, tuple(sorted(repr(shape(v)) for v in value)))
    return (kind.__name__, repr(value))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, values)
def test_arguments_a_function_can_tell_apart_never_share_a_key(a, b):
    if shape(a) != shape(b):
        assert canonical_json(a) != canonical_json(b)
    else:
        assert canonical_json(a) == canonical_json(b)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6).filter(lambda k: k != "__ac__"),
                                                                 inner, max_size=4),
    max_leaves=20,
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_plain_json_keeps_its_json_spelling(value):
    assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Color(enum.Enum):
    RED = 1


class Size(enum.IntEnum):
    SMALL = 1


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize("a, b", [
    ({1: "a"}, {"1": "a"}), ({True: "a"}, {"true": "a"}), ({None: "a"}, {"null": "a"}),
    (dt.date(2020, 1, 1), "2020-01-01"), (dt.datetime(2020, 1, 1), "2020-01-01T00:00:00"),
    (Color.RED, 1), (Size.SMALL, 1), (Color.RED, Size.SMALL), (pathlib.Path("/x"), "/x"),
    (uuid.UUID(int=1), str(uuid.UUID(int=1))), ({1, 2}, ["1", "2"]), (frozenset({1}), {1}), ((1, 2), [1, 2]),
    (Point(1), {"x": 1}), (b"hi", bytearray(b"hi")), ({"__ac__": "tuple", "v": [1, 2]}, (1, 2)),
])
def test_decorated_calls_with_look_alike_arguments_each_run(a, b):
    cache = Cache("memory://")
    seen = []

    @cache.cached
    def ident(x):
        seen.append(x)
        return repr(type(x))

    assert ident(a) == repr(type(a)) and ident(b) == repr(type(b))
    assert len(seen) == 2 and ident(a) == repr(type(a)) and len(seen) == 2


def test_wrap_tells_int_keyed_from_str_keyed_dicts():
    cache = Cache("memory://")

    def kinds(prices):
        return sorted(type(k).__name__ for k in prices)

    assert cache.wrap("price", kinds, {"prices": {2024: 1.0}})["result"] == ["int"]
    second = cache.wrap("price", kinds, {"prices": {"2024": 1.0}})
    assert second["result"] == ["str"] and not second["_cache_hit"]


def test_an_argument_without_a_stable_spelling_is_refused_by_name():
    with pytest.raises(KeyStrategyError, match="object argument"):
        canonical_json({"x": object()})
