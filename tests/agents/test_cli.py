"""``actioncache run``: output, options, and every error message with its exit code."""

from __future__ import annotations

import json

import pytest

from actioncache.agents import RunBlocksRefusedError, load_agent
from actioncache.cli import main


def run(capsys, *argv):
    code = main(["run", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


SIMPLE = """
name: simple
nodes:
  - name: greet
    run: |
      print("printed by the block")
      return {"greeting": "hi " + state["who"]}
"""


def test_prints_the_final_state_as_json_and_block_output_on_stderr(capsys, write_agent, sqlite_url):
    code, out, err = run(capsys, write_agent(SIMPLE), "--input", '{"who": "ada"}', "--store", sqlite_url)
    assert code == 0
    assert json.loads(out) == {"who": "ada", "greeting": "hi ada"}
    assert "printed by the block" in err


def test_input_from_a_file_and_stream(capsys, write_agent, tmp_path, sqlite_url):
    (tmp_path / "in.json").write_text('{"who": "bob"}')
    code, out, _ = run(capsys, write_agent(SIMPLE), "--input", f"@{tmp_path / 'in.json'}", "--stream", "--store", sqlite_url)
    assert code == 0
    first_line, rest = out.split("\n", 1)
    assert json.loads(first_line)["node"] == "greet" and json.loads(first_line)["result"] == {"greeting": "hi bob"}
    assert json.loads(rest)["greeting"] == "hi bob"


@pytest.mark.parametrize("given, message", [
    ("not json", "--input is not JSON"),
    ("[1, 2]", "--input must be a JSON object"),
    ("@/no/such/input.json", "cannot read input file '/no/such/input.json'"),
])
def test_a_bad_input_argument_exits_2(capsys, write_agent, given, message):
    """Like every bad argument (exit 3 is left for input that does not fit the state_schema)."""
    code, out, err = run(capsys, write_agent(SIMPLE), "--input", given)
    assert code == 2 and out == "" and message in err


def test_no_run_refuses_run_blocks(capsys, write_agent):
    path = write_agent(SIMPLE)
    code, out, err = run(capsys, path, "--no-run", "--input", '{"who": "x"}')
    assert code == 2 and out == ""
    assert "untrusted mode refused run: blocks in node(s) 'greet'" in err and "rule 'run-blocks'" in err
    with pytest.raises(RunBlocksRefusedError):
        load_agent(path, allow_run=False, store="memory://")


def test_no_run_allows_agents_without_run_blocks(capsys, write_agent, sqlite_url):
    path = write_agent("nodes:\n  - {name: s, uses: cache.stats, output: s}\n")
    code, out, _ = run(capsys, path, "--no-run", "--store", sqlite_url)
    assert code == 0 and json.loads(out)["s"]["success"] is True


def test_yaml_syntax_error_has_line_and_column(capsys, write_agent):
    path = write_agent("name: broken\nnodes:\n  - name: a\n    run: [unclosed\n")
    code, _, err = run(capsys, path)
    assert code == 2
    assert f"{path}:5:1: YAML syntax error" in err


def test_yaml_syntax_error_column_is_reported(capsys, write_agent):
    path = write_agent("nodes:\n  - name: a\n     bad: indentation\n")
    code, _, err = run(capsys, path)
    assert code == 2 and f"{path}:3:9: YAML syntax error" in err


ERROR_CASES = [
    pytest.param("""
        nodes:
          - name: read_doc
            uses: file.read
            with: {path: "{{ state.file_path }}"}
    """, 4, "error: node 'read_doc': with.path: missing template variable: no field 'file_path'", id="missing-variable"),
    pytest.param("""
        nodes:
          - name: compute
            run: |
              x = 1
              y = x / 0
              return {"y": y}
    """, 4, "error: node 'compute': run: block failed at line 2: ZeroDivisionError: division by zero", id="failing-run"),
    pytest.param("nodes:\n  - name: bad\n    run: |\n      x = = 1\n", 2,
                 "node 'bad': run: block has a Python syntax error at line 1", id="run-syntax"),
    pytest.param("nodes:\n  - {name: a, uses: cache.stats, ouput: s}\n", 2,
                 "node 'a': unknown key 'ouput' (did you mean 'output'?)", id="unknown-node-key"),
    pytest.param("setings: {}\nnodes:\n  - {name: a, uses: cache.stats}\n", 2,
                 "unknown top-level key 'setings' (did you mean 'settings'?)", id="unknown-top-level-key"),
    pytest.param("nodes:\n  - {name: fetch, uses: http.requests}\n", 2,
                 "node 'fetch': unknown action 'http.requests' (did you mean 'http.request'", id="unknown-action"),
    pytest.param("settings: {ltm: {backend: sqllite}}\nnodes:\n  - {name: a, uses: cache.stats}\n", 2,
                 "settings.ltm: unknown backend 'sqllite' (did you mean 'sqlite'", id="unknown-backend"),
]


@pytest.mark.parametrize("yaml_text, exit_code, message", ERROR_CASES)
def test_error_messages_and_exit_codes(capsys, write_agent, yaml_text, exit_code, message):
    code, out, err = run(capsys, write_agent(yaml_text), "--store", "memory://", "--input", '{"file": "x"}')
    assert (code, out) == (exit_code, "")
    assert message in err


def test_missing_agent_file(capsys, tmp_path):
    code, _, err = run(capsys, tmp_path / "nope.yaml")
    assert code == 2 and "cannot read agent file" in err


def test_store_option_overrides_settings(capsys, write_agent, tmp_path):
    path = write_agent("""
        settings: {ltm: {backend: sqlite, path: ./from_settings.db}}
        nodes:
          - {name: w, uses: cache.wrap, with: {action: storage.hash, args: {path: "{{ agent_dir }}/agent.yaml"}}}
    """)
    code, _, _ = run(capsys, path, "--store", f"sqlite:///{tmp_path}/from_flag.db")
    assert code == 0 and (tmp_path / "from_flag.db").exists() and not (tmp_path / "from_settings.db").exists()
    code, _, _ = run(capsys, path)
    assert code == 0 and (tmp_path / "from_settings.db").exists()
