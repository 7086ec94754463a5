"""Cache modes, scopes and phase guards for agent loops.

An agent loop must cache only idempotent work: verifier runs, file reads, read-only LLM phases.
This package decides, per call, whether the cache may be read and written:

* **mode** ``off`` (default: run fresh, no lookup, no store), ``record`` (run everything, store
  PASS results) or ``use`` (look up first; on a miss run and store).
* **scopes**: which classes of work are cached: ``verify``, ``read`` (the default pair), ``llm_ro``,
  or any name you choose. A call whose scope is not enabled runs fresh.
* **phase**: ``llm_ro`` is cached only in the read-only phases of an allow-list (``REPORT``,
  ``ANALYZE``, ``REVIEW`` by default; ``llm_ro_phases`` in the config or ``CACHE_LLM_RO_PHASES``).
  No phase, an unknown phase, ``PLAN`` and ``BUILD`` never cache it, because a phase that advances
  state must not be replayed; each block is logged and counted (``phase_blocked``).
* **non-cacheable tools**: action/tool names (globs allowed) that always run fresh.

The policy only governs calls that carry a ``scope=`` (``cache.wrap(..., scope="verify")``,
``@cached(scope="read")``, ``actioncache exec``). Calls without a scope keep caching as they
always did, whatever the mode: the mode is a switch for agent-loop work, not for the library.

Where it comes from, strongest first: a ``cache.policy(...)`` block (a context variable, so each
thread and asyncio task has its own), then the environment (``ACTIONCACHE_MODE``/``_SCOPE``/``_PHASE``
over ``CACHE_MODE``/``CACHE_SCOPE``/``CACHE_PHASE``; exported, so subprocesses inherit them), then
the config file (``actioncache.toml``, ``.actioncache.yml`` or the
agent-loop layout's ``artifacts/rollflow_cache/config.yml``, found from the working directory upward, or
``$ACTIONCACHE_CONFIG``), then the defaults. Two exceptions: ``cache_settings.enabled: false`` in
the config turns caching off whatever the environment says (a kill switch must kill), and a config
found by walking up may choose the store or the mode only in a directory the user trusted
(``actioncache trust``, see ``actioncache.trust``).
"""

from __future__ import annotations

from typing import Any, ContextManager

from ..errors import PolicyError
from .hook import PolicyHook, active_policy, attach, policy_block, use_policy
from .rules import (
    BLOCKING_PHASES,
    DEFAULT_MAX_AGE_HOURS,
    DEFAULT_SCOPES,
    GUARDED_SCOPES,
    LLM_RO_PHASES,
    MODES,
    PHASE_GUARD,
    Policy,
    parse_bool,
    parse_fields,
    parse_mode,
    parse_phase,
    parse_rate,
    parse_scopes,
    parse_scopes_list,
)
from .sources import (
    CONFIG_ENV,
    CONFIG_NAMES,
    ENV_NAMES,
    ENV_VARS,
    LoopConfig,
    config_home,
    default_policy,
    env_fields,
    find_config,
    load_config,
    policy_environ,
    read_config,
    untrusted_note,
)

__all__ = [
    "BLOCKING_PHASES", "CONFIG_ENV", "CONFIG_NAMES", "DEFAULT_MAX_AGE_HOURS", "DEFAULT_SCOPES", "ENV_NAMES",
    "ENV_VARS", "GUARDED_SCOPES", "LLM_RO_PHASES", "MODES", "PHASE_GUARD", "LoopConfig", "Policy", "PolicyError",
    "PolicyHook", "active_policy", "attach", "config_home", "default_policy", "env_fields", "find_config", "load_config",
    "parse_bool", "parse_fields", "parse_mode", "parse_phase", "parse_rate", "parse_scopes", "parse_scopes_list",
    "policy_block", "policy_environ", "read_config", "untrusted_note", "use_policy", "provider",
]


class _Provider:
    """The built-in policy as the core sees it (``decision.PolicyProvider``); installed by the package root."""

    def attach(self, cache: Any) -> PolicyHook:
        return attach(cache)

    def block(self, cache: Any, **fields: Any) -> ContextManager[Any]:
        return policy_block(cache, **fields)


provider = _Provider()
