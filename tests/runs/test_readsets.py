"""Issue 12: `actioncache exec` sees every input. Real tools (git, ls, cat, grep, sh, shellcheck)
under the real tracer (strace); each stale case misses without --input and hits again when nothing
changed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.runs import readset, trace

from .summaries import outcome

PY = sys.executable
USE = ("--cache-mode", "use", "--cache-scope", "verify,read", "--summary")  # seed 001's own spelling


@pytest.fixture
def git_env(ex) -> dict[str, str]:
    return {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(ex.work.parent)}


def test_git_log_misses_after_a_commit(ex, strace, git_env):
    os.rmdir(ex.work / ".git")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=ex.work, env={**ex.env, **git_env}, check=True, capture_output=True)

    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "one")
    log = ("--scope", "read", "--", "git", "log", "--oneline")
    first = ex.run(*USE, *log, extra_env=git_env)
    assert outcome(first) == "miss" and b"one" in first.stdout
    assert outcome(ex.run(*USE, *log, extra_env=git_env)) == "hit"
    git("commit", "-q", "--allow-empty", "-m", "two")
    after = ex.run(*USE, *log, extra_env=git_env)
    assert outcome(after) == "miss" and b"two" in after.stdout
    assert outcome(ex.run(*USE, *log, extra_env=git_env)) == "hit"


def test_shellcheckrc_edit_misses(ex, strace, shellcheck):
    (ex.work / "warn.sh").write_text("#!/bin/sh\necho $1\n")  # SC2086, unless disabled
    (ex.work / ".shellcheckrc").write_text("disable=SC2086\n")
    check = ("--", "shellcheck", "warn.sh")
    assert ex.run(*USE, *check).returncode == 0
    assert outcome(ex.run(*USE, *check)) == "hit"
    (ex.work / ".shellcheckrc").write_text("# SC2086 back on\n")
    stale = ex.run(*USE, *check)
    assert outcome(stale) == "fail" and b"SC2086" in stale.stdout  # not a replayed PASS
    (ex.work / ".shellcheckrc").write_text("disable=SC2086\n")
    # The old content is back, but shellcheck stat'ed the file and its stat data is new (issue 28):
    # a miss, which records this past beside the first.
    assert outcome(ex.run(*USE, *check)) == "miss"
    assert outcome(ex.run(*USE, *check)) == "hit"


def test_rules_file_edit_misses(ex, strace):
    # A verifier whose rules are not on its command line (seed 001's rules/AC.rules).
    (ex.work / "rules").mkdir()
    (ex.work / "rules" / "AC.rules").write_text("TODO\n")
    (ex.work / "verifier.sh").write_text('#!/bin/sh\nif grep -q -f rules/AC.rules good.sh; then echo FAIL; exit 1; fi\n'
                                         'echo PASS\n')
    verify = ("--", "sh", "verifier.sh")
    assert ex.run(*USE, *verify).stdout == b"PASS\n"
    assert outcome(ex.run(*USE, *verify)) == "hit"
    (ex.work / "rules" / "AC.rules").write_text("hello\n")
    stale = ex.run(*USE, *verify)
    assert stale.returncode == 1 and stale.stdout == b"FAIL\n"
    (ex.work / "rules" / "AC.rules").write_text("TODO\n")
    assert outcome(ex.run(*USE, *verify)) == "hit"


def test_bare_ls_in_two_directories(ex, strace):
    for name, files in (("docs", ("guide.md",)), ("scripts", ("run.sh", "x.sh"))):
        (ex.work / name).mkdir()
        for f in files:
            (ex.work / name / f).write_text(f)
    ls = ("--scope", "read", "--", "ls")
    assert ex.run(*USE, *ls, cwd=ex.work / "scripts").stdout == b"run.sh\nx.sh\n"
    docs = ex.run(*USE, *ls, cwd=ex.work / "docs")
    assert outcome(docs) == "miss" and docs.stdout == b"guide.md\n"
    assert outcome(ex.run(*USE, *ls, cwd=ex.work / "docs")) == "hit"
    (ex.work / "docs" / "new.md").write_text("")
    listing = ex.run(*USE, *ls, cwd=ex.work / "docs")
    assert outcome(listing) == "miss" and listing.stdout == b"guide.md\nnew.md\n"


def test_file_behind_a_symlink_in_a_directory_argument(ex, strace):
    outside = ex.work / "outside.txt"
    outside.write_text("hello one\n")
    (ex.work / "d").mkdir()
    (ex.work / "d" / "link").symlink_to(outside)
    grep = ("--", "grep", "-R", "hello", "d")
    assert ex.run(*USE, *grep).stdout == b"d/link:hello one\n"
    assert outcome(ex.run(*USE, *grep)) == "hit"
    outside.write_text("hello two\n")
    edited = ex.run(*USE, *grep)
    assert outcome(edited) == "miss" and edited.stdout == b"d/link:hello two\n"
    assert outcome(ex.run(*USE, *grep)) == "hit"


def test_a_file_that_appears_later_misses(ex, strace):
    # A failed open is a read of absence: creating the file must change the answer.
    cat = ("--", "sh", "-c", "cat optional.txt 2>/dev/null; echo done")
    assert ex.run(*USE, *cat).stdout == b"done\n"
    assert outcome(ex.run(*USE, *cat)) == "hit"
    (ex.work / "optional.txt").write_text("now here\n")
    appeared = ex.run(*USE, *cat)
    assert outcome(appeared) == "miss" and appeared.stdout == b"now here\ndone\n"


def test_relative_paths_follow_the_commands_own_chdir(ex, strace):
    (ex.work / "sub").mkdir()
    (ex.work / "sub" / "x.txt").write_text("one\n")
    (ex.work / "x.txt").write_text("top\n")
    cmd = ("--", "sh", "-c", "cd sub && cat x.txt")
    assert ex.run(*USE, *cmd).stdout == b"one\n"
    (ex.work / "x.txt").write_text("top, edited\n")  # not what it read
    assert outcome(ex.run(*USE, *cmd)) == "hit"
    (ex.work / "sub" / "x.txt").write_text("two\n")
    assert ex.run(*USE, *cmd).stdout == b"two\n"


def test_same_size_edit_with_the_old_mtime_still_misses(ex, strace):
    # The stat shortcut must not be fooled: ctime moves even when mtime is put back.
    target = ex.work / "data.txt"
    target.write_text("aaaa\n")
    cmd = ("--", "cat", "data.txt")
    ex.run(*USE, *cmd)
    assert outcome(ex.run(*USE, *cmd)) == "hit"
    before = os.stat(target)
    target.write_text("bbbb\n")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    edited = ex.run(*USE, *cmd)
    assert outcome(edited) == "miss" and edited.stdout == b"bbbb\n"


def test_a_run_that_changes_what_it_read_is_not_cached(ex, strace):
    (ex.work / "counter.txt").write_text("1\n")
    bump = ("--", "sh", "-c", "n=$(cat counter.txt); echo $n; echo $((n + 1)) > counter.txt")
    first = ex.run(*USE, "--explain", *bump)
    assert b"not cached: the command changed" in first.stderr and b"counter.txt" in first.stderr
    second = ex.run(*USE, *bump)
    assert outcome(second) == "fresh" and second.stdout == b"2\n"


def test_outputs_written_first_are_not_inputs(ex, strace):
    cmd = ("--", "sh", "-c", "echo built > out.txt; cat out.txt")
    first = ex.run(*USE, *cmd)
    # sh stat'ed its working directory, then added out.txt to it: what it saw is gone (issue 28)
    assert first.stdout == b"built\n" and outcome(first) == "fresh"
    assert outcome(ex.run(*USE, *cmd)) == "miss"  # out.txt is there now: the directory stays as seen
    assert outcome(ex.run(*USE, *cmd)) == "hit"


def test_explain_lists_the_read_set_and_names_the_change(ex, strace):
    (ex.work / "conf.ini").write_text("a=1\n")
    cmd = ("--", "cat", "conf.ini")
    recorded = ex.run(*USE, "--explain", *cmd)
    assert b"recorded read-set:" in recorded.stderr and str(ex.work / "conf.ini").encode() in recorded.stderr
    hit = ex.run(*USE, "--explain", *cmd)
    assert b"hit; read-set:" in hit.stderr
    (ex.work / "conf.ini").write_text("a=2\n")
    miss = ex.run(*USE, "--explain", *cmd)
    assert f"miss: {ex.work / 'conf.ini'} changed".encode() in miss.stderr


def test_without_a_tracer_the_fallback_says_so_once(ex):
    result = ex.run(*USE, "--", PY, "tool.py", "runs", extra_env={"ACTIONCACHE_TRACE": "off"})
    assert result.stderr.count(b"read-sets off") == 1
    again = ex.run(*USE, "--", PY, "tool.py", "runs", extra_env={"ACTIONCACHE_TRACE": "off"})
    assert outcome(again) == "hit" and ex.runs() == 1


ODD_NAMES = ["a b.txt", 'q"uote.txt', "gt>lt<.txt", "new\nline.txt", "tab\there.txt", "back\\slash.txt",
             "é-accent.txt", os.fsdecode(b"bytes-\xff\xfe.txt"), "-dash.txt"]


def test_odd_file_names_are_recorded_exactly(ex, strace):
    for name in ODD_NAMES:
        (ex.work / name).write_bytes(os.fsencode(name))
    cmd = ("--", "cat", "--", *ODD_NAMES)
    ex.run(*USE, *cmd)
    assert outcome(ex.run(*USE, *cmd)) == "hit"
    for name in ODD_NAMES:
        (ex.work / name).write_bytes(os.fsencode(name) + b" edited")
        edited = ex.run(*USE, "--explain", *cmd)
        assert outcome(edited) == "miss", name
        miss_line = edited.stderr.split(b"miss: ", 1)[1]
        assert miss_line.startswith(os.fsencode(str(ex.work / name[:3]))) and b" changed: " in miss_line, name
        assert outcome(ex.run(*USE, *cmd)) == "hit", name


def test_a_file_the_command_wrote_must_still_be_there(ex, strace):
    # A replay gives back stdout and stderr, not files: a deleted or edited output runs it again.
    cmd = ("--", "sh", "-c", "sort good.sh > sorted.txt; echo done")
    ex.run(*USE, *cmd)
    assert outcome(ex.run(*USE, *cmd)) == "hit"
    (ex.work / "sorted.txt").unlink()
    assert outcome(ex.run(*USE, *cmd)) == "miss" and (ex.work / "sorted.txt").exists()
    (ex.work / "sorted.txt").write_text("tampered\n")
    assert outcome(ex.run(*USE, *cmd)) == "miss" and (ex.work / "sorted.txt").read_text() != "tampered\n"
    assert outcome(ex.run(*USE, *cmd)) == "hit"


def test_a_big_file_counts_by_its_full_signature_and_a_racy_one_by_its_content(tmp_path):
    """A file over ``readset.BIG_FILE_BYTES`` is not hashed on a miss (a pyenv libpython is 23 MB):
    its full stat signature stands for its content, and any write moves it, even one that restores
    the size and the mtime. A signature taken within the timestamp granularity of a change is not
    trusted: that file is hashed."""
    big = tmp_path / "big.bin"
    big.write_bytes(b"a" * (readset.BIG_FILE_BYTES + 1))
    assert readset.look("f", str(big))[0].startswith("f:")  # racy: just written
    time.sleep(readset.FINE_GRANULARITY_NS / 1e9 * 3)
    seen = readset.look("f", str(big))[0]
    assert seen.startswith("sig:") and "a file of" in readset.describe(seen)
    records = [["f", str(big), seen, None]]
    assert readset.first_change(records) is None
    before = os.stat(big)
    big.write_bytes(b"b" * (readset.BIG_FILE_BYTES + 1))  # same size, same mtime after utime
    os.utime(big, ns=(before.st_atime_ns, before.st_mtime_ns))
    time.sleep(readset.FINE_GRANULARITY_NS / 1e9 * 3)
    assert readset.first_change(records) is not None
    small = tmp_path / "small.txt"
    small.write_bytes(b"x" * readset.BIG_FILE_BYTES)
    time.sleep(readset.FINE_GRANULARITY_NS / 1e9 * 3)
    assert readset.look("f", str(small))[0].startswith("f:")


def _split_args_by_character(text: str) -> tuple[list[str], str]:
    """``trace._split_args`` as it was, a character at a time: the reference it must agree with."""
    args: list[str] = []
    depth, start, i, n = 0, 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "<" and i > 0 and (text[i - 1].isdigit() or text[i - 1] == "D"):  # 3</path>, AT_FDCWD</path>
            i += 1
            while i < n and text[i] != ">":
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[start:i].strip())
                return [a for a in args if a], text[i + 1:]
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return [a for a in args if a], ""


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(['"', "<", ">", "\\", "(", ")", "[", "]", "{", "}", ",", "3", "D", "a", " ", "/x"]),
                max_size=40).map("".join))
def test_splitting_a_calls_arguments_agrees_with_the_character_by_character_reference(text):
    assert trace._split_args(text) == _split_args_by_character(text)


def test_splitting_real_calls():
    line = 'AT_FDCWD</w/a\\>b>, "x\\"y,(z)", [{a, b}], O_RDONLY) = 3</w/f>'
    assert trace._split_args(line) == _split_args_by_character(line)
    assert trace._split_args(line)[0][0] == 'AT_FDCWD</w/a\\>b>'
