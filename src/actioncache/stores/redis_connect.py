"""The Redis store's URL grammar and clients: one Redis, a Redis Cluster, Sentinel, and Valkey.

================================================  ==============================================
``redis://[user:pass@]host:port/db``              one server (``rediss://``: TLS)
``valkey://[user:pass@]host:port/db``             one Valkey server (``valkeys://``: TLS)
``redis+cluster://[user:pass@]h1:p1,h2:p2,...``   a Redis Cluster from any of its nodes (seeds);
                                                  ``rediss+cluster``, ``valkey+cluster``, ``valkeys+cluster``
``redis+sentinel://[user:pass@]s1:p1,s2:p2/NAME/db``  the master Sentinel knows as NAME;
                                                  ``rediss+sentinel``, ``valkey+sentinel``, ``valkeys+sentinel``
================================================  ==============================================

Valkey speaks Redis's protocol: its schemes use the same driver (redis-py) and the same store,
and are tested against a real ``valkey-server``. The query holds the store's own options
(``prefix``, ``retries``, the ``breaker_*`` options) and any redis-py connection option
(``socket_timeout=0.5``, ``health_check_interval=30``...); ``sentinel_password`` is the
Sentinels' own password when they have one.

Timeouts (documented in docs/backends.md): ``socket_connect_timeout`` 0.25 s; the store's
``read_timeout_s`` (the hit path's reads, 0.2 s: a cache read that takes longer is slower than
running most actions again) and ``write_timeout_s`` (every other command, 2 s); a timeout is not
retried (one quick retry covers a pooled connection that went stale when the server restarted).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ..errors import ActionCacheError, StoreURLError
from .redaction import redact_secrets

try:
    import redis
    from redis.backoff import ExponentialBackoff, NoBackoff
    from redis.retry import Retry
    from redis.sentinel import MasterNotFoundError, Sentinel
except ImportError as exc:  # pragma: no cover - exercised when the extra is missing
    raise ImportError(f"the redis package is not installed ({exc})") from exc

__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_READ_TIMEOUT_S", "DEFAULT_WRITE_TIMEOUT_S", "SCHEMES",
           "NoMasterNamedError", "Target", "make_client", "parse_target"]

DEFAULT_CONNECT_TIMEOUT_S = 0.25
DEFAULT_READ_TIMEOUT_S = 0.2
DEFAULT_WRITE_TIMEOUT_S = 2.0
SENTINEL_TIMEOUT_S = 0.5  # the most a question to one Sentinel may wait (connect, then answer)

# scheme -> (topology, TLS)
SCHEMES: dict[str, tuple[str, bool]] = {}
for _base in ("redis", "valkey"):
    for _tls in (False, True):
        _name = _base + ("s" if _tls else "")
        SCHEMES[_name] = ("single", _tls)
        SCHEMES[_name + "+cluster"] = ("cluster", _tls)
        SCHEMES[_name + "+sentinel"] = ("sentinel", _tls)


@dataclass
class Target:
    """What a URL names: the topology, the nodes (seeds or Sentinels), and the client's options."""

    topology: str  # "single" | "cluster" | "sentinel"
    client_url: str  # a redis:// (or rediss://) URL redis-py parses (single: the whole target)
    nodes: list[tuple[str, int]] = field(default_factory=list)
    service: str = ""  # sentinel: the master's name
    options: dict[str, Any] = field(default_factory=dict)  # redis-py keywords parsed from the URL


def _fail(shown: str, why: str) -> StoreURLError:
    return StoreURLError(f"Redis URL {shown!r}: {why}")


def _node(text: str, shown: str, secrets: tuple[str, ...]) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise _fail(shown, f"{redact_secrets(text, secrets)!r} is not host:port; list nodes as host:port,host:port")
    return host.strip("[]"), int(port)


def parse_target(url: str, shown: str, secrets: tuple[str, ...]) -> Target:
    """The :class:`Target` of ``url`` (the store's options already removed from its query);
    ``shown`` is the redacted URL for messages."""
    parts = urlsplit(url)
    topology, tls = SCHEMES.get(parts.scheme.lower(), ("", False))
    if not topology:
        raise _fail(shown, f"unknown scheme {parts.scheme!r}; use one of {', '.join(sorted(SCHEMES))}")
    driver_scheme = "rediss" if tls else "redis"
    userinfo, _, hosts = parts.netloc.rpartition("@")
    if topology == "single":
        return Target("single", urlunsplit(parts._replace(scheme=driver_scheme)))
    if not hosts:
        raise _fail(shown, "name at least one node: host:port[,host:port...]")
    nodes = [_node(h, shown, secrets) for h in hosts.split(",") if h]
    path = [unquote(p) for p in parts.path.split("/") if p]
    service = ""
    if topology == "sentinel":
        if not path:
            raise _fail(shown, "name the master after the Sentinels: redis+sentinel://host:port/MASTER_NAME/db")
        service, path = path[0], path[1:]
    if len(path) > 1 or (path and not (path[0].isascii() and path[0].isdigit())):
        raise _fail(shown, "the path after the nodes names the database by number (/0)")
    db = int(path[0]) if path else 0
    if topology == "cluster" and db != 0:
        raise _fail(shown, f"a Redis Cluster has only database 0, not {db}")
    host, port = nodes[0]
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    # One node's URL, for redis-py's own parser of the query options, credentials and TLS.
    client_url = urlunsplit((driver_scheme, (userinfo + "@" if userinfo else "") + where, f"/{db}", parts.query, ""))
    try:
        parse: Any = redis.connection.parse_url  # untyped in redis-py
        options = parse(client_url)
    except ValueError as exc:
        raise _fail(shown, redact_secrets(str(exc), secrets)) from None
    for name in ("host", "port", "path"):
        options.pop(name, None)
    options.pop("connection_class", None)
    if tls:
        options["ssl"] = True
    return Target(topology, client_url, nodes, service, options)


class NoMasterNamedError(MasterNotFoundError, ActionCacheError):
    """The Sentinels answered, and none named a master fit to write to: the master is down, or a
    failover has not promoted its replica yet (calls run uncached until they name one)."""


def _failing_over(state: dict[str, Any]) -> bool:
    flags = state.get("flags", "")
    return "failover_in_progress" in (flags.split(",") if isinstance(flags, str) else flags)


class _SentinelClient(Sentinel):
    """redis-py's Sentinel client, with two changes to how it asks which node is the master.

    A failover in progress: redis-py reads ``SENTINEL MASTERS``, which lists the replaced master
    (flagged ``failover_in_progress``, down or, once it answers again, not) until the failover
    ends; ``SENTINEL GET-MASTER-ADDR-BY-NAME`` names the promoted replica from the moment it
    reported itself master (the failover cannot be undone after that). redis-py therefore found
    no master in that window, or the replaced one: a store kept its pooled connections to the old
    master, which, resumed, still took writes, discarded seconds later when the Sentinel demoted
    it. Here a master being failed over is never named; the promoted replica is, once the Sentinels
    name it.

    No master named (the Sentinels answered; not unreachable): the pools this client made forget
    their master, so no pooled connection keeps leading to it (idle ones are closed now, one in
    use when it is released) and each new connection asks again.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        init: Any = super().__init__  # untyped in redis-py
        init(*args, **kwargs)
        self._master_pools: list[weakref.ref[Any]] = []

    def master_for(self, service_name: Any, *args: Any, **kwargs: Any) -> Any:
        base: Any = super().master_for  # untyped in redis-py
        client = base(service_name, *args, **kwargs)
        self._master_pools.append(weakref.ref(client.connection_pool))
        return client

    def discover_master(self, service_name: Any) -> tuple[str, int]:
        errors: list[str] = []
        answered = False
        check: Any = self.check_master_state  # untyped in redis-py
        for number, sentinel in enumerate(self.sentinels):
            asked: Any = sentinel  # untyped in redis-py
            try:
                state = asked.sentinel_masters().get(service_name)
                named = None
                if state is not None and _failing_over(state):
                    found = asked.sentinel_get_master_addr_by_name(service_name)
                    # the replaced master's own address until its replica is promoted
                    if found and (_text(found[0]), int(found[1])) != (_text(state["ip"]), int(state["port"])):
                        named = (_text(found[0]), int(found[1]))
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                errors.append(f"{asked.connection_pool.connection_kwargs.get('port')}: {type(exc).__name__}: {exc}")
                continue
            if state is None:
                continue  # this Sentinel does not know the name
            answered = True
            if named is None and not _failing_over(state) and check(state, service_name):
                named = (_text(state["ip"]), int(state["port"]))
            if named is not None:
                self.sentinels[0], self.sentinels[number] = sentinel, self.sentinels[0]  # ask it first next time
                forced = getattr(self, "_force_master_ip", None)
                return (str(forced) if forced is not None else named[0]), named[1]
        if answered:
            for ref in self._master_pools:
                pool = ref()
                if pool is not None and pool.service_name == service_name:
                    _forget_master(pool)
            raise NoMasterNamedError(f"the Sentinels name no master for {service_name!r} now: it is down or "
                                     "being failed over")
        raise MasterNotFoundError(f"No master found for {service_name!r}" + (f": {', '.join(errors)}" if errors else ""))


def _text(value: Any) -> str:
    # GET-MASTER-ADDR-BY-NAME's host comes back as bytes (unless decode_responses): one spelling for
    # the address the pool compares its connections with
    return value.decode() if isinstance(value, bytes) else str(value)


def _forget_master(pool: Any) -> None:
    """``pool`` drops every connection to the master it knew: the idle ones now, one in use when it
    is released (redis-py's pool keeps only connections to the address it holds)."""
    holder = getattr(pool, "proxy", pool)  # redis-py keeps the address on the pool's proxy
    if holder.master_address is None:
        return
    holder.master_address = None
    pool.disconnect(inuse_connections=False)


def _retry(retries: int) -> Retry:
    # Only a dropped connection is retried (a pooled connection gone stale when the server restarted):
    # a timeout already cost a whole timeout, and the circuit breaker decides what follows.
    return Retry(ExponentialBackoff(cap=0.1, base=0.01), int(retries), supported_errors=(redis.ConnectionError,))


def make_client(target: Target, retries: int, options: dict[str, Any]) -> Any:
    """The redis-py client for ``target`` (nothing connects yet, except a cluster's first command)."""
    options = dict(options)
    options.setdefault("socket_connect_timeout", DEFAULT_CONNECT_TIMEOUT_S)
    options.setdefault("socket_timeout", DEFAULT_WRITE_TIMEOUT_S)
    options.setdefault("retry", _retry(retries))
    if target.topology == "single":
        return redis.Redis.from_url(target.client_url, **options)
    merged = {**target.options, **options}
    if target.topology == "cluster":
        from redis.cluster import ClusterNode as _ClusterNode
        from redis.cluster import RedisCluster

        node: Any = _ClusterNode  # untyped in redis-py
        merged.pop("db", None)
        return RedisCluster(startup_nodes=[node(h, p) for h, p in target.nodes], **merged)
    sentinel_password = merged.pop("sentinel_password", None)
    sentinel_kwargs: dict[str, Any] = {k: merged[k] for k in ("socket_timeout", "socket_connect_timeout", "ssl") if k in merged}
    if sentinel_password:
        sentinel_kwargs["password"] = sentinel_password
    # The Sentinels are asked for the master on every new connection (and by recheck_master): their
    # own connections get the short timeouts and no retries (redis-py's default retries a timed-out
    # Sentinel 3 times with back-off: a hung Sentinel held each call for tens of seconds).
    sentinel_kwargs["socket_timeout"] = min(float(merged.get("socket_timeout") or DEFAULT_WRITE_TIMEOUT_S),
                                            SENTINEL_TIMEOUT_S)
    sentinel_kwargs["socket_connect_timeout"] = min(float(merged.get("socket_connect_timeout")
                                                          or DEFAULT_CONNECT_TIMEOUT_S), SENTINEL_TIMEOUT_S)
    sentinel_kwargs["retry"] = Retry(NoBackoff(), 0)
    sentinel = _SentinelClient(target.nodes, sentinel_kwargs=sentinel_kwargs, **merged)
    return sentinel.master_for(target.service)

