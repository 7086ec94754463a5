"""Parse and check an agent file before anything runs.

Everything that can be wrong with the file itself is reported here, at load time, with the
node's name and a suggestion: YAML syntax (line and column), unknown top-level or node keys,
goto/edge targets that do not exist, template syntax, ``run:`` syntax. So a typo never costs a
half-run agent (or a half-filled cache).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ActionCacheError
from .errors import AgentDefinitionError, suggest

START, END = "__start__", "__end__"
TEXT_SOURCE = "<agent>"  # the source name of an agent given as YAML text, not a file
UNKNOWN_AGENT = "unknown_agent"
TOP_LEVEL_KEYS = ("name", "description", "variables", "settings", "imports", "state_schema", "nodes", "edges")
NODE_KEYS = ("name", "description", "uses", "with", "output", "run", "goto")
SCHEMA_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "string": (str,), "int": (int,), "integer": (int,), "float": (int, float),
    "number": (int, float), "bool": (bool,), "boolean": (bool,), "list": (list,), "array": (list,),
    "dict": (dict,), "object": (dict,), "any": (object,),
}


@dataclass
class GotoRule:
    to: str
    condition: Any = None  # None: always


@dataclass
class Node:
    name: str
    index: int
    uses: str | None = None
    with_: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    run: str | None = None
    run_code: Any = None
    goto: list[GotoRule] = field(default_factory=list)
    description: str = ""


@dataclass
class Edge:
    source: str
    target: str
    when: Any = None


@dataclass
class FieldSpec:
    types: tuple[type, ...]
    type_name: str
    required: bool = False
    default: Any = None
    has_default: bool = False


@dataclass
class AgentSpec:
    name: str
    top_level_name: Any
    description: str
    variables: dict[str, Any]
    settings: dict[str, Any]
    imports: list[Any]
    state_schema: dict[str, FieldSpec]
    nodes: list[Node]
    edges: list[Edge]
    base_dir: Path
    source_name: str

    def node(self, name: str) -> Node:
        return self.nodes[[n.name for n in self.nodes].index(name)]


def read_source(source: str | Path) -> tuple[str, Path, str]:
    """(YAML text, directory for relative paths, name for messages) from a path or YAML text."""
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                    and (source.endswith((".yaml", ".yml")) or Path(source).is_file())):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AgentDefinitionError(f"cannot read agent file {str(path)!r}: {exc.strerror or exc}") from exc
        return text, path.resolve().parent, str(path)
    return str(source), Path.cwd(), TEXT_SOURCE


# Limits of an agent file, for every agent (trusted ones get a clear error instead of a traceback
# or a hang): nesting deeper than MAX_YAML_DEPTH is refused, and aliases (``*name``) are expanded
# under a budget: the document, every alias counted as a copy of what it names, may hold at most
# MAX_YAML_NODES nodes (a "billion laughs" file of a few lines would otherwise expand to 10**9).
MAX_YAML_DEPTH = 100
MAX_YAML_NODES = 100_000


class _YAMLTooBig(ActionCacheError):
    pass


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """PyYAML's safe loader with a nesting limit, checked as the document is composed (its
    composer recurses once per level: 50,000 levels would be a RecursionError)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise _YAMLTooBig(f"line {mark.line + 1}: nested deeper than {MAX_YAML_DEPTH} levels (the limit "
                                  "for agent files); flatten it or move deep data into the input state")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes ``root`` holds with every alias expanded (a node named twice counts twice),
    computed once per distinct node, without expanding anything."""
    sizes: dict[int, int] = {}
    order: list[yaml.Node] = []
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if done:
            sizes[id(node)] = min(MAX_YAML_NODES + 1, 1 + sum(sizes[id(child)] for child in children))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _safe_load(text: str) -> Any:
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_YAML_NODES:
            raise _YAMLTooBig(f"with its aliases (*name) expanded it holds over {MAX_YAML_NODES:,} values "
                              "(a 'billion laughs' file); write the values out or use fewer aliases")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def parse_yaml(text: str, source_name: str) -> dict[str, Any]:
    try:
        document = _safe_load(text)
    except _YAMLTooBig as exc:
        raise AgentDefinitionError(f"{source_name}: refused: {exc}") from exc
    except RecursionError as exc:  # a nesting the limit did not see (a deep flow collection)
        raise AgentDefinitionError(f"{source_name}: the agent file nests too deeply to load; "
                                   f"keep it under {MAX_YAML_DEPTH} levels") from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source_name}:{mark.line + 1}:{mark.column + 1}" if mark else source_name
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise AgentDefinitionError(f"{where}: YAML syntax error: {problem}") from exc
    except yaml.YAMLError as exc:
        raise AgentDefinitionError(f"{source_name}: YAML error: {exc}") from exc
    if not isinstance(document, dict):
        raise AgentDefinitionError(f"{source_name}: an agent is a YAML mapping with at least nodes:, not {type(document).__name__}")
    return document


def build_spec(document: dict[str, Any], base_dir: Path, source_name: str) -> AgentSpec:
    for key in document:
        if key not in TOP_LEVEL_KEYS:
            raise AgentDefinitionError(f"{source_name}: unknown top-level key {key!r}{suggest(str(key), TOP_LEVEL_KEYS)}; "
                                       f"allowed: {', '.join(TOP_LEVEL_KEYS)}")
    raw_nodes = document.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise AgentDefinitionError(f"{source_name}: nodes: must be a non-empty list of nodes")
    nodes = [_build_node(raw, i) for i, raw in enumerate(raw_nodes)]
    names = [n.name for n in nodes]
    for i, name in enumerate(names):
        if name in names[:i] or name in (START, END):
            raise AgentDefinitionError(f"node {name!r}: the name is {'reserved' if name in (START, END) else 'used twice'}")
    for node in nodes:
        for rule in node.goto:
            _check_target(rule.to, names, f"node {node.name!r}: goto")
    edges = [_build_edge(raw, names) for raw in _mapping_list(document.get("edges"), "edges")]
    return AgentSpec(
        name=str(document.get("name") or Path(source_name).stem),
        top_level_name=document.get("name"),
        description=str(document.get("description") or ""),
        variables=_mapping(document.get("variables"), "variables"),
        settings=_mapping(document.get("settings"), "settings"),
        imports=list(document.get("imports") or []),
        state_schema=_build_schema(document.get("state_schema")),
        nodes=nodes,
        edges=edges,
        base_dir=base_dir,
        source_name=source_name,
    )


def agent_name(settings: dict[str, Any], spec: AgentSpec) -> str:
    """The name in an agent's cache keys, as TEA resolves it: ``settings.name``, else the top-level
    ``name``, else the YAML file's stem, else ``unknown_agent`` (an empty or null name falls through)."""
    for where, name in (("settings.name", settings.get("name")), ("name", spec.top_level_name)):
        if name:
            return checked_agent_name(str(name), where)
    if spec.source_name != TEXT_SOURCE:
        return checked_agent_name(Path(spec.source_name).stem or UNKNOWN_AGENT, "the file name")
    return UNKNOWN_AGENT


# Characters that would make ``cache:{agent_name}:...`` ambiguous (":") or turn the per-agent
# invalidation pattern ``cache:{agent_name}:*`` into a glob over other agents' keys.
_NAME_FORBIDDEN = frozenset(":*?[]\\")


def checked_agent_name(name: str, where: str) -> str:
    """``name`` when it is safe inside cache keys and glob patterns, else :class:`AgentDefinitionError`.

    Without this, agent ``a:x`` with key ``k`` and agent ``a`` with key ``x:k`` would share the key
    ``cache:a:x:k`` (one agent served the other's answer), and invalidating ``cache:b*:*`` would
    delete agent ``b``'s entries. TEA accepts such names; here they are refused."""
    bad = sorted({c for c in name if c in _NAME_FORBIDDEN or c.isspace() or not c.isprintable()})
    if bad:
        raise AgentDefinitionError(
            f"{where}: the agent name {name!r} contains {', '.join(repr(c) for c in bad)}, which would make its "
            f"cache keys (cache:{{agent_name}}:...) collide with another agent's or its invalidation pattern "
            f"match other agents; use letters, digits, '_', '-', '.' or '/' (e.g. settings.name: "
            f"{''.join('_' if c in bad else c for c in name)!r})")
    return name


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AgentDefinitionError(f"{what}: must be a mapping, not {type(value).__name__}")
    return dict(value)


def _mapping_list(value: Any, what: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise AgentDefinitionError(f"{what}: must be a list of mappings")
    return value


def _build_node(raw: Any, index: int) -> Node:
    if not isinstance(raw, dict):
        raise AgentDefinitionError(f"nodes[{index}]: a node is a mapping with name: and uses: or run:")
    name = raw.get("name")
    if isinstance(name, (bool, int, float)):
        raise AgentDefinitionError(f"nodes[{index}]: name: {name!r} is not text (YAML reads yes/no/on/off as "
                                   f"booleans and digits as numbers); quote it")
    if not isinstance(name, str) or not name:
        raise AgentDefinitionError(f"nodes[{index}]: every node needs a name:")
    for key in raw:
        if key not in NODE_KEYS:
            raise AgentDefinitionError(f"node {name!r}: unknown key {key!r}{suggest(str(key), NODE_KEYS)}; "
                                       f"allowed: {', '.join(NODE_KEYS)}")
    if ("uses" in raw) == ("run" in raw):
        raise AgentDefinitionError(f"node {name!r}: give exactly one of uses: (an action) or run: (a Python block)")
    if "with" in raw and "uses" not in raw:
        raise AgentDefinitionError(f"node {name!r}: with: only goes with uses:")
    node = Node(name=name, index=index, description=str(raw.get("description") or ""))
    if "uses" in raw:
        if not isinstance(raw["uses"], str) or not raw["uses"]:
            raise AgentDefinitionError(f"node {name!r}: uses: must be an action name such as cache.wrap")
        node.uses = raw["uses"]
        node.with_ = _mapping(raw.get("with"), f"node {name!r}: with")
    else:
        if not isinstance(raw["run"], str):
            raise AgentDefinitionError(f"node {name!r}: run: must be a block of Python code")
        node.run = raw["run"]
        node.run_code = compile_run_block(name, raw["run"])
    if raw.get("output") is not None:
        if not isinstance(raw["output"], str) or not raw["output"]:
            raise AgentDefinitionError(f"node {name!r}: output: must be a state field name")
        node.output = raw["output"]
    node.goto = _build_goto(name, raw.get("goto"))
    return node


def _build_goto(node: str, raw: Any) -> list[GotoRule]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [GotoRule(raw)]
    if not isinstance(raw, list):
        raise AgentDefinitionError(f"node {node!r}: goto: is a node name or a list of {{if: ..., to: ...}}")
    rules = []
    for rule in raw:
        if not isinstance(rule, dict) or "to" not in rule or set(rule) - {"if", "to"}:
            raise AgentDefinitionError(f"node {node!r}: each goto rule is {{if: <expression>, to: <node>}} (if: optional), not {rule!r}")
        rules.append(GotoRule(str(rule["to"]), rule.get("if")))
    return rules


def _check_target(target: str, names: list[str], where: str, allowed: tuple[str, ...] = (END,)) -> None:
    if target not in names and target not in allowed:
        raise AgentDefinitionError(f"{where}: no node named {target!r}{suggest(target, names + list(allowed))}")


def _build_edge(raw: dict[str, Any], names: list[str]) -> Edge:
    unknown = set(raw) - {"from", "to", "when"}
    if unknown:
        bad = sorted(unknown)[0]
        raise AgentDefinitionError(f"edges: unknown key {bad!r}{suggest(bad, ['from', 'to', 'when'])}")
    if "from" not in raw or "to" not in raw:
        raise AgentDefinitionError(f"edges: each edge needs from: and to:, got {raw!r}")
    source, target = str(raw["from"]), str(raw["to"])
    _check_target(source, names, "edges: from", (START,))
    _check_target(target, names, f"edges: from {source!r} to")
    return Edge(source, target, raw.get("when"))


def _build_schema(raw: Any) -> dict[str, FieldSpec]:
    schema: dict[str, FieldSpec] = {}
    for name, spec in _mapping(raw, "state_schema").items():
        if isinstance(spec, str):
            spec = {"type": spec}
        if not isinstance(spec, dict) or set(spec) - {"type", "required", "default"}:
            raise AgentDefinitionError(f"state_schema.{name}: a type name or {{type, required, default}}, not {spec!r}")
        type_name = str(spec.get("type", "any"))
        if type_name not in SCHEMA_TYPES:
            raise AgentDefinitionError(f"state_schema.{name}: unknown type {type_name!r}{suggest(type_name, SCHEMA_TYPES)}")
        schema[name] = FieldSpec(SCHEMA_TYPES[type_name], type_name, bool(spec.get("required", False)),
                                 spec.get("default"), "default" in spec)
    return schema


def compile_run_block(node: str, code: str) -> Any:
    """Compile a ``run:`` block as the body of ``def __run__(state, variables)``: ``return`` works."""
    body = textwrap.indent(textwrap.dedent(code), "    ") or "    pass"
    source = f"def __run__(state, variables):\n{body}\n    return None\n"
    try:
        return compile(source, run_block_filename(node), "exec")
    except SyntaxError as exc:
        line = (exc.lineno or 2) - 1
        raise AgentDefinitionError(f"node {node!r}: run: block has a Python syntax error at line {line}: {exc.msg}") from exc


def run_block_filename(node: str) -> str:
    return f"<run block of node {node}>"
