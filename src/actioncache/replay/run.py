"""``ReplayRun``: one replay of one stored plan, validated action by action on the page as it is now.

``PlanCache.begin`` chooses the plan and checks it as a whole (resume after the executed actions,
supported types, intentions); ``next(page)`` then validates the next action against the page
given, rebinds it (a click chosen for the input is re-decided by the resolver instead, see
:mod:`.intents`), fills its secret, personalizes it and hands it over. A browser driver calls
``next`` with a fresh snapshot before every action, so each one is checked against the DOM it is
about to act on; ``PlanCache.lookup`` calls it on one page until it stops. The first rule that
fails stops the run with its :class:`~actioncache.replay.FallbackReason`.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Callable, Iterable, Mapping

from .element import Element
from .intents import QUERY_MATCH, RULES, ClickChoice, Resolver, candidates_for, pick, rule_resolver, words
from .models import Action, ActionType, Page, PlanSignature, as_page
from .secrets import fill_secret, missing_secret, scrub_text
from .validation import FallbackReason, PersonalizeHook, ReplayContext, ReplayFallback, personalize_actions, rebind

log = logging.getLogger("actioncache.replay")


class ReplayRun:
    """Hands out a plan's remaining actions one at a time while they fit the page.

    ``reason``/``message`` say why it stopped (``None`` while running and after the last action);
    ``served`` counts the plan actions handed out. ``close()`` adds the run to the cache's metrics.
    """

    def __init__(self, signature: PlanSignature, plan_id: str | None, remaining: list[Action], *,
                 ignore: Iterable[str] = (), personalize: PersonalizeHook | None = None,
                 context: Mapping[str, Any] | None = None, secrets: Mapping[str, Any] | None = None,
                 resolve: Resolver | None = None, plan: list[Action] | None = None,
                 on_nothing_served: Callable[[], None] | None = None,
                 on_close: Callable[[ReplayRun], None] | None = None) -> None:
        self.signature = signature
        self.plan_id = plan_id
        self.remaining = remaining
        #: The whole plan (the executed actions, then ``remaining``): choices name their query by index.
        self.plan = plan if plan is not None else list(remaining)
        self.offset = len(self.plan) - len(remaining)
        self.resolve: Resolver = resolve or rule_resolver
        #: What this run typed, by plan index (after secrets and personalization): a chosen click's query.
        self.typed: dict[int, str] = {}
        self.ignore = tuple(ignore)
        self.personalize = personalize
        self.context = dict(context or {})
        self.secrets = dict(secrets or {})
        self.served = 0
        self.validated: Counter[str] = Counter()
        self.reason: str | None = None
        self.message: str | None = None
        #: Stop at a ``select_option`` left without a choice (a browser cannot pick "nothing").
        self.requires_option = False
        self._on_nothing_served = on_nothing_served
        self._on_close = on_close
        self._closed = False
        #: The secret texts this run typed (in memory only): no message carries them.
        self._secret_texts: set[str] = set()
        #: The page each input of this run was typed on, by plan index.
        self._typed_on: dict[int, Page] = {}
        #: The plan index of the last click the resolver re-decided: the inputs before it are answered
        #: (what follows is on the pages of the item it chose: its "Add to cart").
        self._decided_at = -1

    @classmethod
    def stopped(cls, signature: PlanSignature, fallback: ReplayFallback, plan_id: str | None = None,
                remaining: list[Action] | None = None,
                on_close: Callable[[ReplayRun], None] | None = None) -> ReplayRun:
        """A run that serves nothing, for the reason given."""
        run = cls(signature, plan_id, remaining or [], on_close=on_close)
        run.reason, run.message = fallback.reason, fallback.message
        return run

    @property
    def finished(self) -> bool:
        """Every action was served (the plan ran to its end)."""
        return self.reason is None and self.served >= len(self.remaining)

    @property
    def active(self) -> bool:
        return self.reason is None and self.served < len(self.remaining)

    def ready(self, page: Page) -> bool:
        """Whether the next action's element is on ``page`` exactly once (no side effects)."""
        if not self.active:
            return True
        action = self.remaining[self.served]
        if _chooses(action):
            return bool(candidates_for(action.element or {}, page))
        return not action.fingerprint or len(page.ids_for(action.fingerprint, self.ignore)) == 1

    def decided(self, index: int) -> bool:
        """Whether the click at plan ``index`` was re-decided by the resolver in this run (its target
        chosen for this run's input, not the recorded element)."""
        return index >= 0 and self._decided_at == index

    def stop(self, reason: str, message: str) -> None:
        """End the run early for ``reason`` (a driver could not do what was served)."""
        self.reason, self.message = reason, self.clean(message)

    def clean(self, message: str | None) -> str | None:
        """A message as it may be shown, logged or counted: no secret of this run in it, in any encoding."""
        return scrub_text(message, [*(str(v) for v in self.secrets.values()), *self._secret_texts])

    def next(self, page: Page | Mapping[str, Any] | str) -> list[Action] | None:
        """The next plan action, rebound to ``page`` and personalized, as a list (a hook may turn it
        into several, or none).

        ``None`` when the run is over: finished, or stopped (``reason`` says why).
        """
        if not self.active:
            return None
        page = as_page(page)
        action = self.remaining[self.served]
        try:
            try:
                depends = None if _chooses(action) else self._depends_on_changed_input(action, page)
                if depends is not None:
                    # A click on what appeared after this run typed something else: re-decided, never by identity.
                    action = action.copy()
                    action.choose = {"rule": QUERY_MATCH, "query": depends}
                    action.intention = action.intention or RULES[QUERY_MATCH]
                bound = self._decide(action, page) if _chooses(action) else self._rebind(action, page)
            except ReplayFallback:
                if self.served == 0 and self._on_nothing_served is not None:
                    self._on_nothing_served()
                raise
            try:
                bound = fill_secret(bound, self.secrets)
            except TypeError as exc:
                raise ReplayFallback(FallbackReason.SECRET_REQUIRED, f"action {self.served}: {exc}") from exc
            context = ReplayContext(self.signature, page, self.plan_id or "", self.context)
            out = personalize_actions([bound], self.personalize, context, start=self.served)
            for candidate in out:
                if (self.requires_option and candidate.option is None
                        and candidate.action_type.lower() == ActionType.SELECT_OPTION):
                    raise ReplayFallback(FallbackReason.OPTION_REQUIRED,
                                         f"action {self.served} (select_option) has no option: replay does not "
                                         f"reuse the recorded choice; set action.option in the personalize hook")
                name = missing_secret(candidate)
                if name is not None:
                    raise ReplayFallback(FallbackReason.SECRET_REQUIRED,
                                         f"action {self.served} ({candidate.action_type}) types the secret {name!r}, "
                                         f"which plans never store; pass secrets={{{name!r}: ...}} or set the text "
                                         f"in the personalize hook")
                if candidate.action_type.lower() == ActionType.INPUT_TEXT and candidate.text is not None:
                    self.typed[self.offset + self.served] = candidate.text
                    self._typed_on[self.offset + self.served] = page
                    if candidate.secret or action.secret:
                        self._secret_texts.add(candidate.text)
        except ReplayFallback as fallback:
            self.reason, self.message = fallback.reason, self.clean(fallback.message)
            return None
        except Exception as exc:  # noqa: BLE001 - any error falls back (logged without its text: it may hold a secret)
            log.error("replay: unexpected error (%s); falling back to fresh planning", type(exc).__name__)
            self.reason, self.message = FallbackReason.INTERNAL_ERROR, self.clean(f"{type(exc).__name__}: {exc}")
            return None
        self.validated[action.action_type.lower()] += 1
        self.served += 1
        return out

    def _depends_on_changed_input(self, action: Action, page: Page) -> int | None:
        """The plan index of the input a plain click depends on, when this run typed other text there.

        A click depends on the last input before it when its element was not on the page that input was
        typed on (a result, a suggestion, a link of the page the query led to; a form's submit button is
        there when its last field is typed). With the recording's own text, the recorded element stands;
        with another text it must be re-decided, never clicked by identity.
        """
        if action.action_type.lower() != ActionType.CLICK or not action.fingerprint or not action.element:
            return None
        if not self._typed_on:
            return None
        index = max(self._typed_on)  # the last input before this click: the flow it belongs to
        if index < self._decided_at:
            return None  # a click after it was re-decided for this run's text
        recorded = self.plan[index]
        if recorded.secret or recorded.text is None or not recorded.text.strip():
            return None  # a secret or an empty box says nothing about which item to click
        if words(self.typed.get(index)) == words(recorded.text) and words(recorded.text):
            return None  # the recording's own query: its own choices stand
        if not page.ids_for(action.fingerprint, self.ignore):
            return None  # not on this page at all: rebinding says why (missing, renamed, leads elsewhere)
        return index if not self._typed_on[index].ids_for(action.fingerprint, self.ignore) else None

    def _rebind(self, action: Action, page: Page) -> Action:
        validated, stop = rebind([action], page, self.ignore, start=self.served)
        if stop is not None:
            raise stop
        return validated[0]

    def _decide(self, action: Action, page: Page) -> Action:
        """Re-decide a click chosen for the input: the resolver picks among the recorded element's group."""
        choose = action.choose or {}
        index = choose.get("query")
        known = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(self.plan)
        recorded = Element.from_dict(action.element or {"id": "", "tag": ""})
        choice = ClickChoice(rule=str(choose.get("rule")), intention=action.intention or "",
                             query=self.typed.get(index) if known else None,  # type: ignore[arg-type]
                             recorded_query=self.plan[index].text if known else None,  # type: ignore[index]
                             recorded=recorded, candidates=candidates_for(recorded, page), data=self.context)
        where = f"action {self.served} (click, {choice.rule!r}: {choice.intention or 'no intention'})"
        if not choice.candidates:
            raise ReplayFallback(FallbackReason.ELEMENT_MISSING, f"{where}: none of the elements it chooses among "
                                                                 f"is on the page")
        try:
            picked = pick(choice, self.resolve(choice))
        except Exception as exc:
            raise ReplayFallback(FallbackReason.INTENT_UNRESOLVED,
                                 f"{where}: the resolver failed: {type(exc).__name__}: {exc}") from exc
        if picked is None:
            if choice.personalized:
                raise ReplayFallback(FallbackReason.INTENT_UNRESOLVED,
                                     f"{where}: this run typed another query than the recording, and the resolver "
                                     f"could not choose among {len(choice.candidates)} candidates; the recorded "
                                     f"item is not clicked for another query")
            return self._rebind(action, page)  # the recording's own query: its own choice stands
        if (choice.personalized and action.fingerprint and picked.id in page.ids_for(action.fingerprint, self.ignore)
                and not (words(choice.query) and words(choice.query) <= words(f"{picked.name} {picked.text} {picked.item}"))):
            raise ReplayFallback(FallbackReason.INTENT_UNRESOLVED,
                                 f"{where}: the resolver chose the recorded item for another query, which does not "
                                 f"name it; the recorded item is not clicked for another query")
        bound = action.copy()
        bound.element_id, bound.element = picked.id, picked.to_dict()
        self._decided_at = self.offset + self.served
        return bound

    def close(self) -> None:
        """Count the run in the cache's metrics (once)."""
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close(self)

    def __enter__(self) -> ReplayRun:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _chooses(action: Action) -> bool:
    """A click whose target depends on the input (see :mod:`.intents`)."""
    return (action.action_type.lower() == ActionType.CLICK and isinstance(action.choose, Mapping)
            and isinstance(action.choose.get("rule"), str) and bool(action.element))
