"""Mine against a named owner's: "cancel my order" / "cancel the customer's order".

The class: one side's possessive or object pronoun ("my", "me") faces, in the one span where the two
requests differ, an owner or addressee that is not a pronoun ("the team's", "the customer's", "the
admin", "everyone", "the team"). The ``person`` check compared pronouns with pronouns only, so these
pairs were served; now it refuses them too (a doubt, as another pronoun is). Beside them: an article
for the pronoun ("my alarm" / "an alarm"), an adjective ("my orders" / "the recent orders"), a time
("my calendar" / "today's calendar") and the same owner said as a subject ("the pull requests I have
open") name no other owner. Written for these tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.semantic.guard import GATES, Pair

OTHER_OWNER = [
    ("show my open pull requests", "show the team's open pull requests"),
    ("cancel my order", "cancel the customer's order"),
    ("what's my schedule tomorrow", "what's the team's schedule tomorrow"),
    ("reset my password", "reset the admin password"),
    ("list my calendar events", "list the team calendar events"),
    ("show my expenses this month", "show the department's expenses this month"),
    ("send the report to me", "send the report to the team"),
    ("call me", "call the team"),
    ("share the doc with me", "share the doc with everyone"),
]


def _person(a: str, b: str) -> bool:
    return GATES["person"](Pair(a, b)) is not None


@pytest.mark.parametrize("a, b", OTHER_OWNER)
def test_a_named_owner_against_mine_is_refused(a, b):
    assert _person(a, b) and _person(b, a)


SAME_OWNER = [
    ("show my open pull requests", "show the pull requests I have open"),
    ("cancel my subscription", "cancel the subscription"),
    ("show my orders", "show the recent orders"),
    ("set my alarm for 7", "set an alarm for 7"),
    ("book me a flight to denver", "book a flight to denver"),
    ("show my calendar", "show today's calendar"),
]


@pytest.mark.parametrize("a, b", SAME_OWNER)
def test_no_other_owner_is_named(a, b):
    assert not _person(a, b) and not _person(b, a)


@given(st.sampled_from(["cancel {} order", "reset {} password", "show {} invoices", "archive {} inbox"]),
       st.sampled_from(["my", "our", "your"]),
       st.sampled_from(["the customer's", "the team's", "the admin", "the client's", "everyone's"]))
def test_any_pronoun_against_a_named_owner_differs(template, pronoun, owner):
    a, b = template.format(pronoun), template.format(owner)
    assert _person(a, b) and _person(b, a)
    assert not _person(a, template.format("the"))  # an article names no owner
