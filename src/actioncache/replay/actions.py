"""YAML actions ``plan.record``, ``plan.retrieve`` and ``plan.report`` for the agent runtime.

Plans live in the agent's store (``engine.store``). ``settings.replay`` may set ``namespace``
(default ``"default"``), ``history`` (plans kept per task, default 3), ``ignore`` (fingerprint
parts to leave out) and ``sensitive`` (fields whose typed text is a secret, never stored).
Counters go to the store, so ``plan.retrieve``'s metrics add up across runs. A page is given as ``page:`` (``{"url", "elements": [...]}`` or a list of elements) or ``html:``
(parsed with :func:`~actioncache.replay.page_from_html`). Bad arguments answer
``{"success": False, "error": ..., "error_type": "validation_error"}``; a replay that does not fit answers ``success: True`` with
``hit: False`` and the ``reason``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..actions import ActionTable, Engine, failure
from .html import page_from_html
from .intents import Resolver, llm_resolver
from .models import Page, PlanSignature
from .plan_cache import PlanCache
from .validation import PersonalizeHook, llm_personalizer


def _signature(url: str | None, goal: str | None, signature: Mapping[str, Any] | None) -> PlanSignature:
    if signature is not None:
        if not isinstance(signature, Mapping):
            raise TypeError(f"signature must be a mapping {{url, goal}}, not {type(signature).__name__}")
        url, goal = signature.get("url", signature.get("url_pattern")), signature.get("goal")
    return PlanSignature.of(url, goal)  # type: ignore[arg-type]  # of() names what is missing


def _page(page: Any, html: str | None, url: str | None) -> Page | Any:
    if html is not None:
        return page_from_html(html, url=url)
    if page is None:
        raise ValueError("plan actions need the current page: pass page: {url, elements: [...]} or html: <text>")
    return page


def register_actions(registry: ActionTable, engine: Engine) -> None:
    """Add ``plan.record``, ``plan.retrieve`` and ``plan.report`` (and their ``actions.plan_*`` aliases)."""
    caches: dict[str, PlanCache] = {}

    def plans(namespace: str | None) -> PlanCache:
        settings = (getattr(engine, "settings", None) or {}).get("replay") or {}
        name = str(namespace or settings.get("namespace") or "default")
        if name not in caches:
            caches[name] = PlanCache(engine.store, name, history=int(settings.get("history", 3)),
                                     ignore=settings.get("ignore") or (), sensitive=settings.get("sensitive") or (),
                                     shared_metrics=True)
        return caches[name]

    def bound(state: Any, option: str, name: str) -> Any:
        if name not in registry:
            raise ValueError(f"{option}: {name!r} is not a registered action; use e.g. 'llm.call'")
        action = registry[name]
        return lambda **kw: action(state, **kw)

    def hook_for(state: Any, name: str | None, options: Mapping[str, Any] | None) -> PersonalizeHook | None:
        return llm_personalizer(bound(state, "personalize", name), **dict(options or {})) if name else None

    def resolver_for(state: Any, name: str | None, options: Mapping[str, Any] | None) -> Resolver | None:
        return llm_resolver(bound(state, "resolve", name), **dict(options or {})) if name else None

    def record(state: Any, actions: list[Any] | None = None, completed: bool | None = None, url: str | None = None,
               goal: str | None = None, signature: Mapping[str, Any] | None = None, page: Any = None,
               html: str | None = None, namespace: str | None = None) -> dict[str, Any]:
        """``plan.record``: keep a completed run's actions for its URL pattern and goal."""
        try:
            if completed is None or actions is None:
                raise ValueError("plan.record needs actions: [...] and completed: true|false")
            sig = _signature(url, goal, signature)
            current = _page(page, html, url) if page is not None or html is not None else None
            plan_id = plans(namespace).record(sig, actions, bool(completed), page=current)
        except (TypeError, ValueError) as exc:
            return failure("validation_error", str(exc))
        return {"success": True, "recorded": plan_id is not None, "plan_id": plan_id,
                "url_pattern": sig.url_pattern}

    def retrieve(state: Any, url: str | None = None, goal: str | None = None,
                 signature: Mapping[str, Any] | None = None, page: Any = None, html: str | None = None,
                 executed: Any = 0, personalize: str | None = None, resolve: str | None = None,
                 llm: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                 secrets: Mapping[str, Any] | None = None, namespace: str | None = None) -> dict[str, Any]:
        """``plan.retrieve``: the validated, rebound actions to replay now, or ``hit: false`` and why."""
        try:
            if secrets is not None and not isinstance(secrets, Mapping):
                raise TypeError("secrets must be a mapping of secret name to value, e.g. {password: ...}")
            sig = _signature(url, goal, signature)
            result = plans(namespace).lookup(sig, _page(page, html, url), executed,
                                             personalize=hook_for(state, personalize, llm), context=context,
                                             secrets=secrets, resolve=resolver_for(state, resolve, llm))
        except (TypeError, ValueError) as exc:
            return failure("validation_error", str(exc))
        return {"success": True, **result.to_dict(secrets=True)}  # the agent types them

    def report(state: Any, success: bool | None = None, url: str | None = None, goal: str | None = None,
               signature: Mapping[str, Any] | None = None, plan_id: str | None = None,
               namespace: str | None = None) -> dict[str, Any]:
        """``plan.report``: feedback on a replay; trust falls by the EMA and an untrusted plan is dropped."""
        try:
            if success is None:
                raise ValueError("plan.report needs success: true|false")
            outcome = plans(namespace).report(_signature(url, goal, signature), bool(success), plan_id=plan_id)
        except (TypeError, ValueError) as exc:
            return failure("validation_error", str(exc))
        return {"success": True, "found": outcome is not None, **(outcome or {})}

    for name, fn in (("record", record), ("retrieve", retrieve), ("report", report)):
        registry[f"plan.{name}"] = fn
        registry[f"actions.plan_{name}"] = fn
