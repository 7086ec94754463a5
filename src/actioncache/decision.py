"""What a policy decides for one call, and the hook protocol through which the core asks.

A leaf of the core: the policy package builds :class:`Decision` values and the core reads them,
and neither imports the other. The core counts what a decision says (``policy_bypass``,
``phase_blocked``), so the policy never touches the cache's counters.
"""

from __future__ import annotations

from typing import Any, ContextManager, NamedTuple, Protocol

__all__ = ["ALWAYS", "Decision", "PolicyHook", "PolicyProvider"]


class _Fields(NamedTuple):
    lookup: bool
    store: bool
    reason: str | None = None


class Decision(_Fields):
    """What a policy allows for one call: look up the cache, store the result, and why not.

    A decision is the triple ``(lookup, store, reason)`` (it compares equal to that tuple).
    ``phase_blocked`` is a note beside it, not part of the value: the phase guard refused the call,
    and the core counts it as ``phase_blocked``.
    """

    phase_blocked = False

    def __new__(cls, lookup: bool, store: bool, reason: str | None = None, phase_blocked: bool = False) -> Decision:
        self = super().__new__(cls, lookup, store, reason)
        if phase_blocked:
            self.phase_blocked = True
        return self

    @property
    def bypassed(self) -> bool:
        """True when the call may not both read and write the cache."""
        return not (self.lookup and self.store)


ALWAYS = Decision(True, True, None)


class PolicyHook(Protocol):
    """The one thing the core asks of a policy (``Cache.policy_hook``; ``actioncache.policy`` implements it).

    A hook with ``scoped_only = True`` is never asked about calls without a scope.
    """

    def decide(self, scope: str | None, action: str) -> Decision: ...


class PolicyProvider(Protocol):
    """What the core asks of the built-in policy (``actioncache.policy.provider``, imported on the first scoped call)."""

    def attach(self, cache: Any) -> PolicyHook:
        """The built-in hook for ``cache``, installed on it once."""

    def block(self, cache: Any, **fields: Any) -> ContextManager[Any]:
        """The context manager behind ``Cache.policy(...)``."""
