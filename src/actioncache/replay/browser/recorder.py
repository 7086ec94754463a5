"""What the sync and async recorders share: the recorded actions, and the steps of each method.

Each element action is recorded from the live DOM (its fingerprint, role, accessible name, item,
frame) and, once the page settled, with its effects: the state-changing requests it sent and where
it led (:class:`~actioncache.replay.effects.StepEffects`), which a replay is held to. A click after a
typed query that depends on the query gets a choice (:func:`~actioncache.replay.intents.infer_choice`,
or the ``intent=`` given), so a replay for another query re-decides it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from ..effects import SAFE_METHODS, TARGET, StepEffects, link_target, navigation_pattern
from ..intents import choice_for, infer_choice
from ..models import Action, ActionType, Page
from ..plan_cache import PlanCache
from ..secrets import is_secret_field
from ..urls import url_pattern
from .network import NetworkLog
from .snapshot import OTHER_ORIGIN
from .steps import Locate, Outcome, Perform, Returning, Sleep, Snapshot, settle


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


class RecorderBase:
    """The actions recorded so far (``actions``) and the URL the run started on (``start_url``).

    ``infer_intents=False`` records every click as the element it hit, never as a choice.
    """

    def __init__(self, page: Any, *, ignore: Iterable[str] = (), infer_intents: bool = True) -> None:
        self.page = page
        self.ignore = tuple(sorted({str(name).lower() for name in ignore}))
        self.infer_intents = infer_intents
        self.actions: list[Action] = []
        self.start_url: str | None = None
        self.network = NetworkLog()  # listens to the page from the first action until save() or close()
        #: Where each element action's link pointed (its navigation pattern), by action index.
        self._targets: dict[int, str] = {}
        #: The queries typed so far: (action index, text, the page they were typed on).
        self._queries: list[tuple[int, str, Page]] = []

    def _element_step(self, kind: str, target: Any, value: Any = None, *, secret: str | bool | None = None,
                      intent: str | None = None, **fields: Any) -> Returning[Action]:
        self.network.attach(self.page)
        page: Page = yield Snapshot()
        if self.start_url is None:
            self.start_url = page.url
        self.network.page_url = page.url
        index = yield Locate(target)
        if index == OTHER_ORIGIN:
            raise ValueError(f"the {kind} target is in an iframe of another origin, whose page replay cannot read "
                             f"or check: not recorded (record on that origin's own page, or do it outside the plan)")
        if index is None or index < 0:
            raise ValueError(f"the {kind} target is not (inside) an element an agent acts on (a link, button, form "
                             f"field, or an element with role/onclick/tabindex/contenteditable); target a control")
        element = page.elements[index]
        position = len(self.actions)
        if kind == "fill":
            action = Action.for_element(ActionType.INPUT_TEXT, element, ignore=self.ignore, text=str(value),
                                        secret=secret, **fields)
            if not secret and not is_secret_field(element.to_dict()) and str(value).strip():
                self._queries.append((position, str(value), page))
        elif kind == "select":
            action = Action.for_element(ActionType.SELECT_OPTION, element, ignore=self.ignore,
                                        option=_option_for(element.options or [], value), **fields)
        else:
            action = Action.for_element(ActionType.CLICK, element, ignore=self.ignore, **fields)
            self._choose(action, page, intent)
        link = link_target(element.attributes.get("href"), page.url)
        if link is not None:
            self._targets[position] = link
        self.network.begin_step(position)
        if kind == "fill":
            self.network.typed[position] = str(value)  # in memory: fields that carry it are kept as references
        yield Perform(kind, target, value)
        yield from settle(self.network, action.action_type, slack=2.0)
        state = yield Outcome()
        url = str(state.get("url") or page.url)
        led = TARGET if link is not None and navigation_pattern(url) == link else url_pattern(url)
        action.effects = StepEffects(status=self.network.document_status(position), url=led,
                                     captcha=bool(state.get("captcha"))).to_dict()
        self.actions.append(action)
        return action

    def _choose(self, action: Action, page: Page, intent: str | None) -> None:
        query = self._queries[-1] if self._queries else None
        if intent is not None:
            action.choose, action.intention = choice_for(intent, query[0] if query else None)
        elif self.infer_intents and query is not None and action.element is not None:
            element = page.element(action.element["id"])
            inferred = infer_choice(element, page, *query) if element is not None else None
            if inferred is not None:
                action.choose, action.intention = inferred

    def _wait_step(self, seconds: float) -> Returning[Action]:
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

    def effects(self) -> list[Action]:
        """The recorded actions, each element action with the requests its step sent filled in."""
        for position, action in enumerate(self.actions):
            if action.effects is None:
                continue
            link = self._targets.get(position)
            sent = [replace(r, target=True) if link is not None and r.navigation and r.method in SAFE_METHODS
                    and r.url == link else r for r in self.network.sent(position)]
            action.effects = {**action.effects, "sent": [r.to_dict() for r in sent]}
        return self.actions

    def close(self) -> None:
        """Stop listening to the page's requests (``save`` does it too)."""
        self.network.detach()

    def save(self, plans: PlanCache, goal: str, *, completed: bool = True, url: str | None = None) -> str | None:
        """Record this run in ``plans`` under ``(url or start_url, goal)``; returns the plan id.

        Each step keeps the requests it sent; secrets typed into password (or ``secret=``) fields,
        and fields that were ever password fields, are kept out of the store by :meth:`PlanCache.record`.
        """
        start = url or self.start_url
        if not start:
            raise ValueError("nothing was recorded on a page yet; pass url= to save an empty run")
        actions = self.effects()
        self.network.detach()
        return plans.record((start, goal), actions, completed)
