"""What must be done against what may, can or should be: another modal is another rule or question.

The class: both sides say a modal of what the request states, and they differ: obligation (must, have
to, need to, required to), advice (should, ought to), permission or ability (may, can, could, might).
"must" and "should" were one kind, and a modal after a noun subject ("the report must include") or
after "you" was not read at all, so these pairs were served; now the ``obligation`` rule refuses
them, and no verifier settles it. Beside them: a polite "can you" / "could you", "how can I" for "how
do I", "I need to X" for "X", and one modal said in the passive stay one request. Written for these
tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.semantic.guard import GATES, Pair, contrast
from actioncache.semantic.guard.registry import Doubt

SWAPPED = [
    ("the report must include the appendix", "the report may include the appendix"),
    ("all PRs must have a reviewer", "all PRs should have a reviewer"),
    ("employees must wear badges", "employees can wear badges"),
    ("you need to sign the NDA", "you may sign the NDA"),
    ("should I pay the invoice", "must I pay the invoice"),
    ("you must pay the invoice", "you should pay the invoice"),
    ("passwords must be at least 12 characters", "passwords should be at least 12 characters"),
    ("contractors have to submit timesheets weekly", "contractors might submit timesheets weekly"),
    ("the team ought to review the budget", "the team must review the budget"),
]


def _obligation(a: str, b: str) -> bool:
    return GATES["obligation"](Pair(a, b)) is not None


@pytest.mark.parametrize("a, b", SWAPPED)
def test_another_modal_is_refused_and_not_a_doubt(a, b):
    assert _obligation(a, b) and _obligation(b, a)
    assert contrast(a, b) is not None
    assert not isinstance(GATES["obligation"](Pair(a, b)), Doubt)  # no verifier may settle it


SAME = [
    ("can you pay the invoice", "pay the invoice"),
    ("could you pay the invoice", "would you pay the invoice"),
    ("how can I pay the invoice", "how do I pay the invoice"),
    ("where can I buy a ticket", "where do I buy a ticket"),
    ("I need to book a flight to paris", "book a flight to paris"),
    ("you must rotate the API keys", "the API keys must be rotated"),
    ("could you please cancel my 3pm meeting", "cancel my 3pm meeting"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_politeness_and_one_modal_reworded_are_one_request(a, b):
    assert contrast(a, b) is None
    assert contrast(b, a) is None


_KINDS = {"must": "o", "has to": "o", "needs to": "o", "should": "a", "ought to": "a", "may": "p", "can": "p",
          "might": "p"}


@given(st.sampled_from(sorted(_KINDS)), st.sampled_from(sorted(_KINDS)),
       st.sampled_from(["the contractor", "every employee", "the vendor"]),
       st.sampled_from(["sign the contract", "wear a badge", "include the appendix", "review the budget"]))
def test_any_two_modals_of_another_kind_differ(m1, m2, subject, act):
    a, b = f"{subject} {m1} {act}", f"{subject} {m2} {act}"
    assert _obligation(a, b) == (_KINDS[m1] != _KINDS[m2])
