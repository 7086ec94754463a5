"""Whether recording a command's misses pays: its ledger of recent runs, and the churn verdict.

A cheap verdict (``cost``) answers "is one hit worth more than a fresh run?", per key. A loop can
still lose time to a command whose hits are worth taking, when it rarely gets one: the world it
reads changes between its runs (a commit before every ``llm_ro`` REPORT, a test suite whose sources
change every iteration), so every run is a traced miss, recorded for a hit that never comes, and
sometimes an untraced measuring run on top. Each key is new, so no key's history shows it; the
command as the loop writes it does.

The **family** of a run is the command as the loop writes it (``keys.family_key``: tool, argv,
working directory and scope; not the world it reads, the environment or the git HEAD). Every run
that looked its key up carries its family, the hit path's too, and each fold of the hit journal
adds the runs to the family's **ledger** (``LEDGER_PREFIX``): the last ``WINDOW`` runs, each with
what it saved (a hit: the command's fresh time less the hit's cost) or cost (any other run: its
overhead, and the tail of its process), the rule ``cost.counts_of`` counts for ``stats``.

After a traced miss, when the ledger's last ``WINDOW`` runs hold at least ``MIN_MISSES`` misses
and the cache's net cost over them (their overhead less what their hits saved) is more than one
hit of the command would save (its own time less a hit's cost), the family is **churning**: for a
while a miss of it is run directly, untraced and not recorded, as a command that is not cached
would be. So a quick command whose misses cost more than its hits save is judged after three
misses in a row, and an expensive one (an LLM call of seconds) only after its misses have cost
more than a hit of it is worth. A lookup still serves any entry that still holds (a hit is always
taken, and shows in the ledger). The period is the time the window's runs took (so about a
window's worth of runs go unrecorded: a loop that stalled for a few runs records again soon)
and doubles with each renewal, up to 8 times the window's time (and a day), so looking again
costs one traced miss in every 8 windows or so, and a loop that settles after churning for hours
is seen within 8 windows' time (an outside tester's loop, with no such bound, waited 50 runs);
a judgement that finds the family paying resets it. Running a command directly is never a wrong
answer: a verdict only ever costs hits, never correctness.

The verdict is a file beside a SQLite store (``cost.cheap_file``'s folder, named by the family's
hash; its mtime is set so that it expires as a cheap verdict a day old does), which the hit path
checks with one ``stat`` when it has no hit; elsewhere an entry under ``cost.CHEAP_PREFIX``.
``$ACTIONCACHE_CHEAP_MS`` (a threshold for tests and tuning: every command judged by it alone)
turns the judgement off, as it turns off the measured cheap verdicts.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from . import cost

if TYPE_CHECKING:
    from ..cache import Cache

LEDGER_PREFIX = "runs:ledger:"
WINDOW = 10  # runs a judgement looks at
MIN_MISSES = 3  # misses in the window before a family may be judged churning
MIN_PERIOD_S = 1.0
MIN_PERIOD_ENV = "ACTIONCACHE_CHURN_MIN_S"  # a longer shortest period, in seconds (a loop that wants one)
MAX_DOUBLINGS = 3  # a period is at most 8 windows' time: a loop that settles is seen within 8 windows
UNRECORDED = "unrecorded"  # the outcome of a miss run directly under a churn verdict


def _counted(record: dict[str, Any]) -> bool:
    """Whether a run belongs in its family's ledger: it looked its key up (a key judged cheap runs
    directly without one, and says nothing about the family's hits)."""
    return bool(record.get("family")) and bool(record.get("lookup")) and record.get("outcome") != "cheap"


def add(cache: Cache, records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Fold ``records`` (oldest first: the hit journal's, then this run's) into their families'
    ledgers; returns the ledgers written, by family."""
    changed: dict[str, dict[str, Any]] = {}
    for record in records:
        family = record.get("family")
        if not isinstance(family, str) or not family:
            continue
        tail = record.get("outcome") == cost.TAIL_OUTCOME
        if not tail and not _counted(record):
            continue
        ledger = changed.get(family)
        if ledger is None:
            ledger = changed[family] = read(cache, family)
        saved = cost.counts_of(record).get("time_saved_ms", 0.0)  # a tail's: minus its overhead
        runs: list[list[Any]] = ledger["runs"]
        if tail:  # the end of a full run's process: that run's cost
            if runs:
                runs[-1][1] = round(float(runs[-1][1]) + saved, 3)
            continue
        miss = not record.get("hit")
        fresh = record.get("fresh_ms")
        fresh = round(float(fresh), 3) if isinstance(fresh, (int, float)) and not isinstance(fresh, bool) else 0.0
        runs.append([_epoch(record.get("at")), round(saved, 3), int(miss), fresh])
        del runs[:-WINDOW]
    for family, ledger in changed.items():
        _write(cache, family, ledger)
    return changed


def read(cache: Cache, family: str) -> dict[str, Any]:
    known = cost.read_json(cache.store, LEDGER_PREFIX + family) or {}
    runs = known.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, list) and len(r) == 4 for r in runs):
        runs = []
    strikes = known.get("strikes")
    return {"runs": runs, "strikes": strikes if isinstance(strikes, int) and strikes >= 0 else 0}


def _write(cache: Cache, family: str, ledger: dict[str, Any]) -> None:
    cost.write_json(cache.store, LEDGER_PREFIX + family, ledger, cost.CHEAP_TTL_S * 7, "exec_ledger")


def _epoch(at: Any) -> float:
    """A record's ``at`` (ISO 8601 UTC, as the run log writes it) in epoch seconds; now when absent."""
    from datetime import datetime

    if isinstance(at, str):
        try:
            return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return time.time()


def judge(cache: Cache, family: str, ledger: dict[str, Any], now: float | None = None) -> float | None:
    """After a miss of ``family``: when its ledger says recording its misses costs more than it
    saves, mark it churning and return the verdict's period in seconds; else None (and a family
    that pays has its renewals reset)."""
    runs = ledger["runs"]
    misses = sum(int(r[2]) for r in runs)
    net = sum(float(r[1]) for r in runs)
    hit_ms, _ = cost.hit_cost_ms(cache.store)
    worth = max(0.0, max((float(r[3]) for r in runs), default=0.0) - hit_ms)  # what one hit of it saves
    if misses < MIN_MISSES or -net <= worth:
        if ledger["strikes"]:
            ledger["strikes"] = 0
            _write(cache, family, ledger)
        return None
    now = time.time() if now is None else now
    span = max(0.0, float(runs[-1][0]) - float(runs[0][0])) if runs else 0.0
    strikes = int(ledger["strikes"])
    period = min(cost.CHEAP_TTL_S, max(_shortest(), span) * 2.0 ** min(strikes, MAX_DOUBLINGS))
    ledger["strikes"] = strikes + 1
    _write(cache, family, ledger)
    cost.mark_cheap(cache, family, 0.0, 0.0, ttl_s=period, now=now,
                    extra={"churn": True, "misses": misses, "net_ms": round(net, 3), "hit_worth_ms": round(worth, 3),
                           "until": round(now + period, 3)})
    return period


def _shortest() -> float:
    """The shortest period: ``$ACTIONCACHE_CHURN_MIN_S`` when it is a number above the default."""
    import os

    try:
        value = float(os.environ.get(MIN_PERIOD_ENV, "") or MIN_PERIOD_S)
    except ValueError:
        return MIN_PERIOD_S
    return min(cost.CHEAP_TTL_S, value) if value > MIN_PERIOD_S else MIN_PERIOD_S


def churning(cache: Cache, family: str) -> dict[str, Any] | None:
    """The live churn verdict of ``family``, else None (none while ``$ACTIONCACHE_CHEAP_MS`` is set)."""
    if cost.explicit_threshold() is not None:
        return None
    mark = cost.cheap_mark(cache, family)
    return mark if mark is not None and mark.get("churn") else None
