"""A chatty request's backstory names a day or a name the plain request lacks: it adds, it changes nothing.

The class: one side says all the other says and more, in a free rewording (few words shared), and the
more is a name or a day in the story around the request. Beside them: the same detail in requests
worded alike, or where the other side says something else instead, is still a different request.
Written for these tests.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import contrast

SAME = [
    ("tag the current commit as v2.0.0", "our release at Initech is finally out, can u tag the current commit as v2.0.0?"),
    ("how long does cooked pasta keep in the fridge",
     "so i cooked way too much pasta on tuesday lol, how long does cooked pasta keep in the fridge?"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_a_backstory_with_a_name_or_a_day_adds_nothing(a, b):
    assert contrast(a, b) is None
    assert contrast(b, a) is None


DIFFERENT = [
    ("email the report", "email the report to priya", "entity"),
    ("who is sarah's manager", "who does tom report to", "entity"),
    ("book a table for two", "book a table for two on tuesday", "date"),
    ("tag the current commit as v2.0.0", "woohoo launch day, tag the previous commit in Initech as v2.0.0", "entity"),
]


@pytest.mark.parametrize("a, b, reason", DIFFERENT)
def test_the_detail_still_changes_requests_worded_alike_or_replacing_words(a, b, reason):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None
