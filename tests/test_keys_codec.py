"""Key determinism, canonical JSON and codec round trips (hypothesis), and signed pickle safety."""

from __future__ import annotations

import datetime as dt
import json
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache import Cache, canonical_json
from actioncache.codec import JSONCodec, SignedPickleCodec, make_codec
from actioncache.errors import CorruptEntryError, UnsupportedEntryError
from actioncache.keys import args_key, compute_key

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=25,
)


def shuffled(d: dict, order: list[int]) -> dict:
    items = list(d.items())
    rotated = items[len(order) % len(items):] + items[: len(order) % len(items)] if items else items
    return dict(reversed(rotated)) if order and order[0] % 2 else dict(rotated)


@given(st.dictionaries(st.text(max_size=10), json_values, min_size=1, max_size=8), st.lists(st.integers(0, 9), max_size=3))
def test_key_does_not_depend_on_dict_order(args, order):
    assert args_key("act", args) == args_key("act", shuffled(args, order))


@given(st.dictionaries(st.text(alphabet="abcdefgh", min_size=1, max_size=4), json_scalars, min_size=1, max_size=6))
def test_decorator_key_does_not_depend_on_keyword_order(kwargs):
    cache = Cache("memory://")

    @cache.cached(name="kw")
    def f(**kw):
        return kw

    forward = f.cache_key(**kwargs)
    backward = f.cache_key(**dict(reversed(list(kwargs.items()))))
    assert forward == backward


@given(json_values)
def test_canonical_json_is_sorted_compact_utf8_and_parses_back(value):
    text = canonical_json(value)
    assert json.loads(text) == value
    assert text == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_canonical_json_spelling():
    assert canonical_json({"b": 1, "a": ["ü", 2.5, None]}) == '{"a":["ü",2.5,null],"b":1}'


@given(json_values)
def test_json_values_round_trip(value):
    codec = JSONCodec()
    assert codec.decode(codec.encode(value)) == value


tagged_values = st.recursive(
    json_scalars | st.binary(max_size=20) | st.datetimes(timezones=st.just(dt.UTC)) | st.dates(),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4),
    max_leaves=15,
)


@given(tagged_values)
def test_tuples_bytes_datetimes_and_int_keys_round_trip_losslessly(value):
    codec = JSONCodec()
    back = codec.decode(codec.encode(value))
    assert back == value and type(back) is type(value)


def test_user_dicts_that_look_like_tags_round_trip():
    codec = JSONCodec()
    value = {"__ac__": "tuple", "v": [1, 2]}
    assert codec.decode(codec.encode(value)) == value


def test_unknown_format_and_bad_json_are_corrupt():
    codec = JSONCodec()
    with pytest.raises(CorruptEntryError):
        codec.decode(b"j{broken")
    with pytest.raises(CorruptEntryError):
        codec.decode(b"zzz")


class Boom:
    """Unpickling this would write a file: the proof that a pickle was loaded."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_unsigned_pickle_is_never_loaded(tmp_path):
    evil = b"p" + b"\x00" * 32 + pickle.dumps(Boom(str(tmp_path / "pwned")))
    with pytest.raises(UnsupportedEntryError):
        JSONCodec().decode(evil)
    with pytest.raises(CorruptEntryError, match="signature"):
        SignedPickleCodec("s" * 32).decode(evil)
    assert not (tmp_path / "pwned").exists()


def test_signed_pickle_round_trips_and_tampering_is_a_miss(sqlite_url, tmp_path):
    class Point:
        def __init__(self, x):
            self.x = x

        def __eq__(self, other):
            return isinstance(other, Point) and other.x == self.x

    import sys

    sys.modules[__name__].Point = Point  # picklable by reference
    Point.__qualname__ = "Point"
    cache = Cache(sqlite_url, codec="pickle", secret="k" * 32, cleanup_probability=0)
    key = cache.wrap("p", lambda: Point(3), {})["_cache_key"]
    assert cache.wrap("p", lambda: None, {})["result"] == Point(3)
    entry = cache.store.get(key)
    assert entry.value[:1] == b"p"
    # JSON values stay JSON even with pickle enabled
    assert cache.codec.encode({"a": 1})[:1] == b"j"
    # another secret: the entry is corrupt, a miss, and removed
    other = Cache(sqlite_url, codec="pickle", secret="x" * 32, cleanup_probability=0)
    r = other.wrap("p", lambda: Point(4), {})
    assert r["_cache_hit"] is False and "signature" in r["_cache_error"]
    # a JSON-only cache does not load it either
    plain = Cache(sqlite_url, cleanup_probability=0)
    assert plain.wrap("p", lambda: {"fresh": 1}, {})["_cache_hit"] is False


def test_pickle_needs_a_secret(monkeypatch):
    monkeypatch.delenv("ACTIONCACHE_SECRET", raising=False)
    with pytest.raises(ValueError, match="signing secret"):
        make_codec("pickle")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        make_codec("pickle", "short")


def test_compute_key_forms():
    assert compute_key("a", {}, key="cache:x") == "cache:x"
    assert compute_key("a", {}, key="x") == "cache:x"
    assert compute_key("a", {"x": 1}).startswith("cache:a:")


# --- compressed values: only one whole stream is a value --------------------------------------


def _digits(n: int, seed: int) -> bytes:
    """A plain-JSON number of ``n`` random digits: every prefix of it is a valid value too, so a
    reader that served a cut stream would serve a different number."""
    import random

    rng = random.Random(seed)
    return b"j" + "".join(rng.choice("123456789") for _ in range(n)).encode()


def _zlib(data: bytes) -> bytes:
    import zlib

    return b"x" + zlib.compress(data, 6)


def _zstd(data: bytes, **options) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return b"z" + zstandard.ZstdCompressor(**options).compress(data)


def test_a_compressed_stream_cut_short_is_corrupt_never_a_shorter_value():
    from actioncache.codec import decompress

    number = _digits(3000, 0)
    codec = JSONCodec()
    assert codec.decode(_zlib(number)) == int(number[1:])
    for cut in (4, 300, 1000):  # the checksum alone, then into the data
        with pytest.raises(CorruptEntryError, match="cut short"):
            codec.decode(_zlib(number)[:-cut])
    big = _digits(400_000, 1)  # zstd blocks are 128 KiB: a cut frame still holds whole blocks
    frame = _zstd(big)
    assert decompress(frame) == big
    for cut in (10, 5000, 50_000):
        with pytest.raises(CorruptEntryError, match="cut short"):
            decompress(frame[:-cut])
    # compress() always declares the frame's size: a frame without one is refused unread.
    with pytest.raises(CorruptEntryError, match="without a declared size"):
        decompress(_zstd(big, write_content_size=False))
    with pytest.raises(CorruptEntryError):
        decompress(b"x")  # no stream at all
    with pytest.raises(CorruptEntryError):
        decompress(b"z")


def test_bytes_after_a_compressed_stream_or_a_nested_one_are_corrupt():
    value = b'j{"a": 1}'
    codec = JSONCodec()
    assert codec.decode(_zlib(value)) == codec.decode(_zstd(value)) == {"a": 1}
    for planted in (_zlib(value) + b"GARBAGE", _zstd(value) + b"GARBAGE", _zstd(b'j{"a":') + _zstd(b"1}")[1:]):
        with pytest.raises(CorruptEntryError, match="after its end"):
            codec.decode(planted)
    pickled = SignedPickleCodec("s" * 32)
    for nested in (_zlib(_zlib(value)), _zstd(_zlib(value)), _zlib(_zstd(value)), _zstd(_zstd(value))):
        for reader in (codec, pickled):
            with pytest.raises(CorruptEntryError, match="another compressed value"):
                reader.decode(nested)


def test_the_decompression_limit_still_holds(monkeypatch):
    import actioncache.codec as codec_module

    monkeypatch.setattr(codec_module, "MAX_DECOMPRESSED_BYTES", 100_000)
    huge = b"j" + b"0" * 1_000_000
    for frame in (_zlib(huge), _zstd(huge)):
        with pytest.raises(CorruptEntryError, match="decode limit"):
            codec_module.decompress(frame)
    with pytest.raises(CorruptEntryError, match="without a declared size"):
        codec_module.decompress(_zstd(huge, write_content_size=False))
    assert codec_module.decompress(_zlib(huge[:50_000])) == huge[:50_000]
