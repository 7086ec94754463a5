"""The store protocol every backend implements, and the URL registry that opens them.

A store keeps opaque entries: a text key, an encoded value (bytes), a flat JSON metadata
dict and two timestamps. It knows nothing about codecs, TTL policy or key strategies; that
is the cache core's job. Keeping the protocol this small is what lets one conformance suite
(``tests/stores/``) prove every backend the same way.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Protocol, runtime_checkable
from urllib.parse import urlsplit

from ..errors import MissingStoreExtraError, StoreError, StoreURLError


@dataclass(slots=True)
class Entry:
    """One stored entry.

    ``created_at`` and ``expires_at`` are Unix epoch seconds (UTC). ``expires_at=None``
    means the entry never expires. ``metadata`` is a flat JSON object; backends keep it
    queryable by top-level equality.
    """

    key: str
    value: bytes
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    expires_at: float | None = None

    def is_expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now


# Epoch seconds of 10000-01-01: any later "time" is garbage, and could not be shown as ISO 8601.
_LAST_TIME = 253402300800.0


def _is_time(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -_LAST_TIME < value < _LAST_TIME


def entry_problem(entry: Entry) -> str | None:
    """Why a stored entry cannot be served, or None: the shape check every read applies.

    A store shared with other writers can hold anything under a key (a text ``expires_at``, a
    value that is not bytes, metadata that is not a JSON object). The core treats such an entry
    as corrupt: a miss, and removed, never an exception for the caller.
    """
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
    return None


def corrupt_entry(key: str, why: str) -> Entry:
    """What a store returns for a record it cannot turn into an entry (missing or wrong-typed
    fields): the core removes it as corrupt, saying ``why``, instead of the read raising."""
    return Entry(key, b"", {CORRUPT_METADATA: why}, 0.0, None)


# Set by LazyMetadata (and by stores that check the JSON themselves) when stored metadata is not
# a JSON object: entry_problem then reports the entry as corrupt.
CORRUPT_METADATA = "_corrupt_metadata"


class LazyMetadata(Mapping[str, Any]):
    """Metadata parsed from its JSON text only when a field the store did not pre-read is asked for.

    A decorator hit needs one field (``_cache_duration_ms``, for time saved); parsing the whole
    object on every hit would cost more than the indexed SELECT itself.
    """

    __slots__ = ("_raw", "_preset", "_parsed")

    def __init__(self, raw: str | bytes, preset: dict[str, Any] | None = None) -> None:
        self._raw = raw
        self._preset = preset or {}
        self._parsed: dict[str, Any] | None = None

    def _data(self) -> dict[str, Any]:
        if self._parsed is None:
            try:
                parsed = json.loads(self._raw)
            except (ValueError, TypeError, RecursionError):
                parsed = None
            self._parsed = parsed if isinstance(parsed, dict) else {CORRUPT_METADATA: True}
        return self._parsed

    def get(self, name: str, default: Any = None) -> Any:
        if name in self._preset:
            value = self._preset[name]
            return default if value is None else value
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
    * Leases give cross-process mutual exclusion on a name for at most ``ttl_s`` seconds.
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

    def close(self) -> None: ...


_GLOB_SPECIALS = re.compile(r"([*?\[])")


def escape_glob(text: str) -> str:
    """Escape ``*``, ``?`` and ``[`` so that ``text`` matches only itself as a glob."""
    return _GLOB_SPECIALS.sub(r"[\1]", text)


def glob_matches(pattern: str, key: str) -> bool:
    """The reference glob semantics every backend must agree with."""
    return fnmatch.fnmatchcase(key, pattern)


def glob_tokens(pattern: str) -> Iterator[tuple[str, str]]:
    """Split a glob the way :func:`fnmatch.translate` reads it, for translating to another syntax.

    Yields ``("star", "*")``, ``("one", "?")``, ``("set", members)`` for a bracket set, and
    ``("lit", char)`` for a literal character, including escape_glob's one-member sets such as
    ``[*]`` and an unclosed ``[``.
    """
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        i += 1
        if ch == "*":
            yield "star", ch
        elif ch == "?":
            yield "one", ch
        elif ch == "[":
            j = i  # as fnmatch: a leading '!' and then a leading ']' belong to the set
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                yield "lit", "["
                continue
            members, i = pattern[i:j], j + 1
            yield ("lit", members) if len(members) == 1 and members != "!" else ("set", members)
        else:
            yield "lit", ch


# A URL's password (``scheme://user:PASSWORD@host``).
_USERINFO_SECRET = re.compile(r"(://[^/\s:@]*:)[^@\s/]+(@)")
# Secrets given as options: ``?password=``, ``authToken=``, conninfo ``password=...``, an Azure
# ``AccountKey=...;`` or SAS ``sig=``. Names compare case-insensitively, ``-``/``_`` optional.
_OPTION_SECRET = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?:password|passwd|pwd|pass|secret|client[-_]?secret|(?:auth|access|refresh|id|sas)?[-_]?token"
    r"|api[-_]?key|account[-_]?key|shared[-_]?access[-_]?signature|sig|signature|credentials?)=)"
    r"(\"[^\"]*\"|'[^']*'|[^&;\s'\"]+)"
)


def redact_secrets(text: str) -> str:
    """``text`` with every password and token a store URL or connection string may carry
    replaced by ``***``: the one redaction for anything shown (``repr(cache)``, ``stats()["store"]``,
    ``_cache_error``, CLI output, logs)."""
    if "=" not in text and "@" not in text:
        return text
    return _OPTION_SECRET.sub(r"\1***", _USERINFO_SECRET.sub(r"\1***\2", text))


def redact_url(url: str) -> str:
    """``url`` with its password and secret options replaced by ``***``, for error messages and logs."""
    return redact_secrets(url)


def glob_literal_prefix(pattern: str) -> str:
    """The longest prefix of ``pattern`` with no glob metacharacter (an escaped one counts as literal).

    Backends use it to narrow a scan with an index range before matching the rest.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch in "*?":
            break
        if ch == "[":
            # A bracket holding exactly one metacharacter is an escape made by escape_glob.
            if i + 2 < len(pattern) and pattern[i + 2] == "]" and pattern[i + 1] in "*?[":
                out.append(pattern[i + 1])
                i += 3
                continue
            break
        out.append(ch)
        i += 1
    return "".join(out)


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


# --- URL registry ----------------------------------------------------------------------------

# scheme -> "module:factory". Modules import lazily so an extra that is not installed costs
# nothing until a URL asks for it.
_REGISTRY: dict[str, str] = {
    "memory": "actioncache.stores.memory:MemoryStore.from_url",
    "sqlite": "actioncache.stores.sqlite:SQLiteStore.from_url",
    "duckdb": "actioncache.stores.duckdb:DuckDBStore.from_url",
    "libsql": "actioncache.stores.turso:TursoStore.from_url",
    "libsql+file": "actioncache.stores.turso:TursoStore.from_url",
    "turso": "actioncache.stores.turso:TursoStore.from_url",
    "firestore": "actioncache.stores.firestore:FirestoreStore.from_url",
    "redis": "actioncache.stores.redis:RedisStore.from_url",
    "rediss": "actioncache.stores.redis:RedisStore.from_url",
    "postgresql": "actioncache.stores.postgres:PostgresStore.from_url",
    "postgres": "actioncache.stores.postgres:PostgresStore.from_url",
    "blob-sqlite": "actioncache.stores.blob_sqlite:BlobSQLiteStore.from_url",
}

# Which extra provides a scheme, for the error message when its module cannot import.
_EXTRA_FOR_SCHEME = {
    "duckdb": "duckdb",
    "libsql": "turso",
    "libsql+file": "turso",
    "turso": "turso",
    "firestore": "firestore",
    "redis": "redis",
    "rediss": "redis",
    "postgresql": "postgres",
    "postgres": "postgres",
    "blob-sqlite": "s3|gcs|azure",
}


def register_store(scheme: str, target: str) -> None:
    """Map a URL scheme to ``"module:callable"``; the callable takes the URL and returns a store."""
    _REGISTRY[scheme.lower()] = target


def registered_schemes() -> list[str]:
    return sorted(_REGISTRY)


def _scheme_of(url: str) -> str:
    scheme = urlsplit(url).scheme.lower()
    if scheme.startswith("blob-sqlite+"):
        return "blob-sqlite"
    return scheme


def open_store(url: str | CacheStore | None = None, **options: Any) -> CacheStore:
    """Open the store a URL names (``sqlite:///abs/path.db``, ``memory://``, ``redis://…``, …).

    ``None`` means ``$ACTIONCACHE_URL``, else a SQLite file in the user cache directory.
    A store object passes through unchanged.
    """
    if url is not None and not isinstance(url, str):
        return url
    if url is None:
        from .. import config

        url = config.default_store_url()
    if "://" not in url:
        raise StoreURLError(
            f"not a store URL: {url!r}. Use a URL such as 'sqlite:///abs/path.db' or 'memory://'; "
            f"known schemes: {', '.join(registered_schemes())}"
        )
    scheme = _scheme_of(url)
    from ._eviction import check_size_limit_supported

    check_size_limit_supported(scheme, url, options)
    target = _REGISTRY.get(scheme)
    if target is None:
        raise StoreURLError(
            f"unknown store scheme {scheme!r} in {url!r}; known schemes: {', '.join(registered_schemes())}"
        )
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        from ..extras import missing

        extra = _EXTRA_FOR_SCHEME.get(scheme, scheme)
        raise missing(f"the {scheme!r} store", extra, exc, MissingStoreExtraError) from exc
    factory: Any = module
    for part in attr.split("."):
        factory = getattr(factory, part)
    return factory(url, **options)
