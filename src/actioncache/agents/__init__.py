"""YAML agents whose steps are cached actions (a compatible subset of The Edge Agent).

    from actioncache.agents import load_agent
    agent = load_agent("examples/document_extraction.yaml")
    final_state = agent.invoke({"file_path": "examples/data/report.txt"})

YAML_REFERENCE.md documents the format whole; docs/agents.md is the guide.
"""

from .engine import Agent, load_agent
from .errors import (
                     AgentDefinitionError,
                     AgentError,
                     AgentInputError,
                     NodeError,
                     RunBlockError,
                     RunBlocksRefusedError,
                     SandboxError,
                     TemplateVariableError,
                     UnknownActionError,
)
from .key_context import declare_key_context
from .registry import ActionRegistry
from .trust import RefusedAtLoadError, RefusedError

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
