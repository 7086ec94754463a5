"""YAML agents whose steps are cached actions (a compatible subset of The Edge Agent).

    from actioncache.agents import load_agent
    agent = load_agent("examples/document_extraction.yaml")
    final_state = agent.invoke({"file_path": "examples/data/report.txt"})

YAML_REFERENCE.md documents the format whole; docs/agents.md is the guide.

The names load on first use (PEP 562), so the ``actioncache run`` hit path
(:mod:`actioncache.agents.runhit`) can live here without loading the engine; type checkers read
the static imports below.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms

if TYPE_CHECKING:
    from typing import Any

    from .engine import Agent as Agent
    from .engine import load_agent as load_agent
    from .errors import AgentDefinitionError as AgentDefinitionError
    from .errors import AgentError as AgentError
    from .errors import AgentInputError as AgentInputError
    from .errors import NodeError as NodeError
    from .errors import RunBlockError as RunBlockError
    from .errors import RunBlocksRefusedError as RunBlocksRefusedError
    from .errors import SandboxError as SandboxError
    from .errors import TemplateVariableError as TemplateVariableError
    from .errors import UnknownActionError as UnknownActionError
    from .key_context import declare_key_context as declare_key_context
    from .registry import ActionRegistry as ActionRegistry
    from .trust import RefusedAtLoadError as RefusedAtLoadError
    from .trust import RefusedError as RefusedError

__all__ = [
    "ActionRegistry",
    "Agent",
    "AgentDefinitionError",
    "AgentError",
    "AgentInputError",
    "NodeError",
    "RefusedAtLoadError",
    "RefusedError",
    "RunBlockError",
    "RunBlocksRefusedError",
    "SandboxError",
    "TemplateVariableError",
    "UnknownActionError",
    "declare_key_context",
    "load_agent",
]

# public name -> the submodule that defines it
_HOMES = {
    "Agent": "engine", "load_agent": "engine", "AgentDefinitionError": "errors", "AgentError": "errors",
    "AgentInputError": "errors", "NodeError": "errors", "RunBlockError": "errors", "RunBlocksRefusedError": "errors",
    "SandboxError": "errors", "TemplateVariableError": "errors", "UnknownActionError": "errors",
    "declare_key_context": "key_context", "ActionRegistry": "registry", "RefusedAtLoadError": "trust",
    "RefusedError": "trust",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'actioncache.agents' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
