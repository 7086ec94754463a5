"""The stored value of one exec key: a manifest of candidate results, each with its read-set.

One primary key (tool, argv, working directory, declared inputs) can have several valid pasts:
``git log`` before and after a commit, a linter with two versions of its config. Like ccache's
manifests, the entry under ``cache:exec:{tool}:{sha256}`` holds up to ``MAX_CANDIDATES`` of them,
newest first; a lookup serves the first candidate whose read-set still holds and whose age is within
``max_cache_age_hours`` (judged now, so lowering the setting expires what is stored).

The value is the codec's plain-JSON format (``j`` + JSON; stdout/stderr as base64), so
``actioncache get`` shows it and the hit path decodes it without importing the codec.
"""

from binascii import a2b_base64, b2a_base64

from .. import _lean as lean

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    from typing import Any

FORMAT = 2
MAX_CANDIDATES = 8
PLAIN_JSON = b"j"  # the codec's format byte for plain JSON
ENTRY_TYPE = "exec_result"


def decode(value: bytes) -> "list[dict[str, Any]]":
    """The candidates in a stored value; [] for anything else (an older format is simply a miss)."""
    if value[:1] != PLAIN_JSON:
        return []
    try:
        data = lean.loads(value[1:].decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return []
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("candidates"), list):
        return []
    return [c for c in data["candidates"] if well_formed(c)]


def well_formed(c: "Any") -> bool:
    """Whether a stored candidate has the shape every later step relies on: the one check between
    stored bytes (perhaps a foreign writer's) and a hit. A candidate that fails it is not served;
    the run goes on as a miss and its result replaces the entry."""
    if not isinstance(c, dict) or not _number(c.get("at")) or not isinstance(c.get("readset"), list):
        return False
    for record in c["readset"]:  # (no generator per record: a read-set holds hundreds)
        if not (isinstance(record, list) and len(record) >= 4 and isinstance(record[0], str)
                and isinstance(record[1], str) and isinstance(record[2], str)
                and (record[3] is None or isinstance(record[3], str))):
            return False
    if not isinstance(c.get("measured", True), bool):
        return False
    offset = c.get("stdin_offset")
    if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
        return False
    code, duration, fresh = c.get("exit_code", 0), c.get("duration_ms"), c.get("fresh_ms")
    if isinstance(code, bool) or not isinstance(code, int) or not (duration is None or _number(duration)) \
            or not (fresh is None or _number(fresh)):
        return False
    try:
        return all(isinstance(c.get(name, ""), str) and a2b_base64(c.get(name, "")) is not None
                   for name in ("stdout", "stderr"))
    except ValueError:  # binascii.Error: not base64
        return False


def _number(value: "Any") -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def encode(candidates: "list[dict[str, Any]]") -> bytes:
    return PLAIN_JSON + lean.dumps({"format": FORMAT, "candidates": candidates[:MAX_CANDIDATES]}).encode("utf-8")


def candidate(result: "dict[str, Any]", readset: "list[list[Any]]", at: float, traced: bool) -> "dict[str, Any]":
    return {"at": at, "traced": traced, "readset": readset, "exit_code": int(result["exit_code"]),
            "duration_ms": float(result.get("duration_ms") or 0.0),
            "fresh_ms": float(result.get("fresh_ms", result.get("duration_ms")) or 0.0),
            "measured": bool(result.get("measured", False)),
            "stdout": b2a_base64(result["stdout"], newline=False).decode("ascii"),
            "stderr": b2a_base64(result["stderr"], newline=False).decode("ascii"),
            **({"stdin_offset": result["stdin_offset"]} if result.get("stdin_offset") is not None else {})}


def output(found: "dict[str, Any]") -> "dict[str, Any]":
    """A candidate as a run result: exit code, stdout and stderr bytes, the recorded run's duration
    (traced) and its fresh time (untraced, measured or estimated: ``cost``), and where the run left
    the offset of a file on its stdin (``keys.replay_stdin_offset``)."""
    return {"exit_code": int(found.get("exit_code", 0)), "stdout": a2b_base64(found.get("stdout", "")),
            "stderr": a2b_base64(found.get("stderr", "")), "duration_ms": float(found.get("duration_ms") or 0.0),
            "fresh_ms": float(found.get("fresh_ms", found.get("duration_ms")) or 0.0),
            "stdin_offset": found.get("stdin_offset")}


def live(candidates: "list[dict[str, Any]]", now: float, max_age_hours: float) -> "list[dict[str, Any]]":
    oldest = now - max_age_hours * 3600.0
    return [c for c in candidates if isinstance(c.get("at"), (int, float)) and c["at"] >= oldest]


def choose(candidates: "list[dict[str, Any]]", now: float, max_age_hours: float) -> "tuple[dict[str, Any] | None, list[str]]":
    """The first live candidate whose read-set holds, and why each other one did not."""
    from .readcheck import describe, first_change

    why: list[str] = []
    fresh = live(candidates, now, max_age_hours)
    if len(fresh) < len(candidates):
        why.append(f"{len(candidates) - len(fresh)} entr{'y' if len(candidates) - len(fresh) == 1 else 'ies'} "
                   f"older than max_cache_age_hours={max_age_hours:g}")
    for found in fresh:
        change = first_change(found["readset"])
        if change is None:
            return found, why
        path, was, now_seen = change
        why.append(f"{path} changed: was {describe(was)}, now {describe(now_seen)}")
    return None, why
