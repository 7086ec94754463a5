"""Bounded agents (issue 27, item 4): each attack from the issue, run through the real CLI in a
subprocess. Untrusted templates run under an operation, size and time budget; agent files with
alias bombs or pathological nesting are refused with exit 2 and one clear line, trusted or not.

The subprocess timeout only guards the test run (the old code ran each of these until it was
killed); nothing here asserts how long anything took.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GUARD_S = 120


def run(agent_dir: Path, text: str, *flags: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = agent_dir / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    store = f"sqlite:///{agent_dir}/cache.db"
    return subprocess.run([sys.executable, "-m", "actioncache", "run", str(path), "--store", store, *flags],
                          env=env, capture_output=True, text=True, timeout=GUARD_S, cwd=agent_dir)


def store_node(value: str) -> str:
    return textwrap.dedent(f"""\
        nodes:
          - name: s
            uses: ltm.store
            with: {{key: k, value: "{value}"}}
            output: s
        """)


@pytest.mark.parametrize("template, said", [
    ("{{ 7 ** 1000000000 }}", "bits"),
    ("{{ 'a' * 300000000 }}", "repetition"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "operations"),
    ("{{ 'a'|center(1000000000) }}", "center"),
    ("{{ '{:>999999999}'.format(1) }}", "width"),
    # '~' compiles to a join call, not to an operator the sandbox intercepts: doubling by joins
    ("{% set a='a'*4000000 %}{% set b=a~a %}{% set c=b~b %}{% set d=c~c %}{{ d|length }}", "'~' join"),
    ("{{ ('a'*4000000) ~ ('a'*4000000) }}", "'~' join"),
])
def test_an_untrusted_template_runs_under_a_budget(tmp_path, src_env, template, said):
    done = run(tmp_path, store_node(template), "--untrusted", env=src_env)
    assert done.returncode == 4, done.stderr
    assert "template over its budget" in done.stderr and said in done.stderr, done.stderr
    assert "run the agent trusted" in done.stderr and "Traceback" not in done.stderr


def test_the_budget_leaves_ordinary_untrusted_templates_alone(tmp_path, src_env):
    text = store_node("{% for i in range(1000) %}{{ i * 2 }},{% endfor %}{{ 2 ** 64 }}{{ 'ab' * 3 }}")
    done = run(tmp_path, text, "--untrusted", env=src_env)
    assert done.returncode == 0, done.stderr


LAUGHS = textwrap.dedent("""\
    variables:
      a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
      b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
      d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
      f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
      g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
      h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
      i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
    nodes:
      - name: s
        uses: ltm.store
        with: {key: k, value: *i}
    """)


@pytest.mark.parametrize("flags", [("--untrusted",), ()], ids=["untrusted", "trusted"])
def test_yaml_alias_bombs_are_refused_with_exit_2(tmp_path, src_env, flags):
    done = run(tmp_path, LAUGHS, *flags, env=src_env)
    assert done.returncode == 2, done.stderr
    assert "aliases" in done.stderr and "100,000" in done.stderr and "Traceback" not in done.stderr


def test_yaml_aliases_within_the_budget_still_work(tmp_path, src_env):
    text = "variables:\n  base: &base {x: 1}\n  other: *base\n" + store_node("{{ variables.other.x }}")
    done = run(tmp_path, text, "--untrusted", env=src_env)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("flags", [("--untrusted",), ()], ids=["untrusted", "trusted"])
@pytest.mark.parametrize("shape", ["flow", "block"])
def test_deep_nesting_is_a_clear_error_with_exit_2(tmp_path, src_env, flags, shape):
    depth = 50_000
    if shape == "flow":
        deep = "[" * depth + "]" * depth
        text = f"variables:\n  deep: {deep}\n" + store_node("x")
    else:
        text = "variables:\n  deep:\n" + "".join("  " * i + "- \n" for i in range(2, 3000)) + store_node("x")
    done = run(tmp_path, text, *flags, env=src_env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "nested deeper than 100 levels" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("flags", [("--untrusted",), ()], ids=["untrusted", "trusted"])
def test_deeply_nested_input_is_a_clear_error_with_exit_2(tmp_path, src_env, flags):
    (tmp_path / "input.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    done = run(tmp_path, store_node("x"), *flags, "--input", f"@{tmp_path / 'input.json'}", env=src_env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "nests too deeply" in done.stderr and "Traceback" not in done.stderr
