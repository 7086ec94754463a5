"""The ``actioncache run`` hit path: a whole run answered from a record, before the engine loads.

A full run whose every step is decided by what it read (cache.wrap hits, ``run:`` blocks that can
only compute, see :mod:`actioncache.agents.runrecord`) leaves a *run record* in the run index
(``agent-runs.db`` in the user cache directory): its stdout and stderr bytes, the files it read
with their SHA-256, and the store rows it served with a fingerprint of each. The record's key (the
*lookup key*, :func:`lookup_key`) is a hash of everything that decides the run before it reads a
file: the command line as typed, the working directory, the whole environment, the agent file's
bytes and real path, an ``--input @file``'s bytes, the output encodings, the Python and actioncache
versions.

The next ``actioncache run`` with the same lookup key replays the record only if every file still
has the same bytes and every row is still the same row, unexpired: then the full engine would read
the same files, compute the same keys, get the same rows and print the same bytes. Anything else
(no record, a changed file, a changed or expired row, a flag this parser does not know exactly,
``--stream``, another store than SQLite, a platform without the index) returns None and the full
engine runs. So this path may be incomplete but never different.

It imports only ``os``, ``sys``, SQLite's C module and :mod:`actioncache._lean` (no yaml,
jinja2, json, argparse, typing or the engine): the point of it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    from typing import Any

INDEX_NAME = "agent-runs.db"
RECORD_VERSION = 1
# Flags of `actioncache run` this path understands (spelled out whole, as argparse also accepts
# prefixes: a prefix falls through). A flag that takes a value -> True.
_FLAGS = {"--input": True, "--store": True, "--untrusted": False, "--no-run": False, "--root": True,
          "--allow-host": True, "--allow-env": True}
# A store row's expiry is checked with this margin (seconds): the engine may judge by a store clock.
EXPIRY_MARGIN_S = 1.0


def parse(argv: list[str]) -> dict[str, Any] | None:
    """``{"agent": path, "input": text or None}`` for the plain forms of ``actioncache run``'s
    arguments; None for anything else (``--stream``, ``-h``, a prefix of a flag, ``--``, ...)."""
    agent: str | None = None
    values: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-") and arg != "-":
            name, eq, value = arg.partition("=")
            takes = _FLAGS.get(name)
            if takes is None:
                return None
            if takes:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        return None
                    value = argv[i]
                values[name] = value
            elif eq:
                return None
        elif agent is None:
            agent = arg
        else:
            return None
        i += 1
    if agent is None:
        return None
    return {"agent": agent, "input": values.get("--input")}


def index_path() -> str | None:
    """The run index: beside the default store (``config.user_cache_dir``), on Linux only."""
    if sys.platform != "linux":
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "actioncache", INDEX_NAME)


def lookup_key(argv: list[str]) -> str | None:
    """The record's key for ``actioncache run ARGV`` here and now; None when the command is not
    one this path can answer. The full engine computes it with this same function."""
    from .._lean import dumps, file_sha256, sha256

    opts = parse(argv)
    if opts is None:
        return None
    agent = opts["agent"]
    try:
        if "\n" in agent or not os.path.isfile(agent):
            return None  # YAML text on the command line, or no such file: the full engine says
        parts: dict[str, Any] = {
            "record": RECORD_VERSION,
            "actioncache": getattr(sys.modules.get("actioncache"), "__version__", None),
            "python": sys.version,
            "executable": sys.executable,
            "interpreter": [list(sys.flags), sys.warnoptions, sorted(map(str, sys._xoptions.items()))],
            "argv": list(argv),
            "cwd": os.getcwd(),
            "env": sorted([name, value] for name, value in os.environ.items()),
            "agent": [os.path.realpath(agent), file_sha256(agent)],
            "encodings": [_encoding(sys.stdout), _encoding(sys.stderr)],
        }
        text = opts["input"]
        if text is not None and text.startswith("@"):
            if os.stat(text[1:]).st_mode & 0o170000 != 0o100000:
                return None  # a pipe, /dev/stdin, a FIFO: reading it here would leave the engine nothing
            parts["input_file"] = [os.path.realpath(text[1:]), file_sha256(text[1:])]
    except (OSError, ValueError):
        return None
    return str(sha256(dumps(parts).encode("utf-8")).hexdigest())


def _encoding(stream: Any) -> list[str | None] | None:
    if stream is None:
        return None
    return [getattr(stream, "encoding", None), getattr(stream, "errors", None)]


def row_fingerprint(row: Any) -> str:
    """A store row (value, metadata, created_at, expires_at) as one digest."""
    from .._lean import dumps, sha256

    value, metadata, created_at, expires_at = row
    return str(sha256(dumps([sha256(bytes(value)).hexdigest(), str(metadata), float(created_at),
                             None if expires_at is None else float(expires_at)]).encode("utf-8")).hexdigest())


def stat_kind(result: Any, follow: bool = True) -> str:
    """What ``os.stat`` said about a path, as far as a probe (exists, is_file, is_dir) can tell."""
    if result is None:
        return "missing"
    kind = result.st_mode & 0o170000
    return {0o100000: "file", 0o040000: "dir", 0o120000: "link"}.get(kind, "other")


def listing_digest(path: str) -> str:
    """A directory's names, as one digest (what an import searching it would find)."""
    from .._lean import sha256

    return str(sha256("\0".join(sorted(os.listdir(path))).encode("utf-8", "surrogateescape")).hexdigest())


ROW_SQL = "SELECT value, metadata, created_at, expires_at FROM entries WHERE key = ?"


def read_record(index: str, key: str) -> dict[str, Any] | None:
    from .._lean import loads, select_one

    row = select_one(index, "SELECT record FROM runs WHERE lookup = ?", (key,))
    if row is None:
        return None
    try:
        record = loads(row[0])
    except (ValueError, TypeError):
        return None
    return record if isinstance(record, dict) and record.get("version") == RECORD_VERSION else None


def still_valid(record: dict[str, Any], now: float) -> bool:
    """The record's files have the same bytes and its rows are the same rows, unexpired."""
    from .._lean import connect_read_only, file_sha256, sqlite3_module, store_closed, store_opening

    try:
        valid_until = record["valid_until"]
        if valid_until is not None and not now < float(valid_until) - EXPIRY_MARGIN_S:
            return False
        for path, real, digest in record["files"]:
            if os.path.realpath(path) != real:
                return False  # a link now leads elsewhere (a trust check judges where it leads)
            try:
                now_digest: str | None = file_sha256(path)
            except (FileNotFoundError, NotADirectoryError):
                now_digest = None
            if now_digest != digest:
                return False
        for path, follow, kind in record["probed"]:
            try:
                now_kind = stat_kind(os.stat(path, follow_symlinks=follow), follow)
            except (FileNotFoundError, NotADirectoryError):
                now_kind = "missing"
            if now_kind != kind:
                return False
        for path, digest in record["listed"]:
            if listing_digest(path) != digest:
                return False
        store = record["store"]
        rows = record["rows"]
    except (OSError, KeyError, TypeError, ValueError):
        return False
    if not rows:
        return True
    if not isinstance(store, str) or not os.path.isfile(store):
        return False
    sqlite3 = sqlite3_module()
    store_opening(store)  # the directory that holds the store keeps its mtime (_lean.store_closed)
    try:
        db = connect_read_only(store)
        if db is None:
            return False
        try:
            for key, fingerprint in rows:
                row = db.execute(ROW_SQL, (key,)).fetchone()
                if (None if row is None else row_fingerprint(row)) != fingerprint:
                    return False
        except (sqlite3.Error, TypeError, ValueError):
            return False
        finally:
            db.close()
    finally:
        store_closed(store)
    return True


def try_hit(argv: list[str]) -> int | None:
    """Replay a recorded run and return its exit code; None when the full engine must run."""
    index = index_path()
    if index is None or not os.path.isfile(index):
        return None
    key = lookup_key(argv)
    if key is None:
        return None
    record = read_record(index, key)
    if record is None:
        return None
    import time

    if not still_valid(record, time.time()):
        return None
    try:
        stdout = record["stdout"].encode("utf-8", "surrogateescape")
        stderr = record["stderr"].encode("utf-8", "surrogateescape")
    except (KeyError, AttributeError):
        return None
    from .._lean import one_output_stream, output_problem

    if output_problem():
        return None  # closed, a device, or two opens of one file: the full path runs it uncached
    if stdout and stderr and one_output_stream():
        return None  # one stream (2>&1): the record kept two, whose interleaving it cannot give back
    _write(2, stderr)
    _write(1, stdout)
    _count(record)
    return 0


def _count(record: dict[str, Any]) -> None:
    """Add the counts the recorded run added (its hits, time saved) to the store's counters, as
    the full engine's flush does: one statement; best effort, a replay never fails over its counts."""
    rows = record.get("counters") or []
    store = record.get("store")
    if not rows or not isinstance(store, str):
        return
    from .._lean import sqlite3_module, store_closed, store_opening

    sqlite3 = sqlite3_module()
    store_opening(store)  # the directory that holds the store keeps its mtime (_lean.store_closed)
    try:
        try:
            db = sqlite3.connect(f"file:{store}?mode=rw", uri=True, timeout=5.0, isolation_level=None)
        except sqlite3.Error:
            return
        try:
            db.execute("INSERT INTO counters (name, value) VALUES " + ", ".join(["(?, ?)"] * len(rows))
                       + " ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value",
                       [item for name, delta in rows for item in (str(name), float(delta))])
        except (sqlite3.Error, TypeError, ValueError):
            pass
        finally:
            db.close()
    finally:
        store_closed(store)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except BrokenPipeError:
        pass
