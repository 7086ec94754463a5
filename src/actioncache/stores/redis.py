"""Redis (and Valkey, Redis Cluster, Sentinel): a cache shared by every process and machine that
reaches the server. URLs and clients: ``stores/redis_connect.py``.

Layout. A namespace (``?prefix=NAME``, default ``actioncache``) is cut into 64 buckets; a key's
bucket is ``crc32(key) % 64``, and every Redis key of a bucket carries the hash tag
``{NAME|BUCKET}``, so on a Redis Cluster a bucket lives in one slot and everything that must
change together (an entry, its index memberships, its bookkeeping, the lease that fences its
write) is in one slot: every script touches one slot, and nothing sends a multi-key command
across slots. Buckets spread a namespace over the cluster's masters. One Redis or Sentinel keeps
the same layout (a namespace moves between the three as it is).

* ``{p|b}:e:<key>``  a hash ``v`` (value), ``m`` (metadata JSON), ``c`` (created_at), ``x``
  (expires_at or empty), ``d`` (``_cache_duration_ms``, pre-read so a hit need not parse JSON).
  Redis itself removes it at ``expires_at`` (``PEXPIREAT``): an expired entry is never served.
* ``{p|b}:z``  a sorted set of the bucket's keys scored by ``expires_at`` (``+inf`` = never): the
  expiry index ``delete_expired`` walks, what ``find`` scans with ``ZSCAN MATCH`` (never the
  keyspace) and what ``count`` reads.
* ``{p|b}:i:<json [field, value]>``  a set of keys per scalar top-level metadata value, so a
  metadata filter is a set intersection per bucket, not a scan.
* ``{p|b}:n``  a hash key -> "size\\nindex\\nindex...": each entry's bookkeeping, apart from the
  entry so it outlives Redis's own expiry and ``delete_expired`` can still remove the index
  memberships of an entry Redis dropped.
* ``{p|b}:size``  the bucket's value bytes (``size_bytes`` adds the buckets up).
* ``{p|b}:l:<name>`` leases and ``{p|b}:fence`` their fencing counter: a lease named
  ``lease:<key>`` (the core's name for the lease that guards entry ``<key>``) lives in that
  entry's bucket, so a fenced write checks it in the same script; other names by their own bucket.
* ``{p|b}:r:<name>``  a rate limiter's log: its grant times (``take_rate_slot``).
* ``{p|counters}:counters``  the shared counters (one hash).

Namespaces never overlap: a key belongs to namespace ``p`` exactly when its hash tag is
``{p|<bucket>}``, and a prefix may not hold ``}``: ``drop()`` of ``c`` never touches ``c:sub``.

Consistency: every write (put, delete, cleanup, lease) is one Lua script in one slot, so the entry,
its indexes and its bookkeeping change together and a reader never sees a half-written entry.
Between Redis dropping an expired entry and the next ``delete_expired`` the entry's index members
are stale; every read filters them out by their score in ``{p|b}:z`` (score <= now: gone), so they
cost memory until the cleanup, never a wrong answer. ``size_bytes`` counts values until then.

Every driver call goes through the store's circuit breaker (``stores/breaker.py``) with short
timeouts (``redis_connect``): a hung server costs the first calls one timeout each, then is skipped.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import uuid
import zlib
from collections import defaultdict
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import StoreError, StoreURLError
from ._errors import StoreErrors
from ._url import check_fields, check_userinfo, host_part, positive_number, userinfo, whole_number
from .base import (
    BuiltEntries,
    Entry,
    LazyMetadata,
    corrupt_entry,
    glob_matches,
    glob_tokens,
    redact_secrets,
    redact_url,
    select_keys,
    url_secrets,
)
from .breaker import CircuitBreaker, breaker_health, breaker_options
from .near import LISTEN_POLL_S, ListeningFeed, NearCache, near_options
from .redis_connect import (
    DEFAULT_READ_TIMEOUT_S,
    DEFAULT_WRITE_TIMEOUT_S,
    SCHEMES,
    NoMasterNamedError,
    Target,
    make_client,
    parse_target,
)
from .registry import Targets

try:
    import redis
    from redis.exceptions import RedisClusterException
except ImportError as exc:  # pragma: no cover - exercised when the extra is missing
    raise ImportError(f"the redis package is not installed ({exc})") from exc

__all__ = ["BUCKETS", "RedisStore", "bucket_of", "to_redis_glob"]

log = logging.getLogger("actioncache")

BUCKETS = 64
# A read that timed out (0.2 s by default) opens the breaker at once: the same call's write would
# otherwise wait for a hung server too.
REDIS_BREAKER = {"timeouts": 1}
# The core's lease on an entry is named "lease:" + the entry's key (_flight.LEASE_PREFIX): such a
# lease lives in the entry's bucket, so put_fenced checks it in the script that writes the entry.
_ENTRY_LEASE = "lease:"

# Core metadata fields that are unique per entry: an index set per value would only waste memory.
_UNINDEXED = frozenset({"_cache_key", "_cache_created_at", "_cache_expires_at", "_cache_duration_ms"})
_MAX_INDEXED_STRING = 256
# The index cap (docs/backends.md, "Metadata indexes"): an entry whose scalar metadata would need
# more index sets than this, or index names longer than this in all, gets none; it joins its
# bucket's ``u`` set, which every metadata filter also reads and checks on the stored metadata.
# A put's script touches at most this many index sets, so no entry can block the server for long.
MAX_INDEXED_FIELDS = 64
MAX_INDEXED_BYTES = 16 * 1024
_BATCH = 500
_ENTRY_FIELDS = ("v", "m", "c", "x", "d")
_DRIVER_ERRORS = (redis.RedisError, RedisClusterException)
# Sentinel (docs/backends.md): at most this often a store asks the Sentinels which node is the master
# and drops its pooled connections to any other node (after a failure to ask: this long).
SENTINEL_RECHECK_S = 1.0
SENTINEL_RECHECK_FAILED_S = 5.0
_MULTI_KEY = frozenset({"sinter"})

# Removes one key's entry, index memberships and bookkeeping, and checks a bucket's keys before a
# write. Shared by the writing scripts. ``tag`` is the bucket's "{prefix|b}"; every key named here
# is in the bucket's slot.
#
# Redis never rolls a script back: the writes made before a command fails stay. So every script
# checks the type of every key it will write BEFORE its first write (``repair``): a bookkeeping key
# of the wrong type (planted by another writer or tool) is garbage and is deleted, and a garbled
# expiry index ``z`` is rebuilt from the records in ``n``. After that no command can fail on a
# type, and ``put`` writes the entry hash last, after its indexes, record and expiry index.
_FORGET = """
local function add_size(tag, delta)
  local ok = redis.pcall('INCRBY', tag .. ':size', delta)
  if type(ok) == 'table' and ok.err then redis.call('SET', tag .. ':size', math.max(delta, 0)) end
end
-- Deletes ``name`` unless it is absent or a ``kind``; true when it deleted it.
local function want(name, kind)
  local t = redis.call('TYPE', name)
  if type(t) == 'table' then t = t['ok'] end
  if t ~= 'none' and t ~= kind then redis.call('DEL', name) return true end
  return false
end
-- A garbled set rebuilt from the records in ``n``: the keys whose record holds the line ``line``.
local function rebuild_set(tag, name, line)
  local rows = redis.call('HGETALL', tag .. ':n')
  for i = 1, #rows, 2 do
    if string.find('\\n' .. rows[i + 1] .. '\\n', '\\n' .. line .. '\\n', 1, true) then
      redis.call('SADD', name, rows[i])
    end
  end
end
-- The bucket's bookkeeping keys, and the index sets ARGV[from..] names (nil: none), made safe to
-- write. What a garbled key held is rebuilt from ``n``: an index set or ``u`` from the records
-- that list it, ``z`` from every record, each key scored by its entry's expiry (0 when Redis
-- already dropped the entry, so the next cleanup forgets its record).
local function repair(tag, from)
  want(tag .. ':n', 'hash')
  want(tag .. ':size', 'string')
  if want(tag .. ':u', 'set') then rebuild_set(tag, tag .. ':u', 'u') end
  if want(tag .. ':z', 'zset') then
    local keys = redis.call('HKEYS', tag .. ':n')
    for _, key in ipairs(keys) do
      local x = redis.pcall('HGET', tag .. ':e:' .. key, 'x')
      local score = 0
      if type(x) == 'string' then
        if x == '' then score = '+inf' elseif tonumber(x) then score = x end
      end
      redis.call('ZADD', tag .. ':z', score, key)
    end
  end
  if from then
    for i = from, #ARGV do
      if want(tag .. ':i:' .. ARGV[i], 'set') then rebuild_set(tag, tag .. ':i:' .. ARGV[i], ARGV[i]) end
    end
  end
end
-- A record another writer garbled (not a size, odd index names) is skipped, never an error:
-- one bad record must not block replacing its key or fail cleanup for the whole store.
local function forget(tag, key)
  local rec = redis.pcall('HGET', tag .. ':n', key)
  if type(rec) == 'string' then
    local first = true
    for part in string.gmatch(rec, '[^\\n]+') do
      if first then
        local size = tonumber(part)
        if size and size == size and math.abs(size) < 2^53 then add_size(tag, -math.floor(size)) end
        first = false
      elseif string.sub(part, 1, 1) == '[' then
        redis.pcall('SREM', tag .. ':i:' .. part, key)
      elseif part == 'u' then
        redis.pcall('SREM', tag .. ':u', key)
      end
    end
    redis.pcall('HDEL', tag .. ':n', key)
  end
  redis.call('ZREM', tag .. ':z', key)
  -- Near caches (stores/near.py) drop their copy of the key when this reaches them.
  redis.call('PUBLISH', (string.gsub(tag, '|[^|]*}$', '|near}')), key)
  return redis.call('DEL', tag .. ':e:' .. key)
end
-- ARGV[o+1..]: tag, key, value, metadata, created, expires_s ('' = never), expires_ms, duration,
-- unindexed ('1': the entry's metadata is over the index cap, it joins the bucket's ``u`` set
-- instead), index... The record is joined once (linear in the number of indexes).
local function put(o)
  local tag, key = ARGV[o + 1], ARGV[o + 2]
  -- maxmemory: Redis refuses a command that may grow memory only while a script has written
  -- nothing yet, so the first write is one of those (it changes nothing): over the limit the put
  -- stops here, whole, as every other client's writes do (a delete or cleanup still runs).
  local room = redis.pcall('INCRBY', tag .. ':size', 0)
  if type(room) == 'table' and room.err and string.find(room.err, 'OOM', 1, true) then
    return redis.error_reply(room.err)
  end
  repair(tag, o + 10)
  forget(tag, key)
  local ek = tag .. ':e:' .. key
  local size = string.len(ARGV[o + 3])
  local rec = {tostring(size)}
  if ARGV[o + 9] == '1' then
    redis.call('SADD', tag .. ':u', key)
    rec[#rec + 1] = 'u'
  end
  for i = o + 10, #ARGV do
    redis.call('SADD', tag .. ':i:' .. ARGV[i], key)
    rec[#rec + 1] = ARGV[i]
  end
  redis.call('HSET', tag .. ':n', key, table.concat(rec, '\\n'))
  add_size(tag, size)
  redis.call('ZADD', tag .. ':z', ARGV[o + 6] == '' and '+inf' or ARGV[o + 6], key)
  redis.call('HSET', ek, 'v', ARGV[o + 3], 'm', ARGV[o + 4], 'c', ARGV[o + 5], 'x', ARGV[o + 6], 'd', ARGV[o + 8])
  if ARGV[o + 6] ~= '' then redis.call('PEXPIREAT', ek, ARGV[o + 7]) end
end
"""

# KEYS: entry, z, n, size (the slot). ARGV: see put().
_PUT = _FORGET + "local failed = put(0) if failed then return failed end return 1"

# KEYS: entry, z, n, size, lease. ARGV: token, then put()'s. Writes only while ``token`` holds the lease.
_PUT_FENCED = _FORGET + """
local lease = redis.pcall('GET', KEYS[5])
if lease ~= ARGV[1] then return 0 end
local failed = put(1)
if failed then return failed end
return 1
"""

# KEYS: lease. ARGV: token. Whether the token holds the lease (a cluster's check before a write in
# another slot).
_HOLDS = """
return redis.call('GET', KEYS[1]) == ARGV[1] and 1 or 0
"""

# KEYS: z, n, size (the slot). ARGV: tag, key... Returns how many live entries it deleted.
_DELETE = _FORGET + """
repair(ARGV[1], nil)
local n = 0
for i = 2, #ARGV do n = n + forget(ARGV[1], ARGV[i]) end
return n
"""

# KEYS: z (the slot). ARGV: tag, now, key... Forgets the keys still expired by now (a key written
# again since it was listed keeps its new entry); returns how many it removed.
_DELETE_EXPIRED = _FORGET + """
repair(ARGV[1], nil)
local n = 0
for i = 3, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) <= tonumber(ARGV[2]) then forget(ARGV[1], ARGV[i]); n = n + 1 end
end
return n
"""

# KEYS: lease, fence. ARGV: random hex, ttl ms. A new grant's token is "<fence number>:<hex>"; the
# number grows with every grant in the bucket, so with every grant of this name too.
_ACQUIRE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local fence = redis.pcall('INCR', KEYS[2])
if type(fence) == 'table' then  -- garbled by another writer: start again (tokens stay unique by their hex)
  redis.call('DEL', KEYS[2])
  fence = redis.call('INCR', KEYS[2])
end
local token = fence .. ':' .. ARGV[1]
redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
return token
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

# KEYS: z, n, size (the slot). ARGV: tag, then index set names (without the tag) to check as sets.
# A read that met a key of the wrong type (WRONGTYPE) repairs the bucket with it and reads again.
_REPAIR = _FORGET + """
repair(ARGV[1], 2)
return 1
"""

# KEYS: the counters hash. ARGV: name, delta, name, delta... (a garbled counter starts again).
_ADD_COUNTERS = """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then redis.call('DEL', KEYS[1]) end
for i = 1, #ARGV, 2 do
  local ok = redis.pcall('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1])
  if type(ok) == 'table' and ok.err then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 1
"""


# KEYS: the limiter's log (a sorted set of grant times, ms by the server's clock). ARGV: limit,
# window ms, a unique member. 0 when a grant was taken, else the ms until the oldest one leaves.
_TAKE_RATE_SLOT = """
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
local window = tonumber(ARGV[2])
if redis.call('TYPE', KEYS[1])['ok'] ~= 'zset' then redis.call('DEL', KEYS[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window))
  return '0'
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return tostring(math.max(1, tonumber(oldest[2]) + window - now))
"""


def bucket_of(key: str) -> int:
    """The bucket of a key: stable across processes, machines and versions (crc32 of its UTF-8)."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % BUCKETS


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
    if isinstance(exc, NoMasterNamedError):
        return ("the Sentinels name no master now (it is down, or its failover has not promoted a replica yet): "
                "calls run uncached until they name one")
    if type(exc).__name__ == "MasterNotFoundError":
        return ("the Sentinels did not name a master by that name: check the name after the Sentinels in the URL "
                "(redis-cli -p SENTINEL_PORT sentinel masters lists the names they know) and that they are "
                "running and reachable")
    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
        return ("is redis-server running, reachable and answering? start it or fix host/port in the URL "
                "(timeouts: socket_connect_timeout, socket_timeout)")
    if _slot_moving(exc):
        return ("the key's cluster slot is being migrated (resharding): this call ran uncached, other keys are "
                "unaffected; it ends when the migration does")
    if isinstance(exc, (RedisClusterException, redis.exceptions.ClusterError)):
        return "the cluster is failing over or not all slots are served; calls run uncached until it is whole"
    if "OOM" in str(exc) or "maxmemory" in str(exc) or type(exc).__name__ == "OutOfMemoryError":
        return "Redis is out of memory; raise maxmemory or use a volatile-* eviction policy"
    return None  # the driver's message, in the same line, is all there is to say


def _single_hint(exc: BaseException) -> str | None:
    """:func:`_hint` for a ``redis://`` URL: a MOVED reply means the server is a cluster node."""
    if isinstance(exc, redis.exceptions.MovedError) or "MOVED" in str(exc):
        return ("this server is a node of a Redis Cluster: open it as redis+cluster://host:port "
                "(any node of the cluster)")
    return _hint(exc)


def _without_client_repr(text: str) -> str:
    """redis-py's Sentinel errors append the repr of every client they tried (``: <redis.client.Redis(
    <...ConnectionPool(<...Connection(...)>)>)>``): unreadable, and nothing a user can act on."""
    cut = text.find(" : <redis.client.")
    return text if cut < 0 else text[:cut]


def _slot_moving(exc: BaseException) -> bool:
    """A Redis Cluster slot in migration (resharding): a redirect (MOVED, ASK), a multi-key script
    whose keys are split between the two nodes for now (TRYAGAIN), or redis-py giving up after
    following them (its own retries: "TTL exhausted"), or one slot missing from its map. The nodes
    answered: that bucket is skipped for the call, the cluster is not failing."""
    if isinstance(exc, (redis.exceptions.TryAgainError, redis.exceptions.AskError, redis.exceptions.MovedError,
                        redis.exceptions.SlotNotCoveredError)):
        return True
    text = str(exc)
    return "TTL exhausted" in text or text.startswith(("TRYAGAIN", "ASK ", "MOVED "))


def _server_down(exc: BaseException) -> bool:
    """A failure that says the server is unreachable, hung or failing over (the breaker counts it);
    an error reply (WRONGTYPE, NOSCRIPT, OOM) means the server answered, and so does a slot in
    migration (:func:`_slot_moving`): one bucket's trouble never opens the breaker for the cluster."""
    if _slot_moving(exc):
        return False
    return not isinstance(exc, redis.ResponseError) or isinstance(exc, redis.exceptions.ClusterError) \
        or "CLUSTERDOWN" in str(exc) or "LOADING" in str(exc)


class RedisStore:
    """The ``CacheStore`` protocol over Redis, Valkey, a Redis Cluster or a Sentinel-managed master
    (see the module docstring for the layout)."""

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", *, prefix: str = "actioncache",
                 retries: int = 1, shown_url: str | None = None, breaker: Mapping[str, float] | None = None,
                 read_timeout_s: float | str | None = None, write_timeout_s: float | str | None = None,
                 **client_options: Any) -> None:
        # shown_url: the URL as the user wrote it (from_url rewrites the query), for messages.
        shown = shown_url or url
        if not isinstance(prefix, str) or not prefix or any(c in prefix for c in "\n\0*?[]\\{}"):
            raise StoreURLError(
                f"Redis prefix {prefix!r} must be non-empty text without newlines, NULs, braces or glob characters; "
                "use letters, digits, ':', '-', '_' or '.'"
            )
        self.url = redact_url(shown)
        self._secrets = url_secrets(shown)  # scrubbed from the driver's messages, which may quote them
        self.prefix = prefix
        where = f"Redis at {self.url} (prefix {prefix!r})"
        options: dict[str, Any] = dict(breaker) if breaker is not None else breaker_options({}, {}, where, **REDIS_BREAKER)
        self.breaker = CircuitBreaker(where, **options) if options else None
        self._target: Target = parse_target(url, self.url, self._secrets)
        self.topology = self._target.topology
        self._errors = StoreErrors(where, _DRIVER_ERRORS, _single_hint if self.topology == "single" else _hint,
                                   secrets=self._secrets, one_line=True, breaker=self.breaker, down=_server_down,
                                   clean=_without_client_repr)
        # Sentinel: when to ask the Sentinels again which node is the master (recheck_master); never
        # for the other topologies.
        self._recheck_due: float | None = time.monotonic() + SENTINEL_RECHECK_S if self.topology == "sentinel" else None
        if self.topology == "sentinel" and self.breaker is not None:
            # After an episode (the master hung or was cut off, so a failover may have happened
            # meanwhile) the pooled connections may lead to a node that is no longer the master.
            self.breaker.on_close = self.recheck_master
        self._retries = int(retries)
        if self._retries < 0:
            raise StoreURLError(f"Redis URL {self.url!r}: retries={retries!r} must be 0 or more "
                                "(quick retries on a dropped connection; default 1)")
        # Two timeouts (redis-py's socket_timeout, given, sets both): the hit path's read, short, as
        # it decides what a hung server costs a call; every other command's (writes of big values,
        # scripts, scans), longer. Each has a client (a connection pool) of its own.
        given = client_options.pop("socket_timeout", None)
        self.read_timeout_s = positive_number(read_timeout_s if read_timeout_s is not None else
                                              given if given is not None else DEFAULT_READ_TIMEOUT_S,
                                              "read_timeout_s", where)
        self.write_timeout_s = positive_number(write_timeout_s if write_timeout_s is not None else
                                               given if given is not None else DEFAULT_WRITE_TIMEOUT_S,
                                               "write_timeout_s", where)
        self._client_options = client_options
        if self.topology == "single":
            # redis-py reads the db from the path only when it is a number (else db 0, silently): a
            # cache that would quietly live elsewhere. Refuse it now.
            db_path = urlsplit(url).path.strip("/")
            if db_path and not db_path.isdigit():
                raise StoreURLError(f"Redis URL {self.url!r}: the path names the database by number "
                                    f"(redis://host:port/0), not {redact_secrets(db_path, self._secrets)!r}")
        self._lock = threading.Lock()
        self._client: Any = None
        self._reader: Any = None  # the client of get (the hit path): read_timeout_s
        self._pool: Any = None
        # A cluster's hit path: per bucket, the pool of the node serving its slot (None: ask the client).
        self._bucket_pools: list[Any] = [None] * BUCKETS
        if self.topology != "cluster":
            self._open_client()  # parses only: nothing connects until the first command
        # A cluster client reads the slot map when it is made: on first use, so opening the store
        # never waits for (or fails on) a cluster that is down.
        self._tags = [f"{{{prefix}|{b}}}" for b in range(BUCKETS)]
        self._entry_prefixes = [tag + ":e:" for tag in self._tags]
        self._counters_key = f"{{{prefix}|counters}}:counters"
        self._built = BuiltEntries()  # an unchanged entry hash gives back the same entry (a repeat hit's fast path)

    def _open_client(self) -> Any:
        with self._lock:
            if self._client is not None:
                return self._client
            try:
                # The reader first: a cluster client reads the slot map from the seeds when it is
                # made, and the reader's short timeout bounds what silent seeds cost that first call.
                reader = make_client(self._target, self._retries,
                                     {**self._client_options, "socket_timeout": self.read_timeout_s})
                client = make_client(self._target, self._retries,
                                     {**self._client_options, "socket_timeout": self.write_timeout_s})
                if self.topology != "cluster":
                    # builds a connection object (does not connect): an option redis-py does not know
                    # would fail every command; refuse it now
                    client.connection_pool.make_connection().disconnect()
            except TypeError as exc:
                raise StoreURLError(f"Redis URL {self.url!r}: {redact_secrets(str(exc), self._secrets)}; options: "
                                    f"prefix, retries, breaker options, or a redis-py connection option "
                                    f"(socket_timeout, health_check_interval...)") from None
            except ValueError as exc:
                # The parser's message may quote a piece of the password: scrub it, do not chain it.
                raise StoreURLError(
                    f"bad Redis URL {self.url!r}: {redact_secrets(str(exc), self._secrets)}; use redis://host:port/db "
                    "(a password holding '/', '#', '?' or '@' must be percent-encoded, e.g. %2F)") from None
            except _DRIVER_ERRORS as exc:  # a cluster that cannot be reached while reading its slot map
                # Seeds that timed out count as a timeout (the breaker opens at once), so one call
                # pays the discovery once, not once per store operation it makes.
                cause: BaseException = redis.TimeoutError(str(exc)) if "Timeout" in str(exc) else exc
                raise self._errors.failed("connect", cause) from exc
            register = client.register_script
            self._put = register(_PUT)
            self._put_fenced = register(_PUT_FENCED)
            self._delete = register(_DELETE)
            self._delete_expired = register(_DELETE_EXPIRED)
            self._acquire = register(_ACQUIRE)
            self._release = register(_RELEASE)
            self._renew = register(_RENEW)
            self._holds = register(_HOLDS)
            self._add_counters = register(_ADD_COUNTERS)
            self._take_rate_slot = register(_TAKE_RATE_SLOT)
            self._repair = register(_REPAIR)
            # get's fast path (see _hmget) needs one plain shared pool; a cluster, a single-connection
            # client or redis-py's client-side cache go through the client's command layer.
            pool = getattr(reader, "connection_pool", None)
            plain = (self.topology != "cluster" and getattr(reader, "connection", None) is None
                     and getattr(pool, "cache", None) is None)
            self._pool = pool if plain else None
            self._reader = reader
            self._client = client
            return client

    def recheck_master(self) -> bool:
        """Sentinel: ask the Sentinels which node is the master now and drop every pooled connection
        to any other node (redis-py's own mechanism: ``SentinelConnectionPool.get_master_address``
        disconnects the idle connections when the answer changed, and a connection in use is
        disconnected when it is released, since the pool no longer owns it). Each new connection
        asks the Sentinels too. Called when the breaker closes after an episode: a master that hung
        and came back may have been replaced meanwhile, and Sentinel demotes it only seconds later,
        so without this the process would keep writing to it. When the Sentinels answer that no
        node is fit to write to (the master is down, or its failover has not promoted the replica
        yet), the pools forget the master (``redis_connect._SentinelClient``): calls run uncached
        until the Sentinels name one. True when the master moved (or none is named)."""
        moved = False
        for client in (self._client, self._reader):
            pool = getattr(client, "connection_pool", None)
            if pool is None or not hasattr(pool, "get_master_address"):
                continue
            before = pool.master_address
            try:
                now = pool.get_master_address()
            except NoMasterNamedError:
                if before is not None:
                    log.warning("%s: the Sentinels name no master now (down or being failed over); connections to "
                                "%s:%s are dropped and calls run uncached until they name one",
                                self._errors.where, before[0], before[1])
                moved = True
                continue
            if before is not None and tuple(now) != tuple(before):
                moved = True
                log.warning("%s: Sentinel names a new master %s:%s; connections to %s:%s are dropped",
                            self._errors.where, now[0], now[1], before[0], before[1])
        return moved

    @property
    def client(self) -> Any:
        """The redis-py client (``Redis``, or ``RedisCluster`` for a cluster)."""
        due = self._recheck_due
        if due is not None and due <= time.monotonic():
            self._recheck_when_due()
        return self._client if self._client is not None else self._open_client()

    def _recheck_when_due(self) -> None:
        with self._lock:
            if self._recheck_due is None or self._recheck_due > time.monotonic():
                return
            self._recheck_due = time.monotonic() + SENTINEL_RECHECK_S
        if self._client is None:
            return  # nothing pooled yet: the first connection asks the Sentinels
        try:
            self.recheck_master()
        except _DRIVER_ERRORS as exc:  # Sentinels unreachable: the pooled connections stay; ask again later
            self._recheck_due = time.monotonic() + SENTINEL_RECHECK_FAILED_S
            log.debug("%s: asking the Sentinels for the master failed: %s", self._errors.where,
                      redact_secrets(str(exc), self._secrets))

    @classmethod
    def url_from_fields(cls, fields: Mapping[str, Any], *, scheme: str = "redis", base_dir: Any = None) -> str:
        """``redis://[user:password@]host:port/db`` (``rediss://`` for TLS, ``valkey://``...) from those fields."""
        given = check_fields(scheme, fields, ("host", "port", "db", "user", "password"))
        port = whole_number(scheme, "port", given.get("port", 6379), 1, 65535)
        db = whole_number(scheme, "db", given.get("db", 0), 0)
        where = host_part(scheme, given.get("host", "127.0.0.1"), port)
        if SCHEMES.get(scheme, ("", False))[0] != "single":
            scheme = "redis"
        return f"{scheme}://{userinfo(given.get('user'), given.get('password'))}{where}/{db}"

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStore | NearCache:
        """``redis://[user:pass@]host:port/db?prefix=NAME&retries=N`` and the other schemes of
        ``stores/redis_connect.py`` (other query options go to redis-py); ``near=on`` puts a near
        cache in front (``stores/near.py``)."""
        parts = urlsplit(url)
        check_userinfo("Redis", url, parts)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        ours = {name: query.pop(name) for name in ("prefix", "retries") if name in query}
        for name in ("read_timeout_s", "write_timeout_s", "socket_timeout"):
            if name in query:
                options.setdefault(name, query.pop(name))
        shown = redact_url(url)
        near = near_options(query, options, f"Redis URL {shown!r}")
        options.setdefault("breaker", breaker_options(query, options, f"Redis URL {shown!r}", **REDIS_BREAKER))
        if "prefix" in ours:
            options.setdefault("prefix", ours["prefix"])
        if "retries" in ours:
            try:
                options.setdefault("retries", int(ours["retries"]))
            except ValueError:
                raise StoreURLError(f"retries={ours['retries']!r} in {shown!r} must be an integer") from None
        client_url = urlunsplit(parts._replace(query=urlencode(list(query.items()))))
        store = cls(client_url, shown_url=url, **options)
        near_args: dict[str, Any] | None = near
        return store if near_args is None else NearCache(store, **near_args)

    @classmethod
    def targets(cls, url: str) -> Targets:
        """What the store :meth:`from_url` makes connects to: the nodes ``parse_target`` reads (the
        one host of a single server, or the cluster seeds / Sentinels), a Unix socket path, and
        the files redis-py's TLS options name (``ssl_certfile``, ``ssl_keyfile``, ``ssl_ca_certs``,
        ``ssl_ca_path``)."""
        parts = urlsplit(url)
        check_userinfo("Redis", url, parts)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        for name in ("prefix", "retries", "read_timeout_s", "write_timeout_s", "socket_timeout"):
            query.pop(name, None)
        scratch: dict[str, Any] = {}
        near_options(query, scratch, "")
        breaker_options(query, scratch, "", **REDIS_BREAKER)
        client_url = urlunsplit(parts._replace(query=urlencode(list(query.items()))))
        target = parse_target(client_url, redact_url(url), url_secrets(url))
        paths = [str(query[name]) for name in ("ssl_certfile", "ssl_keyfile", "ssl_ca_certs", "ssl_ca_path")
                 if query.get(name)]
        if target.topology != "single":  # a cluster's nodes and redirects, a Sentinel's master: learned later
            return Targets(tuple(paths), tuple(host.lower() for host, _ in target.nodes), learned=True)
        import redis

        try:
            read = redis.connection.parse_url(target.client_url)  # type: ignore[no-untyped-call]
        except ValueError as exc:
            raise StoreURLError(f"Redis URL {redact_url(url)!r}: {redact_secrets(str(exc), url_secrets(url))}") from None
        if read.get("path"):
            paths.append(str(read["path"]))
        host = str(read.get("host") or "")
        return Targets(tuple(paths), (host.lower() or "localhost",))  # redis-py's default host

    # --- plumbing -----------------------------------------------------------------------

    def _e(self, key: str) -> str:
        return self._entry_prefixes[bucket_of(key)] + key

    def _bucket_keys(self, tag: str) -> list[str]:
        """The keys every script of a bucket declares (they fix its slot)."""
        return [tag + ":z", tag + ":n", tag + ":size"]

    def _live_score_floor(self) -> float:
        # Members scored at or before now have been (or are being) dropped by Redis, by its clock.
        return self.server_time()

    def _per_bucket(self, command: str, args: Iterable[tuple[int, tuple[Any, ...]]]) -> list[tuple[int, Any]]:
        """Run ``command`` once per (bucket, args) in one pipeline (per node on a cluster)."""
        todo = list(args)
        pipe = self.client.pipeline(transaction=False)
        # A cluster pipeline refuses multi-key methods such as sinter() outright; as a plain command it
        # routes by its keys, which share one bucket's slot.
        send = (lambda *a: pipe.execute_command(command.upper(), *a)) if command in _MULTI_KEY else getattr(pipe, command)
        for _, call_args in todo:
            send(*call_args)
        results = pipe.execute(raise_on_error=False)
        wrong = [i for i, r in enumerate(results) if isinstance(r, redis.ResponseError) and "WRONGTYPE" in str(r)]
        if wrong:
            # A bookkeeping key another writer garbled: repair its bucket (stores/redis.py _REPAIR)
            # and read again, so one planted key never fails stats, invalidate or cleanup for good.
            for i in wrong:
                bucket, call_args = todo[i]
                tag = self._tags[bucket]
                sets = [a[len(tag) + 3:] for a in call_args if command in _MULTI_KEY and isinstance(a, str)
                        and a.startswith(tag + ":i:")]
                self._repair(keys=self._bucket_keys(tag), args=[tag, *sets], client=self.client)
            again = self.client.pipeline(transaction=False)
            resend = (lambda *a: again.execute_command(command.upper(), *a)) if command in _MULTI_KEY \
                else getattr(again, command)
            for i in wrong:
                resend(*todo[i][1])
            for i, result in zip(wrong, again.execute()):
                results[i] = result
        for result in results:
            if isinstance(result, Exception):
                raise result
        return list(zip((b for b, _ in todo), results))

    # --- protocol -----------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        # The hit path: one HMGET, errors caught without a context manager (a try costs nothing
        # until it raises; a with block is two calls per read).
        name = self._entry_prefixes[zlib.crc32(key.encode("utf-8", "surrogatepass")) % BUCKETS] + key
        breaker = self.breaker
        due = self._recheck_due
        if due is not None and due <= time.monotonic():  # Sentinel only: the master may have moved
            self._recheck_when_due()
        try:
            if breaker is not None:
                breaker.before()
            if self._pool is not None:
                row = self._hmget(name)
            elif self.topology == "cluster":
                row = self._cluster_hmget(name, zlib.crc32(key.encode("utf-8", "surrogatepass")) % BUCKETS)
            else:
                if self._reader is None:
                    self._open_client()
                row = self._reader.hmget(name, _ENTRY_FIELDS)
        except redis.ResponseError as exc:
            if "WRONGTYPE" not in str(exc):
                raise self._errors.failed("get", exc) from exc
            return corrupt_entry(key, "another writer stored a non-hash under its Redis key")
        except _DRIVER_ERRORS as exc:
            raise self._errors.failed("get", exc) from exc
        except StoreError:
            raise
        except BaseException:
            if breaker is not None:
                breaker.abandon()
            raise
        if breaker is not None:
            breaker.success()
        value, meta, created, expires, duration = row
        if value is None or meta is None:
            return None
        built = self._built.get(key)  # the entry built for this very row (BuiltEntries)
        if built is not None and built[0] == row:
            same: Entry = built[1]
            return same
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
        dropped or left with unread data); a connection error disconnects it and retries under
        the connection's retry policy, as redis-py's own commands do. redis-py's connection
        disconnects itself on any failure while sending or reading, and so does this on anything
        but an error reply: a connection never goes back to the pool with a reply pending, so a
        reply only ever answers its own command.
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

    def _cluster_hmget(self, name: str, bucket: int) -> Any:
        """A cluster hit: ``HMGET`` on a pooled connection of the node that serves the bucket's slot
        (remembered per bucket), as :meth:`_hmget` does on one server: RedisCluster's command layer
        (slot lookup, node choice, redirect handling) costs more than the round trip on loopback.
        Anything but an answer (a redirect after a slot moved or a failover, a connection error)
        forgets the bucket's node and asks through the cluster client, which follows redirects and
        reads the slot map again; a reply only ever answers its own command, as in :meth:`_hmget`."""
        pool = self._bucket_pools[bucket]
        if pool is None:
            if self._reader is None:
                self._open_client()
            reader = self._reader
            node = reader.get_node_from_key(name)
            pool = (node.redis_connection or reader.get_redis_connection(node)).connection_pool
            self._bucket_pools[bucket] = pool
        try:
            conn = pool.get_connection()  # connects a new connection: a dead node fails here
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            self._bucket_pools[bucket] = None  # the next read asks the client, which reads the slot map again
            if isinstance(exc, redis.TimeoutError):
                raise
            return self._reader.hmget(name, _ENTRY_FIELDS)
        try:
            return _send_hmget(conn, name)
        except redis.ResponseError as exc:  # a whole reply (MOVED, ASK, CLUSTERDOWN...): the connection is clean
            if "WRONGTYPE" in str(exc):
                raise
            self._bucket_pools[bucket] = None
        except redis.TimeoutError:
            conn.disconnect()
            self._bucket_pools[bucket] = None
            raise  # a hung node: the breaker decides; asking again would wait as long again
        except redis.ConnectionError:
            conn.disconnect()
            self._bucket_pools[bucket] = None
        except BaseException:
            conn.disconnect()
            raise
        finally:
            pool.release(conn)
        return self._reader.hmget(name, _ENTRY_FIELDS)

    def _put_args(self, tag: str, entry: Entry) -> list[Any]:
        meta = dict(entry.metadata)
        expires = entry.expires_at
        duration = meta.get("_cache_duration_ms")
        indexes = [name for field, value in meta.items()
                   if field not in _UNINDEXED and (name := _index_name(field, value)) is not None]
        over_cap = len(indexes) > MAX_INDEXED_FIELDS or sum(len(n) for n in indexes) > MAX_INDEXED_BYTES
        return [
            tag,
            entry.key,
            bytes(entry.value),
            json.dumps(meta, separators=(",", ":"), ensure_ascii=False),
            repr(float(entry.created_at)),
            "" if expires is None else repr(float(expires)),
            "" if expires is None else str(min(math.ceil(expires * 1000), 2**62)),
            repr(float(duration)) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else "",
            "1" if over_cap else "0",
            *([] if over_cap else indexes),
        ]

    def put(self, entry: Entry) -> None:
        tag = self._tags[bucket_of(entry.key)]
        with self._errors("put"):
            client = self.client
            self._put(keys=[tag + ":e:" + entry.key, *self._bucket_keys(tag)], args=self._put_args(tag, entry),
                      client=client)

    def put_fenced(self, entry: Entry, lease: str, token: str) -> bool:
        """Store ``entry`` only while ``token`` is the current grant of lease ``lease`` (held, not
        expired), checked in the script that writes; False (nothing written) otherwise."""
        tag = self._tags[bucket_of(entry.key)]
        lease_key, _ = self._lease_keys(lease)
        if self.topology == "cluster" and not lease_key.startswith(tag):
            # A face's lease guards several entries (a scratchpad session), in other slots than
            # the lease: no one script can both check and write on a cluster. The check comes
            # first, in the lease's slot, then the write: a holder paused before the check is
            # refused; only a pause between the two round trips escapes (docs/backends.md).
            with self._errors("put"):
                if not self._holds(keys=[lease_key], args=[token], client=self.client):
                    return False
            self.put(entry)
            return True
        with self._errors("put"):
            client = self.client
            return bool(self._put_fenced(keys=[tag + ":e:" + entry.key, *self._bucket_keys(tag), lease_key],
                                         args=[token, *self._put_args(tag, entry)], client=client))

    def delete(self, key: str) -> bool:
        return self.delete_many([key]) == 1

    def delete_many(self, keys: Iterable[str]) -> int:
        by_bucket: dict[int, list[str]] = defaultdict(list)
        for key in dict.fromkeys(keys):
            by_bucket[bucket_of(key)].append(key)
        deleted = 0
        with self._errors("delete"):
            client = self.client
            for bucket, members in by_bucket.items():
                tag = self._tags[bucket]
                for start in range(0, len(members), _BATCH):
                    deleted += int(self._delete(keys=self._bucket_keys(tag),
                                                args=[tag, *members[start:start + _BATCH]], client=client))
        return deleted

    def _buckets_for(self, pattern: str | None) -> range | list[int]:
        """The buckets a key matching ``pattern`` may be in: one, when the pattern is literal."""
        if pattern is not None:
            tokens = list(glob_tokens(pattern))
            if all(kind == "lit" for kind, _ in tokens):
                return [bucket_of("".join(text for _, text in tokens))]
        return range(BUCKETS)

    def _scan(self, pattern: str | None) -> Iterator[tuple[str, float]]:
        """``(key, expiry score)`` of the keys ``pattern`` may match: every bucket's ZSCAN, side by side."""
        match = to_redis_glob(pattern) if pattern is not None else None
        cursors = dict.fromkeys(self._buckets_for(pattern), 0)
        while cursors:
            results = self._per_bucket("zscan", ((b, (self._tags[b] + ":z", c, match, 1000)) for b, c in cursors.items()))
            for bucket, (cursor, items) in results:
                for member, score in items:
                    yield member.decode("utf-8", "surrogatepass"), score
                if int(cursor) == 0:
                    del cursors[bucket]
                else:
                    cursors[bucket] = cursor

    def _indexed_candidates(self, metadata_filter: Mapping[str, Any]) -> tuple[list[str] | None, bool, list[str]]:
        """Live keys in every index set the filter names, whether the sets decide the filter alone,
        and the live keys of entries over the index cap (``u``: always checked on their metadata)."""
        names = [":i:" + name for field, wanted in metadata_filter.items()
                 if field not in _UNINDEXED and (name := _index_name(field, wanted)) is not None]
        if not names:
            return None, False, []
        exact = len(names) == len(metadata_filter)
        found = self._per_bucket("sinter", ((b, tuple(tag + n for n in names)) for b, tag in enumerate(self._tags)))
        over = self._per_bucket("smembers", ((b, (tag + ":u",)) for b, tag in enumerate(self._tags)))
        members = [(b, [m.decode("utf-8", "surrogatepass") for m in keys], over_cap)
                   for rows, over_cap in ((found, False), (over, True)) for b, keys in rows if keys]
        if not members:
            return [], exact, []
        floor = self._live_score_floor()
        scores = self._per_bucket("zmscore", ((b, (self._tags[b] + ":z", keys)) for b, keys, _ in members))
        out: list[str] = []
        loose: list[str] = []
        for (_, keys, over_cap), (_, bucket_scores) in zip(members, scores):
            (loose if over_cap else out).extend(k for k, s in zip(keys, bucket_scores) if s is not None and s > floor)
        return out, exact, loose

    def find(
        self,
        pattern: str | None = None,
        metadata_filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        with self._errors("find"):
            candidates, exact, loose = self._indexed_candidates(metadata_filter) if metadata_filter else (None, False, [])
            if candidates is None:
                floor = self._live_score_floor()
                # ZSCAN may return a member twice while the set is being resized: dedupe.
                candidates = list(dict.fromkeys(k for k, s in self._scan(pattern) if s > floor))
            if pattern is not None:
                candidates = [k for k in candidates if glob_matches(pattern, k)]
                loose = [k for k in loose if glob_matches(pattern, k)]
            if not metadata_filter:
                return candidates if limit is None else candidates[:limit]
            if exact:
                if not loose:
                    return candidates if limit is None else candidates[:limit]
                left = None if limit is None else max(0, limit - len(candidates))
                checked = select_keys(zip(loose, self._metadata_of(loose)), None, metadata_filter, left)
                found = candidates + checked
                return found if limit is None else found[:limit]
            # Fields without an index set (nested values, long strings, per-entry core fields)
            # are checked on the stored metadata, as are entries over the index cap.
            candidates = list(dict.fromkeys(candidates + loose))
            return select_keys(zip(candidates, self._metadata_of(candidates)), None, metadata_filter, limit)

    def _metadata_of(self, keys: list[str]) -> Iterator[bytes | None]:
        for start in range(0, len(keys), _BATCH):
            pipe = self.client.pipeline(transaction=False)
            for key in keys[start:start + _BATCH]:
                pipe.hget(self._e(key), "m")
            yield from pipe.execute()

    def delete_expired(self, now: float, limit: int | None = None) -> int:
        # Scripts block the server while they run: work in bounded batches, oldest expiry first
        # across the buckets.
        deleted = 0
        with self._errors("cleanup"):
            client = self.client
            while limit is None or deleted < limit:
                batch = _BATCH if limit is None else min(_BATCH, int(limit) - deleted)
                listed = self._per_bucket("zrangebyscore", ((b, (tag + ":z", "-inf", repr(float(now)), 0, batch, True))
                                                            for b, tag in enumerate(self._tags)))
                oldest = sorted(((score, b, member) for b, rows in listed for member, score in rows),
                                key=lambda row: (row[0], row[1]))[:batch]
                by_bucket: dict[int, list[bytes]] = defaultdict(list)
                for _, bucket, member in oldest:
                    by_bucket[bucket].append(member)
                removed = 0
                for bucket, members in by_bucket.items():
                    tag = self._tags[bucket]
                    removed += int(self._delete_expired(keys=[tag + ":z"], args=[tag, repr(float(now)), *members],
                                                        client=client))
                deleted += removed
                if len(oldest) < batch or removed == 0:
                    break
        return deleted

    def count(self) -> int:
        with self._errors("count"):
            floor = f"({self._live_score_floor()!r}"
            return sum(int(n) for _, n in self._per_bucket("zcount", ((b, (tag + ":z", floor, "+inf"))
                                                                      for b, tag in enumerate(self._tags))))

    def size_bytes(self) -> int:
        with self._errors("size"):
            sizes = self._per_bucket("get", ((b, (tag + ":size",)) for b, tag in enumerate(self._tags)))
        total = 0
        for _, size in sizes:
            try:
                total += max(0, int(size or 0))
            except ValueError:  # garbled by another writer: counted again from the next write on
                continue
        return total

    def add_counters(self, deltas: Mapping[str, float]) -> None:
        if not deltas:
            return
        args: list[Any] = []
        for name, delta in deltas.items():
            args += [name, repr(float(delta))]
        with self._errors("counters"):
            client = self.client
            self._add_counters(keys=[self._counters_key], args=args, client=client)

    def counters(self, prefix: str = "") -> dict[str, float]:
        with self._errors("counters"):
            raw = self.client.hgetall(self._counters_key)
        out: dict[str, float] = {}
        for name, value in raw.items():
            text = name.decode("utf-8", "surrogatepass")
            if text.startswith(prefix):
                try:
                    out[text] = float(value)
                except ValueError:  # garbled by another writer: skipped rather than failing stats()
                    continue
        return out

    # --- leases ---------------------------------------------------------------------------

    def _lease_keys(self, name: str) -> tuple[str, str]:
        """(the lease's key, its bucket's fencing counter): a lease on an entry lives beside it."""
        guarded = name[len(_ENTRY_LEASE):] if name.startswith(_ENTRY_LEASE) else name
        tag = self._tags[bucket_of(guarded)]
        return f"{tag}:l:{name}", f"{tag}:fence"

    def acquire_lease(self, name: str, ttl_s: float) -> str | None:
        """A token ``"<fencing number>:<random hex>"`` when the lease was free, else None. The
        number grows with every grant of the name, across releases and expiries."""
        lease_key, fence_key = self._lease_keys(name)
        with self._errors("lease"):
            # Redis's own clock times the lease, so clients on machines with skewed clocks agree.
            client = self.client
            token = self._acquire(keys=[lease_key, fence_key], args=[uuid.uuid4().hex, max(1, int(ttl_s * 1000))],
                                  client=client)
        return None if token is None else token.decode() if isinstance(token, bytes) else str(token)

    def server_time(self) -> float:
        """Redis's clock (``TIME``): the one clock expiry is judged by (see the core)."""
        with self._errors("time"):
            answer = self.client.time()
        if isinstance(answer, dict):  # a cluster answers per node: any node's clock
            answer = next(iter(answer.values()))
        seconds, micros = answer
        return float(seconds) + float(micros) / 1e6

    def renew_lease(self, name: str, token: str, ttl_s: float) -> bool:
        with self._errors("lease"):
            client = self.client
            return bool(self._renew(keys=[self._lease_keys(name)[0]], args=[token, max(1, int(ttl_s * 1000))],
                                    client=client))

    def wait_lease(self, name: str, timeout_s: float) -> None:
        """Block until the lease on ``name`` is released (a message on its channel) or ``timeout_s``
        passes: waiters are told when the holder's value has landed instead of polling for it."""
        lease_key = self._lease_keys(name)[0]
        with self._errors("lease"):
            client = self.client
            pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            with self._errors("lease"):
                pubsub.subscribe(lease_key)
                if client.exists(lease_key):  # released before we listened: no wait
                    end = time.monotonic() + timeout_s
                    while (left := end - time.monotonic()) > 0:
                        if pubsub.get_message(timeout=left) is not None:  # None: the subscribe reply, or time
                            break
        finally:
            try:
                pubsub.close()
            except _DRIVER_ERRORS:
                pass

    def release_lease(self, name: str, token: str) -> None:
        with self._errors("lease"):
            client = self.client
            self._release(keys=[self._lease_keys(name)[0]], args=[token], client=client)

    def invalidation_feed(self, on_change: Any) -> _InvalidationFeed:
        """Listen for the keys every writer of this namespace changes (a near cache's feed)."""
        return _InvalidationFeed(self, "{" + self.prefix + "|near}", on_change)

    def take_rate_slot(self, name: str, limit: int, window_s: float) -> float:
        """One rate-limit check in one script (``stores/ratelimit.py``): 0.0 when a grant of ``name``
        was taken (at most ``limit`` in any ``window_s``), else the seconds until one frees."""
        log_key = f"{self._tags[bucket_of(name)]}:r:{name}"
        with self._errors("ratelimit"):
            client = self.client
            waited_ms = self._take_rate_slot(keys=[log_key], args=[int(limit), window_s * 1000.0, uuid.uuid4().hex],
                                             client=client)
        return float(waited_ms) / 1000.0

    def drop(self) -> None:
        """Delete every Redis key of this namespace (its hash tags exactly: never another prefix's).
        For tests and for retiring a cache."""
        inner_length = len(self.prefix) + 1
        with self._errors("drop"):
            client = self.client
            batch: list[bytes] = []
            for name in client.scan_iter(match="{" + self.prefix + "|*", count=1000):
                tag = name[1:name.find(b"}")].decode("utf-8", "surrogatepass") if b"}" in name else ""
                if tag[:inner_length] != self.prefix + "|" or "|" in tag[inner_length:]:
                    continue  # another namespace whose prefix starts with this one and a '|'
                batch.append(name)
                if len(batch) >= _BATCH:
                    client.delete(*batch)
                    batch = []
            if batch:
                client.delete(*batch)
            client.publish("{" + self.prefix + "|near}", "")  # near caches: forget everything

    def health(self) -> dict[str, Any]:
        """The circuit breaker's state (``Cache.stats()["store_health"]``)."""
        return breaker_health(self.breaker)

    def close(self) -> None:
        for client in (self._client, self._reader):
            if client is None:
                continue
            try:
                client.close()
            except _DRIVER_ERRORS:
                pass



class _InvalidationFeed(ListeningFeed):
    """The namespace's invalidation channel, as a near cache's feed (``stores/near.py``)."""

    def __init__(self, store: RedisStore, channel: str, on_change: Any) -> None:
        self._store, self._channel = store, channel
        super().__init__(on_change)

    def listen_once(self, ready: Any, changed: Any) -> None:
        pubsub = self._store.client.pubsub()
        try:
            pubsub.subscribe(self._channel)
            while not self.closed.is_set():
                message = pubsub.get_message(timeout=LISTEN_POLL_S)
                if message is None:
                    continue
                if message["type"] == "subscribe":
                    ready()
                elif message["type"] == "message":
                    data = message["data"]
                    key = data.decode("utf-8", "surrogatepass") if isinstance(data, bytes) else str(data)
                    changed(key or None)  # "" (drop): every key
        finally:
            try:
                pubsub.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
