"""A near cache over a server that is down when the process starts (issue 32, F11).

``Cache(url)`` must construct and run uncached, as it does without ``near=on``: the near cache
starts empty and not listening, and listens once the server answers. PostgreSQL's feed installs a
trigger and LISTENs when it is made, so its failure used to propagate out of ``Cache(...)``.
"""

from __future__ import annotations

import socket
import warnings

import pytest

from actioncache import Cache


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("scheme", ["postgresql://postgres@127.0.0.1:{port}/x", "redis://127.0.0.1:{port}/0"])
def test_a_near_cache_over_a_server_that_is_down_constructs_and_runs_uncached(scheme):
    if scheme.startswith("postgresql"):
        pytest.importorskip("psycopg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cache = Cache(scheme.format(port=_closed_port()) + "?near=on")
        try:
            response = cache.wrap("a", lambda: 1)
        finally:
            cache.close()
    assert response["result"] == 1 and response.get("_cache_error")
