"""The scratchpad's LLM face: tool schemas (OpenAI and Anthropic), one dispatcher, the system prompt.

Every answer is a JSON object with ``success``. Items in write, update, delete and list answers are
metadata views of at most 500 bytes each (``items.llm_view``), and a list answer is at most the pad's
``list_budget_bytes`` (4 KB by default) with a ``nextCursor`` for the rest; ``read`` alone carries
``data``, with the item's whole metadata. A failure is an answer too
(``success: false``, ``error`` = a short code, ``message`` = what to do next), never an exception,
so an agent loop can hand it straight back to the model.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .._usage import closest
from .errors import InvalidArgumentError, ScratchpadError
from .items import DESCRIPTION_LIMIT, compact_json, llm_view
from .listing import MAX_TOOL_LIMIT, TEXT_FILTER_LIMIT

if TYPE_CHECKING:  # annotations only: Scratchpad.handle_tool_call imports this module, not the reverse
    from .scratchpad import Scratchpad

log = logging.getLogger("actioncache.scratchpad")

_PROMPT = """\
You have a scratchpad: a key-value store for this session that lives outside your context window.
Use it when a task has many steps or large intermediate results (e.g. "summarize each of my 50 unread
emails, then write a report"): after each step, save the result with scratchpad_write and a one-line
description (max 300 characters) of what it holds. Writing again with the same task_id and turn_id
replaces that item (the answer then says "replaced"): give each item its own turn_id, or leave it out.
Answers show only metadata (storageKey, description, size, time), never the data, so your context
stays small. scratchpad_list shows one page ({page}); when its answer has nextCursor, the listing is
not done, even when the page is empty: call it with cursor=nextCursor for the next page. Narrow it
with task_id, turn_id or text (words in the description) instead of paging through everything. Call
scratchpad_read with a storageKey only when you need that item's content and full description. Use
scratchpad_update to extend an item (progressive results) and scratchpad_delete for items you no
longer need. Limits: {item} per item (split bigger data into parts) and {quota} per session, keys
and metadata included (usedBytes in answers; delete old items first). If an answer says the store is
unavailable, continue the task in your context instead. Do not store secrets. Small facts you need
right away can stay in context."""


def _size_text(n: float) -> str:
    mb = n / (1024 * 1024)
    if mb >= 1 and mb.is_integer():
        return f"{mb:g} MB"
    return f"{mb:.2f} MB" if n >= 100 * 1024 else f"{n / 1024:.1f} KB".replace(".0 KB", " KB")


def system_prompt(item_limit_bytes: int = 5 * 1024 * 1024, session_quota_bytes: int = 50 * 1024 * 1024,
                  list_budget_bytes: int = 4096) -> str:
    """The instructions for a model, stating the limits the pad enforces (``actioncache mcp``
    sends the ones it was started with: a model told "5 MB" by a 0.5 MB server wrote in vain)."""
    return _PROMPT.format(item=_size_text(item_limit_bytes), quota=_size_text(session_quota_bytes),
                          page=f"at most {_size_text(list_budget_bytes)} of JSON")


# The instructions for a pad with the default limits.
SYSTEM_PROMPT = system_prompt()

_KEY = {"type": "string", "description": "storageKey exactly as scratchpad_write or scratchpad_list returned it"}
_ID = {"type": "string", "description": "optional; 1-32 letters, digits or '-'. Leave out to get a random id"}
_DATA = {"description": "the content to store: any JSON value (object, array, string, number, boolean, null)"}
_METADATA = {
    "type": "object",
    "description": "optional short tags (at most 150 bytes as JSON), e.g. {\"source\": \"gmail\", \"index\": 3}",
}

# name -> (description, JSON schema of the arguments)
TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "scratchpad_write": (
        "Save an intermediate result outside your context window. Returns metadata only "
        "(storageKey, description, size, timestamp); keep the storageKey to read the data later.",
        {
            "type": "object",
            "properties": {
                "data": _DATA,
                # No maxLength: a longer description is cut with an ellipsis (docs/scratchpad.md), which a client
                # that validates against the schema would refuse to send instead.
                "description": {
                    "type": "string",
                    "description": f"what the data is, one line, max {DESCRIPTION_LIMIT} characters (longer is cut "
                    "with an ellipsis) (e.g. 'Email 3 from Ann re: Q4 budget, 120-word summary')",
                },
                "task_id": _ID,
                "turn_id": {"type": "string", "description": "optional; 1-32 letters, digits or '-'. Leave out to "
                            "get a random id. The same task_id and turn_id name one item: writing them again "
                            "replaces it (the answer says \"replaced\")"},
                "metadata": _METADATA,
            },
            "required": ["data", "description"],
        },
    ),
    "scratchpad_read": (
        "Load one saved item's full data and full description into context. The only call that returns data: "
        "read only what you need now.",
        {"type": "object", "properties": {"key": _KEY}, "required": ["key"]},
    ),
    "scratchpad_list": (
        "List saved items, a page at a time: metadata only (keys, descriptions, sizes) plus quota usage "
        "(usedBytes of quotaBytes). When the answer has nextCursor, the listing is not done (remaining says how "
        "many items are still to look at, even when this page is empty): call again with cursor=nextCursor. "
        "No nextCursor: nothing more matches. Filter by task_id, turn_id or text in the description.",
        {
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "optional; only items of this task id"},
                "turn_id": {"type": "string", "description": "optional; only items of this turn id"},
                "text": {"type": "string", "maxLength": TEXT_FILTER_LIMIT,
                         "description": "optional; only items whose description contains this text (any case)"},
                "cursor": {"type": "string", "description": "optional; nextCursor of the previous scratchpad_list "
                           "answer (it keeps that call's filters)"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_TOOL_LIMIT,
                          "description": "optional; at most this many items (default: as many as fit a few KB)"},
            },
        },
    ),
    "scratchpad_update": (
        "Replace a saved item's data (e.g. add newly processed results), keeping its storageKey. "
        "Optionally give a new description. Returns metadata only.",
        {
            "type": "object",
            "properties": {
                "key": _KEY,
                "data": _DATA,
                "description": {"type": "string", "description": f"optional new description, max "
                                f"{DESCRIPTION_LIMIT} characters (longer is cut with an ellipsis)"},
                "metadata": _METADATA,
            },
            "required": ["key", "data"],
        },
    ),
    "scratchpad_delete": (
        "Delete one saved item you no longer need (frees quota). Works on corrupt items too.",
        {"type": "object", "properties": {"key": _KEY}, "required": ["key"]},
    ),
}


# Every tool takes only the arguments its schema names: an unknown one is refused, not ignored (a
# model that spells task_id as taskId, the answers' spelling, would otherwise list or write
# unfiltered, then act on items of other tasks).
for _description, _schema in TOOLS.values():
    _schema["additionalProperties"] = False

# An error answer quotes at most this much of any bad value the model sent (a 1 MB argument must
# not come back as a 1 MB answer).
_QUOTE_LIMIT = 200


def _unknown_arguments(tool: str, arguments: Mapping[str, Any]) -> None:
    allowed = list(TOOLS[tool][1]["properties"]) if tool in TOOLS else []
    for name in arguments:
        if name in allowed:
            continue
        snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()  # taskId -> task_id
        guess = snake if snake in allowed else closest(snake, allowed)
        hint = f" (did you mean {guess!r}?)" if guess else ""
        takes = ", ".join(allowed) if allowed else "no arguments"
        raise InvalidArgumentError(f"unknown argument {_quote(name)}{hint}; {tool} takes: {takes}")


def _shorten(text: str, head: int = _QUOTE_LIMIT, tail: int = 0) -> str:
    """``text`` if it is short; else its first ``head`` characters, its length and, with ``tail``,
    its last ``tail`` characters (where a message's advice is). Every quote of a caller's value in an
    answer goes through here, so no answer repeats a huge bad value back to the model."""
    if len(text) <= head + tail:
        return text
    end = f" ... {text[-tail:]}" if tail else ""
    return f"{text[:head]}... ({len(text)} characters){end}"


def _quote(value: Any) -> str:
    return _shorten(repr(value))


def _cut(value: Any) -> Any:
    return _shorten(value) if isinstance(value, str) else value


def tool_schemas(format: str = "openai") -> list[dict[str, Any]]:
    """The tool definitions in the shape an API expects: ``"openai"`` (chat completions
    ``tools=[{"type": "function", ...}]``), ``"anthropic"`` (messages ``tools=[{"input_schema": ...}]``)
    or ``"mcp"`` (name, description, inputSchema)."""
    out = []
    for name, (description, schema) in TOOLS.items():
        schema = json.loads(json.dumps(schema))  # callers may mutate their copy
        if format == "openai":
            out.append({"type": "function", "function": {"name": name, "description": description, "parameters": schema}})
        elif format == "anthropic":
            out.append({"name": name, "description": description, "input_schema": schema})
        elif format == "mcp":
            out.append({"name": name, "description": description, "inputSchema": schema})
        else:
            raise ValueError(f"unknown tool schema format {format!r}; use 'openai', 'anthropic' or 'mcp'")
    return out


def _usage(pad: Scratchpad) -> dict[str, Any]:
    return {"usedBytes": pad.used_bytes(), "quotaBytes": pad.session_quota_bytes}


def _write(pad: Scratchpad, a: dict[str, Any]) -> dict[str, Any]:
    meta = pad.write(_required(a, "data"), _required(a, "description"),
                     task_id=a.get("task_id"), turn_id=a.get("turn_id"), metadata=a.get("metadata"))
    replaced = meta.pop("replaced", None)
    out: dict[str, Any] = {"item": llm_view(meta), **_usage(pad)}
    if replaced:  # the same task_id and turn_id: the earlier item is gone, and the model is told so
        out["replaced"] = replaced
    return out


def _read(pad: Scratchpad, a: dict[str, Any]) -> dict[str, Any]:
    # The whole item: the 500-byte view is for answers that list; read is asked for one item.
    item = pad.read(_required(a, "key"))
    data = item.pop("data")
    return {"item": item, "data": data}


# Stands in for count and total while the envelope is measured: no page or session has more items.
_COUNT_PLACEHOLDER = 10**12


def _list(pad: Scratchpad, a: dict[str, Any]) -> dict[str, Any]:
    limit = a.get("limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > MAX_TOOL_LIMIT:
        raise InvalidArgumentError(f"limit is {limit}, at most {MAX_TOOL_LIMIT} items fit one answer; "
                                   "page with nextCursor instead")
    usage = _usage(pad)
    # The answer is this envelope merged with the page ({"items": [...], "nextCursor": ...}): the page
    # gets what the budget leaves, so the whole answer never passes pad.list_budget_bytes.
    envelope = {"success": True, "sessionId": pad.session_id, "count": _COUNT_PLACEHOLDER,
                "total": _COUNT_PLACEHOLDER, "remaining": _COUNT_PLACEHOLDER, **usage}
    page = pad.list(task_id=a.get("task_id"), turn_id=a.get("turn_id"), text=a.get("text"), cursor=a.get("cursor"),
                    limit=limit, budget_bytes=pad.list_budget_bytes - _size(envelope) + 1, view=llm_view)
    answer: dict[str, Any] = {"count": len(page), "total": page.total}
    if page.next_cursor is not None:
        # Not done: how many candidates the walk has still to look at (an empty page is not "none").
        answer["nextCursor"] = page.next_cursor
        answer["remaining"] = page.remaining
    return {**answer, **usage, "items": list(page)}


def _update(pad: Scratchpad, a: dict[str, Any]) -> dict[str, Any]:
    meta = pad.update(_required(a, "key"), _required(a, "data"),
                      description=a.get("description"), metadata=a.get("metadata"))
    return {"item": llm_view(meta), **_usage(pad)}


def _delete(pad: Scratchpad, a: dict[str, Any]) -> dict[str, Any]:
    return {"deleted": llm_view(pad.delete(_required(a, "key")))}


def _end(pad: Scratchpad, a: dict[str, Any]) -> dict[str, Any]:
    return {"deleted_count": pad.end_session()}


# "scratchpad_end" is not offered to models (tool_schemas) but agent runtimes may call it.
HANDLERS: dict[str, Callable[[Scratchpad, dict[str, Any]], dict[str, Any]]] = {
    "scratchpad_write": _write,
    "scratchpad_read": _read,
    "scratchpad_list": _list,
    "scratchpad_update": _update,
    "scratchpad_delete": _delete,
    "scratchpad_end": _end,
}


def _size(answer: Mapping[str, Any]) -> int:
    return len(compact_json(answer).encode("utf-8"))


def _required(arguments: Mapping[str, Any], name: str) -> Any:
    if name not in arguments:
        raise InvalidArgumentError(f"missing argument {name!r}; see the tool's parameters")
    return arguments[name]


def _arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise InvalidArgumentError(f"tool arguments are not valid JSON ({exc}); send a JSON object") from exc
    if not isinstance(arguments, Mapping):
        raise InvalidArgumentError("tool arguments must be a JSON object of parameter: value")
    return dict(arguments)


def dispatch(pad: Scratchpad, name: str, arguments: Mapping[str, Any] | str | None = None, *,
             listed_only: bool = False) -> dict[str, Any]:
    """Run one tool call and return the answer as a dict (``success`` plus the result or error).

    ``listed_only``: accept only the tools offered to models (:data:`TOOLS`), as a server that
    publishes a tool list must; ``scratchpad_end`` is then refused like any unknown tool.
    """
    resolved = name if name in HANDLERS else f"scratchpad_{name}"
    handler = HANDLERS.get(resolved)
    if listed_only and resolved not in TOOLS:
        handler = None
    if handler is None:
        return {"success": False, "error": "unknown_tool",
                "message": f"unknown tool {name!r}; the scratchpad tools are {', '.join(TOOLS)}"}
    try:
        parsed = _arguments(arguments)
        _unknown_arguments(resolved, parsed)
        result = handler(pad, parsed)
    except ScratchpadError as exc:
        details = {k: _cut(v) for k, v in exc.details.items()}
        message = _shorten(str(exc), 2 * _QUOTE_LIMIT, _QUOTE_LIMIT)
        return {"success": False, "error": exc.code, "message": message, **details,
                "sessionId": pad.session_id}
    except Exception as exc:
        log.exception("scratchpad tool %s failed", name)
        return {"success": False, "error": "internal_error",
                "message": f"{type(exc).__name__}: {exc}; continue the task in context"}
    return {"success": True, "sessionId": pad.session_id, **result}


def handle_tool_call(pad: Scratchpad, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
    """Run one LLM tool call (``arguments`` as a dict or the JSON string an API sends) and return
    the JSON text to send back as the tool result."""
    return json.dumps(dispatch(pad, name, arguments), ensure_ascii=False, separators=(",", ":"))
