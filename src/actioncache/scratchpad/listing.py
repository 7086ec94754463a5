"""Paging through a session's items: filters, an opaque cursor and an answer budget.

A model cannot take 10,000 items in one answer, so ``list`` answers a page at a time. The walk is
in storage-key order and the cursor is the last key the page looked at, so it needs no state on
the server and no snapshot. The guarantee, whatever is written or deleted between pages:

* every item that exists from the first page to the last is returned exactly once;
* no key is returned twice in one walk (an update keeps its key, so it never moves);
* an item written or deleted during the walk is returned at most once: it shows when its key is
  after the cursor and it exists when that part of the walk is read.

Task and turn filters are on the key itself (no read); the text filter reads each candidate's
small index entry, :data:`SCAN_LIMIT` per call once the page has an item, and up to
:data:`EMPTY_SCAN_LIMIT` while it has none: a rare word in a 10,000-item session is found on the
first call, and an answer with no items and no ``nextCursor`` means "not there". A page that stops
early says how far the walk got: ``remaining``, the candidates after its cursor (a model that saw
"count 0" nine times in a row before the match concluded the item did not exist).
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgumentError
from .items import check_part_id, compact_json

DEFAULT_LIST_BUDGET = 4096  # bytes of JSON in one scratchpad_list answer (about 1,000 tokens)
# One item's view is at most 500 bytes and the envelope (session id, counts, a cursor carrying the
# filters) at most about 1 KB: a smaller budget could not hold a single item.
MIN_LIST_BUDGET = 2048
MAX_TOOL_LIMIT = 200  # items one tool answer may ask for
TEXT_FILTER_LIMIT = 100  # characters of a text filter
SCAN_LIMIT = 1000  # index entries one call reads once its page has an item (a text filter with few matches)
EMPTY_SCAN_LIMIT = 20_000  # index entries one call reads at most while its page is still empty
_CURSOR_VERSION = "c1."


@dataclass(frozen=True)
class ListFilter:
    """Which items a listing shows: a task id, a turn id, and text the description contains
    (case-insensitive, compatibility-normalized, so 'ＡＢＣ' finds 'abc' and 'Straße' finds 'STRASSE')."""

    task_id: str | None = None
    turn_id: str | None = None
    text: str | None = None

    @classmethod
    def of(cls, task_id: Any = None, turn_id: Any = None, text: Any = None) -> ListFilter:
        if text is not None:
            if not isinstance(text, str) or not text.strip():
                raise InvalidArgumentError(
                    "text must be a non-empty string to look for in the descriptions, or left out")
            if len(text) > TEXT_FILTER_LIMIT:
                raise InvalidArgumentError(
                    f"text is {len(text)} characters, the limit is {TEXT_FILTER_LIMIT}: search for a shorter phrase")
        return cls(None if task_id is None else check_part_id(task_id, "task_id"),
                   None if turn_id is None else check_part_id(turn_id, "turn_id"),
                   text)

    def matches_key(self, task_id: str, turn_id: str) -> bool:
        return (self.task_id is None or task_id == self.task_id) and (self.turn_id is None or turn_id == self.turn_id)

    def matches(self, meta: Mapping[str, Any]) -> bool:
        return self.text is None or _folded(self.text) in _folded(str(meta.get("description", "")))


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


class ItemPage(list[dict[str, Any]]):
    """One page of a listing: a list of item metadata, plus ``next_cursor`` (None when the walk is
    done) and ``total`` (the session's items that match the task and turn filters)."""

    def __init__(self, items: Iterable[dict[str, Any]] = (), next_cursor: str | None = None, total: int = 0,
                 remaining: int = 0) -> None:
        super().__init__(items)
        self.next_cursor = next_cursor
        self.total = total
        # The candidates (items passing the task and turn filters) after next_cursor: how far the walk got.
        self.remaining = remaining


def _fingerprint(session_id: str) -> str:
    return hashlib.blake2s(session_id.encode("utf-8"), digest_size=4).hexdigest()


def encode_cursor(session_id: str, after: str, filters: ListFilter) -> str:
    """An opaque cursor: continue after the key ``after`` with these filters (they travel in it)."""
    body = [_fingerprint(session_id), after, filters.task_id, filters.turn_id, filters.text]
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return _CURSOR_VERSION + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: Any, session_id: str, given: ListFilter) -> tuple[str, ListFilter]:
    """The key to continue after and the filters of the listing ``cursor`` continues.

    Filters given beside a cursor must be the ones it was made with (or be left out)."""
    again = "call scratchpad_list again without a cursor to start from the first item"
    if not isinstance(cursor, str) or not cursor.startswith(_CURSOR_VERSION):
        raise InvalidArgumentError(f"cursor {cursor!r} is not one that scratchpad_list returned; {again}")
    damaged = InvalidArgumentError(f"cursor {cursor[:40]!r}... is damaged or not one that scratchpad_list "
                                   f"returned; {again}")
    try:
        text = cursor[len(_CURSOR_VERSION):]
        body = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("utf-8"))
        fingerprint, after, task_id, turn_id, phrase = body
        filters = ListFilter.of(task_id, turn_id, phrase)
    except (ValueError, TypeError, UnicodeDecodeError, InvalidArgumentError):
        raise damaged from None
    if not isinstance(after, str) or not isinstance(fingerprint, str):
        raise damaged
    if fingerprint != _fingerprint(session_id):
        raise InvalidArgumentError(f"this cursor belongs to another session's listing; {again}")
    for name in ("task_id", "turn_id", "text"):
        if getattr(given, name) is not None and getattr(given, name) != getattr(filters, name):
            raise InvalidArgumentError(
                f"this cursor continues a listing with {name}={getattr(filters, name)!r}, not "
                f"{getattr(given, name)!r}: pass the cursor alone (it carries its filters), or start a new listing")
    return after, filters


def walk(
    keys: Sequence[str],
    after: str,
    filters: ListFilter,
    read: Callable[[str], dict[str, Any] | None],
    view: Callable[[dict[str, Any]], dict[str, Any]],
    cursor_after: Callable[[str], str],
    *,
    limit: int | None = None,
    budget_bytes: int | None = None,
    scan_limit: int | None = SCAN_LIMIT,
) -> tuple[list[dict[str, Any]], str | None]:
    """One page: the views of the items of ``keys`` (sorted) after ``after`` that ``read`` finds
    and the filters match, until ``limit`` items, ``budget_bytes`` of ``{"items":[...],"nextCursor":"..."}``
    as compact JSON, or ``scan_limit`` reads; and the cursor to continue with (None when done)."""
    start = bisect.bisect_right(keys, after)
    items: list[dict[str, Any]] = []
    size = len('{"items":[]}')
    last: str | None = None
    end = len(keys) if scan_limit is None else start + max(scan_limit, EMPTY_SCAN_LIMIT)
    for scanned, key in enumerate(keys[start:end]):
        if limit is not None and len(items) >= limit:
            break
        if scan_limit is not None and scanned >= scan_limit and items:
            break  # the page has something: the rest is a cursor away
        meta = read(key)
        if meta is not None and filters.matches(meta):
            shown = view(meta)
            grown = size + len(compact_json(shown).encode("utf-8")) + (1 if items else 0)
            # The cursor is counted as if present: the answer fits whether or not one follows.
            if budget_bytes is not None and grown + len(',"nextCursor":""') + len(cursor_after(key)) > budget_bytes:
                if not items:
                    raise InvalidArgumentError(f"an answer budget of {budget_bytes} bytes cannot hold one item; "
                                               f"allow at least {MIN_LIST_BUDGET}")
                break
            items.append(shown)
            size = grown
        last = key
    more = last is not None and bisect.bisect_right(keys, last) < len(keys)
    return items, cursor_after(last) if more and last is not None else None
