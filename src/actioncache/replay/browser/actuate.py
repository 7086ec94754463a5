"""How a replayed action becomes a Playwright call, and how a routed request meets the guard
(the same for the sync and async APIs)."""

from __future__ import annotations

import logging
from typing import Any

from ..models import Action, ActionType
from .network import DENY, NetworkLog

log = logging.getLogger("actioncache.replay")

#: Snapshots retried while a navigation replaces the document under them.
NAVIGATION_RETRIES = 20
#: The route pattern of the request guard: every request of the page.
ROUTE_ALL = "**/*"
# Before the guard's route handler is removed, the drivers let every judgement in progress end
# (``NetworkLog.judging``), turning the event loop this long at a time, for at most this long.
JUDGING_TURN_MS = 20
JUDGING_PATIENCE_S = 10.0


def select_args(value: Any) -> dict[str, Any]:
    """``select_option`` keywords for a recorded choice: a value, or ``{"value"|"label": ...}``."""
    if isinstance(value, dict):
        if value.get("value") is not None:
            return {"value": str(value["value"])}
        if value.get("label") is not None:
            return {"label": str(value["label"])}
        raise ValueError("a select option needs 'value' or 'label'")
    return {"value": str(value)}


def action_timeout_ms(timeout_s: float | None) -> float:
    """How long an action waits for its element to be visible, enabled and uncovered: the replay's own
    wait (never Playwright's 30 s default), at least a quarter second."""
    return max(float(timeout_s), 0.25) * 1000 if timeout_s is not None else 30_000.0


def execute_args(action: Action, timeout_s: float | None = None) -> tuple[str, dict[str, Any]]:
    """The ElementHandle method and keywords that do ``action``."""
    kind = action.action_type.lower()
    timeout = action_timeout_ms(timeout_s)
    if kind == ActionType.INPUT_TEXT:
        return "fill", {"value": action.text or "", "timeout": timeout}
    if kind == ActionType.SELECT_OPTION:
        return "select_option", {**select_args(action.option or {}), "timeout": timeout}
    if kind == ActionType.CLICK:
        return "click", {"timeout": timeout}
    raise ValueError(f"{action.action_type!r} is not an element action")


def in_frame(action: Action) -> bool:
    """Whether the action's element sits in an iframe (it must be acted on through that frame)."""
    return bool((action.element or {}).get("frame"))


def route_decision(network: NetworkLog, request: Any) -> str:
    """The route handler's decision on ``request`` (:meth:`NetworkLog.decide`). A guard that fails
    refuses (fails closed)."""
    try:
        return network.decide(request)
    except Exception:
        log.exception("replay: the request guard failed; the request is aborted")
        return DENY


#: ``Fetch.enable`` for the backstop: every request of the page, before it is sent.
BACKSTOP_INTERCEPTION = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}


def backstop_answer(network: NetworkLog, event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The DevTools command that answers one ``Fetch.requestPaused`` event of a guarded page's backstop.

    Playwright routes a request it can tie to a page it knows; one it cannot it lets go on its own,
    never asking a route handler: what a document sends while it is being left (no ``networkId``: the
    browser's network inspector does not know it), or what a popup sends before Playwright knows the
    popup (its opener's script writing ``w.fetch(...)`` into a window it just opened: the request
    leaves through the opener's loader, and Playwright holds it unrouted until its interception is
    lifted). The backstop is a second interception of the same page, beside Playwright's (the
    browser pauses a request at each in turn), and it judges every request it is shown, whatever path
    it took and whatever Playwright will do with it (:meth:`NetworkLog.judge_paused`): so no request
    leaves unjudged because of who sent it or when. A refused navigation is answered ``204 No
    Content`` (the page stays, as :func:`refusal` says), any other refused request fails as blocked.
    A guard that fails refuses (fails closed)."""
    request_id = str(event.get("requestId") or "")
    resource_type = str(event.get("resourceType") or "")
    try:
        allowed = network.judge_paused(event.get("request") or {}, resource_type, request_id,
                                       routed=bool(event.get("networkId")))
    except Exception:
        log.exception("replay: the request guard failed; the request is aborted")
        allowed = False
    if allowed:
        return "Fetch.continueRequest", {"requestId": request_id}
    if resource_type.lower() == "document":
        return "Fetch.fulfillRequest", {"requestId": request_id, "responseCode": 204, "body": ""}
    return "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}


def refusal(request: Any) -> tuple[str, dict[str, Any]]:
    """How the route handler refuses ``request``: the ``Route`` method and its keywords. A refused
    navigation is answered ``204 No Content``, which a browser takes as "stay where you are": the
    document the replay acts on is not replaced by an error page, so it is not torn down and sends
    nothing on its way out (``pagehide`` and ``unload`` listeners never run; its out-of-process
    frames are not torn down either, whose requests would leave with their DevTools targets). Any
    other request is aborted as blocked by the client. Neither reaches the server."""
    try:
        navigation = bool(request.is_navigation_request())
    except Exception:  # noqa: BLE001 - a request that cannot say: the plain refusal
        navigation = False
    if navigation:
        return "fulfill", {"status": 204, "body": ""}
    return "abort", {"error_code": "blockedbyclient"}


def redirect_admitted(network: NetworkLog, request: Any, response: Any) -> bool:
    """Whether the browser may follow ``response`` (a redirect is judged as the request it leads to)."""
    try:
        return network.admit_redirect(request, int(response.status), response.headers.get("location"))
    except Exception:
        log.exception("replay: the request guard failed on a redirect; the request is aborted")
        return False


def websocket_admitted(guard: WebSocketGuard, url: str) -> bool:
    network = guard.network
    if network is None:
        return True  # no replay runs in this context now
    try:
        return network.admit_websocket(url)
    except Exception:
        log.exception("replay: the request guard failed on a WebSocket; it is not opened")
        return False


class WebSocketGuard:
    """The one WebSocket route of a browser context: judged by the running replay's guard, passed
    through to the server when no replay runs (Playwright cannot remove a WebSocket route)."""

    network: NetworkLog | None = None


#: Where a context keeps its :class:`WebSocketGuard`.
WEBSOCKET_GUARD = "_actioncache_websocket_guard"


def service_workers_blocked(context: Any) -> bool:
    """Whether the context was opened with ``service_workers="block"``: a service worker's requests
    bypass Playwright's routing, so a context that allows them cannot be guarded."""
    options = getattr(getattr(context, "_impl_obj", context), "_options", None)
    return isinstance(options, dict) and options.get("serviceWorkers") == "block"


#: What a replay refuses a context for (see :func:`service_workers_blocked`).
UNGUARDED_CONTEXT = ("the browser context allows service workers, whose requests would not pass the request guard; "
                     "open it with browser.new_context(service_workers='block') to replay in it")


#: Workers whose requests Playwright's routing does not see: a replay lets none start, and refuses a
#: context where one already runs.
UNROUTED_WORKERS = ("shared_worker", "service_worker")
#: ``Target.setAutoAttach`` for the browser's CDP session: every new shared or service worker waits
#: for the debugger before it runs a line, so one of the replayed context is closed before it can send.
AUTO_ATTACH_WORKERS = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True,
                       "filter": [{"type": kind, "exclude": False} for kind in UNROUTED_WORKERS] + [{"exclude": True}]}
AUTO_ATTACH_OFF = {"autoAttach": False, "waitForDebuggerOnStart": False}
NO_CDP = ("the request guard needs Chromium's DevTools protocol on the browser (to stop shared workers, whose "
          "requests routing does not see); replay in a context of a Chromium launched by Playwright")


def running_workers(targets: Any, context_id: str) -> list[str]:
    """The URLs of the shared and service workers of the context ``context_id`` among ``Target.getTargets``."""
    return [str(t.get("url")) for t in (targets or {}).get("targetInfos", ())
            if t.get("type") in UNROUTED_WORKERS and t.get("browserContextId") == context_id]


def unguarded_workers(urls: list[str]) -> str:
    return (f"{len(urls)} shared or service worker(s) of this page's context already run ({urls[0]}); their "
            f"requests would not pass the request guard: replay in a fresh context")


#: Run in every frame before each replayed action: what a document sends while it is being left (a
#: ``pagehide`` or ``unload`` listener's beacon or keepalive fetch) would leave after routing stopped
#: covering that document. So in a document a replay acts on, a keepalive ``fetch`` is sent as an
#: ordinary one and ``navigator.sendBeacon`` as an ordinary ``fetch`` POST: while the document lives
#: they pass the guard like any request, and a document being left takes them down with it. A page
#: that kept its own reference to them still sends them; the backstop (:func:`backstop_answer`)
#: judges those, and a refused one stops the replay with ``unexpected_request``.
NO_UNLOAD_JS = """
() => {
  const mark = Symbol.for("actioncache.no-unload");
  if (window[mark]) return;
  window[mark] = true;
  const fetch = window.fetch;
  const plain = function (input, init) {
    if (input instanceof Request && input.keepalive) input = new Request(input, {keepalive: false});
    return fetch.call(window, input, init && init.keepalive ? Object.assign({}, init, {keepalive: false}) : init);
  };
  window.fetch = plain;
  try {
    Object.defineProperty(Navigator.prototype, "sendBeacon", {configurable: true, value: function (url, data) {
      plain(url, {method: "POST", body: data === undefined ? null : data, credentials: "include"}).catch(() => {});
      return true;
    }});
  } catch (e) { /* frozen */ }
}
"""
