"""The hit path's entry memo (``hitpath``: a hit without loading SQLite), and that it is never stale."""

from __future__ import annotations

import base64
import hashlib
import json
import marshal
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.runs import hitpath, manifest, memoform

PY = sys.executable
ARGS = ("--mode", "use", "--", "cat", "good.sh")


def memo_dir(ex) -> Path:
    return ex.sidecar("memo")


def memos(ex) -> list[Path]:
    """The memos ({signature hash}/{key hash}), not the vouches beside them (``hitpath.VOUCH_SUFFIX``)."""
    return [p for p in memo_dir(ex).glob("*/*") if not p.name.endswith(hitpath.VOUCH_SUFFIX)]


def settle() -> None:
    time.sleep(0.1)  # past the timestamp granularity of the store's last write: its signature is not racy


def hit_with_memo(ex) -> Path:
    """An entry, its first lookup, then a hit, which leaves the memo: its path."""
    for _ in range(2):  # the miss, then the entry's first lookup (an untraced, timed run)
        ex.run(*ARGS)
    settle()
    assert ex.run(*ARGS).stdout == (ex.work / "good.sh").read_bytes()
    found = memos(ex)  # {store}-exec-memo/{signature hash}/{key hash}
    assert len(found) == 1, found
    return found[0]


def imported(result: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.decode("utf-8", "replace").splitlines()
            if line.startswith("import time:") and "|" in line}


def forge(memo: Path, stdout: bytes) -> None:
    """Rewrite the memo's entry to replay ``stdout``, its header (key, store signature) kept."""
    data = memo.read_bytes()
    header, _, value = data.partition(b"\n\n")
    lines = header.split(b"\n")
    candidates = marshal.loads(value)
    candidates[0]["stdout"] = stdout  # the memo keeps outputs as bytes
    value = marshal.dumps(candidates)
    lines[-2:] = [str(len(value)).encode(), hashlib.sha256(value).hexdigest().encode()]
    memo.write_bytes(b"\n".join(lines) + b"\n\n" + value)


def test_a_hit_after_a_hit_does_not_load_sqlite(ex, strace):
    hit_with_memo(ex)
    hit = subprocess.run([PY, "-X", "importtime", "-m", "actioncache", "exec", *ARGS], cwd=ex.work, env=ex.env,
                         capture_output=True, timeout=60)
    assert hit.returncode == 0 and hit.stdout == (ex.work / "good.sh").read_bytes()
    assert "actioncache.runs.hitpath" in imported(hit) and "_sqlite3" not in imported(hit)
    assert "binascii" not in imported(hit)  # the memo's outputs are bytes; its check is the key's hash
    assert ex.tool_stats("cat")["hits"] == 3  # the first lookup, the hit, this one


def test_the_memo_is_what_a_hit_replays_while_the_store_is_unchanged(ex, strace):
    # (What makes the next test mean something: a memo the store's signature still matches is served.)
    forge(hit_with_memo(ex), b"from the memo\n")
    assert ex.run(*ARGS).stdout == b"from the memo\n"


def test_a_write_to_the_store_makes_the_memo_stale(ex, strace):
    memo = hit_with_memo(ex)
    forge(memo, b"stale\n")
    with sqlite3.connect(ex.db) as db:  # another process writes (another key): the store's signature moves
        db.execute("CREATE TABLE IF NOT EXISTS other (x)")
        db.execute("INSERT INTO other VALUES (1)")
    hit = ex.run(*ARGS)
    assert hit.returncode == 0 and hit.stdout == (ex.work / "good.sh").read_bytes()


def test_a_changed_entry_is_replayed_from_the_store_not_the_memo(ex, strace):
    memo = hit_with_memo(ex)
    with sqlite3.connect(ex.db) as db:  # the entry itself changes behind the memo
        key, value = db.execute("SELECT key, value FROM entries WHERE key LIKE 'cache:exec:cat:%'").fetchone()
        stored = json.loads(bytes(value)[1:])
        stored["candidates"][0]["stdout"] = base64.b64encode(b"the store's new answer\n").decode()
        db.execute("UPDATE entries SET value = ? WHERE key = ?", (b"j" + json.dumps(stored).encode(), key))
    assert memo.exists()
    assert ex.run(*ARGS).stdout == b"the store's new answer\n"
    settle()
    assert ex.run(*ARGS).stdout == b"the store's new answer\n"  # through the memo written again
    found = memos(ex)                                    # under the store's new signature, the old one's gone
    assert len(found) == 1 and b"the store's new answer\n" in found[0].read_bytes()
    assert not memo.exists()


def test_a_checkpoint_makes_the_memo_stale(ex, strace):
    memo = hit_with_memo(ex)
    forge(memo, b"stale\n")
    db = sqlite3.connect(ex.db, isolation_level=None)  # autocommit: each statement its own transaction
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("CREATE TABLE IF NOT EXISTS other (x)")
        db.execute("INSERT INTO other VALUES (1)")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    assert ex.run(*ARGS).stdout == (ex.work / "good.sh").read_bytes()


def test_a_memo_that_is_not_whole_or_not_the_keys_is_not_used(ex, strace):
    memo = hit_with_memo(ex)
    good = (ex.work / "good.sh").read_bytes()
    data = memo.read_bytes()
    memo.write_bytes(data[:-10])  # cut short
    assert ex.run(*ARGS).stdout == good
    forge(memo, b"forged\n")
    memo.write_bytes(memo.read_bytes().replace(b"exec:cat:", b"exec:dog:", 1))  # another key's
    assert ex.run(*ARGS).stdout == good
    memo.write_bytes(b"garbage")
    assert ex.run(*ARGS).stdout == good
    settle()
    assert ex.run(*ARGS).stdout == good  # (a memo written again)
    forge(memo, b"forged\n")
    data = memo.read_bytes()
    at = data.index(b"forged\n")
    memo.write_bytes(data[:at] + b"F" + data[at + 1:])  # damaged ("forged" to "Forged"): its length kept
    assert ex.run(*ARGS).stdout == good
    forge(memo, b"forged\n")
    version = hitpath.MEMO_MAGIC.rsplit(b" ", 2)[0] + b" "  # "actioncache-entry-memo N "
    memo.write_bytes(memo.read_bytes().replace(version, version + b"0", 1))
    assert ex.run(*ARGS).stdout == good  # another Python's marshal format


def test_a_vouched_memo_changed_since_is_hashed_again(ex, strace):
    """A memo whose hash a hit checked while it was settled is vouched for (its full stat signature
    beside it, ``hitpath.VOUCH_SUFFIX``) and later hits do not hash it again; any change to it
    (here: damaged, its length and its mtime kept) moves its ctime, and its hash is checked again."""
    memo = hit_with_memo(ex)
    good = (ex.work / "good.sh").read_bytes()
    vouch = memo.with_name(memo.name + hitpath.VOUCH_SUFFIX)
    settle()
    assert ex.run(*ARGS).stdout == good and vouch.exists()  # its hash checked, it vouched for
    assert ex.run(*ARGS).stdout == good  # through the vouch
    before = memo.stat()
    data = memo.read_bytes()
    at = data.rindex(b"#!/bin/sh")  # in the replayed stdout (good.sh's text): "#" to "X", the length kept
    memo.write_bytes(data[:at] + b"X" + data[at + 1:])
    os.utime(memo, ns=(before.st_atime_ns, before.st_mtime_ns))  # its mtime back: its ctime moved
    assert memo.stat().st_size == before.st_size and memo.stat().st_mtime_ns == before.st_mtime_ns
    assert ex.run(*ARGS).stdout == good


def test_a_memo_is_vouched_for_only_when_settled_and_only_as_it_is(ex, tmp_path):
    """The vouch (the hash is not checked again) is written only when the memo's times were older
    than the timestamp granularity before it was read, and is used only while the memo's stat
    signature is exactly the one it names."""
    store = str(ex.db)
    stored = {"at": 1.0, "readset": [], "stdout": base64.b64encode(b"out\n").decode(), "stderr": ""}
    row = (memoform.memo_form([stored]), None)  # as the memo keeps it
    key = "exec:cat:" + "a" * 64
    hitpath._memo_write(store, key, "sig", ([stored], None))
    memo = next(ex.sidecar("memo").glob("*/" + "a" * 64))
    vouch = memo.with_name(memo.name + hitpath.VOUCH_SUFFIX)
    future = time.time_ns() + 10_000_000_000
    os.utime(memo, ns=(future, future))  # an mtime not yet past: racy whatever the clock
    assert hitpath._memo_row(store, key, ("sig", True)) == row
    assert not vouch.exists()  # read, its hash checked, not vouched for
    past = time.time_ns() - 10_000_000_000
    os.utime(memo, ns=(past, past))
    settle()
    assert hitpath._memo_row(store, key, ("sig", True)) == row
    assert vouch.exists()
    # The payload changed under the same header (its hash no longer holds), the vouch kept: the
    # signature it names is no longer the memo's (the rewrite moved the ctime), so the hash is checked.
    data = memo.read_bytes()
    memo.write_bytes(data.replace(b"out\n", b"OUT\n"))
    os.utime(memo, ns=(past, past))
    assert hitpath._memo_row(store, key, ("sig", True)) is None
    # A vouch naming the memo's signature exactly is believed (the hash is not checked): what makes
    # the line above mean something.
    info = memo.stat()
    vouch.write_text(f"{info.st_mode:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:{info.st_dev}")
    assert hitpath._memo_row(store, key, ("sig", True))[0][0]["stdout"] == b"OUT\n"


def test_a_racy_or_linked_store_signature_is_not_trusted(tmp_path):
    db = tmp_path / "s.db"
    db.write_bytes(b"x" * 10)
    past = time.time_ns() - 10_000_000_000
    os.utime(db, ns=(past, past))
    found = hitpath._store_signature(str(db))
    assert found is not None and found[0].endswith(" - -")
    wal = tmp_path / "s.db-wal"
    wal.write_bytes(b"")
    future = time.time_ns() + 10_000_000_000
    os.utime(wal, ns=(future, future))  # an mtime not yet past: racy whatever the clock
    found = hitpath._store_signature(str(db))
    assert found is not None and not found[1]
    link = tmp_path / "link.db"
    link.symlink_to(db)
    assert hitpath._store_signature(str(link)) is None  # SQLite's -wal is beside the file it points to
    os.link(db, tmp_path / "other.db")
    assert hitpath._store_signature(str(db)) is None  # another name, another -wal


def test_a_memo_another_user_could_have_written_is_not_read(ex):
    memo = hit_with_memo(ex)
    forge(memo, b"planted\n")
    assert ex.run(*ARGS).stdout == b"planted\n"          # control: a memo of this user's is read
    memo.chmod(0o622)                                     # writable by others: anyone could have put it there
    assert ex.run(*ARGS).stdout == (ex.work / "good.sh").read_bytes()
    memo.chmod(0o600)
    os.link(memo, memo.parent / "second-name")           # another name for it: not this memo's own file
    assert ex.run(*ARGS).stdout == (ex.work / "good.sh").read_bytes()


def test_a_memo_reached_through_a_symlink_is_not_read(ex, tmp_path):
    memo = hit_with_memo(ex)
    forge(memo, b"planted\n")
    elsewhere = tmp_path / "planted-memo"
    memo.rename(elsewhere)
    memo.symlink_to(elsewhere)
    assert ex.run(*ARGS).stdout == (ex.work / "good.sh").read_bytes()


def test_memos_of_a_signature_the_store_no_longer_has_are_removed(ex, tmp_path):
    memo = hit_with_memo(ex)
    outside = tmp_path / "not-the-stores"
    outside.mkdir()
    (outside / "keep-me").write_text("x")
    (memo_dir(ex) / "a-link").symlink_to(outside)        # a link among the memo directories: removed, never followed
    with sqlite3.connect(ex.db) as db:                    # any write to the store: every memo is dead
        db.execute("CREATE TABLE IF NOT EXISTS other (x)")
        db.execute("INSERT INTO other VALUES (1)")
    settle()
    assert ex.run(*ARGS).stdout == (ex.work / "good.sh").read_bytes()   # a query, and a new memo
    left = memos(ex)
    assert len(left) == 1 and left[0] != memo and not memo.parent.exists()
    assert (outside / "keep-me").exists() and not (memo_dir(ex) / "a-link").exists()


def test_a_hit_with_a_file_on_stdin_loads_no_fcntl(ex, strace):
    # The descriptor's access mode is read from /proc/self/fdinfo (fcntl is an extension module: ~0.15 ms a hit).
    (ex.work / "in.txt").write_bytes(b"input\n")
    args = ("--mode", "use", "--", "cat")
    for _ in range(2):
        with open(ex.work / "in.txt", "rb") as stdin:
            subprocess.run([PY, "-m", "actioncache", "exec", *args], cwd=ex.work, env=ex.env, stdin=stdin,
                           capture_output=True, timeout=60, check=True)
    with open(ex.work / "in.txt", "rb") as stdin:
        hit = subprocess.run([PY, "-X", "importtime", "-m", "actioncache", "exec", *args], cwd=ex.work, env=ex.env,
                             stdin=stdin, capture_output=True, timeout=60)
    assert hit.returncode == 0 and hit.stdout == b"input\n"
    assert "actioncache.runs.hitpath" in imported(hit) and "actioncache.runs.runner" not in imported(hit)  # a hit
    assert "fcntl" not in imported(hit)


def test_sidecars_replaced_by_symlinks_are_never_followed(ex, strace, tmp_path):
    """An outside tester made the memo directory, the cheap verdicts' directory and the hit journal
    symbolic links to a directory (a file) of the user's: the memo writer emptied the directory it
    pointed to, the verdict sweep removed old files there, and every hit appended its record to the
    linked file. A sidecar is reached only without following a link: the user's files stay as they were,
    and replays stay right."""
    user = tmp_path / "users-files"
    user.mkdir()
    (user / "notes.txt").write_text("mine\n")
    (user / "sub").mkdir()
    (user / "sub" / "deep.txt").write_text("deep\n")
    old = user / "old-report.txt"
    old.write_text("old\n")
    os.utime(old, (time.time() - 3 * 86400, time.time() - 3 * 86400))
    project = tmp_path / "PROJECT.md"
    project.write_text("the project file\n")
    for _ in range(2):  # the store exists: a miss, then the first lookup
        ex.run(*ARGS)
    for kind in ("memo", "cheap"):
        link = ex.sidecar(kind)
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_dir() and not link.is_symlink():
            for inner in sorted(link.rglob("*"), reverse=True):
                inner.rmdir() if inner.is_dir() else inner.unlink()
            link.rmdir()
        link.symlink_to(user)
    journal = ex.sidecar("exec-hits.jsonl")
    if journal.exists():
        journal.unlink()
    journal.symlink_to(project)
    good = (ex.work / "good.sh").read_bytes()
    for _ in range(3):
        settle()
        assert ex.run(*ARGS).stdout == good
    cheap = ex.run("--mode", "use", "--", "true", extra_env={"ACTIONCACHE_CHEAP_MS": "1000000"})  # judged cheap
    assert cheap.returncode == 0
    ex.run("--mode", "use", "--", "true", extra_env={"ACTIONCACHE_CHEAP_MS": "1000000"})
    assert sorted(p.relative_to(user).as_posix() for p in user.rglob("*")) == \
        ["notes.txt", "old-report.txt", "sub", "sub/deep.txt"]
    assert (user / "notes.txt").read_text() == "mine\n" and old.read_text() == "old\n"
    assert project.read_text() == "the project file\n"


# --- the memo's numeric read-set (memoform.memo_form) judges as the stored text does --------------

_CHANGES = ("none", "chmod", "same size, times kept", "append", "new inode", "remove", "hard link", "touch",
            "retarget link", "create the missing name")


def _records(root: Path) -> list[list[object]]:
    """Every kind of stat record a trace makes, for a file, a directory, a link, a missing name and
    a name under a file (ENOTDIR); every kind of look at the two names that cannot be stat'ed."""
    records: list[list[object]] = []
    for name in ("file", "dir", "link", "missing", "file/inner"):
        path = str(root / name)
        for kind in ("s", "l", "x", "o"):
            seen, _ = manifest.look("s" if kind == "o" else kind, path)
            if kind == "o" and not seen.startswith("!"):
                seen = manifest.open_view(seen)
            records.append([kind, path, seen, None])
        try:
            info = os.stat(path)
        except OSError:
            for kind in ("f", "d", "a", "r"):  # an error, whatever the look (first_change compares it at once)
                records.append([kind, path, manifest.look(kind, path)[0], None])
            continue
        if not os.path.isdir(path):
            seen, _ = manifest.look("f", path)
            records.append(["f", path, seen, manifest.signature(info, with_ctime=True)])
    return records


def _change(root: Path, what: str) -> None:
    file = root / "file"
    if what == "chmod":
        file.chmod(0o600)
    elif what == "same size, times kept":
        info = file.stat()
        file.write_bytes(b"Y" * info.st_size)
        os.utime(file, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif what == "append":
        with file.open("ab") as handle:
            handle.write(b"more")
    elif what == "new inode":
        (root / "new").write_bytes(file.read_bytes())
        os.replace(root / "new", file)
    elif what == "remove":
        file.unlink()
    elif what == "hard link":
        os.link(file, root / "second")
    elif what == "touch":
        os.utime(root / "dir", ns=(1, 1))
    elif what == "retarget link":
        (root / "link").unlink()
        (root / "link").symlink_to("dir")
    elif what == "create the missing name":
        (root / "missing").write_bytes(b"")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(what=st.sampled_from(_CHANGES), order=st.randoms(use_true_random=False))
def test_the_memos_numbers_judge_every_change_as_the_stored_text_does(tmp_path_factory, what, order):
    root = tmp_path_factory.mktemp("looks")
    (root / "file").write_bytes(b"x" * 100)
    (root / "dir").mkdir()
    (root / "link").symlink_to("file")
    records = _records(root)
    order.shuffle(records)
    the_plan = memoform.memo_form([{"readset": records, "stdout": "", "stderr": ""}])[0]["readset"]
    numbers = manifest._in_order(the_plan[4])  # the plan's records, one by one
    assert any(isinstance(record[2], tuple) for record in numbers)  # the memo's form is not the text
    assert len(the_plan[1]) < len(numbers)  # a comparison per path, not per record
    assert marshal.loads(marshal.dumps(the_plan)) == the_plan
    time.sleep(0.03)  # past the timestamp granularity: a change moves the times it moves
    _change(root, what)
    from_text, from_numbers = manifest.first_change(records), manifest.first_change(numbers)
    assert from_numbers == from_text  # the same record found changed, shown in the same words
    assert manifest.first_change(the_plan) == from_text
    assert (from_text is None) == (what == "none")


# --- absent names vouched for by their directory (memoform.vouch_absences) -------------------------

_DIRECTORY_CHANGES = ("none", "create a missing name", "create another name", "remove a name", "rename in",
                      "chmod the directory", "replace the directory", "retarget a dangling link", "utime back",
                      "make a missing path", "make the folder a missing path goes through")


def _absent_records(root: Path) -> list[list[object]]:
    """Looks of every kind at names absent from ``root/dir`` (and from ``root`` itself), beside a
    present file and a dangling link whose target directory exists."""
    (root / "dir").mkdir()
    (root / "dir" / "here").write_bytes(b"x")
    (root / "dir" / "unlooked").write_bytes(b"y")  # in the directory, never looked at
    (root / "target").mkdir()
    (root / "dir" / "dangling").symlink_to(root / "target" / "later")
    records: list[list[object]] = []
    for name in ("dir/missing", "dir/gone.py", "dir/here", "dir/dangling", "absent-at-top", "dir/sub/../missing",
                 "nowhere/at/all", "dir/sub/../here"):
        path = str(root / name)
        for kind in ("s", "l", "f", "x"):
            records.append([kind, path, manifest.look(kind, path)[0], None])
    return records


def _change_directory(root: Path, what: str) -> None:
    directory = root / "dir"
    if what == "create a missing name":
        (directory / "missing").write_bytes(b"")
    elif what == "create another name":
        (directory / "another").write_bytes(b"")
    elif what == "remove a name":
        (directory / "unlooked").unlink()
    elif what == "rename in":
        (root / "outside").write_bytes(b"")
        os.rename(root / "outside", directory / "gone.py")
    elif what == "chmod the directory":
        directory.chmod(0o700)
    elif what == "replace the directory":
        os.rename(directory, root / "old-dir")
        (root / "dir").mkdir()
    elif what == "retarget a dangling link":
        (root / "target" / "later").write_bytes(b"now here")  # the link's own directory does not change
    elif what == "make a missing path":
        (root / "nowhere" / "at").mkdir(parents=True)
        (root / "nowhere" / "at" / "all").write_bytes(b"")
    elif what == "make the folder a missing path goes through":
        (directory / "sub").mkdir()  # dir/sub/../here is dir/here now
    elif what == "utime back":  # a create, then the directory's times put back as they were
        info = directory.stat()
        (directory / "missing").write_bytes(b"")
        os.utime(directory, ns=(info.st_atime_ns, info.st_mtime_ns))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(what=st.sampled_from(_DIRECTORY_CHANGES), order=st.randoms(use_true_random=False))
def test_absences_vouched_for_by_their_directory_judge_every_change_as_the_stored_text_does(tmp_path_factory,
                                                                                           what, order):
    root = tmp_path_factory.mktemp("absent")
    records = _absent_records(root)
    order.shuffle(records)
    past = time.time_ns() - 5_000_000_000
    for folder in (root, root / "dir", root / "target"):
        os.utime(folder, ns=(past, past))  # settled: older than the timestamp granularity
    time.sleep(0.05)  # and the ctime the utime moved, too
    the_plan = memoform.memo_form([{"readset": records, "stdout": "", "stderr": ""}])[0]["readset"]
    numbers = manifest._in_order(the_plan[4])  # the plan's records, one by one
    vouched = [r for r in numbers if r[0] == "v"]
    assert vouched, numbers  # the absent names of dir and of root are vouched for by them
    assert not any("dangling" in str(r[1]) for r in vouched)  # a dangling link answers ENOENT, but is an entry
    assert marshal.loads(marshal.dumps(the_plan)) == the_plan
    time.sleep(0.03)
    _change_directory(root, what)
    from_text, from_numbers = manifest.first_change(records), manifest.first_change(numbers)
    assert from_numbers == from_text  # the same record found changed, shown in the same words
    assert manifest.first_change(the_plan) == from_text
    assert (from_text is None) == (what in ("none", "create another name", "remove a name", "chmod the directory"))


def test_absences_in_a_directory_changed_within_a_tick_are_not_vouched_for(tmp_path):
    (tmp_path / "dir").mkdir()
    path = str(tmp_path / "dir" / "missing")
    records = [["s", path, manifest.look("s", path)[0], None]]
    assert records[0][2] == "!ENOENT"
    assert memoform.vouch_absences(records) == records  # just made: a create in the same tick could hide
    past = time.time_ns() - 5_000_000_000
    os.utime(tmp_path / "dir", ns=(past, past))
    time.sleep(0.05)
    assert memoform.vouch_absences(records)[0][0] == "v"


def test_names_under_a_missing_folder_another_name_went_through_are_vouched_for(tmp_path):
    """The loader probes ``lib/tls/x86_64/libc.so.6``, then ``lib/tls/x86_64``, then ``lib/tls/libc.so.6``:
    every one of them is vouched for by ``lib``, not only the first (the folders that did not open
    for an earlier name are passed through, not the end of the search)."""
    lib = tmp_path / "lib"
    lib.mkdir()
    paths = [str(lib / "tls" / "x86_64" / "libc.so.6"), str(lib / "tls" / "x86_64"), str(lib / "tls" / "libc.so.6"),
             str(lib / "tls"), str(lib / "glibc-hwcaps" / "x86-64-v3" / "libc.so.6")]
    records = [[kind, path, manifest.look(kind, path)[0], None] for path in paths for kind in ("s", "f")]
    assert all(record[2] == "!ENOENT" for record in records)
    past = time.time_ns() - 5_000_000_000
    os.utime(lib, ns=(past, past))
    time.sleep(0.05)
    vouched = memoform.vouch_absences(records)
    assert [record[0] for record in vouched] == ["v"] * len(records)
    assert {record[3][0] for record in vouched} == {str(lib)}
    assert manifest.first_change(vouched) is None
    (lib / "tls").mkdir()
    assert manifest.first_change(vouched) == manifest.first_change(records) is not None


def test_each_shape_of_the_plan_takes_its_fields_in_order(tmp_path):
    """``manifest._TAKE[i]`` returns exactly ``manifest.PLAN_SHAPES[i]``'s fields of a stat, in that order."""
    info = os.stat(tmp_path)
    assert len(manifest._TAKE) == len(manifest.PLAN_SHAPES) < manifest.PLAN_ERROR
    for take, fields in zip(manifest._TAKE, manifest.PLAN_SHAPES):
        assert take(info) == tuple(getattr(info, name) for name in fields)


def test_a_plan_checks_a_touched_file_by_its_content_and_its_other_records(tmp_path):
    """A path whose stat differs from the plan's numbers is judged record by record: a file read
    (``f``) and opened (``o``) whose content is the same after a touch still holds; one stat'ed
    (``s``) as well does not, and the answer is the first record in the read-set's order."""
    path = tmp_path / "file"
    path.write_bytes(b"x" * 100)
    past = time.time_ns() - 5_000_000_000
    os.utime(path, ns=(past, past))
    time.sleep(0.05)
    text = str(path)
    info = os.stat(text)
    read = [["f", text, manifest.look("f", text)[0], manifest.signature(info, with_ctime=True)],
            ["o", text, manifest.open_view(manifest.look("s", text)[0]), None]]
    stated = [["s", text, manifest.look("s", text)[0], None], *read]
    plans = [memoform.memo_form([{"readset": records, "stdout": "", "stderr": ""}])[0]["readset"]
             for records in (read, stated)]
    assert [the_plan[2] for the_plan in plans] == [bytes([0]), bytes([0])]  # one comparison: all eight numbers
    assert manifest.first_change(plans[0]) is None and manifest.first_change(plans[1]) is None
    os.utime(path, ns=(past + 1_000_000_000, past + 1_000_000_000))
    assert manifest.first_change(plans[0]) is None  # the same content
    assert manifest.first_change(plans[1]) == manifest.first_change(stated) is not None
    assert manifest.first_change(plans[1])[0] == text
    path.write_bytes(b"y" * 100)
    assert manifest.first_change(plans[0]) == manifest.first_change(read) is not None
