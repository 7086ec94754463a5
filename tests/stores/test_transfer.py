"""Export, import and copy between stores: every backend as the source, a different backend as the
target; keys, values, metadata and expiry arrive unchanged, and the cache serves them as hits."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time

import pytest

from actioncache import Cache
from actioncache.stores.base import Entry, open_store
from actioncache.transfer import copy_entries, export_entries, import_entries

from .backends import BACKENDS


def _fill(store) -> dict[str, Entry]:
    now = time.time()
    entries = {
        "cache:extract:1": Entry("cache:extract:1", b"\x00\xff bytes", {"_cache_action": "extract", "n": 1}, now, now + 3600),
        "cache:extract:2": Entry("cache:extract:2", "é ☃".encode(), {"_cache_action": "extract", "nested": {"a": [1]}},
                                 now, None),
        "cache:llm:3": Entry("cache:llm:3", b"{}", {"_cache_action": "llm"}, now, now + 7200),
    }
    for e in entries.values():
        store.put(e)
    store.put(Entry("cache:old:4", b"gone", {}, now - 100, now - 10))  # expired: never moved
    return entries


def _assert_same(target, entries: dict[str, Entry]) -> None:
    assert sorted(target.find(pattern="*")) == sorted(entries)
    for key, e in entries.items():
        got = target.get(key)
        assert got is not None, key
        assert bytes(got.value) == e.value and dict(got.metadata) == dict(e.metadata)
        assert got.created_at == pytest.approx(e.created_at, abs=1e-3)
        if e.expires_at is None:
            assert got.expires_at is None
        else:
            assert got.expires_at == pytest.approx(e.expires_at, abs=1e-3)


def _other(backend: str) -> str:
    return "memory" if backend != "memory" else "sqlite"


def test_export_then_import_into_another_backend(store, backend, tmp_path):
    entries = _fill(store)
    dump = io.StringIO()
    result = export_entries(store, dump)
    assert result["success"] is True and result["exported"] == 3
    assert result.get("skipped_expired", 0) in (0, 1)  # 0 where the server drops expired keys itself (Redis)
    target = BACKENDS[_other(backend)](tmp_path / "target")
    try:
        imported = import_entries(target, io.StringIO(dump.getvalue()))
        assert imported == {"success": True, "imported": 3}
        _assert_same(target, entries)
    finally:
        target.close()


def test_copy_to_another_backend_with_a_pattern(store, backend, tmp_path):
    entries = _fill(store)
    target = BACKENDS[_other(backend)](tmp_path / "target")
    try:
        result = copy_entries(store, target, pattern="cache:extract:*")
        assert result["copied"] == 2
        _assert_same(target, {k: v for k, v in entries.items() if k.startswith("cache:extract:")})
    finally:
        target.close()


def test_a_copied_entry_is_a_hit_in_the_new_store(tmp_path):
    source = Cache(f"sqlite:///{tmp_path}/a.db", cleanup_probability=0.0)
    calls = []
    source.wrap("extract", lambda x: calls.append(x) or {"x": x}, {"x": 1})
    target = Cache(f"duckdb:///{tmp_path}/b.duckdb", cleanup_probability=0.0)
    copy_entries(source.store, target.store)
    r = target.wrap("extract", lambda x: calls.append(x) or {"x": x}, {"x": 1})
    assert r["_cache_hit"] is True and r["result"] == {"x": 1} and calls == [1]


@pytest.mark.parametrize("bad, problem", [
    ("not json\n", "line 3: not JSON"),
    ('{"key": "k"}\n', "line 3: no value_b64"),
    ('{"key": "k", "value_b64": "***"}\n', "line 3: value_b64 is not base64"),
    ('{"key": "k", "value_b64": "", "expires_at": "soon"}\n', "line 3: its expires_at is 'soon'"),
    ('{"key": "k", "value_b64": "", "metadata": {"_cache_fresh_until": "1e300"}}\n',
     "line 3: its _cache_fresh_until is '1e300', not a time"),
    ('{"key": "k", "value_b64": "", "metadata": {"_cache_fresh_until": null}}\n', "line 3: its _cache_fresh_until is None"),
    ('{"key": "k", "value_b64": "", "metadata": {"_cache_fresh_until": NaN}}\n', "line 3: its _cache_fresh_until is nan"),
    ('{"key": "k", "value_b64": "", "metadata": {"_cache_fresh_until": [1]}}\n', "line 3: its _cache_fresh_until is [1]"),
    ('{"format": "actioncache-export/9"}\n', "this version reads"),
])
def test_a_bad_dump_line_is_named_and_nothing_after_it_is_imported(bad, problem):
    target = open_store("memory://")
    good = json.dumps({"key": "k0", "value_b64": "", "metadata": {}, "created_at": time.time(), "expires_at": None})
    result = import_entries(target, io.StringIO(HEADER + good + "\n" + bad + good.replace("k0", "k9") + "\n"))
    assert result["success"] is False and problem in result["error"]
    assert target.find(pattern="*") == ["k0"]


HEADER = json.dumps({"format": "actioncache-export/1"}) + "\n"
_ENTRY = json.dumps({"key": "k0", "value_b64": "", "metadata": {}, "created_at": 1.0, "expires_at": None}) + "\n"


@pytest.mark.parametrize("dump, problem", [
    ("", "it is empty (no header line)"),
    ("\n  \n", "it is empty (no header line)"),
    (_ENTRY, "the first line is not its header"),
    ("not json\n" + _ENTRY, "line 1 is not JSON"),
])
def test_a_file_that_does_not_start_with_the_header_is_not_a_dump(dump, problem):
    target = open_store("memory://")
    result = import_entries(target, io.StringIO(dump))
    assert result["success"] is False and result["imported"] == 0
    assert result["error"].startswith("not an actioncache dump: ") and problem in result["error"]
    assert result["error"].endswith("make dumps with `actioncache export`")
    assert target.find(pattern="*") == []


def test_a_dump_with_its_header_after_blank_lines_still_imports():
    target = open_store("memory://")
    assert import_entries(target, io.StringIO("\n" + HEADER + _ENTRY)) == {"success": True, "imported": 1}
    assert target.find(pattern="*") == ["k0"]


def test_cli_export_import_copy(tmp_path, src_env):
    def cli(*args, stdin=None):
        return subprocess.run([sys.executable, "-m", "actioncache", *args], env=src_env, capture_output=True,
                              text=True, timeout=120, input=stdin)

    a, b, c = (f"sqlite:///{tmp_path}/{n}.db" for n in "abc")
    cache = Cache(a, cleanup_probability=0.0)
    for i in range(5):
        cache.wrap("step", lambda i: i * i, {"i": i})
    cache.close()

    exported = cli("export", "--store", a, "--pattern", "cache:step:*")
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert json.loads(lines[0])["format"] == "actioncache-export/1" and len(lines) == 6
    assert "exported 5 entries" in exported.stderr

    imported = cli("import", "-", "--store", b, "--json", stdin=exported.stdout)
    assert imported.returncode == 0 and json.loads(imported.stdout)["imported"] == 5

    copied = cli("copy", "--from", b, "--to", c)
    assert copied.returncode == 0 and "copied 5 entries" in copied.stdout
    again = Cache(c, cleanup_probability=0.0)
    assert again.wrap("step", lambda i: -1, {"i": 3})["result"] == 9

    one_dump = "\n".join(lines[:2]) + "\n"
    single = cli("import", "-", "--store", f"sqlite:///{tmp_path}/d.db", stdin=one_dump)
    assert single.returncode == 0 and single.stdout.strip() == "imported 1 entry"
    single_copy = cli("copy", "--from", f"sqlite:///{tmp_path}/d.db", "--to", f"sqlite:///{tmp_path}/e.db")
    assert single_copy.stdout.strip() == "copied 1 entry"
    for headless in ("", lines[1] + "\n"):
        refused = cli("import", "-", "--store", f"sqlite:///{tmp_path}/f.db", stdin=headless)
        assert refused.returncode == 1 and "not an actioncache dump" in refused.stderr, refused.stderr
        assert "actioncache export" in refused.stderr and "(0 entries imported)" in refused.stderr
    assert Cache(f"sqlite:///{tmp_path}/f.db", cleanup_probability=0.0).store.find(pattern="*") == []

    missing = cli("copy", "--from", f"sqlite:///{tmp_path}/nope.db", "--to", c)
    assert missing.returncode == 1 and "nope.db" in missing.stderr
    bad = cli("import", str(tmp_path / "absent.jsonl"), "--store", c)
    assert bad.returncode == 2 and "cannot read" in bad.stderr
    nowhere = tmp_path / "no such dir" / "out.jsonl"
    unwritable = cli("export", "--store", a, "-o", str(nowhere))
    assert unwritable.returncode == 2 and "Traceback" not in unwritable.stderr
    assert unwritable.stderr.strip() == f"error: cannot write {nowhere}: No such file or directory"


def test_an_entry_the_target_cannot_hold_is_named_and_the_rest_still_move(tmp_path):
    source = open_store(f"sqlite:///{tmp_path}/src.db")
    now = time.time()
    for key in ("a", "b-too-big", "c"):
        source.put(Entry(key, b"x" * (30_000 if key.startswith("b") else 10), {}, now, now + 600))
    target = open_store("memory://?max_size_bytes=20000")
    result = copy_entries(source, target)
    assert result["success"] is False and result["copied"] == 2 and result["failed"] == 1
    assert "'b-too-big'" in result["error"] and "max_size_bytes" in result["error"]
    assert sorted(target.find(pattern="*")) == ["a", "c"]
    dump = io.StringIO()
    export_entries(source, dump)
    again = open_store("memory://?max_size_bytes=20000")
    imported = import_entries(again, io.StringIO(dump.getvalue()))
    assert imported["imported"] == 2 and imported["failed"] == 1 and "entry 2" in imported["error"]
    assert imported["error"].startswith("1 entry could not be stored: ")


def test_cli_json_errors_are_json(tmp_path, src_env):
    out = subprocess.run([sys.executable, "-m", "actioncache", "copy", "--from", f"sqlite:///{tmp_path}/nope.db",
                          "--to", "memory://", "--json"], env=src_env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and json.loads(out.stdout)["success"] is False
