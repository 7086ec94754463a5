"""Plan choice (issue 14): unservable plans lose trust, URL normalisation, invalidate(reason=)."""

from __future__ import annotations

import pytest

from actioncache.replay import Action, FallbackReason, PlanCache, UrlRule

from .conftest import GOAL, SEARCH_URL, search_plan

SIG = (SEARCH_URL, GOAL)


def test_a_newer_plan_with_an_unsupported_step_does_not_block_the_older_good_one(store, v1):
    plans = PlanCache(store)
    good = search_plan(v1)
    good[0].text = "older, good"
    good_id = plans.record(SIG, good, completed=True)
    bad = search_plan(v1)
    bad.insert(2, Action("solve_captcha"))
    bad_id = plans.record(SIG, bad, completed=True)

    result = plans.lookup(SIG, v1)
    assert result.plan_id == good_id and result.reason is None
    assert result.actions[0].text == "older, good"
    trust = {h["plan_id"]: h["trust"] for h in plans.history_of(SIG)}
    assert trust == {bad_id: pytest.approx(0.7), good_id: 1.0}
    # It keeps losing trust each time it is passed over, until it is dropped.
    for _ in range(4):
        assert plans.lookup(SIG, v1).plan_id == good_id
    assert [h["plan_id"] for h in plans.history_of(SIG)] == [good_id]
    assert plans.metrics()["dropped_untrusted"] == 1


@pytest.mark.parametrize("spoil", ["intention", "not-completed"])
def test_other_plan_faults_also_fall_through_to_the_older_plan(store, v1, spoil):
    plans = PlanCache(store)
    good_id = plans.record(SIG, search_plan(v1), completed=True)
    bad = search_plan(v1)
    if spoil == "intention":
        bad[3].intention = "click what looks right"
    plans.record(SIG, bad, completed=True)
    if spoil == "not-completed":
        import json

        from actioncache import Entry
        key = sorted(store.find(pattern="plan:*:p:*"))[-1]
        entry = store.get(key)
        body = json.loads(entry.value[1:])
        body["completed"] = False
        store.put(Entry(key, b"j" + json.dumps(body).encode(), dict(entry.metadata), entry.created_at,
                        entry.expires_at))
    assert plans.lookup(SIG, v1).plan_id == good_id


def test_when_no_plan_can_be_served_the_newest_reason_is_reported(store, v1):
    plans = PlanCache(store)
    for kind in ("upload_file", "extract"):
        plan = search_plan(v1)
        plan.insert(1, Action(kind))
        plans.record(SIG, plan, completed=True)
    result = plans.lookup(SIG, v1)
    assert result.actions == [] and result.reason == FallbackReason.UNSUPPORTED_ACTION_TYPE
    assert "extract" in result.message  # the newest plan's step
    assert [h["trust"] for h in plans.history_of(SIG)] == [pytest.approx(0.7)] * 2


def test_an_element_missing_does_not_punish_older_plans(store, v1):
    """A page-dependent failure stays with the plan that was tried (the page may be the odd one)."""
    from .conftest import load_page

    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    plans.record(SIG, search_plan(v1), completed=True)
    results = load_page("results.html")
    assert plans.lookup(SIG, results).reason == FallbackReason.ELEMENT_MISSING
    assert [h["trust"] for h in plans.history_of(SIG)] == [pytest.approx(0.7), 1.0]


@pytest.mark.parametrize("url", [
    "http://shop.example/search?q=lamp&sid=1",
    "https://www.shop.example/search?sid=2&q=desk&utm_source=newsletter&utm_campaign=may",
    "https://shop.example/search?q=x&sid=3&gclid=Cj0KCQ",
])
def test_similar_urls_find_the_plan(store, v1, url):
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    assert len(plans.retrieve((url, GOAL), v1)) == 5


def test_a_strict_url_rule_keeps_them_apart(store, v1):
    plans = PlanCache(store, url_rule=UrlRule(ignore_scheme=False, ignore_www=False, ignore_params=()))
    plans.record(SIG, search_plan(v1), completed=True)
    assert plans.lookup(("http://shop.example/search?q=a&sid=1", GOAL), v1).reason == FallbackReason.NO_PLAN
    assert plans.lookup(("https://www.shop.example/search?q=a&sid=1", GOAL), v1).reason == FallbackReason.NO_PLAN
    assert plans.lookup((SEARCH_URL + "&utm_source=x", GOAL), v1).reason == FallbackReason.NO_PLAN
    assert plans.retrieve(("https://shop.example/search?q=a&sid=1", GOAL), v1)
    with pytest.raises(TypeError, match="UrlRule"):
        PlanCache(store, url_rule={"ignore_www": False})


def test_invalidate_records_its_reason_in_the_metrics(store, v1):
    plans = PlanCache(store, shared_metrics=True)
    plans.record(SIG, search_plan(v1), completed=True)
    plans.record(("https://shop.example/cart", "check out"), [Action("complete")], completed=True)
    assert plans.invalidate(SIG, reason="site redesign") == 1
    assert plans.invalidate(reason="  wrong   tenant ") == 1
    assert plans.invalidate(SIG) == 0
    metrics = plans.metrics()
    assert metrics["invalidations"] == 3 and metrics["invalidated"] == 2
    assert metrics["invalidate_reasons"] == {"site redesign": 1, "wrong tenant": 1, "unspecified": 1}
    assert plans.metrics(shared=True)["invalidate_reasons"] == metrics["invalidate_reasons"]
    with pytest.raises(TypeError, match="reason"):
        plans.invalidate(SIG, reason=3)


def test_begin_validates_one_action_at_a_time_and_counts_once(store, v1):
    """The browser's way in: each action is checked against the page as it is when it runs."""
    from .conftest import load_page

    plans = PlanCache(store)
    plan_id = plans.record(SIG, search_plan(v1), completed=True)
    v3 = load_page("search_v3.html")  # the Search button reads "Find"
    with plans.begin(SIG) as run:
        assert run.plan_id == plan_id and run.ready(v1)
        steps = [run.next(v1), run.next(load_page("search_v2.html")), run.next(v1)]
        assert [s[0].action_type for s in steps] == ["input_text", "select_option", "click"]
        assert not run.ready(v3) and run.next(v3) is None
        assert run.reason == FallbackReason.ELEMENT_MISSING and "action 3" in run.message
        assert run.served == 3 and not run.finished and run.next(v1) is None
    metrics = plans.metrics()
    assert metrics["retrievals"] == 1 and metrics["partial_hits"] == 1
    assert metrics["actions"]["click"] == {"replayed": 1, "missed": 1, "hit_rate": 0.5}
