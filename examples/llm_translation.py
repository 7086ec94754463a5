"""The cached LLM translation agent, run twice against the OpenAI-compatible server in the environment.

    OPENAI_BASE_URL=http://127.0.0.1:8080/v1 python examples/llm_translation.py "Good morning" French

Without $OPENAI_BASE_URL it says so and exits 0 (the examples must run offline).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from actioncache.agents import load_agent

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    if not os.environ.get("OPENAI_BASE_URL"):
        print("llm_translation: skipped, set OPENAI_BASE_URL (and OPENAI_API_KEY, ACTIONCACHE_LLM_MODEL as needed) "
              "to an OpenAI-compatible server to run it")
        raise SystemExit(0)
    state = {"text": sys.argv[1] if len(sys.argv) > 1 else "The second run of this request is free.",
             "target_language": sys.argv[2] if len(sys.argv) > 2 else "Spanish"}
    if os.environ.get("ACTIONCACHE_LLM_MODEL"):
        state["model"] = os.environ["ACTIONCACHE_LLM_MODEL"]
    with load_agent(HERE / "llm_translation.yaml") as agent:
        for run in (1, 2):
            result = agent.invoke(state)["translation_result"]
            if not result["success"]:
                print(f"run {run}: failed: {result.get('error')}")
                raise SystemExit(1)
            print(f"run {run}: _cache_hit={result['_cache_hit']}  {result['result']['content']!r}")
