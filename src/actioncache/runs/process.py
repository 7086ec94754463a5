"""Run a tool, streaming its output live while keeping every byte for the cache.

On a miss the user sees the tool's stdout and stderr as they come (each on its own stream, or, when
ours are one stream as with ``2>&1``, on one pipe in the order the tool wrote them); the captured
bytes are what a later hit replays, so a hit is byte-for-byte the tool's output.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import IO, Mapping, Sequence

from .._record import record

#: The most output (stdout and stderr together) a run keeps for recording. A command that prints
#: more still runs to the end with its output streamed, but nothing is kept and nothing is stored.
#: ``ACTIONCACHE_MAX_OUTPUT`` (bytes) changes it.
MAX_CAPTURE_BYTES = 64 * 1024 * 1024


def max_capture_bytes() -> int:
    raw = os.environ.get("ACTIONCACHE_MAX_OUTPUT", "").strip()
    try:
        value = int(raw) if raw else MAX_CAPTURE_BYTES
    except ValueError:
        return MAX_CAPTURE_BYTES
    return value if value >= 0 else MAX_CAPTURE_BYTES


@record(frozen=True)
class Outcome:
    exit_code: int
    stdout: bytes
    stderr: bytes
    duration_ms: float
    #: why the output was not kept whole (over the capture bound; the reader of our output went
    #: away): such a run must not be recorded. None: ``stdout``/``stderr`` are every byte.
    incomplete: str | None = None


#: What :func:`write_failure` returns when the reader of our output went away (EPIPE).
GONE = "gone"


def emit(stream: IO[str], data: bytes) -> bool:
    """Write bytes to stdout/stderr as they are; False when that failed (the reader is gone)."""
    return write_failure(stream, data) is None


def write_failure(stream: IO[str] | None, data: bytes) -> str | None:
    """Write bytes to stdout/stderr as they are. None when written; :data:`GONE` when the reader
    went away (EPIPE); otherwise why the write failed (``No space left on device``), said once
    on stderr in one line, never a traceback."""
    if not data or stream is None:
        return None
    try:
        stream.buffer.write(data)  # type: ignore[attr-defined]
        stream.flush()
    except (BrokenPipeError, ValueError):
        return GONE
    except OSError as exc:
        why = exc.strerror or str(exc)
        name = "output" if stream is sys.stdout else "error output"
        try:
            os.write(2, f"actioncache exec: cannot write the command's {name}: {why}\n".encode())
        except OSError:
            pass
        return why
    return None


class _Capture:
    """The bytes kept for recording, both streams against one bound."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = 0
        self.lock = threading.Lock()
        self.incomplete: str | None = None
        self.failure: str | None = None  # a write of its output failed (not EPIPE): the exit is then non-zero

    def keep(self, sink: list[bytes], chunk: bytes) -> None:
        with self.lock:
            if self.incomplete is not None:
                return
            if self.kept + len(chunk) > self.limit:
                self.incomplete = (f"its output is over {self.limit} bytes, the most a run records "
                                   "(ACTIONCACHE_MAX_OUTPUT); it ran uncached, streaming")
                return
            self.kept += len(chunk)
            sink.append(chunk)

    def failed(self, which: str, why: str) -> None:
        with self.lock:
            self.failure = why
            self.incomplete = f"writing its {which} failed ({why}); it ran uncached"

    def gone(self, which: str) -> None:
        with self.lock:
            self.incomplete = f"the reader of its {which} went away; the command was stopped as a pipeline stops it"


def _pump(pipe: IO[bytes], sink: list[bytes], echo: IO[str] | None, capture: _Capture, which: str) -> None:
    """Copy the command's output: kept (up to the bound) and echoed. When our own reader is gone
    we close the command's pipe, so its next write fails with SIGPIPE, as in a shell pipeline."""
    read = pipe.read1 if hasattr(pipe, "read1") else pipe.read
    while True:
        chunk = read(65536)
        if not chunk:
            break
        capture.keep(sink, chunk)
        failure = write_failure(echo, chunk)
        if failure == GONE:
            capture.gone(which)
            break
        if failure is not None:  # the command keeps running; what it writes next goes nowhere
            capture.failed(which, failure)
            echo = None
    pipe.close()


def _feed(pipe: IO[bytes], data: bytes, more: bool = False) -> None:
    """Write ``data`` to the command's stdin; ``more``: then copy the rest of our own stdin after it."""
    try:
        pipe.write(data)
        while more:
            chunk = os.read(0, 1 << 20)
            if not chunk:
                break
            pipe.write(chunk)
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            pipe.close()
        except BrokenPipeError:
            pass


def _stdin_channel(stdin_data: bytes | None) -> tuple[int | None, IO[bytes] | None]:
    """The command's stdin when we feed it ``stdin_data``: the descriptor it gets and our end to
    write to. A pipe, or a socket when our own stdin is one (as it is under a harness that uses
    socket pairs): the command sees the kind of stdin it sees without the cache (``stat -L
    /dev/stdin``, ``getsockopt``), in every mode. None, None: it inherits ours."""
    if stdin_data is None:
        return None, None
    import socket
    import stat

    try:
        is_socket = stat.S_ISSOCK(os.fstat(0).st_mode)
    except OSError:
        is_socket = False
    if is_socket:
        ours, theirs = socket.socketpair()
    else:
        read_end, write_end = os.pipe()
        return read_end, open(write_end, "wb")
    writer = open(ours.detach(), "wb")  # noqa: SIM115 - closed by _feed, as the pipe's end above
    return theirs.detach(), writer


def _start(argv: Sequence[str], stdin_data: bytes | None, **popen: object) -> tuple[subprocess.Popen[bytes],
                                                                                     IO[bytes] | None]:
    """Start ``argv`` with its stdin fed from ``stdin_data`` (``_stdin_channel``) or inherited."""
    child_end, writer = _stdin_channel(stdin_data)
    try:
        proc = subprocess.Popen(list(argv), stdin=child_end, **popen)  # type: ignore[call-overload]
    except BaseException:
        if writer is not None:
            writer.close()
        raise
    finally:
        if child_end is not None:
            os.close(child_end)
    return proc, writer


def run_tool(argv: Sequence[str], *, stdin_data: bytes | None = None, stream: bool = True,
             env: Mapping[str, str] | None = None, pass_fds: Sequence[int] = (), stdin_more: bool = False,
             one_stream: bool = False) -> Outcome:
    """Run ``argv``; raises OSError when it cannot start (not found, not executable).

    ``stdin_data``: fed to the command's stdin (then the rest of ours with ``stdin_more``); None: it
    inherits ours. ``pass_fds``: inherited descriptors it keeps (``cat /dev/fd/3 3<f``, ``<(...)``).
    A tool killed by a signal reports ``128 + signal``, as shells do.
    ``one_stream``: its stdout and stderr are one pipe (``keys.one_output_stream``), kept whole in
    ``stdout`` in the order written and echoed to our stdout; ``stderr`` is empty.
    """
    started = time.perf_counter()
    proc, writer = _start(argv, stdin_data, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if one_stream else subprocess.PIPE, env=env,
                          pass_fds=tuple(pass_fds), restore_signals=True)
    out: list[bytes] = []
    err: list[bytes] = []
    capture = _Capture(max_capture_bytes())
    workers = [threading.Thread(target=_pump, args=(proc.stdout, out, sys.stdout if stream else None, capture,
                                                    "output"), daemon=True)]
    if not one_stream:
        workers.append(threading.Thread(target=_pump, args=(proc.stderr, err, sys.stderr if stream else None,
                                                            capture, "error output"), daemon=True))
    if stdin_data is not None:
        workers.append(threading.Thread(target=_feed, args=(writer, stdin_data, stdin_more), daemon=True))
    for worker in workers:
        worker.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:  # the tool got the same SIGINT; let it finish its own way
        code = proc.wait()
    for worker in workers:
        worker.join()
    if code < 0:
        code = 128 - code
    if capture.failure is not None and code == 0:
        code = 1  # as a command whose own write failed exits
    return Outcome(code, b"".join(out), b"".join(err), (time.perf_counter() - started) * 1000, capture.incomplete)


def default_signals() -> None:
    """Give the signals Python ignores back their default action before we become a command
    (``execvp``): a command started with SIGPIPE ignored never stops when its reader does."""
    from .._lean import default_signals as restore

    restore()


def run_passthrough(argv: Sequence[str], *, stdin_data: bytes | None = None, stdin_more: bool = False,
                    pass_fds: Sequence[int] = (), env: Mapping[str, str] | None = None) -> int:
    """Run ``argv`` on our own stdout/stderr (nothing cached, nothing captured).

    Its stdin is ours, or, when we read ours already (``stdin_data``), those bytes and the rest."""
    if stdin_data is None:
        code = subprocess.call(list(argv), pass_fds=tuple(pass_fds), env=env)
    else:
        proc, writer = _start(argv, stdin_data, pass_fds=tuple(pass_fds), env=env)
        feeder = threading.Thread(target=_feed, args=(writer, stdin_data, stdin_more), daemon=True)
        feeder.start()
        try:
            code = proc.wait()
        except KeyboardInterrupt:
            code = proc.wait()
        feeder.join(timeout=1.0)
    return 128 - code if code < 0 else code
