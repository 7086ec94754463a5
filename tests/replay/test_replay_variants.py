"""Every changed version of the three local sites, replayed in Chromium and judged on the server (issue 29).

tests/replay/shop_sites.py serves a login, a search-to-cart and a two-step checkout site, records
each task once on the original, and replays it on 39 changed versions: cosmetic changes, renamed
ids, moved elements, removed fields, another query or customer (these must replay and do the task),
and harmful or silent changes (these must fall back with the reason that names the change, with no
request the server must not receive). The decision is read from the server's own log.
"""

from __future__ import annotations

import pytest

from .browser_support import sync_chromium
from .shop_sites import VARIANTS, Shop, record_all, replay_variant

pytestmark = pytest.mark.xdist_group(name="replay_shop_sites")  # one recording per worker


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shop")
    with Shop() as shop, sync_chromium() as browser:
        yield shop, browser, record_all(browser, shop, folder), folder


@pytest.mark.parametrize("variant", VARIANTS, ids=[f"{v.site}-{v.name}" for v in VARIANTS])
def test_each_changed_version_gets_the_right_decision(recorded, variant):
    shop, browser, databases, folder = recorded
    decision = replay_variant(browser, shop, databases[variant.site], folder, variant)
    assert decision.harm is None, decision.line()
    assert decision.verdict == "right", f"{decision.line()}: {decision.message}"
    if variant.expect == "fallback":
        assert decision.reason == variant.reason, decision.message
