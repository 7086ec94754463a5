"""The exec hit path: interpreter start-up, one store read, the read-set check, the replay.

``python -m actioncache exec ...`` and the ``actioncache`` command try this before anything else.
With mode ``off`` (the default) it simply becomes the command (``execvp``). Otherwise it handles
only the plain case (mode ``use`` from the flags, the environment or the config, an enabled scope
other than ``llm_ro``, no ``--stdin``/``--explain``/``--force-fresh``/audit, a ``sqlite:///``
store) and only a hit. A config file is read from the memo the full command left (``configmemo``:
never YAML or TOML here); without a current memo the full command runs. For everything else it
returns None and the full command (``runs.cli``) does the work, with the same keys and the same rules. So it may be incomplete but
never different: it serves a hit exactly when the full path would.

What it imports is the point: ``sys``, ``posix`` (through ``_os``: not ``os``, whose import costs
~6 M instructions), SQLite's C module and ``binascii`` (only when it reads the store), ``_sha256``,
``_json`` and this package's lean modules (no argparse,
json, re, typing, hashlib, ``__future__``, the core or the policy). ``python -X importtime`` shows
it; ``bench/bench_exec.py`` measures it against ``python -c pass`` and
``bench/bench_hit_instructions.py`` counts its instructions.

A hit writes nothing to the store (a hit is a read: a write transaction and the checkpoint when the
last connection closes cost more than the whole start-up). It appends its run-log record to the
store's hit journal instead (``_lean.hit_journal``, in the user cache directory: one line,
``O_APPEND``), which ``stats --since`` and ``loop-stats`` read and the next miss folds into the run log.
"""

import sys
from _stat import S_ISREG  # builtin, loaded by the launcher

# CONFIG_NAMES: the names policy.find_config tries (a test pins them). The helpers here, not in
# the functions that use them: a ``from`` import of a plain module runs, and fails, a look-up of
# its ``__path__`` each time it is executed (two AttributeErrors made and cleared), which the
# import statements in a hit's functions cost it ~0.1 M instructions (0.11 M llm_ro, 0.06 M cat).
from .._lean import (
    CHEAP_TTL_S,
    CONFIG_NAMES,
    append_record,
    default_signals,
    hit_journal,
    iso_utc,
    output_problem,
    own_directory,
    process_ms,
    read_to_end,
    select_one,
    sha256,
    store_sidecar,
    user_cache_dir,
    which,
    write_whole,
)

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    from typing import Any
else:  # os without importing it (``_os``: ~6 M instructions a hit)
    from .._os import os

DEFAULT_SCOPES = ("verify", "read")
LLM_RO_PHASES = ("REPORT", "ANALYZE", "REVIEW")  # policy.LLM_RO_PHASES
HIT_JOURNAL_SUFFIX = "-exec-hits.jsonl"  # runs.log.HIT_JOURNAL_SUFFIX
_VALUE_FLAGS = {"--mode": "mode", "--cache-mode": "mode", "--scope": "scope", "--scopes": "scopes",
                "--cache-scope": "scopes", "--phase": "phase", "--input": "input", "--env": "env", "--store": "store",
                "--max-age-hours": "max_age", "--env-ignore": "env_ignore"}
_BAIL_ENV = ("ACTIONCACHE_CONFIG", "CACHE_SKIP", "ACTIONCACHE_FORCE_FRESH", "CACHE_FORCE_FRESH")


def _env(*names: str) -> str:
    environ = os.environ  # once: each use of os.environ is a call of _os's __getattr__ (~5 k instructions)
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return ""


def _parse(argv: list[str]) -> "dict[str, Any] | None":
    opts: dict[str, Any] = {"input": [], "env": [], "env_ignore": [], "summary": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            opts["command"] = argv[i + 1:]
            return opts if opts["command"] else None
        name, eq, value = arg.partition("=")
        field = _VALUE_FLAGS.get(name)
        if field is not None:
            if not eq:
                i += 1
                if i >= len(argv):
                    return None
                value = argv[i]
            if field in ("input", "env", "env_ignore"):
                opts[field].append(value)
            else:
                opts[field] = value
        elif arg == "--summary":
            opts["summary"] = True
        else:
            return None  # anything else (help, --explain, --stdin, a typo): the full command
        i += 1
    return None




def find_config(start: str) -> str | None:
    """The config file the full command would find from ``start`` (as ``policy.find_config``). Here,
    not in ``configmemo``, which a hit then imports only when there is a config file."""
    here = os.path.realpath(start)
    while True:
        for name in CONFIG_NAMES:
            candidate = os.path.join(here, name)
            if os.path.isfile(candidate):
                return candidate
        if os.path.exists(os.path.join(here, ".git")):
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _config() -> "dict[str, Any] | None":
    """The settings of the config file in effect ({} when there is none); None: leave it to the full command."""
    try:
        path = find_config(os.getcwd())
    except OSError:
        return None  # the working directory was deleted: the full command runs it (uncached) and says why
    if path is None:
        return {}
    from . import configmemo

    memo = configmemo.read(path)
    if memo is None or not memo.get("enabled") or memo.get("ignored") or memo.get("verbose") \
            or not memo.get("run_log") or memo.get("audit_rate"):
        return None  # the full command has something to say (the kill switch, a warning, a summary line)
    return memo


def _non_cacheable(patterns: list[str], command: list[str]) -> str | None:
    """Why ``command`` is non-cacheable (``naming``: ``git_push`` is ``git push``), in the full
    command's words; "" when it is not; None when a pattern is a glob (the full command matches those)."""
    if not patterns:
        return ""  # as runner.decide: no list, nothing to match (and naming is not imported)
    from .naming import match

    try:
        found = match(patterns, command)
    except ValueError:
        return None
    if found is None:
        return ""
    pattern, shown = found
    return f"{shown} is in non_cacheable_tools" + ("" if shown == pattern else f" (as {pattern!r})")


def _phase_allows(opts: "dict[str, Any]", config: "dict[str, Any]") -> bool:
    """The phase guard of ``policy.Policy.phase_blocks`` for ``llm_ro``: flags, then the environment,
    then the config. False: the full command runs it fresh and says why."""
    phase = (opts.get("phase") or _env("ACTIONCACHE_PHASE", "CACHE_PHASE") or config.get("phase") or "").strip()
    listed = _env("ACTIONCACHE_LLM_RO_PHASES", "CACHE_LLM_RO_PHASES")
    if listed:
        allowed = {p.strip().upper() for p in listed.split(",") if p.strip()}
    else:
        configured = config.get("llm_ro_phases")
        allowed = set(configured) if isinstance(configured, list) else set(LLM_RO_PHASES)
    return bool(phase) and phase.upper() in allowed


def _store_path(flag: str | None, configured: str | None = None) -> str | None:
    url = flag or _env("ACTIONCACHE_URL") or configured
    if not url:
        if sys.platform != "linux":
            return None
        return os.path.join(user_cache_dir(), "actioncache.db")  # config.default_store_url
    if not url.startswith("sqlite:///") or "?" in url or "%" in url or "#" in url:  # the store's parser decides those
        return None
    return "/" + url[len("sqlite:///"):].lstrip("/")


def try_hit(argv: list[str]) -> int | None:
    """Replay a hit and return its exit code; None when this is not a plain hit."""
    from .keys import under_trace

    if under_trace():
        # Inside an outer exec's trace, before the config memo, the store or anything beside it is
        # touched: the full command runs the command through, and the outer trace, which must see
        # none of the store's files (a command that looks at them is not cached), sees none.
        return None
    opts = _parse(argv)
    if opts is None or _env(*_BAIL_ENV):
        return None
    if _env("ACTIONCACHE_AUDIT_RATE", "CACHE_AUDIT_RATE") not in ("", "0", "0.0"):
        return None
    config = _config()
    if config is None:
        return None
    mode = (opts.get("mode") or _env("ACTIONCACHE_MODE", "CACHE_MODE") or config.get("mode") or "").lower()
    scopes_text = opts.get("scopes") or _env("ACTIONCACHE_SCOPE", "CACHE_SCOPE")
    scopes = [s.strip().lower() for s in scopes_text.split(",") if s.strip()] if scopes_text else \
        config.get("scopes") or DEFAULT_SCOPES
    scope = opts.get("scope", "verify").strip().lower()
    if "," in scope or not all(s.replace("_", "").replace("-", "").isalnum() for s in (scope, *scopes)):
        return None  # the full path names the bad scope
    if mode in ("", "off") and not opts["summary"]:
        _run_directly(opts["command"])  # mode off: the command, as if typed (returns only if it cannot start)
        return None
    enabled = scope in scopes
    if mode != "use" or enabled and scope == "llm_ro" and not _phase_allows(opts, config):
        return None
    listed = _non_cacheable(config.get("non_cacheable") or [], opts["command"]) if enabled else \
        f"scope {scope!r} is not enabled"
    if listed is None:
        return None
    try:
        max_age = float(opts["max_age"]) if "max_age" in opts else float(config.get("max_age_hours") or 168.0)
    except ValueError:
        return None
    if not max_age > 0:
        return None
    path = _store_path(opts.get("store"), config.get("store"))
    if path is None or not os.path.isfile(path):
        return None
    if listed:  # a non-cacheable command, or a scope that is not enabled: it just runs
        _let_through(opts, scope, path, listed)
        return None  # (returns only when the command could not be started: the full command says why)
    return _lookup(opts, scope, path, max_age, config)


def _lookup(opts: "dict[str, Any]", scope: str, path: str, max_age: float, config: "dict[str, Any]") -> int | None:
    import time

    from . import keys, manifest

    command = opts["command"]
    tool = os.path.basename(command[0]) or command[0]
    _, descriptors, problem = keys.describe_fds(keys.inherited_fds(), command)
    if descriptors or problem or output_problem():
        return None  # the full command keys inherited files or says why it cannot cache
    stdin = keys.observe_stdin()  # kept for the full command when this is not a hit
    if stdin.problem:
        return None
    traced = _env("ACTIONCACHE_TRACE").lower() not in ("off", "0", "no", "false") and which("strace") is not None
    if not traced:
        return None  # the full path says once that read-sets are off
    try:
        parts = keys.key_parts(command, scope=scope, inputs=opts["input"], env_names=opts["env"], traced=True,
                          stdin_data=stdin.data, stdin_file=stdin.file, env_ignore=opts["env_ignore"],
                          check_git_sha=config.get("check_git_sha") is not False, secret=keys.env_secret(path),
                          one_stream=keys.one_output_stream())
    except OSError:
        return None
    if config.get("digest"):
        parts["config"] = config["digest"]  # runner.ExecOptions.config_digest: the same file, the same bytes
    key = keys.run_key(tool, parts)
    if stdin.data is None and _cheap(path, key, tool, scope, opts):  # (stdin read: the full command feeds it)
        return None  # the command could not be started: the full command says why
    now = time.time()
    signature = _store_signature(path)
    row = _memo_row(path, key, signature)
    if row is None:
        row = _select(path, key, signature)
    found = None
    if row is not None and (row[1] is None or row[1] > now):
        try:
            found, _ = manifest.choose(row[0], now, max_age)
        except (ValueError, KeyError, TypeError):
            return None
    record: dict[str, Any] = {"tool": tool, "scope": scope, "key": key, "lookup": True, "phase_blocked": False,
                              "fast": True, "family": keys.family_key(tool, parts)}
    if found is None:
        if stdin.data is None:
            _churning(path, record, command, opts["summary"])  # a miss of a churning command becomes the command here
        return None  # the full command records the miss (or says why the command could not start)
    if found.get("measured") is False:
        return None  # a new entry's first lookup runs the command, untraced and timed (runner._measure)
    try:
        output = manifest.output(found)
    except (ValueError, KeyError, TypeError):
        return None
    keys.replay_stdin_offset(output["stdin_offset"])  # a file on stdin: where the recorded run left it
    written = _write(1, output["stdout"]) & _write(2, output["stderr"])
    if not written and not output["exit_code"]:
        output = {**output, "exit_code": 1}  # a replay whose write failed exits as the command would
    hit_ms = process_ms()
    record.update(hit=True, outcome="hit", exit_code=output["exit_code"], fresh_ms=output["fresh_ms"])
    if hit_ms is not None:
        record.update(hit_ms=round(hit_ms, 3), saved_ms=round(output["fresh_ms"] - hit_ms, 3),
                      cpu_ms=round(time.process_time() * 1000.0, 3))  # CPU since the fork (cost.hit_cost_now)
    _journal_hit(path, now, record)
    if opts["summary"]:
        saved = float(record.get("saved_ms") or 0.0)
        tail = output["stderr"] or (output["stdout"] if keys.one_output_stream() else b"")
        lead = b"\n" if tail and not tail.endswith(b"\n") else b""  # on a line of its own (runner.say)
        _write(2, lead + f"actioncache exec: {tool}: hit; hits 1, misses 0, time saved {saved / 1000:.2f}s\n".encode())
    # Done: everything went out through os.write, nothing is buffered, nothing waits for exit
    # handlers. Leaving now skips the interpreter's teardown, a cost the hit's timing cannot see.
    os._exit(int(output["exit_code"]))


def _select(path: str, key: str, before: "tuple[str, bool] | None") -> "tuple[list[dict[str, Any]], float | None] | None":
    """The entry's candidates (``manifest.decode``) and expiry from the store (None: no entry, or
    the store cannot be read), and a memo of them for the next hit when the store's files are
    settled (``_memo_write``). ``before``: the store's signature, taken before the query."""
    from . import manifest

    row = select_one(path, "SELECT value, expires_at FROM entries WHERE key = ?", ("cache:" + key,))
    if row is None or not isinstance(row[0], bytes) or not (row[1] is None or isinstance(row[1], (int, float))):
        return None
    found = (manifest.decode(bytes(row[0])), None if row[1] is None else float(row[1]))
    if before is not None and before[1]:
        after = _store_signature(path)
        if after is not None and after[0] == before[0]:  # nothing was written while the query ran
            _memo_write(path, key, before[0], found)
    return found


# --- the entry memo: a hit without loading SQLite ------------------------------------------------
#
# Loading SQLite (``_sqlite3``, libsqlite3 and its relocations) and one query cost a hit ~3.7 M
# instructions, 9% of ``python -c pass``. A hit that read an entry from the store leaves a copy of
# it in the store's ``memo`` folder (``_lean.store_sidecar``: in the user cache directory, not beside the
# store), ``{signature's hash}/{key's hash}``, with the full stat signatures (type and permissions, size,
# mtime, ctime, inode, device; or absent) of the store's files: the SQLite file, its ``-wal`` and its
# ``-journal``, which hold every committed byte. The next hit uses the copy only while the
# signatures are still exactly those: any write to the store (a miss storing an entry, another
# process, a WAL checkpoint or reset, a vacuum, a replaced file) moves the written file's mtime and
# ctime, or its inode, and a ctime cannot be set back (the -wal's mtime is used instead of its
# ctime, see ``_store_signature``: every write moves it, only a deliberate utime could set it back). A signature is recorded only if it is not racy: taken
# before the query and again after it, unchanged, with every ctime older than the timestamp
# granularity before the first (as ``manifest._big_file``): a write within the same tick as a
# recorded ctime could leave it unchanged. Otherwise no memo is written and the next hit asks
# SQLite again. The memo holds the key (a file name is only its hash) and the row's expiry, which
# is judged on every hit as the query judges it; the read-set check and everything after it are
# the same for a memo and a query.
# The memo holds the candidates as ``manifest.decode`` returned them (so they passed its
# ``well_formed``), their outputs decoded to bytes and their stat looks as numbers (``memoform.memo_form``), in ``marshal``'s
# format: loading them costs a fraction of decoding the JSON and checking its shape again (~1.2 M
# instructions for a read-set of 325 records), and a hit from a memo loads neither SQLite nor
# ``binascii``. marshal's format belongs to one Python version: the magic line names it, and a memo
# another Python wrote is not read. A length and a SHA-256 of the payload (the hash the key already
# loaded; a CRC-32 loaded ``binascii``): a memo cut short or damaged is not read either.
# That hash is checked once per memo, not on every hit: a hit that checked it, when the memo's
# ctime and mtime were older than the timestamp granularity before it was read (the rule of the
# store's signature above, and of ``manifest._big_file``), leaves the memo's full stat signature
# (type and permissions, size, mtime, ctime, inode, device) beside it (``VOUCH_SUFFIX``, a file of
# this user's like the memo), and a later hit whose memo has exactly that signature does not hash
# it again: any write to the memo since (a damaged or rewritten one, a replaced file) moved its
# ctime or its inode. Hashing the payload cost a hit of the bench's ``llm_ro`` script (a 26 kB memo)
# 1.2 M instructions, ``cat`` 0.26 M; reading the vouch costs ~0.01 M.
# Format 6: the read-set as ``memoform.plan`` keeps it (one comparison per path, the records
# themselves in marshal's format inside, loaded only when a path differs).
MEMO_MAGIC = b"actioncache-entry-memo 6 %x %d\n" % (sys.hexversion, __import__("marshal").version)
VOUCH_SUFFIX = ".ok"  # beside a memo: its full stat signature, once its hash was checked while it was settled
_STORE_FILES = ("", "-wal", "-journal")


def _store_signature(path: str) -> "tuple[str, bool] | None":
    """The stat signatures of the store's files, and whether they may be trusted (not racy); None
    when one cannot be taken (an error other than absence)."""
    import time  # builtin

    from . import manifest

    started = time.time_ns()
    parts = []
    settled = True
    for suffix in _STORE_FILES:
        try:
            info = os.lstat(path + suffix)
        except FileNotFoundError:
            parts.append("-")
            continue
        except OSError:
            return None
        if not suffix and (not S_ISREG(info.st_mode) or info.st_nlink != 1):
            # A symbolic link: SQLite finds the -wal beside the file it points to; another hard link:
            # another name's -wal. Either could change what the store holds unseen here.
            return None
        # The -wal by its mtime, not its ctime: SQLite running as root fchowns the -wal to the
        # store's owner whenever it opens it, a read too, which moves its ctime and not its mtime.
        changed = info.st_mtime_ns if suffix == "-wal" else info.st_ctime_ns
        if changed >= started - manifest.granularity(info) or info.st_mtime_ns >= started:
            settled = False
        parts.append(f"{info.st_mode:o}:{info.st_size}:{info.st_mtime_ns}:{changed}:{info.st_ino}:{info.st_dev}")
    return " ".join(parts), settled


def _signature_directory(signature: str) -> str:
    """The directory of the store's ``memo`` folder the memos made under one signature of the store live in.
    Every write to the store changes its signature, so a memo written under another one can never
    be used again; ``_memo_write`` removes those directories (the memos stay as many as the keys
    hit since the store last changed). The hash only groups files: each memo still holds the full
    signature it is checked by."""
    return str(sha256(signature.encode()).hexdigest()[:8])


def _memo_row(path: str, key: str, now: "tuple[str, bool] | None") -> "tuple[list[dict[str, Any]], float | None] | None":
    """The entry's candidates and expiry from its memo, when the store's files are exactly as they were
    when it was written; None (ask SQLite) otherwise, or when there is no memo or it is not whole.

    A memo is read only if this user wrote it (a regular file of this user's, one link, writable by
    no one else): marshal's format is as trusted as a ``__pycache__`` file, by who could write it."""
    if now is None:  # ``now``: the store's signature, taken just before
        return None
    root = own_directory(store_sidecar(path, "memo"))
    if root is None:
        return None
    try:
        inner = os.open(_signature_directory(now[0]), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
    except OSError:
        return None
    finally:
        os.close(root)
    try:
        return _memo_read(inner, key.rsplit(":", 1)[-1], key, now[0])
    finally:
        os.close(inner)


def _own_file(fd: int) -> "os.stat_result | None":
    """``fd``'s stat when it is a regular file of this user's, with one link, writable by no one else."""
    info = os.fstat(fd)
    if not S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_nlink != 1 or info.st_mode & 0o022:
        return None
    return info


def _read_own(directory: int, name: str) -> "tuple[bytes, os.stat_result] | None":
    """The content and stat of ``name`` in ``directory`` when it is this user's own file (``_own_file``),
    opened without following a symbolic link; None otherwise."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=directory)
    except OSError:
        return None
    try:
        info = _own_file(fd)
        return None if info is None else (read_to_end(fd), info)
    except OSError:
        return None
    finally:
        os.close(fd)


def _memo_read(directory: int, name: str, key: str, signature: str) -> "tuple[list[dict[str, Any]], float | None] | None":
    import time  # builtin

    started = time.time_ns()  # before the memo is read: a vouch is written only if it was settled by then
    found = _read_own(directory, name)
    if found is None:
        return None
    data, info = found
    if not data.startswith(MEMO_MAGIC):
        return None
    header, sep, value = data[len(MEMO_MAGIC):].partition(b"\n\n")
    lines = header.decode("utf-8", "surrogateescape").split("\n")
    if not sep or len(lines) != 5 or lines[0] != key or str(len(value)) != lines[3]:
        return None
    if signature != lines[1]:
        return None  # the store changed since: SQLite answers
    seen = f"{info.st_mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:{info.st_dev}"
    vouch = _read_own(directory, name + VOUCH_SUFFIX)
    vouched = vouch is not None and vouch[0] == seen.encode()
    from marshal import loads

    try:
        if not vouched and sha256(value).hexdigest() != lines[4]:
            return None
        expires = None if lines[2] == "-" else float(lines[2])
        candidates = loads(value)
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(candidates, list):
        return None
    if not vouched:
        from .manifest import granularity

        if info.st_ctime_ns < started - granularity(info) and info.st_mtime_ns < started:
            write_whole(directory, name + VOUCH_SUFFIX, seen.encode())  # best effort: else the next hit hashes it
    return candidates, expires


def _memo_write(path: str, key: str, signature: str, row: "tuple[list[dict[str, Any]], float | None]") -> None:
    """Best effort (a memo that cannot be written is only a slower next hit): one file, written
    whole under a temporary name and renamed, so a reader sees the old memo, the new one or none;
    the directories of other signatures (memos that can never be used again) are removed."""
    directory = _signature_directory(signature)
    from marshal import dumps

    from .memoform import memo_form

    candidates, expires = row
    try:
        value = dumps(memo_form(candidates))
    except ValueError:  # (decoded JSON always marshals; well_formed checked the base64)
        return
    data = b"%s%s\n%s\n%s\n%d\n%s\n\n%s" % (
        MEMO_MAGIC, key.encode("utf-8", "surrogateescape"), signature.encode(),
        b"-" if expires is None else repr(expires).encode(), len(value), sha256(value).hexdigest().encode(), value)
    root_fd = own_directory(store_sidecar(path, "memo"), create=True)  # never through a symlink planted in the memos' place
    if root_fd is None:
        return
    try:
        _remove_other_signatures(root_fd, directory)
        try:
            os.mkdir(directory, 0o700, dir_fd=root_fd)
        except FileExistsError:
            pass
        inner = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root_fd)
    except OSError:
        return
    finally:
        os.close(root_fd)
    try:
        write_whole(inner, key.rsplit(":", 1)[-1], data)
    finally:
        os.close(inner)


def _remove_other_signatures(root: int, keep: str) -> None:
    """Remove the directories in ``root`` (a descriptor: ``own_directory``) but ``keep`` (memos of
    signatures the store no longer has), each opened without following a symbolic link (a link is
    removed itself, never followed); a memo directory another writer is filling at the same moment
    loses its memos, which costs that writer's next hit a query, nothing else."""
    for name in os.listdir(root):
        if name == keep:
            continue
        try:
            try:
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
            except OSError:  # a link or a file: removed itself
                os.unlink(name, dir_fd=root)
                continue
            try:
                for entry in os.listdir(inner):
                    os.unlink(entry, dir_fd=inner)
            finally:
                os.close(inner)
            os.rmdir(name, dir_fd=root)
        except OSError:
            pass


def _verdict_left(path: str, name: str) -> float:
    """Seconds the verdict file of ``name`` (a key's cheap verdict, a family's churn verdict: its
    hash, in the store's ``cheap`` folder) has left to live: ``CHEAP_TTL_S`` from its mtime; <= 0 when
    there is none or it expired."""
    import time

    try:
        return os.stat(store_sidecar(path, "cheap") + "/" + name.rsplit(":", 1)[-1]).st_mtime + CHEAP_TTL_S - time.time()
    except OSError:
        return 0.0


def _cheap(path: str, key: str, tool: str, scope: str, opts: "dict[str, Any]") -> bool:
    """A command whose fresh run is cheaper than a hit (``cost``: a verdict file beside the store,
    younger than a day): become the command, as mode ``off`` does. Returns only when it is not
    cheap (False) or cannot be started (True)."""
    if _verdict_left(path, key) <= 0:
        return False
    from .direct import note, summary_line

    if opts["summary"]:
        _write(2, (summary_line(tool) + "\n").encode())
    record: dict[str, Any] = {"tool": tool, "scope": scope, "key": key, "lookup": True, "hit": False,
                              "phase_blocked": False, "outcome": "cheap", "fast": True}
    note(opts, scope, path, key, record)  # the next identical call runs it from the command's shell part
    _become(opts["command"], path, record)
    return True


def _churning(path: str, record: "dict[str, Any]", command: list[str], opts_summary: bool) -> bool:
    """A miss of a command whose family is churning (``ledger``: a verdict file named by the
    family's hash, as a cheap verdict is named by its key's): become the command, untraced and not
    recorded. Returns only when there is no live verdict (False) or the command cannot be started
    (True). ``$ACTIONCACHE_CHEAP_MS`` set: no verdict counts (``ledger.churning``)."""
    if _env("ACTIONCACHE_CHEAP_MS"):
        return False
    left = _verdict_left(path, record["family"])
    if left <= 0:
        return False
    if opts_summary:
        _write(2, f"actioncache exec: {record['tool']}: miss, not recorded (churning: its last misses and failures cost "
                  f"more than its hits saved; recorded again in {left:.0f} s); hits 0, misses 1, time saved 0.00s\n".encode())
    record.update(hit=False, outcome="unrecorded")  # ledger.UNRECORDED
    _become(command, path, record)
    return True


def _let_through(opts: "dict[str, Any]", scope: str, path: str, reason: str) -> None:
    """A command the config says is never cached (``non_cacheable_tools``) or whose scope is not
    enabled: become it, as mode ``off`` does, after one line in the hit journal (what this process
    cost before the command started: the cache's whole cost of the run). The full command would open
    the store only to count it, which cost a ``git push`` ~0.2 s (the docs promise such a command
    runs without opening the store)."""
    from .direct import note

    tool = os.path.basename(opts["command"][0]) or opts["command"][0]
    summary = f"actioncache exec: {tool}: not cached ({reason}); hits 0, misses 0, time saved 0.0s"
    if opts["summary"]:
        _write(2, (summary + "\n").encode())
    record = {"tool": tool, "scope": scope, "key": None, "lookup": False, "hit": False, "phase_blocked": False,
              "uncacheable": reason, "outcome": "fresh", "fast": True}
    note(opts, scope, path, None, record, summary)  # the next identical call runs it from the command's shell part
    _become(opts["command"], path, record)


def _become(command: list[str], path: str, record: "dict[str, Any]") -> None:
    """Become ``command`` (``execvp``, as mode ``off`` does) after ``record`` goes to the hit journal
    with what this process cost before the command started, the cache's whole cost of the run
    (``cost.settle`` adds the exec's own). Returns only when the command could not be started."""
    import time

    _prepare_exec()  # before the clock is read: what this process costs is all of it up to the exec
    total = process_ms()
    if total is not None:
        record.update(overhead_ms=round(total, 3), cpu_ms=round(time.process_time() * 1000.0, 3))
    _journal_hit(path, time.time(), record)
    _run_directly(command, prepared=True)


def _prepare_exec() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None: that descriptor was closed when we started (>&-)
            stream.flush()
    default_signals()


def _run_directly(command: list[str], prepared: bool = False) -> None:
    """Mode off: become the command (nothing to look up or store). On failure the full path reports."""
    try:
        if not prepared:
            _prepare_exec()
        os.execvp(command[0], command)
    except OSError:
        pass


def _write(fd: int, data: bytes) -> bool:
    """Write all of ``data``; False (said in one line on stderr) when a write failed other than
    with EPIPE (the reader gone, as a pipeline ends), e.g. a full disk."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except BrokenPipeError:
        pass
    except OSError as exc:
        name = "output" if fd == 1 else "error output"
        try:
            os.write(2, f"actioncache exec: cannot write the replayed {name}: {exc.strerror or exc}\n".encode())
        except OSError:
            pass
        return False
    return True


def _journal_hit(path: str, now: float, record: "dict[str, Any]") -> None:
    """One line in the hit journal; best effort, like the run log (it never fails the replay)."""
    record["at"] = iso_utc(now)
    append_record(hit_journal(path), record)
