"""A contrast needs an aligned difference: a slot both requests fill, with different values.

One side saying more (chat, background, a detail restated in other words), or the same parts in
another order, is no contrast. Pairs written for these tests, checked in both directions; beside
each class, the swaps of the same shape that must still be refused.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import GATES, Pair, contrast


def _both(gate: str, a: str, b: str) -> tuple[str | None, str | None]:
    return GATES[gate](Pair(a, b)), GATES[gate](Pair(b, a))


# entity: a word no dictionary knows, said apart from the request (chat), is not a name it adds.
CHAT_ASIDES = [
    ("how do i restart the printer", "ugh the printer froze again lol, how do i restart the printer"),
    ("show the weather forecast for the weekend", "planning a hike tbh, show the weather forecast for the weekend"),
    ("what is the difference between tcp and udp", "tcp vs udp, what is the difference"),
]


@pytest.mark.parametrize("a, b", CHAT_ASIDES)
def test_a_word_said_apart_from_the_request_is_no_name(a, b):
    assert _both("entity", a, b) == (None, None)


# entity and code_exact: an identifier or a quoted string restated as plain words.
RESTATED = [
    ("copy notes.txt into the backup folder", "copy notes.txt to ./backup"),
    ("resize the logo to 400 pixels wide", "resize the logo to 400px wide"),
    ("convert this python 2 script to python 3", "convert this py2 script to python 3"),
    ("add a field 'email' to the user model", "add email field to the user model"),
]


@pytest.mark.parametrize("a, b", RESTATED)
def test_an_identifier_said_in_plain_words_is_the_same_request(a, b):
    assert _both("entity", a, b) == (None, None)
    assert _both("code_exact", a, b) == (None, None)
    assert contrast(a, b) is None and contrast(b, a) is None


# The same shapes where the other side fills the slot with something else, or says it as code.
ALIGNED = [
    ("explain the plot of hamlet", "explain the plot of othello"),  # the same slot, another name
    ("check my chase balance", "check my citi balance"),
    ("find a hotel near the louvre", "find a hotel near the orsay"),
    ("invite everyone to the standup", "invite priya to the standup"),
    ("email the report", "email the report to priya"),  # a name said as an argument
    ("copy notes.txt to ./backup", "copy notes.txt to /backup"),
    ("git checkout -b hotfix", "git checkout hotfix"),  # a flag is never chat
    ("rename the variable userId to userID", "rename the variable userId to UserId"),  # code as typed
    ("git push origin main", "git push origin :main"),
    ("rsync -a src dest", "rsync -a src/ dest"),  # a command line's words are arguments, not prose
    ("set `debug: true` in the config", "set `debug: false` in the config"),
]


@pytest.mark.parametrize("a, b", ALIGNED)
def test_an_aligned_difference_is_still_refused(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None


# role: two conjuncts exchanged around "and" / "or" play one part together.
@pytest.mark.parametrize("a, b", [
    ("make the summary shorter and more formal", "make the summary more formal and shorter"),
    ("rotate the keys and restart the workers", "restart the workers and rotate the keys"),
])
def test_conjuncts_in_another_order_are_no_role_swap(a, b):
    assert _both("role", a, b) == (None, None)


@pytest.mark.parametrize("a, b", [
    ("sort by date and then by name", "sort by name and then by date"),
    ("transfer money from savings to checking", "transfer money from checking to savings"),
])
def test_the_parts_of_a_relation_trading_places_are_still_a_role_swap(a, b):
    assert _both("role", a, b) == ("role", "role")


# number and date: one value spelt another way is one value.
@pytest.mark.parametrize("a, b", [
    ("move 500 dollars to savings", "move five hundred dollars to savings"),
    ("buy 25 apples", "buy twenty-five apples"),
    ("a budget of 60k for the car", "a budget of 60,000 for the car"),
    ("remind me at 9pm to stretch", "remind me at 21:00 to stretch"),
    ("run the backup at 2am", "run the backup at 02:00"),
])
def test_one_value_in_another_spelling_is_the_same_number(a, b):
    assert _both("number", a, b) == (None, None)
    assert _both("date", a, b) == (None, None)


@pytest.mark.parametrize("a, b", [
    ("move 500 dollars to savings", "move five hundred euros to savings"),
    ("buy 25 apples", "buy twenty-six apples"),
    ("remind me at 9am to stretch", "remind me at 21:00 to stretch"),
    ("run the backup at 2pm", "run the backup at 02:00"),
    ("budget of 60k for the car", "budget of $6,000 for the car"),
])
def test_another_value_or_half_of_the_day_still_differs(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None


# clause: a clause that states ("i'm the best man", "tax season is looming") asks nothing more.
@pytest.mark.parametrize("a, b", [
    ("write a toast for my brother's wedding",
     "my brother is getting married and i'm the best man, could you write a toast for his wedding"),
    ("schedule a call with the accountant", "tax season is looming, can you set up a call with my accountant"),
])
def test_a_stated_clause_is_no_action_the_other_lacks(a, b):
    assert _both("clause", a, b) == (None, None)


@pytest.mark.parametrize("a, b", [
    ("summarize the notes", "i'm done, summarize the notes and delete the database"),
    ("summarize the notes", "summarize the notes, then archive the old tickets"),
])
def test_an_action_clause_beside_a_stated_one_still_differs(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None


# quantifier: the pronoun "one", "all" on both sides, "any" under a negation, "just" + a past.
@pytest.mark.parametrize("a, b", [
    ("how do i write a good cover letter", "my cover letters keep getting ignored, how do i write a good one"),
    ("add a unit test for parse_date", "my reviewer wants a unit test for parse_date, could you add one"),
    ("show me all the buckets in our account", "list every bucket we have"),
    ("delete the images that are not used by a container", "delete the images not used by any container"),
    ("change my shipping address", "we just moved, change my shipping address"),
])
def test_no_part_of_a_whole_is_no_quantifier_contrast(a, b):
    assert _both("quantifier", a, b) == (None, None)


@pytest.mark.parametrize("a, b", [
    ("restart one of the web pods", "restart all of the web pods"),
    ("book a room with a balcony", "book a room, any but one with a balcony"),
    ("delete my files", "delete all files"),
    ("email the first three reviewers", "email the reviewers"),
])
def test_a_part_of_a_whole_still_differs(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None


# date: modifiers that say the same, and today's half of the day.
@pytest.mark.parametrize("a, b", [
    ("cancel my 3pm appointment", "cancel my appointment at 3 this afternoon"),
    ("what did I spend last month", "what did I spend the previous month"),
    ("which subscriptions renew this month", "which subscriptions renew in the current month"),
    ("two tickets for the 8pm show tonight", "two tickets for the show at 8 this evening"),
])
def test_the_same_day_said_another_way_is_no_date_contrast(a, b):
    assert _both("date", a, b) == (None, None)


@pytest.mark.parametrize("a, b", [
    ("book it for this afternoon", "book it for tomorrow afternoon"),
    ("book a table tonight", "book a table tomorrow night"),
    ("what did I spend last month", "what did I spend next month"),
])
def test_another_day_still_differs(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None
