"""Record and replay plans in a page of Playwright's async API (``playwright.async_api``).

The same steps as :mod:`.sync_api` (see :mod:`.steps`), answered with ``await``.
"""

from __future__ import annotations

import asyncio
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


async def _evaluate(page: Any, script: str, arg: Any = None) -> Any:
    """``page.evaluate``, again after a navigation destroyed the document it ran in."""
    last: Exception | None = None
    for _ in range(NAVIGATION_RETRIES):
        try:
            return await page.evaluate(script, arg)
        except Exception as exc:  # noqa: BLE001 - a navigation destroyed the context: wait and look again
            last = exc
            try:
                await page.wait_for_load_state("load")
            except Exception:  # noqa: BLE001
                await asyncio.sleep(0.1)
    raise RuntimeError(f"could not read the page's DOM: {last}") from last


async def asnapshot_page(page: Any) -> Page:
    """The :class:`Page` of ``page``'s current DOM (same rule as ``page_from_html``)."""
    return page_from_snapshot(await _evaluate(page, SNAPSHOT_JS, snapshot_arguments()))


def _target(page: Any, target: Any) -> Any:
    return page.locator(target) if isinstance(target, str) else target


async def _element(page: Any, request: Execute) -> Any:
    """The element of the last snapshot that ``request`` acts on, as a handle of its own frame."""
    handle = None
    if request.index is not None:
        handle = (await page.evaluate_handle(ELEMENT_AT_JS, request.index)).as_element()
    if handle is not None and in_frame(request.action):
        frame = await handle.owner_frame()
        if frame is not None and frame != page.main_frame:
            handle = (await frame.evaluate_handle(ELEMENT_AT_JS, request.index)).as_element()
    if handle is None:
        raise RuntimeError(f"element {request.action.element_id} left the page before it could be used")
    return handle


async def _answer(page: Any, request: Any, settle_timeout_ms: float) -> Any:
    if isinstance(request, Snapshot):
        return await asnapshot_page(page)
    if isinstance(request, Locate):
        return await _target(page, request.target).evaluate(INDEX_OF_JS)
    if isinstance(request, Perform):
        target = _target(page, request.target)
        if request.kind == "fill":
            return await target.fill(str(request.value))
        if request.kind == "select":
            return await target.select_option(**select_args(request.value))
        return await target.click()
    if isinstance(request, Execute):
        method, kwargs = execute_args(request.action, request.timeout_s)
        return await getattr(await _element(page, request), method)(**kwargs)
    if isinstance(request, Prepare):
        for frame in page.frames:
            try:
                await frame.evaluate(NO_UNLOAD_JS)
            except Exception:  # noqa: BLE001 - a frame that navigated or detached meanwhile
                pass
        handle = await _element(page, Execute(request.action, request.index))
        if request.action.action_type.lower() == ActionType.CLICK:
            await handle.hover(timeout=action_timeout_ms(request.timeout_s))
        else:
            await handle.focus()
        fresh = await asnapshot_page(page)
        return fresh, int(await handle.evaluate(INDEX_OF_JS))
    if isinstance(request, Settle):
        try:
            await page.wait_for_load_state("load", timeout=settle_timeout_ms)
        except Exception:  # noqa: BLE001 - a slow resource: the snapshot waits for what it needs
            pass
        return None
    if isinstance(request, Sleep):
        return await asyncio.sleep(request.seconds)
    if isinstance(request, Outcome):
        return await _evaluate(page, OUTCOME_JS)
    if isinstance(request, Facts):
        return {"service_workers_blocked": service_workers_blocked(page.context)}
    if isinstance(request, Guard):
        network = request.network
        if request.on:
            refused = await _stop_workers(page, network)
            if refused is not None:
                return refused
            try:
                await _start_backstop(page, network)
            except Exception:  # noqa: BLE001 - a browser connected without its protocol
                await _stop_backstops(network)
                return NO_CDP
            network.attach(page)
            network.route_handler = _route_handler(network)
            network.guarding = True
            # The page's route runs before the user's own page routes; the context's covers every
            # other page (a popup, a window opened with noopener, another tab) and the workers.
            await page.route(ROUTE_ALL, network.route_handler)
            await page.context.route(ROUTE_ALL, network.route_handler)
            (await _websocket_guard(page.context)).network = network
        else:
            network.guarding = False
            (await _websocket_guard(page.context)).network = None
            if network.workers is not None:
                try:
                    await network.workers.send("Target.setAutoAttach", AUTO_ATTACH_OFF)
                    await network.workers.detach()
                except Exception:  # noqa: BLE001 - a closed browser has no session left
                    pass
                network.workers = None
            await _let_judgements_end(page, network)
            for owner in (page, page.context):
                try:
                    await owner.unroute(ROUTE_ALL, network.route_handler)
                except Exception:  # noqa: BLE001 - a closed page or context has no routes left
                    pass
            await _stop_backstops(network)
            network.detach()
        return None
    raise TypeError(f"unknown request {request!r}")


async def _start_backstop(page: Any, network: NetworkLog) -> None:
    """As the sync driver's: the page's session, its out-of-process frames', and every page opened."""
    await _backstop(page.context, page, network)
    for frame in page.frames[1:]:
        await _backstop_frame(frame, network)

    async def navigated(frame: Any) -> None:
        if network.guarding:
            await _backstop_frame(frame, network)

    network.listen(page, "framenavigated", navigated)
    if not any(event == "page" for _, event, _ in network.listeners):  # once per replay, on its context
        async def opened(other: Any) -> None:
            if network.guarding:
                try:
                    await _start_backstop(other, network)
                except Exception:  # noqa: BLE001 - closed as soon as opened
                    pass
        network.listen(page.context, "page", opened)


async def _backstop(context: Any, target: Any, network: NetworkLog) -> None:
    session = await context.new_cdp_session(target)
    network.backstops.append(session)

    async def paused(event: Any) -> None:
        network.judging += 1
        try:
            await session.send(*backstop_answer(network, event))
        except Exception:  # noqa: BLE001 - the request or the page is gone
            pass
        finally:
            network.judging -= 1

    session.on("Fetch.requestPaused", paused)
    await session.send("Fetch.enable", BACKSTOP_INTERCEPTION)


async def _backstop_frame(frame: Any, network: NetworkLog) -> None:
    """As the sync driver's: a backstop for an out-of-process frame (an in-process one has no target)."""
    if frame.parent_frame is None or id(frame) in network.backstopped:
        return
    try:
        await _backstop(frame.page.context, frame, network)
    except Exception:  # noqa: BLE001 - in its page's process, or detached meanwhile
        return
    network.backstopped.add(id(frame))


async def _stop_backstops(network: NetworkLog) -> None:
    network.stop_listening()
    for session in network.backstops:
        try:
            await session.detach()  # (the browser lets what the session still holds go: judged first, above)
        except Exception:  # noqa: BLE001 - its page is closed
            pass
    network.backstops.clear()
    network.backstopped.clear()


def _route_handler(network: NetworkLog) -> Any:
    async def handle(route: Any, outgoing: Any) -> None:
        network.judging += 1
        try:
            await judge(route, outgoing)
        finally:
            network.judging -= 1

    async def judge(route: Any, outgoing: Any) -> None:
        decision = route_decision(network, outgoing)
        if decision == DENY:
            method, how = refusal(outgoing)
            await getattr(route, method)(**how)
        elif decision == FETCH:
            # Sent here, redirects not followed: the browser follows a redirect without routing it
            # again, so where it leads is judged before the browser sees it.
            try:
                response = await route.fetch(max_redirects=0)
            except Exception:  # noqa: BLE001 - the server could not be reached: as the browser would say
                await route.abort("failed")
                return
            if redirect_admitted(network, outgoing, response):
                await route.fulfill(response=response)
            else:
                method, how = refusal(outgoing)
                await getattr(route, method)(**how)
        else:
            await route.fallback()
    return handle


async def _let_judgements_end(page: Any, network: NetworkLog) -> None:
    """As the sync driver's: every judgement in progress ends before the guard's handler is removed."""
    deadline = time.monotonic() + JUDGING_PATIENCE_S
    quiet = 0
    while quiet < 2 and time.monotonic() < deadline:
        await asyncio.sleep(JUDGING_TURN_MS / 1000)
        quiet = quiet + 1 if network.judging == 0 else 0


async def _stop_workers(page: Any, network: NetworkLog) -> str | None:
    """Stop every shared or service worker the context starts while the guard is on (closed before it
    runs a line); why the context cannot be guarded, or ``None``."""
    browser = page.context.browser
    try:
        session = await browser.new_browser_cdp_session()
        own = await page.context.new_cdp_session(page)
        context_id = (await own.send("Target.getTargetInfo"))["targetInfo"]["browserContextId"]
        await own.detach()
    except Exception:  # noqa: BLE001 - not Chromium, or a browser connected without its protocol
        return NO_CDP
    running = running_workers(await session.send("Target.getTargets"), context_id)
    if running:
        await session.detach()
        return unguarded_workers(running)

    async def attached(event: Any) -> None:
        info = event.get("targetInfo") or {}
        try:
            if info.get("browserContextId") == context_id:
                network.refuse_worker(str(info.get("url")))
                await session.send("Target.closeTarget", {"targetId": info.get("targetId")})
            else:  # another context's worker: let it run
                await session.send("Target.detachFromTarget", {"sessionId": event.get("sessionId")})
        except Exception:  # noqa: BLE001 - it is gone already
            pass

    session.on("Target.attachedToTarget", attached)
    await session.send("Target.setAutoAttach", AUTO_ATTACH_WORKERS)
    network.workers = session
    return None


async def _websocket_guard(context: Any) -> WebSocketGuard:
    guard = getattr(context, WEBSOCKET_GUARD, None)
    if not isinstance(guard, WebSocketGuard):
        guard = WebSocketGuard()
        setattr(context, WEBSOCKET_GUARD, guard)

        async def handle(websocket: Any) -> None:
            if websocket_admitted(guard, str(websocket.url)):
                websocket.connect_to_server()
            else:
                await websocket.close(code=1008, reason="blocked by the replay's request guard")
        await context.route_web_socket(re.compile(".*"), handle)
    return guard


async def adrive(page: Any, steps: Returning[T], settle_timeout_ms: float = 10_000) -> T:
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
            answer = await _answer(page, request, settle_timeout_ms)
        except Exception as exc:  # noqa: BLE001 - the steps decide what an error means
            error = exc


class AsyncPageRecorder(RecorderBase):
    """:class:`~actioncache.replay.browser.PageRecorder` for Playwright's async API (``await rec.click(...)``)."""

    async def click(self, target: Any, *, intent: str | None = None, **fields: Any) -> Action:
        """Click ``target``; ``intent`` says it was chosen for the input (see ``PageRecorder.click``)."""
        return await adrive(self.page, self._element_step("click", target, intent=intent, **fields))

    async def fill(self, target: Any, text: str, *, secret: str | bool | None = None, **fields: Any) -> Action:
        """Type ``text``; ``secret=True`` (or a name) keeps it out of the store like a password;
        ``secret=False`` declares it public (stored in clear unless the field's history makes it secret).
        Text that is not shown to be public is stored as a placeholder (see :meth:`save`)."""
        return await adrive(self.page, self._element_step("fill", target, text, secret=secret, **fields))

    async def select(self, target: Any, value: str, **fields: Any) -> Action:
        """Choose the option whose value (else text) is ``value``."""
        return await adrive(self.page, self._element_step("select", target, value, **fields))

    async def wait(self, seconds: float) -> Action:
        return await adrive(self.page, self._wait_step(seconds))

    def complete(self, **fields: Any) -> Action:
        return self._complete(**fields)


async def areplay_plan(plans: PlanCache, page: Any, goal: str, *, url: str | None = None, executed: Any = 0,
                       personalize: PersonalizeHook | None = None, resolve: Resolver | None = None,
                       context: Mapping[str, Any] | None = None, secrets: Mapping[str, Any] | None = None,
                       wait_s: float = WAIT_S, quiet_s: float = QUIET_S,
                       allow_requests: Iterable[str] = ()) -> ReplayOutcome:
    """:func:`~actioncache.replay.browser.replay_plan` for Playwright's async API.

    The plan store is read synchronously (as :class:`PlanCache` is); each read is one small query.
    """
    return await adrive(page, replay_steps(plans, goal, url or page.url, executed=executed, personalize=personalize,
                                           resolve=resolve, context=context, secrets=secrets, wait_s=wait_s,
                                           quiet_s=quiet_s, allow_requests=allow_requests))


__all__ = ["AsyncPageRecorder", "adrive", "areplay_plan", "asnapshot_page"]
