"""The store protocol every backend implements, and the helpers every backend shares.

A store keeps opaque entries: a text key, an encoded value (bytes), a flat JSON metadata
dict and two timestamps. It knows nothing about codecs, TTL policy or key strategies; that
is the cache core's job. Keeping the protocol this small is what lets one conformance suite
(``tests/stores/``) prove every backend the same way.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import Any, Iterable, Iterator, Mapping, Protocol, runtime_checkable

from .._glob import escape_glob, glob_literal_prefix, glob_matches, glob_tokens
from .._json import ParseMemo
from .redaction import redact_secrets, redact_url, url_secrets

__all__ = [
    "BuiltEntries", "CORRUPT_METADATA", "CacheStore", "FRESH_UNTIL", "Entry", "LazyMetadata", "corrupt_entry", "entry_problem", "escape_glob",
    "glob_literal_prefix", "glob_matches", "glob_tokens", "metadata_matches", "open_store", "redact_secrets",
    "redact_url", "register_store", "url_secrets", "registered_schemes", "select_keys",
]


class Entry(tuple):  # type: ignore[type-arg]  # a tuple of the five fields below
    """One stored entry: a value, immutable (``entry.replace(value=...)`` makes a changed copy).

    ``created_at`` and ``expires_at`` are Unix epoch seconds (UTC). ``expires_at=None``
    means the entry never expires. ``metadata`` is a flat JSON object; backends keep it
    queryable by top-level equality. A store may hand the same entry object to every reader
    (the memory store keeps its entries; the SQL and Redis stores hand back the entry built for
    an unchanged row) and the core remembers its verdict on that object: never change an entry,
    or its metadata, in place; put a new one.

    A tuple underneath (like a named tuple): building one is a single allocation on the hit path,
    and defining it imports nothing (a dataclass would import ``dataclasses`` and ``inspect``,
    a third of ``python -c pass``, into every process that imports actioncache).
    """

    __slots__ = ()
    _fields = ("key", "value", "metadata", "created_at", "expires_at")

    def __new__(cls, key: str, value: bytes, metadata: Mapping[str, Any] | None = None, created_at: float = 0.0,
                expires_at: float | None = None) -> Entry:
        return tuple.__new__(cls, (key, value, {} if metadata is None else metadata, created_at, expires_at))

    # The fields, read-only: tuple items behind properties, as collections.namedtuple does.
    key: str = property(itemgetter(0), doc="The entry's key (opaque text).")  # type: ignore[assignment]
    value: bytes = property(itemgetter(1), doc="The encoded value.")  # type: ignore[assignment]
    metadata: Mapping[str, Any] = property(itemgetter(2), doc="A flat JSON object.")  # type: ignore[assignment]
    created_at: float = property(itemgetter(3), doc="When it was stored (epoch s).")  # type: ignore[assignment]
    expires_at: float | None = property(itemgetter(4), doc="When it expires (epoch s); None: never.")  # type: ignore[assignment]

    def is_expired(self, now: float) -> bool:
        expires = self[4]
        return bool(expires is not None and expires <= now)

    def replace(self, **changes: Any) -> Entry:
        """A copy with ``changes`` (field names as keywords): ``entry.replace(expires_at=None)``."""
        unknown = set(changes) - set(self._fields)
        if unknown:
            raise TypeError(f"Entry has no field {sorted(unknown)[0]!r}; its fields are {', '.join(self._fields)}")
        return Entry(*(changes.get(name, current) for name, current in zip(self._fields, self)))

    _replace = replace  # the spelling of collections.namedtuple

    def __repr__(self) -> str:
        return ("Entry(" + ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self)) + ")")

    def __getnewargs__(self) -> tuple[Any, ...]:  # copy and pickle build an Entry, not a plain tuple
        return tuple(self)


# Epoch seconds of 10000-01-01: any later "time" is garbage, and could not be shown as ISO 8601.
_LAST_TIME = 253402300800.0
_FIRST_TIME = -_LAST_TIME


# Metadata of an entry written with a stale window: the time (epoch s) it stops being fresh (the
# core writes it: _flow.Flow.store_result). Present, it must be a time like the entry's own, or an
# entry past its TTL would be judged fresh until its stale window closes.
FRESH_UNTIL = "_cache_fresh_until"
_ABSENT = object()


def _is_time(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -_LAST_TIME < value < _LAST_TIME


def entry_problem(entry: Entry) -> str | None:
    """Why a stored entry cannot be served, or None: the shape check every read applies.

    A store shared with other writers can hold anything under a key (a text ``expires_at``, a
    value that is not bytes, metadata that is not a JSON object, a ``_cache_fresh_until`` that is
    not a time). The core treats such an entry
    as corrupt: a miss, and removed, never an exception for the caller.
    """
    # The shape every healthy entry has, checked with exact types first: this runs on every hit,
    # and isinstance against the Mapping ABC alone cost as much as the memory store's whole read.
    value, created, expires, metadata = entry.value, entry.created_at, entry.expires_at, entry.metadata
    if (type(value) is bytes and type(created) is float and _FIRST_TIME < created < _LAST_TIME
            and (expires is None or (type(expires) is float and _FIRST_TIME < expires < _LAST_TIME))
            and (type(metadata) is dict or type(metadata) is LazyMetadata)
            and not metadata.get(CORRUPT_METADATA)
            and ((fresh := metadata.get(FRESH_UNTIL, _ABSENT)) is _ABSENT
                 or (type(fresh) is float and _FIRST_TIME < fresh < _LAST_TIME))):
        return None
    return _entry_problem(entry)


def _entry_problem(entry: Entry) -> str | None:
    if not isinstance(entry.value, (bytes, bytearray, memoryview)):
        return f"its value is a {type(entry.value).__name__}, not bytes"
    if not _is_time(entry.created_at):
        return f"its created_at is {entry.created_at!r}, not a time"
    if entry.expires_at is not None and not _is_time(entry.expires_at):
        return f"its expires_at is {entry.expires_at!r}, not a time"
    if not isinstance(entry.metadata, Mapping):
        return "its metadata is not a JSON object"
    corrupt = entry.metadata.get(CORRUPT_METADATA)
    if corrupt:
        return corrupt if isinstance(corrupt, str) else "its metadata is not a JSON object"
    fresh = entry.metadata.get(FRESH_UNTIL, _ABSENT)
    if fresh is not _ABSENT and not _is_time(fresh):
        return f"its {FRESH_UNTIL} is {repr(fresh)[:80]}, not a time"
    return None


class BuiltEntries:
    """The entry a store built from each key's last row read, handed back while the row read
    again equals it field for field (bytes, text and times compared exactly): the core remembers
    its verdict on an entry object (``Flow.serve``), so an unchanged row is neither rebuilt nor
    judged again. A changed row (another writer's value, a planted field) builds a new entry.
    Rows whose value and metadata are not bytes and text, or that weigh over 16 KiB, are not kept;
    about 2 MiB in all."""

    __slots__ = ("_kept", "get")

    def __init__(self) -> None:
        self._kept = ParseMemo(16 * 1024, 2 * 1024 * 1024)
        # key -> (row, entry). A store's get compares the row itself, inline (it runs on every hit):
        #     built = self._built.get(key)
        #     if built is not None and built[0] == row: return built[1]
        self.get = self._kept.get

    def keep(self, key: str, row: Any, entry: Entry) -> Entry:
        value, metadata = row[0], row[1]
        if type(value) is bytes and type(metadata) in (str, bytes):
            self._kept.keep(key, (row, entry), len(value) + len(metadata) + len(key))
        return entry


def corrupt_entry(key: str, why: str) -> Entry:
    """What a store returns for a record it cannot turn into an entry (missing or wrong-typed
    fields): the core removes it as corrupt, saying ``why``, instead of the read raising."""
    return Entry(key, b"", {CORRUPT_METADATA: why}, 0.0, None)


# Set by LazyMetadata (and by stores that check the JSON themselves) when stored metadata is not
# a JSON object: entry_problem then reports the entry as corrupt.
CORRUPT_METADATA = "_corrupt_metadata"


# Parsed metadata texts shared by every LazyMetadata (a hit reads the same text again and again).
# Only objects whose every value is a scalar are kept: the parsed dict is never handed out, and a
# scalar cannot be changed through the mapping, so one parse can serve every reader.
_PARSED = ParseMemo(max_text=4096, max_total=1024 * 1024)
_SCALARS = (str, int, float, bool, type(None))


def _parse_metadata(raw: str | bytes) -> dict[str, Any]:
    parsed: dict[str, Any] | None = _PARSED.get(raw)
    if parsed is not None:
        return parsed
    try:
        parsed = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        return {CORRUPT_METADATA: True}
    if (type(raw) is str or type(raw) is bytes) and all(type(v) in _SCALARS for v in parsed.values()):
        _PARSED.keep(raw, parsed)
    return parsed


class LazyMetadata(Mapping[str, Any]):
    """Metadata parsed from its JSON text only when a field the store did not pre-read is asked for.

    A decorator hit needs two fields (``_cache_duration_ms``, for time saved, and
    ``_cache_fresh_until``) and whether the text is a JSON object at all; parsing the whole object
    on every hit would cost more than the indexed SELECT itself, so the same text is parsed once
    (a bounded memo of flat objects, shared by every instance).
    """

    __slots__ = ("_raw", "_preset", "_parsed")

    def __init__(self, raw: str | bytes, preset: dict[str, Any] | None = None) -> None:
        self._raw = raw
        self._preset = preset  # fields the store read itself (None: none)
        self._parsed: dict[str, Any] | None = None

    def _data(self) -> dict[str, Any]:
        if self._parsed is None:
            self._parsed = _parse_metadata(self._raw)
        return self._parsed

    def get(self, name: str, default: Any = None) -> Any:
        preset = self._preset
        if preset is not None and name in preset:
            value = preset[name]
            return default if value is None else value
        parsed = self._parsed
        if parsed is not None:
            return parsed.get(name, default)
        if name != CORRUPT_METADATA:  # "is it JSON at all?" needs the parse
            # A field whose name is not in the text is not in the object, unless the text escapes
            # characters (a backslash): then only parsing can tell.
            raw = self._raw
            if isinstance(raw, str):
                if "\\" not in raw and name not in raw:
                    return default
            elif isinstance(raw, (bytes, bytearray)) and b"\\" not in raw and name.encode() not in raw:
                return default
        return self._data().get(name, default)

    def __getitem__(self, name: str) -> Any:
        return self._data()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())

    def __eq__(self, other: object) -> bool:
        return dict(self._data()) == (dict(other) if isinstance(other, Mapping) else other)

    def __repr__(self) -> str:
        return f"LazyMetadata({self._data()!r})"


@runtime_checkable
class CacheStore(Protocol):
    """What the cache core needs from a backend. Every method is safe to call from any thread.

    Contract (proved by ``tests/stores/test_conformance.py``):

    * ``get`` never returns a half-written entry; ``put`` is an atomic upsert.
    * ``find`` matches ``pattern`` as a glob (``*``, ``?``, ``[...]``, as :func:`fnmatch.fnmatchcase`)
      over the whole key and ``metadata_filter`` as equality on top-level metadata fields; both
      given means both must hold. Callers escape user text with :func:`escape_glob`.
    * ``delete_expired`` removes at most ``limit`` entries whose ``expires_at <= now``, found
      through an index on the expiry time, never a scan of every entry.
    * Counters (``add_counters``/``counters``) are shared by every process using the store.
    * Leases give cross-process mutual exclusion on a name for at most ``ttl_s`` seconds. A store
      may also offer ``renew_lease(name, token, ttl_s) -> bool`` (extend a lease still held by
      ``token``): the core then renews a lease while its holder computes (a heartbeat), so a long
      computation is never started twice; without it a lease lapses after ``ttl_s``.
    * Leases are fenced. A lease token is ``"<fencing number>:<random hex>"``, the number growing
      with every grant (across releases and expiries). ``put_fenced(entry, lease, token)`` writes
      ``entry`` only while ``token`` is the lease's current, unexpired grant, checked in the same
      statement, transaction or script as the write, and returns whether it wrote. The core writes
      through it whenever it holds a lease, so a holder that lost its lease (paused past it) never
      overwrites a newer holder's value. A third-party store without ``put_fenced`` gets plain
      ``put`` writes (unfenced).
    * Every query is parameterized: keys are opaque text and may contain anything.
    """

    url: str

    def get(self, key: str) -> Entry | None: ...

    def put(self, entry: Entry) -> None: ...

    def delete(self, key: str) -> bool: ...

    def delete_many(self, keys: Iterable[str]) -> int: ...

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]: ...

    def delete_expired(self, now: float, limit: int | None = None) -> int: ...

    def count(self) -> int: ...

    def size_bytes(self) -> int: ...

    def add_counters(self, deltas: Mapping[str, float]) -> None: ...

    def counters(self, prefix: str = "") -> dict[str, float]: ...

    def acquire_lease(self, name: str, ttl_s: float) -> str | None: ...

    def release_lease(self, name: str, token: str) -> None: ...

    def put_fenced(self, entry: Entry, lease: str, token: str) -> bool: ...

    def close(self) -> None: ...


def metadata_matches(metadata: Mapping[str, Any], metadata_filter: Mapping[str, Any] | None) -> bool:
    if not metadata_filter:
        return True
    for name, wanted in metadata_filter.items():
        if name not in metadata:
            return False
        have = metadata[name]
        # JSON has one number type and distinguishes booleans; mirror that.
        if isinstance(have, bool) != isinstance(wanted, bool) or have != wanted:
            return False
    return True


def select_keys(
    rows: Iterable[tuple[str, Mapping[str, Any] | str | bytes | None]],
    pattern: str | None,
    metadata_filter: Mapping[str, Any] | None,
    limit: int | None,
) -> list[str]:
    """The exact ``find`` semantics over candidate ``(key, metadata)`` rows a backend narrowed down.

    Backends push what they can into their query (a key prefix, an indexed field) and let this
    apply the rest, so every backend agrees with the reference glob and equality rules.
    Metadata may be a mapping or its JSON text (parsed only when a filter needs it).
    """
    out: list[str] = []
    for key, metadata in rows:
        if pattern is not None and not glob_matches(pattern, key):
            continue
        if metadata_filter:
            if isinstance(metadata, (str, bytes)):
                try:
                    metadata = json.loads(metadata)
                except ValueError:
                    continue
            if not isinstance(metadata, Mapping) or not metadata_matches(metadata, metadata_filter):
                continue
        out.append(key)
        if limit is not None and len(out) >= limit:
            break
    return out


# The URL registry lives in stores/registry.py; these names stay importable from here.
from .registry import open_store, register_store, registered_schemes  # noqa: E402
