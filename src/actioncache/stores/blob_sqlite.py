"""A SQLite cache file kept in object storage: ``blob-sqlite+s3://bucket/dir/cache.db``.

Also ``+gs``, ``+az`` (``+abfs``), ``+file:///abs/path.db`` and ``+memory://name/cache.db``.

How it works:

* **Open** (lazily, on first use): download the object into a private temporary directory and
  serve every call from a :class:`~actioncache.stores.sqlite.SQLiteStore` on that local copy.
  Reads cost what a local SQLite read costs; they never touch the network except for a sync.
* **Sync** pushes local changes and pulls other writers' changes in one step. It runs on
  :meth:`BlobSQLiteStore.flush`, on :meth:`close` (and at interpreter exit), after
  ``flush_writes`` pending writes, and on the first call after ``sync_interval`` seconds since the
  last sync. Lease operations sync at once (a lease nobody else can see is no lease).
* **Concurrent writers never lose each other's entries.** Every upload is conditional on the
  version the local copy was built from (S3 ``If-Match`` ETag, GCS ``ifGenerationMatch``, Azure
  ``If-Match``, a lock for ``file``/``memory``; see :mod:`.blob_objects`). When another writer got
  there first, the upload fails, the newer object is downloaded, this writer's own changes since
  its last sync (a journal of keys, tombstones, counter deltas and cleanups) are replayed onto it,
  and the conditional upload is retried. For one key written by two machines between syncs, the
  entry with the later ``created_at`` wins (ties: the last to upload); a delete removes only the
  version it saw, never a newer one written elsewhere.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import StoreError, StoreURLError
from ._fork import track_for_fork
from ._url import check_fields, url_path
from .base import Entry
from .blob_objects import RemoteObject, WriteConflict, open_remote_object
from .redaction import redact_url
from .registry import Targets
from .sqlite import SQLiteStore

log = logging.getLogger(__name__)

T = TypeVar("T")

# URL query parameters that configure the store; every other parameter is an fsspec storage option.
_STORE_OPTIONS = {"flush_writes": int, "sync_interval": float, "max_retries": int}
_STALE = "\0stale"  # a base version no remote object has: forces a fresh download


def _option_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return text


def object_of(url: str) -> tuple[str, str]:
    """(object store protocol, object path) of a ``blob-sqlite+PROTO://`` URL: what ``from_url``
    opens, and what :func:`blob_sqlite_targets` reports."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    protocol = scheme.partition("+")[2]
    if not scheme.startswith("blob-sqlite+") or not protocol:
        raise StoreURLError(
            f"blob-sqlite URL {redact_url(url)!r} names no object store; use e.g. blob-sqlite+s3://bucket/cache.db, "
            "blob-sqlite+gs://, blob-sqlite+az://, blob-sqlite+file:///abs/cache.db or blob-sqlite+memory://name/cache.db"
        )
    return protocol, unquote(parts.netloc + parts.path)


def blob_sqlite_targets(url: str) -> Targets | None:
    """What a blob-sqlite URL opens on this machine: ``+file://`` its object file (and the lock
    beside it), ``+memory://`` nothing; an object store in the cloud (its endpoint and credentials
    come from storage options and the environment) cannot say: None. The working copy is a
    private temporary directory of the store's own."""
    protocol, path = object_of(url)
    if protocol == "memory":
        return Targets()
    if protocol != "file":
        return None
    if not path.startswith("/"):
        raise StoreURLError(f"blob-sqlite+file needs an absolute path (blob-sqlite+file:///abs/cache.db), not {path!r}")
    return Targets((path,))


@dataclass
class _Journal:
    """What this writer changed since its last successful upload, enough to replay onto a newer copy.

    ``keys`` maps a key to ``None`` (we wrote it: copy our row) or to the ``created_at`` of the row
    we deleted (a tombstone that removes that version or an older one, never a newer one).
    """

    keys: dict[str, float | None] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    cleanups: list[tuple[float, int | None]] = field(default_factory=list)
    writes: int = 0

    def empty(self) -> bool:
        return not (self.keys or self.counters or self.cleanups)

    def take(self) -> _Journal:
        taken = _Journal(self.keys, self.counters, self.cleanups, self.writes)
        self.keys, self.counters, self.cleanups, self.writes = {}, {}, [], 0
        return taken

    def restore(self, older: _Journal) -> None:
        """Put back a journal whose upload failed; changes made since then take precedence."""
        self.keys = {**older.keys, **self.keys}
        for name, delta in older.counters.items():
            self.counters[name] = self.counters.get(name, 0) + delta
        self.cleanups = older.cleanups + self.cleanups
        self.writes += older.writes


def _replay(journal: _Journal, ours: SQLiteStore, theirs: SQLiteStore) -> None:
    """Apply our journaled changes (rows read from ``ours``) onto ``theirs``, the newer remote copy."""
    for key, tombstone in journal.keys.items():
        mine = ours.get(key)
        current = theirs.get(key)
        if tombstone is None:
            if mine is not None and (current is None or current.created_at <= mine.created_at):
                theirs.put(Entry(key, bytes(mine.value), dict(mine.metadata), mine.created_at, mine.expires_at))
        elif current is not None and current.created_at <= tombstone:
            theirs.delete(key)
    if journal.counters:
        theirs.add_counters(journal.counters)
    for now, limit in journal.cleanups:
        theirs.delete_expired(now, limit)


_open_stores: weakref.WeakSet[BlobSQLiteStore] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for store in list(_open_stores):
        try:
            store.close()
        except Exception as exc:  # noqa: BLE001 - exit must go on
            log.warning("blob-sqlite: could not upload %s at exit: %s", store.url, exc)



class BlobSQLiteStore:
    """A :class:`CacheStore` over one SQLite file in object storage (see the module docstring)."""

    def __init__(
        self,
        remote: RemoteObject,
        *,
        url: str | None = None,
        flush_writes: int = 100,
        sync_interval: float = 5.0,
        max_retries: int = 20,
    ) -> None:
        if flush_writes < 1:
            raise StoreURLError(f"flush_writes must be at least 1 (1 uploads after every write), not {flush_writes}")
        if sync_interval < 0:
            raise StoreURLError(f"sync_interval must be 0 or more seconds, not {sync_interval}")
        self.remote = remote
        self.url = url or f"blob-sqlite+{remote.location}"
        self.flush_writes = int(flush_writes)
        self.sync_interval = float(sync_interval)
        self.max_retries = int(max_retries)
        self.conflicts = 0  # uploads refused because another writer got there first (then merged)
        self.sync_errors = 0
        self.last_sync_error: str | None = None
        self._init_state()
        _open_stores.add(self)
        track_for_fork(self)  # the fork registry calls our after_fork in a child

    def _init_state(self) -> None:
        self._lock = threading.RLock()  # the local copy and the journal
        self._sync_lock = threading.Lock()  # one sync at a time
        self._pid = os.getpid()
        self._local: SQLiteStore | None = None
        self._tmpdir: str | None = None
        self._base: str | None = _STALE  # remote version the local copy is built on (None: absent)
        self._journal = _Journal()
        self._last_sync = time.monotonic()
        self._retry_after = 0.0  # after a failed automatic sync, wait before the next one
        self._closed = False

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "blob-sqlite", base_dir: Any = None) -> str:
        """``blob-sqlite+PROTO://bucket/path.db`` from ``uri: PROTO://bucket/path.db``.

        The part after ``PROTO://`` is a location, taken literally: it is percent-encoded, so a ``#``,
        ``?`` or ``%`` in a bucket or file name stays in it (``from_url`` decodes it back).
        """
        fix = "uri: s3://bucket/path.db (or gs://, az://, file://, memory://)"
        given = check_fields("blob-sqlite", fields, ("uri",), {"uri": fix})
        protocol, sep, rest = str(given["uri"]).partition("://")
        if not sep or not protocol:
            raise StoreURLError(f"the blob-sqlite store's uri: must name an object store, not {given['uri']!r}; {fix}")
        return f"blob-sqlite+{protocol}://{url_path(rest)}"

    @classmethod
    def from_url(cls, url: str, **options: Any) -> BlobSQLiteStore:
        """``blob-sqlite+PROTO://bucket/path.db?flush_writes=100&sync_interval=5&<storage option>=...``.

        ``storage_options={...}`` (a dict) may be passed as a keyword too; URL parameters other than
        the store's own are fsspec storage options (e.g. ``endpoint_url``, ``anon``, ``project``).
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        protocol, path = object_of(url)
        storage_options = dict(options.pop("storage_options", None) or {})
        for name, text in parse_qsl(parts.query):
            if name in _STORE_OPTIONS:
                try:
                    options.setdefault(name, _STORE_OPTIONS[name](text))
                except ValueError as exc:
                    raise StoreURLError(f"{name}={text!r} in {redact_url(url)!r} is not a number") from exc
            else:
                storage_options.setdefault(name, _option_value(text))
        remote = open_remote_object(protocol, path, storage_options)
        safe_url = redact_url(f"{scheme}://{parts.netloc}{parts.path}")  # no query: it may hold credentials
        return cls(remote, url=safe_url, **options)

    # --- local copy ---------------------------------------------------------------------

    def after_fork(self) -> None:
        # The parent owns the temporary copy and its pending changes; the child starts over
        # from the remote object (and must not delete the parent's directory).
        self._init_state()

    def _open_copy(self, data: bytes | None) -> tuple[SQLiteStore, str]:
        tmpdir = tempfile.mkdtemp(prefix="actioncache-blob-")
        path = os.path.join(tmpdir, "cache.db")
        if data is not None:
            with open(path, "wb") as fh:
                fh.write(data)
        store = SQLiteStore(path)
        try:
            store.count()  # opens, creates the schema, and proves the download is a database
        except StoreError as exc:
            store.close()
            shutil.rmtree(tmpdir, ignore_errors=True)
            raise StoreError(
                f"blob-sqlite: {self.remote.location} is not a healthy SQLite database ({exc}); "
                "point the URL to a new object (nothing was changed remotely)"
            ) from exc
        return store, tmpdir

    def _swap_copy(self, store: SQLiteStore, tmpdir: str, version: str | None) -> None:
        old, old_dir = self._local, self._tmpdir
        self._local, self._tmpdir, self._base = store, tmpdir, version
        if old is not None:
            old.close()
        if old_dir is not None:
            shutil.rmtree(old_dir, ignore_errors=True)

    def _pull(self) -> None:
        """Rebuild the local copy from the newest remote object plus our journal. Caller holds _sync_lock."""
        try:
            got = self.remote.read()
        except Exception as exc:
            raise StoreError(f"blob-sqlite: cannot read {self.remote.location}: {exc}") from exc
        data, version = got if got is not None else (None, None)
        store, tmpdir = self._open_copy(data)
        with self._lock:
            if self._local is not None:
                _replay(self._journal, self._local, store)
            self._swap_copy(store, tmpdir, version)

    def _copy(self) -> SQLiteStore:
        """The local copy, downloading it on first use."""
        local = self._local
        if local is not None:
            return local
        if self._closed:
            raise StoreError(f"blob-sqlite store {self.url} is closed; open a new one")
        with self._sync_lock:
            if self._local is None:
                self._pull()
                self._last_sync = time.monotonic()
        assert self._local is not None
        return self._local

    def _current(self) -> SQLiteStore:
        """The local copy for a caller holding _lock (closed stores refuse)."""
        if self._local is None:
            raise StoreError(f"blob-sqlite store {self.url} is closed; open a new one")
        return self._local

    def _snapshot(self) -> bytes:
        """A consistent image of the local copy (WAL content included) to upload."""
        assert self._tmpdir is not None
        conn = sqlite3.connect(os.path.join(self._tmpdir, "cache.db"))
        try:
            return conn.serialize()
        finally:
            conn.close()

    # --- sync ---------------------------------------------------------------------------

    def _sync(self, mutate: Callable[[SQLiteStore], tuple[T, bool]] | None = None) -> T | None:
        """Push our changes and pull everyone else's; optionally apply ``mutate`` to the merged copy first.

        ``mutate`` returns ``(result, changed)``; it runs on a copy that holds the newest remote
        state, and its change is uploaded under the same precondition, so it acts atomically.
        """
        self._copy()
        with self._sync_lock:
            for _ in range(self.max_retries):
                try:
                    if self.remote.version() != self._base:
                        self._pull()
                except StoreError:
                    raise
                except Exception as exc:
                    raise StoreError(f"blob-sqlite: cannot reach {self.remote.location}: {exc}") from exc
                with self._lock:
                    local = self._local
                    assert local is not None
                    result, changed = mutate(local) if mutate is not None else (None, False)
                    if self._journal.empty() and not changed:
                        self._last_sync = time.monotonic()
                        return result
                    image = self._snapshot()
                    sent = self._journal.take()
                    expected = self._base
                try:
                    version = self.remote.write(image, expected)
                except WriteConflict:
                    self.conflicts += 1
                    with self._lock:
                        self._journal.restore(sent)
                        self._base = _STALE  # whatever mutate changed is rebuilt from the remote
                    continue
                except Exception as exc:
                    with self._lock:
                        self._journal.restore(sent)
                        self._base = _STALE
                    raise StoreError(f"blob-sqlite: cannot upload {self.remote.location}: {exc}") from exc
                with self._lock:
                    self._base = version
                    self._last_sync = time.monotonic()
                return result
        raise StoreError(
            f"blob-sqlite: {self.remote.location} changed under us {self.max_retries} times in a row; "
            "too many writers for one object: raise ?max_retries= or shard the cache over several objects"
        )

    def flush(self) -> None:
        """Upload local changes now (merging with other writers) and pull theirs."""
        self._sync()

    def _after_op(self, wrote: bool) -> None:
        now = time.monotonic()
        due = now - self._last_sync >= self.sync_interval
        if not (due or (wrote and self._journal.writes >= self.flush_writes)) or now < self._retry_after:
            return
        try:
            self._sync()
        except StoreError as exc:
            # The local copy still holds every change; the next sync retries. Never fail the call,
            # and while the object store is away do not pay a failing round trip on every call.
            self._retry_after = time.monotonic() + max(self.sync_interval, 1.0)
            self.sync_errors += 1
            self.last_sync_error = str(exc)
            log.warning("%s", exc)

    # Every local call holds _lock: a sync may swap the copy underneath, and a closed copy must
    # never be reopened (SQLiteStore would recreate an empty file in the deleted directory).

    def _write(self, op: Callable[[SQLiteStore], T], keys: Mapping[str, float | None] = {}) -> T:
        self._copy()
        with self._lock:
            result = op(self._current())
            self._journal.keys.update(keys)
            self._journal.writes += 1
        self._after_op(wrote=True)
        return result

    def _read(self, op: Callable[[SQLiteStore], T]) -> T:
        self._copy()
        with self._lock:
            result = op(self._current())
        self._after_op(wrote=False)
        return result

    # --- protocol -----------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        return self._read(lambda s: s.get(key))

    def put(self, entry: Entry) -> None:
        self._write(lambda s: s.put(entry), {entry.key: None})

    def _tombstones(self, local: SQLiteStore, keys: Iterable[str]) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for key in keys:
            row = local.get(key)
            if row is not None:
                out[key] = row.created_at
        return out

    def delete(self, key: str) -> bool:
        return self.delete_many([key]) > 0

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        self._copy()
        with self._lock:
            local = self._current()
            tombstones = self._tombstones(local, keys)
            deleted = local.delete_many(tombstones)
            self._journal.keys.update(tombstones)
            self._journal.writes += bool(deleted)
        if deleted:
            self._after_op(wrote=True)
        return deleted

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        return self._read(lambda s: s.find(pattern, metadata_filter, limit))

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        def cleanup(local: SQLiteStore) -> int:
            deleted = local.delete_expired(now, limit)
            if deleted:
                self._journal.cleanups.append((now, limit))
            return deleted

        return self._write(cleanup)

    def count(self) -> int:
        return self._read(lambda s: s.count())

    def size_bytes(self) -> int:
        return self._read(lambda s: s.size_bytes())

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        def add(local: SQLiteStore) -> None:
            local.add_counters(deltas)
            for name, delta in deltas.items():
                self._journal.counters[name] = self._journal.counters.get(name, 0) + delta

        if deltas:
            self._write(add)

    def counters(self, prefix: str = "") -> dict[str, float]:
        return self._read(lambda s: s.counters(prefix))

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        def take(local: SQLiteStore) -> tuple[str | None, bool]:
            token = local.acquire_lease(name, ttl_s)
            return token, token is not None

        return self._sync(take)

    def put_fenced(self, entry: Entry, lease: str, token: str) -> bool:
        """Store ``entry`` only while ``token`` is the current grant of ``lease``: checked and
        written on a copy holding the newest remote state, uploaded under the same precondition
        (as a lease is taken), so the check and the write act atomically across machines."""
        def write(local: SQLiteStore) -> tuple[bool, bool]:
            stored = local.put_fenced(entry, lease, token)
            return stored, stored

        return bool(self._sync(write))

    def release_lease(self, name: str, token: str) -> None:
        def release(local: SQLiteStore) -> tuple[None, bool]:
            local.release_lease(name, token)
            return None, True

        self._sync(release)

    def close(self) -> None:
        """Upload pending changes, then drop the local copy. If the upload fails the copy is kept."""
        if self._closed or os.getpid() != self._pid:
            return
        if self._local is not None and not self._journal.empty():
            try:
                self._sync()
            except StoreError as exc:
                self._closed = True
                raise StoreError(f"{exc}; unsynced changes are kept in {self._tmpdir}") from exc
        self._closed = True
        with self._lock:
            if self._local is not None:
                self._local.close()
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._local = self._tmpdir = None
        _open_stores.discard(self)

    def __repr__(self) -> str:
        return f"BlobSQLiteStore({self.url!r})"

