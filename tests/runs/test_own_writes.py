"""What the cache itself writes never changes what a traced command observes, or what it prints.

A traced run is recorded only if nothing it looked at changed within the file system's timestamp
granularity of its start (a change then cannot be told from one made while it ran), and a hit
only if nothing it looked at changed since. So every write of the cache's own must land where
the read-set ignores it (its own places), or be settled before the command starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .test_exec import use

PY = sys.executable

# The real CLI, with the fine timestamp granularity raised to 300 ms: the store directory the first
# run creates is then always within it when the command starts (at the usual 20 ms it is ~30 ms
# before on this machine, and a CI run under load once started inside it: the run was not recorded).
COARSE_TICK = ("import sys; from actioncache.runs import manifest; manifest.FINE_GRANULARITY_NS = 300_000_000; "
               "from actioncache.cli import main; sys.exit(main())")


@pytest.mark.parametrize("store", ["sqlite", "blob-sqlite"])
def test_a_command_listing_the_temporary_directory_hits(ex, strace, tmp_path, store):
    # Each traced run's log was a new directory in $TMPDIR, and so was a blob store's local copy:
    # `ls /tmp` missed every time, and was not even recorded (its listing changed as it started).
    # Every temporary file of exec's own lives in the cache's own folder now.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / "kept").write_text("")
    env = {"TMPDIR": str(tmp)}
    if store == "blob-sqlite":  # a local stand-in for object storage: the store's copy is made the same way
        env["ACTIONCACHE_URL"] = f"blob-sqlite+file://{tmp_path}/remote/cache.db"
    runs = [ex.run(*use("--", "ls", "-a", str(tmp)), extra_env=env) for _ in range(3)]
    assert [r.returncode for r in runs] == [0, 0, 0]
    assert b"ls: miss" in runs[0].stderr and b"ls: hit" in runs[1].stderr and b"ls: hit" in runs[2].stderr, \
        runs[1].stderr
    assert runs[2].stdout == runs[0].stdout and b"kept" in runs[0].stdout
    assert sorted(p.name for p in tmp.iterdir()) == ["kept"]  # nothing of the cache's left there either


def test_the_store_directory_a_first_run_creates_does_not_cost_that_run_its_record(ex, strace):
    # `store: .ac/cache.db` beside what the command lists: making `.ac` moves the times of the
    # directory `ls` lists, just before it starts. The cache settles its own writes first.
    (ex.work / ".actioncache.yml").write_text("mode: use\nstore: .ac/cache.db\n")
    ex.trust(ex.work)
    env = {k: v for k, v in ex.env.items() if k != "ACTIONCACHE_URL"}
    runs = [subprocess.run([PY, "-c", COARSE_TICK, "exec", "--summary", "--", "ls", "-a"], cwd=ex.work, env=env,
                           capture_output=True, timeout=120) for _ in range(2)]
    assert (ex.work / ".ac" / "cache.db").exists()
    assert b"ls: miss" in runs[0].stderr, runs[0].stderr
    assert b"ls: hit" in runs[1].stderr, runs[0].stderr + runs[1].stderr
    assert runs[1].stdout == runs[0].stdout and b".ac" in runs[0].stdout


def test_a_summary_starts_its_own_line_after_output_without_a_newline(ex, strace):
    # A command whose stderr ends mid-line: the summary (fresh, then replayed on the hit path)
    # used to finish the command's last line.
    tool = ["sh", "-c", "printf 'no newline at the end' >&2"]
    runs = [ex.run(*use("--", *tool)) for _ in range(2)]
    assert b"no newline at the end\nactioncache exec: sh: miss" in runs[0].stderr, runs[0].stderr
    assert b"no newline at the end\nactioncache exec: sh: hit" in runs[1].stderr, runs[1].stderr
    whole = [ex.run(*use("--", "sh", "-c", "echo 'a whole line' >&2")) for _ in range(2)]
    assert [b"a whole line\nactioncache exec: sh: " in r.stderr for r in whole] == [True, True]  # no blank line
    assert b"sh: hit" in whole[1].stderr


@pytest.mark.parametrize("walk", [["find", "."], [PY, "-c", "import os; print(sorted(os.walk('.')))"]])
def test_a_walk_of_a_project_that_holds_the_store_is_cached_after_the_memos_exist(ex, strace, walk):
    # The store kept in the project, as a Ralph loop keeps it (artifacts/rollflow_cache/cache.sqlite). Its
    # entry memos and verdicts were folders beside it, made by the first hit and rewritten by later
    # ones: every walk recorded after that looked into them and was never cached again. They live in
    # the user cache directory now, so a walk sees only the store's own files, left out by name.
    store = ex.work / "artifacts" / "rollflow_cache" / "cache.sqlite"
    store.parent.mkdir(parents=True)
    env = {"ACTIONCACHE_URL": f"sqlite:///{store}"}
    memo = ex.sidecar("memo", store)
    for _ in range(6):  # a miss, then hits, until one leaves a memo: a hit leaves none while the store's
        # files changed within the timestamp granularity of its start (a busy machine can stretch that)
        assert ex.run(*use("--", *walk), extra_env=env).returncode == 0
        if memo.is_dir() and list(memo.iterdir()):
            break
    assert list(memo.iterdir())  # the hits left their memo
    (ex.work / "new.txt").write_text("a change the walk sees\n")
    runs = [ex.run(*use("--", *walk), extra_env=env) for _ in range(2)]
    assert b"miss" in runs[0].stderr and b": hit" in runs[1].stderr, runs[0].stderr + runs[1].stderr
    assert b"new.txt" in runs[1].stdout
    assert sorted(p.name for p in store.parent.iterdir() if p.is_dir()) == []  # nothing of ours to walk into


@pytest.mark.parametrize("walk", [["ls", "-aR"], ["find", "."], ["ls", "-a", "artifacts/rollflow_cache"]])
def test_a_replayed_walk_of_the_project_that_holds_the_store_prints_what_a_direct_walk_prints(ex, strace, walk):
    # An outside tester's replayed `find .` listed the store's -wal and -shm (the recording exec held the
    # store open while the command ran) and left out its hit journal (made by the first hit, beside the
    # store). exec lets go of the store while it traces, a hit's read of it leaves nothing behind, and
    # the hit journal is a sidecar in the user cache directory: between runs the store's directory holds
    # the same names, and a replay prints them as a direct run does.
    store = ex.work / "artifacts" / "rollflow_cache" / "cache.sqlite"
    store.parent.mkdir(parents=True)
    (ex.work / "PROMPT.md").write_text("report\n")
    env = {"ACTIONCACHE_URL": f"sqlite:///{store}"}
    outcomes = []
    for step in range(6):
        if step == 3:  # another command's miss writes the store and folds the hit journal
            assert ex.run(*use("--", "cat", "PROMPT.md"), extra_env=env).returncode == 0
        cached = ex.run(*use("--", *walk), extra_env=env)
        direct = subprocess.run(walk, cwd=ex.work, capture_output=True, timeout=60)
        assert cached.stdout == direct.stdout, (step, cached.stdout, direct.stdout, cached.stderr)
        outcomes.append(b": hit" in cached.stderr)
    assert outcomes[-1], outcomes  # still cached after all that
    assert sorted(p.name for p in store.parent.iterdir()) == ["cache.sqlite", "cache.sqlite.envkey"]


@pytest.mark.parametrize("look", [["stat", "-c", "%n %F %h %i %a %U", "artifacts/rollflow_cache"],
                                  ["ls", "-la", "--time-style=+", "artifacts"]])
def test_a_folder_made_in_the_stores_directory_is_seen_by_a_stat_of_that_directory(ex, strace, look):
    # An outside tester's `ls -la artifacts` replayed link count 2 for the store's directory after a
    # folder was made in it (3): that directory counted by type, permissions and owner only, since the
    # store's own writes move its times. Its inode and link count, which they never move, count too.
    store = ex.work / "artifacts" / "rollflow_cache" / "cache.sqlite"
    store.parent.mkdir(parents=True)
    env = {"ACTIONCACHE_URL": f"sqlite:///{store}"}

    def same() -> bool:
        cached = ex.run(*use("--", *look), extra_env=env)
        direct = subprocess.run(look, cwd=ex.work, capture_output=True, timeout=60)
        assert cached.stdout == direct.stdout, (cached.stdout, direct.stdout, cached.stderr)
        return b": hit" in cached.stderr

    hits = [same() for _ in range(3)]
    assert hits[-1], hits  # cached, whatever the store's own writes did to the directory's times
    (store.parent / "sub").mkdir()
    assert not same()
    assert same()
    (store.parent / "sub").rmdir()
    (store.parent / "sub2").mkdir()  # the same link count again, another name
    same()


def _store_in_the_project(ex) -> dict[str, str]:
    store = ex.work / "artifacts" / "rollflow_cache" / "cache.sqlite"
    store.parent.mkdir(parents=True)
    return {"ACTIONCACHE_URL": f"sqlite:///{store}"}


def _cached_and_direct(ex, env: dict[str, str], look: list[str]) -> tuple[bool, bytes]:
    """A cached run of ``look`` and a direct run right after it print the same; whether it was a hit."""
    cached = ex.run(*use("--", *look), extra_env=env)
    direct = subprocess.run(look, cwd=ex.work, capture_output=True, timeout=60)
    assert cached.returncode == direct.returncode == 0, cached.stderr
    assert cached.stdout == direct.stdout, (cached.stdout, direct.stdout, cached.stderr)
    return b": hit" in cached.stderr, direct.stdout


@pytest.mark.parametrize("look", [["ls", "-la", "--time-style=+%s", "artifacts"],
                                  ["stat", "-c", "%n %y", "artifacts/rollflow_cache"],
                                  ["ls", "-ld", "--time-style=+%s", "artifacts/rollflow_cache"]])
def test_a_replayed_look_at_the_stores_directory_prints_the_time_a_direct_look_prints(ex, strace, look):
    # An outside tester's cached `ls -la artifacts` printed the store directory's old modification
    # time: that directory counted without its times, which every open of the store moved (SQLite
    # makes and removes the store's -wal and -shm there). Now its mtime counts, and each process of
    # the cache's puts it back as it found it when it lets go of the store.
    env = _store_in_the_project(ex)
    hits = []
    for step in range(6):
        if step in (2, 4):  # another command's miss writes the store
            (ex.work / "PROMPT.md").write_text(f"report {step}\n")
            miss = ex.run(*use("--", "cat", "PROMPT.md"), extra_env=env)
            assert b"cat: miss" in miss.stderr, miss.stderr
        hits.append(_cached_and_direct(ex, env, look)[0])
    assert hits[-1], hits  # still cached after all that
    # The full command (which --explain takes) checks the read-set with the store let go of too.
    explained = ex.run(*use("--explain", "--", *look), extra_env=env)
    direct = subprocess.run(look, cwd=ex.work, capture_output=True, timeout=60)
    assert b": hit" in explained.stderr and explained.stdout == direct.stdout, explained.stderr
    before = _cached_and_direct(ex, env, look)[1]
    subprocess.run(["touch", "-d", "2020-01-01", "artifacts/rollflow_cache"], cwd=ex.work, check=True)
    hit, printed = _cached_and_direct(ex, env, look)
    assert not hit and printed != before  # the user's new time is seen
    assert [_cached_and_direct(ex, env, look)[0] for _ in range(2)][-1]  # and cached again


@pytest.mark.parametrize("look", [["stat", "-c", "%z", "artifacts/rollflow_cache"],
                                  ["ls", "-lcd", "--time-style=+%s.%N", "artifacts/rollflow_cache"]])
def test_a_command_that_asks_the_ctime_of_the_stores_directory_is_not_cached(ex, strace, look):
    # The store's own writes move that directory's ctime, and setting a time back sets the ctime: a
    # replay of it could only print a time a direct run no longer prints. So it runs every time, and
    # prints a time no older than a direct run's just before it (a run of the cache writes the store
    # after the command, so a direct run after it may print a later one).
    env = _store_in_the_project(ex)

    def ctime(printed: bytes) -> bytes:  # both print it in a form that sorts as it counts
        return printed.split()[4] if look[0] == "ls" else printed.strip()

    for step in range(4):
        if step == 2:
            (ex.work / "PROMPT.md").write_text("report\n")
            assert ex.run(*use("--", "cat", "PROMPT.md"), extra_env=env).returncode == 0
        before = subprocess.run(look, cwd=ex.work, capture_output=True, timeout=60, check=True).stdout
        cached = ex.run(*use("--", *look), extra_env=env)
        after = subprocess.run(look, cwd=ex.work, capture_output=True, timeout=60, check=True).stdout
        assert b": hit" not in cached.stderr, cached.stderr
        assert b"the ctime of" in cached.stderr or step == 0, cached.stderr
        assert ctime(before) <= ctime(cached.stdout) <= ctime(after), (before, cached.stdout, after)


def _sqlite_read(path) -> None:
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("SELECT count(*) FROM entries").fetchone()
    db.close()


@pytest.mark.parametrize("meanwhile", [None, "file", "replaced", "removed"])
def test_the_stores_directory_gets_its_mtime_back_only_when_nothing_else_changed_there(tmp_path, meanwhile):
    # The rule of _lean.store_opening/store_closed, on a store in WAL mode: an open and close makes
    # and removes -wal and -shm (the mtime moves), and is put back; an entry added, replaced or
    # removed meanwhile by anyone else leaves the kernel's time.
    import os
    import sqlite3

    from actioncache import _lean

    home = tmp_path / "rollflow_cache"
    home.mkdir()
    store = home / "cache.sqlite"
    (home / "notes").write_text("x")
    db = sqlite3.connect(store, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE entries (key TEXT)")
    db.close()
    os.utime(home, ns=(1_000_000_000, 1_000_000_000))
    _lean.store_opening(str(store))
    _sqlite_read(store)
    if meanwhile == "file":
        (home / "new").write_text("y")
    elif meanwhile == "replaced":
        (home / "notes.tmp").write_text("z")
        os.rename(home / "notes.tmp", home / "notes")
    elif meanwhile == "removed":
        (home / "notes").unlink()
    _lean.store_closed(str(store))
    assert sorted(os.listdir(home)) == sorted({"cache.sqlite", "notes", "new"} - {
        None: {"new"}, "file": set(), "replaced": {"new"}, "removed": {"new", "notes"}}[meanwhile])
    assert (os.stat(home).st_mtime_ns == 1_000_000_000) == (meanwhile is None)
