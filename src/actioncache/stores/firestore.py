"""Google Cloud Firestore: ``firestore://project/collection`` (``?database=NAME`` for a named database).

Layout (all in the one project/database):

* ``<collection>``: one document per entry. The document id is the SHA-256 of the key (hex):
  Firestore forbids ``/`` in ids, ids ``.``/``..``, ``__.*__`` and ids over 1500 bytes, and a
  hash survives any key. The key itself is the ``key`` field. Fields queried on are top-level:
  ``expires_at`` (absent when the entry never expires), ``key`` and one ``m_<field>`` per scalar
  metadata field (``mh_<hash>`` when the field name is not a plain identifier). The full metadata is
  also kept as JSON text in ``metadata`` so nested values, bools and numbers round-trip exactly.
* ``<collection>-chunks``: a value too big for one document (Firestore's limit is 1 MiB) is split
  into immutable chunk documents named by the entry, a fresh version id and the chunk number.
  The chunks are written first and the entry document, which names the version and the SHA-256 of
  the whole value, last: a reader sees either the old or the new value, never a mix. Chunks of a
  replaced or deleted version are deleted afterwards; chunks orphaned by a crash carry the
  entry's ``expires_at`` and go with the next cleanup.
* ``<collection>-counters``: one document per counter, added to with ``Increment`` transforms.
* ``<collection>-leases``: one document per lease name; created with a must-not-exist precondition,
  taken over when expired inside a transaction. A token is ``"<fence>:<hex>"``; the document keeps
  its ``fence`` number after a release (expires_at 0), so the number grows with every grant of the
  name. A fenced write reads the lease in the transaction that switches the entry document.

Credentials: Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``, gcloud, the
metadata server). ``FIRESTORE_EMULATOR_HOST=host:port`` selects an emulator.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import uuid
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ..errors import ActionCacheError, MissingStoreExtraError, StoreURLError
from ..extras import missing, require
from ._errors import StoreErrors
from ._fork import track_for_fork
from ._sql import upper_bound  # UTF-8 byte order, which is also Firestore's string order
from ._url import check_fields, positive_number
from .base import Entry, LazyMetadata, corrupt_entry, glob_literal_prefix, select_keys
from .breaker import CircuitBreaker, breaker_health, breaker_options, is_timeout
from .redaction import redact_url

T = TypeVar("T")

CHUNK_BYTES = 512 * 1024
# Entry documents hold the value inline up to this size (leaving room for key and metadata).
INLINE_BYTES = 700 * 1024
# Bytes per commit: under Firestore's 10 MiB request limit and gRPC's common 4 MiB message cap.
BATCH_BYTES = 3 * 1024 * 1024
MAX_BATCH_WRITES = 500
_PLAIN_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_MAX_INDEXED_STRING = 1400


def doc_id(text: str) -> str:
    """A Firestore-safe document id for any text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def metadata_field(name: str) -> str:
    """The top-level field that mirrors metadata field ``name`` for queries."""
    if _PLAIN_FIELD.fullmatch(name):
        return "m_" + name
    return "mh_" + doc_id(name)[:32]


def _url(project: str, collection: str, database: str | None = None) -> str:
    """``firestore://project/collection[?database=...]``, each part percent-encoded (``from_url`` decodes)."""
    url = f"firestore://{quote(project, safe=':')}/{quote(collection, safe='')}"
    return url + (f"?database={quote(database, safe='')}" if database else "")


_NOT_INDEXED = object()


def _indexed(value: Any) -> Any:
    """What the ``m_<field>`` mirror of a metadata value holds (``_NOT_INDEXED``: no mirror).

    A whole number is mirrored as an int, whether it came as 3 or 3.0, because metadata_matches
    finds 3 with 3.0 and Firestore keeps the two types apart. int64 in Firestore, but the emulator
    refuses the extremes: a whole number of 2**53 or more has no mirror, and the exact match on the
    metadata JSON decides (see find).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return value if -(2**53) < value < 2**53 else _NOT_INDEXED
    if isinstance(value, float):
        return value
    if isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) <= _MAX_INDEXED_STRING:
        return value
    return _NOT_INDEXED


def _chunked(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# Each call's deadline (docs/backends.md, "Timeouts and the circuit breaker").
DEFAULT_TIMEOUT_S = 2.0


def _server_down(exc: BaseException) -> bool:
    """Unavailable, timed out, or a transport failure: the breaker counts it (not a refusal the
    service answered with, such as a precondition or permission error)."""
    name = type(exc).__name__
    return is_timeout(exc) or name in ("ServiceUnavailable", "RetryError", "InternalServerError", "Unknown",
                                       "GatewayTimeout", "TooManyRequests", "ResourceExhausted")


class FirestoreStore:
    def __init__(self, project: str, collection: str, *, database: str | None = None, client: Any = None,
                 timeout_s: float | str = DEFAULT_TIMEOUT_S, breaker: Mapping[str, float] | None = None) -> None:
        if not collection or "/" in collection or collection.startswith("__"):
            raise StoreURLError(f"Firestore collection name {collection!r} is not valid; use firestore://project/collection")
        if client is None:  # the client itself imports lazily (it is slow); fail now if it cannot
            require("the Firestore store", "firestore", "google.cloud.firestore", error=MissingStoreExtraError)
        if not project or "/" in project:
            raise StoreURLError(f"Firestore project id {project!r} is not valid (a project id has no '/'); "
                                "use firestore://project/collection")
        self.project = project
        self.collection = collection
        self.database = database
        self.url = _url(project, collection, database)  # escaped: pasted into --store, it opens this store
        self._client = client
        self._client_lock = threading.Lock()
        self._store_errors: StoreErrors | None = None
        self.timeout_s = positive_number(timeout_s, "timeout_s", f"Firestore {self.url}")
        # Every call carries its deadline and is not retried: the API's default retries a call that
        # timed out for up to a minute, which a cache must not make its caller wait.
        self._rpc: dict[str, Any] = {"timeout": self.timeout_s, "retry": None}
        options: dict[str, Any] = dict(breaker) if breaker is not None else breaker_options({}, {}, f"Firestore {self.url}")
        self.breaker = CircuitBreaker(f"Firestore {self.url}", **options) if options else None
        track_for_fork(self)

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "firestore", base_dir: Any = None) -> str:
        """``firestore://project/collection`` from ``project`` and ``collection`` (default ``actioncache``)."""
        given = check_fields("firestore", fields, ("project", "collection"),
                             {"project": "your Google Cloud project id; optionally collection:"})
        project, collection = str(given["project"]), str(given.get("collection", "actioncache"))
        return _url(project, collection.strip("/"))

    @classmethod
    def from_url(cls, url: str, **options: Any) -> FirestoreStore:
        parts = urlsplit(url)
        project = unquote(parts.netloc)
        collection = unquote(parts.path).strip("/")
        if not project or not collection:
            raise StoreURLError(f"Firestore URL {redact_url(url)!r} needs a project and a collection: firestore://project/collection")
        query = dict(parse_qsl(parts.query))
        options.setdefault("breaker", breaker_options(query, options, f"Firestore URL {redact_url(url)!r}"))
        for name, value in query.items():
            if name not in ("database", "timeout_s"):
                raise StoreURLError(f"unknown Firestore URL option {name!r} in {redact_url(url)!r}; options: database=, "
                                    "timeout_s=, breaker options")
            options.setdefault(name, value)
        return cls(project, collection, **options)

    # --- client -------------------------------------------------------------------------

    def after_fork(self) -> None:
        # A gRPC channel must not cross a fork: a child builds its own client.
        self._client = None
        self._client_lock = threading.Lock()

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    try:
                        from google.cloud import firestore
                    except ImportError as exc:
                        raise missing("the Firestore store", "firestore", exc, MissingStoreExtraError) from exc
                    kwargs = {"project": self.project}
                    if self.database:
                        kwargs["database"] = self.database
                    self._client = firestore.Client(**kwargs)
        return self._client

    def _col(self, suffix: str = "") -> Any:
        return self.client.collection(self.collection + suffix)

    @property
    def _errors(self) -> StoreErrors:
        if self._store_errors is None:  # the API's exceptions import with the client, on first use
            from google.api_core import exceptions as gexc

            self._store_errors = StoreErrors(f"Firestore {self.url}", gexc.GoogleAPIError, lambda exc: None,
                                             breaker=self.breaker, down=_server_down)
        return self._store_errors

    def health(self) -> dict[str, Any]:
        """The circuit breaker's state (``Cache.stats()["store_health"]``)."""
        return breaker_health(self.breaker)

    def _call(self, op: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._errors(op):
            return fn(*args, **kwargs)

    # --- entries ------------------------------------------------------------------------

    def _entry_ref(self, key: str) -> Any:
        return self._col().document(doc_id(key))

    def _chunk_refs(self, entry_id: str, version: str, count: int) -> list[Any]:
        chunks = self._col("-chunks")
        return [chunks.document(f"{entry_id}-{version}-{i}") for i in range(count)]

    def _read(self, key: str) -> Entry | None:
        snap = self._entry_ref(key).get(**self._rpc)
        if not snap.exists:
            return None
        data = snap.to_dict()
        try:
            return self._decode(key, snap.id, data)
        except (KeyError, TypeError, ValueError) as exc:  # a document another writer shaped differently
            return corrupt_entry(key, f"its document is malformed ({type(exc).__name__}: {exc})")

    def _decode(self, key: str, entry_id: str, data: dict[str, Any]) -> Entry:
        if data.get("value") is not None:
            value = bytes(data["value"])
        else:
            refs = self._chunk_refs(entry_id, data["version"], int(data["chunks"]))
            parts = {s.reference.id: s.to_dict().get("data") for s in self.client.get_all(refs, **self._rpc) if s.exists}
            pieces = [parts.get(ref.id) for ref in refs]
            if any(p is None for p in pieces):
                raise _Replaced()
            value = b"".join(bytes(p) for p in pieces if p is not None)
            if hashlib.sha256(value).hexdigest() != data.get("digest"):
                raise _Replaced()
        return Entry(key, value, LazyMetadata(data.get("metadata") or "{}"), data["created_at"], data.get("expires_at"))

    def get(self, key: str) -> Entry | None:
        for _ in range(5):
            try:
                return self._call("get", self._read, key)
            except _Replaced:
                continue  # a writer replaced the value while we read its chunks: read again
        return None

    def _entry_doc(self, entry: Entry) -> dict[str, Any]:
        metadata = dict(entry.metadata)
        doc: dict[str, Any] = {
            "key": entry.key,
            "metadata": json.dumps(metadata, separators=(",", ":"), ensure_ascii=False),
            "created_at": float(entry.created_at),
            "size": len(entry.value),
            # Every field is written every time (null when unused): some emulators merge on set().
            "expires_at": None if entry.expires_at is None else float(entry.expires_at),
            "value": None,
            "version": None,
            "chunks": None,
            "digest": None,
        }
        for name, value in metadata.items():
            mirror = _indexed(value)
            if mirror is not _NOT_INDEXED:
                doc[metadata_field(name)] = mirror
        return doc

    def _old_chunks(self, snaps: Iterable[Any]) -> list[Any]:
        refs: list[Any] = []
        for snap in snaps:
            if snap.exists:
                data = snap.to_dict()
                if data.get("version"):
                    refs.extend(self._chunk_refs(snap.id, data["version"], int(data.get("chunks") or 0)))
        return refs

    def _delete_refs(self, refs: list[Any]) -> None:
        for group in _chunked(refs, MAX_BATCH_WRITES):
            batch = self.client.batch()
            for ref in group:
                batch.delete(ref)
            batch.commit(**self._rpc)

    def _put(self, entry: Entry, fence: tuple[str, str] | None = None) -> bool:
        ref = self._entry_ref(entry.key)
        previous = ref.get(field_paths=["version", "chunks"])
        doc = self._entry_doc(entry)
        value = bytes(entry.value)
        written: list[Any] = []
        if len(value) <= INLINE_BYTES:
            doc["value"] = value
        else:
            version = uuid.uuid4().hex[:16]
            pieces = [value[i : i + CHUNK_BYTES] for i in range(0, len(value), CHUNK_BYTES)]
            refs = self._chunk_refs(ref.id, version, len(pieces))
            per_batch = max(1, BATCH_BYTES // CHUNK_BYTES)
            for group in _chunked(list(zip(refs, pieces)), per_batch):
                batch = self.client.batch()
                for chunk_ref, piece in group:
                    chunk = {"data": piece, "entry": ref.id, "version": version}
                    if entry.expires_at is not None:
                        chunk["expires_at"] = float(entry.expires_at)
                    batch.set(chunk_ref, chunk)
                batch.commit(**self._rpc)
            written = refs
            doc.update(version=version, chunks=len(pieces), digest=hashlib.sha256(value).hexdigest())
        if fence is None:
            ref.set(doc, **self._rpc)  # the switch: one document write is atomic
        else:
            from google.cloud import firestore

            lease_ref = self._col("-leases").document(doc_id(fence[0]))

            @firestore.transactional
            def switch_if_held(transaction: Any) -> Any:
                # The lease is read in the transaction that writes the entry: a new grant commits
                # before (this write is refused) or after (its holder's write comes later).
                lease = lease_ref.get(transaction=transaction)
                now = time.time()
                if not (lease.exists and lease.get("token") == fence[1] and float(lease.get("expires_at")) > now):
                    return None
                current = ref.get(field_paths=["version", "chunks"], transaction=transaction)
                transaction.set(ref, doc)
                return current

            replaced = switch_if_held(self.client.transaction())
            if replaced is None:
                self._delete_refs(written)  # never referenced: the value goes back to its caller
                return False
            previous = replaced
        self._delete_refs(self._old_chunks([previous]))
        return True

    def put(self, entry: Entry) -> None:
        self._call("put", self._put, entry)

    def put_fenced(self, entry: Entry, lease: str, token: str) -> bool:
        """Store ``entry`` only while ``token`` is the current grant of ``lease`` (read in the
        transaction that switches the entry document)."""
        return bool(self._call("put", self._put, entry, (lease, token)))

    def _delete_many(self, keys: list[str]) -> int:
        deleted = 0
        for group in _chunked(list(dict.fromkeys(keys)), 100):
            snaps = [s for s in self.client.get_all([self._entry_ref(k) for k in group], **self._rpc) if s.exists]
            self._delete_refs([s.reference for s in snaps])
            self._delete_refs(self._old_chunks(snaps))
            deleted += len(snaps)
        return deleted

    def delete(self, key: str) -> bool:
        return self._call("delete", self._delete_many, [key]) > 0

    def delete_many(self, keys: Iterable[str]) -> int:
        return self._call("delete", self._delete_many, list(keys))

    def _find(self, pattern: str | None, metadata_filter: Mapping[str, Any] | None, limit: int | None) -> list[str]:
        from google.cloud.firestore_v1.base_query import FieldFilter

        query = self._col()
        pushed = {k: m for k, v in (metadata_filter or {}).items() if (m := _indexed(v)) is not _NOT_INDEXED}
        if pushed:
            # Equality filters only: Firestore serves them from single-field indexes, no composite index.
            for name, value in pushed.items():
                query = query.where(filter=FieldFilter(metadata_field(name), "==", value))
        elif pattern is not None and glob_literal_prefix(pattern):
            prefix = glob_literal_prefix(pattern)
            query = query.where(filter=FieldFilter("key", ">=", prefix))
            upper = upper_bound(prefix)
            if upper is not None:
                query = query.where(filter=FieldFilter("key", "<", upper))
            query = query.order_by("key")
        query = query.select(["key", "metadata"])
        rows = ((s.get("key"), s.get("metadata")) for s in query.stream(**self._rpc))
        return select_keys(rows, pattern, metadata_filter, limit)

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        return self._call("find", self._find, pattern, metadata_filter, limit)

    def _expired(self, suffix: str, now: float, limit: int) -> list[Any]:
        from google.cloud.firestore_v1.base_query import FieldFilter

        query = (
            self._col(suffix)
            .where(filter=FieldFilter("expires_at", "<=", float(now)))
            .order_by("expires_at")
            .limit(limit)
        )
        return list(query.stream(**self._rpc))

    def _delete_expired(self, now: float, limit: int | None) -> int:
        deleted = 0
        while limit is None or deleted < limit:
            page = MAX_BATCH_WRITES if limit is None else min(MAX_BATCH_WRITES, limit - deleted)
            snaps = self._expired("", now, page)
            if not snaps:
                break
            self._delete_refs([s.reference for s in snaps])
            self._delete_refs(self._old_chunks(snaps))
            deleted += len(snaps)
            if len(snaps) < page:
                break
        # Chunks orphaned by a writer that died between chunks and entry carry the entry's expiry.
        orphans = self._expired("-chunks", now, MAX_BATCH_WRITES)
        self._delete_refs([s.reference for s in orphans])
        return deleted

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        return self._call("cleanup", self._delete_expired, now, limit)

    def _aggregate(self, query: Any) -> float:
        result = query.get(**self._rpc)
        return result[0][0].value if result and result[0] else 0

    def count(self) -> int:
        return int(self._call("count", self._aggregate, self._col().count()))

    def size_bytes(self) -> int:
        return int(self._call("size", self._aggregate, self._col().sum("size")))

    # --- counters -----------------------------------------------------------------------

    def _add_counters(self, deltas: Mapping[str, float]) -> None:
        from google.cloud.firestore_v1 import Increment

        counters = self._col("-counters")
        for group in _chunked(list(deltas.items()), MAX_BATCH_WRITES):
            batch = self.client.batch()
            for name, delta in group:
                batch.set(counters.document(doc_id(name)), {"name": name, "value": Increment(delta)}, merge=True)
            batch.commit(**self._rpc)

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        if deltas:
            self._call("counters", self._add_counters, deltas)

    def _counters(self, prefix: str) -> dict[str, float]:
        from google.cloud.firestore_v1.base_query import FieldFilter

        query = self._col("-counters")
        if prefix:
            query = query.where(filter=FieldFilter("name", ">=", prefix))
            upper = upper_bound(prefix)
            if upper is not None:
                query = query.where(filter=FieldFilter("name", "<", upper))
        out = {}
        for snap in query.stream(**self._rpc):
            name = snap.get("name")
            if isinstance(name, str) and name.startswith(prefix):
                out[name] = snap.get("value")
        return out

    def counters(self, prefix: str = "") -> dict[str, float]:
        return self._call("counters", self._counters, prefix)

    # --- leases -------------------------------------------------------------------------

    def _acquire(self, name: str, ttl_s: float) -> str | None:
        from google.api_core import exceptions as gexc
        from google.cloud import firestore

        ref = self._col("-leases").document(doc_id(name))
        hex_part = uuid.uuid4().hex
        try:
            token = "1:" + hex_part
            ref.create({"name": name, "token": token, "expires_at": time.time() + ttl_s, "fence": 1})
            return token
        except (gexc.AlreadyExists, gexc.Conflict):
            pass

        @firestore.transactional
        def take_over(transaction: Any) -> str | None:
            snap = ref.get(transaction=transaction)
            now = time.time()
            if snap.exists and float(snap.get("expires_at")) > now:
                return None
            # A released lease's document stays (expires_at 0) so its fencing number keeps growing.
            data = snap.to_dict() if snap.exists else {}
            fence = int(data.get("fence") or 0) + 1
            token = f"{fence}:{hex_part}"
            transaction.set(ref, {"name": name, "token": token, "expires_at": now + ttl_s, "fence": fence})
            return token

        taken: str | None = take_over(self.client.transaction())
        return taken

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        return self._call("lease", self._acquire, name, ttl_s)

    def _release(self, name: str, token: str) -> None:
        from google.cloud import firestore

        ref = self._col("-leases").document(doc_id(name))

        @firestore.transactional
        def release(transaction: Any) -> None:
            snap = ref.get(transaction=transaction)
            if snap.exists and snap.get("token") == token:
                transaction.update(ref, {"expires_at": 0.0})  # kept: the next grant's number follows this one's

        release(self.client.transaction())

    def release_lease(self, name: str, token: str) -> None:
        self._call("lease", self._release, name, token)

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:  # after a fork, the child's own client (the parent's was dropped)
            client.close()

    def __repr__(self) -> str:
        return f"FirestoreStore({self.url!r})"


class _Replaced(ActionCacheError):
    """The chunks of the version being read were replaced under the reader."""
