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


ASIDES = [
    ("restart the billing worker", "hey, sorry to bother you this late, could you restart the billing worker?"),
    ("what time is it in lima", "hey! trying to reach my aunt, what time is it in lima rn?"),
    ("check the status of the backup job", "morning, just got back from leave, can you check the status of the backup job?"),
]


@pytest.mark.parametrize("a, b", ASIDES)
def test_an_aside_without_its_subject_tells_and_asks_nothing(a, b):
    # chat leaves the subject out: a participle, a past or an adjective first is a statement, not a command
    assert contrast(a, b) is None
    assert contrast(b, a) is None


@pytest.mark.parametrize("a, b", [
    ("restart the billing worker", "restart the billing worker, then wipe the cache volume"),
    ("summarize the notes", "sorry, summarize the notes and delete the database"),
    ("summarize the notes", "summarize the notes, now quickly drop the customer table"),  # an adverb, then a command
])
def test_a_clause_that_asks_more_is_still_refused(a, b):
    assert contrast(a, b) == "clause"
    assert contrast(b, a) == "clause"
