"""What a page sends, step by step: the recorder's record of it and the replay's guard over it.

:class:`NetworkLog` listens to a Playwright page's request events (``request``, ``response``,
``requestfinished``, ``requestfailed``; the same in the sync and async APIs, so this module is
shared) and files each request under the step that was running when it started. The recorder turns
a step's requests into its :class:`~actioncache.replay.effects.StepEffects`; a replay routes every
request through :meth:`NetworkLog.admit` (Playwright's ``page.route``) before it leaves the
browser, which asks the :class:`~actioncache.replay.guard.RequestGuard` and keeps what it refused.

It also answers "is the page quiet?": no request of the step in flight and none started for a
moment, so a step is judged on what it did, not on half of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..effects import SAFE_METHODS, SentRequest, describe_request, same_origin, status_class, unique
from ..guard import RequestGuard

#: Requests that may stay open for the page's whole life: they never make a step "busy".
LONG_LIVED = frozenset({"eventsource", "websocket", "media", "manifest", "ping"})


@dataclass
class Seen:
    """One request the page sent (or tried to): its description and what became of it."""

    method: str
    url: str
    step: int | None
    navigation: bool
    main_frame: bool
    resource_type: str
    sent: SentRequest | None
    status: int | None = None
    done: bool = False
    blocked: bool = False
    reason: str = ""
    matched: SentRequest | None = None
    request: Any = None  # kept so the id() the events are matched by stays unique


def request_facts(request: Any) -> dict[str, Any]:
    """What a Playwright request says about itself (its frame may be gone: a service worker's)."""
    navigation = bool(request.is_navigation_request())
    try:
        frame = request.frame
        main_frame = frame.parent_frame is None
    except Exception:  # noqa: BLE001 - no frame yet: a new window's first load (or a service worker's request)
        main_frame = navigation
    try:
        body = request.post_data_buffer
    except Exception:  # noqa: BLE001 - a body the browser did not hand over
        body = None
    headers = request.headers or {}
    return {"method": str(request.method).upper(), "url": str(request.url), "main_frame": main_frame,
            "navigation": navigation, "resource_type": str(request.resource_type),
            "content_type": headers.get("content-type"), "body": body}


@dataclass
class NetworkLog:
    """The page's requests by step, and the guard's verdicts (see the module docstring)."""

    guard: RequestGuard | None = None
    step: int | None = None
    page_url: str | None = None
    seen: list[Seen] = field(default_factory=list)
    step_started: float = field(default_factory=lambda: time.monotonic())
    last_activity: float = field(default_factory=lambda: time.monotonic())
    #: The route handler a driver installed for the guard (to remove that one handler, not the user's).
    route_handler: Any = None
    popup_handler: Any = None
    _by_request: dict[int, Seen] = field(default_factory=dict)
    _page: Any = None
    _handlers: list[tuple[str, Callable[[Any], None]]] = field(default_factory=list)

    # --- wiring to a page -------------------------------------------------------------------------

    def attach(self, page: Any) -> None:
        """Listen to ``page``'s request events (once; ``page.on`` is synchronous in both APIs)."""
        if self._page is page:
            return
        self.detach()
        self._page = page
        self._handlers = [("request", self.on_request), ("response", self.on_response),
                          ("requestfinished", self.on_done), ("requestfailed", self.on_done)]
        for event, handler in self._handlers:
            page.on(event, handler)

    def detach(self) -> None:
        if self._page is not None:
            for event, handler in self._handlers:
                try:
                    self._page.remove_listener(event, handler)
                except Exception:  # noqa: BLE001 - a closed page has no listeners left to remove
                    pass
        self._page, self._handlers = None, []

    # --- steps ------------------------------------------------------------------------------------

    def begin_step(self, step: int) -> None:
        self.step = step
        self.step_started = self.last_activity = time.monotonic()

    def in_step(self, step: int | None) -> list[Seen]:
        return [s for s in self.seen if s.step == step]

    def sent(self, step: int | None) -> list[SentRequest]:
        """The state-changing requests of ``step`` that left the browser, each shape once, with status."""
        out = []
        for s in self.in_step(step):
            if s.sent is not None and not s.blocked:
                out.append(replace(s.sent, status=status_class(s.status)))
        return unique(out)

    def blocked(self, step: int | None = None) -> list[Seen]:
        return [s for s in self.seen if s.blocked and (step is None or s.step == step)]

    def answered(self, step: int | None) -> list[tuple[SentRequest, SentRequest]]:
        """The admitted state-changing requests of ``step`` with a response, each with its recorded twin."""
        return [(replace(s.sent, status=status_class(s.status)), s.matched)
                for s in self.in_step(step) if s.sent is not None and s.matched is not None and s.status is not None]

    def document_status(self, step: int | None) -> str | None:
        """The status class of the last document the main frame loaded in ``step``."""
        loads = [s for s in self.in_step(step) if s.navigation and s.main_frame and s.status is not None]
        return status_class(loads[-1].status) if loads else None

    def quiet_for(self, seconds: float) -> bool:
        """No request of the step in flight, and none started or ended for ``seconds``."""
        now = time.monotonic()
        if now - self.last_activity < seconds:
            return False
        return not any(not s.done and s.resource_type not in LONG_LIVED for s in self.seen
                       if s.step == self.step and not s.blocked)

    # --- events -----------------------------------------------------------------------------------

    def _seen(self, request: Any) -> Seen:
        found = self._by_request.get(id(request))
        if found is not None and found.request is request:
            return found
        facts = request_facts(request)
        sent = describe_request(facts["method"], facts["url"], navigation=facts["navigation"],
                                content_type=facts["content_type"], body=facts["body"])
        if sent is not None and sent.navigation and sent.method in SAFE_METHODS and not facts["main_frame"] and not (
                self.page_url and same_origin(facts["url"], self.page_url)):
            sent = None  # a frame of another origin loading a page: a read, like an image
        seen = Seen(facts["method"], facts["url"], self.step, facts["navigation"], facts["main_frame"],
                    facts["resource_type"], sent, request=request)
        self._by_request[id(request)] = seen
        self.seen.append(seen)
        self.last_activity = time.monotonic()
        return seen

    def on_request(self, request: Any) -> None:
        self._seen(request)

    def on_response(self, response: Any) -> None:
        seen = self._seen(response.request)
        seen.status = int(response.status)
        self.last_activity = time.monotonic()

    def on_done(self, request: Any) -> None:
        self._seen(request).done = True
        self.last_activity = time.monotonic()

    def admit(self, request: Any) -> bool:
        """The route handler's question: may this request leave the browser? (A refusal is kept.)"""
        seen = self._seen(request)
        if self.guard is None:
            return True
        verdict = self.guard.admit(seen.sent, seen.method, seen.url)
        seen.matched = verdict.matched
        if not verdict.allowed:
            seen.blocked, seen.reason, seen.done = True, verdict.reason, True
        return verdict.allowed
