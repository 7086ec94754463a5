"""Each store writes its own URL from named fields (``url_from_fields``, reached through
``stores.registry.url_from_fields``; what ``settings.ltm: {backend: ...}`` uses), and its
``from_url`` reads back the same fields: fields -> URL -> the store's own view of them.

Opening a store never contacts its server, so the round trips need none."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import services
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache.errors import StoreURLError
from actioncache.stores import open_store
from actioncache.stores.registry import field_backends, registered_stores, url_from_fields

# File names with the characters a URL gives meaning to (? # % @ : space ;) and non-ASCII.
NAMES = st.text(alphabet=string.ascii_letters + string.digits + " ?#%@:;,=+&é中-_.", min_size=1, max_size=20) \
    .filter(lambda n: n not in (".", "..") and not n.startswith(":memory:"))
# Credentials with every character a URL's user part must escape.
SECRETS = st.text(alphabet=string.ascii_letters + string.digits + "@:/?#%[] !$&'()*+,;=é", min_size=1, max_size=16)
HOSTS = st.sampled_from(["127.0.0.1", "db.example.com", "localhost", "::1", "[::1]"])
PORTS = st.integers(1, 65535)
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _host(host: str) -> str:
    return host.strip("[]")


@PROPERTY
@given(name=NAMES)
def test_sqlite_path_round_trips(tmp_path, name):
    url = url_from_fields("sqlite", {"path": name}, base_dir=tmp_path)
    store = open_store(url)
    assert Path(store.path) == (tmp_path / name).resolve()
    assert open_store(store.url).path == store.path  # the store's own URL names the same file


@pytest.mark.parametrize("backend, driver, extra", [("duckdb", "duckdb", "duckdb"), ("turso", "libsql", "turso"),
                                                    ("libsql", "libsql", "turso")])
def test_file_backends_round_trip(backend, driver, extra, tmp_path):
    services.require_module(driver, extra)

    @PROPERTY
    @given(name=NAMES)
    def check(name):
        store = open_store(url_from_fields(backend, {"path": name}, base_dir=tmp_path))
        assert Path(store.path) == (tmp_path / name).resolve()

    check()


@PROPERTY
@given(host=HOSTS, port=PORTS, db=st.integers(0, 15), user=st.none() | SECRETS, password=st.none() | SECRETS,
       tls=st.booleans())
def test_redis_fields_round_trip(host, port, db, user, password, tls):
    services.require_module("redis", "redis")
    url = url_from_fields("rediss" if tls else "redis",
                          {"host": host, "port": port, "db": db, "user": user, "password": password})
    assert url.startswith("rediss://" if tls else "redis://")
    from redis.connection import parse_url  # what the store hands its URL to

    open_store(url).close()
    kwargs = parse_url(url)
    assert (_host(kwargs["host"]), kwargs["port"], kwargs["db"]) == (_host(host), port, db)
    assert kwargs.get("username") == (user or None)
    assert kwargs.get("password") == (password or None)


@PROPERTY
@given(host=HOSTS, port=PORTS, database=NAMES, user=st.none() | SECRETS, password=st.none() | SECRETS)
def test_postgres_fields_round_trip(host, port, database, user, password):
    services.require_module("psycopg", "postgres")
    from psycopg.conninfo import conninfo_to_dict

    store = open_store(url_from_fields("postgres", {"host": host, "port": str(port), "database": database,
                                                    "user": user, "password": password}))
    parsed = conninfo_to_dict(store.conninfo)
    assert (_host(parsed["host"]), int(parsed["port"]), parsed["dbname"]) == (_host(host), port, database)
    assert (parsed.get("user") or None, parsed.get("password") or None) == (user or None, password or None)


@PROPERTY
@given(project=st.from_regex(r"[a-z][a-z0-9-]{4,20}", fullmatch=True), collection=NAMES.filter(lambda c: "/" not in c))
def test_firestore_fields_round_trip(project, collection):
    services.require_module("google.cloud.firestore", "firestore")
    store = open_store(url_from_fields("firestore", {"project": project, "collection": collection}))
    assert (store.project, store.collection) == (project, collection)
    again = open_store(store.url)  # the shown URL, pasted into --store, opens the same store
    assert (again.project, again.collection) == (project, collection)


def test_firestore_shows_the_escaped_url_and_refuses_a_slash_in_the_project():
    services.require_module("google.cloud.firestore", "firestore")
    store = open_store(url_from_fields("firestore", {"project": "my-project", "collection": "c?d"}))
    assert store.url == "firestore://my-project/c%3Fd" and repr(store) == "FirestoreStore('firestore://my-project/c%3Fd')"
    with pytest.raises(StoreURLError, match=r"Firestore project id 'p/q' is not valid \(a project id has no '/'\)"):
        open_store(url_from_fields("firestore", {"project": "p/q", "collection": "c"}))


@PROPERTY
@given(name=NAMES)
def test_blob_sqlite_uri_round_trips(tmp_path, name):
    """The uri's location is taken literally: '#', '?', '%', spaces and non-ASCII stay in the file name."""
    url = url_from_fields("blob-sqlite", {"uri": f"file://{tmp_path}/{name}"})
    store = open_store(url)
    try:
        assert store.remote.path == tmp_path / name
        assert open_store(store.url).remote.path == store.remote.path  # the shown URL names the same file
    finally:
        store.close()
    assert url_from_fields("blob-sqlite", {"uri": "s3://bucket/a b?x=1#y.db"}) == \
        "blob-sqlite+s3://bucket/a%20b%3Fx%3D1%23y.db"


def test_blob_sqlite_and_memory_fields(tmp_path):
    store = open_store(url_from_fields("blob-sqlite", {"uri": f"file://{tmp_path}/blob/c.db"}))
    assert type(store).__name__ == "BlobSQLiteStore" and str(tmp_path) in store.url
    assert url_from_fields("memory", {}) == "memory://"


def test_turso_url_with_token_reaches_the_store():
    services.require_module("libsql", "turso")
    url = url_from_fields("libsql", {"url": "libsql://db-org.turso.io", "auth_token": "t&k=n"})
    assert open_store(url).auth_token == "t&k=n"


# backend -> (the driver its store module imports, the extra that installs it)
DRIVERS = {"duckdb": ("duckdb", "duckdb"), "turso": ("libsql", "turso"), "libsql": ("libsql", "turso"),
           "libsql+file": ("libsql", "turso"), "redis": ("redis", "redis"), "rediss": ("redis", "redis"),
           "postgres": ("psycopg", "postgres"), "postgresql": ("psycopg", "postgres")}


def test_every_listed_backend_writes_its_url(tmp_path):
    """Every backend name ``settings.ltm`` accepts has a writer that gives a URL of a known scheme."""
    minimal = {"firestore": {"project": "p"}, "blob-sqlite": {"uri": "memory://b/c.db"}, "turso": {"path": "t.db"},
               "libsql": {"path": "t.db"}}
    for module, extra in {DRIVERS[b] for b in field_backends() if b in DRIVERS}:
        services.require_module(module, extra)
    for backend in field_backends():
        url = url_from_fields(backend, minimal.get(backend, {}), base_dir=tmp_path)
        scheme = url.partition("://")[0].split("+")[0]
        assert scheme in registered_stores() or scheme == "blob-sqlite", (backend, url)


@pytest.mark.parametrize("backend, fields, message", [
    ("sqlit", {}, r"unknown backend 'sqlit' \(did you mean 'sqlite'.*; known backends: .*give url:"),
    ("sqlite", {"pth": "x"}, r"the sqlite store has no field 'pth' \(did you mean 'path'\?\); it takes path"),
    ("memory", {"path": "x"}, r"the memory store has no field 'path'; it takes no fields"),
    ("redis", {"port": "http"}, r"redis store's port: must be a whole number >= 1 and <= 65535, not 'http'"),
    ("redis", {"db": -1}, r"redis store's db: must be a whole number >= 0"),
    ("redis", {"host": "a/b"}, r"host: must be a host name or address"),
    ("redis", {"port": "\u00b2"}, r"port: must be a whole number >= 1 and <= 65535, not '\u00b2'"),
    ("postgres", {"host": "db.example:5432"}, r"host: must be .*; give the port as port:, not in host"),
    ("redis", {"host": "[::1]:6379"}, r"host: must be a host name or address"),
    ("postgres", {"port": 70000}, r"port: must be a whole number >= 1 and <= 65535"),
    ("firestore", {}, r"the firestore store needs project: \(your Google Cloud project id"),
    ("blob-sqlite", {"uri": "bucket/c.db"}, r"uri: must name an object store.*s3://bucket/path.db"),
    ("turso", {}, r"needs url: libsql://... \(a server\) or path: ./local.db"),
    ("turso", {"path": "a.db", "auth_token": "x"}, r"auth_token: is for a server; give url: libsql://HOST"),
    ("libsql+file", {"path": "a.db"}, None),
])
def test_bad_fields_name_the_problem_and_the_fix(backend, fields, message, tmp_path):
    if backend in DRIVERS:
        services.require_module(*DRIVERS[backend])
    if message is None:  # a scheme that is not a listed backend still writes its URL when its store can
        assert url_from_fields(backend, fields, base_dir=tmp_path).startswith("libsql+file:///")
        return
    with pytest.raises(StoreURLError, match=message):
        url_from_fields(backend, fields, base_dir=tmp_path)


def test_a_third_party_store_writes_its_own_url_from_fields(tmp_path, src_env):
    """``register_store(..., fields=True)`` lists a scheme as a backend; its class's url_from_fields
    writes the URL (a subprocess: the registry is process-wide)."""
    import subprocess
    import sys

    (tmp_path / "tagged_store.py").write_text(
        "from actioncache.stores.memory import MemoryStore\n"
        "class TaggedStore(MemoryStore):\n"
        "    @classmethod\n"
        "    def url_from_fields(cls, fields, *, scheme='tagged', base_dir=None):\n"
        "        return f\"tagged://{fields['name']}\"\n")
    env = dict(src_env)
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    code = ("from actioncache import register_store\n"
            "from actioncache.stores.registry import field_backends, url_from_fields\n"
            "register_store('tagged', 'tagged_store:TaggedStore.from_url', fields=True)\n"
            "print('tagged' in field_backends(), url_from_fields('tagged', {'name': 'box'}))\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "tagged://box"]
