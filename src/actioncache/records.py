"""What faces store: records over a store, without hand-building entries.

The faces (runs, semantic, replay, scratchpad, agents) keep their own data in the same store as
the cache. :class:`Records` gives them the core's rules for it in one place:

* ``put`` writes a value with the ``_cache_*`` bookkeeping every entry carries (type, key,
  action, created/expires as ISO text) and an expiry; ``put_raw`` does the same for bytes a face
  encodes itself (an already-encoded JSON document, a fixed marker). ``kind=None`` stores the
  caller's metadata exactly as given, for a face whose contract is the user's own metadata.
* ``rewrite`` replaces an entry's value or metadata in place: its created and expiry times stay.
* ``get`` reads one: expired is absent; stored content that cannot be served (malformed fields,
  an undecodable value) is absent and removed, never an exception. ``find`` and ``scan`` list
  the keys and live records under a literal prefix.
* ``lease`` is cross-process mutual exclusion with bounded backoff (no face spins by hand), and
  it is fenced: while a lease is held, every ``put``/``put_raw``/``rewrite`` of a ``Records`` on
  the same store, in the same thread or task, goes through the store's ``put_fenced`` with the
  lease's token. A holder that lost its lease (paused past ``ttl_s``, another holder took it)
  gets :class:`~actioncache.errors.LeaseLostError`, nothing written, and the store's counters
  count ``lease_lost`` under the lease's owner in :data:`KEYSPACE`.
* :class:`Tally` is a face's counters: in this process, and optionally summed across processes in
  the store's counters.
* :func:`ema` is the one moving average, and :data:`DEFAULT_EMA_ALPHA` / :data:`DEFAULT_TRUST_FLOOR`
  the one reward rule (the replay and semantic faces learn an entry's trust with it).

:data:`KEYSPACE` is the table of every key prefix in a store (entry keys, lease names, counter
names), and who owns it: a new face adds its prefix here (``tests/test_records.py`` checks that no
two prefixes overlap and that every ``*_PREFIX`` constant is in it).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Mapping, NamedTuple

from ._flight import LEASE_PREFIX
from ._log import log
from ._metadata import entry_metadata
from ._stats import STATS_PREFIX, stats_for
from ._time import resolve_ttl
from .codec import Codec, make_codec
from .errors import ConfigError, LeaseLostError, UnsupportedEntryError
from .keys import KEY_PREFIX
from .stores.base import CacheStore, Entry, entry_problem, escape_glob

__all__ = ["DEFAULT_EMA_ALPHA", "DEFAULT_TRUST_FLOOR", "KEYSPACE", "Held", "Record", "Records", "Space", "Tally", "count",
           "ema", "space_of"]


# The reward rule the learning faces share: one success or failure moves an entry's trust this far
# toward 1 or 0, and below the floor the entry is dropped (semantic entries, replay plans).
DEFAULT_EMA_ALPHA = 0.3
DEFAULT_TRUST_FLOOR = 0.2

_KEEP: Any = object()


class Space(NamedTuple):
    owner: str
    holds: str


# Every key prefix in a store: entry keys, lease names and counter names. Faces define their
# prefix constants beside their code and must match this table (tests/test_records.py checks it).
KEYSPACE: Mapping[str, Space] = {
    KEY_PREFIX: Space("core", "action and function results (wrap, @cached, exec manifests)"),
    LEASE_PREFIX: Space("core", "cross-process single-flight leases"),
    STATS_PREFIX: Space("core", "shared counters (Cache.stats)"),
    "semantic:": Space("semantic", "semantic cache entries"),
    "semantic-gen:": Space("semantic", "per-namespace generation counters (in-memory indexes refresh on a change)"),
    "semantic-lock:": Space("semantic", "reward-update leases"),
    "semantic-vector:": Space("semantic", "vectors of entries another embedder wrote, as this one re-embedded them "
                                          "(one per entry and embedder, expiring with the entry)"),
    "plan:": Space("replay", "recorded plans and their signatures"),
    "replay:": Space("replay", "plan-cache counters"),
    "runs:log:": Space("runs", "the exec run log"),
    "runs:fail:": Space("runs", "the exec fail log"),
    "runs:cheap:": Space("runs", "exec commands whose fresh run is cheaper than a hit (not cached), by key, and "
                                 "churning commands (misses not recorded), by family"),
    "runs:ledger:": Space("runs", "exec commands' recent runs and what each saved or cost, by family (churn)"),
    "runs:cost:": Space("runs", "the exec hit cost's running average"),
    "scratch:": Space("scratchpad", "scratchpad items"),
    "scratch-session:": Space("scratchpad", "scratchpad session records"),
    "scratch-index:": Space("scratchpad", "scratchpad listing index"),
    "scratchpad-bytes:": Space("scratchpad", "scratchpad usage counters"),
    "scratchpad:": Space("scratchpad", "session writer leases and the orphan-sweep lease"),
    "ratelimit:": Space("agents", "ratelimit.wrap: the limiters' logs and the leases that guard them (stores.ratelimit)"),
}


def space_of(key: str) -> str | None:
    """The KEYSPACE prefix a key falls in (the longest that matches), or None."""
    best = None
    for prefix in KEYSPACE:
        if key.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


class Record(NamedTuple):
    value: Any
    entry: Entry


class Held:
    """What ``with records.lease(...) as held`` gives: true while the lease was taken. Writes of
    this thread or task through a :class:`Records` on the same store are fenced by it."""

    __slots__ = ("name", "store", "token")

    def __init__(self, store: CacheStore, name: str, token: str | None) -> None:
        self.store = store
        self.name = name
        self.token = token

    def __bool__(self) -> bool:
        return self.token is not None

    def __repr__(self) -> str:
        return f"<lease {self.name!r} {'held' if self.token is not None else 'not held'}>"


# The leases this thread or task holds, innermost last: a write looks here, so no face can write
# under its lease unfenced by forgetting to pass the token.
_HELD: ContextVar[tuple[Held, ...]] = ContextVar("actioncache_records_leases", default=())


class Records:
    """One face's view of a store: put/get with expiry, decoding and corrupt-entry removal; leases."""

    def __init__(self, store: CacheStore, codec: Codec | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.codec = codec if codec is not None else make_codec(None, None)
        self.clock = clock

    def put(self, key: str, value: Any, *, kind: str | None, ttl_s: float | None = None, action: str | None = None,
            metadata: Mapping[str, Any] | None = None, now: float | None = None) -> Entry:
        """Encode and store ``value`` (raises on an unencodable value or a failing store: the face decides)."""
        return self.put_raw(key, self.codec.encode(value), kind=kind, ttl_s=ttl_s, action=action, metadata=metadata,
                            now=now)

    def put_raw(self, key: str, data: bytes, *, kind: str | None, ttl_s: float | None = None,
                action: str | None = None, metadata: Mapping[str, Any] | None = None,
                now: float | None = None) -> Entry:
        """Store bytes the face encoded itself. ``now`` (default: the clock) is the entry's creation
        time, for a face that writes several entries as of one moment. ``kind=None``: the metadata
        is stored as given, without the ``_cache_*`` bookkeeping (``ltm.store``: an agent may seed
        another face's entries, whose bookkeeping fields are then its own)."""
        if ttl_s is not None:
            ttl_s = resolve_ttl(ttl_s)  # the one TTL check: no face writes an expiry a store cannot hold
        if now is None:
            now = self.clock()
        meta = dict(metadata or {}) if kind is None else entry_metadata(key, action, kind, now, ttl_s, metadata)
        entry = Entry(key, data, meta, now, None if ttl_s is None else now + ttl_s)
        self.write(entry)
        return entry

    def rewrite(self, entry: Entry, value: Any = _KEEP, *, metadata: Mapping[str, Any] | None = None) -> Entry:
        """Store a new ``value`` and/or ``metadata`` under ``entry``'s key in place of ``entry``:
        its created and expiry times stay (so does its bookkeeping, unless ``metadata`` replaces it)."""
        data = entry.value if value is _KEEP else self.codec.encode(value)
        new = Entry(entry.key, data, dict(entry.metadata if metadata is None else metadata), entry.created_at,
                    entry.expires_at)
        self.write(new)
        return new

    def write(self, entry: Entry) -> None:
        """``store.put``, or, under a lease this thread or task holds on this store, the store's
        fenced write: accepted only while the lease's token is its current grant."""
        held = next((h for h in reversed(_HELD.get()) if h.store is self.store and h.token is not None), None)
        fenced = getattr(self.store, "put_fenced", None) if held is not None else None
        if held is None or fenced is None:  # no lease held (or a third-party store without fencing)
            self.store.put(entry)
            return
        assert held.token is not None
        if not fenced(entry, held.name, held.token):
            space = space_of(held.name)
            count(self.store, KEYSPACE[space].owner if space is not None else "lease", lease_lost=1)
            log.info("lost the lease %r before writing %r (a newer holder may have written): not stored",
                     held.name, entry.key)
            raise LeaseLostError(
                f"the lease {held.name!r} was lost before {entry.key!r} was written (this holder was paused or slow "
                "past the lease and another holder took it); nothing was written: retry to take the lease again",
                held.name, entry.key)

    def get(self, key: str) -> Record | None:
        """The live record under ``key``, or None (absent, expired, or corrupt and now removed).

        A value this process cannot decode but another can (signed pickle without the secret, zstd
        without the package) is absent and left in place. A store error propagates: the face knows
        whether a failed read is a miss or an error.
        """
        entry = self.store.get(key)
        if entry is None or entry.is_expired(self.clock()):
            return None
        problem = entry_problem(entry)
        if problem is None:
            try:
                return Record(self.codec.decode(entry.value), entry)
            except UnsupportedEntryError as exc:
                log.debug("entry %r is not readable here: %s", key, exc)
                return None
            except Exception as exc:  # noqa: BLE001 - any undecodable value is corrupt
                problem = str(exc) or type(exc).__name__
        log.warning("removing corrupt entry %r: %s", key, problem)
        try:
            self.store.delete(key)
        except Exception as exc:  # noqa: BLE001 - the next write replaces it anyway
            log.debug("removing corrupt entry %r failed: %s", key, exc)
        return None

    def find(self, prefix: str, rest: str = "*", *, metadata_filter: Mapping[str, Any] | None = None,
             limit: int | None = None) -> list[str]:
        """Keys that start with the literal ``prefix`` (its glob characters match only themselves)
        followed by the glob ``rest``, optionally filtered by metadata equality."""
        return self.store.find(pattern=escape_glob(prefix) + rest, metadata_filter=metadata_filter, limit=limit)

    def scan(self, prefix: str, rest: str = "*", *,
             metadata_filter: Mapping[str, Any] | None = None) -> Iterator[tuple[str, Record]]:
        """``(key, record)`` of every live record :meth:`find` lists (expired and corrupt ones skipped)."""
        for key in self.find(prefix, rest, metadata_filter=metadata_filter):
            record = self.get(key)
            if record is not None:
                yield key, record

    @contextmanager
    def lease(self, name: str, ttl_s: float, wait_s: float = 0.0, *, first_delay_s: float = 0.01,
              max_delay_s: float = 0.25, strict: bool = False) -> Iterator[Held]:
        """``with records.lease("ratelimit:x", 30, wait_s=5) as held:`` mutual exclusion across
        processes. Waits up to ``wait_s`` with backoff (``first_delay_s`` doubling up to
        ``max_delay_s``); ``held`` is false when the wait ran out or the store has no leases, and
        the body decides what then. ``strict=True``: a store that fails raises instead (a face
        that reports store errors, rather than working on without the lease).

        Fenced: inside the block, this thread's or task's writes through any ``Records`` on this
        store use ``put_fenced`` with the lease's token, so a holder that lost the lease (paused
        past ``ttl_s``) raises :class:`~actioncache.errors.LeaseLostError` instead of overwriting
        what the next holder wrote. (Deletes are not fenced: the store protocol has no fenced
        delete.)"""
        deadline = time.monotonic() + wait_s
        delay = first_delay_s
        token = None
        while True:
            try:
                token = self.store.acquire_lease(name, ttl_s)
            except Exception as exc:
                if strict:
                    raise
                log.debug("lease on %s failed: %s", name, exc)
                break
            remaining = deadline - time.monotonic()
            if token is not None or remaining <= 0:
                break
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, max_delay_s)
        held = Held(self.store, name, token)
        reset = _HELD.set((*_HELD.get(), held))
        try:
            yield held
        finally:
            _HELD.reset(reset)
            if token is not None:
                try:
                    self.store.release_lease(name, token)
                except Exception as exc:  # noqa: BLE001 - the lease expires on its own
                    log.debug("releasing lease on %s failed: %s", name, exc)


class Tally:
    """A face's counters: this object's counts in memory (:meth:`local`) and, when ``shared``, the
    same deltas added to the store's counters under ``prefix`` (:meth:`totals`: every process's).

    Adding to the store is one ``add_counters`` call per :meth:`add`; a failure there never
    reaches the caller (:meth:`add` returns it as text, for the face to log or count).
    """

    def __init__(self, store: CacheStore, prefix: str = "", *, shared: bool = False,
                 names: tuple[str, ...] = ()) -> None:
        if shared and not prefix:
            raise ConfigError("a shared Tally needs a prefix for its store counters (one in records.KEYSPACE)")
        self.store = store
        self.prefix = prefix
        self.shared = shared
        self.lock = threading.Lock()
        self.counts: dict[str, float] = dict.fromkeys(names, 0)

    def add(self, deltas: Mapping[str, float] | None = None, /, **named: float) -> str | None:
        """Add ``deltas`` (and keyword deltas); returns why the shared counters were not written, or None."""
        deltas = {**(deltas or {}), **named}
        with self.lock:
            counts = self.counts
            for name, delta in deltas.items():
                counts[name] = counts.get(name, 0) + delta
        if not self.shared or not deltas:
            return None
        try:
            self.store.add_counters({self.prefix + name: delta for name, delta in deltas.items()})
        except Exception as exc:  # noqa: BLE001 - counting must never fail the caller
            return f"{type(exc).__name__}: {exc}"
        return None

    def local(self) -> dict[str, float]:
        """This object's counts."""
        with self.lock:
            return dict(self.counts)

    def totals(self) -> dict[str, float]:
        """The shared counters of every process on the store (names without the prefix); a store
        error propagates."""
        start = len(self.prefix)
        return {name[start:]: value for name, value in self.store.counters(self.prefix).items()}


def count(store: CacheStore, action: str, **deltas: float) -> None:
    """Count a face's work in the store's one set of counters, beside every ``Cache`` on that store:
    ``count(store, "semantic.lookup", hits=1, time_saved_ms=120)``. Buffered like a hit (no write
    here), flushed with the cache's counters, and shown by ``Cache.stats()`` and ``actioncache
    stats`` under ``by_action[action]`` and in the totals, in the same shape as ``wrap``'s counts
    (hits, misses, stores, errors, time saved)."""
    stats = stats_for(store)
    stats.count(action, **deltas)
    if stats.due():
        stats.flush(store)


def ema(old: float | None, new: float, alpha: float = DEFAULT_EMA_ALPHA) -> float:
    """Exponential moving average: ``new`` when there is no ``old``, else ``old + alpha * (new - old)``."""
    if not 0.0 < alpha <= 1.0:
        raise ConfigError(f"alpha must be in (0, 1], not {alpha!r}")
    return float(new) if old is None else float(old) + alpha * (float(new) - float(old))
