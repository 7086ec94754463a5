"""A number in the story told around a request is background; the same number inside it is the request.

Before: any number on one side only refused the pair ("my 9-year-old keeps asking how rainbows
form 🌈 can you explain it?" / "explain how rainbows form"). Now a sentence of its own that states
something about the speaker or their world (a subject and its verb), told before the sentence
that asks, holds background the other request may leave out; a number inside the request, after
it, or in what the speaker wants or means still counts. Pairs written for these tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.semantic.guard import GATES, Pair


def _number(a: str, b: str) -> tuple[str | None, str | None]:
    return GATES["number"](Pair(a, b)), GATES["number"](Pair(b, a))


BACKGROUND = [
    ("my 9-year-old keeps asking how rainbows form 🌈 can you explain it?", "explain how rainbows form"),
    ("We adopted a cat last month (she's 3 and very shy). Any tips for introducing her to a dog?",
     "tips for introducing a cat to a dog"),
    ("I've been a nurse for 12 years and I'm burned out. How do I switch careers into tech?",
     "how do I switch careers into tech?"),
    ("my laptop has like 200 tabs open lol — how do I make chrome use less memory?",
     "how do I make chrome use less memory?"),
    ("So there's a leak under my sink that's ruined two towels already. How do I fix a leaking trap?",
     "How do I fix a leaking sink trap?"),
]


@pytest.mark.parametrize("a, b", BACKGROUND)
def test_a_number_in_the_story_before_the_request_is_background(a, b):
    assert _number(a, b) == (None, None)


IN_THE_REQUEST = [
    ("book seats for 2 adults and 3 kids", "book seats for 2 adults"),  # "and" joins one request
    ("book a table for 4, by the window", "book a table by the window"),  # a comma too
    ("I meant PR #512. Review it for security.", "Review it for security."),  # what the speaker means
    ("I want to run 5 km a day. Make me a training plan.", "Make me a training plan."),  # what the speaker wants
    ("Draft a letter to my landlord. I've lived here 6 years.", "Draft a letter to my landlord."),  # after the request
    ("We're a party of 6. Book a table at Nopa.", "I'm on my own. Book a table at Nopa."),  # another story
    ("four nights, i'd like a sea view. find a hotel in Nice", "find a hotel in Nice"),  # an answer, no subject
    ("my flight is UA 512 — check its status", "check my flight's status"),  # the number names the thing asked about
]


@pytest.mark.parametrize("a, b", IN_THE_REQUEST)
def test_a_number_inside_the_request_or_another_story_still_counts(a, b):
    assert _number(a, b) == ("number", "number")


def test_two_stories_with_two_numbers_fill_one_slot():
    told = "It has 3 replicas. Restart all of them?"
    assert _number(told, "It has 5 replicas. Restart all of them?") == ("number", "number")


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=2, max_value=90))
def test_an_age_in_the_story_is_background_a_count_in_the_request_is_not(n):
    assert _number(f"my son is {n} and loves dinosaurs. recommend a dinosaur book", "recommend a dinosaur book") == (None, None)
    assert _number(f"recommend {n} dinosaur books", "recommend dinosaur books") == ("number", "number")
