"""What a command costs fresh, what a hit costs, and whether caching it is worth it.

Every figure is wall-clock milliseconds, as the loop waits for them:

* **fresh**: the command run directly, without ``actioncache`` in front. A miss runs it under
  ``strace``, which slows it by a factor that depends on the machine's load, so that time is only
  an upper bound: the first lookup that finds the new entry runs the command once more, untraced,
  and that run's time is its fresh time (``runner.ExecRun._measure``, which also checks that the
  output is the recorded one). Only then does the entry serve hits.
* **hit**: the whole ``actioncache exec`` process that replayed the result, from the fork that
  started it to the end of the replay, interpreter start-up included (``lean.process_ms``).
* **saved** by a hit: fresh minus hit. **Overhead** of any other run: the whole process minus the
  command's fresh time (a miss: start-up, tracing, hashing, storing). **Time saved** is net: what
  the hits saved less the overhead, which is what the loop gained over running the same commands
  directly.

A command whose fresh run is cheaper than a hit is not cached: the measuring run removes its entry
and leaves a *cheap* verdict for its key instead (a file in ``{store}-exec-cheap/`` beside a SQLite
store, which the hit path checks before it loads SQLite; an entry under ``CHEAP_PREFIX`` elsewhere).
For ``CHEAP_TTL_S`` later runs of it simply become the command (``exec``), as in mode ``off``; then
the next run is traced and judged again. The hit cost it is compared with is the store's running
average of timed hits (``HIT_COST_KEY``), ``HIT_GUESS_MS`` before the first one.
``$ACTIONCACHE_CHEAP_MS=N`` sets the threshold instead and skips the measuring run (a traced run
under N ms is cheap; an entry serves hits from its first lookup, its time saved judged against the
traced time, an overestimate); ``ACTIONCACHE_CHEAP_MS=0`` caches every command.

The **tail** of a run that went through the full command: its record is timed in ``runner._finish``,
but the process goes on to write that record, count it, fold the hit journal, close the store, run
its exit handlers and tear the interpreter down: 50-200 ms the loop waits for, which a record
written before them cannot hold. So the full ``exec`` ends through ``end_process``: it does what
the interpreter's exit does before its teardown (joins the threads, runs the ``atexit`` handlers,
flushes), appends one ``tail`` record (``overhead_ms``: the process's time since the record was
timed) to the hit journal, and leaves with ``os._exit`` (no teardown left to miss). A tail record
is overhead, not a run (``counts_of``). Only beside a SQLite store (where the journal is); other
stores' tails are not counted.

Counts go to the store's one set of counters (``records.count``) under ``exec:TOOL``: hits,
misses, stores, failures, ``uncached_cheap``, ``time_saved_ms`` (net), ``hit_cost_ms``,
``overhead_ms``; ``actioncache stats`` shows them beside every other action's.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from . import lean

if TYPE_CHECKING:
    from ..cache import Cache
    from ..stores.base import CacheStore

CHEAP_PREFIX = "runs:cheap:"
COST_PREFIX = "runs:cost:"
HIT_COST_KEY = COST_PREFIX + "hit"
CHEAP_TTL_S = 86400.0
CHEAP_DIR_SUFFIX = "-exec-cheap"  # a directory beside a SQLite store: one file per cheap key
CHEAP_ENV = "ACTIONCACHE_CHEAP_MS"
HIT_JOURNAL_SUFFIX = "-exec-hits.jsonl"  # log.HIT_JOURNAL_SUFFIX
HIT_GUESS_MS = 30.0
TAIL_OUTCOME = "tail"  # a journal record of a full run's tail: overhead only (end_process)
EMA_ALPHA = 0.2
COUNTER_ACTION = "exec:"  # counters are kept under action "exec:TOOL" (a counter name, not a key)


# --- the hit cost and the cheap verdicts ---------------------------------------------------------


def _read_json(store: CacheStore, key: str) -> dict[str, Any] | None:
    try:
        entry = store.get(key)
    except Exception:  # noqa: BLE001 - an unreadable estimate is no estimate
        return None
    if entry is None or entry.value[:1] != b"j":
        return None
    try:
        value = lean.loads(entry.value[1:].decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _write_json(store: CacheStore, key: str, value: dict[str, Any], ttl_s: float | None, kind: str) -> None:
    from ..records import Records

    try:  # plain JSON (b"j"), which the hit path reads without the codec
        Records(store).put_raw(key, b"j" + lean.dumps(value).encode("utf-8"), kind=kind, ttl_s=ttl_s,
                                        action="exec", metadata={})
    except Exception:  # noqa: BLE001 - an estimate not written is re-measured later
        pass


def hit_cost_ms(store: CacheStore) -> tuple[float, bool]:
    """(the store's average hit cost, whether it was measured); ``HIT_GUESS_MS`` before any hit."""
    known = _read_json(store, HIT_COST_KEY)
    if known and isinstance(known.get("hit_ms"), (int, float)) and known.get("n"):
        return float(known["hit_ms"]), True
    return HIT_GUESS_MS, False


def add_hit_costs(store: CacheStore, samples: list[float]) -> None:
    """Fold timed hits into the store's running average (an exponential moving average)."""
    if not samples:
        return
    known = _read_json(store, HIT_COST_KEY) or {}
    average = known.get("hit_ms") if isinstance(known.get("hit_ms"), (int, float)) else None
    count = int(known.get("n") or 0)
    for sample in samples:
        average = sample if average is None else average + EMA_ALPHA * (sample - average)
        count += 1
    _write_json(store, HIT_COST_KEY, {"hit_ms": round(float(average or 0.0), 3), "n": count}, None, "exec_cost")


def explicit_threshold() -> float | None:
    """``$ACTIONCACHE_CHEAP_MS`` as a number of milliseconds (0: cache every command), else None."""
    setting = os.environ.get(CHEAP_ENV, "").strip()
    try:
        threshold = float(setting) if setting else -1.0
    except ValueError:
        threshold = -1.0
    return threshold if threshold >= 0 else None


def cheap_verdict(store: CacheStore, fresh_ms: float) -> tuple[bool, float, bool]:
    """(is a fresh run cheaper than a hit, the hit cost compared with, whether it was measured)."""
    threshold = explicit_threshold()
    if threshold is not None:
        return fresh_ms < threshold, threshold, True
    hit_ms, measured = hit_cost_ms(store)
    return fresh_ms < hit_ms, hit_ms, measured


def journal_path(cache: Cache) -> str | None:
    """The hit journal of ``cache``'s store (SQLite files only: the only store the fast path reads)."""
    path = getattr(cache.store, "path", None)
    return f"{path}{HIT_JOURNAL_SUFFIX}" if path is not None and cache.url.startswith("sqlite:") else None


def cheap_file(cache: Cache, key: str) -> str | None:
    """Where the cheap verdict of ``key`` lives beside a SQLite store (the hit path checks it before
    it even loads SQLite, so a cheap command costs what mode ``off`` costs); None for other stores."""
    journal = journal_path(cache)
    if journal is None:
        return None
    return os.path.join(journal[: -len(HIT_JOURNAL_SUFFIX)] + CHEAP_DIR_SUFFIX, key.rsplit(":", 1)[-1])


def mark_cheap(cache: Cache, key: str, fresh_ms: float, hit_ms: float) -> None:
    value = {"fresh_ms": round(fresh_ms, 3), "hit_ms": round(hit_ms, 3), "key": key}
    path = cheap_file(cache, key)
    if path is None:
        _write_json(cache.store, CHEAP_PREFIX + key, value, CHEAP_TTL_S, "exec_cheap")
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(lean.dumps(value))
        os.replace(tmp, path)
    except OSError:
        pass


def cheap_mark(cache: Cache, key: str) -> dict[str, Any] | None:
    """The live cheap verdict of ``key`` (younger than ``CHEAP_TTL_S``), else None."""
    path = cheap_file(cache, key)
    if path is None:
        return _read_json(cache.store, CHEAP_PREFIX + key)
    try:
        if os.stat(path).st_mtime < time.time() - CHEAP_TTL_S:
            return None
        with open(path, encoding="utf-8") as handle:
            value = lean.loads(handle.read())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and value.get("key") == key else None


def forget_cheap(cache: Cache, key: str) -> None:
    path = cheap_file(cache, key)
    try:
        if path is None:
            cache.store.delete(CHEAP_PREFIX + key)
        else:
            os.unlink(path)
    except Exception:  # noqa: BLE001 - the verdict then expires by itself
        pass


# --- the tail of a full run ------------------------------------------------------------------------

_TAIL: list[tuple[str, dict[str, Any], float]] = []  # (journal, record, process ms when the record was timed)


def expect_tail(cache: Cache, record: dict[str, Any], timed_ms: float) -> None:
    """Remember a timed record, so that ``end_process`` can count what the process costs after it."""
    journal = journal_path(cache)
    if journal is not None:
        _TAIL[:] = [(journal, {k: record.get(k) for k in ("tool", "scope", "key")}, timed_ms)]


def end_process(code: int) -> int:
    """End a full ``exec`` run: what the interpreter's exit does before its teardown, then the
    tail record, then ``os._exit(code)``. Returns ``code`` (and the normal exit follows) when no
    record is waiting for its tail."""
    if not _TAIL:
        return code
    journal, record, timed_ms = _TAIL.pop()
    import atexit
    import sys
    import threading

    main = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    total = lean.process_ms()
    if total is not None and total > timed_ms:
        record.update(outcome=TAIL_OUTCOME, overhead_ms=round(total - timed_ms, 3), at=lean.iso_utc(time.time()))
        try:
            fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, lean.dumps(record).encode("utf-8") + b"\n")  # one write: appends never interleave
            finally:
                os.close(fd)
        except OSError:
            pass
    os._exit(code)


# --- counting ------------------------------------------------------------------------------------


def count_run(cache: Cache, record: dict[str, Any]) -> None:
    """One exec run into the store's counters (``records.count``), under ``exec:TOOL``."""
    from ..records import count

    deltas = counts_of(record)
    if deltas:
        count(cache.store, COUNTER_ACTION + str(record.get("tool")), **deltas)


def counts_of(record: dict[str, Any]) -> dict[str, float]:
    """The counter deltas of one run-log record (the same arithmetic for counters and ``--since``)."""
    deltas: dict[str, float] = {}
    outcome = record.get("outcome")
    if record.get("hit"):
        deltas["hits"] = 1
        deltas["time_saved_ms"] = _number(record.get("saved_ms"))
        deltas["hit_cost_ms"] = _number(record.get("hit_ms"))
    elif record.get("lookup") and outcome != "cheap":
        deltas["misses"] = 1  # a cheap command's first (traced, judged) run is a miss: "cheap_miss"
    if outcome in ("miss", "record"):
        deltas["stores"] = 1
    if outcome == "fail":
        deltas["failures"] = 1
    if outcome in ("cheap", "cheap_miss"):
        deltas["uncached_cheap"] = 1
    overhead = _number(record.get("overhead_ms"))
    if overhead:
        deltas["overhead_ms"] = overhead
        deltas["time_saved_ms"] = deltas.get("time_saved_ms", 0.0) - overhead
    if record.get("phase_blocked"):
        deltas["phase_blocked"] = 1
    return deltas


def is_run(record: dict[str, Any]) -> bool:
    """Whether a run-log record is a run (not the ``tail`` of one: overhead only)."""
    return record.get("outcome") != TAIL_OUTCOME


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0.0
    return float(value)
