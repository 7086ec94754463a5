"""Untrusted agents: a store is judged on what it actually opens (issue 27, item 2).

The old check read the text after ``://`` as a path; the store opened something else
(``sqlite://localhost/ABS/PATH`` opened /ABS/PATH: an untrusted agent read and planted entries in
the user's own cache). Now both use the store's own URL reading (``stores.registry.store_targets``).

The property test spells store URLs every way the parsers accept (``localhost``, extra slashes,
``%2f``/``%2F``, ``%2e``, ``..``, a symlink inside the root pointing out) and checks the files,
not the verdict: after loading and running the agent, nothing outside the root was created or
changed, and every database file SQLite connected to is under the root.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Cache
from actioncache.agents import load_agent
from actioncache.agents.errors import AgentDefinitionError

AGENT = """\
settings:
  ltm: {{url: '{url}'}}
nodes:
  - name: s
    uses: ltm.store
    with: {{key: planted, value: forged}}
"""


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _layout(base: Path) -> tuple[Path, Path]:
    root, outside = base / "agent", base / "outside"
    (root / "inner").mkdir(parents=True)
    outside.mkdir()
    user = Cache(f"sqlite:///{outside}/victim.db")  # the user's own cache, beside the agent's directory
    user.wrap("user.f", lambda: "real", {})
    user.close()
    for leftover in outside.glob("victim.db-*"):
        leftover.unlink()
    (root / "link").symlink_to(outside, target_is_directory=True)
    return root, outside


def _encode(path: str, how: str) -> str:
    if how == "plain":
        return path
    if how == "slashes":
        return path.replace("/", "%2f")
    if how == "SLASHES":
        return path.replace("/", "%2F")
    return path.replace(".", "%2e")


SCHEMES = ["sqlite", "libsql+file", "duckdb"]
TARGETS = ["a.db", "inner/../a.db", "link/victim.db", "inner/../../outside/victim.db", "OUTSIDE/victim.db",
           "inner/../link/victim.db"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scheme=st.sampled_from(SCHEMES), target=st.sampled_from(TARGETS),
       host=st.sampled_from(["", "localhost"]), extra=st.sampled_from(["", "/", "//"]),
       how=st.sampled_from(["plain", "slashes", "SLASHES", "dots"]))
def test_nothing_outside_the_root_is_opened_whatever_the_url_spelling(monkeypatch, scheme, target, host, extra, how):
    if scheme == "libsql+file":
        pytest.importorskip("libsql")
    if scheme == "duckdb":
        pytest.importorskip("duckdb")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root, outside = _layout(base)
        before = _snapshot(outside)
        path = str(outside / target.split("/", 1)[1]) if target.startswith("OUTSIDE/") else f"{root}/{target}"
        head, rest = path[:1], path[1:]  # the leading '/' stays one: it separates the host
        url = f"{scheme}://{host}{extra}{head}{_encode(rest, how)}"

        connected: list[str] = []
        real_connect = sqlite3.connect

        def recording_connect(database, *args, **kwargs):
            connected.append(os.path.realpath(str(database)))
            return real_connect(database, *args, **kwargs)

        monkeypatch.setattr(sqlite3, "connect", recording_connect)
        (root / "agent.yaml").write_text(AGENT.format(url=url), encoding="utf-8")
        inside = target in ("a.db", "inner/../a.db") and how != "dots"
        try:
            agent = load_agent(root / "agent.yaml", trusted=False)
        except AgentDefinitionError as exc:
            assert "untrusted mode refused" in str(exc), str(exc)
            assert not inside, f"{url} names a file under the root and was refused: {exc}"
        else:
            try:
                agent.invoke({})
            finally:
                agent.close()
        monkeypatch.undo()
        assert _snapshot(outside) == before, f"{url} created or changed files outside the root"
        real_root = os.path.realpath(root)
        outside_opened = [p for p in connected if not p.startswith(real_root + os.sep) and p != ":memory:"
                          and "actioncache-untrusted" not in p]
        assert not outside_opened, f"{url} made SQLite open {outside_opened}"


@pytest.mark.parametrize("scheme", ["sqlite", "duckdb", "libsql+file"])
def test_a_localhost_url_to_the_users_cache_is_refused(tmp_path, scheme):
    pytest.importorskip({"sqlite": "sqlite3", "duckdb": "duckdb", "libsql+file": "libsql"}[scheme])
    root, outside = _layout(tmp_path)
    (root / "agent.yaml").write_text(AGENT.format(url=f"{scheme}://localhost{outside}/victim.db"), encoding="utf-8")
    with pytest.raises(AgentDefinitionError, match=r"untrusted mode refused.*outside.*rule 'files'"):
        load_agent(root / "agent.yaml", trusted=False)


@pytest.mark.parametrize("url, rule", [
    ("firestore://project/collection", "stores"),
    ("blob-sqlite+s3://bucket/cache.db", "stores"),
    ("redis+cluster://evil.example:7000,127.0.0.1:7001/?prefix=x", "hosts"),
    # Every host written is allowed, but a cluster follows its nodes' redirects and a Sentinel hands
    # out the master's address at run time: addresses no check of the URL can judge.
    ("redis+cluster://127.0.0.1:7000,127.0.0.1:7001/?prefix=x", "stores"),
    ("redis+sentinel://127.0.0.1:26379/mymaster/0", "stores"),
    ("valkey+sentinel://127.0.0.1:26379/mymaster/0", "stores"),
    ("postgresql://u@127.0.0.1/db?sslkey=/etc/ssl/private/key.pem", "files"),
    ("postgresql://u@127.0.0.1/db?service=mine", "stores"),
])
def test_stores_that_cannot_say_or_reach_further_are_refused(tmp_path, url, rule):
    root = tmp_path / "agent"
    root.mkdir()
    (root / "agent.yaml").write_text(textwrap.dedent(AGENT.format(url=url)), encoding="utf-8")
    with pytest.raises(AgentDefinitionError, match=rf"untrusted mode refused.*rule '{rule}'"):
        load_agent(root / "agent.yaml", trusted=False, allow_hosts=["127.0.0.1"])


@pytest.mark.parametrize("url, rule, names", [
    ("postgresql:///db?host=/some/path", "files", "store file of '/some/path'"),
    ("postgresql://?host=/some/path&dbname=db", "files", "store file of '/some/path'"),
    ("postgresql:///db?host=/some/path,127.0.0.1", "files", "store file of '/some/path'"),
    ("postgresql:///db?service=mine", "stores", "service="),
    ("postgresql:///db", "stores", "no host"),
])
def test_a_postgres_url_without_a_host_is_judged_by_the_untrusted_rules(tmp_path, url, rule, names):
    """No host in the URL's authority: the host libpq would use (a socket directory in ?host=, a
    service file, $PGHOST) is judged by the untrusted rules, with their wording, not refused
    with libpq's ("invalid connection option") for a URL it could not read."""
    pytest.importorskip("psycopg")
    root = tmp_path / "agent"
    root.mkdir()
    (root / "agent.yaml").write_text(textwrap.dedent(AGENT.format(url=url)), encoding="utf-8")
    with pytest.raises(AgentDefinitionError, match=rf"untrusted mode refused.*rule '{rule}'") as caught:
        load_agent(root / "agent.yaml", trusted=False, allow_hosts=["127.0.0.1"])
    assert names in str(caught.value) and "invalid" not in str(caught.value), str(caught.value)
