"""Where a policy comes from: the config file, the environment, and the defaults.

Strongest first: a ``cache.policy(...)`` block (``hook``), then the environment
(``ACTIONCACHE_MODE``/``_SCOPE``/``_PHASE`` over ``CACHE_MODE``/``CACHE_SCOPE``/``CACHE_PHASE``),
then the config file (found from the working directory upward, or ``$ACTIONCACHE_CONFIG``), then
the defaults; ``cache_settings.enabled: false`` beats the environment.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Mapping

from .._record import field, record, replace
from ..config import file_url
from ..errors import PolicyError
from .rules import DEFAULT_SCOPES, Policy, parse_bool, parse_fields

CONFIG_NAMES = ("actioncache.toml", ".actioncache.yml", ".actioncache.yaml", "artifacts/rollflow_cache/config.yml")
CONFIG_ENV = "ACTIONCACHE_CONFIG"

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


# --- the config file -----------------------------------------------------------------------------


@record(frozen=True)
class LoopConfig:
    """What a config file says. ``fields`` are policy fields; the rest is for ``actioncache exec``."""

    path: Path | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    store: str | None = None
    run_log: bool = True
    verbose: bool = False
    enabled: bool = True  # cache_settings.enabled: false is a kill switch, stronger than the environment
    ignored: tuple[str, ...] = ()  # settings an untrusted config asked for (store, mode), for the warning

    def store_for(self, flag: str | None) -> str | None:
        """The store a command here takes: ``flag`` (``--store``), else none where ``$ACTIONCACHE_URL``
        is set (the cache reads it), else this config's ``store`` (None: the default store)."""
        if flag is None and not os.environ.get("ACTIONCACHE_URL", "").strip():
            return self.store
        return flag


# How a config file spells each policy field.
_FILE_FIELDS = (("mode", "mode"), ("scopes", "scopes"), ("phase", "phase"), ("audit_rate", "audit_rate"),
                ("non_cacheable_tools", "non_cacheable"), ("max_cache_age_hours", "max_age_hours"),
                ("check_git_sha", "check_git_sha"), ("llm_ro_phases", "llm_ro_phases"))
_CONFIG_KEYS = ("mode", "scopes", "phase", "non_cacheable_tools", "max_cache_age_hours", "check_git_sha",
                "audit_rate", "store", "run_log", "cache_settings", "llm_ro_phases")


def find_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """``$ACTIONCACHE_CONFIG``, else the nearest config file from ``start`` (cwd) up to the repo root.

    In each directory: ``actioncache.toml``, ``.actioncache.yml``/``.yaml``, then the agent-loop
    layout's ``artifacts/rollflow_cache/config.yml``.
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
    """The directory a config file speaks for (``artifacts/rollflow_cache/config.yml`` sits two levels down in it)."""
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
    except Exception as exc:
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
    for key, name in _FILE_FIELDS:
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
    fields = parse_fields(raw, f"config {path}:", {name: key for key, name in _FILE_FIELDS})
    store = data.get("store") if trusted else None
    if store is not None:
        store = str(store)
        if "://" not in store:  # a plain path is a SQLite file relative to the config file
            store = file_url("sqlite", (path.parent / store).resolve())
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
    from ..trust import is_trusted

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
            raw[name] = parse_fields({name: value}, f"${var}")[name]
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
    untrusted = untrusted_note(config)  # shown by the CLI, not warned: a library user's config is their own
    if untrusted:
        notes += (untrusted,)
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
