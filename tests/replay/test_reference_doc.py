"""YAML_REFERENCE.md documents every plan.* action and exactly its parameters."""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path

from actioncache import open_store
from actioncache.replay.actions import register_actions

REFERENCE = (Path(__file__).resolve().parents[2] / "YAML_REFERENCE.md").read_text(encoding="utf-8")


def documented_parameters(action: str) -> set[str]:
    start = REFERENCE.index(f"### {action}\n")
    end = REFERENCE.find("\n#", start + 4)
    names: set[str] = set()
    for line in REFERENCE[start:end].splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return names


def test_every_plan_action_and_parameter_is_documented():
    registry: dict = {}
    register_actions(registry, types.SimpleNamespace(store=open_store("memory://"), settings={}, cache=None))
    names = [n for n in registry if n.startswith("plan.")]
    assert sorted(names) == ["plan.record", "plan.report", "plan.retrieve"]
    for name in names:
        assert documented_parameters(name) == set(inspect.signature(registry[name]).parameters) - {"state"}, name
