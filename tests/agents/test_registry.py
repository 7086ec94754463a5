"""The action registry: dual naming (AC-22), imports, built-in modules, unknown-action errors."""

from __future__ import annotations

import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.agents import ActionRegistry, AgentDefinitionError, UnknownActionError, load_agent
from actioncache.agents.registry import alias_of

BUILTINS = ["cache.wrap", "cache.get", "cache.invalidate", "cache.cleanup", "cache.stats", "storage.hash",
            "ltm.store", "ltm.retrieve", "ltm.delete", "ltm.search", "file.read", "file.write",
            "command.run", "http.request", "llm.call"]


def echo(state, **kwargs):
    return {"got": kwargs}


def test_every_builtin_is_registered_under_both_names(agent_from):
    agent = agent_from("""
        nodes:
          - {name: a, run: "return {}"}
    """)
    for name in BUILTINS:
        assert name in agent.registry
        ns, _, rest = name.partition(".")
        alias = f"actions.{ns}_{rest}"
        assert agent.registry[alias] is agent.registry[name]
        assert agent.registry.canonical(alias) == name


def test_registering_the_alias_makes_the_dotted_name():
    registry = ActionRegistry()
    registry["actions.my_thing"] = echo
    assert registry["my.thing"] is echo
    assert registry.canonical("actions.my_thing") == "my.thing"
    del registry["actions.my_thing"]
    assert "my.thing" not in registry and "actions.my_thing" not in registry


@given(st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True), st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True))
def test_both_spellings_resolve_to_one_canonical_name(ns, name):
    registry = ActionRegistry()
    registry[f"{ns}.{name}"] = echo
    assert registry.resolve(alias_of(f"{ns}.{name}"))[0] == f"{ns}.{name}"
    assert registry.resolve(f"{ns}.{name}")[1] is echo


def test_a_name_without_namespace_is_refused():
    with pytest.raises(AgentDefinitionError, match="no namespace"):
        ActionRegistry()["extract"] = echo


def test_dual_names_in_yaml_run_the_same_action_and_share_cache_entries(agent_from):
    calls = []

    def count(state, x):
        calls.append(x)
        return {"x": x}

    agent = agent_from("""
        nodes:
          - name: dotted
            uses: cache.wrap
            with: {action: demo.count, args: {x: 1}}
            output: first
          - name: alias
            uses: actions.cache_wrap
            with: {action: actions.demo_count, args: {x: 1}}
            output: second
    """, actions={"demo.count": count})
    state = agent.invoke()
    assert calls == [1]
    assert state["first"]["_cache_key"] == state["second"]["_cache_key"] == state["second"]["_cache_key"]
    assert state["first"]["_cache_key"].startswith("cache:agent:demo.count:")
    assert state["second"]["_cache_hit"] is True


def test_imports_a_module_by_path_relative_to_the_yaml_file(tmp_path, write_agent, sqlite_url):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mine.py").write_text(
        "def register_actions(registry, engine):\n"
        "    registry['shout'] = lambda state, text: {'text': text.upper(), 'ltm': engine.settings.get('ltm')}\n"
        "    registry['other.whisper'] = lambda state, text: {'text': text.lower()}\n"
    )
    path = write_agent("""
        imports:
          - {path: lib/mine.py, namespace: loud}
        nodes:
          - {name: a, uses: loud.shout, with: {text: "{{ state.t }}"}, output: a}
          - {name: b, uses: actions.loud_other_whisper, with: {text: "{{ state.t }}"}, output: b}
    """)
    with load_agent(str(path), store=sqlite_url) as agent:
        state = agent.invoke({"t": "Hi"})
    assert state["a"] == {"text": "HI", "ltm": None}
    assert state["b"] == {"text": "hi"}


def test_imports_a_package_by_name(tmp_path, monkeypatch, agent_from):
    pkg = tmp_path / "site" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "def register_actions(registry, engine):\n"
        "    registry['pkg.ping'] = lambda state: {'pong': engine.store is engine.cache.store}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    agent = agent_from("""
        imports: [mypkg]
        nodes:
          - {name: a, uses: pkg.ping}
    """)
    assert agent.invoke()["pong"] is True


@pytest.mark.parametrize("entry, message", [
    ("{path: ./missing.py}", "no such file"),
    ("{package: no_such_package_xyz}", "cannot import package 'no_such_package_xyz'"),
    ("{path: ./x.py, namespce: a}", "unknown key 'namespce' (did you mean 'namespace'?)"),
])
def test_bad_imports_are_clear(agent_from, entry, message):
    with pytest.raises(AgentDefinitionError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        agent_from(f"""
            imports: [{entry}]
            nodes:
              - {{name: a, run: "return {{}}"}}
        """)


def test_an_import_without_register_actions_is_refused(tmp_path, agent_from):
    (tmp_path / "plain.py").write_text("X = 1\n")
    with pytest.raises(AgentDefinitionError, match="has no register_actions"):
        agent_from("""
            imports: [./plain.py]
            nodes:
              - {name: a, run: "return {}"}
        """)


def test_unknown_action_names_the_node_and_suggests(agent_from):
    with pytest.raises(UnknownActionError) as info:
        agent_from("""
            nodes:
              - {name: fetch, uses: cache.wrapp, with: {action: file.read}}
        """)
    assert str(info.value).startswith("node 'fetch': unknown action 'cache.wrapp' (did you mean 'cache.wrap'")
    assert info.value.exit_code == 2


def test_unknown_wrapped_action_is_caught_at_load(agent_from):
    with pytest.raises(UnknownActionError, match=r"node 'x': unknown action 'file.raed' \(did you mean 'file.read'"):
        agent_from("""
            nodes:
              - {name: x, uses: cache.wrap, with: {action: file.raed, args: {}}}
        """)


def test_builtin_face_modules_missing_are_skipped_but_broken_ones_raise(tmp_path, monkeypatch):
    (tmp_path / "broken_face_mod.py").write_text("raise RuntimeError('bug in the face module')\n")
    (tmp_path / "good_face_mod.py").write_text(
        "def register_actions(registry, engine):\n    registry['face.hello'] = lambda state: {'hi': engine.name}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    engine = types.SimpleNamespace(name="e")
    registry = ActionRegistry()
    registry.load_builtins(engine, ("actioncache.agents.actions", "actioncache.no_such_face.actions", "good_face_mod"))
    assert registry["face.hello"]({}) == {"hi": "e"}
    assert "cache.wrap" in registry
    with pytest.raises(RuntimeError, match="bug in the face module"):
        ActionRegistry().load_builtins(engine, ("actioncache.agents.actions", "broken_face_mod"))


def test_installed_packages_add_actions_through_entry_points(tmp_path, src_env):
    """A package declaring an ``actioncache.actions`` entry point gives every agent its actions
    without an ``imports:`` line (a real dist-info on sys.path, read by importlib.metadata)."""
    import subprocess
    import sys

    (tmp_path / "plugin_actions.py").write_text(
        "def register_actions(registry, engine):\n"
        "    registry['plugin.ping'] = lambda state, text='': {'pong': text.upper()}\n")
    info = tmp_path / "plugin_actions-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-actions\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[actioncache.actions]\nplugin = plugin_actions\n")
    (tmp_path / "agent.yaml").write_text(
        "name: p\nnodes:\n  - {name: a, uses: plugin.ping, with: {text: hi}, output: a}\n")
    env = dict(src_env)
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    code = ("import sys; from actioncache.agents import load_agent\n"
            f"with load_agent({str(tmp_path / 'agent.yaml')!r}, store='memory://') as agent:\n"
            "    print(agent.invoke({})['a'])")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'pong': 'HI'}"
