"""Interactive demo of the semantic plan cache: prompt, plan, feedback, eviction, re-plan.

    python examples/memory_agent_demo.py [--store sqlite:///tmp/demo.db] [--embedder local|hashing]

Type a request. On a miss the agent plans: with an OpenAI-compatible LLM when ``OPENAI_BASE_URL``
is set (``OPENAI_API_KEY``, ``OPENAI_MODEL``), otherwise with a small rule-based planner. Either
way it calls placeholder tools (weather, inventory, calculator) and the sequence of tool calls is
cached. On a hit the cached sequence is replayed. Answer ``y``/``n``: each ``n`` lowers the entry's
score (EMA, alpha 0.3) until it drops below 0.2 and is evicted; the next identical request misses
and the agent plans again. ``quit`` or ``exit`` ends the demo.
"""

from __future__ import annotations

import argparse
import ast
import json
import operator
import os
import re
import sys
import urllib.request
from typing import Callable

from actioncache import open_store  # the installed package (scripts/install.sh, or pip install)
from actioncache.semantic import HashingEmbedder, SemanticCache, default_embedder
from actioncache.semantic.conversation import normalize_prompt

# --- placeholder tools: deterministic, no network -----------------------------------------------

_CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy"]


def weather_tool(city: str) -> str:
    condition = _CONDITIONS[sum(map(ord, city.lower())) % len(_CONDITIONS)]
    return f"{condition}, {10 + len(city) % 15} C in {city}"


def inventory_tool(item: str) -> str:
    return f"{(sum(map(ord, item.lower())) * 7) % 120} units of {item} in stock"


_OPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
}


def calculator_tool(expression: str) -> str:
    """Arithmetic on numbers with + - * / only: parsed, never eval'd."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError("only numbers and + - * /")

    try:
        return f"{ev(ast.parse(expression, mode='eval').body):g}"
    except (ValueError, SyntaxError, ZeroDivisionError) as exc:
        return f"error: {exc}"


TOOLS: dict[str, Callable[[str], str]] = {
    "WeatherLookup": weather_tool,
    "InventoryCheck": inventory_tool,
    "Calculator": calculator_tool,
}


def step(tool: str, tool_input: str) -> str:
    """One cached plan: the request, its tool calls and their results."""
    return f"Tool: {tool}, Input: '{tool_input}', Observation: '{TOOLS[tool](tool_input)}'"


# --- planners ---------------------------------------------------------------------------------------


class RuleBasedPlanner:
    """Picks tools by keywords. ``rejected`` holds the plans the user turned down for this request;
    each one moves the planner to its next variant, so a rejected plan is not simply repeated."""

    name = "rule-based planner"

    def plan(self, prompt: str, rejected: list[list[str]] | None = None) -> list[str]:
        attempt = len(rejected or [])
        steps: list[str] = []
        text = prompt.lower()
        city = re.search(r"\b(?:in|for|at)\s+([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)", prompt)
        if "weather" in text or "temperature" in text or "forecast" in text:
            place = city.group(1) if city else "Paris"
            steps.append(step("WeatherLookup", place if attempt % 2 == 0 else f"{place} city centre"))
        item = re.search(r"\b(?:stock of|inventory of|how many)\s+([\w -]+?)(?:\s+(?:do|are|in)\b|\?|$)", text)
        if "stock" in text or "inventory" in text or item:
            steps.append(step("InventoryCheck", (item.group(1) if item else "widgets").strip()))
        expression = re.search(r"[\d.]+(?:\s*[-+*/]\s*[\d.]+)+", prompt)
        if expression:
            steps.append(step("Calculator", expression.group(0)))
        if not steps:
            steps.append(f"Direct Answer: I have no tool for that (attempt {attempt + 1}).")
        return steps


class LLMPlanner:
    """Asks an OpenAI-compatible chat model which tools to call, then calls them."""

    name = "LLM planner"

    def __init__(self, base_url: str, api_key: str, model: str) -> None:
        self.base_url, self.api_key, self.model = base_url.rstrip("/"), api_key, model

    def plan(self, prompt: str, rejected: list[list[str]] | None = None) -> list[str]:
        system = (
            "You plan tool calls. Tools: WeatherLookup(city), InventoryCheck(item), Calculator(expression). "
            'Answer with JSON only: {"calls": [{"tool": NAME, "input": TEXT}], "answer": TEXT or null}.'
        )
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        if rejected:
            # Tell the model what failed: at temperature 0 the same request would get the same plan again.
            tried = "\n".join(f"- {json.dumps(plan)}" for plan in rejected)
            messages.append({"role": "user", "content": (
                "These plans were already tried for this request and the user said they did not work:\n"
                f"{tried}\nPlan differently (other tools or other inputs).")})
        body = json.dumps({"model": self.model, "temperature": 0, "messages": messages})
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body.encode(), method="POST",
            headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})},
        )
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - user-configured URL
            content = json.loads(response.read())["choices"][0]["message"]["content"]
        match = re.search(r"\{.*\}", content or "", re.S)
        decided = json.loads(match.group(0)) if match else {"calls": [], "answer": content}
        if not isinstance(decided, dict):
            decided = {"calls": [], "answer": content}
        # A model may answer "calls": null, or calls that are not objects: no tool call, not a crash.
        calls = decided.get("calls") or []
        steps = [step(c["tool"], str(c.get("input", ""))) for c in calls if isinstance(c, dict) and c.get("tool") in TOOLS]
        return steps or [f"Direct Answer: {decided.get('answer') or content}"]


def make_planner() -> RuleBasedPlanner | LLMPlanner:
    base_url = os.environ.get("OPENAI_BASE_URL")
    if base_url:
        return LLMPlanner(base_url, os.environ.get("OPENAI_API_KEY", ""), os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    return RuleBasedPlanner()


# --- the loop -----------------------------------------------------------------------------------


def ask(prompt: str) -> str | None:
    print(prompt, end="", flush=True)
    line = sys.stdin.readline()
    if not line:
        return None
    return line.strip()


def run(cache: SemanticCache, planner: RuleBasedPlanner | LLMPlanner) -> int:
    print(f"Memory agent demo ({planner.name}, embedder {cache.embedder.name}, tau {cache.threshold}). Type 'quit' to end.")
    # Plans the user rejected until they were evicted, per request: the planner is told about them.
    rejected: dict[str, list[list[str]]] = {}
    while True:
        prompt = ask("\nYou: ")
        if prompt is None or prompt.lower() in ("quit", "exit"):
            print("Bye.")
            return 0
        if not prompt:
            continue
        hit = cache.lookup_hit(prompt)
        if hit is not None:
            entry_id, actions = hit.entry_id, hit.actions
            print(f"CACHE HIT (entry {entry_id[:8]}, similarity {hit.similarity:.2f}, score {hit.score:.2f}); replaying:")
        else:
            print("CACHE MISS; planning with tools...")
            failed = rejected.get(normalize_prompt(prompt), [])
            if failed:
                print(f"(telling the planner that {len(failed)} earlier plan(s) for this request failed)")
            try:
                actions = planner.plan(prompt, failed)
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # LLM down or odd reply: still answer
                print(f"({planner.name} failed: {exc}; using the rule-based planner)")
                actions = RuleBasedPlanner().plan(prompt, failed)
            entry_id = cache.store(prompt, actions)
            print(f"Stored as entry {entry_id[:8] if entry_id else '(not cached)'}:")
        for number, action in enumerate(actions, 1):
            print(f"  {number}. {action}")
        answer = ask("Did this work? (y/n): ")
        if answer is None:
            print("Bye.")
            return 0
        if entry_id is None or answer.lower() not in ("y", "n", "yes", "no"):
            print("No feedback recorded.")
            continue
        success = answer.lower().startswith("y")
        cache.update_reward(entry_id, success)
        entry = cache.get(entry_id)
        if entry is None:
            # Remembered for this wording and, after a hit on another wording, for the stored one too.
            for wording in dict.fromkeys([normalize_prompt(prompt)] + ([normalize_prompt(hit.prompt)] if hit else [])):
                rejected.setdefault(wording, []).append(list(actions))
            print("Score fell below the floor: entry EVICTED. The next such request will be planned again.")
        else:
            print(f"Score now {entry['score']:.2f}.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Semantic plan cache demo: plan, replay, feedback, eviction.")
    parser.add_argument("--store", default="memory://", help="store URL (default: memory://)")
    parser.add_argument("--namespace", default="demo")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local",
                        help="local: the best installed model (falls back to hashing); hashing: no model at all")
    args = parser.parse_args(argv)
    embedder = HashingEmbedder() if args.embedder == "hashing" else default_embedder()
    cache = SemanticCache(open_store(args.store), embedder=embedder, namespace=args.namespace)
    return run(cache, make_planner())


if __name__ == "__main__":
    raise SystemExit(main())
