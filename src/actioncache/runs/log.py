"""The run log and the fail log, kept in the cache's own store.

Every ``actioncache exec`` run that involves the cache adds one small entry:

* ``runs:log:{ISO time}:{random}``: a hit, miss, recorded or fresh run (what ``stats --since`` sums);
* ``runs:fail:{ISO time}:{random}``: a run that exited non-zero or could not start: tool, key, time,
  exit code and the tails of its stdout and stderr. Failures are never cached.

A hit served by the fast path (``runs.hitpath``) writes nothing to the store; it appends its record
to the store's *hit journal* (``_lean.hit_journal``: a sidecar in the user cache directory; earlier
versions kept it beside the SQLite file as ``-exec-hits.jsonl``) instead. ``records`` reads the
journal beside the run log, and the next run that opens the store folds it into the run log.

Entries are JSON through the cache's codec, expire after ``LOG_TTL_DAYS`` (``actioncache cleanup``
removes them) and carry ``_cache_type`` ``run_log``/``run_failure`` metadata. The ISO time in the
key lets ``--since`` pick entries by key alone. Writing them is best effort: a store that fails
never fails the tool's run.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import time
from typing import TYPE_CHECKING, Any, Iterator

from .._lean import append_record
from .._time import iso_utc
from ..records import Records

if TYPE_CHECKING:
    from ..cache import Cache

HIT_JOURNAL_SUFFIX = "-exec-hits.jsonl"
RUN_LOG_PREFIX = "runs:log:"
FAIL_LOG_PREFIX = "runs:fail:"
LOG_TTL_DAYS = 30
ERROR_TAIL_BYTES = 2000
_ISO_LEN = len("2026-01-01T00:00:00.000000Z")


def _folding(path: str) -> list[str]:
    directory, name = os.path.split(path)
    try:
        return [os.path.join(directory, n) for n in os.listdir(directory or ".")
                if n.startswith(name + ".") and n.endswith(".folding")]
    except OSError:
        return []


def append(cache: Cache, prefix: str, record: dict[str, Any], at: str | None = None) -> str | None:
    """Add one record; returns an error text when the store refused (never raises)."""
    now = time.time()
    at = at or iso_utc(now)
    record = {**record, "at": at}
    kind = "run_failure" if prefix == FAIL_LOG_PREFIX else "run_log"
    try:
        Records(cache.store, cache.codec).put(
            f"{prefix}{at}:{os.urandom(4).hex()}", record, kind=kind, ttl_s=LOG_TTL_DAYS * 86400,
            metadata={"tool": record.get("tool"), "at": at}, now=now)
    except Exception as exc:  # noqa: BLE001 - logging must not fail the run
        return f"run log not written: {exc}"
    return None


def error_tail(stderr: bytes) -> str:
    return stderr[-ERROR_TAIL_BYTES:].decode("utf-8", "replace")


def failure_text(output: dict[str, Any]) -> dict[str, str]:
    """The fail log's text: both tails (shellcheck reports on stdout), and ``error`` for one line of it."""
    stdout_tail = error_tail(output.get("stdout") or b"")
    stderr_tail = error_tail(output.get("stderr") or b"")
    error = output.get("start_error") or stderr_tail.strip() or stdout_tail.strip() or f"exit status {output.get('exit_code')}"
    return {"error": str(error)[-ERROR_TAIL_BYTES:], "stdout_tail": stdout_tail, "stderr_tail": stderr_tail}


_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_SPAN_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(since: str | float, now: float | None = None) -> float:
    """``"90s"``, ``"15m"``, ``"2h"``, ``"3d"``, ``"1w"`` ago, or an ISO 8601 time (UTC if no zone)."""
    if isinstance(since, (int, float)) and not isinstance(since, bool):
        return float(since)
    text = str(since).strip()
    span = _SPAN.match(text)
    if span:
        return (time.time() if now is None else now) - float(span.group(1)) * _SPAN_SECONDS[span.group(2)]
    try:
        when = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--since {since!r} is neither a span like 30m, 2h, 7d nor an ISO time like "
                         f"2026-01-31T12:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    return when.timestamp()


from .cost import journal_path  # noqa: E402 - defined beside the cost accounting that also reads it


def _journal_lines(path: str) -> Iterator[dict[str, Any]]:
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.readlines()
    except OSError:
        return
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn last line of a crashed writer
        if isinstance(record, dict) and isinstance(record.get("at"), str):
            yield record


def keep_in_journal(cache: Cache, prefix: str, record: dict[str, Any]) -> bool:
    """A run's record the store refused (``append`` failed: the store is down, locked, full), kept in
    the hit journal beside a SQLite store instead, so that ``stats --since`` still counts the run
    and the next fold moves it to the log it was meant for. Its counters were counted already
    (``counted``). False where there is no journal or it cannot be written."""
    path = journal_path(cache)
    if path is None:
        return False
    line = {**record, "at": iso_utc(time.time()), "counted": True}
    if prefix == FAIL_LOG_PREFIX:
        line["fail_log"] = True
    return append_record(path, line)


def fold_journal(cache: Cache, into: list[dict[str, Any]] | None = None) -> str | None:
    """Move the hit journal's records into the run log (best effort; returns an error text);
    ``into``: a list the folded records are also appended to, oldest first (their ledgers). A
    journal an earlier version kept beside the store is folded first, once."""
    from .cost import legacy_journal_path

    legacy = legacy_journal_path(cache)
    problem = _fold(cache, legacy, into) if legacy is not None and os.path.exists(legacy) else None
    path = journal_path(cache)
    if path is None or not os.path.exists(path):
        return problem
    return _fold(cache, path, into) or problem


def _fold(cache: Cache, path: str, into: list[dict[str, Any]] | None) -> str | None:
    taken = f"{path}.{os.getpid()}.folding"
    try:
        os.rename(path, taken)  # new hits start a new journal; this one is ours alone
    except OSError:
        return None
    from . import cost

    problem = None
    hit_costs: list[float] = []
    hit_cpus: list[float] = []  # the hits' CPU time: what cost.hit_cost_now scales to the load of a moment
    end_cpu = cost.exit_cpu_ms(cache.store)
    for line in _journal_lines(taken):
        record = cost.settle(line, end_cpu)  # the end of the process, after its last instant, added
        if into is not None:
            into.append(record)
        prefix = FAIL_LOG_PREFIX if record.pop("fail_log", False) else RUN_LOG_PREFIX
        counted = record.pop("counted", False)  # a full run's record kept here (keep_in_journal)
        problem = append(cache, prefix, record, at=record["at"]) or problem
        if not counted:
            cost.count_run(cache, record)  # the hit path counts nothing itself: a hit writes no store
        if record.get("hit") and isinstance(record.get("hit_ms"), (int, float)):
            hit_costs.append(float(record["hit_ms"]))
            if isinstance(record.get("cpu_ms"), (int, float)) and record["cpu_ms"] > 0:
                hit_cpus.append(float(record["cpu_ms"]))
    cost.add_hit_costs(cache.store, hit_costs, hit_cpus)
    if problem is None:
        os.unlink(taken)
    return problem


def records(cache: Cache, prefix: str, since: float | None = None) -> Iterator[dict[str, Any]]:
    """The records under ``prefix`` written at or after ``since`` (epoch seconds), oldest first
    (for the run log, the hit journal's records too)."""
    start = iso_utc(since) if since is not None else ""
    if prefix == RUN_LOG_PREFIX:
        path = journal_path(cache)
        if path is not None:
            from .cost import exit_cpu_ms, settle

            end_cpu = exit_cpu_ms(cache.store)  # as fold_journal settles them
            for pending in (path, *_folding(path)):
                yield from (settle(r, end_cpu) for r in _journal_lines(pending) if r["at"] >= start)
    keys = sorted(k for k in cache.store.find(pattern=prefix + "*") if k[len(prefix):len(prefix) + _ISO_LEN] >= start)
    for key in keys:
        entry = cache.store.get(key)
        if entry is None:
            continue
        try:
            record = cache.codec.decode(entry.value)
        except Exception:  # noqa: BLE001 - a damaged log line is skipped, not fatal
            continue
        if isinstance(record, dict):
            yield record
