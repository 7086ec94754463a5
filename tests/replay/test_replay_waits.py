"""How long a browser replay looks for an element that is not there (issue 29, fast fallback).

No browser and no real clock: the replay's steps are driven by hand, a fake clock moves on each
sleep, and the page says how long its DOM has been still. The figures in real Chromium are in
bench/bench_replay.py (the fallback row), not here: the suite asserts no timings.
"""

from __future__ import annotations

import inspect
import time

import pytest

from actioncache import open_store
from actioncache.replay import Action, FallbackReason, PlanCache, page_from_html
from actioncache.replay.browser import replay_plan, steps
from actioncache.replay.browser.steps import Facts, Guard, Outcome, Prepare, Settle, Sleep, Snapshot, replay_steps

SIG_URL, GOAL = "https://shop.example/form", "send the form"
FORM = "<form><input name=a><button type=button>Send</button></form>"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def drive(plans, pages, clock, **options):
    """Answer the replay's requests: the snapshot is ``pages(clock time since start)``; sleeps move the clock."""
    start = clock.now
    gen = replay_steps(plans, GOAL, SIG_URL, **options)
    answer = None
    snapshots = 0
    while True:
        try:
            request = gen.send(answer)
        except StopIteration as done:
            return done.value, clock.now - start, snapshots
        answer = None
        if isinstance(request, Snapshot):
            snapshots += 1
            answer = pages(clock.now - start)
        elif isinstance(request, Sleep):
            clock.now += request.seconds
        elif isinstance(request, Outcome):
            answer = {"url": SIG_URL, "captcha": False, "controlled": False}
        elif isinstance(request, Facts):
            answer = {"service_workers_blocked": True}
        elif isinstance(request, Prepare):
            answer = (pages(clock.now - start), request.index)
        elif isinstance(request, (Guard, Settle)):
            answer = None
        else:
            clock.now += 0.01  # an action


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(time, "monotonic", fake)
    return fake


@pytest.fixture
def plans():
    cache = PlanCache(open_store("memory://"))
    page = page_from_html(FORM)
    box, button = page.elements
    cache.record((SIG_URL, GOAL), [Action.for_element("input_text", box, text="x"),
                                   Action.for_element("click", button), Action("complete")], completed=True)
    return cache


def page(html: str, idle_ms: float | None):
    out = page_from_html(html, url=SIG_URL)
    out.idle_ms = idle_ms
    return out


def test_the_default_wait_is_well_under_five_seconds():
    for fn in (replay_plan, replay_steps):
        assert inspect.signature(fn).parameters["wait_s"].default == steps.WAIT_S <= 2.0
    assert steps.QUIET_S < steps.WAIT_S


def test_a_still_page_is_given_up_on_after_the_quiet_time(plans, clock):
    without_button = "<form><input name=a></form>"
    outcome, waited, snapshots = drive(plans, lambda t: page(without_button, idle_ms=60_000), clock)
    assert outcome.reason == FallbackReason.ELEMENT_MISSING and outcome.served == 1
    assert steps.QUIET_S <= waited < steps.QUIET_S + 0.3 and snapshots < 10


def test_a_page_that_keeps_changing_is_waited_for_up_to_wait_s(plans, clock):
    outcome, waited, _ = drive(plans, lambda t: page("<form><input name=a></form>", idle_ms=0), clock, wait_s=1.5)
    assert outcome.reason == FallbackReason.ELEMENT_MISSING and 1.5 <= waited < 1.8


def test_an_element_that_renders_late_on_a_busy_page_is_still_found(plans, clock):
    """Past the quiet time: the DOM kept changing (a page still rendering), so the replay kept looking."""
    late = lambda t: page(FORM if t >= 0.8 else "<form><input name=a></form>", idle_ms=t * 1000 % 200)  # noqa: E731
    outcome, waited, _ = drive(plans, late, clock)
    assert outcome.finished and outcome.reason is None and waited >= 0.8


@pytest.mark.parametrize("option", [{"wait_s": float("nan")}, {"wait_s": float("inf")}, {"wait_s": -1},
                                    {"quiet_s": -1}, {"quiet_s": float("nan")}])
def test_a_wait_that_is_not_a_finite_number_of_seconds_is_refused(option):
    """attack-replay: wait_s=inf on a ticking page would wait forever; nan and negatives meant nothing."""
    gen = replay_steps(PlanCache(open_store("memory://")), GOAL, SIG_URL, **option)
    with pytest.raises(ValueError, match="finite number of seconds"):
        next(gen)
