"""YAML actions plan.record / plan.retrieve / plan.report: registered directly and run in a real agent."""

from __future__ import annotations

import types

import pytest

from actioncache import open_store

from .conftest import FIXTURES, GOAL, SEARCH_URL, load_page, search_plan

HTML_V1 = (FIXTURES / "search_v1.html").read_text(encoding="utf-8")
HTML_V2 = (FIXTURES / "search_v2.html").read_text(encoding="utf-8")


@pytest.fixture
def registry(tmp_path):
    from actioncache.replay.actions import register_actions

    engine = types.SimpleNamespace(cache=None, store=open_store(f"sqlite:///{tmp_path}/agent.db"),
                                   settings={"replay": {"namespace": "shop-bot"}})
    actions: dict = {}
    register_actions(actions, engine)
    yield actions
    engine.store.close()


def recorded_actions() -> list[dict]:
    return [a.to_dict() for a in search_plan(load_page("search_v1.html"))]


def test_record_then_retrieve_on_changed_html(registry):
    assert {"plan.record", "plan.retrieve", "plan.report", "actions.plan_retrieve"} <= set(registry)
    rec = registry["plan.record"]({}, url=SEARCH_URL, goal=GOAL, actions=recorded_actions(), completed=True)
    assert rec["success"] and rec["recorded"] and rec["url_pattern"] == "https://shop.example/search?q&sid"

    out = registry["actions.plan_retrieve"]({}, url="https://shop.example/search?q=desk&sid=1", goal=GOAL,
                                            html=HTML_V2, executed=1)
    assert out["success"] and out["hit"] and out["reason"] is None
    assert [a["action_type"] for a in out["actions"]] == ["select_option", "click", "click", "complete"]
    assert "option" not in out["actions"][0]  # reset for a fresh choice
    assert out["actions"][0]["element_id"] == "e7"  # rebound onto search_v2.html's select


def test_record_refuses_incomplete_runs_and_element_ids_resolve_through_the_page(registry):
    out = registry["plan.record"]({}, url=SEARCH_URL, goal=GOAL, actions=recorded_actions(), completed=False)
    assert out == {"success": True, "recorded": False, "plan_id": None, "url_pattern": "https://shop.example/search?q&sid"}
    miss = registry["plan.retrieve"]({}, url=SEARCH_URL, goal=GOAL, html=HTML_V1)
    assert miss["success"] and not miss["hit"] and miss["reason"] == "plan_not_completed"
    # Actions that name only element ids, with the page they were taken on.
    rec = registry["plan.record"]({}, signature={"url": SEARCH_URL, "goal": GOAL}, html=HTML_V1, completed=True,
                                  actions=[{"type": "input_text", "element_id": "e3", "text": "lamp"},
                                           {"type": "click", "element_id": "e6"}, {"type": "complete"}])
    assert rec["recorded"]
    out = registry["plan.retrieve"]({}, url=SEARCH_URL, goal=GOAL, html=HTML_V2)
    assert [(a["action_type"], a.get("element_id")) for a in out["actions"]] == [
        ("input_text", "e6"), ("click", "e9"), ("complete", None)]


def test_bad_arguments_answer_success_false(registry):
    assert registry["plan.record"]({}, url=SEARCH_URL, goal=GOAL, actions=[])["success"] is False
    assert "page" in registry["plan.retrieve"]({}, url=SEARCH_URL, goal=GOAL)["error"]
    assert "goal" in registry["plan.retrieve"]({}, url=SEARCH_URL, html=HTML_V1)["error"]
    assert "llm.nope" in registry["plan.retrieve"]({}, url=SEARCH_URL, goal=GOAL, html=HTML_V1,
                                                   personalize="llm.nope")["error"]
    assert registry["plan.report"]({}, url=SEARCH_URL, goal=GOAL)["success"] is False


def test_personalize_through_a_registered_llm_call(registry):
    """No LLM server runs on this machine: a stub llm.call with the runtime's reply shape stands in."""
    calls = []

    def llm_call(state, messages, model=None, **_):
        calls.append((state, messages, model))
        return {"success": True, "content": f" {state['user']['wants']} \n"}

    registry["llm.call"] = llm_call
    registry["plan.record"]({}, url=SEARCH_URL, goal=GOAL, actions=recorded_actions(), completed=True)
    state = {"user": {"wants": "floor lamp"}}
    out = registry["plan.retrieve"](state, url=SEARCH_URL, goal=GOAL, html=HTML_V1, personalize="llm.call",
                                    llm={"model": "small"}, context={"budget": 40})
    assert out["hit"] and out["actions"][0]["text"] == "floor lamp"
    assert len(calls) == 1 and calls[0][2] == "small"  # only the input with an intention is asked
    assert "what the user wants to buy" in calls[0][1][1]["content"] and "'budget': 40" in calls[0][1][1]["content"]

    registry["llm.call"] = lambda state, **kw: {"success": False, "error": "HTTP 500"}
    failed = registry["plan.retrieve"](state, url=SEARCH_URL, goal=GOAL, html=HTML_V1, personalize="llm.call")
    assert failed["success"] and not failed["hit"] and failed["reason"] == "personalization_error"
    assert "HTTP 500" in failed["message"]


def test_resolve_through_a_registered_llm_call(registry):
    """plan.retrieve's resolve: re-decides a click chosen for the input; a stub llm.call stands in for the model."""
    results = ('<input name=q aria-label=Search><ul><li><a href="/p/clip">Clip-on Desk Lamp</a> $24</li>'
               '<li><a href="/p/oak">Oak Floor Lamp</a> $89</li></ul>')
    box = {"action_type": "input_text", "text": "clip-on desk lamp", "intention": "the lamp", "element_id": "e1"}
    click = {"action_type": "click", "element_id": "e2", "intention": "the result the query named",
             "choose": {"rule": "query_match", "query": 0}}
    assert registry["plan.record"]({}, url=SEARCH_URL, goal=GOAL, actions=[box, click], html=results,
                                   completed=True)["recorded"]
    asked = []

    def llm_call(state, messages, model=None, **_):
        asked.append(messages[-1]["content"])
        return {"success": True, "content": "2" if "Candidates" in messages[-1]["content"] else state["wants"]}

    registry["llm.call"] = llm_call
    out = registry["plan.retrieve"]({"wants": "wooden lamp"}, url=SEARCH_URL, goal=GOAL, html=results,
                                    personalize="llm.call", resolve="llm.call", llm={"model": "small"})
    assert out["hit"] and out["reason"] is None
    assert [out["actions"][0]["text"], out["actions"][1]["element"]["text"]] == ["wooden lamp", "Oak Floor Lamp"]
    assert "2. Oak Floor Lamp" in asked[-1] and "wooden lamp" in asked[-1]
    assert "llm.nope" in registry["plan.retrieve"]({}, url=SEARCH_URL, goal=GOAL, html=results,
                                                   resolve="llm.nope")["error"]


def test_report_moves_trust(registry):
    rec = registry["plan.record"]({}, url=SEARCH_URL, goal=GOAL, actions=recorded_actions(), completed=True)
    out = registry["plan.report"]({}, url=SEARCH_URL, goal=GOAL, success=False)
    assert out == {"success": True, "found": True, "plan_id": rec["plan_id"], "trust": pytest.approx(0.7), "dropped": False}
    assert registry["plan.report"]({}, url=SEARCH_URL, goal="other", success=True) == {"success": True, "found": False}


AGENT = """
name: replay_agent
settings:
  replay: {namespace: yaml-test}
nodes:
  - name: remember
    uses: plan.record
    with:
      url: "{{ state.url }}"
      goal: "{{ state.goal }}"
      actions: "{{ state.recorded }}"
      completed: true
    output: recorded
  - name: replay
    uses: plan.retrieve
    with:
      url: "{{ state.url }}"
      goal: "{{ state.goal }}"
      html: "{{ state.html }}"
    output: replay
"""


def test_in_a_yaml_agent(tmp_path):
    from actioncache.agents.engine import load_agent

    agent = load_agent(AGENT, store=f"sqlite:///{tmp_path}/yaml.db")
    final = agent.invoke({"url": SEARCH_URL, "goal": GOAL, "recorded": recorded_actions(), "html": HTML_V2})
    assert final["recorded"]["recorded"] is True
    assert final["replay"]["hit"] and len(final["replay"]["actions"]) == 5
    # Counters went to the agent's store, so they add up across runs and processes.
    from actioncache.replay import PlanCache

    assert PlanCache(agent.store, "yaml-test").metrics(shared=True)["hits"] == 1
