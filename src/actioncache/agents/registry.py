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
_plugins: tuple[str, ...] | None = None


def plugin_modules() -> tuple[str, ...]:
    """Modules installed packages declare in the ``actioncache.actions`` entry-point group (the value
    names a module with ``register_actions(registry, engine)``); every agent gets their actions."""
    global _plugins
    if _plugins is None:
        try:
            from importlib.metadata import entry_points

            _plugins = tuple(sorted({point.value.partition(":")[0]
                                     for point in entry_points(group=ACTIONS_ENTRY_POINT_GROUP)}))
        except Exception as exc:  # noqa: BLE001 - broken package metadata must not stop the built-ins
            log.warning("reading %s entry points failed: %s", ACTIONS_ENTRY_POINT_GROUP, exc)
            _plugins = ()
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
        for name, fn in (actions or {}).items():
            self[name] = fn

    def canonical(self, name: str) -> str | None:
        """The ``ns.name`` an action is registered under, or None."""
        if name in self._actions:
            return name
        return self._aliases.get(name)

    def __setitem__(self, name: str, fn: Action) -> None:
        if not isinstance(name, str) or not name:
            raise AgentDefinitionError(f"an action name must be a non-empty string, not {name!r}")
        if not callable(fn):
            raise AgentDefinitionError(f"action {name!r} must be callable as fn(state, **kwargs) -> dict")
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
        self._actions[name] = fn
        self._aliases[alias_of(name)] = name

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

    def namespaced(self, namespace: str | None) -> MutableMapping[str, Action]:
        """A view that registers under ``namespace.`` (what an import with ``namespace:`` sees)."""
        return self if not namespace else _NamespacedView(self, namespace)

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
            for module_name in plugin_modules():
                if module_name in BUILTIN_MODULES:  # this package's own entry points: loaded above
                    continue
                try:
                    module = importlib.import_module(module_name)
                except ModuleNotFoundError as exc:  # the plug-in's own optional dependency is missing
                    log.warning("skipping actions from %s: %s", module_name, exc)
                    continue
                module.register_actions(self, engine)

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
        if "path" in spec:
            module = _module_from_path(base_dir / str(spec["path"]))
            label = str(spec["path"])
        else:
            label = str(spec["package"])
            try:
                module = importlib.import_module(label)
            except ImportError as exc:
                raise AgentDefinitionError(f"imports: cannot import package {label!r}: {exc}") from exc
        register = getattr(module, "register_actions", None)
        if not callable(register):
            raise AgentDefinitionError(f"imports: {label!r} has no register_actions(registry, engine) function")
        register(self.namespaced(namespace), engine)


class _NamespacedView(MutableMapping[str, Action]):
    def __init__(self, registry: ActionRegistry, namespace: str) -> None:
        self._registry = registry
        self._prefix = namespace.rstrip(".") + "."

    def __setitem__(self, name: str, fn: Action) -> None:
        self._registry[self._prefix + name] = fn

    def __getitem__(self, name: str) -> Action:
        return self._registry[name] if name in self._registry else self._registry[self._prefix + name]

    def __delitem__(self, name: str) -> None:
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
