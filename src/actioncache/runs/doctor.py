"""``actioncache doctor``: will a loop started from here actually cache?

Run it where the loop runs, after the loop's ``export`` lines. It checks, and prints one line each:

1. the policy this process sees (mode, scopes, phase, config file) and that a child process started
   from here sees the same variables (an ``export`` forgotten is the most common mistake);
2. the store: it opens, takes a write, reads it back and deletes it;
3. a round trip: the same command through ``actioncache exec`` twice, the second a hit;
4. tracing: read-sets on, or the fallback keys and why;
5. the hit path's modules are compiled (a note: without, every hit compiles them, ~3x its cost).

The verdict is the last line: ``SUCCESS: the cache is working`` (exit 0) or ``FAIL: ...`` (exit 1).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from typing import Any

OK, BAD, NOTE = "ok  ", "FAIL", "note"


def _line(state: str, text: str) -> None:
    print(f"[{state}] {text}", flush=True)


def _policy_check() -> tuple[bool, Any]:
    from ..policy import ENV_VARS, PolicyError, default_policy, load_config

    try:
        config = load_config()
        policy = default_policy()
    except PolicyError as exc:
        _line(BAD, f"settings: {exc}")
        return False, None
    where = f"config {config.path}" if config.path else "no config file"
    _line(OK, f"policy: mode={policy.mode} scopes={','.join(sorted(policy.scopes))} phase={policy.phase or '-'} ({where})")
    for note in policy.notes:
        _line(NOTE, note)
    good = True
    if policy.mode == "off":
        why = "cache_settings.enabled is false" if not config.enabled else \
            "CACHE_MODE is not set for this process: `export CACHE_MODE=use` (export, not just set) before the loop"
        _line(BAD, f"caching is off here: {why}")
        good = False
    names = [n for n in ENV_VARS if os.environ.get(n)]
    probe = "import os, sys; print('|'.join(os.environ.get(n, '') for n in sys.argv[1:]))"
    child = subprocess.run([sys.executable, "-c", probe, *names], capture_output=True, text=True, timeout=60)
    mine = "|".join(os.environ.get(n, "") for n in names)
    if child.stdout.strip() == mine:
        _line(OK, f"a child process sees the same variables ({', '.join(names) or 'none set'})")
    else:
        _line(BAD, "a child process sees different variables; export them")
        good = False
    return good, config


def _store_check(url: str | None, config: Any) -> bool:
    from ..records import Records
    from .runner import ENTRY_PREFIX, open_cache

    key = f"{ENTRY_PREFIX}exec:doctor:{os.getpid()}:{time.time_ns()}"
    try:
        cache = open_cache(url, config)
    except Exception as exc:  # noqa: BLE001 - the doctor reports, it does not raise
        _line(BAD, f"store: cannot open: {exc}")
        return False
    try:
        Records(cache.store, cache.codec).put_raw(key, b"j1", kind="doctor", ttl_s=60)
        back = cache.store.get(key)
        cache.store.delete(key)
    except Exception as exc:  # noqa: BLE001
        _line(BAD, f"store {cache.url}: not writable: {exc}")
        return False
    finally:
        cache.close()
    if back is None or back.value != b"j1":
        _line(BAD, f"store {cache.url}: a write did not read back")
        return False
    _line(OK, f"store {cache.url}: writable, reads back")
    return True


def _round_trip(url: str | None) -> bool:
    nonce = f"{os.getpid()}-{time.time_ns()}"
    argv = [sys.executable, "-m", "actioncache", "exec", "--mode", "use", "--summary", "--env", "ACTIONCACHE_DOCTOR",
            *(["--store", url] if url else []), "--", sys.executable, "-c", "print('doctor')"]
    # The probe is a fast command: it would be judged not worth caching, which is not what this checks.
    env = {**os.environ, "ACTIONCACHE_DOCTOR": nonce, "ACTIONCACHE_CHEAP_MS": "0"}
    with tempfile.TemporaryDirectory(prefix="actioncache-doctor-") as work:
        runs = [subprocess.run(argv, cwd=work, env=env, capture_output=True, timeout=120) for _ in range(2)]
    said = [r.stderr.decode("utf-8", "replace") for r in runs]
    tracing = "read-sets off" not in said[0]
    _line(OK if tracing else NOTE, "tracing: read-sets are recorded" if tracing else
          "tracing: " + next(line for line in said[0].splitlines() if "read-sets off" in line).split(": ", 1)[-1])
    if all(r.returncode == 0 for r in runs) and ": hit;" in said[1]:
        _line(OK, "round trip: the second run of the same command was a hit")
        return True
    _line(BAD, "round trip: the second run was not a hit:\n    " + said[1].strip().replace("\n", "\n    "))
    return False


HIT_PATH_MODULES = ("actioncache._lean", "actioncache._os", "actioncache.runs.hitpath", "actioncache.runs.keys",
                    "actioncache.runs.manifest", "actioncache.runs.configmemo")


def _compiled_check() -> None:
    """A note when a module of the exec hit path has no current ``__pycache__`` file: where Python
    may not write one (``PYTHONDONTWRITEBYTECODE``, a read-only install), every hit compiles it."""
    import importlib.util

    stale = []
    # the launcher module beside the command that starts this Python (bin/actioncache imports it)
    launcher = os.path.join(os.path.dirname(sys.executable), "_actioncache_launch.py")
    for name in (*HIT_PATH_MODULES, *(["_actioncache_launch"] if os.path.isfile(launcher) else [])):
        if name == "_actioncache_launch":
            source: str | None = launcher
        else:
            spec = importlib.util.find_spec(name)
            source = spec.origin if spec is not None else None
        if not source or not source.endswith(".py"):
            continue
        try:
            with open(importlib.util.cache_from_source(source), "rb") as compiled:
                header = compiled.read(16)
            info = os.stat(source)
            current = int.from_bytes(header[8:12], "little") == int(info.st_mtime) & 0xFFFFFFFF and \
                int.from_bytes(header[12:16], "little") == info.st_size & 0xFFFFFFFF
        except OSError:
            current = False
        if not current:
            stale.append(name.rsplit(".", 1)[-1])
    if stale:
        _line(NOTE, f"compiled: {', '.join(stale)} not compiled (or changed since): every exec hit compiles them, "
                    f"~3x its cost; run: {sys.executable} -m compileall -q {os.path.dirname(os.path.dirname(__file__))}"
                    + (f" {launcher}" if "_actioncache_launch" in stale else ""))
    else:
        _line(OK, "compiled: the exec hit path's modules are compiled")


def main(argv: list[str] | None = None) -> int:
    from .._usage import HelpfulParser

    parser = HelpfulParser(prog="actioncache doctor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", metavar="URL", help="the store to check (default: the one exec would use)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    policy_ok, config = _policy_check()
    if config is None:
        _line(BAD, "FAIL: fix the settings above")
        return 1
    store_ok = _store_check(args.store, config)
    # The round trip runs in a folder of its own, where no config is found: it is given the store the
    # check above opened, not left to fall back to the default one.
    trip_ok = store_ok and _round_trip(config.store_for(args.store))
    _compiled_check()
    if policy_ok and store_ok and trip_ok:
        print("SUCCESS: the cache is working")
        return 0
    failed = [name for name, ok in (("policy", policy_ok), ("store", store_ok), ("round trip", trip_ok)) if not ok]
    print(f"FAIL: the cache is not working here ({', '.join(failed)}); see the lines above")
    return 1
