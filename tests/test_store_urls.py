"""The wiring from a user's words to a store, for every backend: store URLs (``open_store``, the
CLI's ``--store``), the YAML ``settings.ltm`` forms, the errors for bad URLs, and the message a
missing optional dependency gives.

Opening a store never contacts its server (connections open on first use), so the URL checks
need no server; the end-to-end checks use the backends that run in-process (DuckDB, libSQL)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import services

from actioncache import Cache
from actioncache.agents.settings import ltm_store_url
from actioncache.cli import main as cli_main
from actioncache.errors import StoreError, StoreURLError
from actioncache.stores import open_store, registered_schemes

SECRET = "pw-" + "x1y2z3" * 3

# scheme -> (a URL of that scheme, the store class it opens, the module its driver lives in, extra)
SAMPLES: dict[str, tuple[str, str, str | None, str | None]] = {
    "memory": ("memory://", "MemoryStore", None, None),
    "sqlite": ("sqlite:///{tmp}/c.db", "SQLiteStore", None, None),
    "duckdb": ("duckdb:///{tmp}/c.duckdb", "DuckDBStore", "duckdb", "duckdb"),
    "libsql+file": ("libsql+file:///{tmp}/t.db", "TursoStore", "libsql", "turso"),
    "libsql": ("libsql://db-org.turso.io?authToken=" + SECRET, "TursoStore", "libsql", "turso"),
    "turso": ("turso://db-org.turso.io", "TursoStore", "libsql", "turso"),
    "redis": ("redis://127.0.0.1:6379/3", "RedisStore", "redis", "redis"),
    "rediss": ("rediss://:" + SECRET + "@127.0.0.1:6380/0", "RedisStore", "redis", "redis"),
    "valkey": ("valkey://127.0.0.1:6379/3", "RedisStore", "redis", "redis"),
    "valkeys": ("valkeys://:" + SECRET + "@127.0.0.1:6380/0", "RedisStore", "redis", "redis"),
    "redis+cluster": ("redis+cluster://127.0.0.1:7000,127.0.0.1:7001", "RedisStore", "redis", "redis"),
    "rediss+cluster": ("rediss+cluster://:" + SECRET + "@127.0.0.1:7000,127.0.0.1:7001/0", "RedisStore", "redis", "redis"),
    "valkey+cluster": ("valkey+cluster://127.0.0.1:7000", "RedisStore", "redis", "redis"),
    "valkeys+cluster": ("valkeys+cluster://u:" + SECRET + "@127.0.0.1:7000", "RedisStore", "redis", "redis"),
    "redis+sentinel": ("redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster/2", "RedisStore", "redis", "redis"),
    "rediss+sentinel": ("rediss+sentinel://:" + SECRET + "@127.0.0.1:26379/mymaster", "RedisStore", "redis", "redis"),
    "valkey+sentinel": ("valkey+sentinel://127.0.0.1:26379/mymaster/0", "RedisStore", "redis", "redis"),
    "valkeys+sentinel": ("valkeys+sentinel://127.0.0.1:26379/mymaster/0", "RedisStore", "redis", "redis"),
    "postgresql": ("postgresql://u:" + SECRET + "@127.0.0.1:5432/db", "PostgresStore", "psycopg", "postgres"),
    "postgres": ("postgres://u@127.0.0.1:5432/db", "PostgresStore", "psycopg", "postgres"),
    "firestore": ("firestore://my-project/cache", "FirestoreStore", "google.cloud.firestore", "firestore"),
    "blob-sqlite": ("blob-sqlite+s3://bucket/dir/c.db?endpoint_url=http://127.0.0.1:1", "BlobSQLiteStore", "s3fs", "s3"),
}
# Object stores behind blob-sqlite, each with its own extra.
BLOB_SAMPLES = {
    "s3": ("blob-sqlite+s3://bucket/c.db?endpoint_url=http://127.0.0.1:1", "s3fs", "s3"),
    "gs": ("blob-sqlite+gs://bucket/c.db?token=anon", "gcsfs", "gcs"),
    "az": ("blob-sqlite+az://container/c.db?account_name=acct&anon=true", "adlfs", "azure"),
    "file": ("blob-sqlite+file:///{tmp}/blob/c.db", None, None),
    "memory": ("blob-sqlite+memory://bucket/c.db", None, None),
}


def _url(template: str, tmp_path: Path) -> str:
    return template.replace("{tmp}", str(tmp_path).lstrip("/"))


def test_every_registered_scheme_has_a_sample_here():
    """A new scheme must be added to this wiring check (and to docs/backends.md)."""
    assert set(registered_schemes()) <= set(SAMPLES)


@pytest.mark.parametrize("scheme", sorted(SAMPLES))
def test_every_scheme_opens_its_store_without_contacting_a_server(scheme, tmp_path):
    template, class_name, driver, extra = SAMPLES[scheme]
    if driver:
        services.require_module(driver, extra)
    store = open_store(_url(template, tmp_path))
    try:
        assert type(store).__name__ == class_name
        # What stats, the CLI and logs show of the store never carries its password or token.
        assert SECRET not in Cache(store=store).url and SECRET not in repr(Cache(store=store))
    finally:
        if class_name != "BlobSQLiteStore":  # closing a blob store would sync to the (absent) server
            store.close()


@pytest.mark.parametrize("protocol", sorted(BLOB_SAMPLES))
def test_every_blob_protocol_opens(protocol, tmp_path):
    template, driver, extra = BLOB_SAMPLES[protocol]
    if driver:
        services.require_module(driver, extra)
    assert type(open_store(_url(template, tmp_path))).__name__ == "BlobSQLiteStore"


@pytest.mark.parametrize(
    "url, fix",
    [
        ("cache.db", "sqlite:///abs/path.db"),
        ("mysql://h/db", "known schemes: "),
        ("sqlite://host/c.db", "sqlite:///abs/path.db"),
        ("duckdb://host/c.duckdb", "duckdb:///abs/path.duckdb"),
        ("duckdb:///tmp/c.duckdb?readonly=1", "read_only=true"),
        ("libsql+file://host/t.db", "libsql+file:///abs/path.db"),
        ("libsql://", "libsql://HOST"),
        ("libsql://h.turso.io?sync_url=libsql://h.turso.io", "libsql+file:///abs/replica.db?sync_url="),
        ("firestore://my-project", "firestore://project/collection"),
        ("postgresql://h/db?table=no%20spaces", "?table=actioncache"),
        ("blob-sqlite://bucket/c.db", "blob-sqlite+s3://bucket/cache.db"),
        ("blob-sqlite+ftp://h/c.db", "use one of"),
        # an option a store would ignore, or a value it would read wrongly, fails at open rather
        # than leaving a cache that quietly lives elsewhere or fails on every call
        ("sqlite:///tmp/c.db?bogus=1", "options: timeout="),
        ("sqlite:///tmp/c.db?timeout=-1", "seconds >= 0"),
        ("sqlite:///tmp/c.db?timeout=abc", "seconds >= 0"),
        ("memory://named?ttl=5", "options: max_size_bytes="),
        ("redis://127.0.0.1:6379/abc", "redis://host:port/0"),
        ("redis://127.0.0.1:6379/0?bogus=1", "redis-py connection option"),
        ("postgresql://postgres@127.0.0.1:5432/test?bogus=1", "libpq connection parameter"),
        # a password with an unencoded '@' or '#' would be read another way by the driver
        ("postgresql://postgres:pa@ss@127.0.0.1:5439/test", "percent-encode '@' in the password as %40"),
        ("postgresql://postgres:hun@2ter#frag@127.0.0.1:5439/test", "percent-encode '#' in the password as %23"),
        ("redis://:hun@2ter@127.0.0.1:6390/13", "percent-encode '@' in the password as %40"),
        ("redis://:hun#2ter@127.0.0.1:6390/13", "percent-encode '#' in the password as %23"),
    ],
)
def test_bad_urls_give_an_error_that_names_the_fix(url, fix):
    if url.startswith(("postgresql:", "redis:")):
        services.require_module(*(("psycopg", "postgres") if url.startswith("postgresql:") else ("redis", "redis")))
    with pytest.raises(StoreURLError) as info:
        open_store(url)
    assert fix in str(info.value)
    assert "ss@" not in str(info.value) and "2ter" not in str(info.value)  # no piece of the password shown


def test_a_four_slash_sqlite_url_names_the_file_with_one_slash(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path}/c.db")  # sqlite:////abs/c.db
    assert cache.url == f"sqlite://{tmp_path}/c.db" and repr(cache) == f"Cache('sqlite://{tmp_path}/c.db')"
    (tmp_path / "dir.db").mkdir()
    failed = Cache(f"sqlite:///{tmp_path}/dir.db").wrap("a", lambda: 1, {})
    assert failed["result"] == 1 and failed["_cache_error"].startswith(f"cache lookup failed: SQLite store {tmp_path}/")


@pytest.mark.parametrize("scheme, driver", [("sqlite", None), ("duckdb", ("duckdb", "duckdb")),
                                            ("libsql+file", ("libsql", "turso"))])
def test_a_store_error_hint_says_only_what_applies(scheme, driver, tmp_path):
    """A path that is a directory: the message names the driver's error and no text pointing
    'above' (there is nothing above a one-line message) or at a server a local file does not have."""
    if driver:
        services.require_module(*driver)
    (tmp_path / "dir.db").mkdir()
    error = Cache(f"{scheme}://{tmp_path}/dir.db").wrap("a", lambda: 1, {})["_cache_error"]
    assert "open failed" in error or "cannot open" in error
    assert "above" not in error and "server" not in error and "token" not in error


@pytest.mark.parametrize(
    "scheme",
    ["duckdb", "libsql+file", "libsql", "turso", "redis", "rediss", "postgresql", "postgres", "firestore"],
)
def test_a_missing_extra_names_the_pip_command(scheme, tmp_path, monkeypatch):
    """With the driver not importable, opening (or first use) says which extra to install."""
    template, class_name, driver, extra = SAMPLES[scheme]
    _block_import(monkeypatch, driver)
    with pytest.raises(StoreError) as info:
        open_store(_url(template, tmp_path)).get("k")
    assert f"pip install 'actioncache[{extra}]'" in str(info.value)


@pytest.mark.parametrize("protocol", ["s3", "gs", "az"])
def test_a_missing_object_store_package_names_its_extra(protocol, tmp_path, monkeypatch):
    template, driver, extra = BLOB_SAMPLES[protocol]
    _block_import(monkeypatch, driver)
    with pytest.raises(StoreError) as info:
        open_store(_url(template, tmp_path)).get("k")
    assert f"pip install 'actioncache[{extra}]'" in str(info.value)


def _block_import(monkeypatch: pytest.MonkeyPatch, driver: str) -> None:
    """Make ``import driver`` fail as if the extra were not installed, and forget modules that
    already imported it so they import again. (A stand-in for an environment without the
    package: uninstalling it here would break the other tests.)"""
    top = driver.split(".")[0]
    for name in list(sys.modules):
        if name == driver or name.startswith(driver + ".") or (top != "google" and name.startswith(top + ".")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, driver, None)
    parent_name, _, child = driver.rpartition(".")
    if parent_name in sys.modules:  # `from google.cloud import firestore` reads the package attribute first
        monkeypatch.delattr(sys.modules[parent_name], child, raising=False)
    for name in [n for n in sys.modules if n.startswith("actioncache.stores.") and not n.endswith((".base", "._sql"))]:
        if name not in ("actioncache.stores.sqlite", "actioncache.stores.memory"):
            monkeypatch.delitem(sys.modules, name)


# --- YAML settings.ltm -> store ---------------------------------------------------------------

LTM_FORMS = [
    ({"backend": "sqlite", "path": "./c.db"}, "SQLiteStore", None),
    ({"backend": "memory"}, "MemoryStore", None),
    ({"backend": "duckdb", "path": "./c.duckdb"}, "DuckDBStore", "duckdb"),
    ({"backend": "turso", "path": "./t.db"}, "TursoStore", "libsql"),
    ({"backend": "libsql", "path": "./t.db"}, "TursoStore", "libsql"),
    ({"backend": "turso", "url": "libsql://db-org.turso.io", "auth_token": SECRET}, "TursoStore", "libsql"),
    ({"backend": "firestore", "project": "p", "collection": "c"}, "FirestoreStore", "google.cloud.firestore"),
    ({"backend": "redis", "host": "127.0.0.1", "port": 6379, "db": 2}, "RedisStore", "redis"),
    ({"backend": "postgres", "host": "127.0.0.1", "database": "db", "user": "u", "password": SECRET},
     "PostgresStore", "psycopg"),
    ({"backend": "blob-sqlite", "uri": "memory://bucket/c.db"}, "BlobSQLiteStore", None),
    ({"url": "duckdb:///{tmp}/u.duckdb"}, "DuckDBStore", "duckdb"),
    ({"url": "libsql+file:///{tmp}/r.db?sync_url=libsql://db-org.turso.io"}, "TursoStore", "libsql"),
]


@pytest.mark.parametrize("ltm, class_name, driver", LTM_FORMS, ids=lambda v: v.get("backend", "url") if isinstance(v, dict) else None)
def test_every_settings_ltm_form_opens_its_store(ltm, class_name, driver, tmp_path):
    if driver:
        services.require_module(driver, driver)
    ltm = {k: _url(v, tmp_path) if isinstance(v, str) else v for k, v in ltm.items()}
    store = open_store(ltm_store_url(ltm, tmp_path))
    assert type(store).__name__ == class_name
    if "path" in ltm:  # relative paths are relative to the YAML file's directory
        assert str(tmp_path) in str(getattr(store, "path", ""))
    if "auth_token" in ltm:
        assert store.auth_token == SECRET, "settings.ltm auth_token must reach the store"


AGENT = """\
name: wiring_check
settings:
  ltm: {ltm}
nodes:
  - name: read
    uses: cache.wrap
    with:
      action: file.read
      key_strategy: args
      args: {{path: "{{{{ state.path }}}}"}}
    output: r
"""


@pytest.mark.parametrize(
    "ltm, url",
    [
        ("{backend: duckdb, path: ./agent.duckdb}", "duckdb:///{tmp}/agent.duckdb"),
        ("{backend: turso, path: ./agent.db}", "libsql+file:///{tmp}/agent.db"),
        ('{url: "${WIRING_URL:-duckdb:///{tmp}/env.duckdb}"}', "duckdb:///{tmp}/env.duckdb"),
    ],
)
def test_yaml_agent_and_cli_share_one_store(ltm, url, tmp_path, capsys, monkeypatch):
    """`actioncache run` caches through settings.ltm; `actioncache get/invalidate --store URL` sees the same entry."""
    services.require_module("duckdb" if "duckdb" in url else "libsql", "duckdb" if "duckdb" in url else "turso")
    monkeypatch.delenv("WIRING_URL", raising=False)
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENT.format(ltm=_url(ltm, tmp_path)))
    (tmp_path / "in.txt").write_text("hello")
    state = json.dumps({"path": str(tmp_path / "in.txt")})
    hits = []
    for _ in range(2):
        assert cli_main(["run", str(agent), "--input", state]) == 0
        hits.append(json.loads(capsys.readouterr().out)["r"]["_cache_hit"])
    assert hits == [False, True]
    url = _url(url, tmp_path)
    assert cli_main(["invalidate", "--action", "file.read", "--store", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deleted_count"] == 1
    assert Cache(url).stats()["entries"] == 0


def test_settings_ltm_of_a_missing_extra_names_it_unless_overridden(tmp_path, monkeypatch):
    """A store writes its URL from settings.ltm's fields in its own module, which needs its driver:
    without it the agent names the extra to install; with --store / store= overriding settings.ltm
    that store is never opened, so its driver is not needed."""
    from actioncache.agents import AgentDefinitionError, load_agent

    agent = tmp_path / "agent.yaml"
    agent.write_text("settings: {ltm: {backend: duckdb, path: ./c.duckdb}}\nnodes:\n  - {name: s, uses: cache.stats}\n")
    _block_import(monkeypatch, "duckdb")
    with pytest.raises(AgentDefinitionError, match=r"cannot open the cache store: .*pip install 'actioncache\[duckdb\]'"):
        load_agent(agent)
    with load_agent(agent, store="memory://") as overridden:
        assert overridden.store.url == "memory://"
