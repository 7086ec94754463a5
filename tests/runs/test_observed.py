"""Issue 28: a hit is served only when everything the command observed is observed the same way
again: stat data (directories included), stdin, the environment, every traced process, and no
directory left out by its name. Each case first reproduced the stale replay on 3b63e54; every
replay here is compared with a fresh run of the same command: equal output, or a miss.

Real components throughout: the real CLI in a subprocess, real strace, real sh/bash/ls/find/cat,
a real virtualenv. The parser's property test feeds it synthetic strace lines, built with strace's
own quoting (the odd-name test below checks that quoting against the real strace)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.runs import readset
from actioncache.runs.trace import Touch, touches

from .summaries import USE, outcome

PY = sys.executable
FULL_ISO = "--time-style=full-iso"


def honest(ex, *command: str, extra_env: dict[str, str] | None = None, stdin: bytes | None = None,
           cwd: Path | None = None, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run ``command`` through exec (mode use), then fresh; the replay must print what the fresh run prints."""
    cached = ex.run(*USE, *flags, "--", *command, extra_env=extra_env, stdin=stdin, cwd=cwd)
    fresh = subprocess.run(list(command), cwd=cwd or ex.work, env={**ex.env, **(extra_env or {})}, input=stdin,
                           capture_output=True, timeout=60)
    assert cached.returncode == fresh.returncode, cached.stderr
    assert cached.stdout == fresh.stdout, (outcome(cached), cached.stdout, fresh.stdout, cached.stderr)
    return cached


@pytest.fixture
def tree(ex) -> Path:
    """The seed loop's layout: workers/ with a nested directory, a few files at the root."""
    (ex.work / "workers" / "ralph").mkdir(parents=True)
    (ex.work / "workers" / "ralph" / "loop.sh").write_text("#!/bin/sh\necho loop\n")
    (ex.work / "workers" / "IMPLEMENTATION_PLAN.md").write_text("plan\n")
    (ex.work / "PROMPT.md").write_text("Report on the loop.\n")
    return ex.work


# --- 1. stat data, directories included -------------------------------------------------------------


def test_ls_la_replays_fresh_times_and_link_counts_after_a_change_elsewhere_in_the_tree(ex, strace, tree):
    ls = ("ls", "-la", FULL_ISO, "workers")
    assert outcome(honest(ex, *ls)) == "miss"
    assert outcome(honest(ex, *ls)) == "hit"
    (tree / "workers" / "ralph" / "new.sh").write_text("x\n")  # ralph's mtime moves; ls -la workers shows it
    assert outcome(honest(ex, *ls)) == "miss"
    assert outcome(honest(ex, *ls)) == "hit"
    (tree / "specs").mkdir()  # the root gains a link: `..` in ls -la workers shows it
    assert outcome(honest(ex, *ls)) == "miss"


def test_ls_l_at_the_root_after_build_adds_a_file(ex, strace, tree):
    ls = ("ls", "-l", FULL_ISO)
    honest(ex, *ls)
    assert outcome(honest(ex, *ls)) == "hit"
    (tree / "workers" / "built.txt").write_text("built\n")  # BUILD adds a file below the root
    assert outcome(honest(ex, *ls)) == "miss"


def test_find_newer_sees_a_directory_that_became_newer(ex, strace, tree):
    stamp = tree / "stamp"
    stamp.write_text("")
    old = stamp.stat().st_mtime - 100
    for path in [tree / "workers", tree / "workers" / "ralph", *(tree / "workers").rglob("*")]:
        os.utime(path, (old, old))
    find = ("find", "workers", "-newer", "stamp")
    assert honest(ex, *find).stdout == b""
    assert outcome(honest(ex, *find)) == "hit"
    (tree / "workers" / "ralph" / "tmp.sh").write_text("")  # added and removed: same listing, newer mtime
    (tree / "workers" / "ralph" / "tmp.sh").unlink()
    after = honest(ex, *find)
    assert outcome(after) == "miss" and b"workers/ralph" in after.stdout


def test_ls_r_is_cached_and_every_change_below_the_walk_misses(ex, strace, tree):
    # ls -R asks statx for each directory's inode only (its loop check): the kernel returns no times,
    # and such a run was never cached ("could not read what it returned"). What it did see is checked,
    # completed by the rest of the directory's stat data as the run left it.
    ls = ("ls", "-R", "workers")
    assert outcome(honest(ex, *ls)) == "miss"
    assert outcome(honest(ex, *ls)) == "hit"
    changes = [lambda: (tree / "workers" / "ralph" / "new.sh").write_text("x\n"),  # a name two levels down
               lambda: (tree / "workers" / "ralph" / "sub").mkdir(),  # a directory it must enter
               lambda: (tree / "workers" / "ralph" / "sub").rename(tree / "workers" / "ralph" / "sub2"),
               lambda: shutil.rmtree(tree / "workers" / "ralph" / "sub2")]
    for change in changes:
        change()
        assert outcome(honest(ex, *ls)) == "miss"
        assert outcome(honest(ex, *ls)) == "hit"


_STATX = ("{{stx_mask={mask}, stx_blksize=4096, stx_attributes=0, stx_nlink=3, stx_uid=0, stx_gid=0, "
          "stx_mode=S_IFDIR|0755, stx_ino=2271384, stx_size=4096, stx_blocks=8{times}}}")
_TIMES = (", stx_mtime={tv_sec=1795908369, tv_nsec=5} /* x */, stx_ctime={tv_sec=1795908370, tv_nsec=6} /* y */")


@given(times=st.booleans(), drop=st.sets(st.sampled_from(["nlink", "uid", "gid", "ino", "size"])))
def test_a_statx_observation_keeps_exactly_the_fields_the_kernel_returned(times, drop):
    from actioncache.runs.trace import observed_stat

    struct = _STATX.format(mask="STATX_TYPE|STATX_MODE|STATX_INO", times=_TIMES if times else "")
    for name in drop:
        struct = struct.replace(f", stx_{name}=", ", stx_other_" + name + "=")  # a field not returned
    fields = observed_stat(struct).split(":")
    assert fields[0] == "40755"
    named = dict(zip(("size", "mtime", "ctime", "ino", "nlink", "uid", "gid"), fields[1:], strict=True))
    expected = {"size": "4096", "ino": "2271384", "nlink": "3", "uid": "0", "gid": "0",
                "mtime": "1795908369000000005", "ctime": "1795908370000000006"}
    for name, value in named.items():
        unseen = name in drop or (name in ("mtime", "ctime") and not times)
        assert value == (readset.UNSEEN if unseen else expected[name]), (name, value)
    no_type = struct.replace("stx_mode=", "stx_other_mode=")
    assert observed_stat(no_type) is None  # without the type there is nothing to complete it from
    if readset.UNSEEN in fields:  # a field missing from an abbreviated struct may have been returned
        assert observed_stat(struct[:-1] + ", ...}") is None


@pytest.mark.parametrize(("mask", "asks"), [
    ("STATX_MODE|STATX_NLINK|STATX_UID|STATX_GID|STATX_MTIME|STATX_SIZE", False),  # ls -la
    ("STATX_MTIME", False),  # stat -c %y
    ("STATX_MODE|STATX_NLINK|STATX_UID|STATX_GID|STATX_CTIME|STATX_SIZE", True),  # ls -lc
    ("STATX_CTIME", True),  # stat -c %z
    ("STATX_ALL", True),  # stat
    ("STATX_BASIC_STATS|STATX_BTIME", True),
    ("STATX_MODE|0x80", True),  # a bit strace has no name for is printed as a number
    ("0", False),
])
def test_a_statx_request_mask_says_whether_the_command_asked_for_the_ctime(mask, asks):
    from actioncache.runs.trace import asks_ctime

    assert asks_ctime(mask) is asks


def test_a_statx_field_that_changed_before_the_record_makes_the_run_unrecordable(tmp_path):
    # What the command saw of a directory (its inode) must still be there when the rest is filled in.
    folder = tmp_path / "d"
    folder.mkdir()
    info = folder.stat()
    seen = f"{info.st_mode:o}:?:?:?:{info.st_ino + 1}:?:?:?"
    with pytest.raises(readset.Unrecordable, match="changed after the command observed it"):
        readset.build([Touch("stat", str(folder), None, seen)], time.time_ns())
    same = f"{info.st_mode:o}:?:?:?:{info.st_ino}:?:?:?"
    records = readset.build([Touch("stat", str(folder), None, same)], time.time_ns() + 10**10)
    assert records[0][2] == readset.stat_of(folder.stat())  # completed: every field is checked on a hit


# --- 1. no directory left out by its name ----------------------------------------------------------------


def test_a_venv_under_the_cache_directory_with_an_upgraded_package(ex, strace):
    env_dir = Path(ex.env["XDG_CACHE_HOME"]) / "actioncache" / "venvs" / "project"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    site = next(env_dir.glob("lib/python*/site-packages"))
    (site / "linter_rules.py").write_text("VERSION = 1\n")
    check = (str(env_dir / "bin" / "python"), "-c", "import linter_rules; print('PASS', linter_rules.VERSION)")
    # No bytecode: where Python writes it, the first run makes linter_rules' __pycache__ (an output a
    # fresh run would not make again, so that run is not cached) and the entry comes one run later;
    # what is pinned here is the venv's observation, the same in either shell.
    quiet = {"PYTHONDONTWRITEBYTECODE": "1"}
    assert outcome(honest(ex, *check, extra_env=quiet)) == "miss"
    assert outcome(honest(ex, *check, extra_env=quiet)) == "hit"
    (site / "linter_rules.py").write_text("VERSION = 2\n")  # the package upgraded inside the venv
    after = honest(ex, *check, extra_env=quiet)
    assert outcome(after) == "miss" and after.stdout == b"PASS 2\n"


def test_a_program_newly_installed_in_usr_local_shadows_a_later_path_entry(ex, strace):
    base = Path("/usr/local/lib")
    if not os.access(base, os.W_OK):
        pytest.skip("needs a writable /usr/local/lib (root in the CI container)")
    root = Path(tempfile.mkdtemp(prefix="actioncache-test-", dir=base))
    try:
        first, later = root / "bin", root / "sbin"
        first.mkdir()
        later.mkdir()
        (later / "lint-tool").write_text("#!/bin/sh\necho old tool\n")
        (later / "lint-tool").chmod(0o755)
        path = {"PATH": f"{first}:{later}:{ex.env['PATH']}"}
        run = ("sh", "-c", "lint-tool")
        assert honest(ex, *run, extra_env=path).stdout == b"old tool\n"
        assert outcome(honest(ex, *run, extra_env=path)) == "hit"
        (first / "lint-tool").write_text("#!/bin/sh\necho new tool\n")  # installed earlier on $PATH
        (first / "lint-tool").chmod(0o755)
        after = honest(ex, *run, extra_env=path)
        assert outcome(after) == "miss" and after.stdout == b"new tool\n"
    finally:
        shutil.rmtree(root)


def test_the_one_exclusion_rule(tmp_path):
    """Only the process's own pseudo-files are left out (a look at the store's own files makes the run
    uncached); everything else is observed: system paths by stat data, /proc and /sys and everything
    else by content."""
    assert readset.OWN_PSEUDO[-7:] == ("/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/null", "/dev/zero",
                                       "/dev/full")
    assert set(readset.OWN_PSEUDO[:-7]) == {f"{d}/{name}" for d in ("/proc/self", "/proc/thread-self")
                                            for name in readset.OWN_PROC_FILES}
    for own in readset.OWN_PSEUDO:
        assert readset.place(own) == "own" and readset.place(own + "/x") == "own"
    assert readset.place("/usr/local/bin/tool") == "system" and readset.place("/dev/sda") == "system"
    assert readset.place("/proc/meminfo") == "pseudo" and readset.place("/sys/kernel/x") == "pseudo"
    assert readset.place("/proc/selfish") == "pseudo"  # by path component, not by text
    for user in ("/dev/shm/w/f", "/run/user/0/f", str(Path.home() / ".cache/actioncache/venv/lib/x.py"),
                 "/usr/../home/f", "/etc/passwd", "/tmp/x"):
        assert readset.place(user) == "user", user
    docs = (Path(__file__).resolve().parents[2] / "docs" / "agent-loops.md").read_text()
    for own in readset.OWN_PSEUDO[-7:]:
        assert f"`{own}" in docs, f"{own} is left out of read-sets but docs/agent-loops.md does not say so"
    store = tmp_path / "s.db"
    kept = tmp_path / "kept"
    observed = [Touch("stat", "/proc/self/status"), Touch("read", "/dev/null"), Touch("stat", "/usr", stat=None),
                Touch("read", str(kept), "ENOENT")]
    records = readset.build(observed, time.time_ns(), ignore=[str(store)])
    assert [(r[0], r[1]) for r in records] == [("s", "/usr"), ("f", str(kept))]
    for own in (str(store), str(store) + "-wal"):  # the store's own files: every run changes them
        with pytest.raises(readset.Unrecordable, match="looked at the cache's own store"):
            readset.build([*observed, Touch("read", own)], time.time_ns(), ignore=[str(store)])


# --- 2. a trace that loses nothing -----------------------------------------------------------------------


def test_the_fork_order_race_loses_no_lookup(ex, strace):
    """Children run ``./tN`` (an execve of a relative path) right after the fork, often printed by
    strace before the parent's clone returns. Each absence must be recorded: a program that appears
    later must change the answer."""
    sub = ex.work / "sub"
    sub.mkdir()
    script = "cd sub && { for i in 1 2 3 4 5 6 7 8; do ( ./t$i 2>/dev/null || echo none$i ) & done; wait; } | sort"
    for i in range(1, 9):
        assert outcome(honest(ex, "sh", "-c", script)) in ("miss", "hit")
        assert outcome(honest(ex, "sh", "-c", script)) == "hit"
        (sub / f"t{i}").write_text(f"#!/bin/sh\necho found{i}\n")
        (sub / f"t{i}").chmod(0o755)
        after = honest(ex, "sh", "-c", script)
        assert outcome(after) == "miss" and f"found{i}".encode() in after.stdout


ODD = st.text(alphabet=st.sampled_from(list('ab"\\<>,(){}= \n\t\'|') + ["é", "\udcff", "☃"]), min_size=1, max_size=6)


def _quote(path: str, fd_path: bool = False) -> str:
    """A path as strace prints it: in a quoted argument, or after a descriptor (``3</a/b>``)."""
    out = []
    for byte in os.fsencode(path):
        char = chr(byte)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif fd_path and char in "<>":
            out.append(f"\\{byte:o}")
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:o}")
    return "".join(out)


@st.composite
def process_trees(draw):
    """Per-process call lists (pid -> lines) and the touches they must give, for a random process tree."""
    next_pid = [101]
    lines: dict[int, list[list[str]]] = {}
    expected: list[tuple[str, str, str | None]] = []

    def process(pid: int, cwd: str, depth: int) -> None:
        mine: list[list[str]] = []
        lines[pid] = mine
        for _ in range(draw(st.integers(0, 5))):
            op = draw(st.sampled_from(["access", "execve", "chdir", "open", "fork"] if depth < 3 else
                                      ["access", "execve", "chdir", "open"]))
            name = draw(ODD).replace("/", "_")
            if name in (".", ".."):
                name = "n"
            failed = draw(st.booleans())
            err = " = -1 ENOENT (No such file or directory)" if failed else " = 0"
            target = cwd.rstrip("/") + "/" + name
            if op == "fork":
                child = next_pid[0]
                next_pid[0] += 1
                flags = draw(st.sampled_from(["CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD",
                                              "CLONE_VM|CLONE_VFORK|SIGCHLD"]))
                call = f"clone(child_stack=NULL, flags={flags}"
                if draw(st.booleans()):
                    mine.append([f"{pid} {call} <unfinished ...>", f"{pid} <... clone resumed>) = {child}"])
                else:
                    mine.append([f"{pid} {call}) = {child}"])
                process(child, cwd, depth + 1)
                continue
            if op == "open":
                ret = " = -1 ENOENT (No such file or directory)" if failed else f" = 3<{_quote(target, True)}>"
                text = f'openat(AT_FDCWD<{_quote(cwd, True)}>, "{_quote(name)}", O_RDONLY|O_CLOEXEC)'
                expected.append(("read", target, "ENOENT" if failed else None))
                mine.append([f"{pid} {text}{ret}"])
                continue
            call = {"access": f'access("{_quote(name)}", R_OK', "execve": f'execve("{_quote(name)}", [""...], '
                    '0x7ffc /* 3 vars */', "chdir": f'chdir("{_quote(name)}"'}[op]
            kind = {"access": "access", "execve": "exec", "chdir": "access"}[op]
            expected.append((kind, target, "ENOENT" if failed else None))
            if draw(st.booleans()):
                mine.append([f"{pid} {call} <unfinished ...>", f"{pid} <... {op} resumed>){err}"])
            else:
                mine.append([f"{pid} {call}){err}"])
            if op == "chdir" and not failed:
                cwd = target
                # the way there: a readlink of each component (trace._route)
                parts = target.split("/")
                expected.extend(("readlink", "/".join(parts[:end]), None) for end in range(2, len(parts) + 1))

    process(100, "/w <odd> dir", 0)
    # Merge the processes' lines in a random order that keeps each process's own order (what strace
    # guarantees), with the root's first line first; another process's line may fall between an
    # unfinished call and its resumption.
    queues = {pid: [line for call in calls for line in call] for pid, calls in lines.items()}
    merged = []
    first = queues[100].pop(0) if queues[100] else None
    if first:
        merged.append(first)
    while any(queues.values()):
        pid = draw(st.sampled_from(sorted(p for p, q in queues.items() if q)))
        merged.append(queues[pid].pop(0))
    return merged, expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(process_trees())
def test_the_parser_attributes_every_call_whatever_the_order(tree_lines):
    merged, expected = tree_lines
    got = [(t.kind, t.path, t.error) for t in touches([line + "\n" for line in merged], "/w <odd> dir")]
    assert sorted(got, key=repr) == sorted(expected, key=repr)


def test_odd_names_are_quoted_as_the_parser_expects(tmp_path, strace):
    """The property test's quoting, checked against the real strace."""
    name = 'a"b\\c<d>e,f)g \n\tñ'
    directory = tmp_path / "x<y>"
    directory.mkdir()
    (directory / name).write_text("x")
    log = tmp_path / "trace"
    subprocess.run([strace, "-f", "-qq", "-y", "-s", "0", "-e", "trace=%file", "-e", "abbrev=!%%stat", "-o", str(log),
                    "--", "sh", "-c", f"cd '{directory}' && cat ./a* >/dev/null; test -e ./nothere; true"], check=True)
    text = log.read_text(errors="surrogateescape")
    assert f'"./{_quote(name)}"' in text and f"<{_quote(str(directory / name), True)}>" in text
    got = {(t.kind, t.path, t.error) for t in touches(text.splitlines(keepends=True), str(tmp_path))}
    assert ("read", f"{directory}/./{name}", None) in got


STORE_LOOK = b"looked at the cache's own store"


def test_a_command_that_reads_the_store_never_replays_an_old_count(ex, strace):
    """The store's files were left out of the read-set (for a nested exec's sake), so a command that
    reads the store (sqlite3, a Python script) replayed the count of entries it saw first."""
    ex.run(*USE, "--", "true")  # the store exists
    count = (PY, "-c", f"import sqlite3; print(sqlite3.connect({str(ex.db)!r}).execute("
                       "\"select count(*) from entries where key like 'cache:exec:%'\").fetchone()[0])")
    first = ex.run(*USE, "--", *count)
    assert STORE_LOOK in first.stderr and outcome(first) != "hit", first.stderr
    ex.run(*USE, "--", "echo", "another entry")
    again = ex.run(*USE, "--", *count)  # the fresh count, not the first one
    assert outcome(again) != "hit" and int(again.stdout) == int(first.stdout) + 1, again.stderr


@pytest.mark.parametrize("ls", [("ls", "-l"), ("du", "-ab"), ("stat", "-c", "%n %s")])
def test_sizes_and_times_of_the_stores_files_are_never_replayed(ex, strace, ls):
    """``ls -l``, ``du`` or ``stat`` of the store's files (here through their directory) show sizes
    and times that every run moves: such a run is not cached."""
    ex.run(*USE, "--", "true")
    target = [str(ex.db.parent)] if ls[0] != "stat" else [str(ex.db)]
    for round_ in range(3):
        ex.run(*USE, "--", "echo", str(round_))  # the store grows between the looks
        looked = ex.run(*USE, "--", *ls, *target)
        assert outcome(looked) != "hit" and STORE_LOOK in looked.stderr, looked.stderr


def test_a_plain_listing_of_the_stores_directory_still_caches(ex, strace):
    """Names are all a plain listing shows, and the store's names are left out of a listing: it
    caches (the directory's own times are the store's writes and count by type, mode and owner)."""
    project = ex.work / "proj"
    (project / ".ac").mkdir(parents=True)
    (project / ".ac" / "notes").write_text("x\n")
    local = {"ACTIONCACHE_URL": f"sqlite:///{project / '.ac' / 'loop.db'}"}
    run = (PY, "-c", "import os; print([n for n in sorted(os.listdir('.ac')) if not n.startswith('loop.db')])")
    outcomes = [outcome(honest(ex, *run, extra_env=local, cwd=project)) for _ in range(3)]
    assert outcomes[-1] == "hit", outcomes


@pytest.mark.parametrize("launcher", ["module", "command"])
def test_a_nested_exec_touches_nothing_of_the_store(ex, strace, launcher):
    """A nested exec (the installed command's hit path too) asks whether it is traced before it
    touches the config memo, the store or anything beside it: the outer run, which would not be
    cached had it seen any of them, caches."""
    (ex.work / "f.txt").write_text("inner\n")
    program = f"{PY} -m actioncache" if launcher == "module" else str(Path(PY).parent / "actioncache")
    inner = f"{program} exec --mode use -- cat f.txt"
    ex.run(*USE, "--", "cat", "f.txt")  # the store, its journal and the config memo exist
    assert outcome(ex.run(*USE, "--", "cat", "f.txt")) == "hit"
    outer = ex.run(*USE, "--", "sh", "-c", inner)
    assert outer.stdout == b"inner\n" and STORE_LOOK not in outer.stderr, outer.stderr
    assert outcome(ex.run(*USE, "--", "sh", "-c", inner)) == "hit"


def test_an_exec_inside_a_traced_exec_runs_and_says_so(ex, strace):
    (ex.work / "f.txt").write_text("inner\n")
    inner = f"{PY} -m actioncache exec --mode use -- cat f.txt"
    outer = ex.run(*USE, "--", "sh", "-c", inner)
    assert outer.stdout == b"inner\n", outer.stderr
    assert b"inside a traced run" in outer.stderr
    assert outcome(ex.run(*USE, "--", "sh", "-c", inner)) == "hit"
    (ex.work / "f.txt").write_text("edited\n")  # the outer trace covers what the inner command read
    after = ex.run(*USE, "--", "sh", "-c", inner)
    assert outcome(after) == "miss" and after.stdout == b"edited\n"


@pytest.mark.parametrize("mode", ["off", "record", "use"])
def test_process_substitution_and_inherited_descriptors_work_in_every_mode(ex, strace, mode):
    (ex.work / "f.txt").write_text("one\n")
    exec_ = f"{PY} -m actioncache exec --mode {mode} --summary --"
    cases = [f"{exec_} cat <(cat f.txt) <(echo two)", f"{exec_} cat /dev/fd/3 3<f.txt"]
    for script in cases:
        for content in ("one\n", "three\n", "three\n"):
            (ex.work / "f.txt").write_text(content)
            run = subprocess.run(["bash", "-c", script], cwd=ex.work, env=ex.env, capture_output=True, timeout=60)
            fresh = subprocess.run(["bash", "-c", script.replace(exec_, "")], cwd=ex.work, env=ex.env,
                                   capture_output=True, timeout=60)
            assert run.returncode == 0 and run.stdout == fresh.stdout, run.stderr
            if mode == "use" and "<(" in script:
                assert b"runs uncached: inherited descriptor" in run.stderr
    if mode == "use":  # a regular file on a descriptor is keyed by its content
        assert outcome(subprocess.run(["bash", "-c", cases[1]], cwd=ex.work, env=ex.env, capture_output=True,
                                      timeout=60)) == "hit"


# --- 3. stdin by default ---------------------------------------------------------------------------------


def test_a_piped_prompt_that_was_edited_misses(ex, strace, tree):
    llm = ex.work / "llm.py"  # stands in for an LLM CLI (no LLM here): a report of its prompt
    llm.write_text("import sys\nprint('REPORT on:', sys.stdin.read().strip())\n")
    report = ("sh", "-c", f"cat PROMPT.md | {PY} -m actioncache exec {' '.join(USE)} -- {PY} llm.py")
    first = subprocess.run(list(report), cwd=ex.work, env=ex.env, capture_output=True, timeout=60)
    assert first.stdout == b"REPORT on: Report on the loop.\n" and outcome(first) == "miss"
    again = subprocess.run(list(report), cwd=ex.work, env=ex.env, capture_output=True, timeout=60)
    assert outcome(again) == "hit" and again.stdout == first.stdout
    (tree / "PROMPT.md").write_text("Report on the tests.\n")
    edited = subprocess.run(list(report), cwd=ex.work, env=ex.env, capture_output=True, timeout=60)
    assert outcome(edited) == "miss" and edited.stdout == b"REPORT on: Report on the tests.\n"
    assert honest(ex, PY, "llm.py", stdin=b"a prompt").stdout == b"REPORT on: a prompt\n"


def test_stdin_above_the_limit_runs_uncached_and_says_why(ex, strace):
    from actioncache.runs.keys import STDIN_LIMIT

    big = b"x" * (STDIN_LIMIT + 10)
    result = ex.run(*USE, "--", "wc", "-c", stdin=big)
    assert result.stdout.strip() == str(len(big)).encode()
    assert b"runs uncached: stdin holds more than" in result.stderr


# --- 4. the environment by default -----------------------------------------------------------------------


def test_model_a_then_model_b(ex, strace):
    show = ("sh", "-c", "echo model=$MODEL")
    assert honest(ex, *show, extra_env={"MODEL": "a"}).stdout == b"model=a\n"
    assert outcome(honest(ex, *show, extra_env={"MODEL": "a"})) == "hit"
    switched = ex.run(*USE, "--explain", "--", *show, extra_env={"MODEL": "b"})
    assert switched.stdout == b"model=b\n" and outcome(switched) == "miss"
    assert b"environment: MODEL changed" in switched.stderr
    assert b"=b" not in switched.stderr.replace(b"model=b", b"")  # names, never values


def test_env_ignore_does_not_miss(ex, strace):
    show = ("sh", "-c", "echo hi")
    honest(ex, *show, extra_env={"SHLVL": "2", "OLDPWD": "/a", "RUN_ID": "1"}, flags=("--env-ignore", "RUN_ID"))
    again = honest(ex, *show, extra_env={"SHLVL": "2", "OLDPWD": "/a", "RUN_ID": "2"}, flags=("--env-ignore", "RUN_ID"))
    assert outcome(again) == "hit"
    assert outcome(ex.run(*USE, "--", *show, extra_env={"SHLVL": "2", "OLDPWD": "/a", "RUN_ID": "3"})) == "miss"


@pytest.mark.parametrize(("show", "name", "values"), [
    (("sh", "-c", "echo $SHLVL"), "SHLVL", ("2", "5")),
    (("sh", "-c", "cd - >/dev/null && pwd"), "OLDPWD", ("/", "/tmp")),
    (("sh", "-c", "echo $_"), "_", ("/usr/bin/a", "/usr/bin/b")),
    (("sh", "-c", "echo $TMUX_PANE"), "TMUX_PANE", ("%1", "%2")),
])
def test_shell_and_terminal_variables_a_command_prints_are_keyed(ex, strace, show, name, values):
    """An outside tester's wrong hits: `cd -` replayed the listing of the old OLDPWD, `echo $SHLVL`
    an old level. No variable a command can see is left out as "noise"."""
    first, second = values
    assert honest(ex, *show, extra_env={name: first}).stdout == f"{first}\n".encode()
    assert outcome(honest(ex, *show, extra_env={name: first})) == "hit"
    changed = honest(ex, *show, extra_env={name: second})
    assert changed.stdout == f"{second}\n".encode() and outcome(changed) == "miss"


def test_strict_env_mode_passes_only_declared_variables(ex, strace):
    show = ("sh", "-c", "echo model=$MODEL other=$OTHER")
    strict = ("--env-mode", "strict", "--env", "MODEL")
    first = ex.run(*USE, *strict, "--", *show, extra_env={"MODEL": "a", "OTHER": "x"})
    assert first.stdout == b"model=a other=\n"
    assert outcome(ex.run(*USE, *strict, "--", *show, extra_env={"MODEL": "a", "OTHER": "y"})) == "hit"
    changed = ex.run(*USE, *strict, "--", *show, extra_env={"MODEL": "b", "OTHER": "y"})
    assert outcome(changed) == "miss" and changed.stdout == b"model=b other=\n"


def test_a_store_in_the_working_directory_does_not_make_every_run_miss(ex, strace):
    """The store's own -wal/-shm come and go beside it with every write: they are the store's own
    files, left out of the listing and the times of the directory that holds them."""
    local = {"ACTIONCACHE_URL": f"sqlite:///{ex.work}/loop.db"}
    lint = (PY, "-c", "import os; print(sorted(n for n in os.listdir('.') if not n.startswith('loop.db')))")
    assert outcome(ex.run(*USE, "--", *lint, extra_env=local)) == "miss"
    assert outcome(ex.run(*USE, "--env-ignore", "NONCE", "--", "sleep", "0", extra_env={**local, "NONCE": "1"})) \
        == "miss"  # another command's store write in between
    assert outcome(ex.run(*USE, "--", *lint, extra_env=local)) == "hit"
    (ex.work / "new.py").write_text("")  # anything else in that directory still counts
    after = ex.run(*USE, "--", *lint, extra_env=local)
    assert outcome(after) == "miss" and b"new.py" in after.stdout


def test_a_scripts_interpreter_counts_like_the_program_it_is(ex, strace):
    """The kernel runs a script's #! interpreter without an open the trace would show."""
    interp = ex.work / "bin" / "show"
    interp.parent.mkdir()
    shutil.copy("/bin/cat", interp)
    script = ex.work / "tool"
    script.write_text(f"#!{interp}\nprinted by cat\n")
    script.chmod(0o755)
    assert honest(ex, "./tool").stdout.endswith(b"printed by cat\n")
    assert outcome(honest(ex, "./tool")) == "hit"
    interp.unlink()
    shutil.copy("/bin/echo", interp)  # the interpreter upgraded: now it echoes its arguments
    after = honest(ex, "./tool")
    assert outcome(after) == "miss" and after.stdout == b"./tool\n"


def test_a_statx_feature_probe_observes_nothing(tmp_path):
    """ruff (Rust's std) and glibc probe for statx with statx(0, NULL, ...): it fails with EFAULT
    before any path is read, so it neither observes a file nor makes the run unrecordable (every
    ruff run was traced and never cached)."""
    lines = ['100 statx(0, NULL, AT_STATX_SYNC_AS_STAT, STATX_ALL, NULL) = -1 EFAULT (Bad address)\n',
             '100 openat(AT_FDCWD</w>, "a.py", O_RDONLY|O_CLOEXEC) = 3</w/a.py>\n']
    got = [(t.kind, t.path) for t in touches(lines, "/w")]
    assert ("unresolved" not in [kind for kind, _ in got]) and ("read", "/w/a.py") in got, got


def test_the_stores_own_files_are_recognised_by_identity_not_by_the_spelling_of_their_path(ex, strace):
    """The store reached through a symlinked directory is the same store: its own files are left out
    of a listing of its real directory too."""
    real = ex.work / "real"
    real.mkdir()
    (ex.work / "link").symlink_to(real)
    local = {"ACTIONCACHE_URL": f"sqlite:///{ex.work}/link/loop.db"}
    lint = (PY, "-c", "import os; print(sorted(n for n in os.listdir('real') if not n.startswith('loop.db')))")
    assert outcome(honest(ex, *lint, extra_env=local)) == "miss"
    assert outcome(ex.run(*USE, "--env-ignore", "NONCE", "--", "sleep", "0", extra_env={**local, "NONCE": "1"})) \
        == "miss"  # another command's store write in between
    assert outcome(honest(ex, *lint, extra_env=local)) == "hit"


def test_a_file_that_only_starts_with_the_stores_name_is_observed(ex, strace):
    local = {"ACTIONCACHE_URL": f"sqlite:///{ex.work}/loop.db"}
    notes = ex.work / "loop.db-notes"
    notes.write_text("first\n")
    show = ("cat", "loop.db-notes")
    assert honest(ex, *show, extra_env=local).stdout == b"first\n"
    notes.write_text("second\n")
    assert outcome(honest(ex, *show, extra_env=local)) == "miss"


def test_own_files_by_identity(tmp_path):
    """``readset.OwnFiles``: a hard link or a symlink to the database is the database; a file with its
    name in another directory is not, nor one beside it that only starts with its name."""
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    db = store_dir / "s.db"
    db.write_bytes(b"db")
    os.link(db, tmp_path / "hard.db")
    (tmp_path / "sym.db").symlink_to(db)
    (tmp_path / "dir-link").symlink_to(store_dir)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "s.db").write_bytes(b"db")
    mine = readset.OwnFiles([str(db)])
    for path in (db, tmp_path / "hard.db", tmp_path / "sym.db", tmp_path / "dir-link" / "s.db",
                 tmp_path / "dir-link" / "s.db-wal", store_dir / "s.db-exec-hits.jsonl",
                 store_dir / "s.db-exec-cheap" / "abc", store_dir / "s.db-exec-memo" / "abc",
                 store_dir / "s.db.envkey"):
        assert mine.owns(str(path)), path
    for path in (tmp_path / "elsewhere" / "s.db", store_dir / "s.db-notes", store_dir / "s.dbx", store_dir):
        assert not mine.owns(str(path)), path


# --- what a statx asked for is kept, even of a directory a path goes through --------------------------


@pytest.mark.parametrize("mask, asks", [
    ("STATX_MODE", False),  # ls -a of a directory
    ("STATX_TYPE|STATX_MODE|STATX_UID|STATX_GID", False),
    ("STATX_ATIME", False),  # no record keeps the atime
    ("STATX_NLINK", True),  # stat -c %h
    ("STATX_MODE|STATX_NLINK|STATX_UID|STATX_GID|STATX_MTIME|STATX_SIZE", True),  # ls -l
    ("STATX_INO", True),  # ls -R's loop check
    ("STATX_BASIC_STATS", True),
    ("STATX_MODE|0x40", True),  # a bit strace has no name for is printed as a number
    ("STATX_MODE|STATX_SOMETHING_NEW", True),  # a name this list lacks: assumed to ask
])
def test_a_statx_request_mask_says_whether_the_command_asked_for_more_than_type_mode_and_owner(mask, asks):
    from actioncache.runs.trace import asks_details

    assert asks_details(mask) is asks


@pytest.mark.parametrize("script", ['stat -c "%h %Y" d; cat d/f',  # the directory, and a file in it
                                    'stat -c %h d; test -e d/cfg && echo cfg; true',  # an absent name in it
                                    'ls -ld --time-style=+%s d; cat d/f'])
def test_a_directory_stated_for_its_link_count_and_times_and_looked_into_is_keyed_by_them(ex, strace, script):
    # An outside tester: `stat -c "%h %Y" d; cat d/f` replayed link count 2 and the old mtime after
    # `mkdir d/sub`: d was taken for a directory only walked through on the way to d/f, keyed by type,
    # permissions and owner. The statx asked for the link count and the mtime: those are keyed.
    (ex.work / "d").mkdir()
    (ex.work / "d" / "f").write_text("F\n")
    old = time.time() - 100
    os.utime(ex.work / "d", (old, old))
    run = ("sh", "-c", script)
    outcomes = [outcome(honest(ex, *run)) for _ in range(3)]
    assert outcomes[-1] == "hit", outcomes
    (ex.work / "d" / "sub").mkdir()
    assert outcome(honest(ex, *run)) != "hit"
    assert outcome(honest(ex, *run)) == "hit"


def _tmpfs_dir() -> Path:
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        pytest.skip("no writable /dev/shm here")
    return Path(tempfile.mkdtemp(dir=shm))


def test_a_stat_of_an_open_directory_under_dev_shm_is_keyed(ex, strace):
    # An outside tester: under /dev/shm an fstat was dropped as a device's would be (every path under
    # /dev was), so the link count and times of an open directory, and the mode and link count of an
    # open file, replayed stale after `mkdir d/x`, `ln f f2`, `chmod 600 f`. A file or directory counts
    # there as anywhere; only a device's stat is left to its read or write.
    root = _tmpfs_dir()
    try:
        (root / "d").mkdir()
        (root / "f").write_text("A\n")
        for folder in (root, root / "d"):
            os.utime(folder, (time.time() - 100, time.time() - 100))
        probe = ("import os; fd = os.open('d', os.O_RDONLY | os.O_DIRECTORY); st = os.fstat(fd); "
                 "print(st.st_nlink, st.st_mtime_ns); fd = os.open('f', os.O_RDONLY); st = os.fstat(fd); "
                 "print(st.st_nlink, oct(st.st_mode))")
        run = (PY, "-c", probe)
        changes = [lambda: (root / "d" / "x").mkdir(), lambda: os.link(root / "f", root / "f2"),
                   lambda: (root / "f").chmod(0o600)]
        outcomes = [outcome(honest(ex, *run, cwd=root)) for _ in range(3)]
        assert outcomes[-1] == "hit", outcomes
        for change in changes:
            change()
            assert outcome(honest(ex, *run, cwd=root)) != "hit"
            assert outcome(honest(ex, *run, cwd=root)) == "hit"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_an_unsorted_listing_replays_the_order_the_directory_lists_now(ex, strace):
    # An outside tester: `ls -U` on tmpfs replayed `c b a` after `rm a; touch a` (tmpfs lists the newest
    # first: `a c b`): the listing was keyed by its sorted names. It is keyed in the order listed.
    root = _tmpfs_dir()
    try:
        for name in "abc":
            (root / name).write_text("")
        run = (PY, "-c", "import os; print(os.listdir('.'))")  # no stat of the directory: the listing alone
        outcomes = [outcome(honest(ex, *run, cwd=root)) for _ in range(3)]
        assert outcomes[-1] == "hit", outcomes
        (root / "a").unlink()
        (root / "a").write_text("")
        assert outcome(honest(ex, *run, cwd=root)) != "hit"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("script", ["cd L && cat f",                          # the shell's chdir
                                    "cd L; ls",                               # and a listing there
                                    "cd L && (cat g 2>/dev/null || echo none)",  # an absent name there
                                    "env -C L cat f"])
def test_a_directory_reached_through_a_link_is_keyed_by_the_link(ex, strace, script):
    # An outside tester: after `cd L` the kernel names the working directory by its real path (A), so
    # the file read was keyed as A/f and L only as a directory there; `ln -sfn B L` replayed A's output.
    # The way to a directory the command works in is keyed by each component's readlink.
    for name, text in (("A", "fromA\n"), ("B", "fromB\n")):
        (ex.work / name).mkdir()
        (ex.work / name / "f").write_text(text)
    (ex.work / "B" / "g").write_text("G\n")
    (ex.work / "L").symlink_to("A")
    run = ("sh", "-c", script)
    outcomes = [outcome(honest(ex, *run)) for _ in range(3)]
    assert outcomes[-1] == "hit", outcomes  # the link unchanged: a hit
    (ex.work / "L").unlink()
    (ex.work / "L").symlink_to("B")
    assert outcome(honest(ex, *run)) != "hit"


def test_a_directory_opened_through_a_link_and_worked_in_is_keyed_by_the_link(ex, strace):
    for name, text in (("A", "fromA\n"), ("B", "fromB\n")):
        (ex.work / name).mkdir()
        (ex.work / name / "f").write_text(text)
    (ex.work / "L").symlink_to("A")
    run = (PY, "-c", "import os; os.fchdir(os.open('L', os.O_RDONLY | os.O_DIRECTORY)); print(open('f').read())")
    outcomes = [outcome(honest(ex, *run)) for _ in range(3)]
    assert outcomes[-1] == "hit", outcomes
    (ex.work / "L").unlink()
    (ex.work / "L").symlink_to("B")
    assert outcome(honest(ex, *run)) != "hit"
