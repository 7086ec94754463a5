"""Value encoding. JSON by default; signed pickle only when asked.

Every encoded value starts with one format byte:

* ``j`` plain JSON: the value held only JSON types (dict with str keys, list, str, int, float,
  bool, None). Decoding is one ``json.loads``.
* ``t`` tagged JSON: the value also held tuples, bytes, datetimes, dates, sets or dicts with
  non-string keys. They are written as ``{"__ac__": TYPE, "v": ...}`` and come back as the same
  Python type, so the round trip is lossless.
* ``p`` HMAC-SHA256-signed pickle, written only by :class:`SignedPickleCodec` and only for values
  JSON cannot hold. Without the secret, or with a bad signature, it is never unpickled.
* ``z`` / ``x`` a value of one of the forms above, compressed with zstd / zlib because its encoding
  reached ``compress_threshold_bytes``. The byte says how it was written, so a reader needs no
  setting to read it, and entries written before compression existed read as they always did.
"""

from __future__ import annotations

import binascii
import datetime as _dt
import hashlib
import itertools
import json
import os
import zlib
from typing import Any, Callable, Protocol

from ._json import ParseMemo, utf8_json
from .errors import CodecError, ConfigError, CorruptEntryError, UnsupportedEntryError

PLAIN = b"j"
TAGGED = b"t"
PICKLED = b"p"
ZSTD = b"z"
ZLIB = b"x"
# Values whose encoding reaches this size are compressed (64 KiB: below it the saving is small and
# the hit path of small values stays one JSON scan). None turns compression off.
DEFAULT_COMPRESS_THRESHOLD_BYTES = 64 * 1024
# A compressed entry never expands past this on decode: a planted or corrupt frame that claims
# more is a corrupt entry (a miss), refused before its output is allocated, not an out-of-memory
# error in the reader. The writer agrees by construction: an encoding larger than this is stored
# uncompressed (never a frame the reader would refuse).
MAX_DECOMPRESSED_BYTES = 256 * 1024**2
# A reader's own bound, below that cap: what the writer could have stored. A Cache sets it to its
# max_value_bytes (which bounds the encoding before compression: an encoding over the bound is
# stored as it is, and then refused by the size check), so a reader never inflates a frame past the
# largest value it could have cached itself. 64 MiB: the default max_value_bytes
# (_options.DEFAULT_MAX_VALUE_BYTES); faces' records use it too.
DEFAULT_DECODE_LIMIT_BYTES = 64 * 1024**2
# The most output one byte of input can give: zstd's smallest block (a 3-byte header and one byte
# repeated) stands for up to 128 KiB; deflate's bound is about 1032 to 1. Input is fed in pieces
# small enough that one piece's output cannot overshoot what is left of the limit.
_ZSTD_MAX_RATIO = 128 * 1024 // 4 + 1
TAG = "__ac__"
SECRET_ENV = "ACTIONCACHE_SECRET"


class Codec(Protocol):
    name: str

    def encode(self, value: Any) -> bytes: ...

    def decode(self, data: bytes) -> Any: ...


_SCALARS = (str, int, float, bool, type(None))


def _is_plain(value: Any) -> bool:
    """True when json.dumps/json.loads gives back exactly this value."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if id(item) in seen:  # shared or circular: let the tagged path decide
            return False
        seen.add(id(item))
        if kind is list:
            stack.extend(item)
        elif kind is dict:
            for k, v in item.items():
                if type(k) is not str or k == TAG:
                    return False
                stack.append(v)
        else:
            return False
    return True


def _tag(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list:
        return [_tag(v) for v in value]
    if kind is dict:
        if all(type(k) is str and k != TAG for k in value):
            return {k: _tag(v) for k, v in value.items()}
        return {TAG: "dict", "v": [[_tag(k), _tag(v)] for k, v in value.items()]}
    if kind is tuple:
        return {TAG: "tuple", "v": [_tag(v) for v in value]}
    if kind in (bytes, bytearray):
        return {TAG: "bytes", "v": binascii.b2a_base64(bytes(value), newline=False).decode("ascii")}
    if kind is _dt.datetime:
        return {TAG: "datetime", "v": value.isoformat()}
    if kind is _dt.date:
        return {TAG: "date", "v": value.isoformat()}
    if kind in (set, frozenset):
        return {TAG: kind.__name__, "v": [_tag(v) for v in value]}
    raise CodecError(
        f"a {kind.__name__} is not a JSON value, so it is not cached (the fresh result is returned); "
        f"return JSON data (dict, list, str, numbers, bool, None; tuples, bytes, datetimes and sets also round-trip), "
        f"or opt in to signed pickle with Cache(codec='pickle', secret=...)"
    )


def _untag(obj: dict[str, Any]) -> Any:
    tag = obj.get(TAG)
    if tag is None:
        return obj
    v = obj["v"]
    if tag == "tuple":
        return tuple(v)
    if tag == "bytes":
        return binascii.a2b_base64(v)
    if tag == "datetime":
        return _dt.datetime.fromisoformat(v)
    if tag == "date":
        return _dt.date.fromisoformat(v)
    if tag == "set":
        return set(v)
    if tag == "frozenset":
        return frozenset(v)
    if tag == "dict":
        return {_freeze(k): val for k, val in v}
    raise CorruptEntryError(f"unknown tag {tag!r} in a cached value")


def _freeze(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


# The C scanner directly: json.loads adds a regex pass and encoding detection on every hit.
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError:
        return None
    return zstandard


def compress(data: bytes) -> bytes:
    """``data`` compressed, behind the format byte of the method used: zstd when the ``zstandard``
    package is installed, zlib (standard library) otherwise."""
    zstandard = _zstd()
    if zstandard is not None:
        packed: bytes = zstandard.ZstdCompressor(level=3).compress(data)
        return ZSTD + packed
    return ZLIB + zlib.compress(data, 6)


def decompress(data: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The inverse of :func:`compress`, never producing more than ``limit`` bytes (at most
    ``MAX_DECOMPRESSED_BYTES``): the largest encoding the reader could have stored itself.

    Only one whole stream is a value: a stream cut short (a torn write, a truncated copy), bytes
    after its end, or a payload that is itself compressed again raise :class:`CorruptEntryError`,
    never a part of the value. A zstd frame without a declared size is refused unread
    (:func:`compress` always declares it). A value past ``limit`` but within the cap (a writer with
    a larger ``max_value_bytes``) is :class:`UnsupportedEntryError`: a miss, left in place."""
    limit = min(limit, MAX_DECOMPRESSED_BYTES)
    fmt, body = data[:1], memoryview(data)[1:]
    try:
        if fmt == ZLIB:
            out, whole = _inflate(body, limit)
        else:
            zstandard = _zstd()
            if zstandard is None:
                raise UnsupportedEntryError("entry is zstd-compressed; install the zstandard package "
                                            "(pip install 'actioncache[compression]') to read it")
            out, whole = _unzstd(zstandard, body, limit)
    except (CorruptEntryError, UnsupportedEntryError):
        raise
    except Exception as exc:  # zlib.error, zstandard.ZstdError, MemoryError: all mean "not a valid frame"
        raise CorruptEntryError(f"compressed value does not decompress: {exc}") from exc
    if not whole:
        raise CorruptEntryError("compressed value is cut short, or has bytes after its end")
    if out[:1] == ZSTD or out[:1] == ZLIB:  # compress() never nests: a planted or damaged value
        raise CorruptEntryError("compressed value holds another compressed value")
    return out


def _too_big(limit: int, size: int | None = None) -> CorruptEntryError | UnsupportedEntryError:
    """Past the cap no writer of ours goes: corrupt. Past this reader's own limit only: another
    cache (a larger ``max_value_bytes``) may have written it, so a miss left in place."""
    if limit >= MAX_DECOMPRESSED_BYTES or (size is not None and size > MAX_DECOMPRESSED_BYTES):
        return CorruptEntryError("compressed value expands past the decode limit")
    what = f"to {size} bytes" if size is not None else "past"
    return UnsupportedEntryError(
        f"compressed value expands {what} this reader's limit of {limit} bytes (its max_value_bytes); a cache with "
        "a larger max_value_bytes may have written it: open the cache with a larger max_value_bytes to read it")


def _inflate(body: memoryview, limit: int) -> tuple[bytes, bool]:
    """A zlib stream: its output, and whether it was one whole stream and nothing else. zlib
    declares no size: the output is capped at ``limit`` + 1 bytes as it is produced."""
    inflater = zlib.decompressobj()
    parts: list[bytes] = []
    size = 0
    tail: bytes | memoryview = body
    while not inflater.eof:
        # In pieces of at most _INFLATE_CHUNK bytes of output: a bomb costs at most the limit and
        # one piece (one decompress(..., limit) call's output buffers, then its copy, cost twice that).
        part = inflater.decompress(tail, _INFLATE_CHUNK)
        tail = inflater.unconsumed_tail
        size += len(part)
        if size > limit:
            raise _too_big(limit)
        parts.append(part)
        if not part and not tail:
            break  # input used up without the stream's end: cut short
    return b"".join(parts), inflater.eof and not inflater.unused_data


_INFLATE_CHUNK = 1024 * 1024


# zstd input is fed at most this much at a time (less as the output nears the limit).
_ZSTD_CHUNK = 4096


def _unzstd(zstandard: Any, body: memoryview, limit: int) -> tuple[bytes, bool]:
    """A zstd frame: its output, and whether it was one whole frame and nothing else (a reader
    of a cut frame returns the blocks it has; ``eof`` says whether the frame ended).

    Bounded before allocation: :func:`compress` writes the decoded size in the frame header, so a
    frame that declares none is not one of ours and is refused unread, and a frame declaring more
    than ``limit`` is refused unread. The frame is then fed in pieces whose worst-case output fits
    in what is left of the declared size, so a frame that lies about its size is stopped within it."""
    try:
        declared = zstandard.get_frame_parameters(body).content_size
    except zstandard.ZstdError as exc:
        raise CorruptEntryError(f"compressed value has no valid zstd frame header: {exc}") from exc
    if declared == zstandard.CONTENTSIZE_ERROR:
        raise CorruptEntryError("compressed value has no valid zstd frame header")
    if declared == zstandard.CONTENTSIZE_UNKNOWN:
        raise CorruptEntryError("compressed value is a zstd frame without a declared size (every frame this "
                                "library writes declares it): refused unread")
    if declared > limit:
        raise _too_big(limit, declared)
    bound = declared
    inflater = zstandard.ZstdDecompressor().decompressobj()
    parts: list[bytes] = []
    size = 0
    start = 0
    while start < len(body):
        step = max(16, min(_ZSTD_CHUNK, (bound - size) // _ZSTD_MAX_RATIO))
        part = inflater.decompress(body[start:start + step])
        start += step
        size += len(part)
        if size > bound:
            raise CorruptEntryError("compressed value expands past the size its frame declares")
        parts.append(part)
        if inflater.eof:
            return b"".join(parts), not inflater.unused_data and start >= len(body) and size == declared
    return b"", False


# The decode memo (JSONCodec.memo): plain-JSON encodings up to this size, with at most this many
# containers, holding at most this many encoded bytes in all per codec, are decoded once.
MEMO_VALUE_BYTES = 16 * 1024
MEMO_CONTAINERS = 64
MEMO_TOTAL_BYTES = 1024 * 1024


def copier(value: Any) -> Callable[[], Any] | None:
    """A function returning a fresh copy of a decoded plain-JSON value on every call (str, int,
    float, bool and None are immutable and shared, every dict and list is new), or None when the
    value has more than ``MEMO_CONTAINERS`` containers (a copy would cost about what decoding does)."""
    try:
        copy = _copier(value, [MEMO_CONTAINERS])
    except (OverflowError, RecursionError):
        return None
    return copy if copy is not None else itertools.repeat(value).__next__  # immutable: share it


def _copier(value: Any, budget: list[int]) -> Callable[[], Any] | None:
    kind = type(value)
    if kind is not dict and kind is not list:
        return None
    budget[0] -= 1
    if budget[0] < 0:
        raise OverflowError
    items = value.items() if kind is dict else enumerate(value)
    nested = tuple((slot, copy) for slot, item in items if (copy := _copier(item, budget)) is not None)
    shallow: Callable[[], Any] = value.copy
    if not nested:
        return shallow  # a container of immutables: one C-level copy
    if len(nested) == 1:
        ((only, copy_one),) = nested

        def deep_one() -> Any:
            out = shallow()
            out[only] = copy_one()
            return out

        return deep_one

    def deep() -> Any:
        out = shallow()
        for slot, copy in nested:
            out[slot] = copy()
        return out

    return deep


class JSONCodec:
    """The default codec: JSON, with a lossless tagged form for a few common Python types.

    Encodings of ``compress_threshold_bytes`` or more are stored compressed (see :func:`compress`).

    Decoding small JSON costs more than a hit's read of a local store, and the same bytes come
    back hit after hit: small plain-JSON encodings (``j``) are decoded once per codec (``memo``,
    keyed by the exact bytes) and answered after with :func:`copier`, a new object tree each
    time, so a caller that mutates what it got never changes the next hit.
    """

    name = "json"
    compress_threshold_bytes: int | None = DEFAULT_COMPRESS_THRESHOLD_BYTES
    # The largest encoding compressed on write and inflated on read (a Cache sets its
    # max_value_bytes here): an encoding over it is stored as it is, and a frame that would
    # inflate past it is never inflated (see decompress).
    max_decoded_bytes: int = DEFAULT_DECODE_LIMIT_BYTES

    def __init__(self) -> None:
        self.memo = ParseMemo(MEMO_VALUE_BYTES, MEMO_TOTAL_BYTES)

    def encode(self, value: Any) -> bytes:
        try:
            if _is_plain(value):
                data = PLAIN + utf8_json(value)
            else:
                data = TAGGED + utf8_json(_tag(value))
        except RecursionError as exc:
            raise CodecError("a circular (or extremely deep) value is not cached; the fresh result is returned") from exc
        return self._maybe_compress(data)

    def _maybe_compress(self, data: bytes) -> bytes:
        threshold = self.compress_threshold_bytes
        if threshold is None or len(data) < threshold or len(data) > min(self.max_decoded_bytes, MAX_DECOMPRESSED_BYTES):
            return data  # past the decode limit: stored as it is (and refused by max_value_bytes)
        packed = compress(data)
        return packed if len(packed) < len(data) else data  # incompressible: store it as it is

    def decode(self, data: bytes) -> Any:
        if type(data) is bytes:
            copy = self.memo.get(data)
            if copy is not None:
                return copy()
        fmt = data[:1]
        try:
            if fmt == PLAIN:
                text = data[1:].decode("utf-8", "surrogatepass")  # lone surrogates, as utf8_json wrote them
                value, end = _scan_once(text, 0)
                if end != len(text):
                    raise ConfigError(f"extra data at offset {end}")
                if type(data) is bytes and len(data) <= MEMO_VALUE_BYTES:
                    copy = copier(value)
                    if copy is not None:
                        self.memo.keep(data, copy)
                        return copy()  # the memo keeps the decoded value: the caller gets a copy
                return value
            if fmt == TAGGED:
                return json.loads(data[1:], object_hook=_untag)
        except StopIteration as exc:
            raise CorruptEntryError("cached value is not valid JSON") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptEntryError(f"cached value is not valid JSON: {exc}") from exc
        if fmt in (ZSTD, ZLIB):
            return self.decode(decompress(data, self.max_decoded_bytes))
        if fmt == PICKLED:
            raise UnsupportedEntryError(
                "entry is marked as pickle, which a JSON cache never loads; if a cache with codec='pickle' wrote it, "
                "open the cache with codec='pickle' and that secret (a pickle whose signature does not verify "
                "is never loaded, by any codec)"
            )
        raise CorruptEntryError(f"cached value has unknown format byte {fmt!r}")


class SignedPickleCodec(JSONCodec):
    """JSON when the value allows it; otherwise pickle signed with HMAC-SHA256.

    A shared cache must not become a remote-code-execution channel: a pickle is only ever
    loaded after its signature verifies against ``secret``.
    """

    name = "pickle"

    def __init__(self, secret: bytes | str) -> None:
        if isinstance(secret, str):
            secret = secret.encode("utf-8")
        if len(secret) < 16:
            raise ConfigError("the pickle signing secret must be at least 16 bytes; use e.g. secrets.token_hex(32)")
        super().__init__()
        self._secret = secret

    def _sign(self, payload: bytes) -> bytes:
        import hmac  # signed pickle is opt-in: plain JSON caches never import hmac or pickle

        return hmac.new(self._secret, payload, hashlib.sha256).digest()

    def encode(self, value: Any) -> bytes:
        try:
            return super().encode(value)
        except CodecError:
            import pickle

            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            return self._maybe_compress(PICKLED + self._sign(payload) + payload)

    def decode(self, data: bytes) -> Any:
        if data[:1] == ZSTD or data[:1] == ZLIB:
            data = decompress(data, self.max_decoded_bytes)
        if data[:1] != PICKLED:
            return super().decode(data)
        signature, payload = data[1:33], data[33:]
        import hmac
        import pickle

        if len(signature) != 32 or not hmac.compare_digest(signature, self._sign(payload)):
            raise CorruptEntryError("pickled entry failed its signature check; it was not loaded")
        return pickle.loads(payload)


# The decoders whose answer for a memoised encoding is a copy out of ``memo`` (a subclass that
# overrides decode is not among them): the hit path may copy from the memo without calling them.
MEMO_DECODERS = frozenset({JSONCodec.decode, SignedPickleCodec.decode})


def make_codec(codec: str | Codec | None = None, secret: bytes | str | None = None,
               compress_threshold_bytes: int | None = DEFAULT_COMPRESS_THRESHOLD_BYTES) -> Codec:
    """The codec a cache uses; ``compress_threshold_bytes`` applies to the built-in ones (None: never)."""
    if compress_threshold_bytes is not None and (
            isinstance(compress_threshold_bytes, bool) or not isinstance(compress_threshold_bytes, int)
            or compress_threshold_bytes < 0):
        raise ConfigError(f"compress_threshold_bytes must be a whole number of bytes ≥ 0 or None (never compress), "
                         f"not {compress_threshold_bytes!r}")
    built = _builtin_codec(codec, secret)
    if isinstance(built, JSONCodec) and compress_threshold_bytes != DEFAULT_COMPRESS_THRESHOLD_BYTES:
        built.compress_threshold_bytes = compress_threshold_bytes
    return built


def _builtin_codec(codec: str | Codec | None, secret: bytes | str | None) -> Codec:
    if codec is None or codec == "json":
        return JSONCodec()
    if codec == "pickle":
        secret = secret if secret is not None else os.environ.get(SECRET_ENV)
        if not secret:
            raise ConfigError(
                f"codec='pickle' needs a signing secret: pass secret=... or set ${SECRET_ENV}; "
                f"unsigned pickle is never used"
            )
        return SignedPickleCodec(secret)
    if isinstance(codec, str):
        raise ConfigError(f"unknown codec {codec!r}; use 'json' (default) or 'pickle' (signed, with a secret)")
    return codec
