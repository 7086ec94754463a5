"""opposite / negation: actions of opposite sense that WordNet does not list as antonyms.

The class: the aspectual verbs of English name a phase of an activity (start, start over, go on,
break, cut off, complete); two verbs of different phases on the same thing are two actions. And a
negating verb ("stop", "exclude") is not cancelled by its own opposite. Pairs written for these
tests, checked in both directions, with the rewordings that keep the phase.
"""

from __future__ import annotations

import pytest

from actioncache.semantic import lexicon
from actioncache.semantic.guard import contrast


def _both(a: str, b: str) -> tuple[str | None, str | None]:
    return contrast(a, b), contrast(b, a)


OTHER_PHASE = [
    ("pause the nightly backup job", "resume the nightly backup job"),
    ("suspend my gym membership", "resume my gym membership"),
    ("pause the download", "continue the download"),
    ("start the migration", "pause the migration"),
    ("restart the render", "resume the render"),
    ("interrupt the training run", "continue the training run"),
    ("the sync was paused", "the sync was resumed"),
    ("stop the download", "finish the download"),
    ("stop the download", "resume the download"),
    ("begin the import", "complete the import"),
]


@pytest.mark.parametrize("a, b", OTHER_PHASE)
def test_two_phases_of_one_activity_are_two_requests(a, b):
    x, y = _both(a, b)
    assert x is not None and y is not None


SAME_PHASE = [
    ("pause the nightly backup job", "suspend the nightly backup job"),
    ("resume the nightly backup job", "continue the nightly backup job"),
    ("finish the quarterly report", "complete the quarterly report"),
    ("start the timer", "begin the timer"),
    ("pause the sync", "pausing the sync"),
]


@pytest.mark.parametrize("a, b", SAME_PHASE)
def test_one_phase_reworded_is_one_request(a, b):
    assert _both(a, b) == (None, None)


def test_phases_are_read_from_any_inflection():
    assert lexicon.phase("paused") == lexicon.phase("pausing") == "break"
    assert lexicon.opposite("resumed", "pauses")
    assert not lexicon.opposite("suspended", "paused")
    assert lexicon.phase("table") == ""


def test_an_opposite_word_still_cancels_a_negation():
    assert _both("the field is not mandatory", "the field is optional") == (None, None)


# A verb of a phase with few verbs (a break, going on, starting over) swapped for a verb outside it,
# in the same place of an otherwise equal request, names another action.
@pytest.mark.parametrize("a, b", [
    ("pause the music", "play the music"),
    ("pause the nightly backup job", "run the nightly backup job"),
    ("resume the download", "retry the download"),
    ("restart the render", "cancel the render"),
])
def test_a_rare_phase_verb_swapped_for_another_verb_is_refused(a, b):
    x, y = _both(a, b)
    assert x is not None and y is not None


# Starting has many verbs: their swap is a rewording, for this check.
@pytest.mark.parametrize("a, b", [
    ("start the server", "launch the server"),
    ("resume playback", "continue playback"),
])
def test_starting_reworded_passes(a, b):
    assert _both(a, b) == (None, None)
