"""Errors of the YAML agent runtime, each with the exit code ``actioncache run`` returns.

Exit codes: 2 a bad argument (``--input`` that is not a JSON object) or an agent file that cannot
be used as written (YAML syntax, unknown key, unknown action, bad settings, ``run:`` refused); 3 the
input does not fit the agent's ``state_schema``; 4 a node failed while running (missing template variable, sandbox refusal, a failing ``run:`` block or action).
"""

from __future__ import annotations

import difflib
from typing import Iterable

from ..errors import ActionCacheError


class AgentError(ActionCacheError):
    """Base class; ``exit_code`` is what the CLI returns for it."""

    exit_code = 2


class AgentDefinitionError(AgentError, ValueError):
    """The agent file is not valid: YAML syntax, structure, unknown keys, bad goto targets, settings."""


class UnknownActionError(AgentDefinitionError, KeyError):
    """A node ``uses:`` (or ``cache.wrap`` wraps) an action that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class RunBlocksRefusedError(AgentDefinitionError):
    """The agent has ``run:`` blocks and was loaded with ``allow_run=False`` / ``--no-run``."""


class AgentInputError(AgentError, ValueError):
    """The input state does not fit (not a JSON object, ``state_schema`` mismatch)."""

    exit_code = 3


class NodeError(AgentError):
    """A node failed while the agent ran."""

    exit_code = 4

    def __init__(self, node: str, message: str) -> None:
        super().__init__(f"node {node!r}: {message}")
        self.node = node


class TemplateVariableError(NodeError):
    """A ``{{ ... }}`` template names a variable or field that does not exist."""


class SandboxError(NodeError):
    """A template tried something the Jinja sandbox refuses (private attributes, unsafe calls)."""


class RunBlockError(NodeError):
    """A ``run:`` block raised or returned something that is not a dict."""


def suggest(name: str, choices: Iterable[str], n: int = 3) -> str:
    """`` (did you mean 'x' or 'y'?)`` for the closest choices, or an empty string."""
    close = difflib.get_close_matches(name, list(choices), n=n, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
