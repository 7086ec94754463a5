"""A cheap command run by the `actioncache` command's shell part, without starting Python
(bin/_actioncache_direct.sh, runs/direct.py): taken after a direct verdict for exactly this call,
never where the hit path would not run the command directly.

The command under test is a copy of bin/ whose `python` is a wrapper that leaves a mark before it
starts the real interpreter: a run that left no mark ran without Python."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actioncache import Cache

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
ARGS = ("exec", "--mode", "use", "--scope", "read", "--", "cat", "good.sh")

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the shell part reads /proc")


class Launcher:
    def __init__(self, ex, tmp_path: Path) -> None:
        self.ex = ex
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for name in ("actioncache", "_actioncache_launch.py", "_actioncache_direct.sh", "_actioncache_verdict.sh"):
            (self.bin / name).write_bytes((ROOT / "bin" / name).read_bytes())
            (self.bin / name).chmod(0o755)
        self.marks = tmp_path / "python-started"
        (self.bin / "python").write_text(f'#!/bin/sh\necho x >> "{self.marks}"\nexec "{PY}" "$@"\n')
        (self.bin / "python").chmod(0o755)
        self.env = {k: v for k, v in ex.env.items() if k != "ACTIONCACHE_CHEAP_MS"}  # the measured rule
        with Cache(ex.url) as cache:
            from actioncache.runs import cost

            cost.add_hit_costs(cache.store, [60_000.0])  # hits cost a minute here: every quick command is cheap
        back = time.time() - 10
        os.utime(ex.work / "good.sh", (back, back))

    def pythons(self) -> int:
        return len(self.marks.read_text().splitlines()) if self.marks.exists() else 0

    def run(self, *args: str, extra_env: dict[str, str] | None = None, cwd: Path | None = None,
            stdin: int | None = subprocess.DEVNULL, **kwargs) -> tuple[subprocess.CompletedProcess, bool]:
        """(the run, whether Python started for it)."""
        before = self.pythons()
        env = {**self.env, **(extra_env or {})}
        captured = "stdout" not in kwargs and "stderr" not in kwargs  # (or where the caller wired them)
        done = subprocess.run([str(self.bin / "actioncache"), *(args or ARGS)], cwd=cwd or self.ex.work, env=env,
                              stdin=stdin, capture_output=captured, timeout=120, **kwargs)
        return done, self.pythons() > before

    def verdicts(self) -> list[Path]:
        folder = Path(self.env["XDG_CACHE_HOME"]) / "actioncache" / "exec-direct"
        return sorted(p for p in folder.rglob("*") if p.is_file())

    def settle(self, *paths: Path) -> None:
        """Date files the verdict checks ten seconds back: written within the second before a run, they
        are racy and no verdict is written (that rule has its own test). Not what a key holds (the
        mtime of a file read in scope `read`): that is done once, before the first run."""
        back = time.time() - 10
        for path in (Path(f"{self.ex.db}.envkey"), *paths):
            if path.exists():
                os.utime(path, (back, back))

    def direct(self, *args: str, **kwargs) -> None:
        """Run until the shell part takes the call (a judged miss, then the hit path's cheap runs,
        which leave the verdict), and check that it did."""
        for _ in range(4):
            done, python = self.run(*args, **kwargs)
            assert done.returncode == 0, done.stderr
            self.settle()
            if not python:
                return
        raise AssertionError(f"the shell part never ran it directly: {self.verdicts()}")


@pytest.fixture
def sh(ex, strace, tmp_path) -> Launcher:
    return Launcher(ex, tmp_path)


def journal(ex) -> list[dict]:
    path = ex.sidecar("exec-hits.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_cheap_command_runs_from_the_shell_part_once_python_left_its_verdict(sh):
    good = (sh.ex.work / "good.sh").read_bytes()
    outcomes = []
    for _ in range(3):
        done, python = sh.run()
        assert done.stdout == good and done.returncode == 0, done.stderr
        outcomes.append(python)
        sh.settle()
    # a judged miss, then the hit path's cheap runs (the first names the tool, the second writes the verdict)
    assert outcomes == [True, True, True] and len(sh.verdicts()) == 1
    for _ in range(3):
        done, python = sh.run()
        assert done.stdout == good and done.stderr == b"" and done.returncode == 0
        assert not python  # the command ran without a Python start-up
    records = [r for r in journal(sh.ex) if r.get("sh")]
    assert len(records) == 3 and all(r["outcome"] == "cheap" and r["tool"] == "cat" for r in records)
    at = records[-1]["at"]
    assert abs(time.mktime(time.strptime(at[:19], "%Y-%m-%dT%H:%M:%S")) - time.mktime(time.gmtime())) < 120
    assert isinstance(records[-1]["overhead_ms"], int)
    # counted as every cheap run is: `actioncache stats` shows them
    stats = subprocess.run([PY, "-m", "actioncache", "stats", "--json", "--since", "1h"], env=sh.env, cwd=sh.ex.work,
                           capture_output=True, timeout=60, check=True)
    assert json.loads(stats.stdout)["uncached_cheap"] == 6


@pytest.mark.parametrize("change", ["env", "env_removed", "mode_record", "mode_off", "cheap_ms", "argv", "cwd",
                                    "config_created", "read_file_touched", "stdin_pipe", "sigpipe_ignored",
                                    "one_stream", "tool_shadowed", "force_fresh", "force_fresh_env",
                                    "inherited_file"])
def test_the_shell_part_falls_through_when_anything_the_hit_path_looks_at_changed(sh, change, tmp_path):
    sh.direct()
    good = (sh.ex.work / "good.sh").read_bytes()
    kwargs: dict = {}
    args: tuple[str, ...] = ()
    if change == "env":
        kwargs["extra_env"] = {"SOME_SETTING": "1"}
    elif change == "env_removed":
        sh.env.pop("RUNS_DIR")
    elif change == "mode_record":
        kwargs["extra_env"] = {"ACTIONCACHE_MODE": "record"}
        args = ("exec", "--scope", "read", "--", "cat", "good.sh")
    elif change == "mode_off":
        kwargs["extra_env"] = {"ACTIONCACHE_MODE": "off"}
        args = ("exec", "--scope", "read", "--", "cat", "good.sh")
    elif change == "force_fresh":
        args = ("exec", "--mode", "use", "--scope", "read", "--force-fresh", "--", "cat", "good.sh")
    elif change == "force_fresh_env":
        kwargs["extra_env"] = {"ACTIONCACHE_FORCE_FRESH": "1"}
    elif change == "inherited_file":  # (a regular file open on fd 3 is keyed by its content)
        handle = open(sh.ex.work / "bad.sh", "rb")  # noqa: SIM115 - closed with the test's process
        kwargs["pass_fds"] = (handle.fileno(),)
    elif change == "cheap_ms":
        kwargs["extra_env"] = {"ACTIONCACHE_CHEAP_MS": "0"}
    elif change == "argv":
        args = ("exec", "--mode=use", "--scope", "read", "--", "cat", "good.sh")
    elif change == "cwd":
        other = tmp_path / "other"
        other.mkdir()
        (other / ".git").mkdir()
        (other / "good.sh").write_bytes(good)
        kwargs["cwd"] = other
    elif change == "config_created":
        (sh.ex.work / ".actioncache.yml").write_text("mode: record\n")
    elif change == "read_file_touched":
        os.utime(sh.ex.work / "good.sh")
    elif change == "stdin_pipe":
        kwargs["stdin"] = None
        kwargs["input"] = b"piped"
    elif change == "sigpipe_ignored":
        kwargs["restore_signals"] = False  # this test's Python ignores SIGPIPE: so does the command
        assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    elif change == "one_stream":
        kwargs["stderr"] = subprocess.STDOUT
        kwargs["stdout"] = subprocess.PIPE
    elif change == "tool_shadowed":  # a new `cat` earlier on $PATH: the shell would run another program
        first = tmp_path / "first"
        first.mkdir()
        sh.env["PATH"] = f"{first}:{sh.env['PATH']}"
        sh.direct()
        (first / "cat").write_text("#!/bin/sh\necho shadow\n")
        (first / "cat").chmod(0o755)
    if kwargs.get("stderr") is subprocess.STDOUT:
        before = sh.pythons()
        done = subprocess.run([str(sh.bin / "actioncache"), *ARGS], cwd=sh.ex.work, env=sh.env,
                              stdin=subprocess.DEVNULL, timeout=120, **kwargs)
        python = sh.pythons() > before
    else:
        done, python = sh.run(*args, **kwargs)
    assert python, change  # Python decided
    if change == "tool_shadowed":
        assert done.stdout == b"shadow\n"
    elif change == "mode_record":
        assert done.stdout == good and sh.ex.entries()  # recorded
    else:
        assert done.stdout == good, (change, done.stderr)


def test_a_config_edited_after_the_verdict_is_seen(sh):
    config = sh.ex.work / ".actioncache.yml"
    config.write_text("mode: use\n")
    sh.ex.trust(sh.ex.work)
    sh.settle(config, Path(sh.ex.env["ACTIONCACHE_TRUST_FILE"]))
    time.sleep(2.1)  # the full command leaves the hit path a memo of a config changed over 2 s ago (configmemo)
    args = ("exec", "--scope", "read", "--", "cat", "good.sh")  # the mode from the config
    sh.direct(*args)
    config.write_text("mode: record\n")  # the same size, edited now
    done, python = sh.run(*args)
    assert python and done.stdout == (sh.ex.work / "good.sh").read_bytes()
    assert sh.ex.entries()  # the config's mode record stored it


def test_no_verdict_is_written_while_a_checked_file_is_racy(sh):
    for _ in range(2):
        sh.run()
    sh.settle()
    os.utime(sh.ex.work / "good.sh")  # modified within the second: an edit right after might not be newer
    sh.run()
    assert sh.verdicts() == [] or all(not p.name.endswith(".tmp") for p in sh.verdicts())
    assert [p for p in sh.verdicts() if len(p.name) == 128] == []


def test_an_expired_verdict_falls_through_and_is_written_again(sh):
    sh.direct()
    [verdict] = sh.verdicts()
    lines = verdict.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("u "):
            lines[i] = "u 1"  # a deadline long past (uptime in centiseconds)
    stamp = verdict.stat().st_mtime
    verdict.write_text("\n".join(lines) + "\n")
    os.utime(verdict, (stamp, stamp))
    done, python = sh.run()
    assert python and done.stdout == (sh.ex.work / "good.sh").read_bytes()
    done, python = sh.run()  # the hit path ran it directly and wrote a new verdict
    assert not python
    # the cheap verdict itself gone (judged again): the shell part falls through
    for cheap in sh.ex.sidecar("cheap").iterdir():
        cheap.unlink()
    done, python = sh.run()
    assert python and done.stdout == (sh.ex.work / "good.sh").read_bytes()


VALID = b"v 1\nBOOT\nu 9999999999\nc 5\ns n 2\n"  # the head of a verdict for ARGS, stdin /dev/null
PLANTED = [  # (content, whether the shell part may run the command directly)
    (b"", False),
    (b"\x00\xff\xfe garbage\n", False),
    (b"v 1\nend\n", False),
    (b"v 1\nb $(touch pwned)\nu 99999999999999999999999999\nc 5\ns n 2\nend\n", False),
    (b"v 1\nBOOT\nu 99999999999999999999999999\nc 5\ns n 2\nend\n", False),  # a number too long for sh
    (b"v 1\nBOOT\nu 9999999999\nc 0\ns n 2\nend\n", False),  # another place for the command: never run
    (b"v 1\nBOOT\nu 9999999999\nc 5;touch pwned\ns n 2\nend\n", False),
    (VALID + b"X /bin/false\nend\n", True),  # a check that holds: cat runs all the same, never false
    (b"v 1\nBOOT\nu 9999999999\nc 5\ns * *\nend\n", False),
    (VALID + b"e relative\nend\n", False),
    (VALID + b"f /nonexistent\nend\n", False),
    (VALID + b"q unknown line\nend\n", False),
    (VALID, False),  # no end: torn
    (VALID + b"j /tmp/.bashrc\nend\n", False),  # a journal is only a hit journal
    (VALID + b"k x\nt 1;touch pwned\nj /nonexistent/x-exec-hits.jsonl\nr {\"a\": \"$(touch pwned)\"\nend\n",
     True),  # no journal line: none it could write right
    (VALID + b"end\n", True),  # nothing else to check
]


@pytest.mark.parametrize(("planted", "direct"), PLANTED)
def test_a_planted_verdict_never_runs_anything_but_the_given_command(sh, planted, direct):
    sh.direct()
    [verdict] = sh.verdicts()
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    verdict.write_bytes(planted.replace(b"BOOT", f"b {boot}".encode()))
    os.utime(verdict, (time.time() - 5, time.time() - 5))
    before = len(journal(sh.ex))
    done, python = sh.run()
    assert done.returncode == 0 and done.stdout == (sh.ex.work / "good.sh").read_bytes() and done.stderr == b"", \
        done.stderr
    assert not (sh.ex.work / "pwned").exists() and not Path("pwned").exists()
    assert python != direct
    if direct:
        assert len(journal(sh.ex)) == before  # no journal line it could not write right


def test_the_shell_part_runs_nothing_for_other_subcommands(sh):
    done, python = sh.run("--version")
    assert done.returncode == 0 and python




def test_a_direct_run_gets_the_callers_variables_even_those_named_like_the_shell_parts(sh):
    """The shell part's own variables (``_ac_*``) never reach a command it runs directly: a caller's
    exported variable of the same name keeps the caller's value."""
    names = ["me", "py", "_ac_me", "_ac_env", "_ac_run", "_ac_at", "_ac_h", "_ac_l", "_ac_src"]
    sh.env.update({name: f"caller's {name}" for name in names})
    printenv = ("exec", "--mode", "use", "--scope", "read", "--", "printenv", *names)
    sh.direct(*printenv)
    done, python = sh.run(*printenv)
    assert not python
    assert done.stdout.decode() == "".join(f"caller's {name}\n" for name in names), done.stderr


def test_a_symlink_planted_as_the_tools_verdict_folder_is_never_written_or_swept_through(sh, tmp_path):
    """The verdicts of a tool live in ``exec-direct/TOOL/``: a symbolic link planted in that folder's
    place (to a directory of the user's, with a file older than any verdict lives) is never written
    through and never swept, and the command still runs right (the last session's rule for the
    store's sidecars, here for the direct verdicts: no test planted one)."""
    user = tmp_path / "users-files"
    user.mkdir()
    old = user / "old-notes.txt"
    old.write_text("mine\n")
    back = time.time() - 3 * 86400
    os.utime(old, (back, back))
    folder = Path(sh.env["XDG_CACHE_HOME"]) / "actioncache" / "exec-direct" / "cat"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(user)
    good = (sh.ex.work / "good.sh").read_bytes()
    for _ in range(5):  # a judged miss, then cheap runs that would name and write the verdict
        done, python = sh.run()
        assert done.stdout == good and done.returncode == 0, done.stderr
        assert python  # no verdict was written, so Python ran every one
        sh.settle()
    assert folder.is_symlink() and sorted(p.name for p in user.iterdir()) == ["old-notes.txt"]
    assert old.read_text() == "mine\n"


def test_a_cheap_command_run_with_summary_runs_from_the_shell_part_and_says_so(sh):
    """The README's loop recipe puts --summary on every command: an outside tester saw each cheap
    run through it cost a Python start-up (+63 ms) where the shell part's took +4 ms. The verdict
    carries the summary line, which the shell prints as the hit path does."""
    args = ("exec", "--mode", "use", "--scope", "read", "--summary", "--", "cat", "good.sh")
    good = (sh.ex.work / "good.sh").read_bytes()
    sh.direct(*args)
    done, python = sh.run(*args)
    assert not python and done.returncode == 0 and done.stdout == good
    assert done.stderr == b"actioncache exec: cat: cheap (runs faster fresh than a hit: not cached); hits 0, " \
                          b"misses 0, time saved 0.00s\n"
    plain, python = sh.run()  # the same command without --summary is another invocation: its own verdict
    assert plain.stdout == good and plain.stderr == b"" and python


def test_output_captured_in_one_file_runs_from_the_shell_part(sh, tmp_path):
    # `cmd >log 2>&1`, as a loop keeps a step's output: the shell part cannot tell it from `>log 2>log`
    # (two opens of the file), so it left every such run to Python, ~9x a direct run in an outside
    # tester's loop. Python leaves the verdict only for one open file description; running directly is
    # right however the output is wired, so the shell part takes one file for stdout and stderr.
    log = tmp_path / "log"
    good = (sh.ex.work / "good.sh").read_bytes()

    def captured(shared: bool) -> bool:
        with open(log, "wb") as out:
            if shared:
                done, python = sh.run(stdout=out, stderr=out)
            else:
                with open(log, "r+b") as err:
                    done, python = sh.run(stdout=out, stderr=err)
        assert done.returncode == 0 and log.read_bytes() == good, log.read_bytes()
        return python

    for _ in range(4):
        started = captured(shared=True)
        sh.settle()
    assert not started  # the verdict was left, and the shell part ran it
    assert not captured(shared=False)  # `>log 2>log`: that verdict found, the command run directly, right


@pytest.mark.parametrize("why", ["non_cacheable", "scope_not_enabled"])
def test_a_command_never_cached_runs_from_the_shell_part(sh, why):
    # `git push` listed in non_cacheable_tools ran through a Python start-up every iteration (60-90 ms
    # against 5-25 ms direct in an outside tester's loop): the hit path becomes it, and now leaves the
    # shell part the same verdict a cheap command gets. The config and the variables keep it honest.
    args = ("exec", "--mode", "use", "--scope", "lint", "--", "cat", "good.sh")
    env: dict[str, str] = {}
    if why == "non_cacheable":
        (sh.ex.work / "actioncache.toml").write_text('non_cacheable_tools = ["cat"]\n')
        sh.settle(sh.ex.work / "actioncache.toml")
        time.sleep(2.1)  # a config changed (ctime) within 2 s is read again by every run, never from its memo
        env["CACHE_SCOPE"] = "verify,read,lint"
    good = (sh.ex.work / "good.sh").read_bytes()
    sh.direct(*args, extra_env=env)
    done, python = sh.run(*args, extra_env=env)
    assert not python and done.stdout == good and done.returncode == 0
    records = [r for r in journal(sh.ex) if r.get("sh")]
    assert records and records[-1]["outcome"] == "fresh" and records[-1]["uncacheable"]
    # what made it never cached changes: Python decides again, and caches it
    if why == "non_cacheable":
        (sh.ex.work / "actioncache.toml").write_text("\n")
    else:
        env["CACHE_SCOPE"] = "verify,read,lint"
    done, python = sh.run(*args, extra_env=env)
    assert python and done.stdout == good
