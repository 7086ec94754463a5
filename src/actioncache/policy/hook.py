"""The hook the core consults for scoped calls, and ``cache.policy()`` blocks.

The hook never touches the cache's counters: it returns a :class:`Decision` that says what was
decided (``phase_blocked`` included) and the core counts it.
"""

from __future__ import annotations

import contextvars
import weakref
from contextlib import contextmanager
from typing import Any, ContextManager, Iterator, Mapping, Protocol

from .._log import LazyLogger
from ..decision import ALWAYS, Decision
from ..decision import PolicyHook as HookProtocol
from ..errors import PolicyError
from .rules import Policy, parse_scopes_list
from .sources import default_policy

log = LazyLogger("actioncache.policy")  # logging is imported when something is logged: ~5 ms a run


class HasPolicyHook(Protocol):
    """What the hook needs of a cache: the ``policy_hook`` slot (``Cache`` has it)."""

    policy_hook: HookProtocol | None


_BLOCKS: contextvars.ContextVar[Mapping[int, Policy]] = contextvars.ContextVar("actioncache_policy", default={})  # noqa: B039 - never mutated: set() replaces it


def active_policy(cache: HasPolicyHook | None = None) -> Policy:
    """The policy for ``cache`` here and now: its innermost ``cache.policy()`` block, else the default."""
    if cache is not None:
        block = _BLOCKS.get().get(id(cache))
        if block is not None:
            return block
    return default_policy()


class PolicyHook:
    """What ``Cache.policy_hook`` holds once a scoped call or ``cache.policy()`` needs the policy.

    ``scoped_only`` tells the core not to ask about calls without a scope, so unscoped calls keep
    their fast path.
    """

    scoped_only = True

    def __init__(self, cache: HasPolicyHook) -> None:
        self._cache = weakref.ref(cache)

    def decide(self, scope: str | None, action: str) -> Decision:
        if scope is None:
            return ALWAYS
        cache = self._cache()
        policy = active_policy(cache)
        decision = policy.decide(scope, action)
        if policy.mode != "off" and policy.phase_blocks(scope):
            # The agent-loop rule: "LLM cache in BUILD → hard-block in code, log warning if attempted".
            # The core counts it (phase_blocked) from the decision.
            log.warning("actioncache: %s (%s runs fresh)", decision.reason, action)
            decision = Decision(decision.lookup, decision.store, decision.reason, phase_blocked=True)
        return decision


def attach(cache: HasPolicyHook) -> PolicyHook:
    """Install the policy hook on ``cache`` (once) and return it."""
    hook = cache.policy_hook
    if not isinstance(hook, PolicyHook):
        if hook is not None:
            raise PolicyError("this Cache already has a custom policy_hook; cache.policy() needs the built-in one")
        hook = cache.policy_hook = PolicyHook(cache)
    return hook


def policy_block(cache: HasPolicyHook, **fields: Any) -> ContextManager[Policy]:
    """The body of ``Cache.policy``: enclosing policy + ``fields``, for this context only.

    ``non_cacheable`` adds to the enclosing list rather than replacing it: a tool the config
    file calls non-cacheable stays so.
    """
    base = active_policy(cache)
    if fields.get("non_cacheable") is not None:
        fields["non_cacheable"] = base.non_cacheable | frozenset(parse_scopes_list(fields["non_cacheable"], "non_cacheable"))
    return use_policy(cache, base.with_overrides(**fields))


@contextmanager
def use_policy(cache: HasPolicyHook, policy: Policy) -> Iterator[Policy]:
    """Install a ready :class:`Policy` for ``cache`` in this context (thread/task) only."""
    attach(cache)
    token = _BLOCKS.set({**_BLOCKS.get(), id(cache): policy})
    try:
        yield policy
    finally:
        _BLOCKS.reset(token)
