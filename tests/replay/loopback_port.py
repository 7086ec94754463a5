"""A loopback HTTP server on a free port whose number holds none of the values a test types.

A plan's secrets are replaced by ``[secret]`` in every string it stores, its start URL included, and
a short secret (a 4-digit PIN, a 3-digit CVC) sits in a random 5-digit port now and then: PIN "1987"
on port 41987 made ``https://127.0.0.1:4[secret]/settings`` of the recorded URL, and the replay
rightly refused a start page it could no longer match. That is the cache being safe, not the test's
subject, so the tests' sites never listen on such a port.
"""

from __future__ import annotations

from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_on_loopback(handler: type[BaseHTTPRequestHandler], avoiding: Iterable[str] = ()) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1 on a free port in whose digits no value of ``avoiding`` appears."""
    values = [value for value in avoiding if value]
    for _ in range(100):
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        if not any(value in str(server.server_port) for value in values):
            return server
        server.server_close()
    raise RuntimeError(f"no free port without {values} in 100 tries")
