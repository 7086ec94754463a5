"""The action registry: ``fn(state, **kwargs) -> dict`` under ``ns.name`` and ``actions.ns_name``.

Every action is reachable under both spellings, and both resolve to one
canonical ``ns.name``, so ``cache.wrap`` keys the same entry whichever spelling an agent uses.
Actions come from four places: the built-in modules (``agents.actions`` and the faces'
``<face>/actions.py``), the modules installed packages name in the ``actioncache.actions`` entry-point
group, ``imports:`` in the YAML, and Python (``registry["ns.name"] = fn``). Every module has one hook,
``register_actions(registry, engine)``; :mod:`actioncache.actions` types what it receives.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, Iterator

from ..actions import ENTRY_POINT_GROUP, Action, Engine
from .errors import AgentDefinitionError, UnknownActionError, suggest

log = logging.getLogger("actioncache.agents")

ALIAS_PREFIX = "actions."

# Modules whose register_actions(registry, engine) every agent gets. The first is this package;
# the others belong to the faces and may be absent (an optional dependency not installed). The
# package declares them in the actioncache.actions entry-point group too; naming them here keeps a
# checkout that is not installed (no entry points) working.
BUILTIN_MODULES = (
    "actioncache.agents.actions",
    "actioncache.runs.actions",
    "actioncache.semantic.actions",
    "actioncache.replay.actions",
    "actioncache.scratchpad.actions",
)


ACTIONS_ENTRY_POINT_GROUP = ENTRY_POINT_GROUP
_plugins: dict[str, str] | None = None


def plugin_modules() -> dict[str, str]:
    """Modules installed packages declare in the ``actioncache.actions`` entry-point group (the value
    names a module with ``register_actions(registry, engine)``), each with a label naming its entry
    point and package; every agent gets their actions."""
    global _plugins
    if _plugins is None:
        try:
            from importlib.metadata import entry_points

            found: dict[str, str] = {}
            for point in entry_points(group=ACTIONS_ENTRY_POINT_GROUP):
                package = getattr(getattr(point, "dist", None), "name", None) or "an unknown package"
                found.setdefault(point.value.partition(":")[0],
                                 f"entry point {point.name!r} of package {package!r} ({ACTIONS_ENTRY_POINT_GROUP})")
            _plugins = dict(sorted(found.items()))
        except Exception as exc:  # noqa: BLE001 - broken package metadata must not stop the built-ins
            log.warning("reading %s entry points failed: %s", ACTIONS_ENTRY_POINT_GROUP, exc)
            _plugins = {}
    return _plugins


def option_names(fn: Action) -> tuple[str, ...] | None:
    """The ``with:`` options ``fn(state, **options)`` accepts, read from its signature; None when
    that is not known (no signature, or it takes ``**kwargs``)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())[1:]  # the first is the state
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in parameters):
        return None
    return tuple(p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def alias_of(name: str) -> str:
    """``ns.name`` -> ``actions.ns_name`` (dots after the namespace become underscores too)."""
    return ALIAS_PREFIX + name.replace(".", "_")


class ActionRegistry(MutableMapping[str, Action]):
    """A dict of actions that also answers to the ``actions.ns_name`` spelling of each name."""

    def __init__(self, actions: dict[str, Action] | None = None) -> None:
        self._actions: dict[str, Action] = {}
        self._aliases: dict[str, str] = {}
        self._builtins: frozenset[str] = frozenset()
        for name, fn in (actions or {}).items():
            self[name] = fn

    def canonical(self, name: str) -> str | None:
        """The ``ns.name`` an action is registered under, or None."""
        if name in self._actions:
            return name
        return self._aliases.get(name)

    def __setitem__(self, name: str, fn: Action) -> None:
        name = self.spelling(name)
        if not callable(fn):
            raise AgentDefinitionError(f"action {name!r} must be callable as fn(state, **kwargs) -> dict")
        self._actions[name] = fn
        self._aliases[alias_of(name)] = name

    def override(self, name: str, fn: Action) -> None:
        """Register ``fn`` under ``name`` even when a built-in action has it: the one way a plug-in
        or an ``imports:`` module may replace a built-in (plain ``registry[name] = fn`` is refused)."""
        if self.spelling(name) in self._builtins:
            log.info("action %r: a built-in replaced through registry.override", self.spelling(name))
        self[name] = fn

    def is_builtin(self, name: str) -> bool:
        """Whether ``name`` (either spelling) is a built-in action of this package's faces."""
        return self.spelling(name) in self._builtins

    def spelling(self, name: str) -> str:
        """The ``ns.name`` a registration under ``name`` lands on (``actions.ns_name`` -> ``ns.name``)."""
        if not isinstance(name, str) or not name:
            raise AgentDefinitionError(f"an action name must be a non-empty string, not {name!r}")
        if name.startswith(ALIAS_PREFIX):
            # TEA-style registration under the alias: make the ns.name spelling from it.
            rest = name[len(ALIAS_PREFIX):]
            ns, sep, tail = rest.partition("_")
            if not sep or not ns or not tail:
                raise AgentDefinitionError(f"cannot tell the namespace of {name!r}; register it as 'ns.name'")
            name = f"{ns}.{tail}"
        if "." not in name.strip("."):
            raise AgentDefinitionError(
                f"action name {name!r} has no namespace; register it as 'ns.{name}' "
                f"(or give the import a namespace:)"
            )
        return name

    def __getitem__(self, name: str) -> Action:
        canonical = self.canonical(name)
        if canonical is None:
            raise KeyError(name)
        return self._actions[canonical]

    def __delitem__(self, name: str) -> None:
        canonical = self.canonical(name)
        if canonical is None:
            raise KeyError(name)
        del self._actions[canonical]
        self._aliases.pop(alias_of(canonical), None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._actions)

    def __len__(self) -> int:
        return len(self._actions)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical(name) is not None

    def names(self, with_aliases: bool = False) -> list[str]:
        names = list(self._actions)
        return sorted(names + list(self._aliases)) if with_aliases else sorted(names)

    def resolve(self, name: str, node: str | None = None) -> tuple[str, Action]:
        """(canonical name, fn), or :class:`UnknownActionError` naming the node and the closest names."""
        canonical = self.canonical(name) if isinstance(name, str) else None
        if canonical is None:
            where = f"node {node!r}: " if node else ""
            hint = suggest(str(name), self.names(with_aliases=True)) or (
                "; registered namespaces: " + ", ".join(sorted({n.split('.')[0] for n in self._actions}))
            )
            raise UnknownActionError(f"{where}unknown action {name!r}{hint}")
        return canonical, self._actions[canonical]

    def guarded(self, namespace: str | None, who: str) -> _GuardedView:
        """What a plug-in's or an import's ``register_actions`` gets: registers under ``namespace.``
        (if given) and refuses to replace a built-in action unless asked with ``override``."""
        return _GuardedView(self, namespace, who)

    # --- loading ---------------------------------------------------------------------------

    def load_builtins(self, engine: Engine, modules: tuple[str, ...] = BUILTIN_MODULES) -> None:
        """Register the built-in action modules; a face whose module or optional dependency is
        missing is skipped, any other error in it is raised (a broken module must not hide)."""
        for module_name in modules:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                if module_name == BUILTIN_MODULES[0]:
                    raise
                continue
            module.register_actions(self, engine)
        if modules is BUILTIN_MODULES:
            self._builtins = frozenset(self._actions)
            for module_name, label in plugin_modules().items():
                if module_name in BUILTIN_MODULES:  # this package's own entry points: loaded above
                    continue
                # A broken plug-in is skipped with a warning naming it: it must not stop every agent.
                try:
                    self._register_module(importlib.import_module(module_name), f"module {module_name!r}, {label}",
                                          None, engine)
                except Exception as exc:  # noqa: BLE001 - any failure of a third party's module
                    log.warning("skipping the actions of %s: %s", label, exc)

    def load_import(self, spec: Any, engine: Engine, base_dir: Path) -> None:
        """Load one ``imports:`` entry: a path (relative to the YAML file) or a package name."""
        if isinstance(spec, str):
            spec = {"path": spec} if (spec.endswith(".py") or "/" in spec) else {"package": spec}
        if not isinstance(spec, dict):
            raise AgentDefinitionError(f"imports: each entry is a path, a package name or {{path|package, namespace}}, not {spec!r}")
        unknown = set(spec) - {"path", "package", "namespace"}
        if unknown:
            bad = sorted(unknown)[0]
            raise AgentDefinitionError(f"imports: unknown key {bad!r}{suggest(bad, ['path', 'package', 'namespace'])}")
        if ("path" in spec) == ("package" in spec):
            raise AgentDefinitionError(f"imports: give exactly one of path: or package: in {spec!r}")
        namespace = spec.get("namespace")
        label = str(spec.get("path", spec.get("package")))
        try:
            if "path" in spec:
                module = _module_from_path(base_dir / label)
            else:
                module = importlib.import_module(label)
        except AgentDefinitionError:
            raise
        except Exception as exc:
            what = "" if "path" in spec else "package "
            raise AgentDefinitionError(f"imports: cannot import {what}{label!r}: {type(exc).__name__}: {exc}") from exc
        try:
            self._register_module(module, repr(label), namespace, engine)
        except AgentDefinitionError as exc:
            raise AgentDefinitionError(f"imports: {exc}") from exc

    def _register_module(self, module: Any, who: str, namespace: str | None, engine: Engine) -> None:
        """Call ``module.register_actions(registry, engine)``; on any failure nothing it registered stays."""
        register = getattr(module, "register_actions", None)
        if not callable(register):
            raise AgentDefinitionError(f"{who} has no register_actions(registry, engine) function")
        try:
            inspect.signature(register).bind(None, None)
        except TypeError as exc:
            raise AgentDefinitionError(f"{who}: register_actions must take (registry, engine): {exc}") from exc
        except ValueError:  # no signature to read: let the call tell
            pass
        view = self.guarded(namespace, who)
        try:
            register(view, engine)
        except Exception as exc:
            for name in view.added:
                self._actions.pop(name, None)
                self._aliases.pop(alias_of(name), None)
            if isinstance(exc, AgentDefinitionError):
                raise
            raise AgentDefinitionError(f"{who}: register_actions raised {type(exc).__name__}: {exc}") from exc


class _GuardedView(MutableMapping[str, Action]):
    def __init__(self, registry: ActionRegistry, namespace: str | None, who: str) -> None:
        self._registry = registry
        self._prefix = namespace.rstrip(".") + "." if namespace else ""
        self._who = who
        self.added: list[str] = []

    def __setitem__(self, name: str, fn: Action) -> None:
        full = self._registry.spelling(self._prefix + name)
        if self._registry.is_builtin(full):
            raise AgentDefinitionError(
                f"{self._who} registers {name!r}, which would replace the built-in action {full!r}; "
                f"register it under another name (or give the import a namespace:), or call "
                f"registry.override({full!r}, fn) if replacing the built-in is meant"
            )
        self._set(full, fn)

    def override(self, name: str, fn: Action) -> None:
        """Replace a built-in action on purpose (plain assignment refuses to)."""
        full = self._registry.spelling(self._prefix + name)
        log.warning("%s replaces the built-in action %r", self._who, full)
        self._set(full, fn)

    def _set(self, full: str, fn: Action) -> None:
        if full not in self._registry:
            self.added.append(full)
        self._registry[full] = fn

    def canonical(self, name: str) -> str | None:
        return self._registry.canonical(name)

    def resolve(self, name: str, node: str | None = None) -> tuple[str, Action]:
        return self._registry.resolve(name, node)

    def __getitem__(self, name: str) -> Action:
        return self._registry[name] if name in self._registry else self._registry[self._prefix + name]

    def __contains__(self, name: object) -> bool:
        return name in self._registry or (isinstance(name, str) and self._prefix + name in self._registry)

    def __delitem__(self, name: str) -> None:
        if self._registry.is_builtin(self._prefix + name):
            raise AgentDefinitionError(f"{self._who} deletes the built-in action {name!r}; that is refused")
        del self._registry[self._prefix + name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry)

    def __len__(self) -> int:
        return len(self._registry)


def _module_from_path(path: Path) -> Any:
    path = path.resolve()
    if path.is_dir():
        path = path / "__init__.py"
    if not path.is_file():
        raise AgentDefinitionError(f"imports: no such file {str(path)!r} (paths are relative to the YAML file)")
    name = f"actioncache_agent_import_{abs(hash(str(path))):x}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AgentDefinitionError(f"imports: cannot load {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module
