"""``PlanCache``: record completed action plans and replay them, validated, on the current page.

Plans are kept by :class:`~actioncache.replay.plan_store.PlanStore` (the storage layout is there).

Trust: each plan starts at 1.0 and moves by an exponential moving average,
``trust = α·success + (1-α)·trust`` with α = 0.3, on ``report()``, whenever a replay fails
validation before serving a single action, and whenever the plan cannot be served at all (an
action type that is not replayed, an intention where none is allowed): then the next older plan
is tried at once. Below the floor 0.2 the plan is deleted, and the next older one in the short
history (3 by default) serves instead. These are the semantic cache's rules, shared with it
(``records.ema``, ``records.DEFAULT_EMA_ALPHA``, ``records.DEFAULT_TRUST_FLOOR``).

Secrets typed during a run never reach the store (:mod:`.secrets`); ``begin`` hands out a
:class:`~actioncache.replay.ReplayRun` that validates one action at a time, for browser drivers.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .._deprecated import deprecated
from .._time import DEFAULT_TTL_SECONDS, iso_utc, resolve_ttl
from ..records import DEFAULT_EMA_ALPHA, DEFAULT_TRUST_FLOOR, Tally, count
from ..stores.base import CacheStore, open_store
from .fingerprints import element_fingerprint
from .intents import Resolver, rule_resolver
from .metrics import shape_metrics
from .models import Action, ActionType, Page, PlanSignature, as_page, as_signature
from .plan_store import INITIAL_TRUST, PlanStore
from .run import ReplayRun
from .secrets import check_secrets, distinct_secret_names, mark_known_secrets, redact, scrub, stored_form, typed_secrets
from .urls import DEFAULT_URL_RULE, UrlRule
from .validation import FallbackReason, PersonalizeHook, ReplayFallback, check_supported, resume

__all__ = ["INITIAL_TRUST", "REWARD_ALPHA", "TRUST_FLOOR", "PlanCache", "ReplayResult"]

log = logging.getLogger("actioncache.replay")

REWARD_ALPHA = DEFAULT_EMA_ALPHA
TRUST_FLOOR = DEFAULT_TRUST_FLOOR
DEFAULT_HISTORY = 3
COUNTER_PREFIX = "replay:"
_RECORD_VERSION = 1
#: Reasons that are the plan's own fault, whatever the page: such a plan loses trust and the
#: next older plan is tried in its place.
_PLAN_FAULTS = frozenset({FallbackReason.PLAN_NOT_COMPLETED, FallbackReason.UNSUPPORTED_ACTION_TYPE,
                          FallbackReason.INTENTION_NOT_ALLOWED})


def _executed_argument(executed: Any) -> int | list[Action]:
    if isinstance(executed, bool) or not isinstance(executed, (int, list, tuple)):
        raise TypeError("executed must be a count or a list of the actions already executed")
    if isinstance(executed, int):
        if executed < 0:
            raise ValueError(f"executed must be >= 0, not {executed}")
        return executed
    return [Action.from_dict(a) for a in executed]


@dataclass
class ReplayResult:
    """What :meth:`PlanCache.lookup` found: the actions to run, or why there are none.

    ``reason`` is set on a fallback (``actions == []``) and also when validation stopped partway
    (``stopped_at`` is then the index, within the remaining plan, of the first action not served).
    """

    actions: list[Action] = field(default_factory=list)
    reason: str | None = None
    message: str | None = None
    plan_id: str | None = None
    stopped_at: int | None = None
    remaining: int = 0

    @property
    def hit(self) -> bool:
        return bool(self.actions)

    def to_dict(self, *, secrets: bool = False) -> dict[str, Any]:
        """The result as JSON; secret texts only with ``secrets=True`` (for the caller that types them)."""
        return {"hit": self.hit, "actions": [a.to_dict(secrets=secrets) for a in self.actions], "reason": self.reason,
                "message": self.message, "plan_id": self.plan_id, "stopped_at": self.stopped_at,
                "remaining": self.remaining}


_COMMON_COUNTS = (("hits", "hits"), ("fallbacks", "misses"), ("recorded", "stores"), ("store_errors", "errors"))


class PlanCache:
    """Completed action plans by task signature, replayed only when the page still fits them.

    ``store``: a :class:`CacheStore` or a store URL. ``namespace``: plans of one namespace never
    answer another's (one per tenant, user or agent). ``history``: completed plans kept per
    signature. ``ignore``: fingerprint parts to leave out (see
    :func:`~actioncache.replay.element_fingerprint`), stored with each plan. ``personalize``: the
    default hook. ``shared_metrics``: also add counters to the store, so ``metrics(shared=True)``
    totals every process. ``url_rule``: how URLs are normalized into signatures (a
    :class:`~actioncache.replay.UrlRule`; by default scheme, ``www.`` and tracking parameters do not
    count). ``sensitive``: names (globs) of fields whose typed text is a secret, matched against a
    field's ``name``, ``id`` and ``autocomplete``; password fields always are (see
    :mod:`~actioncache.replay.secrets`). ``resolve``: the default resolver of clicks chosen for the
    input (:mod:`~actioncache.replay.intents`; :func:`~actioncache.replay.rule_resolver` if none).
    """

    def __init__(
        self,
        store: CacheStore | str | None = None,
        namespace: str = "default",
        *,
        history: int = DEFAULT_HISTORY,
        ignore: Iterable[str] = (),
        personalize: PersonalizeHook | None = None,
        ttl_seconds: float | None = None,
        ttl_days: float | None = None,
        alpha: float = REWARD_ALPHA,
        trust_floor: float = TRUST_FLOOR,
        shared_metrics: bool = False,
        url_rule: UrlRule = DEFAULT_URL_RULE,
        sensitive: Iterable[str] = (),
        resolve: Resolver | None = None,
    ) -> None:
        if not isinstance(namespace, str) or not namespace:
            raise ValueError("namespace must be a non-empty string (e.g. a tenant or user id)")
        if isinstance(history, bool) or not isinstance(history, int) or history < 1:
            raise ValueError(f"history must be a positive int (plans kept per signature), not {history!r}")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], not {alpha!r}")
        if not 0.0 <= trust_floor < INITIAL_TRUST:
            raise ValueError(f"trust_floor must be in [0, 1), not {trust_floor!r}")
        if personalize is not None and not callable(personalize):
            raise TypeError("personalize must be a callable hook(action, context) or None")
        if resolve is not None and not callable(resolve):
            raise TypeError("resolve must be a callable resolver(choice) -> Element | id | None, or None")
        if not isinstance(url_rule, UrlRule):
            raise TypeError("url_rule must be a UrlRule, e.g. UrlRule(ignore_www=False)")
        if isinstance(sensitive, str):
            raise TypeError("sensitive is a list of field names, e.g. ('otp', 'card_*'), not one string")
        self.store = open_store(store)
        self.namespace = namespace
        self.history = history
        self.ignore = tuple(sorted({str(name).lower() for name in ignore}))
        self.personalize = personalize
        self.resolve: Resolver = resolve or rule_resolver
        self.ttl_s = resolve_ttl(ttl_seconds=ttl_seconds, ttl_days=ttl_days, default=DEFAULT_TTL_SECONDS)
        self.alpha = float(alpha)
        self.trust_floor = float(trust_floor)
        self._tally = Tally(self.store, f"{COUNTER_PREFIX}{namespace}:", shared=bool(shared_metrics))
        self.url_rule = url_rule
        self.sensitive = tuple(str(name) for name in sensitive)
        self.plan_store = PlanStore(self.store, namespace, ttl_s=self.ttl_s, alpha=self.alpha, trust_floor=self.trust_floor)

    def __repr__(self) -> str:
        return f"PlanCache(store={self.store.url!r}, namespace={self.namespace!r})"

    # --- record -----------------------------------------------------------------------------------

    def record(self, signature: Any, actions: Iterable[Action | Mapping[str, Any]], completed: bool,
               *, page: Page | Mapping[str, Any] | str | None = None,
               secret_values: Iterable[str] = ()) -> str | None:
        """Keep the plan of a finished run; returns its plan id, or ``None`` when nothing was stored.

        Only completed runs are kept (an incomplete run is only counted, so ``retrieve`` can say
        ``plan_not_completed``). An action that targets an element needs its fingerprint: give it
        (:meth:`Action.for_element`) or pass the ``page`` the actions' ``element_id``s refer to.
        A failing store is logged and counted, never raised. The text typed into a secret field
        (a password field, one marked ``secret=`` or listed in ``sensitive``) is never stored: the
        plan keeps the secret's name instead (see :mod:`actioncache.replay.secrets`).
        """
        sig = as_signature(signature, self.url_rule)
        plan = [Action.from_dict(a) for a in actions]
        stored: list[dict[str, Any]] = []
        if completed:
            # Fingerprint first (from the whole element), then drop what must not be stored: the
            # secrets' texts, and any echo of them elsewhere in the plan.
            plan = self._fingerprinted(plan, page)
            if isinstance(secret_values, str):
                raise TypeError("secret_values is a collection of texts, not one string")
            known = {str(v) for v in secret_values if v}
            plan = distinct_secret_names(mark_known_secrets(plan, known, self.sensitive), self.sensitive)
            secrets = typed_secrets(plan, self.sensitive, minimum=1) | known
            stored = scrub([stored_form(redact(a, self.sensitive)) for a in plan], secrets)
        now = time.time()
        try:
            if not completed:
                self.plan_store.note_incomplete(sig, now)
                self._count({"rejected_incomplete": 1})
                log.info("replay: run of %r not completed; plan not recorded", sig.goal)
                return None
            plan_id = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
            body = {"version": _RECORD_VERSION, "plan_id": plan_id, "signature": sig.to_dict(), "completed": True,
                    "actions": stored, "ignore": list(self.ignore),
                    "trust": INITIAL_TRUST, "recorded_at": iso_utc(now), "replays": 0, "failures": 0}
            self.plan_store.put_plan(sig, body, now, self.history)
        except Exception as exc:  # noqa: BLE001 - a failing store never fails the agent
            log.warning("replay: could not record plan for %r: %s", sig.goal, exc)
            self._count({"store_errors": 1})
            return None
        self._count({"recorded": 1})
        return plan_id

    def _fingerprinted(self, plan: list[Action], page: Any) -> list[Action]:
        current = as_page(page) if page is not None else None
        for i, action in enumerate(plan):
            if action.element:
                # The element's data is at hand: derive the fingerprint under this cache's ignore.
                action.fingerprint = element_fingerprint(action.element, ignore=self.ignore)
                continue
            if action.fingerprint or action.action_type.lower() not in ActionType.TARGETED:
                continue
            element = current.element(action.element_id) if current and action.element_id else None
            if element is None:
                raise ValueError(
                    f"action {i} ({action.action_type}) targets an element but has no fingerprint"
                    + (f" and element {action.element_id!r} is not on the page given" if current else "")
                    + "; build it with Action.for_element(...) or pass page= with the elements its element_id refers to"
                )
            action.fingerprint = element_fingerprint(element, ignore=self.ignore)
            action.element = element.to_dict()
        return plan

    # --- retrieve ---------------------------------------------------------------------------------

    def retrieve(self, signature: Any, page: Page | Mapping[str, Any] | str, executed: Any = 0, *,
                 personalize: PersonalizeHook | None = None, context: Mapping[str, Any] | None = None,
                 secrets: Mapping[str, Any] | None = None, resolve: Resolver | None = None) -> list[Action]:
        """The actions to replay now, or ``[]`` to plan afresh (``lookup`` says why)."""
        return self.lookup(signature, page, executed, personalize=personalize, context=context,
                           secrets=secrets, resolve=resolve).actions

    def lookup(self, signature: Any, page: Page | Mapping[str, Any] | str, executed: Any = 0, *,
               personalize: PersonalizeHook | None = None, context: Mapping[str, Any] | None = None,
               secrets: Mapping[str, Any] | None = None, resolve: Resolver | None = None) -> ReplayResult:
        """:meth:`retrieve` with the reason, plan id and where validation stopped.

        The actions that fit ``page`` are validated one after the other (a :meth:`begin` run on one
        page). ``secrets`` gives the values of the plan's secret fields by name. Argument errors (a
        malformed signature, page or ``executed``) raise; everything that can go wrong after that,
        store failures included, is a fallback with its reason logged and counted.
        """
        current = as_page(page)
        run = self.begin(signature, executed, personalize=personalize, context=context, secrets=secrets,
                         resolve=resolve)
        actions: list[Action] = []
        with run:
            while run.active:
                step = run.next(current)
                if step is None:
                    break
                actions.extend(step)
        stopped_at = run.served if run.reason is not None and run.served else None
        return ReplayResult(actions=actions, reason=run.reason, message=run.message, plan_id=run.plan_id,
                            stopped_at=stopped_at, remaining=len(run.remaining))

    def begin(self, signature: Any, executed: Any = 0, *, personalize: PersonalizeHook | None = None,
              context: Mapping[str, Any] | None = None, secrets: Mapping[str, Any] | None = None,
              resolve: Resolver | None = None) -> ReplayRun:
        """Start replaying the plan for ``signature``: a :class:`ReplayRun` whose ``next(page)``
        validates, rebinds and personalizes one action at a time against the page as it is then.

        The plan is the newest one that can be served at all: a plan that cannot (an action type
        that is not replayed, an intention on a non-input action, not marked completed) loses
        trust and the next older plan is tried. Close the run (``with`` or ``close()``) to count it.
        """
        sig = as_signature(signature, self.url_rule)
        executed = _executed_argument(executed)
        secrets = check_secrets(secrets)
        hook = personalize if personalize is not None else self.personalize
        try:
            key, body, plan, remaining = self._choose(sig, executed)
        except ReplayFallback as fallback:
            return ReplayRun.stopped(sig, fallback, plan_id=getattr(fallback, "plan_id", None),
                                     remaining=getattr(fallback, "remaining", None), on_close=self._count_run)
        except Exception as exc:
            log.exception("replay: unexpected error; falling back to fresh planning")
            return ReplayRun.stopped(sig, ReplayFallback(FallbackReason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"),
                                     on_close=self._count_run)

        def nothing_served() -> None:
            deltas: Counter[str] = Counter()
            self.plan_store.adjust_trust(key, body, success=False, deltas=deltas)
            self._count(deltas)

        return ReplayRun(sig, body.get("plan_id"), remaining, ignore=body.get("ignore", ()), personalize=hook,
                         context=context, secrets=secrets, resolve=resolve or self.resolve, plan=plan,
                         on_nothing_served=nothing_served, on_close=self._count_run)

    def _count_run(self, run: ReplayRun) -> None:
        deltas: Counter[str] = Counter({"retrievals": 1})
        if run.served:
            deltas["hits"] += 1
            if run.reason is not None:
                deltas.update({"partial_hits": 1, f"stop:{run.reason}": 1})
                log.info("replay: %r replays %d of %d actions, then %s: %s", run.signature.goal, run.served,
                         len(run.remaining), run.reason, run.message)
        else:
            deltas.update({"fallbacks": 1, f"fallback:{run.reason}": 1})
            log.info("replay: no plan served for %r (%s): %s", run.signature.goal, run.reason, run.message)
        for kind, total in Counter(a.action_type.lower() for a in run.remaining).items():
            deltas[f"action:{kind}:replayed"] += run.validated[kind]
            deltas[f"action:{kind}:missed"] += total - run.validated[kind]
        self._count(deltas)

    def _choose(self, sig: PlanSignature, executed: Any) -> tuple[str, dict[str, Any], list[Action], list[Action]]:
        """The newest plan that can be served after ``executed``: its key, body, actions and remaining actions.

        Raises the newest plan's fallback when none can (with ``plan_id`` and ``remaining`` on it).
        """
        first: ReplayFallback | None = None
        deltas: Counter[str] = Counter()
        try:
            for key, body, broken in self.plan_store.plans(sig):
                remaining: list[Action] = []
                if broken is None:
                    try:
                        if body.get("completed") is not True:
                            raise ReplayFallback(FallbackReason.PLAN_NOT_COMPLETED,
                                                 "the stored plan is not marked completed")
                        plan = [Action.from_dict(a) for a in body.get("actions", [])]
                        plan = [a for a in plan if a.action_type.lower() not in ActionType.DROPPED]
                        remaining = resume(plan, executed)
                        check_supported(remaining)
                        return key, body, plan, remaining
                    except ReplayFallback as fallback:
                        broken = fallback
                        broken.plan_id, broken.remaining = body.get("plan_id"), remaining  # type: ignore[attr-defined]
                        if fallback.reason in _PLAN_FAULTS:
                            # This plan can never be served here: lower its trust, try the older one.
                            self.plan_store.adjust_trust(key, body, success=False, deltas=deltas)
                first = first or broken
                if broken.reason not in _PLAN_FAULTS and broken.reason != FallbackReason.CORRUPT_PLAN:
                    break  # the caller's executed actions do not fit: an older plan would not either
        finally:
            self._count(deltas)
        if first is not None:
            raise first
        self.plan_store.no_plan(sig)

    # --- trust ------------------------------------------------------------------------------------

    def report(self, signature: Any, success: bool, plan_id: str | None = None) -> dict[str, Any] | None:
        """Feedback on a replay: move the plan's trust by the EMA; below the floor it is dropped.

        Applies to ``plan_id`` or else the newest plan (the one ``retrieve`` serves). Returns
        ``{"plan_id", "trust", "dropped"}``, or ``None`` when there is no such plan or the store failed.
        """
        sig = as_signature(signature, self.url_rule)
        deltas: Counter[str] = Counter({"reports": 1})
        try:
            key, body = self.plan_store.plan(sig, plan_id) if plan_id is not None else self.plan_store.newest(sig)
        except ReplayFallback as fallback:
            if fallback.reason == FallbackReason.STORE_ERROR:
                deltas["store_errors"] += 1
            body = None
        except Exception as exc:  # noqa: BLE001
            log.warning("replay: could not report on %r: %s", sig.goal, exc)
            deltas["store_errors"] += 1
            body = None
        out = self.plan_store.adjust_trust(key, body, success=bool(success), deltas=deltas) if body else None
        self._count(deltas)
        return out

    # --- housekeeping -----------------------------------------------------------------------------

    def history_of(self, signature: Any) -> list[dict[str, Any]]:
        """The plans kept for ``signature``, newest first: id, trust, recorded_at, action count."""
        return self.plan_store.history(as_signature(signature, self.url_rule))

    def invalidate(self, signature: Any = None, *, reason: str | None = None) -> int:
        """Delete the plans (and incomplete-run counts) of one signature, or of the whole namespace.

        ``reason`` (e.g. ``"site redesign"``) is logged and counted in ``metrics()["invalidate_reasons"]``.
        """
        if reason is not None and not isinstance(reason, str):
            raise TypeError("reason must be a short text saying why the plans are invalidated")
        deleted = self.plan_store.delete(None if signature is None else as_signature(signature, self.url_rule))
        why = " ".join((reason or "unspecified").split()) or "unspecified"
        log.info("replay: invalidated %d entries of %s (%s)", deleted,
                 "namespace " + self.namespace if signature is None else "one task", why)
        self._count({"invalidations": 1, "invalidated": deleted, f"invalidate:{why}": 1})
        return deleted

    # --- metrics ----------------------------------------------------------------------------------

    @property
    def shared_metrics(self) -> bool:
        return self._tally.shared

    @shared_metrics.setter
    def shared_metrics(self, shared: bool) -> None:
        self._tally.shared = bool(shared)

    def _count(self, deltas: Mapping[str, float]) -> None:
        error = self._tally.add(deltas)  # metrics never break replay
        if error:
            log.warning("replay: could not add shared counters: %s", error)
        # The store's one view of counts (Cache.stats(), `actioncache stats`): a replayed plan is a
        # hit, a fallback a miss, a recorded plan a store.
        shared = {common: deltas[own] for own, common in _COMMON_COUNTS if deltas.get(own)}
        if shared:
            count(self.store, f"replay:{self.namespace}", **shared)

    def stats(self, shared: bool = False) -> dict[str, Any]:
        """Counts of this object (or, ``shared=True``, of every process on the store and namespace).

        ``{"retrievals", "hits", "partial_hits", "fallbacks", "hit_rate", "fallback_reasons": {reason: n},
        "stop_reasons": {reason: n}, "actions": {type: {"replayed", "missed", "hit_rate"}}, "recorded",
        "rejected_incomplete", "reports", "dropped_untrusted", "store_errors", "invalidations", "invalidated",
        "invalidate_reasons": {reason: n}}``
        """
        return shape_metrics(self._tally.totals() if shared else self._tally.local())

    def metrics(self, shared: bool = False) -> dict[str, Any]:
        """The older name of :meth:`stats` (every other face calls its counts ``stats()``); deprecated."""
        deprecated("PlanCache.metrics()", "PlanCache.stats()")
        return self.stats(shared)
