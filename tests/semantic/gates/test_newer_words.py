"""Everyday words newer than WordNet ("repo", "app", "signup", "fyi") are words, not names; program
and product names stay names.

Written for these tests. The class: a chattier or newer wording of one request says a word WordNet 3.0
never listed; read as a name on one side only, it refused the pair ("entity") although it names nothing.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import contrast

SAME = [
    ("I'm working in the payments repo. run the tests", "im in payments rn. run the tests"),
    ("fyi shellfish allergy. suggest a dinner", "I'm allergic to shellfish. suggest a dinner"),
    ("tbh the build is slow, speed it up", "the build is slow, speed it up"),
    ("check the repo for secrets", "check the repository for secrets"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_a_newer_everyday_word_is_no_name(a, b):
    assert contrast(a, b) is None
    assert contrast(b, a) is None


DIFFERENT = [
    ("restart nginx on the web box", "restart apache on the web box"),
    ("deploy the app to staging", "deploy the api to staging"),
    ("our service listens on 8080", "our app listens on 8080"),
    ("install lodash as a dev dependency", "install ramda as a dev dependency"),
]


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_a_program_or_product_name_is_still_a_name(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None
