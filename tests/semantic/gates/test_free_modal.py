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
