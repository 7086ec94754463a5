"""Another deployment environment is another request.

The class: the same command on another target ("restart kafka in production" / "... on the dev
cluster", "restart the web frontend in production" / "... on my laptop"). The target's words were
read by no check: "production" and "dev cluster" are everyday words to WordNet, and the span differs by
more than one swapped word. The ``environment`` rule reads the closed class of environments (where a
target stands, for the words that are also everyday ones). Beside them: short forms of one
environment, the same environment in other words, and the everyday words ("a unit test", "local
businesses", "the production of insulin", "the machine") stay one request. Written for these tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.semantic.guard import GATES, Pair, contrast
from actioncache.semantic.guard.environment import environments
from actioncache.semantic.guard.text import side

OTHER = [
    ("restart kafka in production", "restart kafka on the dev cluster"),
    ("back up redis in production", "back up redis on the dev cluster"),
    ("restart the web frontend in production", "restart the web frontend on my laptop"),
    ("wipe the cache on my laptop", "wipe the cache on the prod servers"),
    ("restart postgres locally", "restart postgres in production"),
    ("deploy the api to staging", "deploy the api to qa"),
    ("run the migrations against the test database", "run the migrations against the uat database"),
    ("deploy the api to staging", "deploy the api"),
]


def _env(a: str, b: str) -> bool:
    return GATES["environment"](Pair(a, b)) is not None


@pytest.mark.parametrize("a, b", OTHER)
def test_another_environment_is_refused(a, b):
    assert _env(a, b) and _env(b, a)
    assert contrast(a, b) is not None


SAME = [
    ("restart kafka in production", "restart kafka in prod"),
    ("deploy the api to staging", "ship the api to staging"),
    ("run the tests in development", "run the tests on the dev cluster"),
    ("write a unit test for parse_date", "add a unit test for parse_date"),
    ("list local businesses that deliver", "list businesses nearby that deliver"),
    ("explain the production of insulin", "explain how insulin is made"),
    ("list every docker container on this box", "show me all containers on the machine"),
    ("log in as the test user", "sign in with the test account"),
    ("restart nginx", "prod is on fire lol, restart nginx"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_one_environment_or_none_is_no_difference(a, b):
    assert not _env(a, b) and not _env(b, a)


_NAMES = {"production": "production", "prod": "production", "the prod cluster": "production",
          "staging": "staging", "the staging cluster": "staging", "dev": "development",
          "the dev cluster": "development", "my laptop": "local", "sandbox": "sandbox", "qa": "qa"}


@given(st.sampled_from(["restart kafka", "back up redis", "drop the users table", "scale the workers"]),
       st.sampled_from(["in", "on"]), st.sampled_from(sorted(_NAMES)), st.sampled_from(sorted(_NAMES)))
def test_two_targets_differ_exactly_when_their_environments_do(command, prep, x, y):
    a, b = f"{command} {prep} {x}", f"{command} {prep} {y}"
    assert environments(side(a)) == {_NAMES[x]}
    assert _env(a, b) == (_NAMES[x] != _NAMES[y])
