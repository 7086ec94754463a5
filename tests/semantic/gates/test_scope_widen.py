"""A scope widened from one item to all: "lock all the doors" is not "lock the front door", nor
"install lodash globally" "install lodash in this project" (the ``quantifier`` check). "all" or
"every" on one side against one item singled out on the other ("this", "the", "my next", a singular
noun) changes the request; a plural without "all" already asks for all of them, "all" or "every" on
both sides, a mass noun and a distributive "for each" / "per" do not. Each pair both ways.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.semantic.guard import contrast

WIDENED = [
    ("Lock the front door", "Lock all the doors"),
    ("Cancel my next appointment", "Cancel all my appointments"),
    ("Delete this email", "Delete all the emails"),
    ("Archive this thread", "Archive all threads"),
    ("Delete this email", "Delete every email"),
    ("Remove that file", "Remove all files"),
    ("Reply to the latest email in this thread", "Reply to every email in this thread"),
    ("Install lodash in this project", "Install lodash globally"),
    ("install eslint", "install eslint globally"),
]

KEPT = [
    ("all tests failed", "every test failed"),
    ("show all my open PRs", "show my open PRs"),
    ("delete all the files in this folder", "delete the files in this folder"),
    ("Write a SQL query that counts orders per customer", "Give me SQL to get the number of orders for each customer"),
    ("Find the median salary by department", "for each department, what is the median salary?"),
    ("Add a cron job that clears /tmp every Sunday", "Schedule a weekly Sunday cleanup of /tmp via crontab"),
    ("delete every draft", "delete all my drafts"),
]


@pytest.mark.parametrize(("a", "b"), WIDENED)
def test_all_against_one_is_another_request(a: str, b: str) -> None:
    assert contrast(a, b) == "quantifier"
    assert contrast(b, a) == "quantifier"


@pytest.mark.parametrize(("a", "b"), KEPT)
def test_the_same_scope_passes(a: str, b: str) -> None:
    assert contrast(a, b) is None
    assert contrast(b, a) is None


_VERBS = ["delete", "archive", "close", "mute", "approve"]
_NOUNS = ["email", "thread", "ticket", "channel", "draft"]


@given(st.sampled_from(_VERBS), st.sampled_from(_NOUNS), st.sampled_from(["this", "that", "the", "my"]),
       st.sampled_from(["all the {}s", "all my {}s", "all {}s", "every {}"]))
def test_one_item_widened_to_all_is_refused(verb: str, noun: str, one: str, every: str) -> None:
    assert contrast(f"{verb} {one} {noun}", f"{verb} {every.format(noun)}") is not None


@given(st.sampled_from(_VERBS), st.sampled_from(_NOUNS), st.sampled_from(["the", "my"]))
def test_a_plural_asks_for_all_already(verb: str, noun: str, det: str) -> None:
    assert contrast(f"{verb} all {det} {noun}s", f"{verb} {det} {noun}s") is None
