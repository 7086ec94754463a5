"""A Redis Cluster whose seeds hang when a process starts (issue 32, F9).

The cluster client reads the slot map from the seeds when it is made (on the store's first use).
Seeds that accept connections and never answer must cost the first call one short question per
seed, once: the reader's timeout bounds it and the timeouts open the breaker, so the call's other
operations (its clock read, its write) do not ask them again. Counted by the connections each silent
seed accepts, not by durations.
"""

from __future__ import annotations

import socket
import threading
import warnings

from actioncache import Cache


class _Silent:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.held: list[socket.socket] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_silent_seeds_are_asked_once_per_call_and_then_skipped():
    seeds = [_Silent() for _ in range(3)]
    try:
        cache = Cache("redis+cluster://" + ",".join(f"127.0.0.1:{s.port}" for s in seeds) + "/0?prefix=startup")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = cache.wrap("a", lambda: 1)
            asked = sum(s.accepted for s in seeds)
            second = cache.wrap("a", lambda: 2)
        assert first["result"] == 1 and first.get("_cache_error")
        assert second["result"] == 2 and "circuit breaker is open" in second["_cache_error"]
        assert asked <= len(seeds), asked  # one question per seed (was: three operations x two clients' tries)
        assert sum(s.accepted for s in seeds) == asked  # the breaker skipped the second call
    finally:
        for s in seeds:
            s.close()
