"""A scratchpad writer paused (SIGSTOP) past its session lease never overwrites the item the next
writer stored: every write under a face's lease (records.Records.lease) goes through the store's
fenced write with the lease's token (issue 27, item 1, for the faces' own leases).

Real SQLite, Redis, PostgreSQL and a Redis Cluster; the paused writer is a real second process. Its store is the
real one behind a pass-through that stops right after the session lease is granted (the moment a
GC pause or SIGSTOP would hurt most: the lease held, nothing written yet).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from stores.backends import BACKENDS

from actioncache import Cache
from actioncache.scratchpad import Scratchpad

WRITER = """
import json, sys
from actioncache.scratchpad import Scratchpad
from actioncache.scratchpad.errors import ScratchpadError
from actioncache.stores.base import open_store

class PausesAfterTheLease:
    # The store protocol, passed through; stops once the session lease is granted.
    def __init__(self, store):
        self.store = store
    def __getattr__(self, name):
        return getattr(self.store, name)
    def acquire_lease(self, name, ttl_s):
        token = self.store.acquire_lease(name, ttl_s)
        if token is not None and name.startswith("scratchpad:"):
            print("holding", flush=True)
            sys.stdin.readline()  # the test pauses this process here, past the lease
        return token

pad = Scratchpad(PausesAfterTheLease(open_store(sys.argv[1])), sys.argv[2], lease_ttl_s=1.0)
try:
    meta = pad.write("older", "the paused writer's item", task_id="t", turn_id="u")
    print(json.dumps({"stored": meta["storageKey"]}), flush=True)
except ScratchpadError as exc:
    print(json.dumps({"error": exc.code, "message": str(exc)}), flush=True)
"""


# Redis Cluster: the session lease lives in another slot than the items, so the write checks the
# lease in its slot, then writes (docs/backends.md); a writer paused before that check is refused.
@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres", "redis-cluster"])
def test_a_writer_paused_past_its_session_lease_does_not_overwrite_the_next_writer(backend, tmp_path, src_env):
    store = BACKENDS[backend](tmp_path)
    url, session = store.url, "fenced-session"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, url, session], env=src_env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "holding"  # it holds the session lease, nothing written
        os.kill(writer.pid, signal.SIGSTOP)

        # The next writer waits for the lease to lapse (1 s), takes it and writes the same key.
        pad = Scratchpad(url, session, lease_ttl_s=1.0, lease_wait_s=30.0)
        newer = pad.write("newer", "the next writer's item", task_id="t", turn_id="u")

        os.kill(writer.pid, signal.SIGCONT)
        out, _ = writer.communicate("go\n", timeout=60)
        said = json.loads(out.strip().splitlines()[-1])
        assert said.get("error") == "busy", f"the paused writer must be refused, not store: {said}"
        assert "paused past its session lease" in said["message"]

        assert pad.read(newer["storageKey"])["data"] == "newer", "the newer item stays"
        assert [item["description"] for item in pad.list()] == ["the next writer's item"]
        lost = Cache(url).stats()["by_action"].get("scratchpad", {}).get("lease_lost")
        assert lost == 1, "the refused write is counted where stats() shows it"
    finally:
        if writer.poll() is None:
            os.kill(writer.pid, signal.SIGCONT)
            writer.kill()
        store.close()
