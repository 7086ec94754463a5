"""Session scratchpad: a key-object store an LLM writes to instead of its context window.

    from actioncache.scratchpad import Scratchpad, SYSTEM_PROMPT, tool_schemas
    pad = Scratchpad(store="sqlite:///tmp/pad.db", session_id="conv-42")
    meta = pad.write({"summary": "..."}, description="Email 1 summary")   # metadata only
    pad.read(meta["storageKey"])["data"]
    pad.handle_tool_call("scratchpad_list", {})                           # JSON text for the LLM

See docs/scratchpad.md.
"""

from .cleanup import cleanup_orphans
from .errors import (
    CorruptItemError,
    InvalidArgumentError,
    InvalidKeyError,
    ItemNotFoundError,
    ItemTooLargeError,
    QuotaExceededError,
    ScratchpadBusyError,
    ScratchpadError,
    StoreUnavailableError,
)
from .scratchpad import Scratchpad
from .tools import SYSTEM_PROMPT, dispatch, handle_tool_call, tool_schemas

__all__ = [
    "CorruptItemError",
    "InvalidArgumentError",
    "InvalidKeyError",
    "ItemNotFoundError",
    "ItemTooLargeError",
    "QuotaExceededError",
    "SYSTEM_PROMPT",
    "Scratchpad",
    "ScratchpadBusyError",
    "ScratchpadError",
    "StoreUnavailableError",
    "cleanup_orphans",
    "dispatch",
    "handle_tool_call",
    "tool_schemas",
]
