"""The rules of the cache policy: modes, scopes, phase guards and non-cacheable tools, as pure data.

``Policy.decide(scope, action)`` is a pure function of one resolved policy; where a policy comes
from is ``sources``, and how the core consults it is ``hook``. See the package docstring.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .._glob import glob_matches
from .._record import field, record, replace
from ..decision import ALWAYS, Decision
from ..errors import PolicyError

MODES = ("off", "record", "use")
DEFAULT_SCOPES = frozenset({"verify", "read"})
GUARDED_SCOPES = frozenset({"llm_ro"})
BLOCKING_PHASES = frozenset({"PLAN", "BUILD"})  # named in messages; every phase off the allow-list blocks
LLM_RO_PHASES = frozenset({"REPORT", "ANALYZE", "REVIEW"})
DEFAULT_MAX_AGE_HOURS = 168.0
PHASE_GUARD = "phase guard"


@record(frozen=True)
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
    off_because: str = field(default="set CACHE_MODE=use or record", compare=False)  # what mode off says

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
            return Decision(False, False, f"cache mode is off ({self.off_because})")
        if self.is_non_cacheable(action):
            return Decision(False, False, f"{action} is in non_cacheable_tools")
        if self.phase_blocks(scope):
            allowed = ", ".join(sorted(self.llm_ro_phases)) or "none"
            where = f"in phase {self.phase}" if self.phase else "without a phase (set CACHE_PHASE or --phase)"
            return Decision(False, False, f"{PHASE_GUARD}: {scope} is never cached {where}; only in {allowed}",
                            phase_blocked=True)
        if scope not in self.scopes:
            enabled = ",".join(sorted(self.scopes)) or "none"
            return Decision(False, False, f"scope {scope!r} is not enabled (CACHE_SCOPE={enabled})")
        if self.force_fresh:
            return Decision(False, True, "force fresh: ran and refreshed the entry")
        if self.mode == "record":
            return Decision(False, True, "record mode: ran and stored")
        return ALWAYS

    def with_overrides(self, **fields: Any) -> Policy:
        """A copy with the given fields parsed and validated (None means: keep this one's)."""
        return replace(self, **parse_fields({k: v for k, v in fields.items() if v is not None}, "argument"))


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


def parse_fields(raw: Mapping[str, Any], source: str, spelled: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Policy fields by name, parsed and validated; ``source`` names where they came from in errors,
    and ``spelled`` how the source writes a field (a config file says ``max_cache_age_hours``)."""
    out: dict[str, Any] = {}
    for name, value in raw.items():
        label = source if source.startswith("$") else f"{source} {(spelled or {}).get(name, name)}"
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
