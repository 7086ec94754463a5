"""A list's members in another order are one request; the same words trading parts are not.

Written for these tests (the class: coordinated members, "x, y and z", "a versus b", reordered).
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import contrast

SAME = [
    ("check memory, disk and cpu usage on db-7", "on db-7, check cpu, disk and memory usage"),
    ("send the invoice, the receipt and the contract to the accountant",
     "send the contract, the invoice and the receipt to the accountant"),
    ("weigh the costs and benefits of leasing versus owning a van",
     "weigh the benefits and costs of owning versus leasing a van"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_list_members_in_another_order_are_one_request(a, b):
    assert contrast(a, b) is None
    assert contrast(b, a) is None


DIFFERENT = [
    ("move the invoice from drafts to archive", "move the invoice from archive to drafts"),
    ("make the red team defend and the blue team attack", "make the blue team defend and the red team attack"),
    ("promote db-2, demote db-1", "promote db-1, demote db-2"),
    ("check memory, disk and cpu usage on db-7", "check memory, disk and cpu usage on db-8"),
]


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_members_that_trade_parts_are_still_refused(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None
