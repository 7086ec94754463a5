"""A length of time said in other units is one length: "a 60-min agenda" / "a one-hour agenda".

Before: the number check compared the digits ("60" on one side, none on the other) and refused
these rewordings; "60-min" read as a name, "a week" as a date. Now each length of time is read as a
number of seconds (units that convert exactly) or of months (the calendar's: "30 days" is not "a
month"), a period ("every minute", "per week", "10 GB a month") apart from a delay or a length, and
the other checks read it as a number with its unit (its relation, its bound). Written for these
tests, beyond the tuning sets' rewordings.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.semantic.guard import contrast

SAME = [
    ("alert when CPU stays above 90% for 5 minutes", "alert when CPU stays above ninety percent for five minutes"),
    ("keep logs for 7 days", "keep logs for a week"),
    ("draft a 60-min kickoff agenda", "draft a one-hour kickoff agenda"),
    ("check the site every minute", "check the site every 60 seconds"),
    ("remind me in half an hour", "remind me in 30 minutes"),
    ("list stocks held more than a year", "list stocks held more than 12 months"),
    ("back up the db every day", "back up the db every 24 hours"),
    ("limit to 100 requests per minute", "limit to 100 requests per 60 seconds"),
    ("back up 10 gb per month", "back up 10 gb a month"),
    ("set the session timeout to 2 hours", "set the session timeout to 120 minutes"),
    ("block my calendar for 90 minutes", "block my calendar for an hour and a half"),  # an outside tester's
]


@pytest.mark.parametrize("a, b", SAME)
def test_one_length_of_time_in_other_units_is_one_request(a, b):
    assert contrast(a, b) is None and contrast(b, a) is None


DIFFERENT = [
    ("check the site every minute", "check the site in a minute"),  # a period, a delay
    ("remind me in a week", "remind me every 7 days"),
    ("remind me in a week", "remind me within 7 days"),  # a delay, a deadline
    ("remind me in 5 minutes", "remind me in 5 hours"),
    ("book a room for a week", "book a room for a month"),
    ("draft a 30-day notice", "draft a one-month notice"),  # a month is not 30 days
    ("make a 3-month study plan", "make a twelve-week study plan"),
    ("list stocks held more than a year", "list stocks held less than 12 months"),
    ("limit to 100 requests per minute", "limit to 100 requests per hour"),
    ("keep 7 days of logs for 3 apps", "keep a week of logs for 4 apps"),  # the other numbers still count
    ("block my calendar for an hour and a half", "block my calendar for 2 hours"),
]


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_another_length_period_or_relation_is_another_request(a, b):
    assert contrast(a, b) is not None and contrast(b, a) is not None


_UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800}


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(sorted(_UNITS)), st.sampled_from(sorted(_UNITS)), st.integers(1, 90), st.integers(1, 90))
def test_two_lengths_are_one_request_exactly_when_they_are_equal(unit_a, unit_b, n_a, n_b):
    a, b = f"pause the sync for {n_a} {unit_a}", f"pause the sync for {n_b} {unit_b}"
    equal = n_a * _UNITS[unit_a] == n_b * _UNITS[unit_b]
    assert (contrast(a, b) is None) == equal, (a, b)
