"""The document-extraction agent from Python: load it once, invoke it twice.

    python examples/document_extraction.py [FILE]     # default: examples/data/report.txt
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from actioncache.agents import load_agent

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    file_path = sys.argv[1] if len(sys.argv) > 1 else str(HERE / "data" / "report.txt")
    with load_agent(HERE / "document_extraction.yaml") as agent:
        for run in (1, 2):
            started = time.perf_counter()
            state = agent.invoke({"file_path": file_path})
            result = state["extraction_result"]
            print(f"run {run}: _cache_hit={result['_cache_hit']}  data={state['data']}  "
                  f"({time.perf_counter() - started:.2f}s)")
        print(f"time saved so far: {agent.cache.stats()['time_saved_s']}s")
