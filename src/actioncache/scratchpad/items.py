"""What one scratchpad item looks like: its key, its stored form and the view an LLM sees.

Storage keys (what the LLM passes around) are ``{sessionId}_{taskId}_{turnId}``.
In the store an item lives under ``scratch:{sessionId}:{storageKey}`` and the session's index under
``scratch-session:{sessionId}``; the colon after the session id makes one session's prefix never a
prefix of another's, because session ids cannot contain a colon.

Ids: a session id is 1-64 characters of ``A-Z a-z 0-9 . _ -``; task and turn ids are 1-32
characters of ``A-Z a-z 0-9 -`` (no underscore, so a key splits unambiguously from the right);
generated ids are 8 random alphanumerics.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import secrets
import string
from typing import Any, Mapping, NamedTuple

from .errors import CorruptItemError, InvalidArgumentError, InvalidKeyError
from .text import cut_to_fit, cut_to_length

ITEM_PREFIX = "scratch:"
SESSION_PREFIX = "scratch-session:"
INDEX_PREFIX = "scratch-index:"
USAGE_COUNTER_PREFIX = "scratchpad-bytes:"
LEASE_PREFIX = "scratchpad:"  # store leases: one per session's writers, and the orphan sweep's
# ':' is never in a session id, so no session's lease is the sweep's (a session named
# "orphan-sweep" was busy for an hour after every sweep while the two shared a name).
ORPHAN_SWEEP_LEASE = LEASE_PREFIX + ":orphan-sweep"
ID_LENGTH = 8
MAX_SESSION_ID = 64
MAX_PART_ID = 32
MAX_KEY_LENGTH = MAX_SESSION_ID + 2 * MAX_PART_ID + 2
DESCRIPTION_LIMIT = 300
CUSTOM_METADATA_LIMIT = 150  # bytes of compact JSON; keeps every item's view under VIEW_LIMIT
VIEW_LIMIT = 500  # bytes of compact JSON per item in any answer to the LLM
# The first byte of the core codec's plain-JSON format, so `actioncache get` can show an item.
JSON_FORMAT = b"j"

_ALNUM = string.ascii_letters + string.digits
_SESSION_RE = re.compile(r"[A-Za-z0-9._-]{1,%d}" % MAX_SESSION_ID)
_PART_RE = re.compile(r"[A-Za-z0-9-]{1,%d}" % MAX_PART_ID)


class StorageKey(NamedTuple):
    session_id: str
    task_id: str
    turn_id: str

    def __str__(self) -> str:
        return f"{self.session_id}_{self.task_id}_{self.turn_id}"


def new_id() -> str:
    """Eight random alphanumeric characters (62^8 ≈ 2e14 values: collisions are not a concern)."""
    return "".join(secrets.choice(_ALNUM) for _ in range(ID_LENGTH))


def check_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not _SESSION_RE.fullmatch(session_id):
        raise InvalidArgumentError(
            f"session id {session_id!r} is not valid: use 1-{MAX_SESSION_ID} characters of letters, digits, '.', '_' or '-'"
        )
    return session_id


def check_part_id(value: Any, name: str) -> str:
    if not isinstance(value, str) or not _PART_RE.fullmatch(value):
        raise InvalidArgumentError(
            f"{name} {value!r} is not valid: use 1-{MAX_PART_ID} characters of letters, digits or '-' "
            f"(no '_'), or leave it out to get a random {ID_LENGTH}-character id"
        )
    return value


def parse_key(key: Any) -> StorageKey:
    """Split ``{sessionId}_{taskId}_{turnId}``; refuse anything else with a message saying the format."""
    fmt = "keys look like '{sessionId}_{taskId}_{turnId}', exactly as write/list returned them"
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"storage key must be a non-empty string, not {key!r}; {fmt}")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKeyError(f"storage key is {len(key)} characters, the limit is {MAX_KEY_LENGTH}; {fmt}")
    parts = key.rsplit("_", 2)
    if (
        len(parts) != 3
        or not _SESSION_RE.fullmatch(parts[0])
        or not _PART_RE.fullmatch(parts[1])
        or not _PART_RE.fullmatch(parts[2])
    ):
        raise InvalidKeyError(f"malformed storage key {key!r}; {fmt}")
    return StorageKey(*parts)


def own_key_pattern(session_id: str) -> re.Pattern[str]:
    """Matches exactly the storage keys of ``session_id`` (groups: task id, turn id): one regex
    per key where a listing of 10,000 keys would otherwise split and check each three times."""
    part = "([A-Za-z0-9-]{1,%d})" % MAX_PART_ID
    return re.compile(re.escape(session_id) + "_" + part + "_" + part)


def item_store_key(session_id: str, storage_key: str) -> str:
    return f"{ITEM_PREFIX}{session_id}:{storage_key}"


def session_store_key(session_id: str) -> str:
    """The session's marker entry: when it was last used (orphan cleanup reads it)."""
    return f"{SESSION_PREFIX}{session_id}"


def index_store_key(session_id: str, storage_key: str) -> str:
    """One item's index entry: its metadata, small, so list never loads data."""
    return f"{INDEX_PREFIX}{session_id}:{storage_key}"


def session_lease(session_id: str) -> str:
    """The store lease that keeps a session's writers (and the orphan sweep) apart."""
    return f"{LEASE_PREFIX}{session_id}"


def usage_counter(session_id: str) -> str:
    """The store counter holding the bytes a session occupies (added to atomically)."""
    return f"{USAGE_COUNTER_PREFIX}{session_id}"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# What makes a description one line: runs of ASCII spaces, tabs and line or paragraph breaks become
# one space. Other spaces (no-break, ideographic U+3000, thin) are part of the text and stay.
_LINE_BREAKING_SPACE = re.compile("[ \t\n\r\f\v\x1c-\x1f\x85\u2028\u2029]+")


def truncate_description(description: Any) -> str:
    """One line of at most 300 characters (code points); a longer one is cut at a grapheme
    cluster boundary and ends with an ellipsis."""
    if not isinstance(description, str) or not description.strip():
        raise InvalidArgumentError(
            "description is required: one line (max 300 characters) saying what the data is, "
            "e.g. 'Email 3 from Ann re: Q4 budget, 120-word summary'"
        )
    description = _LINE_BREAKING_SPACE.sub(" ", description).strip()
    if not description.isascii():
        # A lone surrogate (text decoded with surrogateescape) cannot be stored as UTF-8; in a
        # line for the model it becomes the replacement character instead of failing the write.
        description = _LONE_SURROGATE.sub("\ufffd", description)
    return cut_to_length(description, DESCRIPTION_LIMIT)


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def check_custom_metadata(metadata: Any) -> dict[str, Any] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidArgumentError("metadata must be a JSON object with string keys, e.g. {\"source\": \"gmail\"}")
    try:
        text = compact_json(dict(metadata))
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"metadata must hold only JSON values ({exc})") from exc
    if len(text.encode("utf-8")) > CUSTOM_METADATA_LIMIT:
        raise InvalidArgumentError(
            f"metadata is {len(text.encode('utf-8'))} bytes as JSON, the limit is {CUSTOM_METADATA_LIMIT}: "
            "keep a few short tags there and put details in the data itself"
        )
    return dict(metadata) or None


def encode_data(data: Any) -> bytes:
    """Any JSON value, as compact UTF-8 JSON (without the format byte); refuse anything else."""
    try:
        return compact_json(data).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"data must be JSON (object, array, string, number, true/false or null): {exc}"
        ) from exc


def decode_data(value: bytes, storage_key: str) -> Any:
    if value[:1] != JSON_FORMAT:
        raise CorruptItemError(
            f"item {storage_key} is corrupt (unknown format byte {value[:1]!r}); "
            "delete it and write the data again if you still have it"
        )
    try:
        return json.loads(value[1:].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptItemError(
            f"item {storage_key} is corrupt ({exc}); delete it and write the data again if you still have it"
        ) from exc


def iso_ms(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def item_metadata(
    key: StorageKey, description: str, size: int, now: float, created: float, custom: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The metadata of one item, as stored and as the Python API returns it."""
    meta: dict[str, Any] = {
        "storageKey": str(key),
        "description": description,
        "timestamp": iso_ms(now),
        "dataSize": size,
        "sessionId": key.session_id,
        "taskId": key.task_id,
        "turnId": key.turn_id,
    }
    # Stored from the first write on (equal to ``timestamp`` then), so an update never adds a field
    # of its own: an item whose data shrinks never grows, and fits a full quota (an update that
    # first added ``createdAt`` was refused at a full quota while shrinking its data).
    meta["createdAt"] = iso_ms(created)
    if custom:
        meta["metadata"] = dict(custom)
    return meta


def public_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """An item's metadata without the private ``_``-prefixed fields the store and index keep."""
    return {k: v for k, v in dict(meta).items() if not k.startswith("_")}


def _size(view: Mapping[str, Any]) -> int:
    return len(compact_json(view).encode("utf-8"))


def llm_view(meta: Mapping[str, Any], limit: int = VIEW_LIMIT) -> dict[str, Any]:
    """The item as an LLM sees it: metadata only, at most ``limit`` bytes of compact JSON.

    The description stays whole when it fits (the usual case); with long ids, custom metadata or
    a description in a multi-byte script, ``createdAt``, ``sessionId`` (repeated in every answer's
    envelope), ``taskId`` and ``turnId`` (parts of the storageKey) go first, then the description
    is shortened, at a grapheme cluster boundary, with an ellipsis. ``read`` gives it whole.
    """
    view = {k: meta[k] for k in ("storageKey", "description", "timestamp", "dataSize", "sessionId",
                                 "taskId", "turnId", "createdAt", "metadata", "corrupt") if k in meta}
    if view.get("createdAt") == view.get("timestamp"):
        del view["createdAt"]  # never updated: the field says nothing the timestamp does not
    # sessionId is in every answer's envelope and taskId/turnId are parts of the storageKey, so
    # they go before a single character of the description does.
    for optional in ("createdAt", "sessionId", "taskId", "turnId"):
        if _size(view) <= limit:
            return view
        view.pop(optional, None)
    if _size(view) > limit:
        # The longest prefix of whole grapheme clusters that fits with the ellipsis: a description
        # in a 3-byte script keeps as many characters as the budget holds, and never half an emoji.
        view["description"] = cut_to_fit(str(view.get("description", "")),
                                         lambda text: _size({**view, "description": text}) <= limit)
    return view
