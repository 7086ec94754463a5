"""What a config file said, remembered for the exec hit path (which must not load YAML or TOML).

The full command parses the config (``policy.load_config``, trust included) and leaves a memo here:
the settings a hit needs, with the stat signature of the config file and of the trust list. The hit
path uses a memo only while both signatures are unchanged; otherwise it leaves the run to the full
command, which writes a fresh memo. A memo is written only when the config is not *racy* (changed
within the timestamp granularity of the moment it was read), so an edit can never hide behind an
unchanged signature. Only ``os`` and the lean helpers are imported.
"""

from .._lean import dumps, file_sha256, loads, make_dirs, sha256

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    from typing import Any
else:  # os without importing it (``_os``: ~6 M instructions a hit)
    from .._os import os

MEMO_VERSION = 2
def _memo_path(config_path: str) -> str | None:
    if not os.environ.get("XDG_CACHE_HOME") and not os.environ.get("HOME"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    name = sha256(os.fsencode(config_path)).hexdigest()[:32]
    return os.path.join(base, "actioncache", "config-memo", name + ".json")


def _signature(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino]


def config_digest(path: str | None) -> str | None:
    """SHA-256 of a config file's bytes: part of every exec key made while it is in effect, so
    editing the cache's own config is a miss for the entries it governs (as the seed says)."""
    if path is None:
        return None

    try:
        return str(file_sha256(path))
    except OSError:
        return None


def _trust_file() -> str:
    from ..trust import trust_file

    return trust_file()


def write(config: "Any", now_ns: int) -> None:
    """Remember ``config`` (a ``policy.LoopConfig`` with a path) for the hit path; best effort."""
    if config.path is None or os.environ.get("ACTIONCACHE_CONFIG", "").strip():
        return
    path = os.path.realpath(str(config.path))
    memo = _memo_path(path)
    sig = _signature(path)
    if memo is None or sig is None or sig[1] >= now_ns - 2_000_000_000:
        return  # racy (or gone): no memo; the full command keeps reading it
    digest = config_digest(path)
    if digest is None or _signature(path) != sig:
        return  # changed while it was hashed
    fields = dict(config.fields)
    phases = fields.get("llm_ro_phases")
    data = {"v": MEMO_VERSION, "path": path, "sig": sig, "trust_sig": _signature(_trust_file()), "digest": digest,
            "phase": fields.get("phase"), "check_git_sha": fields.get("check_git_sha", True),
            "llm_ro_phases": sorted(phases) if phases is not None else None,
            "mode": fields.get("mode"), "scopes": sorted(fields["scopes"]) if "scopes" in fields else None,
            "non_cacheable": sorted(fields.get("non_cacheable", ())),
            "max_age_hours": fields.get("max_age_hours"), "audit_rate": fields.get("audit_rate", 0.0),
            "store": config.store, "run_log": config.run_log, "verbose": config.verbose, "enabled": config.enabled,
            "ignored": list(config.ignored)}
    try:
        make_dirs(os.path.dirname(memo))
        tmp = f"{memo}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(dumps(data))
        os.replace(tmp, memo)
    except (OSError, TypeError, ValueError):
        pass


def read(config_path: str) -> "dict[str, Any] | None":
    """The memo for ``config_path`` if it still describes the file (and the trust list); else None."""
    path = os.path.realpath(config_path)
    memo = _memo_path(path)
    if memo is None:
        return None
    try:
        with open(memo, encoding="utf-8") as handle:
            data = loads(handle.read())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("v") != MEMO_VERSION or data.get("path") != path:
        return None
    if data.get("sig") != _signature(path) or data.get("trust_sig") != _signature(_trust_file()):
        return None
    return data
