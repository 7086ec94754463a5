"""What a command costs fresh, what a hit costs, and whether caching it is worth it.

Every figure is wall-clock milliseconds, as the loop waits for them. The rule, for every run
whatever its outcome: **saved = the command's own time - the process's cost**, where the cost is
the whole ``actioncache exec`` process, from the fork that started the launcher to its end, and the
command's own time (``fresh_ms``) is what running it directly would have cost (0 when nothing
would have run: a command that cannot start). A hit's saving is ``saved_ms``; any other run's is
minus its ``overhead_ms``; time saved is their sum.

* **fresh**: the command run directly, without ``actioncache`` in front. A run that ran it
  untraced (a measuring run, a cheap run, a run not cached) has it: its own run. A miss runs it
  under ``strace``, which adds its own start and end and two stops of the process at every traced
  call, by a factor that depends on the machine's load, so the traced time is an upper bound; the
  run's figure is the trace's (``trace.command_ms``: the span from the command's first call to
  its last, less the typical cost of a traced call for each; ``fresh_from: trace``). The first
  lookup that finds the new entry runs the command once more, untraced, and that run's time is its
  fresh time (``runner.ExecRun._measure``, which also checks that the output is the recorded
  one); the miss's figure less that (``estimate_error_ms``, either sign) is counted in the
  measuring run's overhead, once. Only then does the entry serve hits.
* **hit**: the whole ``actioncache exec`` process that replayed the result, from the fork that
  started it to the end of the replay, interpreter start-up included (``lean.process_ms``), and the
  end of the process after that, which it cannot time itself (``measure_exit``, ``settle``).
* **saved** by a hit: fresh minus hit. **Overhead** of any other run: the whole process minus the
  command's fresh time (a miss: start-up, tracing, hashing, storing). **Time saved** is net: what
  the hits saved less the overhead, which is what the loop gained over running the same commands
  directly.

A command whose fresh run is cheaper than a hit is not cached: the measuring run removes its entry
and leaves a *cheap* verdict for its key instead (a file in the SQLite store's ``cheap`` folder,
``_lean.store_sidecar``, in the user cache directory, which the hit path checks before it loads SQLite; an entry under ``CHEAP_PREFIX`` elsewhere).
For ``CHEAP_TTL_S`` later runs of it simply become the command (``exec``), as in mode ``off``; then
the next run is traced and judged again. Once the hit path has run it so, the ``actioncache``
command's shell part runs the same invocation without starting Python (``direct``). The hit cost it is compared with is taken under the load
of the same moment (``hit_cost_now``): the store's running average of the hits' CPU time
(``HIT_COST_KEY``) times the load a hit-shaped process (``probe``) met right after the fresh run,
plus that process's end. A miss whose traced run was already cheaper than that is judged at once.
``$ACTIONCACHE_CHEAP_MS=N`` sets the threshold instead and skips the measuring run (a traced run
under N ms is cheap; an entry serves hits from its first lookup, its time saved judged against the
trace's figure for the command's own time); ``ACTIONCACHE_CHEAP_MS=0`` caches every command.

The **tail** of a run that went through the full command: its record is timed in ``runner._finish``,
but the process goes on to write that record, count it, fold the hit journal, close the store, run
its exit handlers and tear the interpreter down: 50-200 ms the loop waits for, which a record
written before them cannot hold. So the full ``exec`` ends through ``end_process``: it does what
the interpreter's exit does before its teardown (joins the threads, runs the ``atexit`` handlers,
flushes), appends one ``tail`` record (``overhead_ms``: the process's time since the record was
timed) to the hit journal, and leaves with ``os._exit`` (no teardown left to miss). A tail record
is overhead, not a run (``counts_of``). Only beside a SQLite store (where the journal is); other
stores' tails are not counted.

A command worth caching whose misses never pay (its world changes before every run, so every
run is a traced miss recorded for a hit that never comes) is judged per family, the command as
the loop writes it, by ``ledger``: its misses then run directly for a while, not recorded.

Counts go to the store's one set of counters (``records.count``) under ``exec:TOOL``: hits,
misses, stores, failures, ``uncached_cheap``, ``time_saved_ms`` (net), ``hit_cost_ms``,
``overhead_ms``; ``actioncache stats`` shows them beside every other action's.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from .. import _lean as lean
from .._record import record

if TYPE_CHECKING:
    from ..cache import Cache
    from ..stores.base import CacheStore

CHEAP_PREFIX = "runs:cheap:"
COST_PREFIX = "runs:cost:"
HIT_COST_KEY = COST_PREFIX + "hit"
CHEAP_TTL_S = lean.CHEAP_TTL_S
CHEAP_ENV = "ACTIONCACHE_CHEAP_MS"
HIT_JOURNAL_SUFFIX = "-exec-hits.jsonl"  # log.HIT_JOURNAL_SUFFIX
HIT_GUESS_MS = 30.0  # a hit on a quiet machine, before one is timed here (scaled by the load now)
TAIL_OUTCOME = "tail"  # a journal record of a full run's tail: overhead only (end_process)
EMA_ALPHA = 0.2
COUNTER_ACTION = "exec:"  # counters are kept under action "exec:TOOL" (a counter name, not a key)


# --- the hit cost and the cheap verdicts ---------------------------------------------------------


def read_json(store: CacheStore, key: str) -> dict[str, Any] | None:
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


def write_json(store: CacheStore, key: str, value: dict[str, Any], ttl_s: float | None, kind: str) -> None:
    from ..records import Records

    try:  # plain JSON (b"j"), which the hit path reads without the codec
        Records(store).put_raw(key, b"j" + lean.dumps(value).encode("utf-8"), kind=kind, ttl_s=ttl_s,
                                        action="exec", metadata={})
    except Exception:  # noqa: BLE001 - an estimate not written is re-measured later
        pass


def hit_cost_ms(store: CacheStore) -> tuple[float, bool]:
    """(the store's average hit cost in wall-clock ms, whether it was measured); ``HIT_GUESS_MS``
    before any hit. Wall time as the hits met it, at whatever load they met: ``hit_cost_now``
    scales a hit to the load of the moment."""
    known = read_json(store, HIT_COST_KEY)
    if known and isinstance(known.get("hit_ms"), (int, float)) and known.get("n"):
        return float(known["hit_ms"]), True
    return HIT_GUESS_MS, False


def add_hit_costs(store: CacheStore, samples: list[float], cpu_samples: list[float] | None = None) -> None:
    """Fold timed hits into the store's running averages (exponential moving averages): their wall
    time (``samples``) and, when the hits recorded it, their CPU time (``cpu_samples``)."""
    if not samples and not cpu_samples:
        return
    known = read_json(store, HIT_COST_KEY) or {}
    value = dict(known)
    for field, count_field, new in (("hit_ms", "n", samples), ("cpu_ms", "cpu_n", cpu_samples or [])):
        average = known.get(field) if isinstance(known.get(field), (int, float)) else None
        count = int(known.get(count_field) or 0)
        for sample in new:
            average = sample if average is None else average + EMA_ALPHA * (sample - average)
            count += 1
        if average is not None:
            value[field], value[count_field] = round(float(average), 3), count
    write_json(store, HIT_COST_KEY, value, None, "exec_cost")


def process_cpu_ms() -> float:
    """CPU milliseconds this process has used since it was forked (the launcher's shell before its
    exec included: a process's CPU clock survives exec), plus its reaped children's."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() * 1000.0 + (children.ru_utime + children.ru_stime) * 1000.0


def load_stretch() -> float | None:
    """The machine's load as this process has felt it so far: its wall-clock time since the fork
    over the CPU time it used (at least 1; on a busy machine a process waits for a CPU, and a hit's
    wall time grows by the same factor). None where the wall time is unknown (no ``/proc``)."""
    wall = lean.process_ms()
    cpu = process_cpu_ms()
    if wall is None or cpu <= 0.0:
        return None
    return max(1.0, wall / cpu)


@record(frozen=True)
class Probe:
    """A hit-shaped process started and reaped just now (``probe``): the load it met and its end."""

    stretch: float  # its wall time since its fork over its CPU time, at its last instant (at least 1)
    end_ms: float  # from its last instant until its end was seen (``settle``)


@record(frozen=True)
class HitCost:
    """What a hit is expected to cost now, and where that figure comes from (for ``--explain``)."""

    ms: float
    source: str  # "set" ($ACTIONCACHE_CHEAP_MS), "probed", "scaled" (by this process's load), "timed", "guess"
    cpu_ms: float | None = None
    stretch: float | None = None
    end_ms: float = 0.0

    @property
    def measured(self) -> bool:
        return self.source != "guess"

    def describe(self) -> str:
        if self.source == "set":
            return f"{self.ms:.0f} ms, as ${CHEAP_ENV} sets it"
        if self.source == "probed":
            return (f"{self.ms:.0f} ms now: {self.cpu_ms:.0f} ms of CPU a hit on this store x{self.stretch:.2f}, the "
                    f"load a hit-shaped process met just now, + {self.end_ms:.0f} ms for its end")
        if self.source == "scaled":
            return (f"{self.ms:.0f} ms now: {self.cpu_ms:.0f} ms of CPU a hit on this store with its end, "
                    f"x{self.stretch:.2f} for the load of this moment")
        if self.source == "timed":
            return f"{self.ms:.0f} ms, the average of the hits timed on this store"
        scaled = f" x{self.stretch:.2f} for the load of this moment" if self.stretch and self.stretch > 1.0 else ""
        return f"{self.ms:.0f} ms: a first guess ({HIT_GUESS_MS:.0f} ms{scaled}) until a hit is timed on this store"


def hit_cost_now(store: CacheStore, stretch: float | None, probed: Probe | None = None) -> HitCost:
    """A hit's cost at the load of this moment, to compare with a fresh run timed in the same moment.
    The hits' CPU time barely moves with the load; their wall time is that CPU time stretched by it.
    So the store keeps the CPU time, and the wall time now is CPU x the stretch a hit-shaped process
    met just now (``probe``) plus that process's end: both sides of "cheaper than a hit" under the
    same load, whatever the load was when the hits were timed. Without a probe, ``stretch`` (this
    process's own wall / CPU, ``load_stretch``; a long process meets a heavy load worse than a short
    one does, so this figure is high under load). Stores whose hits carry no CPU time fall back to
    their average wall time."""
    threshold = explicit_threshold()
    if threshold is not None:
        return HitCost(threshold, "set")
    known = read_json(store, HIT_COST_KEY) or {}
    cpu = _positive(known.get("cpu_ms")) if known.get("cpu_n") else None
    end = _positive(known.get("exit_cpu_ms")) or 0.0
    if probed is not None and cpu is not None:
        return HitCost(cpu * probed.stretch + probed.end_ms, "probed", cpu, probed.stretch, probed.end_ms)
    if stretch is not None and cpu is not None:
        return HitCost((cpu + end) * stretch, "scaled", cpu + end, stretch)
    hit_ms, measured = hit_cost_ms(store)
    if measured:
        return HitCost(hit_ms, "timed")
    if probed is not None:
        return HitCost(HIT_GUESS_MS * probed.stretch + probed.end_ms, "guess", None, probed.stretch, probed.end_ms)
    return HitCost((HIT_GUESS_MS + end) * (stretch or 1.0), "guess", None, stretch)


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    return float(value)


# --- the end of a process: what the caller waits for after the last instant a process can time ----
#
# A process can time itself from its fork (lean.process_ms) but not its own end: after its last
# instant the kernel still tears down its memory (after os._exit, or at the exec of a cheap run)
# and the caller still has to be woken. On this kind of machine that is several milliseconds for a
# Python process (none for a small C program), a fifth of a hit: uncounted, it made hits look
# cheaper than the loop found them. So it is measured: a measuring run (runner._measure) starts a
# process shaped like a hit (the interpreter, SQLite's module, the hit path's modules) that reports
# its own wall and CPU time and its last instant, and times from that instant to the moment its end
# is seen (``probe``), in the same moment as the fresh run it judges. The store keeps the end as
# CPU-time-like milliseconds (divided by the probe's stretch, ``exit_cpu_ms``); each fast-path record
# carries its own stretch (wall / CPU), and ``settle`` adds the end, at that stretch, to the hit's
# cost or the cheap run's overhead. A full run's tail adds it in ``end_process``.

_PROBE = ("import sys\nsys.path[:0] = {path!r}\nimport os, time, _sqlite3\n"
          "import actioncache.runs.hitpath, actioncache.runs.keys, actioncache.runs.manifest\n"
          "from actioncache._lean import process_ms\n"
          "wall, cpu = process_ms(), time.process_time() * 1000.0\n"
          "os.write(1, f'{{wall}} {{cpu}} {{time.clock_gettime(time.CLOCK_BOOTTIME)!r}}'.encode())\nos._exit(0)\n")


def probe(store: CacheStore) -> Probe | None:
    """Start and reap a hit-shaped process now: the load it met (its wall / CPU) and its end (from its
    last instant until it was reaped), folded into the store's ``exit_cpu_ms``; None when it could
    not be timed. It costs about a hit's start-up, counted in the overhead of the run that asks."""
    import subprocess
    import sys

    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(lean.__file__))))
    try:
        child = subprocess.Popen([sys.executable, "-S", "-c", _PROBE.format(path=[package_root])],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert child.stdout is not None
        said = child.stdout.read()
        child.stdout.close()
        code = child.wait(timeout=30)
        seen = time.clock_gettime(time.CLOCK_BOOTTIME)
        wall, cpu, last = (float(x) for x in said.split())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    end_ms = (seen - last) * 1000.0
    if code != 0 or not 0.0 <= end_ms < 5000.0 or not cpu > 0.0 or not wall >= 0.0:
        return None
    found = Probe(max(1.0, wall / cpu), end_ms)
    known = read_json(store, HIT_COST_KEY) or {}
    average = _positive(known.get("exit_cpu_ms"))
    sample = end_ms / found.stretch
    average = sample if average is None else average + EMA_ALPHA * (sample - average)
    write_json(store, HIT_COST_KEY, {**known, "exit_cpu_ms": round(average, 3),
                                      "exit_n": int(known.get("exit_n") or 0) + 1}, None, "exec_cost")
    return found


def exit_cpu_ms(store: CacheStore) -> float | None:
    """The store's figure for a process's end (``measure_exit``), None before the first."""
    return _positive((read_json(store, HIT_COST_KEY) or {}).get("exit_cpu_ms"))


def settle(record: dict[str, Any], end_cpu_ms: float | None) -> dict[str, Any]:
    """A fast-path record (a hit, a cheap run) with the end of its process added to its cost, at
    the record's own load stretch (``hit_ms`` or ``overhead_ms`` over ``cpu_ms``); as it was when it
    carries no CPU time, is settled already, or no end was measured yet."""
    cpu = _positive(record.get("cpu_ms"))
    if end_cpu_ms is None or cpu is None or "exit_ms" in record:
        return record
    wall = _positive(record.get("hit_ms") if record.get("hit") else record.get("overhead_ms"))
    if wall is None:
        return record
    end = round(end_cpu_ms * max(1.0, wall / cpu), 3)
    out = {**record, "exit_ms": end}
    if record.get("hit"):
        out["hit_ms"] = round(wall + end, 3)
        if isinstance(record.get("saved_ms"), (int, float)):
            out["saved_ms"] = round(float(record["saved_ms"]) - end, 3)
    else:
        out["overhead_ms"] = round(wall + end, 3)
    return out


def explicit_threshold() -> float | None:
    """``$ACTIONCACHE_CHEAP_MS`` as a number of milliseconds (0: cache every command), else None."""
    setting = os.environ.get(CHEAP_ENV, "").strip()
    try:
        threshold = float(setting) if setting else -1.0
    except ValueError:
        threshold = -1.0
    return threshold if threshold >= 0 else None


def cheap_verdict(store: CacheStore, fresh_ms: float, stretch: float | None = None,
                  probed: Probe | None = None) -> tuple[bool, HitCost]:
    """(is a fresh run of ``fresh_ms`` cheaper than a hit, the hit cost it was compared with);
    ``probed``/``stretch``: the load when the fresh run was timed (``probe``, ``load_stretch``)."""
    hit = hit_cost_now(store, stretch, probed)
    return fresh_ms < hit.ms, hit


def _sqlite_file(cache: Cache) -> str | None:
    """The file of ``cache``'s store when it is a SQLite file (the only store the fast path reads)."""
    path = getattr(cache.store, "path", None)
    return str(path) if path is not None and cache.url.startswith("sqlite:") else None


def journal_path(cache: Cache) -> str | None:
    """The hit journal of ``cache``'s store (``_lean.hit_journal``; SQLite files only)."""
    path = _sqlite_file(cache)
    return lean.hit_journal(path) if path is not None else None


def legacy_journal_path(cache: Cache) -> str | None:
    """Where earlier versions kept the hit journal: beside the store (folded once, then gone)."""
    path = _sqlite_file(cache)
    return path + HIT_JOURNAL_SUFFIX if path is not None else None


def cheap_file(cache: Cache, key: str) -> str | None:
    """Where the cheap verdict of ``key`` lives for a SQLite store (the hit path checks it before
    it even loads SQLite, so a cheap command costs what mode ``off`` costs); None for other stores."""
    path = _sqlite_file(cache)
    if path is None:
        return None
    return os.path.join(lean.store_sidecar(path, "cheap"), key.rsplit(":", 1)[-1])


def mark_cheap(cache: Cache, key: str, fresh_ms: float, hit_ms: float, *, ttl_s: float = CHEAP_TTL_S,
               now: float | None = None, extra: dict[str, Any] | None = None) -> None:
    """Leave the verdict that ``key`` runs directly for ``ttl_s`` (a churn verdict, ``ledger``, is
    one for a family, with ``extra`` saying so). A file's verdict lives ``CHEAP_TTL_S`` from its
    mtime wherever it is read (here, the hit path, the shell part's deadline), so a shorter one is
    written with its mtime set back by the difference."""
    value = {"fresh_ms": round(fresh_ms, 3), "hit_ms": round(hit_ms, 3), "key": key, **(extra or {})}
    path = cheap_file(cache, key)
    if path is None:
        write_json(cache.store, CHEAP_PREFIX + key, value, ttl_s, "exec_cheap")
        return
    folder, name = os.path.split(path)
    fd = lean.own_directory(folder, create=True)  # never through a symlink planted in its place
    if fd is None:
        return
    now = time.time() if now is None else now
    mtime = None if ttl_s >= CHEAP_TTL_S else int(now - CHEAP_TTL_S + ttl_s)
    try:
        if lean.write_whole(fd, name, lean.dumps(value).encode("utf-8"), mtime):
            lean.sweep_expired(fd, now)
    finally:
        os.close(fd)


def cheap_mark(cache: Cache, key: str) -> dict[str, Any] | None:
    """The live cheap verdict of ``key`` (younger than ``CHEAP_TTL_S``), else None."""
    path = cheap_file(cache, key)
    if path is None:
        return read_json(cache.store, CHEAP_PREFIX + key)
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


def expect_tail(cache: Cache, record: dict[str, Any], timed_ms: float, stretch: float | None) -> None:
    """Remember a timed record, so that ``end_process`` can count what the process costs after it
    (its end too: the store's ``exit_cpu_ms``, read now while the store is open, at ``stretch``,
    the load the run met before it started the command: after a command that waits, this process's
    own wall / CPU says nothing about the load)."""
    journal = journal_path(cache)
    if journal is not None:
        kept = {k: record.get(k) for k in ("tool", "scope", "key", "family")}
        end_cpu = exit_cpu_ms(cache.store)
        kept["exit_ms"] = round(end_cpu * (stretch or 1.0), 3) if end_cpu is not None else 0.0
        _TAIL[:] = [(journal, kept, timed_ms)]


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
            if stream is not None:  # None: closed when we started (>&-)
                stream.flush()
        except (OSError, ValueError):
            pass
    total = lean.process_ms()
    if total is not None and total > timed_ms:
        # The end of this process after its last instant (os._exit below): a full run's end costs
        # at least what a hit's does (its memory is larger).
        end = float(record.get("exit_ms") or 0.0)
        record.update(outcome=TAIL_OUTCOME, overhead_ms=round(total - timed_ms + end, 3),
                      at=lean.iso_utc(time.time()))
        lean.append_record(journal, record)
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
    if outcome == "unrecorded":
        deltas["unrecorded"] = 1  # a miss of a churning command, run directly (ledger)
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
