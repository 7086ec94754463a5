"""Redis: a cache shared by every process and machine that reaches one Redis server.

Layout under the namespace ``{prefix}:`` (``?prefix=`` in the URL, default ``actioncache``):

* ``{p}:e:<key>``  a hash ``v`` (value), ``m`` (metadata JSON), ``c`` (created_at), ``x``
  (expires_at or empty), ``d`` (``_cache_duration_ms``, pre-read so a hit need not parse JSON).
  Redis itself removes it at ``expires_at`` (``PEXPIREAT``): an expired entry is never served.
* ``{p}:z``  a sorted set of every key, scored by ``expires_at`` (``+inf`` = never). It is the
  expiry index ``delete_expired`` walks, the set ``find`` scans with ``ZSCAN MATCH`` (only this
  namespace, never the whole keyspace) and what ``count`` reads.
* ``{p}:i:<json [field, value]>``  a set of keys per scalar top-level metadata value, so a
  metadata filter is a set intersection, not a scan.
* ``{p}:n``  a hash key -> "size\\nindex\\nindex...": the bookkeeping of each entry, kept apart
  from the entry so it survives Redis's own expiry and ``delete_expired`` can remove the
  entry's index memberships after Redis has dropped the entry.
* ``{p}:size``  the running total of value bytes (``size_bytes``).
* ``{p}:counters`` (``HINCRBYFLOAT``) and ``{p}:l:<name>`` leases (``SET NX PX``, released by a
  compare-and-delete script).

Consistency: every write (put, delete, cleanup) is one Lua script, so the entry, its indexes
and its bookkeeping change together and a reader never sees a half-written entry. Between
Redis dropping an expired entry and the next ``delete_expired`` the entry's index members are
stale; every read filters them out by their score in ``{p}:z`` (score <= now means gone), so
they cost memory until the cleanup, never a wrong answer. ``size_bytes`` counts values until
that cleanup. A single Redis (with or without replicas) is supported; Redis Cluster is not
(the scripts touch keys they compute).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import StoreURLError
from ._errors import StoreErrors
from .base import (BuiltEntries, Entry, LazyMetadata, corrupt_entry, glob_matches, glob_tokens, redact_secrets, redact_url,
                   select_keys, url_secrets)
from ._url import check_fields, check_userinfo, host_part, userinfo, whole_number

try:
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - exercised when the extra is missing
    raise ImportError(f"the redis package is not installed ({exc})") from exc

# Core metadata fields that are unique per entry: an index set per value would only waste memory.
_UNINDEXED = frozenset({"_cache_key", "_cache_created_at", "_cache_expires_at", "_cache_duration_ms"})
_MAX_INDEXED_STRING = 256
_BATCH = 500
_ENTRY_FIELDS = ("v", "m", "c", "x", "d")

# Removes one key's entry, index memberships and bookkeeping. Shared by put, delete and cleanup.
_FORGET = """
local function add_size(ns, delta)
  local ok = redis.pcall('INCRBY', ns .. ':size', delta)
  if type(ok) == 'table' and ok.err then redis.call('SET', ns .. ':size', math.max(delta, 0)) end
end
-- A record another writer garbled (not a size, odd index names) is skipped, never an error:
-- one bad record must not block replacing its key or fail cleanup for the whole store.
local function forget(ns, key)
  local rec = redis.pcall('HGET', ns .. ':n', key)
  if type(rec) == 'string' then
    local first = true
    for part in string.gmatch(rec, '[^\\n]+') do
      if first then
        local size = tonumber(part)
        if size and size == size and math.abs(size) < 2^53 then add_size(ns, -math.floor(size)) end
        first = false
      elseif string.sub(part, 1, 1) == '[' then
        redis.pcall('SREM', ns .. ':i:' .. part, key)
      end
    end
    redis.pcall('HDEL', ns .. ':n', key)
  end
  redis.call('ZREM', ns .. ':z', key)
  return redis.call('DEL', ns .. ':e:' .. key)
end
"""

# ARGV: ns, key, value, metadata, created, expires_s ('' = never), expires_ms, duration, index...
_PUT = _FORGET + """
local ns, key = ARGV[1], ARGV[2]
forget(ns, key)
local ek = ns .. ':e:' .. key
redis.call('HSET', ek, 'v', ARGV[3], 'm', ARGV[4], 'c', ARGV[5], 'x', ARGV[6], 'd', ARGV[8])
local size = string.len(ARGV[3])
local rec = tostring(size)
for i = 9, #ARGV do
  redis.call('SADD', ns .. ':i:' .. ARGV[i], key)
  rec = rec .. '\\n' .. ARGV[i]
end
redis.call('HSET', ns .. ':n', key, rec)
add_size(ns, size)
if ARGV[6] == '' then
  redis.call('ZADD', ns .. ':z', '+inf', key)
else
  redis.call('ZADD', ns .. ':z', ARGV[6], key)
  redis.call('PEXPIREAT', ek, ARGV[7])
end
return 1
"""

# ARGV: ns, key. Returns 1 when a live entry was deleted.
_DELETE = _FORGET + "return forget(ARGV[1], ARGV[2])"

# ARGV: ns, now, limit. Oldest expiry first; returns how many it removed.
_DELETE_EXPIRED = _FORGET + """
local ns = ARGV[1]
local keys = redis.call('ZRANGEBYSCORE', ns .. ':z', '-inf', ARGV[2], 'LIMIT', 0, ARGV[3])
for _, key in ipairs(keys) do forget(ns, key) end
return #keys
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PUBLISH', KEYS[1], 'released')
  return redis.call('DEL', KEYS[1])
end
return 0
"""



def to_redis_glob(pattern: str) -> str:
    """A Redis ``MATCH`` pattern that matches every key :func:`fnmatch.fnmatchcase` would (a superset).

    Redis matches bytes and escapes with a backslash; fnmatch matches characters and escapes
    with brackets. ``?`` and bracket sets become ``*`` because one character may be several
    UTF-8 bytes; literal characters Redis treats specially are backslash-escaped. The caller
    filters the candidates with the exact fnmatch semantics.
    """
    out: list[str] = []
    for kind, text in glob_tokens(pattern):
        if kind == "lit":
            out.append("\\" + text if text in "*?[]\\" else text)
        elif not (out and out[-1] == "*"):
            out.append("*")
    return "".join(out)


def _index_value(value: Any) -> str | None:
    """The canonical JSON of a metadata value worth an index set, or None."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        # A whole float equals exactly one int to metadata_matches (1.0 and 1, float(2**60) and
        # 2**60, never 2**60 + 1), so it shares that int's set; int(value) is exact.
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str) and len(value) <= _MAX_INDEXED_STRING:
        return json.dumps(value, ensure_ascii=False)
    return None


def _index_name(field: str, value: Any) -> str | None:
    encoded = _index_value(value)
    if encoded is None:
        return None
    # JSON text never holds a raw newline, which the bookkeeping record uses as separator.
    return "[" + json.dumps(field, ensure_ascii=False) + "," + encoded + "]"


def _send_hmget(conn: Any, name: str) -> Any:
    conn.send_packed_command(conn.pack_command("HMGET", name, *_ENTRY_FIELDS))
    return conn.read_response()


def _hint(exc: BaseException) -> str | None:
    if isinstance(exc, redis.AuthenticationError) or "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
        return "give the right user:password in the URL"
    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
        return "is redis-server running and reachable? start it or fix host/port in the URL"
    if "OOM" in str(exc):
        return "Redis is out of memory; raise maxmemory or use a volatile-* eviction policy"
    return None  # the driver's message, in the same line, is all there is to say


class RedisStore:
    """The ``CacheStore`` protocol over one Redis server (see the module docstring for the layout)."""

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", *, prefix: str = "actioncache",
                 retries: int = 1, shown_url: str | None = None, **client_options: Any) -> None:
        # shown_url: the URL as the user wrote it (from_url rewrites the query), for messages.
        shown = shown_url or url
        if not prefix or any(c in prefix for c in "\n\0*?[]\\"):
            raise StoreURLError(
                f"Redis prefix {prefix!r} must be non-empty text without newlines, NULs or glob characters; "
                "use letters, digits, ':', '-', '_' or '.'"
            )
        self.url = redact_url(shown)
        self._secrets = url_secrets(shown)  # scrubbed from the driver's messages, which may quote them
        self.prefix = prefix
        self._errors = StoreErrors(f"Redis at {self.url} (prefix {prefix!r})", redis.RedisError, _hint,
                                   secrets=self._secrets, one_line=True)
        client_options.setdefault("socket_connect_timeout", 5.0)
        client_options.setdefault("socket_timeout", 10.0)
        # A cache must fail fast: one quick retry covers a pooled connection that went stale
        # when the server restarted; a down server is an error within milliseconds.
        client_options.setdefault("retry", Retry(ExponentialBackoff(cap=0.1, base=0.01), int(retries)))
        try:
            # from_url only parses; nothing connects until the first command.
            self._client = redis.Redis.from_url(url, **client_options)
        except ValueError as exc:
            # The parser's message may quote a piece of the password (a '/', '#' or '?' in it
            # ends the host part early): scrub it, and do not chain the parser's exception.
            raise StoreURLError(
                f"bad Redis URL {self.url!r}: {redact_secrets(str(exc), self._secrets)}; use "
                "redis://host:port/db (a password holding '/', '#', '?' or '@' must be percent-encoded, e.g. %2F)"
            ) from None
        # redis-py reads the db from the path only when it is a number (else db 0, silently) and
        # hands an option it does not know to the connection, which fails on every command: both
        # would be a cache that quietly lives elsewhere or never works. Refuse them now.
        db_path = urlsplit(url).path.strip("/")
        if db_path and not db_path.isdigit():
            raise StoreURLError(f"Redis URL {self.url!r}: the path names the database by number "
                                f"(redis://host:port/0), not {redact_secrets(db_path, self._secrets)!r}")
        try:
            self._client.connection_pool.make_connection().disconnect()  # builds, does not connect
        except TypeError as exc:
            raise StoreURLError(f"Redis URL {self.url!r}: {redact_secrets(str(exc), self._secrets)}; options: "
                                f"prefix, retries, or a redis-py "
                                f"connection option (socket_timeout, health_check_interval...)") from None
        self._put = self._client.register_script(_PUT)
        self._delete = self._client.register_script(_DELETE)
        self._delete_expired = self._client.register_script(_DELETE_EXPIRED)
        self._release = self._client.register_script(_RELEASE)
        self._renew = self._client.register_script(_RENEW)
        self._zset = f"{prefix}:z"
        self._entry_prefix = f"{prefix}:e:"
        # get's fast path (see _hmget) needs a plain shared pool; a single-connection client or
        # redis-py's client-side cache goes through the client's command layer.
        pool = self._client.connection_pool
        plain = self._client.connection is None and getattr(pool, "cache", None) is None
        self._pool = pool if plain else None
        self._built = BuiltEntries()  # an unchanged entry hash gives back the same entry (a repeat hit's fast path)

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "redis", base_dir: Any = None) -> str:
        """``redis://[user:password@]host:port/db`` (``rediss://`` for TLS) from those fields."""
        given = check_fields("redis", fields, ("host", "port", "db", "user", "password"))
        port = whole_number("redis", "port", given.get("port", 6379), 1, 65535)
        db = whole_number("redis", "db", given.get("db", 0), 0)
        where = host_part("redis", given.get("host", "127.0.0.1"), port)
        return f"{'rediss' if scheme == 'rediss' else 'redis'}://{userinfo(given.get('user'), given.get('password'))}{where}/{db}"

    @classmethod
    def from_url(cls, url: str, **options: Any) -> "RedisStore":
        """``redis://[user:pass@]host:port/db?prefix=NAME&retries=N`` (other query options go to redis-py)."""
        parts = urlsplit(url)
        check_userinfo("Redis", url, parts)
        query = parse_qsl(parts.query, keep_blank_values=True)
        ours = {name: value for name, value in query if name in ("prefix", "retries")}
        theirs = [(name, value) for name, value in query if name not in ours]
        if "prefix" in ours:
            options.setdefault("prefix", ours["prefix"])
        if "retries" in ours:
            try:
                options.setdefault("retries", int(ours["retries"]))
            except ValueError:
                raise StoreURLError(f"retries={ours['retries']!r} in {redact_url(url)!r} must be an integer") from None
        client_url = urlunsplit(parts._replace(query=urlencode(theirs)))
        return cls(client_url, shown_url=url, **options)

    # --- plumbing -----------------------------------------------------------------------

    def _e(self, key: str) -> str:
        return self._entry_prefix + key

    def _live_score_floor(self) -> float:
        # Members scored at or before now have been (or are being) dropped by Redis, by its clock.
        return self.server_time()

    # --- protocol -----------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        # The hit path: one HMGET, errors caught without a context manager (a try costs nothing
        # until it raises; a with block is two calls per read).
        try:
            if self._pool is None:
                row = self._client.hmget(self._entry_prefix + key, _ENTRY_FIELDS)
            else:
                row = self._hmget(self._entry_prefix + key)
        except redis.ResponseError as exc:
            if "WRONGTYPE" not in str(exc):
                raise self._errors.error("get", exc) from exc
            return corrupt_entry(key, "another writer stored a non-hash under its Redis key")
        except redis.RedisError as exc:
            raise self._errors.error("get", exc) from exc
        value, meta, created, expires, duration = row
        if value is None or meta is None:
            return None
        built = self._built.get(key)  # the entry built for this very row (BuiltEntries)
        if built is not None and built[0] == row:
            return built[1]
        try:
            preset = {"_cache_duration_ms": float(duration)} if duration else None
            return self._built.keep(key, row, Entry(key, value, LazyMetadata(meta, preset), float(created or 0.0),
                                                    float(expires) if expires else None))
        except ValueError as exc:  # a time field another writer garbled
            return corrupt_entry(key, f"its stored times are malformed ({exc})")

    def _hmget(self, name: str) -> Any:
        """``HMGET`` of an entry's fields, below redis-py's command layer (its per-command
        bookkeeping costs a third of a round trip on loopback), with the same steps as that layer.

        One pooled connection for the call (the pool's checkout reconnects a connection that was
        dropped or left with unread data); a connection error or timeout disconnects it and
        retries under the connection's retry policy, as redis-py's own commands do. redis-py's
        connection disconnects itself on any failure while sending or reading, and so does this
        on anything but an error reply: a connection never goes back to the pool with a reply
        pending, so a reply only ever answers its own command.
        """
        pool = self._pool
        conn = pool.get_connection()
        try:
            return conn.retry.call_with_retry(lambda: _send_hmget(conn, name), lambda _error: conn.disconnect())
        except redis.ResponseError:
            raise  # a whole reply, read: the connection is clean
        except BaseException:
            conn.disconnect()
            raise
        finally:
            pool.release(conn)

    def _put_args(self, entry: Entry) -> list[Any]:
        meta = dict(entry.metadata)
        expires = entry.expires_at
        duration = meta.get("_cache_duration_ms")
        indexes = [name for field, value in meta.items()
                   if field not in _UNINDEXED and (name := _index_name(field, value)) is not None]
        return [
            self.prefix,
            entry.key,
            bytes(entry.value),
            json.dumps(meta, separators=(",", ":"), ensure_ascii=False),
            repr(float(entry.created_at)),
            "" if expires is None else repr(float(expires)),
            "" if expires is None else str(min(math.ceil(expires * 1000), 2**62)),
            repr(float(duration)) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else "",
            *indexes,
        ]

    def put(self, entry: Entry) -> None:
        with self._errors("put"):
            self._put(keys=[], args=self._put_args(entry))

    def delete(self, key: str) -> bool:
        with self._errors("delete"):
            return bool(self._delete(keys=[], args=[self.prefix, key]))

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        deleted = 0
        with self._errors("delete"):
            for start in range(0, len(keys), _BATCH):
                pipe = self._client.pipeline(transaction=False)
                for key in keys[start:start + _BATCH]:
                    self._delete(keys=[], args=[self.prefix, key], client=pipe)
                deleted += sum(int(n) for n in pipe.execute())
        return deleted

    def _scan(self, pattern: str | None) -> Iterator[tuple[str, float]]:
        match = to_redis_glob(pattern) if pattern is not None else None
        for member, score in self._client.zscan_iter(self._zset, match=match, count=1000):
            yield member.decode("utf-8", "surrogatepass"), score

    def _indexed_candidates(self, metadata_filter: Mapping[str, Any]) -> tuple[list[str] | None, bool]:
        """Live keys in every index set the filter names, and whether the sets decide the filter alone."""
        names = [self.prefix + ":i:" + name for field, wanted in metadata_filter.items()
                 if field not in _UNINDEXED and (name := _index_name(field, wanted)) is not None]
        if not names:
            return None, False
        exact = len(names) == len(metadata_filter)
        members = self._client.sinter(names)
        if not members:
            return [], exact
        keys = [m.decode("utf-8", "surrogatepass") for m in members]
        floor = self._live_score_floor()
        scores = self._client.zmscore(self._zset, keys)
        return [k for k, s in zip(keys, scores) if s is not None and s > floor], exact

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        with self._errors("find"):
            candidates, exact = self._indexed_candidates(metadata_filter) if metadata_filter else (None, False)
            if candidates is None:
                floor = self._live_score_floor()
                # ZSCAN may return a member twice while the set is being resized: dedupe.
                candidates = list(dict.fromkeys(k for k, s in self._scan(pattern) if s > floor))
            if pattern is not None:
                candidates = [k for k in candidates if glob_matches(pattern, k)]
            if not metadata_filter or exact:
                return candidates if limit is None else candidates[:limit]
            # Fields without an index set (nested values, long strings, per-entry core fields)
            # are checked on the stored metadata.
            return select_keys(zip(candidates, self._metadata_of(candidates)), None, metadata_filter, limit)

    def _metadata_of(self, keys: list[str]) -> Iterator[bytes | None]:
        for start in range(0, len(keys), _BATCH):
            pipe = self._client.pipeline(transaction=False)
            for key in keys[start:start + _BATCH]:
                pipe.hget(self._e(key), "m")
            yield from pipe.execute()

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        # Scripts block the server while they run: work in bounded batches.
        deleted = 0
        with self._errors("cleanup"):
            while limit is None or deleted < limit:
                batch = _BATCH if limit is None else min(_BATCH, int(limit) - deleted)
                n = int(self._delete_expired(keys=[], args=[self.prefix, repr(float(now)), batch]))
                deleted += n
                if n < batch:
                    break
        return deleted

    def count(self) -> int:
        with self._errors("count"):
            return int(self._client.zcount(self._zset, f"({self._live_score_floor()!r}", "+inf"))

    def size_bytes(self) -> int:
        with self._errors("size"):
            return max(0, int(self._client.get(f"{self.prefix}:size") or 0))

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        if not deltas:
            return
        with self._errors("counters"):
            pipe = self._client.pipeline(transaction=True)
            for name, delta in deltas.items():
                pipe.hincrbyfloat(f"{self.prefix}:counters", name, float(delta))
            pipe.execute()

    def counters(self, prefix: str = "") -> dict[str, float]:
        with self._errors("counters"):
            raw = self._client.hgetall(f"{self.prefix}:counters")
        out: dict[str, float] = {}
        for name, value in raw.items():
            text = name.decode("utf-8", "surrogatepass")
            if text.startswith(prefix):
                try:
                    out[text] = float(value)
                except ValueError:  # garbled by another writer: skipped rather than failing stats()
                    continue
        return out

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        token = uuid.uuid4().hex
        with self._errors("lease"):
            # Redis's own clock times the lease, so clients on machines with skewed clocks agree.
            ok = self._client.set(f"{self.prefix}:l:{name}", token, nx=True, px=max(1, int(ttl_s * 1000)))
        return token if ok else None

    def server_time(self) -> float:
        """Redis's clock (``TIME``): the one clock expiry is judged by (see the core)."""
        with self._errors("time"):
            seconds, micros = self._client.time()
        return seconds + micros / 1e6

    def renew_lease(self, name: str, token: str, ttl_s: float) -> bool:
        with self._errors("lease"):
            return bool(self._renew(keys=[f"{self.prefix}:l:{name}"], args=[token, max(1, int(ttl_s * 1000))]))

    def wait_lease(self, name: str, timeout_s: float) -> None:
        """Block until the lease on ``name`` is released (a message on its channel) or ``timeout_s``
        passes: waiters are told when the holder's value has landed instead of polling for it."""
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        try:
            with self._errors("lease"):
                pubsub.subscribe(f"{self.prefix}:l:{name}")
                if self._client.exists(f"{self.prefix}:l:{name}"):  # released before we listened: no wait
                    end = time.monotonic() + timeout_s
                    while (left := end - time.monotonic()) > 0:
                        if pubsub.get_message(timeout=left) is not None:  # None: the subscribe reply, or time
                            break
        finally:
            pubsub.close()

    def release_lease(self, name: str, token: str) -> None:
        with self._errors("lease"):
            self._release(keys=[f"{self.prefix}:l:{name}"], args=[token])

    def drop(self) -> None:
        """Delete every Redis key of this store's prefix. For tests and for retiring a cache."""
        with self._errors("drop"):
            batch: list[bytes] = []
            for name in self._client.scan_iter(match=self.prefix + ":*", count=1000):
                batch.append(name)
                if len(batch) >= _BATCH:
                    self._client.delete(*batch)
                    batch = []
            if batch:
                self._client.delete(*batch)

    def close(self) -> None:
        try:
            self._client.close()
        except redis.RedisError:
            pass
