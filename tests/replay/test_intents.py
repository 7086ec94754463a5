"""Clicks chosen for the input (issue 29, intent-aware clicks), on pages parsed from HTML.

A click on a search result records its choice; a replay for another query re-decides it through a
resolver (rule-based by default, pluggable) and never clicks the recorded item for another query.
The same in Chromium: tests/replay/test_replay_safety.py and test_replay_variants.py.
"""

from __future__ import annotations

import pytest

from actioncache.replay import Action, FallbackReason, PlanCache, page_from_html
from actioncache.replay.intents import (
    CHEAPEST,
    FIRST,
    QUERY_MATCH,
    UNKNOWN,
    ClickChoice,
    candidates_for,
    choice_for,
    infer_choice,
    llm_resolver,
    price_of,
    rule_resolver,
    words,
)

SIG = ("https://shop.example/search", "buy the lamp the user names")
SEARCH = "<form action=/search><label for=q>Search</label><input id=q name=q type=search><button>Search</button></form>"


def results(*items: tuple[str, str]) -> str:
    rows = "".join(f'<li><a href="/product/{name.lower().replace(" ", "-")}">{name}</a> <span>${price}</span></li>'
                   for name, price in items)
    return f'{SEARCH}<nav><a href="/cart">Cart</a></nav><ul class="results">{rows}</ul>'


LIST = results(("Clip-on Desk Lamp", "24.00"), ("Brass Desk Lamp", "45.00"), ("Oak Floor Lamp", "89.00"),
               ("Reading Lamp", "32.00"))


def link(page, text):
    return next(e for e in page.elements if e.tag == "a" and e.text == text)


def record(plans, choose_rule=QUERY_MATCH, query="clip-on desk lamp", clicked="Clip-on Desk Lamp"):
    page = page_from_html(LIST)
    box = page.elements[0]
    choose, intention = choice_for(choose_rule, 0)
    plans.record(SIG, [Action.for_element("input_text", box, text=query, intention="the product to buy"),
                       Action.for_element("click", link(page, clicked), choose=choose, intention=intention),
                       Action("complete")], completed=True)


def typed(query):
    def hook(action, context):
        if action.intention and action.action_type == "input_text":
            action.text = query
        return action
    return hook


def test_words_and_prices():
    assert words("The Clip-on DESK lamps") == {"clip", "desk", "lamp"}
    page = page_from_html(LIST)
    assert [price_of(e) for e in page.elements if e.tag == "a" and e.item] == [24.0, 45.0, 89.0, 32.0]
    # Two prices in one item (was/now, a savings badge, a unit price): which is the price is not guessed.
    assert price_of(page_from_html("<ul><li><a href=/a>A</a> was 1,299.50 EUR now €999</li></ul>").elements[0]) is None


def test_the_candidates_are_the_recorded_elements_like():
    page = page_from_html(LIST)
    assert [e.text for e in candidates_for(link(page, "Oak Floor Lamp"), page)] == [
        "Clip-on Desk Lamp", "Brass Desk Lamp", "Oak Floor Lamp", "Reading Lamp"]  # not the Cart link, nor Search


def test_another_query_clicks_the_result_it_names(store):
    plans = PlanCache(store)
    record(plans)
    result = plans.lookup(SIG, LIST, personalize=typed("oak floor lamp"))
    assert result.reason is None
    assert [a.text for a in result.actions[:1]] + [result.actions[1].element["text"]] == ["oak floor lamp", "Oak Floor Lamp"]


def test_another_query_never_clicks_the_recorded_item(store):
    """The tester's harmful case: "oak floor lamp" must not add the cached "Clip-on Desk Lamp"."""
    plans = PlanCache(store)
    record(plans)
    no_oak = results(("Clip-on Desk Lamp", "24.00"), ("Brass Desk Lamp", "45.00"))
    result = plans.lookup(SIG, no_oak, personalize=typed("oak floor lamp"))
    assert [a.action_type for a in result.actions] == ["input_text"]
    assert result.reason == FallbackReason.INTENT_UNRESOLVED and "not clicked for another query" in result.message


def test_the_recorded_query_keeps_its_choice_when_the_rule_cannot_tell(store):
    plans = PlanCache(store)
    record(plans, choose_rule="the one with the nicest photo", query="lamp", clicked="Brass Desk Lamp")
    same = plans.lookup(SIG, LIST)
    assert same.reason is None and same.actions[1].element["text"] == "Brass Desk Lamp"
    other = plans.lookup(SIG, LIST, personalize=typed("floor lamp"))
    assert other.reason == FallbackReason.INTENT_UNRESOLVED


def test_ties_decline():
    page = page_from_html(results(("Desk Lamp", "1"), ("Desk Lamp", "2")))
    group = candidates_for(page.elements[3], page)
    choice = ClickChoice(QUERY_MATCH, "", "desk lamp", "x", page.elements[3], group)
    assert rule_resolver(choice) is None
    closest = page_from_html(results(("Brass Desk Lamp Shade", "19"), ("Brass Desk Lamp", "45")))
    group = candidates_for(closest.elements[3], closest)
    assert rule_resolver(ClickChoice(QUERY_MATCH, "", "brass desk lamp", "x", group[0], group)).text == "Brass Desk Lamp"


def test_price_and_position_rules(store):
    plans = PlanCache(store)
    record(plans, choose_rule=CHEAPEST)
    reordered = results(("Oak Floor Lamp", "89.00"), ("Reading Lamp", "12.00"), ("Clip-on Desk Lamp", "24.00"))
    assert plans.lookup(SIG, reordered, personalize=typed("lamp")).actions[1].element["text"] == "Reading Lamp"
    page = page_from_html(reordered)
    group = candidates_for(page.elements[3], page)
    assert rule_resolver(ClickChoice(FIRST, "", None, None, group[0], group)).text == "Oak Floor Lamp"
    assert rule_resolver(ClickChoice("most_expensive", "", None, None, group[0], group)).text == "Oak Floor Lamp"


def test_a_resolver_of_ones_own(store):
    plans = PlanCache(store)
    record(plans)
    seen = []

    def last_one(choice):
        seen.append((choice.rule, choice.query, choice.recorded_query, len(choice.candidates), choice.data))
        return choice.candidates[-1].id

    result = plans.lookup(SIG, LIST, personalize=typed("reading lamp"), resolve=last_one, context={"user": "u1"})
    assert result.actions[1].element["text"] == "Reading Lamp"
    assert seen == [(QUERY_MATCH, "reading lamp", "clip-on desk lamp", 4, {"user": "u1"})]

    for bad in (lambda c: "e999", lambda c: 42, lambda c: 1 / 0):
        broken = plans.lookup(SIG, LIST, personalize=typed("reading lamp"), resolve=bad)
        assert broken.reason == FallbackReason.INTENT_UNRESOLVED and "resolver failed" in broken.message
    with pytest.raises(TypeError, match="resolve"):
        PlanCache(store, resolve="llm")


def test_the_llm_resolver_with_a_stand_in_model(store):
    """No LLM runs here: a stand-in callable answers as a chat model would, to check the wiring."""
    prompts = []

    def model(messages, **options):
        prompts.append((messages[-1]["content"], options))
        return {"content": "I pick 3."}

    plans = PlanCache(store, resolve=llm_resolver(model, model_name="small"))
    record(plans, choose_rule="the floor lamp made of wood")
    result = plans.lookup(SIG, LIST, personalize=typed("wooden floor lamp"))
    assert result.actions[1].element["text"] == "Oak Floor Lamp"
    text, options = prompts[0]
    assert "the floor lamp made of wood" in text and "wooden floor lamp" in text and "3. Oak Floor Lamp" in text
    assert options == {"model_name": "small"}
    declined = PlanCache(store, resolve=llm_resolver(lambda messages: "0"))
    assert declined.lookup(SIG, LIST, personalize=typed("desk")).reason == FallbackReason.INTENT_UNRESOLVED


def test_an_intention_on_a_click_needs_a_choice(store):
    page = page_from_html(LIST)
    plans = PlanCache(store)
    plans.record(SIG, [Action.for_element("click", link(page, "Reading Lamp"), intention="the cheapest")],
                 completed=True)
    assert plans.lookup(SIG, LIST).reason == FallbackReason.INTENTION_NOT_ALLOWED


def test_infer_choice():
    before = page_from_html(SEARCH + '<nav><a href="/cart">Cart</a></nav>')
    after = page_from_html(LIST)
    assert infer_choice(link(after, "Clip-on Desk Lamp"), after, 0, "clip-on desk lamp", before) == (
        {"rule": QUERY_MATCH, "query": 0}, "the result the query named")
    assert infer_choice(link(after, "Brass Desk Lamp"), after, 0, "desk lamp", before)[0]["rule"] == UNKNOWN  # a tie
    assert infer_choice(link(after, "Cart"), after, 0, "clip-on desk lamp", before) is None  # there before, alone
    assert infer_choice(after.elements[1], after, 0, "clip-on desk lamp", before) is None  # the Search button
    with pytest.raises(ValueError, match="intent"):
        choice_for("  ", 0)
