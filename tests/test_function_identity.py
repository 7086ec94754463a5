"""Which calls share results: a function's name says so only when it names one function. Lambdas,
closures made by a factory and scripts' ``__main__`` functions need more, or one answers another."""

from __future__ import annotations

import subprocess
import sys

from actioncache import Cache


def test_lambdas_that_do_different_things_never_share_results(cache):
    square = cache.cached(lambda x: x * x)
    negate = cache.cached(lambda x: -x)
    assert square(3) == 9 and negate(3) == -3 and square(3) == 9


def test_closures_from_one_factory_are_told_apart_by_what_they_captured(cache):
    runs = []

    def make_adder(n, label=("a", 1)):
        @cache.cached
        def add(x):
            runs.append((n, x))
            return x + n + len(label)
        return add

    add1, add100, add1_again = make_adder(1), make_adder(100), make_adder(1)
    assert add1(5) == 8 and add100(5) == 107
    assert add1_again(5) == 8 and runs == [(1, 5), (100, 5)]  # the same capture hits
    assert make_adder(1, ("b", 2, 3))(5) == 9  # a captured tuple counts too


def test_a_captured_counter_read_when_decorated_does_not_change_the_key(cache):
    calls = 0

    @cache.cached
    def fetch(x):
        nonlocal calls
        calls += 1
        return x

    assert [fetch(1), fetch(1), fetch(1)] == [1, 1, 1] and calls == 1


def test_an_explicit_name_shares_results_on_purpose(cache):
    first = cache.cached(name="shared")(lambda x: "first")
    second = cache.cached(name="shared")(lambda x: "second")
    assert first(1) == "first" and second(1) == "first"


def test_version_counts_with_a_custom_key_function(cache):
    v1 = cache.cached(name="report", key=lambda x: f"r{x}", version=1)(lambda x: "v1")
    v2 = cache.cached(name="report", key=lambda x: f"r{x}", version=2)(lambda x: "v2")
    assert v1(1) == "v1" and v2(1) == "v2"


SCRIPT = """
import sys
from actioncache import Cache
cache = Cache(sys.argv[1])
@cache.cached
def process(x):
    return {BODY}
print(process(21))
"""


def test_two_scripts_with_one_function_name_do_not_share_results(tmp_path, src_env):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    a = tmp_path / "script_a.py"
    b = tmp_path / "script_b.py"
    a.write_text(SCRIPT.replace("{BODY}", "x * 2"))
    b.write_text(SCRIPT.replace("{BODY}", "x + 1"))

    def run(script):
        return subprocess.run([sys.executable, str(script), url], env=src_env, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert [run(a), run(b), run(a), run(b)] == ["42", "22", "42", "22"]
    stats = Cache(url).stats()
    assert stats["hits"] == 2 and stats["misses"] == 2


HELPERS = """
from actioncache import Cache
import sys
cache = Cache(sys.argv[1])

@cache.cached
def summarize(text):
    return {ANSWER!r} + text
"""

RUNNER = "import sys; sys.path.insert(0, sys.argv[2]); import helpers; print(helpers.summarize('!'))"


def _project(root, name, answer):
    root.mkdir()
    if name is not None:
        (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0"\n')
    (root / "helpers.py").write_text(HELPERS.replace("{ANSWER!r}", repr(answer)))
    return root


def _summarize(root, url, src_env):
    return subprocess.run([sys.executable, "-c", RUNNER, url, str(root)], env=src_env, capture_output=True,
                          text=True, check=True, timeout=120).stdout.strip()


def test_two_projects_with_one_module_and_function_name_never_share(tmp_path, src_env):
    """The finding: helpers.summarize of one project returned another project's cached result."""
    url = f"sqlite:///{tmp_path / 'default.db'}"
    alpha = _project(tmp_path / "alpha", "alpha", "from alpha")
    beta = _project(tmp_path / "beta", "beta", "from beta")
    plain = _project(tmp_path / "plain", None, "from plain")
    assert [_summarize(alpha, url, src_env), _summarize(beta, url, src_env), _summarize(plain, url, src_env)] == \
        ["from alpha!", "from beta!", "from plain!"]


def test_two_checkouts_of_one_named_project_share(tmp_path, src_env):
    url = f"sqlite:///{tmp_path / 'default.db'}"
    first = _project(tmp_path / "checkout1", "gamma", "first run")
    second = _project(tmp_path / "checkout2", "gamma", "second run")
    assert [_summarize(first, url, src_env), _summarize(second, url, src_env)] == ["first run!", "first run!"]


def test_installed_code_is_identified_by_its_distribution_and_version():
    import importlib.metadata

    import yaml

    from actioncache._project import project_of

    assert project_of(yaml.__file__) == f"dist:PyYAML=={importlib.metadata.version('PyYAML')}"
