"""Record and replay plans in a page of Playwright's async API (``playwright.async_api``).

The same steps as :mod:`.sync_api` (see :mod:`.steps`), answered with ``await``.
"""

from __future__ import annotations

import asyncio
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
        method, kwargs = execute_args(request.action)
        return await getattr(await _element(page, request), method)(**kwargs)
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
    if isinstance(request, Guard):
        if request.on:
            request.network.attach(page)
            request.network.route_handler = _route_handler(request)
            request.network.popup_handler = _popup_handler(request, page)
            await page.route(ROUTE_ALL, request.network.route_handler)
            await page.context.route(ROUTE_ALL, request.network.popup_handler)
        else:
            try:
                await page.unroute(ROUTE_ALL, request.network.route_handler)
                await page.context.unroute(ROUTE_ALL, request.network.popup_handler)
            except Exception:  # noqa: BLE001 - a closed page or context has no routes left
                pass
            request.network.detach()
        return None
    raise TypeError(f"unknown request {request!r}")


def _route_handler(request: Guard) -> Any:
    async def handle(route: Any, outgoing: Any) -> None:
        if guard_route(request.network, outgoing):
            await route.fallback()
        else:
            await route.abort("blockedbyclient")
    return handle


def _popup_handler(request: Guard, page: Any) -> Any:
    """The context's route: a window the replayed page opened is held to the same guard (a window's
    first load has no frame to say who opened it: while a replay runs, it is held to the guard too)."""
    async def handle(route: Any, outgoing: Any) -> None:
        owner, ours = request_page(outgoing), False
        if owner is None:
            ours = outgoing.is_navigation_request()  # a window's first load, before its frame exists
        for _ in range(POPUP_DEPTH):
            owner = await owner.opener() if owner is not None and owner is not page else None
            ours = ours or owner is page
        if ours and not guard_route(request.network, outgoing):
            await route.abort("blockedbyclient")
            return
        await route.fallback()
    return handle


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
        """Type ``text``; ``secret=True`` (or a name) keeps it out of the store like a password."""
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
