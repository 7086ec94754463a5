"""Odd argument types reach every built-in action as the node's input: each answers the failure
shape (``success: false`` with ``error`` and ``error_type``) instead of raising and stopping the run."""

from __future__ import annotations

import inspect
import itertools
import json

import pytest

from actioncache.agents import load_agent


def one_node(agent_from, uses, with_, **options):
    text = "nodes:\n  - name: step\n    uses: " + uses + "\n    with: " + json.dumps(with_) + "\n    output: r\n"
    return agent_from(text, **options)


ODD = [None, 5, -1, "x", "", [], [1], {}, {"a": 1}, True, 1e308, float("nan"), "a\0b"]  # what YAML can give


def test_every_builtin_action_answers_odd_arguments_in_the_failure_shape(tmp_path, monkeypatch):
    """Each parameter of each built-in action, given each odd value: never raises, always a dict,
    a failure always carries error and error_type."""
    monkeypatch.chdir(tmp_path)
    agent = load_agent("name: fz\nsettings: {ltm: {backend: memory}}\nnodes:\n  - {name: n, run: 'return {}'}\n")
    for name in agent.registry.names():
        fn = agent.registry[name]
        params = [p for p in list(inspect.signature(fn).parameters.values())[1:]
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        required = {p.name: "ok" for p in params if p.default is p.empty}
        for param, value in itertools.product(params, ODD):
            if name in ("command.run", "command.exec_cached") and param.name == "command" and value in ("x",):
                continue  # a real program name: it would run
            kwargs = {**required, param.name: value}
            try:
                result = fn({}, **kwargs)
            except Exception as exc:
                pytest.fail(f"{name}({param.name}={value!r}) raised {type(exc).__name__}: {exc}")
            assert isinstance(result, dict), (name, param.name, value)
            if result.get("success") is False:
                assert isinstance(result.get("error"), str) and result.get("error_type"), (name, param.name, value, result)


@pytest.mark.parametrize("uses, with_", [
    ("file.read", {"path": None}),
    ("file.read", {"path": "a\u0000b"}),
    ("command.run", {"command": ["true"], "cwd": 5}),
    ("command.run", {"command": ["true"], "env": "A=1"}),
    ("command.run", {"command": "echo 'unclosed"}),
    ("command.exec_cached", {"command": "echo 'unclosed"}),
    ("http.request", {"url": 5}),
    ("http.request", {"url": "http://127.0.0.1:1/", "headers": "x"}),
    ("plan.retrieve", {"signature": 5}),
    ("semantic.feedback", {"entry_id": "x", "success": True, "namespace": 5}),
    ("command.exec_cached", {"command": ["true"], "stdin": 5}),
    ("command.exec_cached", {"command": ["true"], "env": None}),
    ("ltm.delete", {"key": [1]}),
    ("ltm.search", {"metadata_filter": "x"}),
    ("cache.invalidate", {"metadata_filter": [1]}),
])
def test_a_bad_argument_is_a_validation_error_not_a_crash(agent_from, uses, with_):
    result = one_node(agent_from, uses, with_).invoke({})["r"]
    assert result["success"] is False and result["error_type"] == "validation_error", result
