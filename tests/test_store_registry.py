"""The store registry: one table, no silent clobbering, entry points for third-party stores."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from actioncache import register_store
from actioncache.stores.registry import registered_stores

MODULE = textwrap.dedent('''
    from actioncache.stores.memory import MemoryStore

    class TaggedStore(MemoryStore):
        @classmethod
        def from_url(cls, url, **options):
            store = cls()
            store.url = url
            return store
''')


def run(tmp_path, src_env, body: str) -> str:
    """Run ``body`` in a fresh interpreter (registrations change a process-wide table) with the
    plug-in module importable; returns stdout."""
    (tmp_path / "tagged_store.py").write_text(MODULE)
    env = dict(src_env)
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    code = "from actioncache import Cache, open_store, register_store\n" + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_registered_scheme_opens_and_caches(tmp_path, src_env):
    out = run(tmp_path, src_env, """
        from actioncache.stores import registered_schemes
        from actioncache.stores.registry import registered_stores
        register_store("tagged", "tagged_store:TaggedStore.from_url")
        cache = Cache("tagged://one")
        cache.wrap("x", lambda: 1)
        print(cache.wrap("x", lambda: 1)["_cache_hit"], "tagged" in registered_schemes(),
              registered_stores()["tagged"].target)
    """)
    assert out.split() == ["True", "True", "tagged_store:TaggedStore.from_url"]


def test_registering_a_taken_scheme_needs_clobber(tmp_path, src_env):
    out = run(tmp_path, src_env, """
        from actioncache.stores.registry import registered_stores
        try:
            register_store("sqlite", "tagged_store:TaggedStore.from_url")
        except ValueError as exc:
            print("refused:", "clobber=True" in str(exc))
        print(registered_stores()["sqlite"].target)
        register_store("tagged", "tagged_store:TaggedStore.from_url")
        register_store("tagged", "tagged_store:TaggedStore.from_url")  # the same target again is fine
        register_store("tagged", "actioncache.stores.memory:MemoryStore.from_url", clobber=True)
        print(type(open_store("tagged://x")).__name__)
    """)
    assert out.split() == ["refused:", "True", "actioncache.stores.sqlite:SQLiteStore.from_url", "MemoryStore"]


def test_a_missing_module_names_the_extra_to_install(tmp_path, src_env):
    out = run(tmp_path, src_env, """
        from actioncache.errors import StoreError
        register_store("tagged", "no_such_module_here:Store.from_url", extra="tagged")
        try:
            open_store("tagged://x")
        except StoreError as exc:
            print(exc)
    """)
    assert "pip install 'actioncache[tagged]'" in out


@pytest.mark.parametrize("scheme, target", [("bad://", "m:f"), ("", "m:f"), ("ok", "no-colon")])
def test_bad_registrations_name_the_fix(scheme, target):
    with pytest.raises(ValueError, match="scheme|module:callable"):
        register_store(scheme, target)


def test_the_table_is_read_only():
    with pytest.raises(TypeError):
        registered_stores()["evil"] = None  # type: ignore[index]


def test_entry_points_add_schemes(tmp_path, src_env):
    """A package that declares an ``actioncache.stores`` entry point is found by scheme (a real
    dist-info on sys.path, read by importlib.metadata)."""
    (tmp_path / "tagged_store.py").write_text(MODULE)
    info = tmp_path / "tagged_store-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tagged-store\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[actioncache.stores]\ntagged = tagged_store:TaggedStore.from_url\n")
    env = dict(src_env)
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    code = ("from actioncache import Cache, open_store; from actioncache.stores import registered_schemes;"
            "s = open_store('tagged://t'); print(type(s).__name__, 'tagged' in registered_schemes());"
            "c = Cache('tagged://u'); c.wrap('a', lambda: 1); print(c.wrap('a', lambda: 1)['_cache_hit'])")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["TaggedStore", "True", "True"]


@pytest.mark.parametrize("scheme", ["my_store", "my store", "9lives", "blob-sqlite+mine"])
def test_a_scheme_no_url_can_reach_is_refused_when_registered(scheme):
    with pytest.raises(ValueError, match="scheme"):
        register_store(scheme, "tagged_store:TaggedStore.from_url")


@pytest.mark.parametrize("target", [":x", "mod:", "mod:.x", "a b:c", "mod:x-y"])
def test_a_target_that_is_not_module_colon_callable_is_refused(target):
    with pytest.raises(ValueError, match="module:callable"):
        register_store("tagged", target)


def test_a_broken_registration_names_itself_when_opened(tmp_path, src_env):
    out = run(tmp_path, src_env, """
        from actioncache.errors import StoreError
        register_store("noattr", "tagged_store:Nope.from_url")
        register_store("nomod", "no_such_module_here:Store.from_url")
        for url in ("noattr://x", "nomod://x", "my_store://x"):
            try:
                open_store(url)
            except StoreError as exc:
                print(exc)
    """)
    lines = out.splitlines()
    assert "has no 'Nope.from_url'" in lines[0] and "fix the registration" in lines[0]
    assert "install the package that provides it" in lines[1] and "actioncache[" not in lines[1]
    assert "valid URL scheme" in lines[2] and "'my_store'" in lines[2]


def test_register_store_sees_installed_entry_points_first(tmp_path, src_env):
    """Registering a scheme an installed package already declares is refused, whether or not
    anything looked at the entry points before."""
    info = tmp_path / "tagged_store-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tagged-store\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[actioncache.stores]\ntagged = tagged_store:TaggedStore.from_url\n")
    out = run(tmp_path, src_env, """
        try:
            register_store("tagged", "actioncache.stores.memory:MemoryStore.from_url")
        except ValueError as exc:
            print("refused", "clobber=True" in str(exc))
        print(type(open_store("tagged://x")).__name__)
    """)
    assert out.split() == ["refused", "True", "TaggedStore"]
