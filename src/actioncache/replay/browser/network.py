"""What a page sends, step by step: the recorder's record of it and the replay's guard over it.

:class:`NetworkLog` listens to a Playwright page's request events (``request``, ``response``,
``requestfinished``, ``requestfailed``; the same in the sync and async APIs, so this module is
shared) and files each request under the step that was running when it started. The recorder turns
a step's requests into its :class:`~actioncache.replay.effects.StepEffects`; a replay routes every
request through :meth:`NetworkLog.admit` (Playwright's ``page.route``) before it leaves the
browser, which asks the :class:`~actioncache.replay.guard.RequestGuard` and keeps what it refused;
a request the browser holds that Playwright does not route is judged the same way by the drivers'
backstop (:meth:`NetworkLog.judge_paused`, ``actuate.backstop_answer``).

It also answers "is the page quiet?": no request of the step in flight and none started for a
moment, so a step is judged on what it did, not on half of it.

Every request the page's events report while the guard is on must also have been judged by a route
handler (or be the follow-up of a redirect the guard judged): a state-changing request that left
without passing the guard (a path Playwright's routing does not cover) stops the replay as surely
as an aborted one (:meth:`NetworkLog.unguarded`).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping
from urllib.parse import urljoin

from ..effects import SAFE_METHODS, WEBSOCKET, SentRequest, describe_request, status_class, unique
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
    #: A route handler (or the redirect rule) judged it; ``guarded``: it was seen while the guard was on.
    judged: bool = False
    guarded: bool = False
    verdict: str | None = None


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
    #: The driver's CDP session that stops shared workers while the guard is on.
    workers: Any = None
    #: The drivers' CDP sessions that judge what the browser pauses and Playwright does not route, one
    #: per page of the context and per out-of-process frame (``actuate.backstop_answer``).
    backstops: list[Any] = field(default_factory=list)
    #: The frames (by id) with a backstop of their own (out-of-process frames: their own targets).
    backstopped: set[int] = field(default_factory=set)
    #: The drivers' listeners that give new pages and frames a backstop while the guard is on.
    listeners: list[tuple[Any, str, Any]] = field(default_factory=list)
    #: What each step of the plan typed, by plan index (in memory only): fields carrying it are kept as references.
    typed: dict[int, str] = field(default_factory=dict)
    #: The guard is routing this page's context (set by the driver).
    guarding: bool = False
    #: Requests the guard's route handler is judging now (a redirect's fetch can take a while): the
    #: driver removes the handler only once none is left, since removing it makes the browser
    #: send a request it still holds, whatever the handler was about to decide.
    judging: int = 0
    #: Redirect targets the guard admitted, ``(method, url)``: their requests were judged before they existed.
    prejudged: list[tuple[str, str]] = field(default_factory=list)
    #: Requests the backstop refused that the page's events may still report (the browser's network
    #: inspector knew them): the event is the same request, not another one that left unjudged.
    refused_paused: list[Seen] = field(default_factory=list)
    _by_request: dict[int, Seen] = field(default_factory=dict)
    _dialogs: list[tuple[int | None, str]] = field(default_factory=list)
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
                          ("requestfinished", self.on_done), ("requestfailed", self.on_done),
                          ("websocket", self.on_websocket), ("dialog", self.on_dialog)]
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

    def listen(self, emitter: Any, event: str, handler: Callable[[Any], Any]) -> None:
        """``emitter.on(event, handler)`` for as long as the guard is on (:meth:`stop_listening`)."""
        emitter.on(event, handler)
        self.listeners.append((emitter, event, handler))

    def stop_listening(self) -> None:
        for emitter, event, handler in self.listeners:
            try:
                emitter.remove_listener(event, handler)
            except Exception:  # noqa: BLE001 - a closed page or context has no listeners left
                pass
        self.listeners.clear()

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
        """Requests the guard refused, and state-changing requests that left without being judged."""
        return [s for s in self.seen if (s.blocked or self._unjudged(s)) and (step is None or s.step == step)]

    def unguarded(self) -> list[Seen]:
        """State-changing requests that left the browser while the guard was on, unjudged by it."""
        return [s for s in self.seen if self._unjudged(s)]

    @staticmethod
    def _unjudged(seen: Seen) -> bool:
        return (seen.guarded and not seen.judged and seen.sent is not None
                and seen.url.split(":", 1)[0].lower() in ("http", "https", "ws", "wss"))

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
        for seen in self.refused_paused:
            if (seen.method, seen.url) == (facts["method"], facts["url"]):
                self.refused_paused.remove(seen)
                seen.request = request
                self._by_request[id(request)] = seen
                return seen
        return self._add(facts["method"], facts["url"], facts["navigation"], facts["main_frame"],
                         facts["resource_type"], facts["content_type"], facts["body"], request)

    def _add(self, method: str, url: str, navigation: bool, main_frame: bool, resource_type: str,
             content_type: str | None, body: bytes | None, request: Any) -> Seen:
        # Every navigation counts, of the page or of any frame of any origin: a frame sent to another
        # origin carries what its URL says as surely as a form post does.
        sent = describe_request(method, url, navigation=navigation, content_type=content_type, body=body,
                                typed=self.typed)
        seen = Seen(method, url, self.step, navigation, main_frame, resource_type, sent, request=request,
                    guarded=self.guarding)
        if (method, url) in self.prejudged:  # the follow-up of a redirect the guard admitted
            self.prejudged.remove((method, url))
            seen.judged = True
        self._by_request[id(request)] = seen
        self.seen.append(seen)
        self.last_activity = time.monotonic()
        return seen

    def on_request(self, request: Any) -> None:
        self._seen(request)

    def on_response(self, response: Any) -> None:
        seen = self._seen(response.request)
        if not seen.blocked:  # (a refused navigation's "204" is the guard's own answer, not the site's)
            seen.status = int(response.status)
        self.last_activity = time.monotonic()

    def on_done(self, request: Any) -> None:
        self._seen(request).done = True
        self.last_activity = time.monotonic()

    def on_dialog(self, dialog: Any) -> None:
        """A JavaScript dialog (alert, confirm, prompt, beforeunload): noted for its step and dismissed,
        as Playwright does when nobody listens. Its message is never kept (it may quote what was typed)."""
        self._dialogs.append((self.step, str(getattr(dialog, "type", "dialog"))))
        try:
            done = dialog.dismiss()
            if inspect.isawaitable(done):
                asyncio.ensure_future(done)
        except Exception:  # noqa: BLE001 - another listener handled it already
            pass

    def dialogs(self, step: int | None) -> list[str]:
        """The types of the JavaScript dialogs the page opened during ``step``."""
        return [kind for at, kind in self._dialogs if at == step]

    def on_websocket(self, websocket: Any) -> None:
        """A WebSocket the page opened (recording: it is one of the step's requests)."""
        seen = self._add(WEBSOCKET, str(websocket.url), False, True, "websocket", None, b"", websocket)
        seen.done = True

    def admit(self, request: Any) -> bool:
        """The route handler's question: may this request leave the browser? (A refusal is kept.)"""
        return self.decide(request) != DENY

    def decide(self, request: Any) -> str:
        """:data:`DENY`, :data:`PASS`, or :data:`FETCH` (admitted, and state-changing by its method: the
        driver sends it itself without following redirects, so :meth:`admit_redirect` judges where a
        redirect would lead before the browser follows it). Judged once per request."""
        return self._verdict(self._seen(request))

    def judge_paused(self, request: Mapping[str, Any], resource_type: str, request_id: str, *,
                     routed: bool = False) -> bool:
        """The backstop's question (``actuate.backstop_answer``): may a request the browser paused
        leave? Judged as :meth:`decide` judges a routed one, from the DevTools protocol's own
        description of it (``Fetch.requestPaused``); a refusal is kept.

        ``routed``: the browser's network inspector knows the request (it has a ``networkId``), so
        Playwright may route it too, and then its route handler keeps it; it is judged here all the
        same, and kept here only when refused. Playwright routes a request only once it has tied it
        to a page it knows, and a page it does not know yet sends too: a popup's first requests
        (``w = window.open(''); w.fetch(...)`` from its opener's script, before the popup's own
        interception exists) leave through the opener's loader, paused at the opener's backstop,
        and Playwright would hold them unrouted until its interception is lifted, then let them go.
        The redirect a request is answered with is such a request too (the browser follows it
        without routing it again). Only a CORS preflight (an ``OPTIONS`` carrying
        ``Access-Control-Request-Method``, which no page can set) is left to Playwright, which
        answers it itself while it intercepts."""
        headers = {str(k).lower(): str(v) for k, v in (request.get("headers") or {}).items()}
        entries = request.get("postDataEntries")
        if entries:
            body: bytes | None = b"".join(base64.b64decode(str(e.get("bytes") or "")) for e in entries)
        elif request.get("hasPostData"):
            body = None  # a body the browser did not hand over
        else:
            body = b""
        navigation = resource_type.lower() == "document"
        method, url = str(request.get("method") or "GET").upper(), str(request.get("url") or "")
        if routed:
            if method == "OPTIONS" and "access-control-request-method" in headers or (method, url) in self.prejudged:
                return True  # a preflight, or the follow-up of a redirect the guard admitted
            # Described as Playwright's route describes the same request (the recording's descriptions come
            # from Playwright too): a request without post data has no body there (None), not an empty one,
            # so a recorded form post with nothing to send ("unknown" body) is the same request here.
            routed_body = None if body == b"" and not entries else body
            sent = describe_request(method, url, navigation=navigation, content_type=headers.get("content-type"),
                                    body=routed_body, typed=self.typed)
            if self.guard is None or self.guard.admit(sent, method, url).allowed:
                return True  # (Playwright's route handler keeps it, when it routes it)
        seen = self._add(method, url, navigation, navigation, resource_type.lower(), headers.get("content-type"),
                         body, ("paused", request_id))
        seen.done = True  # no page event will say more of it
        allowed = self._verdict(seen) != DENY
        if routed and not allowed:
            self.refused_paused.append(seen)
        return allowed

    def _verdict(self, seen: Seen) -> str:
        if seen.verdict is not None:
            return seen.verdict
        seen.judged = True
        if self.guard is None:
            seen.verdict = PASS
            return PASS
        verdict = self.guard.admit(seen.sent, seen.method, seen.url)
        seen.matched = verdict.matched
        if not verdict.allowed:
            seen.blocked, seen.reason, seen.done = True, verdict.reason, True
            seen.verdict = DENY
        else:
            seen.verdict = FETCH if seen.method not in SAFE_METHODS else PASS
        return seen.verdict

    def admit_redirect(self, request: Any, status: int, location: str | None) -> bool:
        """May the browser follow the redirect the server answered ``request`` with? (A refusal is kept.)

        The follow-up is judged as the request the browser would send: ``307``/``308`` repeat the
        method and body, ``303`` (and ``301``/``302`` after a ``POST``) turn it into a ``GET``; a
        navigation stays a navigation.
        """
        if not 300 <= status < 400 or not location:
            return True
        seen = self._seen(request)
        url = urljoin(seen.url, location)
        method = seen.method
        if status == 303 and method != "HEAD" or status in (301, 302) and method == "POST":
            method = "GET"
        body = request_facts(request)["body"] if method == seen.method else b""
        content_type = request_facts(request)["content_type"] if method == seen.method else None
        follow = self._add(method, url, seen.navigation, seen.main_frame, seen.resource_type, content_type, body,
                           ("redirect", id(request), url))
        follow.judged = True
        if self.guard is not None:
            verdict = self.guard.admit(follow.sent, method, url)
            follow.matched = verdict.matched
            if not verdict.allowed:
                follow.blocked, follow.reason, follow.done = True, f"(a redirect) {verdict.reason}", True
                return False
        follow.done = True
        self.prejudged.append((method, url))
        return True

    def refuse_worker(self, url: str) -> None:
        """A shared or service worker the page started, closed before it ran (its requests cannot be guarded)."""
        seen = self._add("WORKER", url, False, False, "worker", None, b"", ("worker", url, len(self.seen)))
        seen.sent = SentRequest("WORKER", url)
        seen.judged = seen.blocked = seen.done = True
        seen.reason = f"the page started a shared worker ({url}), whose requests the guard cannot see; it was stopped"

    def admit_websocket(self, url: str) -> bool:
        """May the page open a WebSocket to ``url`` now? (A refusal is kept.)"""
        seen = self._add(WEBSOCKET, url, False, True, "websocket", None, b"", ("websocket", url, len(self.seen)))
        seen.judged, seen.done = True, True
        self.prejudged.append((WEBSOCKET, url))  # the page's own "websocket" event for it
        if self.guard is None:
            return True
        verdict = self.guard.admit(seen.sent, WEBSOCKET, url)
        seen.matched = verdict.matched
        if not verdict.allowed:
            seen.blocked, seen.reason = True, verdict.reason
        return verdict.allowed


#: Route decisions (:meth:`NetworkLog.decide`).
DENY, PASS, FETCH = "deny", "pass", "fetch"
