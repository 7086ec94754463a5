"""Run records: what lets the next ``actioncache run`` answer without loading the engine.

The full command watches a run (:class:`Watch`) and, when the run is *decided by what it read*,
stores its stdout and stderr bytes in the run index under its lookup key
(:mod:`actioncache.agents.runhit`), with the files it read and the store rows it served. A run is
decided by what it read when, and only when:

- every node it executed is a ``cache.wrap`` that hit (the action did not run; its result is the
  stored row, which the hit path checks is unchanged) or a ``run:`` block that can only compute
  (:func:`pure_block_problem`: no imports, no names but a few pure builtins and its arguments, no
  underscore attributes, no sets, which iterate in a per-process order);
- the agent has no conditions (``goto: if``, ``edges: when``) and its ``with:`` templates are
  plain paths into ``state``/``variables`` (:func:`template_problem`): Jinja's ``random`` or
  ``lipsum`` would change a key from one process to the next;
- a ``cache.wrap`` names no ``scope`` (a policy decides those) and no ``skip_cache`` or
  ``cache_enabled``; a wrapped action declares no key context of its own, unless actioncache ships it (its context
  reads only settings and the environment, both in the lookup key);
- the process opened no file for writing and did nothing but read files, import, compile and use
  SQLite (a Python audit hook sees every ``open`` and every other event; an event not in
  :data:`QUIET_EVENTS` spoils the record), and the files it read outside Python and actioncache
  themselves are in the record with their SHA-256;
- every node's result is plain JSON data and the output shows no object address (``at 0x...``);
- the store is a SQLite file.

Anything else writes no record (and drops the one the lookup key had). The rule is a whitelist:
what it does not know, it does not replay.
"""

from __future__ import annotations

import dis
import importlib.util
import io
import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .._lean import keeping_books
from .._time import iso_utc
from ..stores.base import FRESH_UNTIL
from ..stores.sqlite import SQLiteStore
from . import runhit

if TYPE_CHECKING:
    from .engine import Agent

# Names a replayable run: block may read besides its own locals and arguments: builtins whose
# result is a function of their arguments.
PURE_BUILTINS = frozenset({
    "print", "len", "str", "int", "float", "bool", "dict", "list", "tuple", "sorted", "min", "max", "sum", "any",
    "all", "enumerate", "range", "zip", "isinstance", "round", "abs", "reversed", "repr", "map", "filter", "iter",
    "next", "divmod", "pow", "chr", "ord", "Exception", "ValueError", "KeyError", "TypeError", "IndexError",
    "AttributeError", "StopIteration",
})
# Attributes that reach beyond the data: str.format can read attributes of its arguments.
_BLOCKED_ATTRIBUTES = frozenset({"format", "format_map"})
_BLOCKED_OPS = frozenset({"IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR", "BUILD_SET", "SET_ADD", "SET_UPDATE",
                          "STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME", "DELETE_NAME"})
_NAME_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_ATTRIBUTE_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR", "LOAD_SUPER_ATTR"})
# Audit events of a run that reads: everything else (a process, a socket, a listing, a removal...)
# means the run did something a replay would not.
QUIET_EVENTS = frozenset({"open", "import", "compile", "exec", "marshal.loads", "sqlite3.connect",
                          "sqlite3.connect/handle", "os.listdir", "os.scandir", "sys._getframe",
                          "object.__getattr__", "object.__setattr__", "code.__new__", "function.__new__", "builtins.id"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_TEMPLATE_ROOTS = ("state", "variables")
_DATA_TYPES = (dict, list, str, int, float, bool, type(None), tuple)


def pure_block_problem(code: Any) -> str | None:
    """Why a compiled ``run:`` block (``def __run__(state, variables)``) may not be pure; None if
    it can only compute on its arguments."""
    function = next((c for c in code.co_consts if isinstance(c, CodeType) and c.co_name == "__run__"), None)
    if function is None:
        return "no __run__ function"
    return _code_problem(function)


def _code_problem(code: CodeType) -> str | None:
    for const in code.co_consts:
        if isinstance(const, frozenset):
            return "a set constant"
        if isinstance(const, CodeType):
            problem = _code_problem(const)
            if problem:
                return problem
    for ins in dis.get_instructions(code):
        if ins.opname in _BLOCKED_OPS:
            return f"{ins.opname} {ins.argval!r}"
        if ins.opname in _NAME_OPS and ins.argval not in PURE_BUILTINS:
            return f"the name {ins.argval!r}"
        if ins.opname in _ATTRIBUTE_OPS:
            name = str(ins.argval)
            if name.startswith("_") or name in _BLOCKED_ATTRIBUTES:
                return f"the attribute {name!r}"
    return None


def action_modules(agent: Agent) -> list[Any] | str:
    """The modules outside actioncache whose code loaded the agent's actions (``imports:``, plug-in
    entry points, actions passed in): a replay skips their top level and ``register_actions``.
    A string when one cannot be found (then no record)."""
    found: dict[str, Any] = {}
    for fn in agent.registry.values():
        name = str(getattr(fn, "__module__", "") or "")
        if name == "actioncache" or name.startswith("actioncache."):
            continue
        module = sys.modules.get(name)
        if module is None:
            return f"an action's module {name or '(unknown)'!r} cannot be found to check"
        found[name] = module
    for entry in agent.spec.imports:
        label = entry if isinstance(entry, str) else entry.get("path", entry.get("package")) \
            if isinstance(entry, Mapping) else None
        if not isinstance(label, str):
            return "an imports: entry cannot be read"
        if isinstance(entry, Mapping) and "package" in entry or isinstance(entry, str) and \
                not (entry.endswith(".py") or "/" in entry):
            module = sys.modules.get(label)
        else:
            path = (agent.spec.base_dir / label).resolve()
            path = path / "__init__.py" if path.is_dir() else path
            module = next((m for m in list(sys.modules.values())
                           if getattr(m, "__file__", None) and Path(str(m.__file__)).resolve() == path), None)
        if module is None:
            return f"the imported module {label!r} cannot be found to check"
        if not str(module.__name__).startswith("actioncache."):
            found[module.__name__] = module
    return list(found.values())


def import_problem(module: Any) -> str | None:
    """Why the code a replay would skip in an action module (its top level, its class bodies and
    its ``register_actions``) might decide something another way in another process; None when it
    only imports the standard library or actioncache, defines and assigns. The rule allows no
    branch, no loop and no call there: a module that declares a key context only when a file is
    non-empty or after some hour, or calls a helper that might, writes no record."""
    try:
        code = module.__spec__.loader.get_code(module.__spec__.name)
    except Exception:  # noqa: BLE001 - no code to read (a C extension, a namespace package): cannot tell
        code = None
    if not isinstance(code, CodeType):
        return f"module {getattr(module, '__name__', module)!r} has no Python code to check"
    problem = _declarative_problem(code, module_level=True)
    register = getattr(module, "register_actions", None)
    if problem is None and register is not None:
        register_code = getattr(register, "__code__", None)
        problem = _declarative_problem(register_code, module_level=False) if isinstance(register_code, CodeType) \
            else "register_actions is not a Python function"
    return None if problem is None else f"module {module.__name__!r}: {problem}"


# What a declarative module runs at import: no jump (no if, loop, try, and/or, conditional
# expression, comprehension) and no call, so the same bytes decide the same way in every process.
_JUMP_PREFIXES = ("JUMP", "POP_JUMP", "FOR_ITER", "SEND", "SETUP_", "BEFORE_WITH", "CALL", "PRECALL",
                  "YIELD", "GET_ITER", "GET_AWAITABLE", "RAISE", "RERAISE", "PUSH_EXC_INFO", "CHECK_EXC")


def _declarative_problem(code: CodeType, module_level: bool) -> str | None:
    for ins in dis.get_instructions(code):
        if ins.opname.startswith(_JUMP_PREFIXES):
            where = "at import" if module_level else "in register_actions"
            return f"{ins.opname} {where} (line {ins.positions.lineno if ins.positions else '?'})"
        if ins.opname == "LOAD_BUILD_CLASS":
            return "a class defined at import (its body runs then)"
        if ins.opname == "IMPORT_NAME":
            top = str(ins.argval).partition(".")[0]
            if top not in sys.stdlib_module_names and top not in ("actioncache", "__future__"):
                return f"it imports {ins.argval!r}, whose own top level a replay would skip"
    for const in code.co_consts:
        if isinstance(const, frozenset):
            return "a set constant"
    return None


def _is_plain_path(expr: str) -> bool:
    parts = expr.strip().split(".")
    if parts[0] not in _PATH_TEMPLATE_ROOTS or len(parts) < 2:
        return False
    for part in parts[1:]:
        if not part.isidentifier() or part.startswith("_") or any(hasattr(t, part) for t in _DATA_TYPES):
            return False  # an attribute of the data (state.get) renders a bound method, address and all
    return True


def template_problem(value: Any) -> str | None:
    """Why a ``with:`` value may render differently in another process; None for literal values
    and strings whose only templates are ``{{ state.a.b }}`` / ``{{ variables.x }}`` paths."""
    if isinstance(value, Mapping):
        for item in value.values():
            problem = template_problem(item)
            if problem:
                return problem
        return None
    if isinstance(value, list):
        for item in value:
            problem = template_problem(item)
            if problem:
                return problem
        return None
    if not isinstance(value, str):
        return None
    if "{%" in value or "{#" in value:
        return "a Jinja statement or comment"
    rest = value
    while "{{" in rest:
        start = rest.index("{{")
        end = rest.find("}}", start)
        if end < 0 or not _is_plain_path(rest[start + 2:end]):
            return f"the template {value!r}"
        rest = rest[end + 2:]
    if "}}" in rest:
        return f"the template {value!r}"
    return None


class _Tee(io.TextIOBase):
    """A text stream that writes through to ``target`` and keeps a copy."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return int(self.target.write(text))

    def flush(self) -> None:
        self.target.flush()

    @property
    def encoding(self) -> Any:  # type: ignore[override]
        return getattr(self.target, "encoding", None)

    @property
    def errors(self) -> Any:  # type: ignore[override]
        return getattr(self.target, "errors", None)

    def fileno(self) -> int:
        return int(self.target.fileno())

    def isatty(self) -> bool:
        return bool(self.target.isatty())

    def text(self) -> str:
        return "".join(self.parts)


_active: Watch | None = None
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    watch = _active
    if watch is not None and not watch.in_hook and not keeping_books():  # (not the store's own bookkeeping)
        watch.in_hook = True
        try:
            watch.event(event, args)
        finally:
            watch.in_hook = False


class Watch:
    """Watches one ``actioncache run`` (files read, other events, stdout and stderr) and decides
    at its end whether to record it. Use as a context manager around loading and running."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = list(argv)
        self.lookup = runhit.lookup_key(self.argv)
        self.index = runhit.index_path()
        self.files: dict[str, None] = {}
        self.listed: dict[str, None] = {}
        self.probed: dict[tuple[str, bool], str] = {}
        self.problem: str | None = None
        self.in_hook = False
        self.stdout: _Tee | None = None
        self.stderr: _Tee | None = None
        self._saved: tuple[Any, Any] | None = None
        self._ignored = tuple(dict.fromkeys(os.path.realpath(p) + os.sep for p in (
            sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).resolve().parents[1]))))

    @property
    def enabled(self) -> bool:
        return self.lookup is not None and self.index is not None

    def __enter__(self) -> Watch:
        global _active, _hooked
        if not self.enabled:
            return self
        self._saved = (sys.stdout, sys.stderr)
        self.stdout, self.stderr = _Tee(sys.stdout), _Tee(sys.stderr)
        sys.stdout, sys.stderr = self.stdout, self.stderr
        self.counters: dict[str, float] = {}
        self._add_counters = SQLiteStore.add_counters
        watch = self

        def add_counters(store: SQLiteStore, deltas: Mapping[str, float]) -> None:
            watch._add_counters(store, deltas)  # written first: only what reached the store is replayed
            for name, delta in deltas.items():
                watch.counters[name] = watch.counters.get(name, 0.0) + float(delta)

        SQLiteStore.add_counters = add_counters  # type: ignore[method-assign,assignment]  # the counts a hit adds
        self._stat = os.stat
        os.stat = self._probe  # probes (exists, is_file) raise no audit event
        if not _hooked:
            sys.addaudithook(_audit)
            _hooked = True
        _active = self
        return self

    def __exit__(self, *exc: Any) -> None:
        global _active
        if _active is self:
            _active = None
        if os.stat == self._probe:
            os.stat = self._stat
        if self._saved is not None:
            SQLiteStore.add_counters = self._add_counters  # type: ignore[method-assign]
        if exc and exc[0] is not None and self.enabled:
            self._drop()  # a run that failed now must not be answered by an older success
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved
            self._saved = None

    def _probe(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        """``os.stat`` while watching: the answer is part of what the run read (not the cache's own
        look at its store's directory, ``_lean.store_opening``)."""
        if keeping_books():
            return self._stat(path, *args, **kwargs)
        try:
            result = self._stat(path, *args, **kwargs)
        except OSError as exc:
            self._note_probe(path, kwargs, None if isinstance(exc, (FileNotFoundError, NotADirectoryError)) else exc)
            raise
        self._note_probe(path, kwargs, result)
        return result

    def _note_probe(self, path: Any, kwargs: Mapping[str, Any], result: Any) -> None:
        if _active is not self or self.in_hook or isinstance(path, int) or kwargs.get("dir_fd") is not None:
            return
        where = os.path.abspath(os.fsdecode(path))
        if (where + os.sep).startswith(self._ignored):
            return
        if isinstance(result, OSError):
            self.problem = self.problem or f"it could not stat {where!r}"
            return
        kind = runhit.stat_kind(result, bool(kwargs.get("follow_symlinks", True)))
        self.probed.setdefault((where, bool(kwargs.get("follow_symlinks", True))), kind)

    def event(self, event: str, args: tuple[Any, ...]) -> None:
        if self.problem is not None:
            return
        if event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            if isinstance(path, int):
                return  # a descriptor opened before
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                    (mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS):
                self.problem = f"it opened {path!r} for writing"
                return
            where = os.path.abspath(os.fsdecode(path))
            real = os.path.realpath(where)
            if not real.startswith(self._ignored):
                self.files[where] = None
                if real.endswith(".pyc"):  # the import system trusts a .pyc while its source's stamp
                    try:  # matches; the hit path checks the source itself
                        self.files[os.path.abspath(importlib.util.source_from_cache(where))] = None
                    except ValueError:
                        self.problem = f"it loaded {real!r} without its source"
        elif event == "os.mkdir":
            if not (args and args[0] is not None and os.path.isdir(os.fsdecode(args[0]))):
                self.problem = f"it made the directory {args[0]!r}"  # an existing one: nothing made
        elif event in ("os.listdir", "os.scandir"):
            where = os.path.realpath(os.fsdecode(args[0])) if args and args[0] is not None else ""
            if not (where + os.sep).startswith(self._ignored):
                self.listed[where] = None  # what an import found (or not) there: the hit path lists it again
        elif event not in QUIET_EVENTS:
            self.problem = f"it did {event!r}"

    # --- the end of a run -------------------------------------------------------------------

    def finish(self, agent: Agent, events: Iterable[Mapping[str, Any]], stdout_text: str) -> str | None:
        """Record the run (its final stdout is ``stdout_text``) or drop the old record; returns why
        it was not recorded (None when it was). Never raises: a record is an optimisation."""
        if not self.enabled:
            return "not a command the hit path answers"
        global _active
        _active = None
        try:
            events = list(events)
            problem = self.problem or self._problem(agent, events, stdout_text)
            if problem is None:
                served = {str(e["result"]["_cache_key"]): e["result"] for e in events
                          if agent.spec.node(e["node"]).run_code is None}
                problem = self._write(agent, served, stdout_text)
            if problem is not None:
                self._drop()
            return problem
        except Exception as exc:  # noqa: BLE001 - never fail a run over its record
            self._drop()
            return f"{type(exc).__name__}: {exc}"

    def _problem(self, agent: Agent, events: list[Mapping[str, Any]], stdout_text: str) -> str | None:
        spec = agent.spec
        if any(edge.when is not None for edge in spec.edges):
            return "an edge has a condition"
        for node in spec.nodes:
            if any(rule.condition is not None for rule in node.goto):
                return f"node {node.name!r} has a goto condition"
        if type(agent.store) is not SQLiteStore:  # exactly: a subclass may keep values beside the rows
            return "the store is not a SQLite file"
        modules = action_modules(agent)
        if isinstance(modules, str):
            return modules
        for module in modules:
            problem = import_problem(module)
            if problem:
                return problem
        for event in events:
            node = spec.node(event["node"])
            try:
                json.dumps(event["result"], allow_nan=False)
            except (TypeError, ValueError):
                return f"node {node.name!r} returned a value that is not plain JSON"
            if node.run_code is not None:
                block = pure_block_problem(node.run_code)
                if block:
                    return f"node {node.name!r}'s run: block uses {block}"
                continue
            if node.uses not in ("cache.wrap", "actioncache.cache.wrap") and \
                    agent.registry.resolve(node.uses or "", node=node.name)[0] != "cache.wrap":
                return f"node {node.name!r} runs {node.uses!r}"
            result = event["result"]
            if not isinstance(result, Mapping) or result.get("_cache_hit") is not True \
                    or not isinstance(result.get("_cache_key"), str):
                return f"node {node.name!r} was not a cache hit"
            if "scope" in node.with_ or "skip_cache" in node.with_ or "cache_enabled" in node.with_:
                return f"node {node.name!r} asks the policy or switches caching"  # decided by more than the row
            action = node.with_.get("action")
            if not isinstance(action, str) or "{" in action:
                return f"node {node.name!r} wraps a templated action"
            fn = agent.registry.resolve(action, node=node.name)[1]
            if getattr(fn, "key_context", None) is not None and \
                    not str(getattr(fn, "__module__", "")).startswith("actioncache."):
                return f"node {node.name!r} wraps an action with its own key context"
            template = template_problem(node.with_)
            if template:
                return f"node {node.name!r}: {template}"
        streams = (self.stdout.text() if self.stdout else "") + stdout_text, self.stderr.text() if self.stderr else ""
        if any(" at 0x" in text for text in streams):
            return "the output shows an object address"
        return None

    def _write(self, agent: Agent, served: Mapping[str, Mapping[str, Any]], stdout_text: str) -> str | None:
        assert self.lookup is not None and self.index is not None
        assert isinstance(agent.store, SQLiteStore)
        store = os.path.realpath(agent.store.path)
        rows: list[list[str | None]] = []
        valid_until: float | None = None
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5.0) as db:
            for key, response in served.items():
                row = db.execute(runhit.ROW_SQL, (key,)).fetchone()
                if row is None:
                    return f"the entry {key!r} is gone"
                metadata = json.loads(row[1]) if row[1] else {}
                # The row must be the one the run served (another process may have replaced it since).
                created = metadata.get("_cache_created_at") or iso_utc(row[2])
                if created != response.get("_cache_created_at") or \
                        agent.cache.flow.codec.decode(bytes(row[0])) != response.get("result"):
                    return f"the entry {key!r} changed after the run read it"
                rows.append([key, runhit.row_fingerprint(row)])
                expiry = [row[3]] if row[3] is not None else []
                fresh = metadata.get(FRESH_UNTIL)
                if isinstance(fresh, (int, float)):
                    expiry.append(float(fresh))
                for limit in expiry:
                    valid_until = limit if valid_until is None else min(valid_until, limit)
        db.close()
        if valid_until is not None and valid_until <= time.time():
            return "an entry has expired"
        files: list[list[str | None]] = []
        for path in self.files:
            from .._lean import file_sha256

            real = os.path.realpath(path)  # as named, where it leads (a link), and its bytes
            try:
                files.append([path, real, file_sha256(path)])
            except (FileNotFoundError, NotADirectoryError):
                files.append([path, real, None])  # looked for and not there: the hit path checks it still is not
            except OSError:
                return f"cannot read {path!r} again"
        listed = []
        for path in self.listed:
            try:
                listed.append([path, runhit.listing_digest(path)])
            except OSError:
                return f"cannot list {path!r} again"
        out_stream = self._saved[0] if self._saved else sys.__stdout__
        err_stream = self._saved[1] if self._saved else sys.__stderr__
        record = {
            "version": runhit.RECORD_VERSION, "store": store, "rows": rows, "files": files, "listed": listed,
            "counters": sorted([name, delta] for name, delta in self.counters.items() if delta),
            "probed": [[path, follow, kind] for (path, follow), kind in self.probed.items()],
            "valid_until": valid_until, "created_at": time.time(),
            "stdout": _as_bytes_text((self.stdout.text() if self.stdout else "") + stdout_text, out_stream),
            "stderr": _as_bytes_text(self.stderr.text() if self.stderr else "", err_stream),
        }
        os.makedirs(os.path.dirname(self.index), exist_ok=True)
        with sqlite3.connect(self.index, timeout=5.0) as index:
            index.execute("CREATE TABLE IF NOT EXISTS runs (lookup TEXT PRIMARY KEY, record TEXT NOT NULL)")
            index.execute("INSERT OR REPLACE INTO runs (lookup, record) VALUES (?, ?)",
                          (self.lookup, runhit_dumps(record)))
        index.close()
        return None

    def _drop(self) -> None:
        if self.lookup is None or self.index is None or not os.path.isfile(self.index):
            return
        try:
            with sqlite3.connect(self.index, timeout=5.0) as index:
                index.execute("DELETE FROM runs WHERE lookup = ?", (self.lookup,))
            index.close()
        except sqlite3.Error:
            pass


def runhit_dumps(record: Mapping[str, Any]) -> str:
    from .._lean import dumps

    return str(dumps(dict(record)))


def _as_bytes_text(text: str, stream: Any) -> str:
    """``text`` as the bytes ``stream`` writes for it, kept as UTF-8 text (undecodable bytes as
    surrogates) so that the hit path's ``encode("utf-8", "surrogateescape")`` gives those bytes."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    errors = getattr(stream, "errors", None) or "strict"
    return text.encode(encoding, errors).decode("utf-8", "surrogateescape")
