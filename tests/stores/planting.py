"""Plant malformed records in a store through its own native client, as a second writer with
access to a shared store (or a damaged file) could. Used by the planted-data conformance tests.

Kinds:

* ``times``: the entry's created_at/expires_at are not times (text where the schema allows it,
  NaN where the column is typed);
* ``metadata``: the entry's metadata is not a JSON object (malformed JSON text where the schema
  allows it, a JSON array where it insists on valid JSON);
* ``bookkeeping``: the store's side records for the key are garbage (Redis's per-key record and
  size counter; a text value in the SQL counters table).

Each planter returns False when the backend's schema cannot hold that kind of garbage at all.
"""

from __future__ import annotations

from typing import Any, Callable

NOW = 1_900_000_000.0


def _sql_row(conn_execute: Callable[..., Any], key: str, kind: str, *, text_ok: bool = True) -> bool:
    if kind == "times":
        created, expires, meta = ("soon", "later", "{}") if text_ok else (float("nan"), float("nan"), "{}")
    elif kind == "metadata":
        created, expires, meta = NOW, NOW + 3600, ("{not json" if text_ok else "[1, 2]")
    elif kind == "bookkeeping":
        conn_execute("INSERT INTO counters(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                     ("stats:hits", "lots" if text_ok else float("nan")))
        created, expires, meta = NOW, NOW + 3600, "{}"
    else:
        raise ValueError(kind)
    conn_execute("DELETE FROM entries WHERE key = ?", (key,))
    conn_execute("INSERT INTO entries(key, value, metadata, created_at, expires_at, action) VALUES (?, ?, ?, ?, ?, ?)",
                 (key, b"j1", meta, created, expires, "act"))
    return True


def plant(store: Any, key: str, kind: str) -> bool:
    name = type(store).__name__
    if name == "NearCache":  # plant in the store behind it (a write there reaches the near cache or not)
        return plant(store.store, key, kind)
    if name == "MemoryStore":
        from actioncache.stores.base import Entry

        if kind == "times":
            store._entries[key] = Entry(key, b"j1", {}, "soon", "later")
        elif kind == "metadata":
            store._entries[key] = Entry(key, b"j1", ["not", "an", "object"], NOW, NOW + 3600)  # type: ignore[arg-type]
        else:
            store._counters["stats:hits"] = "lots"
            store._entries[key] = Entry(key, b"j1", {}, NOW, NOW + 3600)
        return True
    if name in ("SQLiteStore", "TursoStore"):
        conn = store._conn()
        return _sql_row(lambda sql, params: conn.execute(sql, params), key, kind)
    if name == "BlobSQLiteStore":
        def work(local: Any) -> bool:
            conn = local._conn()
            return _sql_row(lambda sql, params: conn.execute(sql, params), key, kind)

        return store._write(work, {key: None})
    if name == "DuckDBStore":
        return store._run("plant", lambda cur: _sql_row(lambda sql, params: cur.execute(sql, list(params)), key, kind,
                                                       text_ok=False), write=True)
    if name == "PostgresStore":
        def pg(sql: str, params: tuple[Any, ...]) -> None:
            sql = sql.replace("?", "%s").replace("entries", store._names["entries"].as_string(None))
            sql = sql.replace("counters", store._names["counters"].as_string(None))
            store._run("plant", lambda c: c.execute(sql, params))

        return _sql_row(pg, key, kind, text_ok=False)
    if name == "RedisStore":
        from actioncache.stores.redis import bucket_of

        client, tag = store.client, f"{{{store.prefix}|{bucket_of(key)}}}"  # the layout in stores/redis.py
        if kind == "bookkeeping":
            store.put(_entry(key))
            client.hset(f"{tag}:n", key, "garbage\n[not json\nx")
            client.set(f"{tag}:size", "not a number")
            return True
        fields = {"v": b"j1", "m": "{}", "c": repr(NOW), "x": repr(NOW + 3600), "d": ""}
        if kind == "times":
            fields.update(c="soon", x="later")
        else:
            fields.update(m="{not json")
        client.delete(f"{tag}:e:{key}")
        client.hset(f"{tag}:e:{key}", mapping=fields)
        client.zadd(f"{tag}:z", {key: NOW + 3600})
        return True
    if name == "FirestoreStore":
        from actioncache.stores.firestore import doc_id

        if kind == "bookkeeping":
            store.put(_entry(key))
            store._col("-counters").document(doc_id("stats:hits")).set({"name": "stats:hits", "value": "lots"})
            return True
        doc = {"key": key, "value": b"j1", "metadata": "{}", "created_at": NOW, "expires_at": NOW + 3600}
        if kind == "times":
            doc.update(created_at="soon", expires_at="later")
        else:
            doc.update(metadata="{not json")
        store._col().document(doc_id(key)).set(doc)
        return True
    raise AssertionError(f"no planter for {name}")


def _entry(key: str) -> Any:
    from actioncache.stores.base import Entry

    return Entry(key, b"j1", {"_cache_action": "act"}, NOW, NOW + 3600)
