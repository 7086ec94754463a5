"""A deliberately slow document "extractor" that the example agents import.

It stands in for a paid extraction service (LlamaExtract, an OCR API, an LLM): it sleeps
``$ACTIONCACHE_EXAMPLE_DELAY_S`` seconds (default 2) and then reads a few facts from the text.
The agents wrap it in ``cache.wrap`` so the second run of the same content costs nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping


def extract(state: Mapping[str, Any], file: str, agent_name: str = "report-reader") -> dict[str, Any]:
    """Return ``{"success", "data": {title, words, lines, agent_name}}`` for a text file."""
    time.sleep(float(os.environ.get("ACTIONCACHE_EXAMPLE_DELAY_S", "2")))
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        return {"success": False, "error": f"cannot read {file!r}: {exc}"}
    lines = text.splitlines()
    return {"success": True, "data": {
        "title": lines[0].strip() if lines else "",
        "words": len(text.split()),
        "lines": len(lines),
        "agent_name": agent_name,
    }}


def register_actions(registry: Any, engine: Any) -> None:
    # Imported with `namespace: docs`, so this becomes docs.extract (and actions.docs_extract).
    registry["extract"] = extract
