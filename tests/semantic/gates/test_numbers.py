"""What a number is: its value however it is spelt, and the relation a preposition gives it.

Pairs written for these tests, each checked in both directions. The classes: number words compose
into one value ("two thousand five hundred" is 2500); a preposition before a number says what the
number is ("by 20 %" a change, "to 20 %" a target), and two shared numbers trading relations
("the 2pm call to 4pm" / "the 4pm call to 2pm") are another request.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import GATES, Pair, contrast
from actioncache.semantic.guard.number import digit_groups, spelt
from actioncache.semantic.guard.text import side


def _both(a: str, b: str) -> tuple[str | None, str | None]:
    return contrast(a, b), contrast(b, a)


# One value, spelt in words, digits, with a multiplier or a thousands separator.
SAME_VALUE = [
    ("send five hundred dollars to bob", "send $500 to bob"),
    ("transfer two thousand five hundred dollars to savings", "transfer $2,500 to savings"),
    ("set the monthly budget to 1.5k", "set the monthly budget to 1500"),
    ("order a dozen bagels", "order 12 bagels"),
    ("order two dozen bagels", "order 24 bagels"),
    ("pay the contractor two hundred and fifty dollars", "pay the contractor $250"),
    ("generate 5 thousand test rows", "generate 5000 test rows"),
    ("simulate 1.5 million requests", "simulate 1,500,000 requests"),
    ("tip a hundred dollars", "tip $100"),
]


@pytest.mark.parametrize("a, b", SAME_VALUE)
def test_one_value_spelt_two_ways_is_one_request(a, b):
    assert digit_groups(side(a)) == digit_groups(side(b))
    assert _both(a, b) == (None, None)


@pytest.mark.parametrize("a, b", [p for p in SAME_VALUE if "$" in p[1]])
def test_one_value_spelt_two_ways_reads_alike_to_the_verifier(a, b):
    assert spelt(side(a)) == spelt(side(b))


# The same spellings with another value: still refused.
OTHER_VALUE = [
    ("send five hundred dollars to bob", "send $5000 to bob"),
    ("transfer $2,500 to savings", "transfer $25,000 to savings"),
    ("order two dozen bagels", "order 14 bagels"),
    ("order two dozen bagels", "order 12 bagels"),
    ("pay the contractor two hundred and fifty dollars", "pay the contractor $200"),
    ("set the monthly budget to 1.5k", "set the monthly budget to 15k"),
    ("generate 5 thousand test rows", "generate 5 test rows"),
]


@pytest.mark.parametrize("a, b", OTHER_VALUE)
def test_another_value_is_refused(a, b):
    x, y = _both(a, b)
    assert x is not None and y is not None


# A preposition before a shared number that differs on the two sides.
OTHER_RELATION = [
    ("increase the price by 20 percent", "increase the price to 20 percent"),
    ("shorten the essay to 500 words", "shorten the essay by 500 words"),
    ("lower the thermostat by 3 degrees", "lower the thermostat to 3 degrees"),
    ("cut the budget by about 10%", "cut the budget to 10%"),
    ("remind me in 5 minutes", "remind me within 5 minutes"),
    ("submit the report by 5pm", "submit the report at 5pm"),
    ("grow the team from 8 people", "grow the team to 8 people"),
    ("scale the deployment to 3 replicas", "scale the deployment by 3 replicas"),
]


@pytest.mark.parametrize("a, b", OTHER_RELATION)
def test_a_number_in_another_relation_is_refused(a, b):
    assert GATES["relation"](Pair(a, b)) == "relation"
    assert GATES["relation"](Pair(b, a)) == "relation"


# The same numbers in swapped roles.
SWAPPED = [
    ("move the 2pm call to 4pm", "move the 4pm call to 2pm"),
    ("reduce the timeout from 30 to 10 seconds", "reduce the timeout from 10 to 30 seconds"),
    ("book a table for 4 at 7", "book a table for 7 at 4"),
    ("shift the 9am standup to 10am", "shift the 10am standup to 9am"),
    ("raise the rent from $1800 to $2000", "raise the rent from $2000 to $1800"),
]


@pytest.mark.parametrize("a, b", SWAPPED)
def test_numbers_in_swapped_roles_are_refused(a, b):
    x, y = _both(a, b)
    assert x is not None and y is not None


# Rewordings that keep each number's relation: the relation gate lets them through.
SAME_RELATION = [
    ("increase the price by 20 percent", "raise the price by 20%"),
    ("increase the price by 20 percent", "increase the price 20 percent"),  # no preposition on one side
    ("book a table for 4 at 7", "book a table at 7 for 4"),  # the same relations, in another order
    ("reduce the timeout from 30 to 10 seconds", "reduce the timeout to 10 from 30 seconds"),
    ("find a venue for a party of 40", "find a venue for 40 people"),  # of / for: a party's size
    ("percentage change between 240 and 300", "percentage change from 240 to 300"),
    ("remind me at 10am to call the dentist", "set a reminder for 10 am to call the dentist"),
    ("cut the budget by about 10%", "cut the budget by 10%"),
    ("limit the reply to under 100 words", "limit the reply to fewer than a hundred words"),
]


@pytest.mark.parametrize("a, b", SAME_RELATION)
def test_the_same_relation_reworded_passes(a, b):
    assert GATES["relation"](Pair(a, b)) is None
    assert GATES["relation"](Pair(b, a)) is None


# A comparison and a bound on one number ("older than 90 days" / "over 90 days old") and a year
# placed by "in", "for" or "during" are one relation.
@pytest.mark.parametrize("a, b", [
    ("move objects older than 90 days to glacier", "move anything over 90 days old to glacier"),
    ("total revenue per month in 2024", "sum of revenue by month for 2024"),
    ("list the invoices issued during 2023", "list the invoices issued in 2023"),
])
def test_comparisons_and_years_keep_their_relation(a, b):
    assert GATES["relation"](Pair(a, b)) is None
    assert GATES["relation"](Pair(b, a)) is None


def test_a_year_before_or_from_is_still_another_relation():
    assert GATES["relation"](Pair("archive emails from before 2020", "archive emails from 2020")) == "relation"
    assert GATES["relation"](Pair("archive emails from 2020", "archive emails from before 2020")) == "relation"


def test_a_capital_m_after_a_number_is_million():
    assert digit_groups(side("a csv with 2M transaction rows")) == digit_groups(side("a csv of 2 million rows"))
    assert contrast("dedupe the 2M rows", "dedupe the 3 million rows") == "number"


@pytest.mark.parametrize("a, b, same", [
    ("Twelve. Suggest some team activities.", "12 people. activity suggestions?", True),  # "suggest" is no unit
    ("Five. List the options.", "5 options, list them", True),
    ("book 12 rooms", "book 12 seats", False),  # a noun after a shared number still is its unit
])
def test_a_verb_after_a_number_opens_the_next_sentence_it_is_no_unit(a, b, same):
    assert tuple(reason is None for reason in _both(a, b)) == (same, same)


@pytest.mark.parametrize("a, b, same", [
    ("book seats for 2 adults", "book seats for 2 adults and 2 children", False),
    ("buy 3 apples and 3 pears", "buy 3 apples", False),
    ("reserve 1 double room", "reserve 1 double room and 1 single room", False),
    ("buy 3 apples", "buy three apples please", True),
    ("a table for 4 at the bistro", "a table for 4 people at the bistro", None),  # one count: not the number check's
])
def test_a_number_that_counts_another_thing_on_one_side_only_is_another_request(a, b, same):
    """The class: the digits alike, one side counts something the other never names ("and 2 children")."""
    reasons = _both(a, b)
    if same is None:
        assert "number" not in reasons
    else:
        assert tuple(reason is None for reason in reasons) == (same, same)


@pytest.mark.parametrize("a, b, same", [
    ("my budget is $1,200, pick a laptop for me", "my budget is $1200, pick a laptop for me", True),
    ("reserve a table for 4, patio if possible", "reserve a patio table for 4 people if possible", True),
    ("book 2 rooms, then email me", "book 2 suites, then email me", False),
    ("pay $1,200, then tell me", "pay $1,300, then tell me", False),
])
def test_a_number_ends_at_the_punctuation_after_it(a, b, same):
    """The class: a comma after a number ends it ("$1,200," is one number, not 1 and 200) and its
    unit (the word after the comma starts another phrase: "for 4, patio" counts no patios)."""
    assert tuple(reason is None for reason in _both(a, b)) == (same, same)


@pytest.mark.parametrize("a, b, same", [
    ("how many cups is 250 g of sugar", "convert 250 grams of sugar to cups", True),
    ("weigh out 40 g of butter", "weigh out 40 grams of butter", True),
    ("weigh out 40 g of butter", "weigh out 40 kg of butter", False),
    ("weigh out 40 g of butter", "weigh out 40 mg of butter", False),
    ("weigh out 40 g of butter", "weigh out 4 grams of butter", False),
])
def test_g_after_a_number_is_grams(a, b, same):
    """The class: "g" is the gram's symbol after a number (one letter, too short for the abbreviation
    rule); another unit or another amount is still another request."""
    assert tuple(reason is None for reason in (GATES["number"](Pair(a, b)), GATES["number"](Pair(b, a)))) == (same, same)


@pytest.mark.parametrize("text, value", [("order twenty-one candles", "21"), ("twenty one of them", "21"),
                                         ("buy one hundred shares", "100"), ("one thousand five hundred", "1500"),
                                         ("seventy-one degrees", "71")])
def test_one_inside_a_composed_number_counts(text, value):
    # An outside tester: "twenty-one" / 21 was refused: "one" (also a pronoun) was never a number.
    assert digit_groups(side(text)) == {value}


@pytest.mark.parametrize("text", ["pick the first one", "this one and that one", "one of the files"])
def test_one_as_a_pronoun_is_no_number(text):
    assert not digit_groups(side(text))


def test_twenty_one_is_21_and_not_20():
    assert GATES["number"](Pair("order twenty-one candles", "order 21 candles")) is None
    assert contrast("order twenty-one candles", "order 20 candles") == "number"
