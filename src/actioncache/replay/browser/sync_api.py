"""Record and replay plans in a page of Playwright's sync API (``playwright.sync_api``)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..intents import Resolver
from ..models import Action, Page
from ..plan_cache import PlanCache
from ..validation import PersonalizeHook
from .actuate import (
    NAVIGATION_RETRIES,
    POPUP_DEPTH,
    ROUTE_ALL,
    execute_args,
    guard_route,
    in_frame,
    request_page,
    select_args,
)
from .recorder import RecorderBase
from .snapshot import ELEMENT_AT_JS, INDEX_OF_JS, SNAPSHOT_JS, page_from_snapshot, snapshot_arguments
from .steps import (
    OUTCOME_JS,
    QUIET_S,
    WAIT_S,
    Execute,
    Guard,
    Locate,
    Outcome,
    Perform,
    ReplayOutcome,
    Returning,
    Settle,
    Sleep,
    Snapshot,
    T,
    replay_steps,
)


def _evaluate(page: Any, script: str, arg: Any = None) -> Any:
    """``page.evaluate``, again after a navigation destroyed the document it ran in."""
    last: Exception | None = None
    for _ in range(NAVIGATION_RETRIES):
        try:
            return page.evaluate(script, arg)
        except Exception as exc:  # noqa: BLE001 - a navigation destroyed the context: wait and look again
            last = exc
            try:
                page.wait_for_load_state("load")
            except Exception:  # noqa: BLE001
                page.wait_for_timeout(100)
    raise RuntimeError(f"could not read the page's DOM: {last}") from last


def snapshot_page(page: Any) -> Page:
    """The :class:`Page` of ``page``'s current DOM (same rule as ``page_from_html``)."""
    return page_from_snapshot(_evaluate(page, SNAPSHOT_JS, snapshot_arguments()))


def _target(page: Any, target: Any) -> Any:
    return page.locator(target) if isinstance(target, str) else target


def _element(page: Any, request: Execute) -> Any:
    """The element of the last snapshot that ``request`` acts on, as a handle of its own frame."""
    handle = page.evaluate_handle(ELEMENT_AT_JS, request.index).as_element() if request.index is not None else None
    if handle is not None and in_frame(request.action):
        frame = handle.owner_frame()
        if frame is not None and frame != page.main_frame:
            handle = frame.evaluate_handle(ELEMENT_AT_JS, request.index).as_element()
    if handle is None:
        raise RuntimeError(f"element {request.action.element_id} left the page before it could be used")
    return handle


def _answer(page: Any, request: Any, settle_timeout_ms: float) -> Any:
    if isinstance(request, Snapshot):
        return snapshot_page(page)
    if isinstance(request, Locate):
        return _target(page, request.target).evaluate(INDEX_OF_JS)
    if isinstance(request, Perform):
        target = _target(page, request.target)
        if request.kind == "fill":
            return target.fill(str(request.value))
        if request.kind == "select":
            return target.select_option(**select_args(request.value))
        return target.click()
    if isinstance(request, Execute):
        method, kwargs = execute_args(request.action)
        return getattr(_element(page, request), method)(**kwargs)
    if isinstance(request, Settle):
        try:
            page.wait_for_load_state("load", timeout=settle_timeout_ms)
        except Exception:  # noqa: BLE001 - a slow resource: the snapshot waits for what it needs
            pass
        return None
    if isinstance(request, Sleep):
        return page.wait_for_timeout(request.seconds * 1000)
    if isinstance(request, Outcome):
        return _evaluate(page, OUTCOME_JS)
    if isinstance(request, Guard):
        if request.on:
            request.network.attach(page)
            request.network.route_handler = _route_handler(request)
            request.network.popup_handler = _popup_handler(request, page)
            page.route(ROUTE_ALL, request.network.route_handler)
            page.context.route(ROUTE_ALL, request.network.popup_handler)
        else:
            try:
                page.unroute(ROUTE_ALL, request.network.route_handler)
                page.context.unroute(ROUTE_ALL, request.network.popup_handler)
            except Exception:  # noqa: BLE001 - a closed page or context has no routes left
                pass
            request.network.detach()
        return None
    raise TypeError(f"unknown request {request!r}")


def _route_handler(request: Guard) -> Any:
    def handle(route: Any, outgoing: Any) -> None:
        if guard_route(request.network, outgoing):
            route.fallback()
        else:
            route.abort("blockedbyclient")
    return handle


def _popup_handler(request: Guard, page: Any) -> Any:
    """The context's route: a window the replayed page opened is held to the same guard (a window's
    first load has no frame to say who opened it: while a replay runs, it is held to the guard too)."""
    def handle(route: Any, outgoing: Any) -> None:
        owner, ours = request_page(outgoing), False
        if owner is None:
            ours = outgoing.is_navigation_request()  # a window's first load, before its frame exists
        for _ in range(POPUP_DEPTH):
            owner = owner.opener() if owner is not None and owner is not page else None
            ours = ours or owner is page
        if ours and not guard_route(request.network, outgoing):
            route.abort("blockedbyclient")
            return
        route.fallback()
    return handle


def drive(page: Any, steps: Returning[T], settle_timeout_ms: float = 10_000) -> T:
    """Answer ``steps``' requests on ``page`` until it returns; errors go back into it."""
    answer: Any = None
    error: Exception | None = None
    while True:
        try:
            request = steps.throw(error) if error is not None else steps.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        answer, error = None, None
        try:
            answer = _answer(page, request, settle_timeout_ms)
        except Exception as exc:  # noqa: BLE001 - the steps decide what an error means
            error = exc


class PageRecorder(RecorderBase):
    """Record a run on a Playwright (sync) page: each method fingerprints its target from the live
    DOM, does the action, waits for the page to settle, and keeps the action with what it sent and
    where it led. Targets are selectors, locators or handles.

        rec = PageRecorder(page)
        rec.fill("#user", "alice"); rec.fill("#password", pw); rec.click("text=Log in"); rec.complete()
        rec.save(plans, "log in")          # the password is not stored: the plan keeps a placeholder
    """

    def click(self, target: Any, *, intent: str | None = None, **fields: Any) -> Action:
        """Click ``target``; ``intent`` ("cheapest", "first", "query_match" or words) says it was chosen
        for the input, so a replay for another input re-decides it (inferred when left out)."""
        return drive(self.page, self._element_step("click", target, intent=intent, **fields))

    def fill(self, target: Any, text: str, *, secret: str | bool | None = None, **fields: Any) -> Action:
        """Type ``text``; ``secret=True`` (or a name) keeps it out of the store like a password."""
        return drive(self.page, self._element_step("fill", target, text, secret=secret, **fields))

    def select(self, target: Any, value: str, **fields: Any) -> Action:
        """Choose the option whose value (else text) is ``value``."""
        return drive(self.page, self._element_step("select", target, value, **fields))

    def wait(self, seconds: float) -> Action:
        return drive(self.page, self._wait_step(seconds))

    def complete(self, **fields: Any) -> Action:
        return self._complete(**fields)


def replay_plan(plans: PlanCache, page: Any, goal: str, *, url: str | None = None, executed: Any = 0,
                personalize: PersonalizeHook | None = None, resolve: Resolver | None = None,
                context: Mapping[str, Any] | None = None, secrets: Mapping[str, Any] | None = None,
                wait_s: float = WAIT_S, quiet_s: float = QUIET_S,
                allow_requests: Iterable[str] = ()) -> ReplayOutcome:
    """Replay the plan for ``(url or page.url, goal)`` in ``page``, each action validated on the DOM
    it is about to act on, every request guarded and every step's outcome checked; see
    :func:`~actioncache.replay.browser.steps.replay_steps`."""
    return drive(page, replay_steps(plans, goal, url or page.url, executed=executed, personalize=personalize,
                                    resolve=resolve, context=context, secrets=secrets, wait_s=wait_s,
                                    quiet_s=quiet_s, allow_requests=allow_requests))


__all__ = ["PageRecorder", "drive", "replay_plan", "snapshot_page"]
