"""YAML_REFERENCE.md matches the code: keys, filters, actions and every action's parameters."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from actioncache.agents import load_agent
from actioncache.agents.actions.cache import WRAP_OPTIONS
from actioncache.agents.loader import NODE_KEYS, TOP_LEVEL_KEYS
from actioncache.agents.settings import CACHE_KEYS, LTM_BACKENDS
from actioncache.agents.templating import FILTERS

REFERENCE = (Path(__file__).resolve().parents[2] / "YAML_REFERENCE.md").read_text(encoding="utf-8")
OWN_NAMESPACES = ("cache", "ratelimit", "storage", "ltm", "file", "command", "http", "llm")


def section(title: str) -> str:
    start = REFERENCE.index(title)
    end = REFERENCE.find("\n#", start + len(title))
    return REFERENCE[start:] if end < 0 else REFERENCE[start:end]


def first_column_names(text: str) -> set[str]:
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([a-z_0-9]+)(?:\(|`)", line.split("|")[1]))
    return names


def test_top_level_and_node_keys_are_documented():
    assert first_column_names(section("## Top-level keys")) == set(TOP_LEVEL_KEYS)
    assert first_column_names(section("## Node keys")) == set(NODE_KEYS)


def test_filters_and_settings_are_documented():
    assert first_column_names(section("### Filters")) == set(FILTERS)
    assert first_column_names(section("### `settings.cache`")) == set(CACHE_KEYS)
    table = section("### `settings.ltm`")
    documented = {b for line in table.splitlines() if line.startswith("| `")
                  for b in re.findall(r"`([a-z-]+)`", line.split("|")[1])}
    assert documented == set(LTM_BACKENDS)


def test_every_builtin_action_and_parameter_is_documented():
    agent = load_agent("nodes:\n  - {name: a, run: 'return {}'}\n", store="memory://")
    own = [name for name in agent.registry if name.split(".")[0] in OWN_NAMESPACES]
    documented = re.findall(r"^### ([a-z]+\.[a-z_]+)$", REFERENCE, re.MULTILINE)
    assert set(own) <= set(documented)
    for name in own:
        params = set(inspect.signature(agent.registry[name]).parameters) - {"state", "options"}
        if name == "cache.wrap":
            params |= set(WRAP_OPTIONS)
        assert first_column_names(section(f"### {name}\n")) == params, name
    agent.close()
