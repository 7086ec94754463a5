"""Sentinel: after a failover a process stops using the old master (issue 32, F6).

On a Sentinel set-up of the test's own (scripts/services.d/redis-sentinel.sh in a run directory of
its own): the master is stopped (SIGSTOP) until the Sentinel promotes the replica, then resumed.
The resumed node still calls itself a master until the Sentinel demotes it, seconds later; a store
whose pooled connections lead there must not keep writing to it (those writes are discarded when it
is demoted, and readers of the new master are served older values meanwhile).

The first test failed about one run in four until the store stopped trusting redis-py's discovery
alone: between the replica's promotion and the failover's end (a tenth of a second here) the
Sentinel already names the promoted replica (what ``_master`` reads), while ``SENTINEL MASTERS``,
all redis-py reads, still lists the old master; the write landed there. The second test holds the
failover in that phase, so it fails every time on that code.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import pytest
import services

from actioncache import Cache

from .backends import unique
from .private_servers import free_port

redis = pytest.importorskip("redis")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def private_sentinel():
    run_dir = tempfile.mkdtemp(prefix="ac-sentinel-")
    env = {**os.environ, "ACTIONCACHE_TEST_RUN_DIR": run_dir}
    script = REPO / "scripts" / "services.d" / "redis-sentinel.sh"
    if shutil.which("redis-server") is None:
        services.require_program("redis-server", "scripts/install.d/40-redis-postgres.sh")
    started = subprocess.run(["bash", str(script), "start"], env=env, capture_output=True, text=True, timeout=120)
    try:
        assert started.returncode == 0, started.stderr
        published = dict(line.split("=", 1) for line in Path(run_dir, "services.env").read_text().splitlines())
        yield published["ACTIONCACHE_TEST_REDIS_SENTINEL_URL"], Path(run_dir)
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(run_dir, ignore_errors=True)


def _master(sentinel_port: int) -> int:
    client = redis.Redis(port=sentinel_port, socket_timeout=2)
    try:
        return int(client.sentinel_get_master_addr_by_name("actioncache")[1])
    finally:
        client.close()


def test_after_a_failover_writes_go_to_the_new_master(private_sentinel):
    url, run_dir = private_sentinel
    sentinel_port = int(url.split("//")[1].split("/")[0].rsplit(":", 1)[1])
    old_port = _master(sentinel_port)
    pid = int(Path(run_dir, "redis-sentinel-master.pid").read_text().split()[0])
    writer = Cache(f"{url}?prefix={unique('fo')}", cleanup_probability=0)
    prefix = writer.store.prefix
    assert "_cache_error" not in writer.wrap("k", lambda: 1, skip_cache=True)  # pooled: the old master
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 60
        while _master(sentinel_port) == old_port:  # the Sentinel promotes the replica (down-after 1 s)
            assert time.monotonic() < deadline, "the Sentinel did not fail over within 60 s"
            time.sleep(0.2)
    finally:
        os.kill(pid, signal.SIGCONT)  # back, and still a master until the Sentinel demotes it
    new_port = _master(sentinel_port)
    old = redis.Redis(port=old_port, socket_timeout=2)
    try:
        assert old.role()[0] in (b"master", "master")  # the old master has not been demoted yet
    finally:
        old.close()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stored = writer.wrap("k", lambda: 2, skip_cache=True)
    assert "_cache_error" not in stored, stored
    reader = Cache(f"redis+sentinel://127.0.0.1:{sentinel_port}/actioncache/15?prefix={prefix}")
    try:
        assert reader.get(writer.key_for("k"))["value"] == 2  # a new process reads the new master: the write is there
        assert writer.store.client.connection_pool.master_address[1] == new_port
    finally:
        reader.close()
        writer.close()


def test_a_hung_sentinel_never_holds_a_call_for_good():
    """Sentinels that accept connections and never answer (a hung Sentinel, a proxy in front of
    dead ones): each question to them is bounded by the short timeouts and not retried, so the call
    runs uncached and returns (it used to wait forever: redis-py retried each timed-out Sentinel
    with back-off, on every connection attempt). The wait below only bounds a hang."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)  # accepted by the kernel, never answered
    port = listener.getsockname()[1]
    cache = Cache(f"redis+sentinel://127.0.0.1:{port}/mymaster/0?prefix={unique('hung')}")
    responses = []

    def call():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            responses.append(cache.wrap("a", lambda: 1))
            responses.append(cache.wrap("a", lambda: 2))

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(60)
    try:
        assert not worker.is_alive(), "a cache call on a hung Sentinel did not return within 60 s"
        assert [r["result"] for r in responses] == [1, 2]
        assert all(r.get("_cache_error") for r in responses)
    finally:
        listener.close()


@contextlib.contextmanager
def _failover_held(refused: tuple[str, ...]):
    """A master, two replicas and a Sentinel of the test's own, where the replica to be promoted
    refuses the ``refused`` commands (its ACL), so that a failover stays in one phase for up to its
    ``failover-timeout`` (60 s) instead of a tenth of a second. The other replica is never promoted
    (``replica-priority 0``). Yields the ports (master, replica to be promoted, Sentinel) and the
    master's process."""
    binary = shutil.which("redis-server")
    if binary is None:
        services.require_program("redis-server", "scripts/install.d/40-redis-postgres.sh")
    run_dir = Path(tempfile.mkdtemp(prefix="ac-held-failover-"))
    master, promoted, other, sentinel = (free_port() for _ in range(4))
    common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(run_dir)]
    config = run_dir / "sentinel.conf"  # the Sentinel rewrites it: a file of its own
    config.write_text(f"port {sentinel}\nbind 127.0.0.1\ndir {run_dir}\n"
                      f"sentinel monitor actioncache 127.0.0.1 {master} 1\n"
                      "sentinel down-after-milliseconds actioncache 1000\n"
                      "sentinel failover-timeout actioncache 60000\n")
    commands = {
        master: [binary, "--port", str(master), *common],
        promoted: [binary, "--port", str(promoted), *common, "--replicaof", "127.0.0.1", str(master),
                   "--user", "default", "on", "nopass", "~*", "&*", "+@all", *(f"-{c}" for c in refused)],
        other: [binary, "--port", str(other), *common, "--replicaof", "127.0.0.1", str(master),
                "--replica-priority", "0"],
        sentinel: [binary, str(config), "--sentinel"],
    }
    procs: dict[int, subprocess.Popen[bytes]] = {}
    try:
        for port, command in commands.items():
            log = open(run_dir / f"{port}.log", "wb")  # noqa: SIM115 - closed with the process
            procs[port] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            log.close()
            deadline = time.monotonic() + 15
            while not services.port_open("127.0.0.1", port, 0.2):
                assert time.monotonic() < deadline, f"redis-server on port {port} did not start; log: {run_dir}"
                time.sleep(0.05)
        deadline = time.monotonic() + 30
        for port in (promoted, other):  # each replica is in sync with the master, by its own account
            while True:
                client = redis.Redis(port=port, socket_timeout=2)
                link = client.info("replication").get("master_link_status")
                client.close()
                if link == "up":
                    break
                assert time.monotonic() < deadline, f"replica {port} not in sync within 30 s ({link}); log: {run_dir}"
                time.sleep(0.1)
        # The Sentinel reads a replica's state every 10 s (a fixed period of Redis), so it may learn
        # of a sync up to 10 s after it happened, and later on a loaded machine: 60 s, not 30.
        deadline = time.monotonic() + 60
        while True:  # the Sentinel has found both replicas, and both are in sync
            client = redis.Redis(port=sentinel, socket_timeout=2)
            replicas = client.sentinel_slaves("actioncache")
            client.close()
            if len([r for r in replicas if r.get("master-link-status") == "ok"]) == 2:
                break
            assert time.monotonic() < deadline, f"the Sentinel did not see both replicas in sync: {replicas}"
            time.sleep(0.2)
        yield master, promoted, sentinel, procs[master]
    finally:
        for proc in procs.values():
            proc.kill()  # also a stopped one
            proc.wait(timeout=15)
        shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture
def held_failover():
    """The failover held in its last phase: the replica promoted, the other replica being re-pointed
    at it, which it cannot follow (the promoted one refuses ``SYNC``/``PSYNC``)."""
    with _failover_held(("sync", "psync")) as held:
        yield held


@pytest.fixture
def held_before_promotion():
    """The failover held before its promotion: the chosen replica refuses ``REPLICAOF NO ONE``."""
    with _failover_held(("slaveof", "replicaof")) as held:
        yield held


def test_writes_go_to_the_promoted_replica_while_the_failover_ends(held_failover):
    """Regression (the cause of the flaky test above): between the replica's promotion and the end
    of the failover, SENTINEL MASTERS still lists the replaced master (flagged
    failover_in_progress), and redis-py's discovery found no master there (or, once the resumed
    master answered the Sentinel again, the replaced one): the store kept its pooled connection to
    the old master, which, resumed, still took the write, to be discarded when it is demoted. The
    Sentinels name the promoted replica from its promotion on (GET-MASTER-ADDR-BY-NAME): the write
    must go there. Here the failover is held in that phase (the fixture), not 0.1 s as usual."""
    master, promoted, sentinel_port, master_proc = held_failover
    prefix = unique("held")
    writer = Cache(f"redis+sentinel://127.0.0.1:{sentinel_port}/actioncache/15?prefix={prefix}",
                   cleanup_probability=0)
    try:
        assert "_cache_error" not in writer.wrap("k", lambda: 1, skip_cache=True)  # pooled: the master
        master_proc.send_signal(signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 60
            while _master(sentinel_port) != promoted:  # promoted (down-after 1 s); the failover goes on
                assert time.monotonic() < deadline, "the Sentinel did not promote the replica within 60 s"
                time.sleep(0.2)
        finally:
            master_proc.send_signal(signal.SIGCONT)
        client = redis.Redis(port=sentinel_port, socket_timeout=2)
        try:
            flags = client.sentinel_masters()["actioncache"]["flags"]
        finally:
            client.close()
        assert "failover_in_progress" in flags, flags  # the phase this test is about

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stored = writer.wrap("k", lambda: 2, skip_cache=True)
        assert "_cache_error" not in stored, stored
        key = writer.key_for("k")
        on_new = Cache(f"redis://127.0.0.1:{promoted}/15?prefix={prefix}")
        on_old = Cache(f"redis://127.0.0.1:{master}/15?prefix={prefix}")
        try:
            assert on_new.get(key)["value"] == 2  # the write is on the node the Sentinels name
            assert on_old.get(key)["value"] == 1  # and not on the replaced master
        finally:
            on_new.close()
            on_old.close()
    finally:
        writer.close()


def test_no_write_reaches_a_master_being_failed_over(held_before_promotion):
    """While a failover has not promoted the replica yet, the resumed old master answers the
    Sentinel again and SENTINEL MASTERS lists it as a master (flagged failover_in_progress):
    redis-py's discovery named it (or, while it was still flagged down, found no master, and the
    store kept its pooled connection to it for 5 s), so the write landed on a node about to be
    demoted. The Sentinels name no master fit to write to then: the call runs uncached (a miss)
    and the old master keeps its older value. Here the promotion is held (the fixture)."""
    master, _replica, sentinel_port, master_proc = held_before_promotion
    prefix = unique("unpromoted")
    writer = Cache(f"redis+sentinel://127.0.0.1:{sentinel_port}/actioncache/15?prefix={prefix}",
                   cleanup_probability=0)
    client = redis.Redis(port=sentinel_port, socket_timeout=2)
    try:
        assert "_cache_error" not in writer.wrap("k", lambda: 1, skip_cache=True)  # pooled: the master
        master_proc.send_signal(signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 60
            while "failover_in_progress" not in client.sentinel_masters()["actioncache"]["flags"]:
                assert time.monotonic() < deadline, "the Sentinel did not start a failover within 60 s"
                time.sleep(0.2)
        finally:
            master_proc.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 30
        while "s_down" in (flags := client.sentinel_masters()["actioncache"]["flags"]):
            assert time.monotonic() < deadline, "the Sentinel did not see the master answer again within 30 s"
            time.sleep(0.1)
        assert "failover_in_progress" in flags, flags  # the phase this test is about
        assert _master(sentinel_port) == master  # not replaced yet

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stored = writer.wrap("k", lambda: 2, skip_cache=True)
        assert stored["result"] == 2 and "name no master" in stored.get("_cache_error", ""), stored  # ran, uncached
        on_old = Cache(f"redis://127.0.0.1:{master}/15?prefix={prefix}")
        try:
            assert on_old.get(writer.key_for("k"))["value"] == 1  # the write did not reach the old master
        finally:
            on_old.close()
    finally:
        client.close()
        writer.close()
