"""A clause beside the request that names, describes or greets asks for nothing more.

The class: the `clause` check refused a chatty or reworded request for a clause the other side lacks
although that clause starts with no verb where a command's verb stands ("change of plans", "release
day", "idaho use", "legislative process:"), or says the speaker's own state with "i" left out ("need
to stock up lol"), or is a pleasantry the chatter reading did not know yet ("hope your day's going
well", "hope all is well", "hope you had a nice weekend"). Beside them: a clause that does add an
action, after a joining word, an adverb or a comma, is still refused. Written for these tests.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import contrast
from actioncache.semantic.guard.chatter import strip_chatter

SAME = [
    ("cancel my dentist appointment", "change of plans, sadly. please cancel my dentist appointment"),
    ("what time zone is boise in", "which timezone does boise, idaho use?"),
    ("explain how a bill becomes a law", "legislative process: how does a bill turn into a law?"),
    ("find the nearest pharmacy", "where's the closest pharmacy? need to stock up lol"),
    ("how much did i spend on groceries in june",
     "Hi there! Hope your day's going well. how much did i spend on groceries in june?"),
    ("when is my phone bill due", "Hello, hope all is well! when is my phone bill due?"),
    ("book a meeting room for friday", "Hi! Hope you had a nice weekend. Could you book a meeting room for friday?"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_a_clause_that_names_describes_or_greets_adds_nothing(a, b):
    assert contrast(a, b) is None
    assert contrast(b, a) is None


DIFFERENT = [
    ("cancel my dentist appointment", "cancel my dentist appointment, then email the clinic"),
    ("find the nearest pharmacy", "find the nearest pharmacy, also order my refill"),
    ("show the git log", "show the git log, actually wipe the cache too"),
    ("show the open pull requests", "show the open pull requests and close the stale ones"),
    ("summarize the notes", "summarize the notes, now quickly drop the customer table"),
]


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_a_clause_that_starts_with_a_command_is_still_refused(a, b):
    assert contrast(a, b) == "clause"
    assert contrast(b, a) == "clause"


@pytest.mark.parametrize("text, left", [
    ("Hope your day's going well. when is my bill due?", "when is my bill due?"),
    ("hope all is well! when is my bill due?", "when is my bill due?"),
    ("Hi! Hope you had a nice weekend. Could you book a room?", "Could you book a room?"),
    ("could you book a room? sorry to bug u again", "could you book a room"),
])
def test_pleasantries_are_chatter(text, left):
    assert strip_chatter(text) == left


def test_a_hope_that_asks_stays():
    # only the pleasantry goes: a hope about the request itself is the request
    assert strip_chatter("hope the build is green, rerun it") == "hope the build is green, rerun it"
