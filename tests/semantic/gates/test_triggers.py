"""A trigger: a clause that says *when* the action is to happen ("when i get home", "if the backup
fails", "once ci passes") is part of the request. On one side only, or another on each side, it is
another request (the ``condition`` check). Chat about the addressee's time or leave ("when you get a
chance", "if possible"), a trigger reworded, a question's condition and the event told as an action
of its own pass. Each pair is checked in both directions.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.semantic.guard import contrast
from actioncache.semantic.guard.condition import triggers
from actioncache.semantic.guard.text import side

OTHER = [
    ("Turn on the heater when I get home", "Turn on the heater"),
    ("Turn on the heater when I get home", "Turn on the heater now"),
    ("Start the coffee maker when I wake up", "Start the coffee maker"),
    ("Open the garage when my car pulls in", "Open the garage"),
    ("Email me if the backup fails", "Email me when the backup finishes"),
    ("Deploy the api once the build finishes", "Deploy the api now"),
    ("Close the ticket after the customer replies", "Close the ticket"),
    ("Restart the worker if the queue backs up", "Restart the worker"),
    ("When the client signs the contract, send the invoice", "Send the invoice right away"),
    ("Keep the heater on until I get home", "Keep the heater on"),
    ("let me know when the build is done", "let me know"),
]

SAME = [
    ("Turn on the heater when I get home", "Turn on the heater once I'm home"),
    ("Turn on the heater when I get home", "when i get home, turn on the heater"),
    ("Turn on the heater when you get a chance", "Turn on the heater"),
    ("Turn on the heater whenever you can", "Turn on the heater"),
    ("Turn on the heater if you can", "Turn on the heater"),
    ("Turn on the heater if possible", "Turn on the heater"),
    ("Turn on the heater if that's ok", "Turn on the heater"),
    ("hiya! whenever u have a min can u bump the version in package.json to 2.4.0", "bump the version in package.json to 2.4.0"),
    ("check if the server is up", "check whether the server is up"),
    ("Send the invoice to accounting after you convert it to PDF.", "Convert the invoice to PDF, then send it to accounting."),
    ("Merge the PR once CI passes.", "as soon as the checks go green, merge the pull request"),
    ("what should I do if I get a jury duty summons?", "got summoned for jury service, what now?"),
]


@pytest.mark.parametrize(("a", "b"), OTHER)
def test_another_trigger_is_another_request(a: str, b: str) -> None:
    assert contrast(a, b) == "condition"
    assert contrast(b, a) == "condition"


@pytest.mark.parametrize(("a", "b"), SAME)
def test_chat_and_reworded_triggers_pass(a: str, b: str) -> None:
    assert contrast(a, b) is None
    assert contrast(b, a) is None


def test_what_a_trigger_reads() -> None:
    assert triggers(side("email me if the backup fails")) == [("on", ["backup", "fails"])]
    assert triggers(side("when does the store open")) == []
    assert triggers(side("run the backup after lunch")) == []
    assert triggers(side("book a flight home after this miami conference")) == []
    assert triggers(side("the api is returning 500 errors after the deploy")) == []


_ACTIONS = ["turn on the heater", "start the coffee maker", "open the garage", "lock the doors", "play music"]
_EVENTS = ["i get home", "my car pulls in", "the build finishes", "everyone leaves", "the backup fails"]
_LEAVE = ["when you get a chance", "whenever you can", "if you can", "if possible"]


@given(st.sampled_from(_ACTIONS), st.sampled_from(["when", "once", "as soon as", "if", "after"]), st.sampled_from(_EVENTS))
def test_a_trigger_on_one_side_is_refused(action: str, word: str, event: str) -> None:
    # refused (an earlier check may name it first: "once the build finishes" reads as a substitution too)
    assert contrast(f"{action} {word} {event}", action) is not None
    assert contrast(action, f"{word} {event}, {action}") is not None


@given(st.sampled_from(_ACTIONS), st.sampled_from(_LEAVE))
def test_chat_about_time_is_no_trigger(action: str, leave: str) -> None:
    assert contrast(f"{action} {leave}", action) is None
