"""A command line that helps: a mistyped option or command is named with the closest one, and a
command whose store cannot be reached says so in one line and exits non-zero."""

from __future__ import annotations

import json

import pytest

from actioncache.cli import main


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("argv, said", [
    (["invalidate", "--acton", "extract"], "unknown option --acton; did you mean --action?"),
    (["invalidate", "--acton=extract"], "unknown option --acton; did you mean --action?"),
    (["stats", "--jsn"], "unknown option --jsn; did you mean --json?"),
    (["cleanup", "--limt", "3"], "unknown option --limt; did you mean --limit?"),
    (["stat"], "unknown command 'stat'; did you mean 'stats'?"),
    (["exce", "--", "ls"], "unknown command 'exce'; did you mean 'exec'?"),
    (["invaldate", "--key", "k"], "unknown command 'invaldate'; did you mean 'invalidate'?"),
    (["run", "--inptu", "{}", "agent.yaml"], "unknown option --inptu; did you mean --input?"),
    (["trust", "--lst"], "unknown option --lst"),
])
def test_a_mistyped_option_or_command_names_the_closest_one(capsys, argv, said):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and said in err, err
    assert len([line for line in err.splitlines() if "error" in line]) == 1


def test_an_abbreviated_option_is_not_silently_taken_for_another(capsys, tmp_path):
    code, _, err = _run(capsys, "invalidate", "--act", "extract", "--store", f"sqlite:///{tmp_path}/c.db")
    assert code == 2 and "--act" in err


def test_a_real_usage_error_is_still_reported_as_it_is(capsys):
    code, _, err = _run(capsys, "invalidate")
    assert code == 2 and "one of the arguments --key --pattern --action --metadata is required" in err


@pytest.fixture(params=["refused", "hung"])
def unreachable_redis(request):
    """A port nobody listens on, or one that accepts and never answers (a hung server)."""
    if request.param == "refused":
        yield "redis://127.0.0.1:1/0"
        return
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield f"redis://127.0.0.1:{server.getsockname()[1]}/0?socket_timeout=0.5&socket_connect_timeout=0.5"
    finally:
        server.close()


@pytest.mark.parametrize("as_json", [False, True])
def test_stats_of_a_store_that_cannot_be_reached_fails_in_one_line(capsys, as_json, unreachable_redis):
    argv = ["stats", "--store", unreachable_redis] + (["--json"] if as_json else [])
    code, out, err = _run(capsys, *argv)
    assert code == 1
    if as_json:
        report = json.loads(out)
        assert report["success"] is False and report["error"] and "hits" not in report, report  # no invented zeros
    else:
        assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("error: cannot read the store"), err


def test_commands_that_change_nothing_write_nothing(capsys, tmp_path):
    """invalidate/cleanup that delete nothing leave an empty store empty (a mistyped --store must
    not gain a counters key)."""
    import sqlite3

    url = f"sqlite:///{tmp_path}/empty.db"
    from actioncache import Cache

    empty = Cache(url)
    assert empty.store.count() == 0  # opens it: an empty store
    empty.close()
    for argv in (["invalidate", "--key", "no-such-key"], ["invalidate", "--action", "none"], ["cleanup"]):
        code, _, err = _run(capsys, *argv, "--store", url)
        assert code == 0, err
    with sqlite3.connect(tmp_path / "empty.db") as conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert all(conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] == 0 for t in tables), tables
