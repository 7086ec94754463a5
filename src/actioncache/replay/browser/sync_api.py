"""Record and replay plans in a page of Playwright's sync API (``playwright.sync_api``)."""

from __future__ import annotations

import re
import time
from typing import Any, Iterable, Mapping

from ..intents import Resolver
from ..models import Action, ActionType, Page
from ..plan_cache import PlanCache
from ..validation import PersonalizeHook
from .actuate import (
    AUTO_ATTACH_OFF,
    AUTO_ATTACH_WORKERS,
    BACKSTOP_INTERCEPTION,
    JUDGING_PATIENCE_S,
    JUDGING_TURN_MS,
    NAVIGATION_RETRIES,
    NO_CDP,
    NO_UNLOAD_JS,
    ROUTE_ALL,
    WEBSOCKET_GUARD,
    WebSocketGuard,
    action_timeout_ms,
    backstop_answer,
    execute_args,
    in_frame,
    redirect_admitted,
    refusal,
    route_decision,
    running_workers,
    select_args,
    service_workers_blocked,
    unguarded_workers,
    websocket_admitted,
)
from .network import DENY, FETCH, NetworkLog
from .recorder import RecorderBase
from .snapshot import ELEMENT_AT_JS, INDEX_OF_JS, SNAPSHOT_JS, page_from_snapshot, snapshot_arguments
from .steps import (
    OUTCOME_JS,
    QUIET_S,
    WAIT_S,
    Execute,
    Facts,
    Guard,
    Locate,
    Outcome,
    Perform,
    Prepare,
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
        method, kwargs = execute_args(request.action, request.timeout_s)
        return getattr(_element(page, request), method)(**kwargs)
    if isinstance(request, Prepare):
        for frame in page.frames:
            try:
                frame.evaluate(NO_UNLOAD_JS)
            except Exception:  # noqa: BLE001 - a frame that navigated or detached meanwhile
                pass
        handle = _element(page, Execute(request.action, request.index))
        if request.action.action_type.lower() == ActionType.CLICK:
            handle.hover(timeout=action_timeout_ms(request.timeout_s))
        else:
            handle.focus()
        fresh = snapshot_page(page)
        return fresh, int(handle.evaluate(INDEX_OF_JS))
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
    if isinstance(request, Facts):
        return {"service_workers_blocked": service_workers_blocked(page.context)}
    if isinstance(request, Guard):
        network = request.network
        if request.on:
            refused = _stop_workers(page, network)
            if refused is not None:
                return refused
            try:
                _start_backstop(page, network)
            except Exception:  # noqa: BLE001 - a browser connected without its protocol
                _stop_backstops(network)
                return NO_CDP
            network.attach(page)
            network.route_handler = _route_handler(network)
            network.guarding = True
            # The page's route runs before the user's own page routes; the context's covers every
            # other page (a popup, a window opened with noopener, another tab) and the workers.
            page.route(ROUTE_ALL, network.route_handler)
            page.context.route(ROUTE_ALL, network.route_handler)
            _websocket_guard(page.context).network = network
        else:
            network.guarding = False
            _websocket_guard(page.context).network = None
            if network.workers is not None:
                try:
                    network.workers.send("Target.setAutoAttach", AUTO_ATTACH_OFF)
                    network.workers.detach()
                except Exception:  # noqa: BLE001 - a closed browser has no session left
                    pass
                network.workers = None
            _let_judgements_end(page, network)
            for owner in (page, page.context):
                try:
                    owner.unroute(ROUTE_ALL, network.route_handler)
                except Exception:  # noqa: BLE001 - a closed page or context has no routes left
                    pass
            _stop_backstops(network)
            network.detach()
        return None
    raise TypeError(f"unknown request {request!r}")


def _start_backstop(page: Any, network: NetworkLog) -> None:
    """Judge what ``page`` sends that Playwright does not route (``actuate.backstop_answer``): on the
    page's own DevTools session, on each frame of it that runs in another process (its own target,
    which the page's session does not cover) and on every page the context opens while the guard is on."""
    _backstop(page.context, page, network)
    for frame in page.frames[1:]:
        _backstop_frame(frame, network)

    def navigated(frame: Any) -> None:  # a frame that moved to another process is another target
        if network.guarding:
            _backstop_frame(frame, network)

    network.listen(page, "framenavigated", navigated)
    if not any(event == "page" for _, event, _ in network.listeners):  # once per replay, on its context
        def opened(other: Any) -> None:
            if network.guarding:
                try:
                    _start_backstop(other, network)
                except Exception:  # noqa: BLE001 - closed as soon as opened
                    pass
        network.listen(page.context, "page", opened)


def _backstop(context: Any, target: Any, network: NetworkLog) -> None:
    session = context.new_cdp_session(target)
    network.backstops.append(session)

    def paused(event: Any) -> None:
        network.judging += 1
        try:
            session.send(*backstop_answer(network, event))
        except Exception:  # noqa: BLE001 - the request or the page is gone
            pass
        finally:
            network.judging -= 1

    session.on("Fetch.requestPaused", paused)
    session.send("Fetch.enable", BACKSTOP_INTERCEPTION)


def _backstop_frame(frame: Any, network: NetworkLog) -> None:
    """A backstop for ``frame`` when it has a target of its own (an out-of-process frame); a frame in
    its page's process has none (Playwright refuses the session) and is covered by the page's."""
    if frame.parent_frame is None or id(frame) in network.backstopped:
        return
    try:
        _backstop(frame.page.context, frame, network)
    except Exception:  # noqa: BLE001 - in its page's process, or detached meanwhile
        return
    network.backstopped.add(id(frame))


def _stop_backstops(network: NetworkLog) -> None:
    network.stop_listening()
    for session in network.backstops:
        try:
            session.detach()  # (the browser lets what the session still holds go: judged first, above)
        except Exception:  # noqa: BLE001 - its page is closed
            pass
    network.backstops.clear()
    network.backstopped.clear()


def _route_handler(network: NetworkLog) -> Any:
    def handle(route: Any, outgoing: Any) -> None:
        network.judging += 1
        try:
            judge(route, outgoing)
        finally:
            network.judging -= 1

    def judge(route: Any, outgoing: Any) -> None:
        decision = route_decision(network, outgoing)
        if decision == DENY:
            method, how = refusal(outgoing)
            getattr(route, method)(**how)
        elif decision == FETCH:
            # Sent here, redirects not followed: the browser follows a redirect without routing it
            # again, so where it leads is judged before the browser sees it.
            try:
                response = route.fetch(max_redirects=0)
            except Exception:  # noqa: BLE001 - the server could not be reached: as the browser would say
                route.abort("failed")
                return
            if redirect_admitted(network, outgoing, response):
                route.fulfill(response=response)
            else:
                method, how = refusal(outgoing)
                getattr(route, method)(**how)
        else:
            route.fallback()
    return handle


def _let_judgements_end(page: Any, network: NetworkLog) -> None:
    """Let the route events the browser has sent be dispatched and every judgement in progress end
    (``NetworkLog.judging``) before the guard's handler is removed: a request still held for it
    would otherwise be sent as it was (a POST behind a redirect the guard was fetching, a page's
    beacon while it is left), and the handler's abort would find it gone. Two quiet turns of the
    event loop in a row; at most ``JUDGING_PATIENCE_S``."""
    deadline = time.monotonic() + JUDGING_PATIENCE_S
    quiet = 0
    while quiet < 2 and time.monotonic() < deadline:
        try:
            page.wait_for_timeout(JUDGING_TURN_MS)
        except Exception:  # noqa: BLE001 - a closed page holds no request any more
            return
        quiet = quiet + 1 if network.judging == 0 else 0


def _stop_workers(page: Any, network: NetworkLog) -> str | None:
    """Stop every shared or service worker the context starts while the guard is on (closed before it
    runs a line); why the context cannot be guarded, or ``None``."""
    browser = page.context.browser
    try:
        session = browser.new_browser_cdp_session()
        own = page.context.new_cdp_session(page)
        context_id = own.send("Target.getTargetInfo")["targetInfo"]["browserContextId"]
        own.detach()
    except Exception:  # noqa: BLE001 - not Chromium, or a browser connected without its protocol
        return NO_CDP
    running = running_workers(session.send("Target.getTargets"), context_id)
    if running:
        session.detach()
        return unguarded_workers(running)

    def attached(event: Any) -> None:
        info = event.get("targetInfo") or {}
        try:
            if info.get("browserContextId") == context_id:
                network.refuse_worker(str(info.get("url")))
                session.send("Target.closeTarget", {"targetId": info.get("targetId")})
            else:  # another context's worker: let it run
                session.send("Target.detachFromTarget", {"sessionId": event.get("sessionId")})
        except Exception:  # noqa: BLE001 - it is gone already
            pass

    session.on("Target.attachedToTarget", attached)
    session.send("Target.setAutoAttach", AUTO_ATTACH_WORKERS)
    network.workers = session
    return None


def _websocket_guard(context: Any) -> WebSocketGuard:
    guard = getattr(context, WEBSOCKET_GUARD, None)
    if not isinstance(guard, WebSocketGuard):
        guard = WebSocketGuard()
        setattr(context, WEBSOCKET_GUARD, guard)

        def handle(websocket: Any) -> None:
            if websocket_admitted(guard, str(websocket.url)):
                websocket.connect_to_server()
            else:
                websocket.close(code=1008, reason="blocked by the replay's request guard")
        context.route_web_socket(re.compile(".*"), handle)
    return guard


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
        """Type ``text``; ``secret=True`` (or a name) keeps it out of the store like a password;
        ``secret=False`` declares it public (stored in clear unless the field's history makes it secret).
        Text that is not shown to be public is stored as a placeholder (see :meth:`save`)."""
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
