"""A free rewording puts its own "should" or "can" in; a tense or a modal that changes the request still counts.

Written for these tests. The class: a modal on one side only ("should", "can", "would") of two requests
that share few words; beside them, a modal on one side of requests worded alike, two different
modalities, and a past against a present.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import contrast

SAME = [
    ("what are the warning signs of dehydration", "how can I tell I am dehydrated, what signs should I watch for"),
    ("list good houseplants for a shady room", "which indoor plants could I keep in a shady spot"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_a_modal_of_the_rewording_itself_is_style(a, b):
    assert contrast(a, b) is None
    assert contrast(b, a) is None


DIFFERENT = [
    ("cancel my order", "should I cancel my order"),
    ("did I pay the rent", "should I pay the rent"),
    ("how many sick days are left", "how many sick days did I take"),
]


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_a_modal_that_changes_the_request_is_still_refused(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None


# The class: a question whose subject is its question word asked in the simple past ("what made",
# "who deployed", "which test failed") asks about the past as "why did" / "who has" do.
PAST_ALIKE = [
    ("why did the last run fail", "what made the latest build fail"),
    ("who has deployed the api today", "who deployed the api today"),
    ("why did the tests go red", "which test failed"),
    ("using git, show me who changed line 42 of app.py", "who changed line 42 of app.py? use git"),
    ("give me an overview of the edits in this pull request", "what changed in this PR?"),
]


@pytest.mark.parametrize("a, b", PAST_ALIKE)
def test_a_question_asked_in_the_simple_past_is_a_past_too(a, b):
    assert contrast(a, b) != "modality"
    assert contrast(b, a) != "modality"


PAST_AGAINST_PRESENT = [
    ("what made the build fail", "what makes the build fail"),
    ("which service crashed", "which service should crash"),
    ("who approved the merge", "who can approve the merge"),
]


@pytest.mark.parametrize("a, b", PAST_AGAINST_PRESENT)
def test_a_simple_past_against_a_present_or_a_modal_is_still_refused(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None
