"""The request guard covers every way a page can send (issue 29 item 1, by construction).

A plan is recorded on a one-form site (tests/replay/probe_site.py) whose "Save" button posts the
note; each changed version makes the same click do one more thing the recording never did, by
another path out of the browser: a dedicated or shared worker, a keepalive fetch, a beacon, an
OPTIONS or PUT, a popup (with and without an opener, or a target=_blank link), a WebSocket, an iframe
sent to another origin, a same-origin iframe that posts, a navigation to another origin, a redirect
of the recorded POST to another endpoint, a service worker, a timer that posts before the first
step, and a keepalive fetch sent on pagehide through the page's own saved ``fetch`` as the click
leaves the page (a refused navigation is answered 204: the page stays and sends nothing), or as a
blank popup it opened and scripted closes (Playwright lets such a request go unrouted: only the
guard's backstop sees it), or a blank popup the click opens and at once makes send (a fetch, a beacon,
a written script, a navigation; closed at once, or later): the popup's first requests leave through
its opener's loader before anything is attached to the popup, and Playwright holds them unrouted; the
opener's backstop judges them. So do a blank iframe that beacons and is removed at once, and a
redirect the browser follows on its own (of a recorded navigation, or the second hop of a chain).
The server logs every request it receives: nothing may reach ``/evil``, and the replay stops with
``unexpected_request`` (the service worker cannot start: replay runs only in contexts that block
them). A plan whose click opens a blank popup (a receipt) still replays to the end.
Real Chromium, real server.
"""

from __future__ import annotations

import time

import pytest

from actioncache import open_store
from actioncache.replay import FallbackReason, PlanCache
from actioncache.replay.browser import PageRecorder, replay_plan, steps

from .browser_support import sync_chromium
from .probe_site import ATTACKS, ProbeSite

pytestmark = pytest.mark.xdist_group(name="replay_probe_site")


@pytest.fixture(scope="module")
def site_and_browser():
    with ProbeSite() as site, sync_chromium() as browser:
        yield site, browser


def record(site: ProbeSite, browser, plans: PlanCache, *, wait_first: bool = False, wait_after: float = 0.0,
           variant: str = "base") -> None:
    site.variant = variant
    context = browser.new_context(service_workers="block")
    try:
        page = context.new_page()
        page.goto(site.url + "/page")
        rec = PageRecorder(page, inputs={"note": "hello"})
        if wait_first:
            rec.wait(2.5)
        rec.fill("[name=note]", "hello")
        rec.click("#go")
        if wait_after:
            rec.wait(wait_after)
        rec.complete()
        rec.save(plans, "save the note")
    finally:
        context.close()


def replay(site: ProbeSite, browser, plans: PlanCache, variant: str, **context_options):
    site.variant = variant
    site.received.clear()
    context = browser.new_context(**({"service_workers": "block"} | context_options))
    try:
        page = context.new_page()
        page.goto(site.url + "/page")
        outcome = replay_plan(plans, page, "save the note")
        time.sleep(0.5)  # what was let out has reached the server by now (a popup's form, a worker's fetch)
        site.at_close = len(site.received)
        return outcome
    finally:
        context.close()


SEND_ON_CLOSE = ("own-keepalive-on-leave", "widget-own-keepalive")
ATTACKED = sorted(v for v in ATTACKS if v not in ("base", "service-worker"))


@pytest.mark.parametrize("variant", ATTACKED)
def test_a_request_the_recording_did_not_send_never_reaches_the_server(site_and_browser, tmp_path, variant):
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        record(site, browser, plans, wait_first=variant == "timer")
        outcome = replay(site, browser, plans, variant)
        # A page that sends from pagehide sends again when the test closes it, after the replay returned it:
        # not the replay's doing (the guard is lifted when replay_plan returns).
        evil = site.evil_before_close() if variant in SEND_ON_CLOSE else site.evil()
        assert evil == [], f"{variant}: {[(r.method, r.path) for r in evil]} reached the server"
        assert outcome.reason == FallbackReason.UNEXPECTED_REQUEST and not outcome.finished, outcome.message
    finally:
        plans.store.close()


@pytest.mark.parametrize("variant", ["blank-popup", "blank-popup-later"])
def test_a_popup_the_click_opens_and_closes_sends_nothing_unjudged(site_and_browser, tmp_path, variant):
    """A blank popup (no navigation request to refuse it by) that the click scripts and closes 0.5 s
    later, while the plan's next step (a wait) runs: as it closes it sends from its own saved fetch,
    which Playwright lets go unrouted (it reached /evil before). Or one the click makes post 300 ms
    later (through its opener's loader, held unrouted by Playwright: it reached /evil before). The
    backstop refuses both. (The plan waits after the click: a request sent once the last step has
    settled is after the guard, a documented hole of its own.)"""
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        record(site, browser, plans, wait_after=1.5)
        outcome = replay(site, browser, plans, variant)
        assert site.evil() == [], [(r.method, r.path) for r in site.evil()]
        assert outcome.reason == FallbackReason.UNEXPECTED_REQUEST and not outcome.finished, outcome.message
    finally:
        plans.store.close()


def test_a_refusal_judged_after_the_last_step_stopped_waiting_still_stops_the_run(site_and_browser, tmp_path,
                                                                                monkeypatch):
    """The server answers the recorded POST with a redirect to /evil 3 s late, after the replay has
    stopped waiting for its last step (a load-dependent moment, made certain here by shortening the
    step's longest wait): the guard is still fetching when it comes off, the drivers let that judgement
    end, and its refusal must still stop the run; the outcome never says finished beside a refusal."""
    monkeypatch.setattr(steps, "SETTLE_MAX_S", 0.3)
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        record(site, browser, plans)
        outcome = replay(site, browser, plans, "slow-redirect")
        assert site.evil() == [], [(r.method, r.path) for r in site.evil()]
        assert any("/evil" in b for b in outcome.blocked), outcome.blocked
        assert outcome.reason == FallbackReason.UNEXPECTED_REQUEST and not outcome.finished, outcome.message
    finally:
        plans.store.close()


def test_the_unchanged_site_replays_and_its_post_carries_what_this_run_typed(site_and_browser, tmp_path):
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        record(site, browser, plans)
        outcome = replay(site, browser, plans, "base")
        assert outcome.finished and outcome.reason is None, outcome.message
        assert [r.body for r in site.received if r.path == "/save"] == [b"note=hello"]
    finally:
        plans.store.close()


@pytest.mark.parametrize("variant", ["nav-redirect", "chain-redirect"])
def test_a_redirect_the_browser_follows_on_its_own_is_judged_too(site_and_browser, tmp_path, variant):
    """The recorded click saves and goes to /done (``nav``: a script's navigation; ``chain``: a form
    post the server answers 303 to /done). Now /done answers 302 to /evil: the browser follows a
    redirect it was answered without routing the next request (the redirect of a recorded GET
    navigation; the second hop of a chain), and the guard's backstop judges it."""
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        record(site, browser, plans, variant=variant.replace("-redirect", "-base"))
        outcome = replay(site, browser, plans, variant.replace("-redirect", "-base"))
        assert outcome.finished and [r.path for r in site.received if r.path in ("/save", "/done")] == \
            ["/save", "/done"], outcome.message  # the recorded chain replays
        outcome = replay(site, browser, plans, variant)
        assert site.evil() == [], [(r.method, r.path) for r in site.evil()]
        assert outcome.reason == FallbackReason.UNEXPECTED_REQUEST and not outcome.finished, outcome.message
        assert any("/evil" in b for b in outcome.blocked), outcome.blocked
    finally:
        plans.store.close()


def test_a_plan_whose_click_opens_a_blank_popup_still_replays(site_and_browser, tmp_path):
    """No false refusal: the recorded click opened a receipt in a blank popup (its requests, reads,
    pass the opener's backstop like the page's own); the replay finishes and saves once."""
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        record(site, browser, plans, variant="receipt-popup")
        outcome = replay(site, browser, plans, "receipt-popup")
        assert outcome.finished and outcome.reason is None, outcome.message
        assert [r.body for r in site.received if r.path == "/save"] == [b"note=hello"]
        assert [r.path for r in site.received if r.path == "/logo.png"] == ["/logo.png"]  # the popup ran
    finally:
        plans.store.close()


def test_a_context_that_allows_service_workers_is_not_used(site_and_browser, tmp_path):
    """A service worker's requests bypass routing: a replay refuses such a context before acting."""
    site, browser = site_and_browser
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"))
    try:
        record(site, browser, plans)
        outcome = replay(site, browser, plans, "service-worker", service_workers="allow")
        assert outcome.reason == FallbackReason.UNGUARDED_PAGE and outcome.served == 0
        assert "service_workers='block'" in outcome.message
        assert [r for r in site.received if r.method != "GET"] == []
        outcome = replay(site, browser, plans, "service-worker")  # blocked: registering does nothing
        assert site.evil() == [] and outcome.finished
    finally:
        plans.store.close()
