"""Control flow: order, goto (name and conditional rules), legacy edges, output/merge, state_schema, stream."""

from __future__ import annotations

import re

import pytest

from actioncache.agents import AgentDefinitionError, AgentInputError, NodeError


def test_nodes_run_in_order_and_results_merge_or_land_at_output(agent_from):
    agent = agent_from("""
        nodes:
          - {name: one, run: "return {'a': 1}"}
          - {name: two, run: "return {'b': state['a'] + 1}", output: two_out}
          - {name: three, run: "return None"}
    """)
    assert agent.invoke({"z": 0}) == {"z": 0, "a": 1, "two_out": {"b": 2}}


def test_goto_by_name_skips_nodes(agent_from):
    agent = agent_from("""
        nodes:
          - {name: start, run: "return {'path': ['start']}", goto: last}
          - {name: skipped, run: "return {'path': state['path'] + ['skipped']}"}
          - {name: last, run: "return {'path': state['path'] + ['last']}"}
    """)
    assert agent.invoke()["path"] == ["start", "last"]


def test_goto_rules_loop_until_a_condition_holds(agent_from):
    agent = agent_from("""
        nodes:
          - name: count
            run: "return {'n': state.get('n', 0) + 1}"
            goto:
              - {if: "state.n < 3", to: count}
              - {if: "result.n == 3", to: done}
          - {name: never, run: "return {'never': True}"}
          - {name: done, run: "return {'done': True}"}
    """)
    state = agent.invoke()
    assert state == {"n": 3, "done": True}


def test_goto_rule_without_if_is_the_fallback_and_end_stops(agent_from):
    agent = agent_from("""
        nodes:
          - name: check
            run: "return {}"
            goto:
              - {if: "state.flag", to: agree}
              - {to: refuse}
          - {name: agree, run: "return {'answer': 'yes'}", goto: __end__}
          - {name: refuse, run: "return {'answer': 'no'}"}
    """)
    assert agent.invoke({"flag": True})["answer"] == "yes"
    assert agent.invoke({"flag": False})["answer"] == "no"


def test_no_matching_goto_rule_falls_through_to_the_next_node(agent_from):
    agent = agent_from("""
        nodes:
          - {name: a, run: "return {}", goto: [{if: "false", to: c}]}
          - {name: b, run: "return {'b': True}"}
          - {name: c, run: "return {'c': True}"}
    """)
    assert agent.invoke() == {"b": True, "c": True}


def test_legacy_edges_with_start_end_and_when(agent_from):
    agent = agent_from("""
        nodes:
          - {name: classify, run: "return {'kind': 'big' if state['x'] > 10 else 'small'}"}
          - {name: small, run: "return {'out': 'small'}"}
          - {name: big, run: "return {'out': 'big'}"}
          - {name: unreached, run: "return {'out': 'unreached'}"}
        edges:
          - {from: __start__, to: classify}
          - {from: classify, to: big, when: "state.kind == 'big'"}
          - {from: classify, to: small, when: "{{ state.kind == 'small' }}"}
          - {from: small, to: __end__}
          - {from: big, to: __end__}
    """)
    assert agent.invoke({"x": 50})["out"] == "big"
    assert agent.invoke({"x": 1})["out"] == "small"


def test_edges_can_start_anywhere(agent_from):
    agent = agent_from("""
        nodes:
          - {name: a, run: "return {'a': True}"}
          - {name: b, run: "return {'b': True}"}
        edges:
          - {from: __start__, to: b}
          - {from: b, to: __end__}
    """)
    assert agent.invoke() == {"b": True}


@pytest.mark.parametrize("yaml_text, message", [
    ("nodes:\n  - {name: a, run: 'return {}', goto: bb}\n  - {name: b, run: 'return {}'}\n",
     "node 'a': goto: no node named 'bb' (did you mean 'b'"),
    ("nodes:\n  - {name: a, run: 'return {}'}\nedges:\n  - {from: __start__, to: aa}\n",
     "edges: from '__start__' to: no node named 'aa' (did you mean 'a'"),
    ("nodes:\n  - {name: a, run: 'return {}'}\n  - {name: a, run: 'return {}'}\n", "node 'a': the name is used twice"),
    ("nodes: []\n", "nodes: must be a non-empty list"),
    ("nodes:\n  - {name: yes, run: 'return {}'}\n", "name: True is not text"),
    ("nodes:\n  - {name: a}\n", "node 'a': give exactly one of uses:"),
    ("nodes:\n  - {name: a, run: 'return {}', with: {x: 1}}\n", "with: only goes with uses:"),
    ("nodes:\n  - {name: a, run: 'return {}', goto: [{iff: x, to: a}]}\n", "each goto rule is"),
])
def test_bad_structure_is_reported_at_load(agent_from, yaml_text, message):
    with pytest.raises(AgentDefinitionError) as info:
        agent_from(yaml_text)
    assert message in str(info.value)


def test_an_endless_loop_is_stopped(agent_from):
    agent = agent_from("""
        nodes:
          - {name: spin, run: "return {}", goto: spin}
    """, max_steps=50)
    with pytest.raises(NodeError, match="more than 50 steps"):
        agent.invoke()


def test_state_schema_checks_types_required_fields_and_defaults(agent_from):
    agent = agent_from("""
        state_schema:
          path: {type: str, required: true}
          retries: {type: int, default: 2}
          ratio: float
          verbose: bool
        nodes:
          - {name: a, run: "return {}"}
    """)
    assert agent.invoke({"path": "x", "ratio": 1}) == {"path": "x", "ratio": 1, "retries": 2}
    with pytest.raises(AgentInputError, match="input field 'path' \\(str\\) is required"):
        agent.invoke({})
    with pytest.raises(AgentInputError, match="'retries' must be int, got bool"):
        agent.invoke({"path": "x", "retries": True})
    with pytest.raises(AgentInputError, match="'verbose' must be bool, got str"):
        agent.invoke({"path": "x", "verbose": "yes"})
    with pytest.raises(AgentInputError, match="must be a JSON object"):
        agent.invoke(["not", "a", "dict"])


def test_unknown_schema_type_suggests(agent_from):
    with pytest.raises(AgentDefinitionError, match="unknown type 'strng' \\(did you mean 'string' or 'str'"):
        agent_from("state_schema: {a: strng}\nnodes:\n  - {name: a, run: 'return {}'}\n")


def test_stream_yields_one_event_per_node(agent_from):
    agent = agent_from("""
        nodes:
          - {name: a, run: "return {'a': 1}"}
          - {name: b, run: "return {'b': 2}"}
    """)
    events = list(agent.stream({}))
    assert [e["node"] for e in events] == ["a", "b"]
    assert events[0]["result"] == {"a": 1} and events[0]["state"] == {"a": 1}
    assert events[1]["state"] == {"a": 1, "b": 2}


def test_a_non_dict_result_needs_output(agent_from):
    agent = agent_from("""
        nodes:
          - {name: listy, run: "return [1, 2]"}
    """)
    with pytest.raises(NodeError, match="node 'listy': run: block returned a list; return a dict"):
        agent.invoke()
    kept = agent_from("""
        nodes:
          - {name: listy, run: "return [1, 2]", output: items}
    """)
    assert kept.invoke() == {"items": [1, 2]}


def test_run_blocks_see_variables_and_the_registry(agent_from):
    agent = agent_from("""
        variables: {greeting: hello}
        nodes:
          - name: a
            run: |
              found = actions["actions.storage_hash"](state, path=state["p"])
              return {"msg": variables["greeting"], "size": found["size_bytes"]}
    """)
    import tempfile
    with tempfile.NamedTemporaryFile("w", delete=False) as handle:
        handle.write("12345")
    assert agent.invoke({"p": handle.name}) == {"p": handle.name, "msg": "hello", "size": 5}


@pytest.mark.parametrize("yaml_text, message", [
    ("nodes:\n  - {name: a, run: 'return {}', goto: [{if: 'state.x ==', to: a}]}\n",
     "node 'a': goto[0].if: condition syntax error"),
    ("nodes:\n  - {name: a, run: 'return {}'}\nedges:\n  - {from: a, to: __end__, when: 'state.(('}\n",
     "edges: from 'a' to '__end__' when: condition syntax error"),
])
def test_condition_syntax_errors_are_reported_at_load(agent_from, yaml_text, message):
    with pytest.raises(AgentDefinitionError, match=re.escape(message)):
        agent_from(yaml_text)
