"""Cache modes, scopes and phase guards for agent loops (seed 001).

An agent loop must cache only idempotent work: verifier runs, file reads, read-only LLM phases.
This module decides, per call, whether the cache may be read and written:

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
the config file (``actioncache.toml``, ``.actioncache.yml`` or seed 001's
``artifacts/rollflow_cache/config.yml``, found from the working directory upward, or
``$ACTIONCACHE_CONFIG``), then the defaults. Two exceptions: ``cache_settings.enabled: false`` in
the config turns caching off whatever the environment says (a kill switch must kill), and a config
found by walking up may choose the store or the mode only in a directory the user trusted
(``actioncache trust``, see ``actioncache.trust``).
"""

from __future__ import annotations

import contextvars
import logging
import os
import warnings
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from .cache import ALWAYS, Decision
from .stores.base import glob_matches

if TYPE_CHECKING:
    from .cache import Cache

log = logging.getLogger("actioncache.policy")

MODES = ("off", "record", "use")
KNOWN_SCOPES = ("verify", "read", "llm_ro")
DEFAULT_SCOPES = frozenset({"verify", "read"})
GUARDED_SCOPES = frozenset({"llm_ro"})
BLOCKING_PHASES = frozenset({"PLAN", "BUILD"})  # named in messages; every phase off the allow-list blocks
LLM_RO_PHASES = frozenset({"REPORT", "ANALYZE", "REVIEW"})
DEFAULT_MAX_AGE_HOURS = 168.0
CONFIG_NAMES = ("actioncache.toml", ".actioncache.yml", ".actioncache.yaml", "artifacts/rollflow_cache/config.yml")
CONFIG_ENV = "ACTIONCACHE_CONFIG"
PHASE_GUARD = "phase guard"

# Each setting's environment variables, the ACTIONCACHE_ name first (it wins when both are set).
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "mode": ("ACTIONCACHE_MODE", "CACHE_MODE"),
    "scopes": ("ACTIONCACHE_SCOPE", "CACHE_SCOPE"),
    "phase": ("ACTIONCACHE_PHASE", "CACHE_PHASE"),
    "force_fresh": ("ACTIONCACHE_FORCE_FRESH", "CACHE_FORCE_FRESH"),
    "audit_rate": ("ACTIONCACHE_AUDIT_RATE", "CACHE_AUDIT_RATE"),
    "llm_ro_phases": ("ACTIONCACHE_LLM_RO_PHASES", "CACHE_LLM_RO_PHASES"),
}
# Every variable the default policy reads (tests clear them; the memo of default_policy keys on them).
ENV_VARS = tuple(name for names in ENV_NAMES.values() for name in names) + ("CACHE_SKIP", CONFIG_ENV)


class PolicyError(ValueError):
    """A cache mode, scope list, phase or config file that cannot be understood."""


@dataclass(frozen=True)
class Policy:
    """One resolved policy. ``decide(scope, action)`` is pure; the hook adds logging and counting."""

    mode: str = "off"
    scopes: frozenset[str] = DEFAULT_SCOPES
    phase: str | None = None
    non_cacheable: frozenset[str] = frozenset()
    max_age_hours: float = DEFAULT_MAX_AGE_HOURS
    check_git_sha: bool = True
    force_fresh: bool = False
    audit_rate: float = 0.0
    llm_ro_phases: frozenset[str] = LLM_RO_PHASES
    notes: tuple[str, ...] = field(default=(), compare=False)

    def is_non_cacheable(self, action: str) -> bool:
        base = action.rsplit("/", 1)[-1]
        return any(glob_matches(p, action) or glob_matches(p, base) for p in self.non_cacheable)

    def phase_blocks(self, scope: str | None) -> bool:
        return scope in GUARDED_SCOPES and self.phase not in self.llm_ro_phases

    def decide(self, scope: str | None, action: str) -> Decision:
        """May this call look up the cache, and store its result? (None scope: always both.)"""
        if scope is None:
            return ALWAYS
        if self.mode == "off":
            return Decision(False, False, "cache mode is off (set CACHE_MODE=use or record)")
        if self.is_non_cacheable(action):
            return Decision(False, False, f"{action} is in non_cacheable_tools")
        if self.phase_blocks(scope):
            allowed = ", ".join(sorted(self.llm_ro_phases)) or "none"
            where = f"in phase {self.phase}" if self.phase else "without a phase (set CACHE_PHASE or --phase)"
            return Decision(False, False, f"{PHASE_GUARD}: {scope} is never cached {where}; only in {allowed}")
        if scope not in self.scopes:
            enabled = ",".join(sorted(self.scopes)) or "none"
            return Decision(False, False, f"scope {scope!r} is not enabled (CACHE_SCOPE={enabled})")
        if self.force_fresh:
            return Decision(False, True, "force fresh: ran and refreshed the entry")
        if self.mode == "record":
            return Decision(False, True, "record mode: ran and stored")
        return ALWAYS

    def with_overrides(self, **fields: Any) -> "Policy":
        """A copy with the given fields parsed and validated (None means: keep this one's)."""
        return replace(self, **_parse_fields({k: v for k, v in fields.items() if v is not None}, "argument"))


# --- parsing -------------------------------------------------------------------------------------


def parse_mode(value: Any, source: str = "mode") -> str:
    mode = str(value).strip().lower()
    if mode not in MODES:
        raise PolicyError(f"{source}={value!r} is not a cache mode; use one of: off (default), record, use")
    return mode


def parse_scopes(value: Any, source: str = "scopes") -> frozenset[str]:
    """``"verify,read"`` or ``["verify", "read"]`` → frozenset; names are lower-cased."""
    items: Iterable[Any] = value.split(",") if isinstance(value, str) else value
    try:
        names = [str(item).strip().lower() for item in items]
    except TypeError:
        raise PolicyError(f"{source} must be a comma-separated string or a list of scope names, not {value!r}") from None
    bad = [n for n in names if n and not n.replace("_", "").replace("-", "").isalnum()]
    if bad:
        raise PolicyError(f"{source}: {bad[0]!r} is not a scope name; use names such as verify, read, llm_ro")
    return frozenset(n for n in names if n)


def parse_phase(value: Any) -> str | None:
    phase = str(value).strip().upper()
    return phase or None


def parse_bool(value: Any, source: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise PolicyError(f"{source}={value!r} is not a boolean; use 1/0, true/false")


def parse_rate(value: Any, source: str) -> float:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = -1.0
    if not 0.0 <= rate <= 1.0:
        raise PolicyError(f"{source}={value!r} must be a fraction between 0 and 1, e.g. 0.1 to re-check one hit in ten")
    return rate


def _parse_fields(raw: Mapping[str, Any], source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in raw.items():
        label = source if source.startswith("$") else f"{source} {name}"
        if name == "mode":
            out[name] = parse_mode(value, label)
        elif name == "scopes":
            out[name] = parse_scopes(value, label)
        elif name == "phase":
            out[name] = parse_phase(value)
        elif name == "non_cacheable":
            out[name] = frozenset(parse_scopes_list(value, label))
        elif name == "llm_ro_phases":
            out[name] = frozenset(p.upper() for p in parse_scopes_list(value, label))
        elif name in ("force_fresh", "check_git_sha"):
            out[name] = parse_bool(value, label)
        elif name == "audit_rate":
            out[name] = parse_rate(value, label)
        elif name == "max_age_hours":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise PolicyError(f"{label}={value!r} must be a positive number of hours (default 168 = 7 days)")
            out[name] = float(value)
        else:
            raise PolicyError(f"unknown policy field {name!r}; use mode, scopes, phase, non_cacheable, "
                              f"force_fresh, check_git_sha, audit_rate, llm_ro_phases or max_age_hours")
    return out


def parse_scopes_list(value: Any, source: str) -> list[str]:
    """A list of tool names/globs (kept as written, not lower-cased)."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [str(v).strip() for v in value if str(v).strip()]
    raise PolicyError(f"{source} must be a list of tool names, not {value!r}")


# --- the config file -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopConfig:
    """What a config file says. ``fields`` are policy fields; the rest is for ``actioncache exec``."""

    path: Path | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    store: str | None = None
    run_log: bool = True
    verbose: bool = False
    enabled: bool = True  # cache_settings.enabled: false is a kill switch, stronger than the environment
    ignored: tuple[str, ...] = ()  # settings an untrusted config asked for (store, mode), for the warning


_CONFIG_KEYS = ("mode", "scopes", "phase", "non_cacheable_tools", "max_cache_age_hours", "check_git_sha",
                "audit_rate", "store", "run_log", "cache_settings", "llm_ro_phases")


def find_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """``$ACTIONCACHE_CONFIG``, else the nearest config file from ``start`` (cwd) up to the repo root.

    In each directory: ``actioncache.toml``, ``.actioncache.yml``/``.yaml``, then seed 001's
    ``artifacts/rollflow_cache/config.yml``.
    """
    explicit = os.environ.get(CONFIG_ENV, "").strip()
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise PolicyError(f"${CONFIG_ENV}={explicit!r} does not name a file; fix the path or unset it")
        return path
    here = Path(start or os.getcwd()).resolve()
    for directory in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
        if (directory / ".git").exists():
            break  # the repository root: a config above it belongs to something else
    return None


def config_home(path: Path) -> Path:
    """The directory a config file speaks for (seed 001's file sits two levels down in it)."""
    if path.parts[-3:] == ("artifacts", "rollflow_cache", "config.yml"):
        return path.parent.parent.parent
    return path.parent


def read_config(path: Path, trusted: bool = True) -> LoopConfig:
    """Parse one TOML or YAML config file into a :class:`LoopConfig` (clear errors on bad keys).

    ``trusted=False``: its ``store`` and ``mode`` are left out and named in ``ignored``.
    """
    try:
        if path.suffix == ".toml":
            import tomllib

            data = tomllib.loads(path.read_text(encoding="utf-8"))
        else:
            import yaml

            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except Exception as exc:  # noqa: BLE001 - a syntax error names the file
        raise PolicyError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise PolicyError(f"config {path} must be a mapping of settings, e.g. `mode = \"use\"`")
    unknown = sorted(set(data) - set(_CONFIG_KEYS))
    if unknown:
        raise PolicyError(f"config {path}: unknown setting {unknown[0]!r}; known: {', '.join(_CONFIG_KEYS)}")
    settings = data.get("cache_settings") or {}
    if not isinstance(settings, dict):
        raise PolicyError(f"config {path}: cache_settings must be a mapping (enabled, check_git_sha, verbose)")
    raw: dict[str, Any] = {}
    for key, name in (("mode", "mode"), ("scopes", "scopes"), ("phase", "phase"), ("audit_rate", "audit_rate"),
                      ("non_cacheable_tools", "non_cacheable"), ("max_cache_age_hours", "max_age_hours"),
                      ("check_git_sha", "check_git_sha"), ("llm_ro_phases", "llm_ro_phases")):
        if key in data:
            raw[name] = data[key]
    if "check_git_sha" in settings:
        raw.setdefault("check_git_sha", settings["check_git_sha"])
    enabled = parse_bool(settings.get("enabled", True), f"{path} cache_settings.enabled")
    if not enabled:
        raw["mode"] = "off"
    ignored: list[str] = []
    if not trusted:
        if raw.get("mode") not in (None, "off"):
            ignored.append(f"mode = {raw.pop('mode')!r}")
        if data.get("store") is not None:
            ignored.append(f"store = {str(data['store'])!r}")
    fields = _parse_fields(raw, f"config {path}:")
    store = data.get("store") if trusted else None
    if store is not None:
        store = str(store)
        if "://" not in store:  # a plain path is a SQLite file relative to the config file
            store = "sqlite:///" + str((path.parent / store).resolve()).lstrip("/")
    return LoopConfig(path, fields, store, parse_bool(data.get("run_log", True), f"{path} run_log"),
                      parse_bool(settings.get("verbose", False), f"{path} cache_settings.verbose"), enabled,
                      tuple(ignored))


def untrusted_note(config: LoopConfig) -> str | None:
    """The warning for settings an untrusted config asked for, with the fix."""
    if not config.ignored or config.path is None:
        return None
    home = config_home(config.path)
    return (f"ignored {', '.join(config.ignored)} from {config.path}: a config found by walking up may choose "
            f"the store or the mode only in a trusted directory; run `actioncache trust {home}` if it is yours, "
            f"or name the file with {CONFIG_ENV}=")


_config_memo: dict[str, tuple[Path | None, float, LoopConfig]] = {}


def _trusted(path: Path) -> bool:
    from .trust import is_trusted

    return bool(os.environ.get(CONFIG_ENV, "").strip()) or is_trusted(config_home(path))


def load_config(start: str | os.PathLike[str] | None = None) -> LoopConfig:
    """The config in effect for ``start`` (cwd), re-read when the file changes."""
    anchor = os.environ.get(CONFIG_ENV, "") + "\0" + str(start or os.getcwd())
    memo = _config_memo.get(anchor)
    if memo is not None:
        path, mtime, config = memo
        try:
            if path is None or path.stat().st_mtime == mtime:
                return config
        except OSError:
            pass
    path = find_config(start)
    config = read_config(path, _trusted(path)) if path is not None else LoopConfig()
    _config_memo[anchor] = (path, path.stat().st_mtime if path is not None else 0.0, config)
    return config


# --- the environment -----------------------------------------------------------------------------


def _env(name: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    for var in ENV_NAMES[name]:
        value = environ.get(var, "").strip()
        if value:
            return var, value
    return None


def env_fields(environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Policy fields set by the environment, and notes (deprecations) to show the user."""
    environ = os.environ if environ is None else environ
    raw: dict[str, Any] = {}
    notes: list[str] = []
    for name in ENV_NAMES:
        found = _env(name, environ)
        if found is not None:
            var, value = found
            raw[name] = _parse_fields({name: value}, f"${var}")[name]
    if parse_bool(environ.get("CACHE_SKIP", ""), "$CACHE_SKIP") and "mode" not in raw:
        raw["mode"] = "use"
        raw.setdefault("scopes", DEFAULT_SCOPES)
        notes.append("CACHE_SKIP=1 is deprecated; use CACHE_MODE=use CACHE_SCOPE=verify,read")
    return raw, tuple(notes)


_default_memo: dict[tuple[Any, ...], tuple[LoopConfig, Policy]] = {}


def default_policy(start: str | os.PathLike[str] | None = None) -> Policy:
    """Defaults ← config file ← environment. Cheap to call per decision: memoized on both."""
    config = load_config(start)
    env_key = tuple(os.environ.get(k) for k in ENV_VARS)
    memo_key = (id(config), env_key)
    memo = _default_memo.get(memo_key)
    if memo is not None and memo[0] is config:  # the same object, not a new one at a reused id
        return memo[1]
    fields, notes = env_fields()
    for note in notes:
        warnings.warn(note, DeprecationWarning, stacklevel=2)
    note = untrusted_note(config)  # shown by the CLI, not warned: a library user's config is their own
    if note:
        notes += (note,)
    policy = replace(Policy(**config.fields), **fields, notes=notes)
    if not config.enabled:  # the kill switch beats the environment
        policy = replace(policy, mode="off")
    if len(_default_memo) > 64:
        _default_memo.clear()
    _default_memo[memo_key] = (config, policy)
    return policy


def policy_environ(policy: Policy) -> dict[str, str]:
    """The environment variables that hand ``policy`` down to a subprocess."""
    env = {"CACHE_MODE": policy.mode, "CACHE_SCOPE": ",".join(sorted(policy.scopes))}
    if policy.phase:
        env["CACHE_PHASE"] = policy.phase
    if policy.force_fresh:
        env["CACHE_FORCE_FRESH"] = "1"
    return env


# --- the hook the core consults, and cache.policy() blocks -----------------------------------

_BLOCKS: contextvars.ContextVar[Mapping[int, Policy]] = contextvars.ContextVar("actioncache_policy", default={})


def active_policy(cache: "Cache | None" = None) -> Policy:
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

    def __init__(self, cache: "Cache") -> None:
        self._cache = weakref.ref(cache)

    def decide(self, scope: str | None, action: str) -> Decision:
        if scope is None:
            return ALWAYS
        cache = self._cache()
        policy = active_policy(cache)
        decision = policy.decide(scope, action)
        if policy.mode != "off" and policy.phase_blocks(scope):
            # Seed 001: "LLM cache in BUILD → hard-block in code, log warning if attempted".
            log.warning("actioncache: %s (%s runs fresh)", decision.reason, action)
            if cache is not None:
                cache._count(action, phase_blocked=1)
        return decision


def attach(cache: "Cache") -> PolicyHook:
    """Install the policy hook on ``cache`` (once) and return it."""
    hook = cache.policy_hook
    if not isinstance(hook, PolicyHook):
        if hook is not None:
            raise PolicyError("this Cache already has a custom policy_hook; cache.policy() needs the built-in one")
        hook = cache.policy_hook = PolicyHook(cache)
    return hook


def policy_block(cache: "Cache", **fields: Any) -> Any:
    """The body of ``Cache.policy``: enclosing policy + ``fields``, for this context only.

    ``non_cacheable`` adds to the enclosing list rather than replacing it: a tool the config
    file calls non-cacheable stays so.
    """
    base = active_policy(cache)
    if fields.get("non_cacheable") is not None:
        fields["non_cacheable"] = base.non_cacheable | frozenset(parse_scopes_list(fields["non_cacheable"], "non_cacheable"))
    return use_policy(cache, base.with_overrides(**fields))


@contextmanager
def use_policy(cache: "Cache", policy: Policy) -> Iterator[Policy]:
    """Install a ready :class:`Policy` for ``cache`` in this context (thread/task) only."""
    attach(cache)
    token = _BLOCKS.set({**_BLOCKS.get(), id(cache): policy})
    try:
        yield policy
    finally:
        _BLOCKS.reset(token)
