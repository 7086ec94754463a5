"""What recording and replaying do, written once for both Playwright APIs.

Each operation is a generator that *yields requests* (take a snapshot, find an element, act on
it, let the page settle, look at where it led, guard its requests, sleep) and gets the answers sent
back; it never calls Playwright itself. :mod:`.sync_api` answers the requests with Playwright's
sync API, :mod:`.async_api` with its async API, so both faces follow exactly the same rules. An
error raised while answering a request is thrown back into the generator at the ``yield``.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Generator, Iterable, Mapping, TypeVar
from urllib.parse import urljoin

from ..effects import SAFE_METHODS, StepEffects, id_changes, landing_url, link_target, page_identity, request_ids
from ..element import Element
from ..fingerprints import DESTINATION_ATTRIBUTES, element_fingerprint
from ..guard import RequestGuard
from ..intents import Resolver
from ..models import Action, ActionType, Page
from ..outcomes import ObservedOutcome, check_before, check_landing, check_outcome
from ..plan_cache import PlanCache
from ..run import ReplayRun
from ..validation import FallbackReason, PersonalizeHook, ReplayFallback
from .actuate import UNGUARDED_CONTEXT
from .network import NetworkLog

# --- requests a driver answers ------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """Answer: the :class:`Page` of the current DOM (elements ``e1..eN`` of the page's registry)."""


@dataclass(frozen=True)
class Locate:
    """Answer: the index in the last snapshot of ``target`` (or of its nearest collected ancestor), -1 if none."""

    target: Any


@dataclass(frozen=True)
class Perform:
    """Do ``kind`` (click, fill, select) on the caller's own ``target``, with ``value``."""

    kind: str
    target: Any
    value: Any = None


@dataclass(frozen=True)
class Execute:
    """Do a replayed ``action`` on element ``index`` of the last snapshot (within ``timeout_s``)."""

    action: Action
    index: int | None
    timeout_s: float | None = None


@dataclass(frozen=True)
class Prepare:
    """Bring element ``index`` of the last snapshot to where ``action`` acts (focus it to type or choose,
    move the mouse onto it to click), then answer ``(Page, index)``: a fresh snapshot and the element's
    index in it (-1 when it is no longer collected). What the page does on focus or hover is thereby seen
    before the action, not after."""

    action: Action
    index: int | None
    timeout_s: float | None = None


@dataclass(frozen=True)
class Settle:
    """Wait until a navigation the last action started has loaded."""


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Outcome:
    """Answer: where the page is now, ``{"url", "captcha", "prompt", "dialogs", "alert", "controlled"}``
    (see :data:`OUTCOME_JS`)."""


@dataclass(frozen=True)
class Facts:
    """Answer: what the browser context allows, ``{"service_workers_blocked": bool}``."""


@dataclass(frozen=True)
class Guard:
    """Route every request of the page through ``network.admit`` (abort what it refuses); ``on=False`` stops."""

    network: NetworkLog
    on: bool = True


Step = Generator[Any, Any, Any]
T = TypeVar("T")
#: A step that returns a ``T``.
Returning = Generator[Any, Any, T]

#: How often a replay looks again for an element that is not on the page yet.
POLL_S = 0.1
#: How long a replay looks for a missing element at most, and how long a page must have been still
#: (no DOM change, no request in flight) for the replay to stop looking before that.
WAIT_S = 2.0
QUIET_S = 0.5
#: After an action: no request in flight and none started for SETTLE_QUIET_S (a click, which may start
#: a navigation or a request a moment later) or TYPING_QUIET_S (typing or choosing, which rarely
#: does), or SETTLE_MAX_S passed.
SETTLE_QUIET_S = 0.15
TYPING_QUIET_S = 0.05
SETTLE_MAX_S = 5.0

#: Where the page is after a step, whether it shows a captcha, and whether a service worker
#: controls it (its requests would not pass the guard).
OUTCOME_JS = r"""
() => {
  const marks = 'iframe[src*="recaptcha"], iframe[src*="hcaptcha"], iframe[src*="challenges.cloudflare.com"], ' +
    'iframe[src*="arkoselabs"], iframe[src*="funcaptcha"], iframe[title*="captcha" i], iframe[title*="challenge" i], ' +
    '.g-recaptcha, .h-captcha, .cf-turnstile, [id*="captcha" i], [name*="captcha" i], [class*="captcha" i], ' +
    '[id*="arkose" i], [class*="arkose" i], [id*="challenge-form" i], [id*="px-captcha" i]';
  const words = /captcha|are you a robot|not a robot|verify (?:that )?you are (?:a )?human|confirm you are (?:a )?human|press (?:&|and) hold|type the (?:characters|text) you see|unusual traffic|security check|bot protection/i;
  const said = (doc) => [doc.title, ...Array.from(doc.querySelectorAll('h1, h2, h3, legend, label, [role=heading], img[alt]'),
    (e) => e.getAttribute('alt') || e.textContent || '')].join(' \n ');
  const shows = (doc) => !!doc.querySelector(marks) || words.test(said(doc));
  const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  const count = (doc, selector) => Array.from(doc.querySelectorAll(selector)).filter(visible).length;
  const docs = [document];
  for (let i = 0; i < window.frames.length; i++) {
    try { if (window.frames[i].document) docs.push(window.frames[i].document); } catch (e) { /* another origin */ }
  }
  const sum = (f) => docs.reduce((n, d) => n + f(d), 0);
  const captcha = docs.some(shows);
  // A box that asks for a password or a one-time code, a modal dialog, an alert with text.
  const prompt = sum((d) => count(d, 'input[type=password], input[autocomplete~="one-time-code"]')) > 0;
  const dialogs = sum((d) => count(d, 'dialog[open], [role=alertdialog], [aria-modal=true]'));
  const alert = docs.some((d) => Array.from(d.querySelectorAll('[role=alert], [aria-live=assertive]'))
    .some((e) => visible(e) && (e.textContent || '').trim()));
  const controlled = !!(navigator.serviceWorker && navigator.serviceWorker.controller);
  const h1 = document.querySelector('h1');
  return {url: location.href, captcha, prompt, dialogs, alert, controlled, title: document.title,
          heading: h1 ? (h1.innerText || h1.textContent || '') : ''};
}
"""


def settle(network: NetworkLog, kind: str = ActionType.CLICK, slack: float = 1.0) -> Step:
    """Let the last action finish: the navigation it started loads, its requests are answered.

    ``slack`` stretches the quiet time (the recorder takes twice as long: what it sees is kept).
    """
    yield Settle()
    quiet = (SETTLE_QUIET_S if kind.lower() == ActionType.CLICK else TYPING_QUIET_S) * slack
    deadline = time.monotonic() + SETTLE_MAX_S
    while time.monotonic() < deadline and not network.quiet_for(quiet):
        yield Sleep(0.025)


# --- replaying ----------------------------------------------------------------------------------

@dataclass
class ReplayOutcome:
    """What a browser replay did.

    ``executed``: the actions run in the page, in order. ``served``: how many plan actions that was
    (give it as ``executed=`` to resume, or to your planner). ``finished``: the plan ran to its end.
    ``reason``/``message``: why it stopped early (a :class:`~actioncache.replay.FallbackReason`).
    ``blocked``: the requests the guard aborted (method and URL pattern, never a value).
    """

    executed: list[Action] = field(default_factory=list)
    served: int = 0
    finished: bool = False
    reason: str | None = None
    message: str | None = None
    plan_id: str | None = None
    blocked: list[str] = field(default_factory=list)

    @property
    def hit(self) -> bool:
        return self.served > 0

    def to_dict(self) -> dict[str, Any]:
        # Executed actions are left out on purpose: they may hold secrets typed for this run.
        return {"hit": self.hit, "served": self.served, "finished": self.finished, "reason": self.reason,
                "message": self.message, "plan_id": self.plan_id, "blocked": list(self.blocked)}


#: Stops after which the step that ran did not do what it should: not counted as served, trust falls.
_UNDONE = frozenset({FallbackReason.EXECUTION_ERROR, FallbackReason.UNEXPECTED_REQUEST})
#: Stops that say the plan no longer does what it did: the plan loses trust.
_PLAN_FAILED = _UNDONE | {FallbackReason.OUTCOME_CHANGED, FallbackReason.CAPTCHA_REQUIRED,
                          FallbackReason.LANDING_CHANGED}


def replay_steps(plans: PlanCache, goal: str, url: str, *, executed: Any = 0,
                 personalize: PersonalizeHook | None = None, resolve: Resolver | None = None,
                 context: Mapping[str, Any] | None = None, secrets: Mapping[str, Any] | None = None,
                 wait_s: float = WAIT_S, quiet_s: float = QUIET_S, allow_requests: Iterable[str] = (),
                 max_wait_action_s: float = 30.0) -> Returning[ReplayOutcome]:
    """Replay the plan for ``(url, goal)``: before each action, snapshot the DOM and validate it there;
    while it runs, guard every request; after each action, check where it led.

    An element that is not on the page yet is looked for again every 0.1 s, for ``wait_s`` seconds at
    most, and no longer once the page has been still for ``quiet_s`` (no DOM change, no request in
    flight): then the replay stops with ``element_missing``. A state-changing request the recorded
    step did not send is aborted before it leaves the browser and stops the replay with
    ``unexpected_request``; a step that led elsewhere stops it with ``outcome_changed`` or
    ``captcha_required``; an action the browser cannot do stops it with ``execution_error``. These
    four lower the plan's trust.
    """
    for name, value in (("wait_s", wait_s), ("quiet_s", quiet_s), ("max_wait_action_s", max_wait_action_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number of seconds >= 0, not {value!r} (e.g. {name}=2.0)")
    guard = RequestGuard.with_allowed(allow_requests)
    run = plans.begin((url, goal), executed, personalize=personalize, context=context, secrets=secrets,
                      resolve=resolve)
    run.requires_option = True
    outcome = ReplayOutcome(plan_id=run.plan_id)
    network = NetworkLog(guard=guard)
    with run:
        if run.active:
            yield from _replay(run, network, outcome, wait_s, quiet_s, max_wait_action_s)
    if run.reason in _PLAN_FAILED:
        plans.report(run.signature, success=False, plan_id=run.plan_id)
    outcome.served = run.served - (1 if run.reason in _UNDONE else 0)
    outcome.finished, outcome.reason, outcome.message = run.finished, run.reason, run.message
    outcome.blocked = [run.clean(s.sent.describe() if s.sent else f"{s.method} request") or ""
                       for s in network.blocked()]
    return outcome


def _replay(run: ReplayRun, network: NetworkLog, outcome: ReplayOutcome, wait_s: float, quiet_s: float,
            max_wait_action_s: float) -> Step:
    page = yield Snapshot()
    network.page_url = page.url
    facts = yield Facts()
    if not facts.get("service_workers_blocked"):
        run.stop(FallbackReason.UNGUARDED_PAGE, UNGUARDED_CONTEXT)
        return
    state = yield Outcome()
    if state.get("controlled"):
        run.stop(FallbackReason.UNGUARDED_PAGE, _UNGUARDED)
        return
    network.typed = run.typed  # what this run typed, by plan index: the guard compares fields with it
    refused = yield Guard(network)
    if refused:
        run.stop(FallbackReason.UNGUARDED_PAGE, str(refused))
        yield Guard(network, on=False)
        return
    previous: StepEffects | None = None
    steps = 0
    first = True  # the first element step the run serves checks the page it starts on
    try:
        while run.active:
            page = yield from _wait_until_ready(run, network, wait_s, quiet_s)
            network.page_url = page.url
            if first and run.ready(page):  # (an element that is not there says so by its own reason)
                start = yield from _check_start(run, page, network)
                if start is not None:
                    run.stop(start.reason, start.message)
                    break
            actions = run.next(page)
            if actions is None:
                break
            index = run.offset + run.served - 1
            decided = run.decided(index)
            for action in actions:
                # A late request of the step before was refused: do not go on to this one.
                stop = _unexpected(network, run.served - 1)
                if stop is None:
                    steps += 1
                    recorded = Element.from_dict(run.plan[index].element or {"id": "", "tag": ""})
                    stop = yield from _step(action, page, network, previous, steps, run.served - 1,
                                            max_wait_action_s, run.ignore, wait_s, plan_index=index,
                                            decided_from=recorded if decided else None)
                    if action.action_type.lower() in ActionType.TARGETED:
                        first = False
                    if stop is None or stop.reason != FallbackReason.EXECUTION_ERROR:
                        outcome.executed.append(action)
                if stop is not None:
                    run.stop(stop.reason, stop.message)
                    break
                if action.effects is not None:
                    previous = StepEffects.from_dict(action.effects)
    finally:
        yield Guard(network, on=False)
    # After the guard is off, so judgements still in progress when the last step settled have ended
    # (the drivers wait for them): a request refused at any time while the guard was on stops the
    # run, and the outcome never says finished beside a refusal.
    late = _unexpected(network, run.served - 1)
    if late is not None and run.reason is None:
        run.stop(late.reason, late.message)  # a request fired after the last step settled


_UNGUARDED = ("a service worker controls this page, so its requests would not pass the request guard; open "
              "the browser context with service_workers='block' to replay here")


def _check_start(run: ReplayRun, page: Page, network: NetworkLog) -> Returning[ReplayFallback | None]:
    """Before the run's first element action: the page it starts on must be the one the recorded step
    acted on, by its exact URL and what it says it is (a plan recorded on ``/product/123`` is filed under
    ``/product/{id}`` and must not act on ``/product/456``)."""
    action = run.remaining[run.served]
    effects = StepEffects.from_dict(action.effects)
    if action.action_type.lower() not in ActionType.TARGETED or effects is None or not effects.before:
        return None
    state = yield Outcome()
    earlier = {k: v for k, v in network.typed.items() if k < run.offset + run.served}
    return check_before(effects.before, landing_url(str(state.get("url") or page.url), earlier),
                        page_identity(state.get("title"), state.get("heading"), earlier), step=run.served)


def _unexpected(network: NetworkLog, position: int) -> ReplayFallback | None:
    blocked = network.blocked()
    if not blocked:
        return None
    more = f" (and {len(blocked) - 1} more)" if len(blocked) > 1 else ""
    first = blocked[0]
    if first.blocked:
        return ReplayFallback(FallbackReason.UNEXPECTED_REQUEST,
                              f"action {position}: {first.reason}{more}; aborted before it left the browser")
    what = first.sent.describe() if first.sent is not None else f"a {first.method} request"
    return ReplayFallback(FallbackReason.UNEXPECTED_REQUEST,
                          f"action {position}: {what} left the browser by a path the request guard does not "
                          f"see{more}; the replay stops here")


def _step(action: Action, page: Page, network: NetworkLog, previous: StepEffects | None, step: int,
          position: int, max_wait_action_s: float, ignore: tuple[str, ...] = (), wait_s: float = WAIT_S, *,
          plan_index: int = -1, decided_from: Element | None = None) -> Step:
    """Do one served action under the guard; the fallback that stops the replay after it, or ``None``.

    ``plan_index`` is the action's plan index, ``decided_from`` the recorded element of a click the
    resolver re-decided (it must land where its own link points)."""
    kind = action.action_type.lower()
    if kind not in ActionType.TARGETED:
        yield from _execute(action, max_wait_action_s)
        return None
    effects = StepEffects.from_dict(action.effects)
    href = ((action.element or {}).get("attributes") or {}).get("href")
    target = link_target(href, page.url)
    network.begin_step(step)
    if network.guard is not None:
        network.guard.expect(effects, previous, target)
    try:
        index = _index(action)
        fresh, index = yield Prepare(action, index, wait_s)
        changed = _changed_at_action(action, fresh, index, ignore, position)
        if changed is None and kind == ActionType.SELECT_OPTION:
            changed = _option_offered(action, fresh.elements[index], position)
        if changed is not None:
            return changed
        toggle = (action.data or {}).get("toggle")
        if kind == ActionType.CLICK and isinstance(toggle, dict):
            now = fresh.elements[index].state
            if now == toggle.get("after"):
                return None  # already as the recorded click left it: clicking would undo what the task wants
            if now != toggle.get("before"):
                return ReplayFallback(FallbackReason.STATE_CHANGED,
                                      f"action {position} (click): the toggle is {now or 'in no state'}, the recording "
                                      f"found it {toggle.get('before')} and left it {toggle.get('after')}")
        yield Execute(action, index, wait_s)
        yield from settle(network, kind)
        deadline = time.monotonic() + SETTLE_MAX_S
        while effects is not None and _pending(effects, network, step) and time.monotonic() < deadline:
            yield from settle(network, kind)  # a slow page has not yet done what the recorded step did
            yield Sleep(0.05)
    except Exception as exc:  # noqa: BLE001 - any browser error: stop and say why
        return ReplayFallback(FallbackReason.EXECUTION_ERROR,
                              f"action {position} ({action.action_type}) failed in the browser: "
                              f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    stop = _unexpected(network, position)
    if stop is not None or effects is None:
        return stop
    # A page that says nothing yet (no title, no heading: its navigation still committing on a loaded
    # machine, or a script that writes them after load) is looked at again, as a missing element is,
    # for at most wait_s, when the recorded page said something. A page that says something else
    # stops the replay at once.
    deadline = time.monotonic() + wait_s
    while True:
        state = yield Outcome()
        if state.get("controlled"):  # the step led to a page a service worker controls: nothing more is guarded
            return ReplayFallback(FallbackReason.UNGUARDED_PAGE, f"action {position}: {_UNGUARDED}")
        observed = ObservedOutcome(url=str(state.get("url") or page.url), captcha=bool(state.get("captcha")),
                                   status=network.document_status(step), answered=network.answered(step),
                                   prompt=bool(state.get("prompt")), dialogs=_count(state.get("dialogs")),
                                   alert=bool(state.get("alert")), js_dialogs=network.dialogs(step),
                                   missing=_missing(effects, network, step))
        stop = check_outcome(effects, observed, step=position, target=target)
        if stop is not None:
            return stop
        typed = {k: v for k, v in network.typed.items() if k <= plan_index}
        decided = None
        if decided_from is not None:
            exact = None
            if href and not str(href).startswith(("javascript:", "#", "mailto:", "tel:")):
                exact = landing_url(urljoin(page.url or "", str(href)), typed)
            decided = (exact, str((action.element or {}).get("name") or ""), decided_from.name)
        landed = check_landing(effects, landing_url(observed.url, typed),
                               page_identity(state.get("title"), state.get("heading"), typed), step=position,
                               decided=decided)
        blank = not str(state.get("title") or "").strip() and not str(state.get("heading") or "").strip()
        if landed is None or not blank or not effects.identity or time.monotonic() >= deadline:
            break
        yield Sleep(POLL_S)
    if landed is None and decided_from is not None and network.guard is not None and effects.landing:
        # The resolver chose another item for this run's input: the ids its landing names stand for
        # the recorded landing's in the requests of the steps after it (and only those ids).
        network.guard.remap.update(id_changes(request_ids(effects.landing),
                                              request_ids(landing_url(observed.url, typed))))
    return landed


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _missing(effects: StepEffects, network: NetworkLog, step: int) -> list[str]:
    """The recorded step's state-changing requests that this step (or the one before) did not send."""
    sent = [s.matched for s in [*network.in_step(step - 1), *network.in_step(step)] if s.matched is not None]
    return [r.describe() for r in effects.sent
            if r.method not in SAFE_METHODS and not r.navigation and not any(r == m for m in sent)]


def _pending(effects: StepEffects, network: NetworkLog, step: int) -> bool:
    """Whether the step has not yet started what the recorded step did: load a document, send a request."""
    if effects.status is not None and network.document_status(step) is None:
        return True
    sends = any(r.method not in SAFE_METHODS for r in effects.sent)
    return sends and not any(s.sent is not None and s.sent.method not in SAFE_METHODS for s in network.in_step(step))


def _wait_until_ready(run: ReplayRun, network: NetworkLog, wait_s: float, quiet_s: float) -> Step:
    started = time.monotonic()
    while True:
        page: Page = yield Snapshot()
        if run.ready(page):
            return page
        waited = time.monotonic() - started
        if waited >= wait_s:
            return page
        still = page.idle_ms is not None and page.idle_ms >= quiet_s * 1000
        if waited >= quiet_s and still and network.quiet_for(quiet_s):
            return page  # nothing is changing: the element is not coming
        yield Sleep(POLL_S)


def _index(action: Action) -> int | None:
    return int(action.element_id[1:]) - 1 if action.element_id and action.element_id[1:].isdigit() else None


def adjacent_digest(text: str) -> str:
    """What a plan keeps of a field's adjacent text (:attr:`Element.adjacent`): a short hash, never
    the text (it may be anything the page shows next to the field)."""
    return hashlib.sha256(" ".join(str(text or "").split()).encode()).hexdigest()[:16]


def _option_offered(action: Action, element: Element, position: int) -> ReplayFallback | None:
    """``option_required`` (the plan keeps its trust: the choice was the caller's) when the option to
    choose is not in the list, rather than a browser timeout."""
    option = action.option if isinstance(action.option, dict) else {"value": action.option}
    options = element.options
    if options is None or not option:
        return None
    if option.get("value") is not None:
        key, wanted = "value", str(option["value"])
    elif option.get("label") is not None:
        key, wanted = "text", str(option["label"])
    else:
        return None
    if any(str(o.get(key) if o.get(key) is not None else "") == wanted or
           (key == "text" and " ".join(str(o.get("text") or "").split()) == " ".join(wanted.split()))
           for o in options):
        return None
    offered = [str(o.get(key) or "") for o in options][:10]
    return ReplayFallback(FallbackReason.OPTION_REQUIRED,
                          f"action {position} (select_option): the list has no option with "
                          f"{'value' if key == 'value' else 'label'} {wanted!r} (it offers {offered}); "
                          f"give one of those in the personalize hook")


def _changed_at_action(action: Action, fresh: Page, index: int, ignore: tuple[str, ...],
                       position: int) -> ReplayFallback | None:
    """The fallback when the element, read again at the moment of acting (after focus or hover), is not
    the element the action was validated on: its role, accessible name or attributes changed meanwhile;
    or, for a field, the text next to it outside its label (a unit, a currency) is not the recorded one."""
    kind = action.action_type.lower()
    if not 0 <= index < len(fresh.elements):
        return ReplayFallback(FallbackReason.ELEMENT_MISSING,
                              f"action {position} ({kind}): the element left the page as the replay was about to act")
    now = fresh.elements[index]
    recorded_adjacent = (action.data or {}).get("adjacent")
    if isinstance(recorded_adjacent, str) and adjacent_digest(now.adjacent) != recorded_adjacent:
        shown = now.adjacent.replace(" | ", " ").strip() or "nothing"
        return ReplayFallback(FallbackReason.NAME_CHANGED,
                              f"action {position} ({kind}): the text next to the field (outside its label: a unit, "
                              f"a currency, a suffix) is now {shown!r}, not what the recording saw; nothing was typed")
    expected = element_fingerprint(action.element or {"id": "", "tag": ""}, ignore)
    if element_fingerprint(now, ignore) == expected:
        return None
    before = Element.from_dict(action.element or {"id": "", "tag": ""})
    if (before.role, before.name) != (now.role, now.name):
        return ReplayFallback(FallbackReason.NAME_CHANGED,
                              f"action {position} ({kind}): at the moment of acting the element's role and accessible "
                              f"name are {now.role!r} {now.name!r}, not {before.role!r} {before.name!r} as when it was "
                              f"found; nothing was done to it")
    return ReplayFallback(FallbackReason.DESTINATION_CHANGED if any(
        before.attributes.get(a) != now.attributes.get(a) for a in DESTINATION_ATTRIBUTES) else FallbackReason.ELEMENT_MISSING,
                          f"action {position} ({kind}): at the moment of acting the element is not the one found "
                          f"(it changed on focus or hover); nothing was done to it")


def _execute(action: Action, max_wait_action_s: float) -> Step:
    kind = action.action_type.lower()
    if kind == ActionType.WAIT:
        seconds = (action.data or {}).get("seconds", 0)
        valid = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
        yield Sleep(min(max(float(seconds), 0.0), max_wait_action_s) if valid else 0.0)
        return
    if kind == ActionType.COMPLETE:
        return
    index = int(action.element_id[1:]) - 1 if action.element_id and action.element_id[1:].isdigit() else None
    yield Execute(action, index)
