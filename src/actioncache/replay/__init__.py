"""Validated replay of recorded action plans (after Skyvern's action cache).

An agent that completed a task records its actions; the next run of the same task (same URL
pattern and goal) gets them back, but only after every element they touch is found, exactly
once, on the current page by its fingerprint, and only for action types that are safe to replay.
Anything else falls back to fresh planning with the reason logged and counted.

    from actioncache.replay import PlanCache, page_from_html
    plans = PlanCache(open_store("sqlite:///plans.db"))
    plans.record(("https://shop.example/search?q=lamp", "buy a lamp"), actions, completed=True)
    actions = plans.retrieve(("https://shop.example/search?q=desk", "buy a lamp"), page_from_html(html))

See docs/replay.md.
"""

from .fingerprints import STABLE_ATTRIBUTES, element_fingerprint, fingerprint_payload
from .html import page_from_html
from .intents import ClickChoice, llm_resolver, rule_resolver
from .models import Action, ActionType, Element, Page, PlanSignature, as_page, as_signature, normalize_goal, url_pattern
from .plan_cache import INITIAL_TRUST, REWARD_ALPHA, TRUST_FLOOR, PlanCache, ReplayResult
from .run import ReplayRun
from .secrets import SECRET_AUTOCOMPLETE
from .urls import DEFAULT_URL_RULE, TRACKING_PARAMS, UrlRule, destination_pattern
from .validation import FallbackReason, ReplayContext, ReplayFallback, llm_personalizer

__all__ = [
    "Action",
    "ActionType",
    "ClickChoice",
    "DEFAULT_URL_RULE",
    "Element",
    "FallbackReason",
    "INITIAL_TRUST",
    "Page",
    "PlanCache",
    "PlanSignature",
    "REWARD_ALPHA",
    "ReplayContext",
    "ReplayFallback",
    "ReplayResult",
    "ReplayRun",
    "SECRET_AUTOCOMPLETE",
    "STABLE_ATTRIBUTES",
    "TRACKING_PARAMS",
    "TRUST_FLOOR",
    "UrlRule",
    "as_page",
    "as_signature",
    "destination_pattern",
    "element_fingerprint",
    "fingerprint_payload",
    "llm_personalizer",
    "llm_resolver",
    "normalize_goal",
    "page_from_html",
    "rule_resolver",
    "url_pattern",
]
