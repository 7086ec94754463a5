"""What a command costs fresh, what a hit costs, and whether caching it is worth it.

Every figure here is wall-clock milliseconds as the loop waits for them:

* **fresh**: the command run directly, without ``actioncache`` in front. A miss runs it under
  ``strace``, which slows every traced system call, so the fresh time of a traced run is estimated:
  the traced time less strace's own start-up and a per-event cost times the events it logged, both
  measured once per strace binary on this machine (``calibration``). A run that is not traced (a
  cheap command, tracing off) is measured as it is.
* **hit**: the whole ``actioncache exec`` process that replayed the result, from the fork that
  started it to the end of the replay, interpreter start-up included (``lean.process_ms``).
* **saved** by a hit: fresh minus hit. **Overhead** of a miss: the whole process minus fresh.
  **Net saved**: what the hits saved less what the misses and the cheap runs added, which is what
  the loop gained against running the same commands directly.

A command whose fresh run is cheaper than a hit is not cached: its miss leaves a *cheap* verdict
for its key instead of its output (a file in ``{store}-exec-cheap/`` beside a SQLite store, which
the hit path checks before it loads SQLite; an entry under ``CHEAP_PREFIX`` elsewhere), and for
``CHEAP_TTL_S`` later runs of it simply become the command (``exec``), as in mode ``off``; then the
next run is traced and judged again. The hit cost it is compared with is the store's running
average of timed hits (``HIT_COST_KEY``), ``HIT_GUESS_MS`` before the first one, or
``$ACTIONCACHE_CHEAP_MS`` (0 caches every command).

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
EMA_ALPHA = 0.2
CALIBRATION_EVENTS = 400
ACTION_PREFIX = "exec:"


# --- strace's own cost ---------------------------------------------------------------------------


def _calibration_file(strace: str) -> str | None:
    from ..config import user_cache_dir

    try:
        info = os.stat(strace)
    except OSError:
        return None
    return os.path.join(str(user_cache_dir()), f"tracer-cost-{info.st_ino}-{info.st_mtime_ns}.json")


def _timed(argv: list[str]) -> float:
    import subprocess

    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - started) * 1000.0


def calibration(strace: str) -> dict[str, float]:
    """``{"start_ms", "event_ms"}``: strace's start-up and its cost per logged event, measured once
    per strace binary (the fastest of three runs of each case, the least disturbed by load)."""
    import tempfile

    from .trace import traced_argv

    path = _calibration_file(strace)
    if path is not None:
        try:
            with open(path, encoding="utf-8") as handle:
                known = lean.loads(handle.read())
            if isinstance(known, dict) and all(isinstance(known.get(k), float) for k in ("start_ms", "event_ms")):
                return {"start_ms": known["start_ms"], "event_ms": known["event_ms"]}
        except (OSError, ValueError):
            pass
    loop = ["sh", "-c", f"i=0; while [ $i -lt {CALIBRATION_EVENTS} ]; do [ -e /nonexistent-actioncache-probe ]; "
            "i=$((i+1)); done"]
    quiet = ["sh", "-c", ":"]
    with tempfile.TemporaryDirectory(prefix="actioncache-calibrate-") as tmp:
        log = os.path.join(tmp, "trace")
        plain_quiet = min(_timed(quiet) for _ in range(3))
        traced_quiet = min(_timed(traced_argv(strace, log, quiet)) for _ in range(3))
        plain_loop = min(_timed(loop) for _ in range(3))
        traced_loop = min(_timed(traced_argv(strace, log, loop)) for _ in range(3))
        events = count_events(log)
    start_ms = max(0.0, traced_quiet - plain_quiet)
    event_ms = max(0.0, (traced_loop - plain_loop - start_ms) / max(events, 1))
    result = {"start_ms": round(start_ms, 3), "event_ms": round(event_ms, 5)}
    if path is not None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp_path = f"{path}.{os.getpid()}.tmp"
            with open(tmp_path, "w", encoding="utf-8") as handle:
                handle.write(lean.dumps({k: float(v) for k, v in result.items()}))
            os.replace(tmp_path, path)
        except OSError:
            pass
    return {k: float(v) for k, v in result.items()}


def count_events(log_path: str) -> int:
    """The system calls strace logged (one line each; a call split by another process's counts once)."""
    count = 0
    try:
        with open(log_path, "rb") as handle:
            for line in handle:
                if b"resumed>" not in line:
                    count += 1
    except OSError:
        return 0
    return count


def untraced_ms(traced_ms: float, events: int, strace: str) -> float:
    """The fresh time of a run that took ``traced_ms`` under strace and logged ``events`` calls."""
    known = calibration(strace)
    return max(0.0, traced_ms - known["start_ms"] - events * known["event_ms"])


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


def cheap_verdict(store: CacheStore, fresh_ms: float) -> tuple[bool, float, bool]:
    """(is a fresh run cheaper than a hit, the hit cost compared with, whether it was measured).
    ``$ACTIONCACHE_CHEAP_MS`` sets the threshold instead (0: cache every command)."""
    setting = os.environ.get(CHEAP_ENV, "").strip()
    if setting:
        try:
            threshold = float(setting)
        except ValueError:
            threshold = -1.0
        if threshold >= 0:
            return fresh_ms < threshold, threshold, True
    hit_ms, measured = hit_cost_ms(store)
    return fresh_ms < hit_ms, hit_ms, measured


def cheap_file(cache: Cache, key: str) -> str | None:
    """Where the cheap verdict of ``key`` lives beside a SQLite store (the hit path checks it before
    it even loads SQLite, so a cheap command costs what mode ``off`` costs); None for other stores."""
    from .log import journal_path

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


# --- counting ------------------------------------------------------------------------------------


def count_run(cache: Cache, record: dict[str, Any]) -> None:
    """One exec run into the store's counters (``records.count``), under ``exec:TOOL``."""
    from ..records import count

    deltas = counts_of(record)
    if deltas:
        count(cache.store, ACTION_PREFIX + str(record.get("tool")), **deltas)


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


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0.0
    return float(value)
