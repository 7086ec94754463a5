"""Private Redis and PostgreSQL servers that a test may stop and start (outage tests).

The machine's shared servers (127.0.0.1:6379 and :5432) are used by everyone's tests and are
never stopped; these run on a free loopback port from the same binaries, with their data in a
temporary directory, and are stopped by the fixture that started them. A missing binary skips
locally and fails under CI=true, like services.require.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import services


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _missing(what: str) -> None:
    message = f"{what} is not installed; scripts/install.d/40-redis-postgres.sh installs it"
    if services.in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _wait_for_port(port: int, up: bool, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while services.port_open("127.0.0.1", port, 0.2) != up:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} on port {port} did not {'start' if up else 'stop'} within {timeout}s")
        time.sleep(0.05)


class PrivateRedis:
    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            _missing("redis-server")
        self.binary = binary
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="ac-redis-")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--logfile", os.path.join(self.dir, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _wait_for_port(self.port, True, "private redis-server")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=15)
            self.proc = None
        _wait_for_port(self.port, False, "private redis-server")

    def destroy(self) -> None:
        if self.proc is not None:
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivatePostgres:
    """initdb into a temporary directory and run it on a free port (as user postgres when root:
    PostgreSQL refuses to run as root)."""

    def __init__(self) -> None:
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        initdb = bins[-1] if bins else shutil.which("initdb")
        if initdb is None:
            _missing("PostgreSQL's initdb")
        self.bin = Path(initdb).parent
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="ac-pg-")
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                _missing("the 'postgres' system user")
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "-N")
        self.running = False

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self.as_user, str(self.bin / tool), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", self.data, "-o", options, "-w", "-l", os.path.join(self.dir, "log"), "start")
        self.running = True
        _wait_for_port(self.port, True, "private PostgreSQL")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        self.running = False
        _wait_for_port(self.port, False, "private PostgreSQL")

    def destroy(self) -> None:
        if self.running:
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def private_redis():
    """A redis-server of this module's own, which its tests may stop and start."""
    server = PrivateRedis()
    server.start()
    yield server
    server.destroy()


@pytest.fixture(scope="module")
def private_postgres():
    """A PostgreSQL instance of this module's own, which its tests may stop and start."""
    server = PrivatePostgres()
    server.start()
    yield server
    server.destroy()
