"""The agent runtime: ``load_agent(path_or_text)`` -> :class:`Agent` with ``invoke`` and ``stream``.

An agent is a list of nodes run in order unless ``goto:`` or ``edges:`` say otherwise. A node
either ``uses:`` an action (its ``with:`` rendered by sandboxed Jinja) or ``run:``s a Python
block; a dict result merges into the state, or lands at ``state[output]``. The agent is also the
``engine`` that action modules receive (:class:`actioncache.actions.Engine`): ``engine.cache``,
``engine.store``, ``engine.settings``, ``engine.registry``, ``engine.namespace``, ``engine.agent_name``,
``engine.current_node`` and ``engine.trust``.
"""

from __future__ import annotations

import builtins
import json
import os
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..actions import Action
from ..cache import Cache
from ..errors import MissingStoreExtraError, StoreError
from ..stores.base import CacheStore, open_store
from .actions.llm import DEFAULT_BASE_URL
from .errors import (
    AgentDefinitionError,
    AgentError,
    AgentInputError,
    NodeError,
    RunBlockError,
    RunBlocksRefusedError,
    suggest,
)
from .loader import END, START, AgentSpec, Node, agent_name, build_spec, parse_yaml, read_source, run_block_filename
from .registry import ActionRegistry, option_names
from .settings import cache_options, expand_env, ltm_store_url
from .templating import Renderer, make_environment
from .trust import RefusedAtLoadError, RefusedError, Trust, UntrustedRefusal, refusal

# Actions an untrusted agent may not use at all (rule 'commands'): they run programs.
COMMAND_ACTIONS = ("command.run", "command.exec_cached")
# Actions whose with: names another action to run (checked like a node's uses:).
WRAPPING_ACTIONS = ("cache.wrap", "ratelimit.wrap")

DEFAULT_MAX_STEPS = 10_000


def load_agent(
    source: str | Path,
    *,
    allow_run: bool = True,
    store: str | CacheStore | None = None,
    cache: Cache | None = None,
    actions: Mapping[str, Action] | None = None,
    registry: ActionRegistry | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    trusted: bool = True,
    root: str | Path | None = None,
    allow_hosts: Iterable[str] = (),
    allow_env: Iterable[str] = (),
) -> Agent:
    """Load an agent from a YAML file path or YAML text and check it whole before it runs.

    ``store``/``cache`` override ``settings.ltm`` (the CLI's ``--store``); ``actions`` adds Python
    actions (``{"ns.name": fn}``); ``allow_run=False`` refuses agents that contain ``run:`` blocks.
    ``trusted=False`` is untrusted mode (see :mod:`actioncache.agents.trust`): files stay under
    ``root`` (default: the agent's directory), the network reaches only ``allow_hosts``, and
    ``${VAR}`` expands only ``allow_env``.
    """
    text, base_dir, source_name = read_source(source)
    spec = build_spec(parse_yaml(text, source_name), base_dir, source_name)
    blocks = [n.name for n in spec.nodes if n.run is not None]
    if not trusted:
        if blocks:
            raise RunBlocksRefusedError(f"{source_name}: " + refusal(
                "run-blocks", f"run: blocks in node(s) {', '.join(repr(b) for b in blocks)} (they execute Python)",
                "read them and run the agent trusted (without --untrusted / --no-run) if you accept them"))
        if spec.imports:
            raise RefusedAtLoadError(f"{source_name}: " + refusal(
                "imports", f"imports: {spec.imports!r} (they load Python)",
                "read them and run the agent trusted (without --untrusted / --no-run) if you accept them"))
    elif not allow_run and blocks:
        raise RunBlocksRefusedError(
            f"{source_name}: run: blocks are refused (allow_run=False / --no-run) in node(s) "
            f"{', '.join(repr(b) for b in blocks)}; they execute Python, so run only agents you trust"
        )
    trust = Trust() if trusted else Trust.untrusted(root if root is not None else base_dir, allow_hosts, allow_env)
    return Agent(spec, store=store, cache=cache, actions=actions, registry=registry, max_steps=max_steps, trust=trust)


class Agent:
    """A loaded agent. Use :meth:`invoke` for the final state or :meth:`stream` for one event per node."""

    def __init__(self, spec: AgentSpec, *, store: str | CacheStore | None = None, cache: Cache | None = None,
                 actions: Mapping[str, Action] | None = None, registry: ActionRegistry | None = None,
                 max_steps: int = DEFAULT_MAX_STEPS, trust: Trust | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.max_steps = max_steps
        self.trust = trust if trust is not None else Trust()
        self.settings: dict[str, Any] = expand_env(spec.settings, check=self.trust.check_env)
        # The prefix of this agent's cache.wrap keys: cache:{agent_name}:... (TEA-BUILTIN-010.1).
        self.agent_name = agent_name(self.settings, spec)
        cache_settings = self.settings.get("cache") or {}
        options = cache_options(cache_settings)
        self.namespace: str | None = cache_settings.get("namespace") or None
        try:
            configured = ltm_store_url(self.settings.get("ltm"), spec.base_dir)  # checked even when overridden
        except MissingStoreExtraError as exc:  # the store writes its URL, and its module needs the driver
            if store is None and cache is None:
                raise AgentDefinitionError(f"cannot open the cache store: {exc}") from exc
            configured = None  # overridden: that store is never opened, so its driver is not needed
        if configured is not None and store is None and cache is None:
            self.trust.check_store_url(configured, "settings.ltm")
        self._check_settings_hosts()
        if cache is not None:
            self.cache = cache
        else:
            url_or_store = store if store is not None else configured
            if url_or_store is None and not self.trust.trusted:
                # Never the user's default store: an agent from elsewhere could plant answers there
                # for the user's own agents (a wrong hit). Its own file, under its root.
                url_or_store = self.trust.default_store_url()
            try:
                self.cache = Cache(store=open_store(url_or_store), **options)
            except (ValueError, TypeError, StoreError) as exc:
                raise AgentDefinitionError(f"cannot open the cache store: {exc}") from exc
        self.renderer = Renderer(make_environment(self.trust))
        self.current_node: str | None = None
        self.registry = registry if registry is not None else ActionRegistry()
        self.registry.load_builtins(self)
        if not self.trust.trusted:
            for name in COMMAND_ACTIONS:
                if name in self.registry:
                    self.registry[name] = _refuse_command(name)
        for entry in spec.imports:
            self.registry.load_import(entry, self, spec.base_dir)
        for name, fn in (actions or {}).items():
            self.registry[name] = fn
        self._check()

    @property
    def store(self) -> CacheStore:
        return self.cache.store

    @property
    def nodes(self) -> list[Node]:
        return self.spec.nodes

    def _check_settings_hosts(self) -> None:
        """Untrusted: hosts named in settings (the semantic embedder's server) must be allowed."""
        semantic = self.settings.get("semantic")
        if not isinstance(semantic, Mapping):
            return
        env_base = os.environ.get("OPENAI_BASE_URL")
        if semantic.get("base_url"):
            url, what = str(semantic["base_url"]), "settings.semantic.base_url: embedding requests"
        elif semantic.get("embedder") == "openai":
            # No base_url: the embedder's default, the user's $OPENAI_BASE_URL else OpenAI's own server.
            url, what = env_base or DEFAULT_BASE_URL, "settings.semantic.embedder openai: embedding requests"
        else:
            return
        try:
            self.trust.check_url(url, what, implicitly_allowed=[env_base] if env_base else [])
        except UntrustedRefusal as exc:
            raise RefusedAtLoadError(str(exc)) from exc

    def _check(self) -> None:
        """Unknown actions and template syntax are load-time errors, with the node's name."""
        for node in self.spec.nodes:
            if node.uses is not None:
                names = [self.registry.resolve(node.uses, node=node.name)[0]]
                self._check_options(node.name, names[0], node.with_)
                wrapped = node.with_.get("action") if names[0] in WRAPPING_ACTIONS else None
                if isinstance(wrapped, str) and "{" not in wrapped:
                    names.append(self.registry.resolve(wrapped, node=node.name)[0])
                if not self.trust.trusted:
                    for name in names:
                        if name in COMMAND_ACTIONS:
                            raise RefusedAtLoadError(f"node {node.name!r}: " + _command_refusal(name))
                self.renderer.check_syntax(node.with_, f"node {node.name!r}: with")
            for i, rule in enumerate(node.goto):
                if rule.condition is not None:
                    self.renderer.check_condition(rule.condition, f"node {node.name!r}: goto[{i}].if")
        for edge in self.spec.edges:
            if edge.when is not None:
                self.renderer.check_condition(edge.when, f"edges: from {edge.source!r} to {edge.target!r} when")

    def _check_options(self, node: str, action: str, with_: Any) -> None:
        """A ``with:`` key the action does not take is a load-time error, before any node ran."""
        accepted = option_names(self.registry[action])
        if accepted is None or not isinstance(with_, Mapping):
            return
        for name in with_:
            if name not in accepted:
                raise AgentDefinitionError(f"node {node!r}: action {action!r} has no option {name!r}"
                                           f"{suggest(str(name), accepted)}; its options: {', '.join(accepted) or 'none'}")

    # --- running ------------------------------------------------------------------------

    def invoke(self, state: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run the agent and return the final state."""
        final = self._prepare_state(state)
        for event in self._run(final):
            final = event["state"]
        return final

    def stream(self, state: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Run the agent, yielding ``{"node", "result", "state", "duration_ms"}`` after each node."""
        return self._run(self._prepare_state(state))

    def _prepare_state(self, state: Mapping[str, Any] | None) -> dict[str, Any]:
        if state is None:
            state = {}
        if not isinstance(state, Mapping):
            raise AgentInputError(f"the input state must be a JSON object / dict, not {type(state).__name__}")
        out = dict(state)
        for name, field in self.spec.state_schema.items():
            if name not in out:
                if field.has_default:
                    out[name] = field.default
                elif field.required:
                    raise AgentInputError(f"state_schema: input field {name!r} ({field.type_name}) is required")
                continue
            value = out[name]
            bad_bool = isinstance(value, bool) and bool not in field.types and object not in field.types
            if bad_bool or not isinstance(value, field.types):
                raise AgentInputError(f"state_schema: input field {name!r} must be {field.type_name}, "
                                      f"got {type(value).__name__} {value!r}")
        return out

    def _context(self, state: Mapping[str, Any], result: Any = None) -> dict[str, Any]:
        return {"state": state, "variables": self.spec.variables, "result": result,
                "agent_dir": str(self.spec.base_dir)}

    def _first(self) -> str:
        for edge in self.spec.edges:
            if edge.source == START:
                return edge.target
        return self.spec.nodes[0].name

    def _run(self, state: dict[str, Any]) -> Iterator[dict[str, Any]]:
        current: str = self._first()
        steps = 0
        while current != END:
            steps += 1
            if steps > self.max_steps:
                raise NodeError(current, f"more than {self.max_steps} steps: does a goto/edge loop forever?")
            node = self.spec.node(current)
            started = time.perf_counter()
            result = self._execute(node, state)
            if node.output:
                state[node.output] = result
            elif isinstance(result, dict):
                state.update(result)
            elif result is not None:
                raise NodeError(node.name, f"returned a {type(result).__name__}, not a dict; set output: to keep it")
            yield {"node": node.name, "result": result, "state": dict(state),
                   "duration_ms": round((time.perf_counter() - started) * 1000, 3)}
            current = self._next(node, state, result)

    def _next(self, node: Node, state: Mapping[str, Any], result: Any) -> str:
        context = self._context(state, result)
        for i, rule in enumerate(node.goto):
            if rule.condition is None or self.renderer.condition(rule.condition, context, node.name, f"goto[{i}].if"):
                return rule.to
        outgoing = [e for e in self.spec.edges if e.source == node.name]
        for edge in outgoing:
            if edge.when is None or self.renderer.condition(edge.when, context, node.name, f"edge to {edge.target!r} when"):
                return edge.target
        if outgoing:
            return END
        position = node.index + 1
        return self.spec.nodes[position].name if position < len(self.spec.nodes) else END

    def _execute(self, node: Node, state: dict[str, Any]) -> Any:
        self.current_node = node.name
        try:
            if node.run_code is not None:
                return self._run_block(node, state)
            assert node.uses is not None
            _, fn = self.registry.resolve(node.uses, node=node.name)
            kwargs = self.renderer.render(node.with_, self._context(state), node.name, "with")
            try:
                return fn(state, **kwargs)
            except AgentError:
                raise
            except UntrustedRefusal as exc:
                raise RefusedError(node.name, str(exc)) from exc
            except TypeError as exc:
                raise NodeError(node.name, f"action {node.uses!r} was called with the wrong with: parameters: {exc}") from exc
            except Exception as exc:
                raise NodeError(node.name, f"action {node.uses!r} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            self.current_node = None

    def _run_block(self, node: Node, state: dict[str, Any]) -> Any:
        namespace: dict[str, Any] = {"__builtins__": builtins, "__name__": f"agent_node_{node.name}", "json": json,
                                     "actions": self.registry, "cache": self.cache}
        exec(node.run_code, namespace)
        try:
            result = namespace["__run__"](state, self.spec.variables)
        except Exception as exc:
            line = _block_line(exc, node.name)
            at = f" at line {line}" if line else ""
            raise RunBlockError(node.name, f"run: block failed{at}: {type(exc).__name__}: {exc}") from exc
        if result is not None and not isinstance(result, dict) and not node.output:
            raise RunBlockError(node.name, f"run: block returned a {type(result).__name__}; return a dict (it merges "
                                           f"into state) or set output: to keep any value")
        return result

    def close(self) -> None:
        self.cache.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _command_refusal(name: str) -> str:
    return refusal("commands", f"{name} (it runs programs)",
                   "read the agent and run it trusted (without --untrusted / --no-run) if you accept its commands")


def _refuse_command(name: str) -> Action:
    def refused(state: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise UntrustedRefusal(_command_refusal(name))

    return refused


def _block_line(exc: BaseException, node: str) -> int | None:
    """Line number inside the ``run:`` block where ``exc`` was raised (the wrapper adds one line)."""
    filename = run_block_filename(node)
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno - 1
        tb = tb.tb_next
    return line


