"""PlanCache rules (seed 003 / issue 6 item 3) on real stores and real HTML pages."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Entry, open_store
from actioncache.replay import (
    Action,
    FallbackReason,
    PlanCache,
    PlanSignature,
    element_fingerprint,
)

from .conftest import FIXTURES, GOAL, SEARCH_URL, find, load_page, search_plan

# Same task, another search term and session: the URL pattern is the same.
NEXT_URL = "https://SHOP.example/search?sid=0042&q=reading+lamp#results"
SIG = (SEARCH_URL, GOAL)
NEXT_SIG = (NEXT_URL, GOAL)


def test_replay_rebinds_every_element_on_a_changed_page(store, v1):
    plans = PlanCache(store)
    plan_id = plans.record(SIG, search_plan(v1), completed=True)
    assert plan_id

    v2 = load_page("search_v2.html", url=NEXT_URL)
    result = plans.lookup(NEXT_SIG, v2)

    assert result.reason is None and result.plan_id == plan_id
    assert [a.action_type for a in result.actions] == ["input_text", "select_option", "click", "click", "complete"]
    # v2 has a cookie banner and a new link before the form, new DOM ids and classes: every id moved.
    expected = [find(v2, "input", name="q"), find(v2, "select", name="sort"),
                find(v2, "input", name="in_stock"), find(v2, "button", type="submit")]
    assert [a.element_id for a in result.actions[:4]] == [e.id for e in expected]
    assert [a.element_id for a in result.actions[:4]] != [a.element_id for a in search_plan(v1)[:4]]
    assert result.actions[0].element["attributes"]["id"] == "search-input-x7f"
    assert result.actions[0].text == "desk lamp"
    assert result.actions[-1].element_id is None


def test_only_completed_runs_are_kept(store, v1):
    plans = PlanCache(store)
    assert plans.record(SIG, search_plan(v1), completed=False) is None
    assert plans.history_of(SIG) == []
    result = plans.lookup(SIG, v1)
    assert result.actions == [] and result.reason == FallbackReason.PLAN_NOT_COMPLETED
    # A task never seen at all is "no plan".
    other = plans.lookup(("https://shop.example/cart", GOAL), v1)
    assert other.actions == [] and other.reason == FallbackReason.NO_PLAN
    # Once a run completes, it is served.
    assert plans.record(SIG, search_plan(v1), completed=True)
    assert len(plans.retrieve(SIG, v1)) == 5
    assert plans.stats()["rejected_incomplete"] == 1


def test_a_stored_plan_not_marked_completed_is_not_replayed(store, v1):
    """A plan entry written by something else without completed=True is refused, not trusted."""
    plans = PlanCache(store)
    plan_id = plans.record(SIG, search_plan(v1), completed=True)
    key = next(k for k in store.find(pattern="plan:*") if k.endswith(plan_id))
    entry = store.get(key)
    body = json.loads(entry.value[1:])
    body["completed"] = False
    store.put(Entry(key, b"j" + json.dumps(body).encode(), dict(entry.metadata), entry.created_at, entry.expires_at))
    assert plans.lookup(SIG, v1).reason == FallbackReason.PLAN_NOT_COMPLETED


def test_newest_completed_plan_wins_and_history_is_short(store, v1):
    plans = PlanCache(store, history=2)
    texts = ["first", "second", "third"]
    ids = []
    for text in texts:
        plan = search_plan(v1)
        plan[0].text = text
        ids.append(plans.record(SIG, plan, completed=True))
    assert plans.retrieve(SIG, v1)[0].text == "third"
    assert [h["plan_id"] for h in plans.history_of(SIG)] == [ids[2], ids[1]]


def test_signature_is_url_pattern_plus_goal(store, v1):
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    assert plans.retrieve(NEXT_SIG, v1)  # other query values, case, fragment: same pattern
    assert plans.retrieve({"url": SEARCH_URL, "goal": "  " + GOAL.replace(" ", "   ") + " "}, v1)
    assert plans.lookup((SEARCH_URL, "Search for a floor lamp"), v1).reason == FallbackReason.NO_PLAN
    assert plans.lookup(("https://shop.example/deals?q=lamp", GOAL), v1).reason == FallbackReason.NO_PLAN
    # An extra query parameter is another page shape.
    assert plans.lookup((SEARCH_URL + "&page=2", GOAL), v1).reason == FallbackReason.NO_PLAN


def test_element_missing_stops_the_replay_there(store, v1):
    """v3 renamed the Search button to Find: the actions before it are served, then the agent plans."""
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    v3 = load_page("search_v3.html")
    result = plans.lookup(SIG, v3)
    assert [a.action_type for a in result.actions] == ["input_text", "select_option", "click"]
    assert result.reason == FallbackReason.ELEMENT_MISSING and result.stopped_at == 3
    metrics = plans.stats()
    assert metrics["partial_hits"] == 1 and metrics["stop_reasons"] == {"element_missing": 1}
    assert metrics["actions"]["click"] == {"replayed": 1, "missed": 1, "hit_rate": 0.5}


def test_element_missing_on_the_first_action_is_a_fallback(store, v1):
    results = load_page("results.html", url="https://shop.example/results?q=lamp")
    plans = PlanCache(store)
    sig = ("https://shop.example/results?q=lamp", "add the brass lamp to the cart")
    plans.record(sig, [Action.for_element("click", find(results, "button", aria_label="Add Brass desk lamp to cart")),
                       Action("complete")], completed=True)
    result = plans.lookup(sig, v1)
    assert result.actions == [] and result.reason == FallbackReason.ELEMENT_MISSING
    assert plans.stats()["fallback_reasons"] == {"element_missing": 1}


def test_element_ambiguous_is_a_fallback(store, v1):
    """search_twice.html has two identical search boxes: replay cannot know which one was meant."""
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    result = plans.lookup(SIG, load_page("search_twice.html"))
    assert result.actions == [] and result.reason == FallbackReason.ELEMENT_AMBIGUOUS
    assert "2 elements" in result.message


@pytest.mark.parametrize("kind", ["solve_captcha", "upload_file", "extract", "scroll"])
def test_unsupported_action_type_anywhere_ahead_is_a_fallback(store, v1, kind):
    plans = PlanCache(store)
    plan = search_plan(v1)
    plan.insert(4, Action(kind))
    plans.record(SIG, plan, completed=True)
    result = plans.lookup(SIG, v1)
    assert result.actions == [] and result.reason == FallbackReason.UNSUPPORTED_ACTION_TYPE
    assert kind in result.message
    # Once the agent is past it, the rest of the plan is replayable again.
    assert [a.action_type for a in plans.retrieve(SIG, v1, executed=5)] == ["complete"]


def test_intention_only_on_input_text(store, v1):
    plans = PlanCache(store)
    plan = search_plan(v1)
    plan[3].intention = "submit the search"
    plans.record(SIG, plan, completed=True)
    result = plans.lookup(SIG, v1)
    assert result.actions == [] and result.reason == FallbackReason.INTENTION_NOT_ALLOWED
    assert plans.stats()["fallback_reasons"] == {"intention_not_allowed": 1}


def test_terminate_is_dropped(store, v1):
    plans = PlanCache(store)
    plan = search_plan(v1)
    plan.insert(2, Action("terminate", reasoning="gave up once"))
    plans.record(SIG, plan, completed=True)
    served = plans.retrieve(SIG, v1)
    assert [a.action_type for a in served] == ["input_text", "select_option", "click", "click", "complete"]
    # executed counts the replayable plan, terminate excluded.
    assert [a.action_type for a in plans.retrieve(SIG, v1, executed=2)] == ["click", "click", "complete"]


def test_select_option_is_reset_but_kept_in_the_store(store, v1, tmp_path):
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    select = plans.retrieve(SIG, v1)[1]
    assert select.action_type == "select_option" and select.option is None
    assert select.element["options"][1] == {"value": "price_asc", "text": "Price: low to high", "selected": False}
    (key,) = store.find(pattern="plan:*:p:*")
    stored = json.loads(store.get(key).value[1:])
    assert stored["actions"][1]["option"] == {"value": "price_asc", "label": "Price: low to high"}


def test_resume_after_executed_count_or_actions(store, v1):
    plans = PlanCache(store)
    plan = search_plan(v1)
    plans.record(SIG, plan, completed=True)
    assert [a.action_type for a in plans.retrieve(SIG, v1, executed=3)] == ["click", "complete"]
    assert [a.action_type for a in plans.retrieve(SIG, v1, executed=plan[:2])] == ["click", "click", "complete"]
    # Executed actions that are not the plan's: the agent went its own way.
    off_plan = [plan[0], Action.for_element("click", find(v1, "a", text="Cart"))]
    assert plans.lookup(SIG, v1, executed=off_plan).reason == FallbackReason.EXECUTED_MISMATCH
    assert plans.lookup(SIG, v1, executed=5).reason == FallbackReason.PLAN_EXHAUSTED
    assert plans.lookup(SIG, v1, executed=6).reason == FallbackReason.EXECUTED_MISMATCH
    with pytest.raises(ValueError, match=">= 0"):
        plans.lookup(SIG, v1, executed=-1)


def test_a_plan_over_two_pages_replays_one_page_at_a_time(store, v1):
    results = load_page("results.html")
    plans = PlanCache(store)
    plan = search_plan(v1)[:4] + [
        Action.for_element("click", find(results, "button", aria_label="Add Brass desk lamp to cart")),
        Action.for_element("click", find(results, "a", text="Checkout")),
        Action("complete"),
    ]
    plans.record(SIG, plan, completed=True)
    first = plans.lookup(SIG, v1)
    assert len(first.actions) == 4 and first.reason == FallbackReason.ELEMENT_MISSING
    second = plans.lookup(SIG, results, executed=len(first.actions))
    assert [a.element["text"] for a in second.actions[:2]] == ["Add to cart", "Checkout"]
    assert second.reason is None


def test_personalization_hook_rewrites_what_to_type(store, v1):
    def hook(action, ctx):
        if action.intention:
            action.text = ctx.data["product"]
        return action

    plans = PlanCache(store, personalize=hook)
    plans.record(SIG, search_plan(v1), completed=True)
    served = plans.retrieve(SIG, v1, context={"product": "floor lamp"})
    assert served[0].text == "floor lamp"
    # A per-call hook wins over the default; [] drops the action.
    served = plans.retrieve(SIG, v1, personalize=lambda a, ctx: [] if a.action_type == "complete" else None)
    assert [a.action_type for a in served][-1] == "click" and served[0].text == "desk lamp"


@pytest.mark.parametrize("hook, reason", [
    (lambda action, ctx: 1 / 0, FallbackReason.PERSONALIZATION_ERROR),
    (lambda action, ctx: "click it", FallbackReason.PERSONALIZATION_ERROR),
    (lambda action, ctx: [Action("solve_captcha")], FallbackReason.UNSUPPORTED_ACTION_TYPE),
], ids=["raises", "returns-text", "returns-unsupported"])
def test_personalization_hook_error_is_a_fallback(store, v1, hook, reason):
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    result = plans.lookup(SIG, v1, personalize=hook)
    assert result.actions == [] and result.reason == reason
    assert plans.stats()["fallback_reasons"] == {reason: 1}


def test_failing_store_never_raises_and_is_counted(tmp_path, v1):
    """A real SQLite store over a file that is not a database: every store call fails."""
    bad = tmp_path / "garbage.db"
    bad.write_bytes(b"this is not sqlite" * 500)
    plans = PlanCache(open_store(f"sqlite:///{bad}"), shared_metrics=True)
    assert plans.record(SIG, search_plan(v1), completed=True) is None
    result = plans.lookup(SIG, v1)
    assert result.actions == [] and result.reason == FallbackReason.STORE_ERROR
    assert plans.report(SIG, success=False) is None
    metrics = plans.stats()
    assert metrics["store_errors"] == 2 and metrics["fallback_reasons"] == {"store_error": 1}


def test_corrupt_plan_is_a_miss_and_removed(store, v1):
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    (key,) = store.find(pattern="plan:*:p:*")
    entry = store.get(key)
    store.put(Entry(key, b"j{not json", dict(entry.metadata), entry.created_at, entry.expires_at))
    assert plans.lookup(SIG, v1).reason == FallbackReason.CORRUPT_PLAN
    assert store.get(key) is None
    assert plans.lookup(SIG, v1).reason == FallbackReason.NO_PLAN


def test_trust_ema_decays_and_drops_then_older_plan_serves(store, v1):
    plans = PlanCache(store)
    older = search_plan(v1)
    older[0].text = "older"
    old_id = plans.record(SIG, older, completed=True)
    new_id = plans.record(SIG, search_plan(v1), completed=True)

    assert plans.report(SIG, success=True) == {"plan_id": new_id, "trust": 1.0, "dropped": False}
    trusts = [plans.report(SIG, success=False)["trust"] for _ in range(4)]
    assert trusts == pytest.approx([0.7, 0.49, 0.343, 0.2401])
    assert plans.history_of(SIG)[0]["failures"] == 4
    # One success moves it back up by the same average.
    assert plans.report(SIG, success=True)["trust"] == pytest.approx(0.3 + 0.7 * 0.2401)
    while True:
        outcome = plans.report(SIG, success=False)
        if outcome["dropped"]:
            break
    assert outcome["plan_id"] == new_id and outcome["trust"] < 0.2
    assert plans.retrieve(SIG, v1)[0].text == "older"
    assert [h["plan_id"] for h in plans.history_of(SIG)] == [old_id]
    assert plans.stats()["dropped_untrusted"] == 1


def test_plans_that_keep_failing_validation_lose_trust_and_are_dropped(store, v1):
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    twice = load_page("search_twice.html")
    reasons = [plans.lookup(SIG, twice).reason for _ in range(6)]
    # 1.0 -> 0.7 -> 0.49 -> 0.343 -> 0.2401 -> 0.168 (< 0.2: dropped)
    assert reasons == [FallbackReason.ELEMENT_AMBIGUOUS] * 5 + [FallbackReason.NO_PLAN]
    assert plans.stats()["dropped_untrusted"] == 1


def test_report_on_a_given_plan_id_and_on_nothing(store, v1):
    plans = PlanCache(store)
    assert plans.report(SIG, success=True) is None
    first = plans.record(SIG, search_plan(v1), completed=True)
    plans.record(SIG, search_plan(v1), completed=True)
    assert plans.report(SIG, success=False, plan_id=first)["plan_id"] == first
    assert [h["trust"] for h in plans.history_of(SIG)] == [1.0, pytest.approx(0.7)]


def test_namespaces_are_isolated(store, v1):
    tenant_a = PlanCache(store, namespace="tenant-a")
    tenant_b = PlanCache(store, namespace="tenant-b")
    glob_like = PlanCache(store, namespace="tenant-*")
    tenant_a.record(SIG, search_plan(v1), completed=True)
    assert tenant_b.lookup(SIG, v1).reason == FallbackReason.NO_PLAN
    assert glob_like.lookup(SIG, v1).reason == FallbackReason.NO_PLAN
    assert glob_like.invalidate() == 0 and tenant_b.invalidate(SIG) == 0
    assert len(tenant_a.retrieve(SIG, v1)) == 5
    assert tenant_a.invalidate(SIG) == 1
    assert tenant_a.lookup(SIG, v1).reason == FallbackReason.NO_PLAN


def test_round_trip_through_a_reopened_sqlite_file(tmp_path, v1):
    url = f"sqlite:///{tmp_path}/plans.db"
    writer = PlanCache(url, namespace="ci")
    plan = search_plan(v1)
    plan_id = writer.record(SIG, plan, completed=True)
    writer.store.close()

    reader = PlanCache(open_store(url), namespace="ci")
    served = reader.retrieve(NEXT_SIG, v1)
    assert [a.to_dict()["fingerprint"] for a in served[:4]] == [a.fingerprint for a in plan[:4]]
    assert [a.text for a in served] == [a.text for a in plan]
    assert served[4].reasoning == "results are shown"
    (entry_key,) = reader.store.find(metadata_filter={"_plan_namespace": "ci", "_plan_id": plan_id})
    metadata = reader.store.get(entry_key).metadata
    assert metadata["_cache_type"] == "plan"
    assert metadata["_plan_signature"] == PlanSignature.of(*SIG).digest


def test_record_fingerprints_from_the_page_given(store, v1):
    plans = PlanCache(store)
    box = find(v1, "input", name="q")
    with pytest.raises(ValueError, match="no fingerprint"):
        plans.record(SIG, [{"action_type": "click", "element_id": box.id}], completed=True)
    with pytest.raises(ValueError, match="not on the page"):
        plans.record(SIG, [{"action_type": "click", "element_id": "e999"}], completed=True, page=v1)
    plans.record(SIG, [{"type": "input_text", "element_id": box.id, "text": "lamp", "frame": "main"},
                       {"action_type": "complete"}], completed=True, page=v1)
    served = plans.retrieve(SIG, v1)
    assert served[0].fingerprint == element_fingerprint(box) and served[0].data == {"frame": "main"}


def test_ignore_is_stored_with_the_plan(store, v1):
    """With text ignored, the button renamed Search -> Find on v3 still matches by its other attributes."""
    plans = PlanCache(store, ignore=("text",))
    plans.record(SIG, search_plan(v1), completed=True)
    served = plans.retrieve(SIG, load_page("search_v3.html"))
    assert len(served) == 5 and served[3].element["text"] == "Find"
    # The same store read by a cache without ignore still uses the plan's own rule.
    assert len(PlanCache(store).retrieve(SIG, load_page("search_v3.html"))) == 5


def test_metrics_hit_rate_per_action_type_and_reasons(store, v1):
    plans = PlanCache(store)
    plans.record(SIG, search_plan(v1), completed=True)
    plans.retrieve(SIG, v1)                                   # 5 of 5 served
    plans.retrieve(SIG, load_page("search_v3.html"))          # 3 of 5 served, stops on the button
    plans.retrieve((SEARCH_URL, "other goal"), v1)            # no plan
    metrics = plans.stats()
    assert metrics["retrievals"] == 3 and metrics["hits"] == 2 and metrics["fallbacks"] == 1
    assert metrics["hit_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert metrics["fallback_reasons"] == {"no_plan": 1}
    assert metrics["actions"]["input_text"] == {"replayed": 2, "missed": 0, "hit_rate": 1.0}
    assert metrics["actions"]["click"] == {"replayed": 3, "missed": 1, "hit_rate": 0.75}
    assert metrics["actions"]["complete"] == {"replayed": 1, "missed": 1, "hit_rate": 0.5}


def test_shared_metrics_add_up_across_processes(tmp_path, v1, src_env):
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path}/shared.db"
    here = PlanCache(url, shared_metrics=True)
    here.record(SIG, search_plan(v1), completed=True)
    here.retrieve(SIG, v1)
    script = (
        "from actioncache.replay import PlanCache, page_from_html\n"
        f"p = PlanCache({url!r}, shared_metrics=True)\n"
        f"print(len(p.retrieve({SIG!r}, page_from_html(open({str(FIXTURES / 'search_v1.html')!r}).read()))))\n"
        f"print(p.retrieve(('https://x.example/', 'nothing'), []))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], env=src_env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["5", "[]"]
    shared = here.metrics(shared=True)
    assert shared["retrievals"] == 3 and shared["hits"] == 2 and shared["recorded"] == 1
    assert shared["fallback_reasons"] == {"no_plan": 1}
    assert here.metrics()["retrievals"] == 1  # this process's own view


def test_bad_arguments_raise_clear_errors(store, v1):
    plans = PlanCache(store)
    with pytest.raises(ValueError, match="goal"):
        plans.retrieve((SEARCH_URL, "  "), v1)
    with pytest.raises(TypeError, match="signature"):
        plans.retrieve(SEARCH_URL, v1)
    with pytest.raises(TypeError, match="page is required"):
        plans.retrieve(SIG, None)
    with pytest.raises(TypeError, match="executed"):
        plans.retrieve(SIG, v1, executed="2")
    with pytest.raises(ValueError, match="namespace"):
        PlanCache(store, namespace="")
    with pytest.raises(ValueError, match="history"):
        PlanCache(store, history=0)


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=20))
json_data = st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in Action._FIELDS), json_scalars,
                            max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(typed=st.text(max_size=40), reasoning=st.one_of(st.none(), st.text(max_size=40)), data=json_data,
       wait_s=st.integers(0, 60))
def test_actions_round_trip_through_the_store(tmp_path, typed, reasoning, data, wait_s):
    v1 = load_page("search_v1.html")
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/rt.db"), namespace=f"rt-{abs(hash((typed, reasoning)))}")
    plan = [Action.for_element("input_text", find(v1, "input", name="q"), text=typed, reasoning=reasoning, data=data),
            Action("wait", data={"seconds": wait_s}), Action("complete")]
    plans.record(SIG, plan, completed=True)
    served = plans.retrieve(SIG, v1)
    assert [(a.action_type, a.text, a.reasoning, a.data, a.fingerprint) for a in served] == [
        (a.action_type, a.text, a.reasoning, a.data, a.fingerprint) for a in plan]
    plans.invalidate()
    plans.store.close()


PAY = '<form action="/pay"><button>Continue</button></form><a href="/acct?action=view">Open</a>'


def test_a_changed_destination_is_not_rebound(store):
    """The tester's wrong hit: same captions, but the form now deletes the account."""
    from actioncache.replay import page_from_html

    plans = PlanCache(store)
    url = "https://bank.example/checkout"
    rec = page_from_html(PAY, url=url)
    button, link = rec.elements
    plans.record((url, "pay"), [Action.for_element("click", button), Action.for_element("click", link),
                                Action("complete")], completed=True)
    assert plans.lookup((url, "pay"), page_from_html(PAY, url=url)).reason is None

    cases = [
        '<form action="/account/delete"><button>Continue</button></form><a href="/acct?action=view">Open</a>',
        '<form action="/pay"><button formaction="/delete-account">Continue</button></form><a href="/acct?action=view">Open</a>',
        '<form action="/pay" method="post"><button>Continue</button></form><a href="/acct?action=view">Open</a>',
        '<form action="/pay"><button>Continue</button></form><a href="/acct?action=delete">Open</a>',
    ]
    for stopped_at, html in zip((0, 0, 0, 1), cases):
        result = plans.lookup((url, "pay"), page_from_html(html, url=url))
        assert result.reason == FallbackReason.DESTINATION_CHANGED, html
        assert len(result.actions) == stopped_at and "target changed" in result.message

    # Churn is still rebound: tracking parameters, a session id, a new DOM id.
    moved = ('<p>Welcome back</p><form id="f-91" action="/pay?utm_source=mail"><button class="x">Continue</button></form>'
             '<a id="a7" href="/acct?action=view&gclid=abc">Open</a>')
    assert plans.lookup((url, "pay"), page_from_html(moved, url=url)).reason is None


def test_a_plan_fingerprinted_by_an_older_rule_misses_instead_of_hitting():
    from actioncache.keys import sha256_hex
    from actioncache.replay import page_from_html
    from actioncache.replay.validation import rebind

    page = page_from_html(PAY)
    button = page.elements[0]
    # What version 1 stored for this button: no destination in the hash.
    old = sha256_hex({"v": 1, "attributes": {}, "tag": "button", "text": "Continue"})
    served, fallback = rebind([Action("click", fingerprint=old, element=button.to_dict())], page)
    assert served == [] and fallback.reason == FallbackReason.ELEMENT_MISSING


def test_replays_count_in_the_stores_one_statistics_view(store, v1):
    """Cache.stats() on the plans' store shows replays with everything else: a replayed plan is a
    hit, a fallback a miss, a recorded plan a store (issue 26: one statistics view)."""
    from actioncache import Cache

    plans = PlanCache(store, namespace="shop")
    plans.record(SIG, search_plan(v1), completed=True)
    assert plans.lookup(NEXT_SIG, load_page("search_v2.html", url=NEXT_URL)).reason is None
    assert plans.lookup(("https://shop.example/cart", GOAL), v1).reason == FallbackReason.NO_PLAN
    seen = Cache(store=store).stats()["by_action"]["replay:shop"]
    assert (seen["hits"], seen["misses"], seen["stores"]) == (1, 1, 1)


def test_the_old_name_of_stats_still_answers(store):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # said once per process: not pinned here
        assert PlanCache(store).metrics() == PlanCache(store).stats()
