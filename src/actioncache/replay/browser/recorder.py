"""What the sync and async recorders share: the recorded actions, and the steps of each method.

Each element action is recorded from the live DOM (its fingerprint, role, accessible name, item,
frame) and, once the page settled, with its effects: the state-changing requests it sent and where
it led (:class:`~actioncache.replay.effects.StepEffects`), which a replay is held to. A click after a
typed query that depends on the query gets a choice (:func:`~actioncache.replay.intents.infer_choice`,
or the ``intent=`` given), so a replay for another query re-decides it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Iterable, Mapping

from ..effects import (
    SAFE_METHODS,
    TARGET,
    StepEffects,
    body_pairs,
    landing_url,
    link_target,
    navigation_pattern,
    page_identity,
)
from ..intents import choice_for, infer_choice
from ..models import Action, ActionType, Page
from ..plan_cache import PlanCache
from ..secrets import is_secret_field
from ..urls import url_pattern
from .network import NetworkLog, request_facts
from .snapshot import OTHER_ORIGIN
from .steps import Locate, Outcome, Perform, Returning, Sleep, Snapshot, adjacent_digest, settle

#: The attributes the secrets rule reads (the snapshot keeps their history).
_FACTS = ("type", "autocomplete", "name", "id", "aria-label", "placeholder", "title", "inputmode", "pattern")


def provenance(value: str, secret: Any, inputs: set[str]) -> str | None:
    """Why a typed ``value`` is known not to be a secret, or ``None`` (it is then stored as a placeholder).

    Only what the caller said is public counts: the field declared ``secret=False`` or the value one
    of the run's declared inputs (the goal text is checked in :meth:`RecorderBase.save`). A text the
    page shows is no proof: pages show new API keys, temporary passwords, a year that is also a PIN,
    a city that is also a security answer.
    """
    if secret is False:
        return "declared"
    if value in inputs:
        return "input"
    return None


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
    ``inputs``: the run's declared inputs (a mapping of names to values, or the values): a typed text
    equal to one of them is stored in clear (see :meth:`save` for what else is).
    """

    def __init__(self, page: Any, *, ignore: Iterable[str] = (), infer_intents: bool = True,
                 inputs: Mapping[str, Any] | Iterable[Any] = ()) -> None:
        self.page = page
        values = inputs.values() if isinstance(inputs, Mapping) else inputs
        if isinstance(values, str):
            raise TypeError("inputs is a mapping of names to values, e.g. {'query': 'desk lamp'}, not one string")
        #: The declared inputs' values: what is typed from them is not a secret.
        self.inputs = {str(v) for v in values if v is not None}
        #: Why each typed text may be stored in clear, by action index ("declared", "input").
        self._public: dict[int, str] = {}
        self.ignore = tuple(sorted({str(name).lower() for name in ignore}))
        self.infer_intents = infer_intents
        self.actions: list[Action] = []
        self.start_url: str | None = None
        self.network = NetworkLog()  # listens to the page from the first action until save() or close()
        #: Where each element action's link pointed (its navigation pattern), by action index.
        self._targets: dict[int, str] = {}
        #: The queries typed so far: (action index, text, the page they were typed on).
        self._queries: list[tuple[int, str, Page]] = []
        #: The fields typed into so far, (action index, the browser's identity of the field): each is
        #: looked at again after every step, and a field that became secret at any moment makes its text secret.
        self._fills: list[tuple[int, str]] = []

    def _element_step(self, kind: str, target: Any, value: Any = None, *, secret: str | bool | None = None,
                      intent: str | None = None, **fields: Any) -> Returning[Action]:
        self.network.attach(self.page)
        page: Page = yield Snapshot()
        self._follow_fields(page)
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
            public = provenance(str(value), secret, self.inputs)
            if public is not None:
                self._public[position] = public
            if element.uid:
                self._fills.append((position, element.uid))
        elif kind == "select":
            action = Action.for_element(ActionType.SELECT_OPTION, element, ignore=self.ignore,
                                        option=_option_for(element.options or [], value), **fields)
        else:
            action = Action.for_element(ActionType.CLICK, element, ignore=self.ignore, **fields)
            self._choose(action, page, intent)
        if kind in ("fill", "select"):
            # What the field means next to it (a unit, a currency): a replay compares it when it types.
            action.data = {**(action.data or {}), "adjacent": adjacent_digest(element.adjacent)}
        link = link_target(element.attributes.get("href"), page.url)
        if link is not None:
            self._targets[position] = link
        here = yield Outcome()  # the page the step acts on (a replay checks the page it starts on)
        before = {"landing": landing_url(str(here.get("url") or page.url), self.network.typed),
                  "identity": page_identity(here.get("title"), here.get("heading"), self.network.typed)}
        self.network.begin_step(position)
        if kind == "fill":
            self.network.typed[position] = str(value)  # in memory: fields that carry it are kept as references
        yield Perform(kind, target, value)
        yield from settle(self.network, action.action_type, slack=2.0)
        state = yield Outcome()
        url = str(state.get("url") or page.url)
        led = TARGET if link is not None and navigation_pattern(url) == link else url_pattern(url)
        dialogs = state.get("dialogs")
        action.effects = StepEffects(status=self.network.document_status(position), url=led,
                                     captcha=bool(state.get("captcha")), prompt=bool(state.get("prompt")),
                                     dialogs=dialogs if isinstance(dialogs, int) else 0, alert=bool(state.get("alert")),
                                     js_dialogs=len(self.network.dialogs(position)),
                                     landing=landing_url(url, self.network.typed),
                                     identity=page_identity(state.get("title"), state.get("heading"),
                                                            self.network.typed),
                                     before=before).to_dict()
        self.actions.append(action)
        after: Page = yield Snapshot()
        self._follow_fields(after)  # what the step made of the fields typed into
        if kind == "click" and element.state and element.uid:
            now = next((e for e in after.elements if e.uid == element.uid), None)
            if now is not None and now.state and now.state != element.state:
                # A toggle: a replay on one already in the after state does not click it back.
                action.data = {**action.data, "toggle": {"before": element.state, "after": now.state}}
        return action

    def _follow_fields(self, page: Page) -> None:
        """Keep the history of every field typed into so far: a field that is (or was, at any moment the
        browser saw) secret makes what was typed into it secret, however it looked when it was typed."""
        if not self._fills:
            return
        by_uid = {e.uid: e for e in page.elements if e.uid}
        for position, uid in self._fills:
            now = by_uid.get(uid)
            if now is None or position >= len(self.actions):
                continue
            action = self.actions[position]
            kept = dict(action.element or {})
            history = list(kept.get("history") or [])
            for then in [*now.history, {**{k: now.attributes[k] for k in _FACTS if k in now.attributes},
                                        "label": now.attributes.get("label", ""), "accessible_name": now.name}]:
                if then not in history:
                    history.append(then)
            kept["history"] = history
            if now.was_password:
                kept["was_password"] = True
            action.element = kept
            if not action.secret and is_secret_field(kept):
                action.secret = True
                self._queries = [q for q in self._queries if q[0] != position]

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

        Each step keeps the requests it sent. A typed text is stored in clear only when it is
        provably not a secret: it is one of the declared ``inputs``, it is in ``goal`` (the task
        text, stored anyway), or the field was declared ``secret=False``; and even then not when the field
        is secret by its history (ever ``type=password``, a credential or payment ``autocomplete``...).
        Everything else typed is kept as a placeholder named after its field, which a replay fills
        from ``secrets={name: value}`` or the personalization hook, or stops there
        (``secret_required``). No word list decides it: "Mot de passe", "Passwort" or a recovery
        phrase are kept out of the store because nothing shows they are public.
        """
        start = url or self.start_url
        if not start:
            raise ValueError("nothing was recorded on a page yet; pass url= to save an empty run")
        actions = self.effects()
        in_goal = " ".join(str(goal).split()).casefold()
        for position, action in enumerate(actions):
            if action.action_type != ActionType.INPUT_TEXT or action.secret is not None or not action.text:
                continue
            text = " ".join(action.text.split()).casefold()
            if position in self._public or (text and re.search(rf"(?<!\w){re.escape(text)}(?!\w)", in_goal)):
                continue  # public: declared, or words of the task text (not a part of one of them)
            action.secret = True  # not shown to be public: a placeholder, its text kept out of the store
        values = self.secret_values(actions, plans.sensitive)
        self.network.detach()
        return plans.record((start, goal), actions, completed, secret_values=values)

    def secret_values(self, actions: list[Action], sensitive: Iterable[str] = ()) -> set[str]:
        """The values the page sent in fields that are secret (in memory only, for the secrets rule):
        a field named like a secret, or named as a secret field the plan typed into."""
        names = {str(((a.element or {}).get("attributes") or {}).get("name", "")) for a in actions
                 if a.action_type == ActionType.INPUT_TEXT and (a.secret or is_secret_field(a.element, sensitive))}
        names.discard("")
        found: set[str] = set()
        for seen in self.network.seen:
            if seen.sent is None or seen.request is None or isinstance(seen.request, tuple):
                continue
            try:
                facts = request_facts(seen.request)
            except Exception:  # noqa: BLE001 - a request whose body is gone
                continue
            for name, value in body_pairs(facts["content_type"], facts["body"]):
                if isinstance(value, str) and value and (name in names or is_secret_field(
                        {"attributes": {"name": name}}, sensitive)):
                    found.add(value)
        return found
