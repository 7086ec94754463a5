"""A pgvector index: the vectors of semantic entries in a PostgreSQL table, searched by the database.

Used when the store is PostgreSQL (``postgresql://…``): every process sees every entry at once,
so there is nothing to keep in sync in memory. It talks to the server with psycopg directly,
keyed by the store's URL, and needs the ``vector`` extension (``CREATE EXTENSION vector``,
from the pgvector package). Distances are pgvector's cosine distance ``<=>``; similarity is
``1 - distance``, the same cosine scale as :class:`~actioncache.semantic.index.NumpyIndex`.
Every statement is parameterized; the table name is fixed by the vector dimension.

A row is one entry's vector by one embedder (the key is the entry's and the embedder's name): two
embedders of one dimension on one store (an upgrade of the default's int8 recipe, a fleet in the
middle of one) each keep their own vector of an entry, and each searches its own. The exact match
is the prompt's hash and no vector, so it finds an entry whichever embedder wrote it (a request
stored again replaces the entry another embedder wrote, never leaving that one to answer). Tables
of an earlier version (``actioncache_semantic_vec{dim}``, keyed by the entry alone) are left as
they are: ``SemanticCache.rebuild_index()`` fills the new one from the store.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import MissingStoreExtraError, StoreError
from ..extras import missing
from .numpy_required import np


def _literal(vector: np.ndarray) -> str:
    """pgvector's text form, ``[x,y,...]``, passed as a parameter and cast with ``::vector``."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32).reshape(-1)) + "]"


class PgVectorIndex:
    shared = True

    def __init__(self, url: str, *, dim: int, namespace: str, embedder: str) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise missing("the pgvector index", "postgres", exc, MissingStoreExtraError) from exc
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.dim = dim
        self.namespace = namespace
        self.embedder = embedder
        self.table = f"actioncache_semantic_vectors{dim}"
        self._psycopg = psycopg
        self._url = url.replace("postgres://", "postgresql://", 1)
        self._conn: Any = None
        self._lock = threading.Lock()
        self._setup()

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = self._psycopg.connect(self._url, autocommit=True)
            except self._psycopg.Error as exc:
                raise StoreError(f"cannot connect to PostgreSQL for the pgvector index: {exc}") from exc
        return self._conn

    def _run(self, sql: str, params: tuple[Any, ...] = (), fetch: bool = False) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                with self._connection().cursor() as cur:
                    cur.execute(sql, params)
                    return cur.fetchall() if fetch else []
            except self._psycopg.Error as exc:
                raise StoreError(f"pgvector index query failed: {exc}") from exc

    def _setup(self) -> None:
        try:
            self._run("CREATE EXTENSION IF NOT EXISTS vector")
        except StoreError as exc:
            raise StoreError(
                f"{exc}; the server needs the pgvector extension (Debian: postgresql-15-pgvector, "
                "or scripts/install.d/60-semantic.sh builds it)"
            ) from exc
        self._run(
            f"CREATE TABLE IF NOT EXISTS {self.table} (key TEXT NOT NULL, namespace TEXT NOT NULL, "
            f"embedder TEXT NOT NULL, prompt_hash TEXT NOT NULL, added_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
            f"embedding vector({self.dim}) NOT NULL, PRIMARY KEY (key, embedder))"
        )
        self._run(f"CREATE INDEX IF NOT EXISTS {self.table}_ns ON {self.table} (namespace, embedder)")
        self._run(f"CREATE INDEX IF NOT EXISTS {self.table}_exact ON {self.table} (namespace, prompt_hash)")

    def __len__(self) -> int:
        rows = self._run(
            f"SELECT count(*) FROM {self.table} WHERE namespace = %s AND embedder = %s",
            (self.namespace, self.embedder), fetch=True,
        )
        return int(rows[0][0])

    def keys(self) -> set[str]:
        rows = self._run(
            f"SELECT key FROM {self.table} WHERE namespace = %s AND embedder = %s", (self.namespace, self.embedder), fetch=True
        )
        return {row[0] for row in rows}

    def add(self, key: str, vector: np.ndarray, prompt_hash: str) -> None:
        self._run(
            f"INSERT INTO {self.table} (key, namespace, embedder, prompt_hash, embedding) VALUES (%s, %s, %s, %s, %s::vector) "
            "ON CONFLICT (key, embedder) DO UPDATE SET embedding = excluded.embedding, "
            "prompt_hash = excluded.prompt_hash, added_at = now()",
            (key, self.namespace, self.embedder, prompt_hash, _literal(vector)),
        )

    def remove(self, key: str) -> None:
        self._run(f"DELETE FROM {self.table} WHERE key = %s", (key,))

    def exact(self, prompt_hash: str) -> str | None:
        """The newest entry of this prompt, whichever embedder indexed it (the module's doc)."""
        rows = self._run(
            f"SELECT key FROM {self.table} WHERE namespace = %s AND prompt_hash = %s ORDER BY added_at DESC LIMIT 1",
            (self.namespace, prompt_hash), fetch=True,
        )
        return rows[0][0] if rows else None

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        literal = _literal(vector)
        rows = self._run(
            f"SELECT key, 1 - (embedding <=> %s::vector) FROM {self.table} WHERE namespace = %s AND embedder = %s "
            "ORDER BY embedding <=> %s::vector LIMIT %s",
            (literal, self.namespace, self.embedder, literal, k), fetch=True,
        )
        return [(key, float(sim)) for key, sim in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
