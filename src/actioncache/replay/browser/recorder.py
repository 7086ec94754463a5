"""What the sync and async recorders share: the recorded actions, and the steps of each method."""

from __future__ import annotations

from typing import Any, Iterable

from ..models import Action, ActionType
from ..plan_cache import PlanCache
from .steps import Sleep, Snapshot, Step, record_step


class RecorderBase:
    """The actions recorded so far (``actions``) and the URL the run started on (``start_url``)."""

    def __init__(self, page: Any, *, ignore: Iterable[str] = ()) -> None:
        self.page = page
        self.ignore = tuple(sorted({str(name).lower() for name in ignore}))
        self.actions: list[Action] = []
        self.start_url: str | None = None

    def _element_step(self, kind: str, target: Any, value: Any = None, **fields: Any) -> Step:
        if self.start_url is None:
            first = yield Snapshot()
            self.start_url = first.url
        action = yield from record_step(kind, target, value, ignore=self.ignore, **fields)
        self.actions.append(action)
        return action

    def _wait_step(self, seconds: float) -> Step:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError(f"wait takes a number of seconds >= 0, not {seconds!r}")
        yield Sleep(float(seconds))
        action = Action(ActionType.WAIT, data={"seconds": seconds})
        self.actions.append(action)
        return action

    def _complete(self, **fields: Any) -> Action:
        action = Action(ActionType.COMPLETE, **fields)
        self.actions.append(action)
        return action

    def save(self, plans: PlanCache, goal: str, *, completed: bool = True, url: str | None = None) -> str | None:
        """Record this run in ``plans`` under ``(url or start_url, goal)``; returns the plan id.

        Secrets typed into password (or ``secret=``) fields are kept out of the store by
        :meth:`PlanCache.record`.
        """
        start = url or self.start_url
        if not start:
            raise ValueError("nothing was recorded on a page yet; pass url= to save an empty run")
        return plans.record((start, goal), self.actions, completed)
