"""Move entries between stores: export to JSON Lines, import from it, copy one store into another.

Entries travel exactly as the store holds them (key, encoded value, metadata, created and expiry
times), so nothing is decoded on the way: a signed-pickle entry stays signed, a compressed one
stays compressed, and an entry keeps the expiry it had, whatever the target backend. A dump is
one header line (``{"format": "actioncache-export/1", ...}``) and one JSON object per entry, the
value in base64, so a dump can be read, filtered or diffed with ordinary line tools.

Expired entries and entries the store cannot turn into a valid record (planted or corrupt data)
are skipped and counted, never copied: a dump must not carry garbage from one store to the next.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import Any, Callable, Iterable, Iterator, TextIO

from .errors import DumpError
from .stores.base import CacheStore, Entry, entry_problem, redact_url

FORMAT = "actioncache-export/1"

Progress = Callable[[int, "int | None"], None]


def entry_record(entry: Entry) -> dict[str, Any]:
    """One entry as the JSON object a dump holds."""
    return {
        "key": entry.key,
        "value_b64": base64.b64encode(bytes(entry.value)).decode("ascii"),
        "metadata": dict(entry.metadata),
        "created_at": entry.created_at,
        "expires_at": entry.expires_at,
    }


def record_entry(record: Any, where: str) -> Entry:
    """The entry a dump record describes; a malformed record raises :class:`DumpError` naming ``where``."""
    if not isinstance(record, dict):
        raise DumpError(f"{where}: not a JSON object")
    missing = [name for name in ("key", "value_b64") if name not in record]
    if missing:
        raise DumpError(f"{where}: no {' or '.join(missing)} (is this a file written by `actioncache export`?)")
    if not isinstance(record["key"], str):
        raise DumpError(f"{where}: the key is not text")
    try:
        value = base64.b64decode(record["value_b64"], validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise DumpError(f"{where}: value_b64 is not base64") from None
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise DumpError(f"{where}: metadata is not a JSON object")
    entry = Entry(record["key"], value, metadata, record.get("created_at", time.time()), record.get("expires_at"))
    problem = entry_problem(entry)
    if problem:
        raise DumpError(f"{where}: {problem}")
    return entry


def live_entries(store: CacheStore, pattern: str | None, counts: dict[str, int],
                 progress: Progress | None = None) -> Iterator[Entry]:
    """The live, well-formed entries of ``store`` whose keys match ``pattern`` (a glob; None = all)."""
    keys = store.find(pattern=pattern or "*")
    now = time.time()
    for done, key in enumerate(keys, 1):
        entry = store.get(key)
        if entry is None:  # removed since find(): nothing to move
            counts["vanished"] += 1
        elif entry_problem(entry):
            counts["skipped_corrupt"] += 1
        elif entry.is_expired(now):
            counts["skipped_expired"] += 1
        else:
            yield entry
        if progress:
            progress(done, len(keys))


def _counts() -> dict[str, int]:
    return {"exported": 0, "imported": 0, "copied": 0, "skipped_expired": 0, "skipped_corrupt": 0, "vanished": 0,
            "failed": 0}


_SHOWN_FAILURES = 5


def _put(target: CacheStore, entry: Entry, counts: dict[str, int], failures: list[str], where: str) -> bool:
    """Put one entry; an entry the target cannot hold (a key PostgreSQL cannot store, a value over
    its size limit) is counted and named, and the transfer goes on with the next one."""
    try:
        target.put(entry)
    except Exception as exc:  # noqa: BLE001 - one entry the target refuses must not stop the rest
        counts["failed"] += 1
        if len(failures) < _SHOWN_FAILURES:
            failures.append(f"{where} ({entry.key!r}): {exc}")
        return False
    return True


def _result(counts: dict[str, int], main: str, failures: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"success": not counts["failed"], **_nonzero(counts, main)}
    if failures:
        more = counts["failed"] - len(failures)
        out["error"] = f"{entries(counts['failed'])} could not be stored: " + "; ".join(failures) + (
            f"; and {more} more" if more > 0 else "")
    return out


def export_entries(store: CacheStore, out: TextIO, pattern: str | None = None,
                   progress: Progress | None = None) -> dict[str, Any]:
    """Write the live entries of ``store`` (matching the glob ``pattern``) to ``out`` as a dump."""
    counts = _counts()
    header = {"format": FORMAT, "source": redact_url(store.url), "exported_at": time.time(), "pattern": pattern}
    out.write(json.dumps(header, sort_keys=True) + "\n")
    for entry in live_entries(store, pattern, counts, progress):
        out.write(json.dumps(entry_record(entry), sort_keys=True, ensure_ascii=True) + "\n")
        counts["exported"] += 1
    return {"success": True, **_nonzero(counts, "exported")}


_MAKE_DUMPS = "make dumps with `actioncache export`"


def read_dump(lines: Iterable[str]) -> Iterator[Entry]:
    """The entries of a dump, checking its header; raises :class:`DumpError` at the first bad line.

    A dump starts with its header (blank lines aside): a file without one, or with nothing in it,
    is not a dump, and nothing of it is read."""
    header_seen = False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise DumpError(f"{where}: not JSON ({exc})" if header_seen else
                            f"not an actioncache dump: {where} is not JSON; {_MAKE_DUMPS}") from None
        if isinstance(record, dict) and "format" in record and "key" not in record:
            if record["format"] != FORMAT:
                raise DumpError(f"{where}: a dump in format {record['format']!r}; this version reads {FORMAT!r}")
            header_seen = True
            continue
        if not header_seen:
            raise DumpError(f"not an actioncache dump: the first line is not its header "
                            f'({{"format": "{FORMAT}", ...}}); {_MAKE_DUMPS}')
        yield record_entry(record, where)
    if not header_seen:
        raise DumpError(f"not an actioncache dump: it is empty (no header line); {_MAKE_DUMPS}")


def import_entries(store: CacheStore, lines: Iterable[str], progress: Progress | None = None) -> dict[str, Any]:
    """Put every entry of a dump into ``store`` (an entry already there is replaced).

    The dump is checked line by line as it is read; a bad line stops the import with an error that
    names it, after the lines before it were imported (each put is atomic, so nothing is half-written).
    Entries that expired since the export are skipped.
    """
    counts = _counts()
    failures: list[str] = []
    now = time.time()
    try:
        for number, entry in enumerate(read_dump(lines), 1):
            if entry.is_expired(now):
                counts["skipped_expired"] += 1
                continue
            if _put(store, entry, counts, failures, f"entry {number}"):
                counts["imported"] += 1
            if progress:
                progress(counts["imported"], None)
    except DumpError as exc:
        return {"success": False, "error": str(exc), **_nonzero(counts, "imported")}
    return _result(counts, "imported", failures)


def copy_entries(source: CacheStore, target: CacheStore, pattern: str | None = None,
                 progress: Progress | None = None) -> dict[str, Any]:
    """Copy the live entries of ``source`` (matching ``pattern``) into ``target``, replacing same keys."""
    counts = _counts()
    failures: list[str] = []
    for entry in live_entries(source, pattern, counts, progress):
        copy = Entry(entry.key, bytes(entry.value), dict(entry.metadata), entry.created_at, entry.expires_at)
        if _put(target, copy, counts, failures, "entry"):
            counts["copied"] += 1
    return _result(counts, "copied", failures)


def entries(n: int) -> str:
    """``n`` with the right noun: "1 entry", "2 entries"."""
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _nonzero(counts: dict[str, int], main: str) -> dict[str, int]:
    """The counts worth reporting: the main one always, the skipped ones when there were any."""
    return {name: n for name, n in counts.items() if name == main or (n and name not in ("exported", "imported", "copied"))}


