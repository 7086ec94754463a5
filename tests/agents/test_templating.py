"""Templates: typed single expressions, the cache filters, the sandbox, and missing-variable errors."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.agents import AgentDefinitionError, SandboxError, TemplateVariableError
from actioncache.agents.templating import Renderer
from actioncache.keys import sha256_hex

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(json_values)
def test_a_single_expression_keeps_its_python_type(value):
    rendered = Renderer().render("{{ state.v }}", {"state": {"v": value}}, "n", "with.v")
    assert rendered == value and type(rendered) is type(value)


def test_mixed_text_renders_to_a_string():
    renderer = Renderer()
    context = {"state": {"n": 3, "name": "x"}}
    assert renderer.render("{{ state.n }} items", context, "n", "w") == "3 items"
    assert renderer.render("{{ state.n }}{{ state.n }}", context, "n", "w") == "33"
    assert renderer.render({"a": ["{{ state.n + 1 }}", "k-{{ state.name }}"], "b": 7}, context, "n", "w") == \
        {"a": [4, "k-x"], "b": 7}


def test_typed_values_reach_the_action(agent_from):
    seen = {}

    def capture(state, **kwargs):
        seen.update(kwargs)
        return {}

    agent = agent_from("""
        nodes:
          - name: a
            uses: t.capture
            with:
              days: "{{ state.days }}"
              payload: "{{ state.payload }}"
              flag: "{{ state.days > 1 }}"
              label: "days={{ state.days }}"
              nothing: "{{ none }}"
    """, actions={"t.capture": capture})
    agent.invoke({"days": 3, "payload": {"k": [1, 2]}})
    assert seen == {"days": 3, "payload": {"k": [1, 2]}, "flag": True, "label": "days=3", "nothing": None}


def test_filters_sha256_storage_hash_json_fromjson(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_bytes(b"content")
    renderer = Renderer()
    context = {"state": {"q": "Hello", "path": str(doc), "obj": {"b": 1, "a": [2]}, "text": '{"x": 5}'}}
    assert renderer.render("{{ state.q | lower | sha256 }}", context, "n", "w") == hashlib.sha256(b"hello").hexdigest()
    assert renderer.render("{{ state.obj | sha256 }}", context, "n", "w") == sha256_hex({"a": [2], "b": 1})
    assert renderer.render("{{ state.path | storage_hash }}", context, "n", "w") == hashlib.sha256(b"content").hexdigest()
    assert renderer.render("{{ state.path | storage_hash('md5') }}", context, "n", "w") == hashlib.md5(b"content").hexdigest()
    assert renderer.render("{{ state.obj | json }}", context, "n", "w") == '{"a": [2], "b": 1}'
    assert renderer.render("{{ (state.text | fromjson).x }}", context, "n", "w") == 5


def test_storage_hash_filter_failure_names_node_and_file(agent_from):
    agent = agent_from("""
        nodes:
          - {name: keyed, uses: cache.get, with: {key: "{{ state.p | storage_hash }}"}}
    """)
    with pytest.raises(Exception, match="node 'keyed': with.key: storage_hash filter: cannot hash '/no/such/file'"):
        agent.invoke({"p": "/no/such/file"})


@pytest.mark.parametrize("expression", [
    "{{ state.__class__ }}",
    "{{ state.__class__.__mro__[1].__subclasses__() }}",
    "{{ ''.__class__.__mro__ }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ state.items.__self__ }}",
    "prefix {{ state.__class__.__name__ }}",
    "{{ (state.f).__globals__ }}",
])
def test_sandbox_escapes_are_refused(agent_from, expression):
    agent = agent_from(f"""
        nodes:
          - name: evil
            uses: cache.get
            with:
              key: "{expression}"
    """)
    with pytest.raises(SandboxError) as info:
        agent.invoke({"f": test_sandbox_escapes_are_refused})
    assert "node 'evil': with.key: refused by the template sandbox" in str(info.value)
    assert info.value.exit_code == 4


def test_sandbox_refuses_unsafe_calls():
    with pytest.raises(SandboxError, match="refused by the template sandbox"):
        Renderer().render("{{ state.f.__call__.__self__.__code__ }}", {"state": {"f": len}}, "n", "w")


def test_missing_variable_names_the_node_and_variable(agent_from):
    agent = agent_from("""
        nodes:
          - name: extract_with_cache
            uses: cache.wrap
            with:
              action: file.read
              args: {path: "{{ state.file_path }}"}
    """)
    with pytest.raises(TemplateVariableError) as info:
        agent.invoke({"filepath": "typo"})
    message = str(info.value)
    assert message.startswith("node 'extract_with_cache': with.args.path: missing template variable: no field 'file_path'")
    assert "{{ state.file_path }}" in message


def test_missing_variable_in_mixed_text_and_conditions(agent_from):
    agent = agent_from("""
        nodes:
          - {name: a, uses: cache.get, with: {key: "k-{{ state.nope }}"}}
    """)
    with pytest.raises(TemplateVariableError, match="node 'a': with.key: missing template variable: no field 'nope'"):
        agent.invoke()
    agent = agent_from("""
        nodes:
          - {name: b, run: "return {}", goto: [{if: "state.missing > 1", to: b}]}
    """)
    with pytest.raises(TemplateVariableError, match="node 'b': goto\\[0\\].if: missing template variable"):
        agent.invoke()


def test_default_filter_covers_a_missing_field(agent_from):
    agent = agent_from("""
        nodes:
          - {name: a, uses: cache.get, with: {key: "{{ state.k | default('fallback') }}"}, output: r}
    """)
    assert agent.invoke()["r"]["found"] is False


def test_template_syntax_errors_are_reported_at_load(agent_from):
    with pytest.raises(AgentDefinitionError, match="node 'a': with: template syntax error"):
        agent_from("""
            nodes:
              - {name: a, uses: cache.get, with: {key: "{{ state.k | }}"}}
        """)
