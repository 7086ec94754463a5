"""A fault injector for networked stores: a TCP proxy on loopback in front of a real server that
can be told to hang (a fault injector, not a stand-in: the server behind it is real).

``hang()``: every connection, open or new, is accepted and never answered (what a stuck server,
a full accept queue behind a load balancer or a paused VM looks like to a client). ``answer()``:
new connections reach the server again (connections that lost bytes while hung are out of step
and are closed, as a client's timeout would have closed them). With no target at all the proxy
only ever accepts and never answers.
"""

from __future__ import annotations

import selectors
import socket
import threading


class FaultProxy:
    def __init__(self, target: tuple[str, int] | None = None) -> None:
        self.target = target
        self.hanging = threading.Event()
        if target is None:
            self.hanging.set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def hang(self) -> None:
        self.hanging.set()

    def answer(self) -> None:
        with self._lock:  # connections that swallowed bytes while hung are out of step: close them
            for sock in self._sockets:
                _close(sock)
            self._sockets.clear()
        self.hanging.clear()

    def close(self) -> None:
        self._closed.set()
        _close(self._listener)
        with self._lock:
            for sock in self._sockets:
                _close(sock)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        if not self.hanging.is_set() and self.target is not None:
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                return
            with self._lock:
                self._sockets.append(upstream)
        peers = {client: upstream, upstream: client} if upstream is not None else {client: None}
        with selectors.DefaultSelector() as sel:
            for sock in peers:
                sel.register(sock, selectors.EVENT_READ)
            while not self._closed.is_set():
                for key, _ in sel.select(timeout=0.2):
                    try:
                        data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    except OSError:
                        data = b""
                    if not data:
                        for sock in peers:
                            if sock is not None:
                                _close(sock)
                        return
                    other = peers[key.fileobj]  # type: ignore[index]
                    if other is not None and not self.hanging.is_set():
                        try:
                            other.sendall(data)
                        except OSError:
                            return
                    # hanging: the bytes are swallowed, nothing is answered


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
