"""One side says all the other says and joins another action to it: another request.

The class: "X" / "X and <verb> it", "X then <verb> it", "X and check out", "renew my passport" /
"... and my driver's license". The ``clause`` check reads an added clause by its content words, so a
verb whose object is a pronoun ("and send it", "and delete them"), a light verb ("and check out") or
another object of the same command went unread, and the cross-encoder scores most of these pairs
above 0.95. The ``extra_action`` rule refuses them, and no verifier settles it. Beside them: both
sides joining the same actions in other words, a joined clause that only states why, a closing
request to report back ("and let me know"), and a chatty clause before the request stay one request.
Written for these tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.semantic.guard import GATES, Pair, contrast
from actioncache.semantic.guard.registry import Doubt

ADDED = [
    ("draft an email to the landlord", "draft an email to the landlord and send it"),
    ("find the duplicate rows in the orders table", "find the duplicate rows in the orders table and delete them"),
    ("stop the web container", "stop the web container and remove it"),
    ("open a PR for the hotfix", "open a PR for the hotfix and merge it"),
    ("back up the production database", "back up the production database then wipe it"),
    ("add the item to my cart", "add the item to my cart and check out"),
    ("renew my passport", "renew my passport and my driver's license"),
    ("write a commit message for these changes", "write a commit message for these changes and commit them"),
    ("export the users table to csv", "export the users table to csv, then truncate it"),
    ("hey can you pull up last quarter's numbers", "hey can you pull up last quarter's numbers and delete them"),
    ("order a pizza", "order a pizza and a salad"),
]


def _extra(a: str, b: str) -> bool:
    return GATES["extra_action"](Pair(a, b)) is not None


@pytest.mark.parametrize("a, b", ADDED)
def test_a_joined_action_is_refused_and_not_a_doubt(a, b):
    assert _extra(a, b) and _extra(b, a)
    assert contrast(a, b) is not None and contrast(b, a) is not None
    assert not isinstance(GATES["extra_action"](Pair(a, b)), Doubt)  # no verifier may settle it


SAME = [
    ("find a hotel and book it", "find and book a hotel"),
    ("draft an email to the landlord and send it", "write an email to the landlord and send it"),
    ("find the cheapest flight to Rome and book it", "find the cheapest flight to Rome and then book it"),
    ("please summarize the notes and thanks", "summarize the notes"),
    ("restart nginx", "restart nginx and let me know when it's done"),
    ("run the tests", "run the tests and show me the failures"),
    ("restart nginx", "restart nginx, it keeps crashing and i'm losing my mind"),
    ("format this json", "hey can u format this json real quick, it's all on one line and my eyes hurt lol"),
    ("restart nginx", "it's 2am and the site is down, just restart nginx"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_the_same_actions_or_a_reason_are_no_extra_action(a, b):
    assert not _extra(a, b) and not _extra(b, a)


@given(st.sampled_from(["draft a reply to the client", "list the stale branches", "download the latest backup",
                        "stop the api container", "generate the monthly invoice"]),
       st.sampled_from(["send", "delete", "restore", "archive", "remove", "merge"]),
       st.sampled_from(["and", "then", "and then", ", then"]),
       st.sampled_from(["it", "them"]))
def test_any_request_with_a_joined_verb_is_another(request_, verb, join, pronoun):
    longer = f"{request_}{join if join.startswith(',') else ' ' + join} {verb} {pronoun}"
    assert _extra(request_, longer) and _extra(longer, request_)
    # the same two actions said alike on both sides are one request
    assert not _extra(longer, longer.replace(" then ", " and ").replace(", and", " and"))
