"""The same browser replay through Playwright's async API (issues 14 and 29: async and sync both work).

Real Chromium (Debian's) on a site served on loopback by the test; see test_browser_replay.py.
"""

from __future__ import annotations

import asyncio

from actioncache import open_store
from actioncache.replay import FallbackReason, PlanCache

from .browser_support import require_chromium
from .loopback_site import PASSWORD, Site
from .shop_sites import PASSWORD as SHOP_PASSWORD
from .shop_sites import PIN, VARIANTS, Shop


def test_async_record_and_replay_login_and_search(tmp_path):
    path = require_chromium()
    from playwright.async_api import async_playwright

    from actioncache.replay.browser import AsyncPageRecorder, areplay_plan, asnapshot_page, chromium_launch_options

    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))

    async def main(site: Site) -> None:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(**chromium_launch_options(path))
            page = await browser.new_page(service_workers="block")
            await page.goto(site.url + "/login")
            assert [e.attributes.get("label") for e in (await asnapshot_page(page)).elements[:2]] == \
                ["User name", "Password"]
            rec = AsyncPageRecorder(page, inputs={"user": "alice"})
            await rec.fill("#user", "alice")
            await rec.fill(page.locator("#pw"), PASSWORD)
            await rec.click(await page.query_selector("button[type=submit]"))
            rec.complete()
            assert rec.save(plans, "log in") and page.url.endswith("/account")

            site.version = 2
            await page.goto(site.url + "/login")
            outcome = await areplay_plan(plans, page, "log in", secrets={"password": PASSWORD})
            assert outcome.finished and page.url.endswith("/account")
            assert site.logins[-1] == {"user": "alice", "password": PASSWORD}

            await page.goto(site.url + "/search")
            rec = AsyncPageRecorder(page, inputs={"query": "lamp"})
            await rec.fill("input[name=q]", "lamp")
            await rec.wait(0.05)
            await rec.click("form button")
            rec.complete()
            rec.save(plans, "find lamps")
            await page.goto(site.url + "/search")
            outcome = await areplay_plan(plans, page, "find lamps")
            assert outcome.finished and [a.action_type for a in outcome.executed] == [
                "input_text", "wait", "click", "complete"]
            await page.wait_for_selector("#results[data-state=done]")
            assert (await page.inner_text("#results")).splitlines() == ["Brass desk lamp", "Reading lamp", "Floor lamp"]

            site.version = 3
            await page.goto(site.url + "/settings")
            outcome = await areplay_plan(plans, page, "find lamps", url=site.url + "/search", wait_s=0.2)
            assert outcome.reason == FallbackReason.ELEMENT_MISSING
            await browser.close()

    with Site() as site:
        asyncio.run(main(site))


def test_the_async_api_guards_requests_too(tmp_path):
    require_chromium()
    from playwright.async_api import async_playwright

    from actioncache.replay.browser import AsyncPageRecorder, areplay_plan, chromium_launch_options

    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))

    async def main(shop: Shop) -> None:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(**chromium_launch_options())
            page = await browser.new_page(service_workers="block")
            shop.reset(next(v for v in VARIANTS if v.site == "login" and v.name == "same"))
            await page.goto(shop.url + "/login")
            rec = AsyncPageRecorder(page, inputs={"user": "alice"})
            await rec.fill("[name=user]", "alice")
            await rec.fill("[name=password]", SHOP_PASSWORD)
            await rec.fill("[name=pin]", PIN)
            await rec.click("button[type=submit]")
            rec.complete()
            assert rec.save(plans, "log in")
            context = await browser.new_context(service_workers="block")
            page = await context.new_page()
            shop.reset(next(v for v in VARIANTS if v.site == "login" and v.name == "beacon-delete"))
            await page.goto(shop.url + "/login")
            outcome = await areplay_plan(plans, page, "log in", secrets={"password": SHOP_PASSWORD, "pin": PIN})
            assert outcome.reason == FallbackReason.UNEXPECTED_REQUEST and not outcome.finished
            assert shop.posts("/account/delete") == [] and len(shop.logins) == 1
            await browser.close()

    with Shop() as shop:
        asyncio.run(main(shop))


def test_the_async_api_judges_what_playwright_lets_go_unrouted(tmp_path):
    """The async driver's backstop: a blank popup the click opens, scripts and closes sends a keepalive
    fetch on pagehide through its own saved ``fetch`` (Playwright's server lets it go without routing
    it); the popup's backstop refuses it, as in the sync driver (tests/replay/test_replay_guard_paths.py).
    And a blank popup the click opens and at once makes post (its requests leave through the opener's
    loader, which Playwright holds unrouted): the opener's backstop refuses them, with no second copy."""
    path = require_chromium()
    from playwright.async_api import async_playwright

    from actioncache.replay.browser import AsyncPageRecorder, areplay_plan, chromium_launch_options

    from .probe_site import ProbeSite

    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))

    async def main(site: ProbeSite) -> None:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(**chromium_launch_options(path))
            context = await browser.new_context(service_workers="block")
            page = await context.new_page()
            site.variant = "base"
            await page.goto(site.url + "/page")
            rec = AsyncPageRecorder(page, inputs={"note": "hello"})
            await rec.fill("[name=note]", "hello")
            await rec.click("#go")
            await rec.wait(1.5)  # the popup closes while this step runs
            rec.complete()
            rec.save(plans, "save the note")
            site.variant = "blank-popup"
            site.received.clear()
            await page.goto(site.url + "/page")
            outcome = await areplay_plan(plans, page, "save the note")
            await asyncio.sleep(0.5)
            site.at_close = len(site.received)  # (closing it makes the page send again, its user's business)
            assert site.evil_before_close() == [], [(r.method, r.path) for r in site.evil_before_close()]
            assert outcome.reason == FallbackReason.UNEXPECTED_REQUEST and not outcome.finished, outcome.message
            # A blank popup the click opens and at once makes post: the opener's backstop judges it.
            for variant in ("blank-popup-fetch", "blank-popup-closed"):
                site.variant = variant
                site.received.clear()
                other = await browser.new_context(service_workers="block")
                page = await other.new_page()
                await page.goto(site.url + "/page")
                outcome = await areplay_plan(plans, page, "save the note")
                await asyncio.sleep(0.5)
                await other.close()
                assert site.evil() == [], (variant, [(r.method, r.path) for r in site.evil()])
                assert outcome.reason == FallbackReason.UNEXPECTED_REQUEST and not outcome.finished, outcome.message
            await browser.close()

    with ProbeSite() as site:
        asyncio.run(main(site))
    plans.store.close()
