"""Chatter: greetings, thanks, hedges and fillers ask for nothing and decide nothing.

Before: "good morning" read as a time of day, "if it's not too much trouble" as a negation, an
emoticon or a sign-off as a name. Pairs written for these tests.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import contrast
from actioncache.semantic.guard.chatter import strip_chatter

CHATTY = [
    ("good morning! what's the weather in oslo tomorrow?", "what's the weather in oslo tomorrow"),
    ("hi there, could you restart the api if it's not too much trouble? thanks so much :)", "restart the api"),
    ("hey, remind me to call mom at 6pm k thx", "remind me to call mom at 6pm"),
    ("quick question: how do I cancel my gym membership?", "how do I cancel my gym membership"),
    ("yo, list the open pull requests in acme/api pls", "list the open pull requests in acme/api"),
    ("hope you're well! please archive the unread newsletters 🙏", "archive the unread newsletters"),
    ("ok so, turn off the kitchen lights, no rush", "turn off the kitchen lights"),
    ("evening! book a table for two at 8", "book a table for two at 8"),
    # a smiley or pictograph after a greeting ends it as a stop would
    ("morning :) add eggs to the shopping list, much obliged", "add eggs to the shopping list"),
    ("evening 🙂 dim the living room lights", "dim the living room lights"),
]


@pytest.mark.parametrize("chatty, plain", CHATTY)
def test_chatter_is_no_difference(chatty, plain):
    assert contrast(chatty, plain) is None
    assert contrast(plain, chatty) is None


@pytest.mark.parametrize("text, kept", [
    ("evening meetings please", "evening meetings please"),  # a bare "evening" greets only before a stop
    ("close the serendipity ticket", "close the serendipity ticket"),  # "ty" inside a word is not thanks
    ("thanks", "thanks"),  # nothing else: the text stays
    ("no, keep it", "no, keep it"),
    ("set the thermostat to 21° → then stop", "set the thermostat to 21° → then stop"),
])
def test_only_whole_phrases_of_chatter_go(text, kept):
    assert strip_chatter(text) == kept


def test_chatter_does_not_hide_a_real_difference():
    assert contrast("hi! turn on the lights, thanks", "hey, turn off the lights please") is not None
    assert contrast("good morning, what's on my calendar for friday", "what's on my calendar for monday") == "date"


@pytest.mark.parametrize("chatty, plain", [
    # An outside user: a hedge that opens the request was read as a negation ("not too much trouble"),
    # though the docs name it as chatter; set off by punctuation, it asks for nothing.
    ("Good morning! If it's not too much trouble, show my calendar for Friday, thanks so much :)",
     "Show my calendar for Friday."),
    ("If it is not too much trouble, show my calendar for Friday.", "show my calendar for friday"),
    ("If you can, restart the staging server.", "restart the staging server"),
    ("when you get a chance: send me the q3 report", "send me the q3 report"),
])
def test_a_hedge_that_opens_the_request_is_no_difference(chatty, plain):
    assert contrast(chatty, plain) is None
    assert contrast(plain, chatty) is None


@pytest.mark.parametrize("text", [
    "If you can restart the server, tell me",  # no stop after the words: they ask whether
    "If possible book the 9am slot",
])
def test_an_opening_if_without_a_stop_after_it_stays(text):
    assert strip_chatter(text) == text


def test_an_opening_hedge_does_not_hide_a_real_difference():
    assert contrast("If it's not too much trouble, show my calendar for Friday.",
                    "If it's not too much trouble, show my calendar for Monday.") == "date"
    assert contrast("If you can, restart the staging server.", "If you can, don't restart the staging server.") \
        is not None
