"""What recording and replaying do, written once for both Playwright APIs.

Each operation is a generator that *yields requests* (take a snapshot, find an element, act on
it, let the page settle, sleep) and gets the answers sent back; it never touches Playwright
itself. :mod:`.sync_api` answers the requests with Playwright's sync API, :mod:`.async_api` with
its async API, so both faces follow exactly the same rules. An error raised while answering a
request is thrown back into the generator at the ``yield``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Generator, Mapping

from ..models import Action, ActionType, Page
from ..plan_cache import PlanCache
from ..run import ReplayRun
from ..validation import FallbackReason, PersonalizeHook


# --- requests a driver answers ------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """Answer: the :class:`Page` of the current DOM (elements ``e1..eN`` of the page's registry)."""


@dataclass(frozen=True)
class Locate:
    """Answer: the index in the last snapshot of ``target`` (or of its nearest collected ancestor), -1 if none."""

    target: Any


@dataclass(frozen=True)
class Perform:
    """Do ``kind`` (click, fill, select) on the caller's own ``target``, with ``value``."""

    kind: str
    target: Any
    value: Any = None


@dataclass(frozen=True)
class Execute:
    """Do a replayed ``action`` on element ``index`` of the last snapshot."""

    action: Action
    index: int | None


@dataclass(frozen=True)
class Settle:
    """Wait until a navigation the last action started has loaded."""


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Generator[Any, Any, Any]

#: How often a replay looks again for an element that is not on the page yet.
POLL_S = 0.1


# --- recording ----------------------------------------------------------------------------------

def record_step(kind: str, target: Any, value: Any = None, *, secret: str | bool | None = None,
                ignore: tuple[str, ...] = (), **fields: Any) -> Step:
    """Fingerprint ``target`` from the live DOM, then act on it; returns the recorded :class:`Action`."""
    page: Page = yield Snapshot()
    index = yield Locate(target)
    if index is None or index < 0:
        raise ValueError(f"the {kind} target is not (inside) an element an agent acts on (a link, button, form "
                         f"field, or an element with role/onclick/tabindex/contenteditable); target a control")
    element = page.elements[index]
    if kind == "fill":
        action = Action.for_element(ActionType.INPUT_TEXT, element, ignore=ignore, text=str(value), secret=secret,
                                    **fields)
    elif kind == "select":
        action = Action.for_element(ActionType.SELECT_OPTION, element, ignore=ignore,
                                    option=_option_for(element.options or [], value), **fields)
    else:
        action = Action.for_element(ActionType.CLICK, element, ignore=ignore, **fields)
    yield Perform(kind, target, value)
    yield Settle()
    return action


def _option_for(options: list[dict[str, Any]], value: Any) -> dict[str, Any]:
    """The recorded choice: the option whose value (else text) is ``value``."""
    wanted = str(value)
    for option in options:
        if option.get("value") == wanted:
            return {"value": option.get("value"), "label": option.get("text")}
    for option in options:
        if option.get("text") == wanted:
            return {"value": option.get("value"), "label": option.get("text")}
    raise ValueError(f"the select has no option with value or text {wanted!r} "
                     f"(it offers {[o.get('value') for o in options][:10]})")


# --- replaying ----------------------------------------------------------------------------------

@dataclass
class ReplayOutcome:
    """What a browser replay did.

    ``executed``: the actions run in the page, in order. ``served``: how many plan actions that was
    (give it as ``executed=`` to resume, or to your planner). ``finished``: the plan ran to its end.
    ``reason``/``message``: why it stopped early (a :class:`~actioncache.replay.FallbackReason`).
    """

    executed: list[Action] = field(default_factory=list)
    served: int = 0
    finished: bool = False
    reason: str | None = None
    message: str | None = None
    plan_id: str | None = None

    @property
    def hit(self) -> bool:
        return self.served > 0

    def to_dict(self) -> dict[str, Any]:
        # Executed actions are left out on purpose: they may hold secrets typed for this run.
        return {"hit": self.hit, "served": self.served, "finished": self.finished, "reason": self.reason,
                "message": self.message, "plan_id": self.plan_id}


def replay_steps(plans: PlanCache, goal: str, url: str, *, executed: Any = 0,
                 personalize: PersonalizeHook | None = None, context: Mapping[str, Any] | None = None,
                 secrets: Mapping[str, Any] | None = None, wait_s: float = 5.0, max_wait_action_s: float = 30.0) -> Step:
    """Replay the plan for ``(url, goal)``: before each action, snapshot the DOM and validate it there.

    An element that is not on the page yet is looked for again every 0.1 s for ``wait_s`` seconds
    (pages render late), then the replay stops with ``element_missing`` (or ``element_ambiguous``).
    An action the browser cannot do stops it with ``execution_error`` and lowers the plan's trust.
    """
    run = plans.begin((url, goal), executed, personalize=personalize, context=context, secrets=secrets)
    run.requires_option = True
    outcome = ReplayOutcome(plan_id=run.plan_id)
    with run:
        while run.active:
            page = yield from _wait_until_ready(run, wait_s)
            actions = run.next(page)
            if actions is None:
                break
            for action in actions:
                try:
                    yield from _execute(action, max_wait_action_s)
                except Exception as exc:  # noqa: BLE001 - any browser error: stop and say why
                    run.stop(FallbackReason.EXECUTION_ERROR,
                             f"action {run.served - 1} ({action.action_type}) failed in the browser: "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                    plans.report(run.signature, success=False, plan_id=run.plan_id)
                    break
                outcome.executed.append(action)
    outcome.served = run.served - (1 if run.reason == FallbackReason.EXECUTION_ERROR else 0)
    outcome.finished, outcome.reason, outcome.message = run.finished, run.reason, run.message
    return outcome


def _wait_until_ready(run: ReplayRun, wait_s: float) -> Step:
    deadline = time.monotonic() + wait_s
    while True:
        page: Page = yield Snapshot()
        if run.ready(page) or time.monotonic() >= deadline:
            return page
        yield Sleep(POLL_S)


def _execute(action: Action, max_wait_action_s: float) -> Step:
    kind = action.action_type.lower()
    if kind == ActionType.WAIT:
        seconds = (action.data or {}).get("seconds", 0)
        valid = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
        yield Sleep(min(max(float(seconds), 0.0), max_wait_action_s) if valid else 0.0)
        return
    if kind == ActionType.COMPLETE:
        return
    index = int(action.element_id[1:]) - 1 if action.element_id and action.element_id[1:].isdigit() else None
    yield Execute(action, index)
    yield Settle()
