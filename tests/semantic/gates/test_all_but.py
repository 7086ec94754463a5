"""After a word for all of them, "but" and what it leaves out is "except"; a "but" that opens a clause is not.

Written for these tests. The class: "every service but the database", "all but one", "everyone but
me" on one side only is another request (as "except" is); "..., but it is slow" or "but please
hurry" joins another statement and leaves the request as it was.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import contrast

LEAVES_OUT = [
    ("restart every container in the stack", "restart every container in the stack but the proxy"),
    ("archive all the tickets", "archive all the tickets but the last one"),
    ("email each customer on the list", "email each customer on the list but the ones in Canada"),
    ("delete all the old logs", "delete all the old logs but keep this week's"),
]


@pytest.mark.parametrize("a, b", LEAVES_OUT)
def test_all_but_something_is_another_request(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None


SAME = [
    ("restart every container in the stack except the proxy", "restart every container in the stack but the proxy"),
    ("list all the open issues, but it can wait", "list all the open issues"),
    ("show every failing test but please be quick", "show every failing test"),
    ("fix the login bug but I need it today", "fix the login bug, I need it today"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_but_opening_a_clause_or_saying_except_changes_nothing(a, b):
    assert contrast(a, b) != "negation"
    assert contrast(b, a) != "negation"
