"""The entry memo's form of a stored read-set (``hitpath._memo_write``): its stat looks as numbers
(``in_numbers``), its absent names vouched for by their directory (``vouch_absences``) and the
plan a hit checks it by (``plan``, read by ``manifest.first_change``). A module apart from
``manifest`` because only the hit that writes a memo needs it: every hit imports ``manifest``, and
these functions in it cost each one ~0.3 M instructions (its bytecode, unmarshalled).
"""

from .manifest import (
    OPEN_FIELDS,
    PLAN_ERROR,
    PLAN_RECORDS,
    PLAN_SHAPES,
    SEARCH_FIELDS,
    SIGNATURE_FIELDS,
    STAT_FIELDS,
    STAT_LOOKS,
    VOUCH_FIELDS,
    granularity,
)

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    from typing import Any, Sequence
else:  # os without importing it (``_os``: ~6 M instructions a hit)
    from .._os import os


def memo_form(candidates: "list[dict[str, Any]]") -> "list[dict[str, Any]]":
    """The candidates as the hit path's entry memo keeps them: stdout and stderr as bytes rather than
    base64 (``output`` then needs no ``binascii``, whose load cost a hit ~0.2 ms), the read-set's
    stat looks as numbers (``in_numbers``)."""
    from binascii import a2b_base64

    return [{**c, "stdout": a2b_base64(c.get("stdout", "")), "stderr": a2b_base64(c.get("stderr", "")),
             "readset": plan(vouch_absences(in_numbers(c["readset"])))} for c in candidates]


# --- absences vouched for by their directory (the entry memo only) --------------------------------
#
# An ``llm_ro`` script's read-set holds ~60 names that were absent (``!ENOENT``: the loader's and the
# import system's probes), each a failed stat on every hit, and a failed stat costs its exception:
# ~10 us each, more than half the read-set check. In a directory whose entries are unchanged none
# of them can have appeared, and every change to a directory's entries (a name created, removed,
# renamed or linked in or out) moves its mtime and ctime, which cannot be set back together (a
# utime moves the ctime). So the memo keeps, for the absent names of one directory, that
# directory's device, inode, mtime, ctime and mode as they were when the names were seen absent,
# and a hit that finds the directory exactly so needs no look at the names; when it differs in
# any way, each name is looked at as its own record would be.
#
# Sound only as it is taken (``vouch_absences``): the directory is opened by the path its names'
# lookups resolve (the names' own text up to the last slash), its stat taken first, then each name
# must have no entry at all there (``lstat``: a dangling symbolic link answers a stat with ENOENT
# too, and its target could appear without this directory changing: such a name is not vouched
# for), and its times must be older than the timestamp granularity before the stat (a change in
# the same tick could leave them as they were). Written into the memo only, which is rebuilt from
# the store's entry whenever the store changes; never stored.


def vouch_absences(records: "list[list[Any]]") -> "list[list[Any]]":
    """``records`` (the memo's form) with each absent name (``!ENOENT``) that a directory can vouch for
    as a ``v`` record: ``["v", path, seen, (directory, (dev, ino, mtime_ns, ctime_ns, mode), kind)]``,
    at its own place (``first_change`` checks the directory once, and the name only if it changed).
    The directory is the path's deepest ancestor that opens as one (its text up to a slash); the
    component after it must have no entry there, and the path's lookup fails at that component
    whatever follows it (``..`` too)."""
    import time  # builtin

    started = time.time_ns()
    absent: dict[str, list[int]] = {}  # a directory to try: the indexes of the absent names under it
    for index, record in enumerate(records):
        path = record[1]
        if record[2] == "!ENOENT" and len(record) == 4 and record[0] != "v" and path[:1] == "/":
            absent.setdefault(path.rpartition("/")[0] or "/", []).append(index)
    if not absent:
        return records
    vouched = list(records)
    opened: dict[str, tuple[int, os.stat_result] | None] = {}
    try:
        for directory, indexes in absent.items():
            # Up to the deepest ancestor that opens as a directory: "/a/b/../c" tries "/a/b/.." (the
            # lookup's own prefix), then "/a/b", then "/a". One that did not open for an earlier name
            # is passed through, not the end of the search (``/x/tls/a`` and ``/x/tls/b/c``, with no
            # ``/x/tls``, are both vouched for by ``/x``).
            while True:
                if directory in opened:
                    if opened[directory] is not None or directory == "/":
                        break
                    directory = directory.rpartition("/")[0] or "/"
                    continue
                try:
                    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
                except OSError:
                    opened[directory] = None
                    continue
                opened[directory] = (fd, os.fstat(fd))
            found = opened.get(directory)
            if found is None:
                continue
            fd, info = found
            if max(info.st_mtime_ns, info.st_ctime_ns) >= started - granularity(info):
                continue  # changed within a tick of now: a change after this look could leave its times
            expected = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)
            for index in indexes:
                kind, path, seen = records[index][0], records[index][1], records[index][2]
                rest = path[len(directory.rstrip("/")) + 1:]
                name = rest.partition("/")[0]
                if name in ("", ".", ".."):
                    continue
                try:
                    os.lstat(name, dir_fd=fd)
                except FileNotFoundError:  # no entry by that name: the lookup fails there
                    vouched[index] = ["v", path, seen, (directory, expected, kind)]
                except OSError:
                    pass  # it could not be told: not vouched for
                # (an entry by that name, a dangling link say: not vouched for)
    finally:
        for found in opened.values():
            if found is not None:
                os.close(found[0])
    return vouched


def in_numbers(readset: "list[list[Any]]") -> "list[list[Any]]":
    """``readset`` with its stat looks and signatures as numbers (the memo's form, read by
    ``first_change``); a record whose text is not a stat look's (an error, another kind) is kept.

    Equal values become one object (a path in several records, ``!ENOENT``, the times of files
    installed together), which ``marshal`` writes once and then refers to: an ``llm_ro`` script's
    memo shrank by a fifth, and a hit hashes (``hitpath._memo_row``) and loads every byte of it."""
    shared: dict[Any, Any] = {}

    def one(value: "Any") -> "Any":
        return shared.setdefault((value.__class__, value), value)

    converted = []
    for record in readset:
        kind, seen, sig = record[0], record[2], record[3]
        fields = seen.split(":")
        if kind in STAT_LOOKS and len(fields) == 8 and all(f.isdigit() for f in fields):
            seen = (int(fields[0], 8), *(one(int(f)) for f in fields[1:]))
        elif kind == "o" and len(fields) == 6 and fields[0] == "o" and all(f.isdigit() for f in fields[1:]):
            seen = (int(fields[1], 8), *(one(int(f)) for f in fields[2:]))
        else:
            seen = one(seen)
        if sig is not None:
            parts = sig.split(":")
            if len(parts) == 5 and all(p.isdigit() for p in parts):
                sig = (int(parts[0], 8), *(one(int(p)) for p in parts[1:]))
        converted.append([one(kind), one(record[1]), seen, sig, *record[4:]])
    return converted


_SHAPE_OF = {frozenset(fields): index for index, fields in enumerate(PLAN_SHAPES)}


def _needs(record: "list[Any]") -> "tuple[tuple[str, ...], tuple[Any, ...]] | str | None":
    """What one record (the memo's form) asks of its path's ``os.stat`` to hold with no further look:
    fields and their values, or the error text (every look but ``l`` and ``r`` sees a failed stat's
    error); None when a stat alone cannot tell (``first_change`` checks it)."""
    kind, seen, sig = record[0], record[2], record[3]
    if kind == "v":
        return VOUCH_FIELDS, sig[1]  # of the directory (``sig[0]``), not of the name
    if len(record) > 4 or kind in ("l", "r", "h"):
        return None
    if seen.__class__ is str and seen[:1] == "!":
        return seen
    if sig is not None:  # a signature that holds: the record holds (first_change's rule)
        return (SIGNATURE_FIELDS, sig) if sig.__class__ is tuple and len(sig) == 5 else None
    if seen.__class__ is tuple:
        if kind in STAT_LOOKS and len(seen) == 8:
            return STAT_FIELDS[:8], seen
        if kind == "o" and len(seen) == 5:
            return OPEN_FIELDS, seen
        return None
    if kind == "a":
        fields = seen.split(":")
        if len(fields) == 5 and fields[0] == "a" and fields[1].isdigit() and fields[2].isdigit() \
                and fields[3].isdigit() and fields[4].isdigit():
            return SEARCH_FIELDS, (int(fields[1], 8) | int(fields[2], 8), int(fields[3]), int(fields[4]))
    return None


def _stat_path(record: "Sequence[Any]") -> "str | None":
    """The path whose ``os.stat`` a record (the memo's form) is judged by: a vouched name's directory;
    None for the looks that take no ``os.stat`` (``l``: ``os.lstat``, ``r``: ``os.readlink``)."""
    kind = record[0]
    return record[3][0] if kind == "v" else None if kind in ("l", "r") else record[1]


def plan(records: "list[list[Any]]") -> "tuple[Any, ...]":
    """``records`` (the memo's form: ``in_numbers``, ``vouch_absences``) as the entry memo's plan,
    ``("plan", paths, shapes, expected, packs)``: for each path one ``os.stat`` is judged by, its
    shape (a byte: an index in ``PLAN_SHAPES``, whose fields' values ``expected`` holds; ``PLAN_ERROR``, the
    error text; ``PLAN_RECORDS``, its records) and its records with their places in ``records``, in
    ``marshal``'s format (loaded only when the path differs: loading every record cost a hit of an
    ``llm_ro`` script ~0.6 M instructions). The records of no stat (path None) are one entry."""
    grouped: dict[Any, Any] = {}  # a path: what its records need of its stat (False: not one stat's matter)
    places: dict[Any, list[int]] = {}
    for place, record in enumerate(records):
        key = _stat_path(record)
        need = _needs(record) if key is not None else None
        if key not in grouped:
            grouped[key] = False if need is None else need
            places[key] = [place]
            continue
        places[key].append(place)
        have = grouped[key]
        if have is False or need is None:
            grouped[key] = False
        elif have.__class__ is str or need.__class__ is str:
            grouped[key] = have if have == need else False
        elif have != need:  # both fields: one dict, unless two records need a field to be two values (never both hold)
            have = dict(zip(*have)) if have.__class__ is tuple else have
            merged = {**have, **dict(zip(*need))}
            grouped[key] = merged if have.items() <= merged.items() else False
    from marshal import dumps

    shapes = bytearray()
    expected = []
    packs = []
    wants: Any
    for key, wants in grouped.items():
        value: Any = None
        shape = PLAN_RECORDS
        if wants.__class__ is str:
            shape, value = PLAN_ERROR, wants
        elif wants.__class__ is tuple and wants[0] in PLAN_SHAPES:  # one record's fields (or records' same ones)
            shape, value = PLAN_SHAPES.index(wants[0]), wants[1]
        elif wants is not False:
            wants = dict(zip(*wants)) if wants.__class__ is tuple else wants
            shape = _SHAPE_OF.get(frozenset(wants), PLAN_RECORDS)
            if shape != PLAN_RECORDS:
                value = tuple(map(wants.__getitem__, PLAN_SHAPES[shape]))
        own = [records[place] for place in places[key]]
        if shape == PLAN_RECORDS:
            value = own
        shapes.append(shape)
        expected.append(value)
        packs.append(dumps((places[key], own)))
    return ("plan", tuple(grouped), bytes(shapes), tuple(expected), tuple(packs))
