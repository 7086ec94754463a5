"""Verifier stage: a second opinion on a vector hit before it is served.

``SemanticCache(verifier=...)`` takes any ``callable(request, hit) -> bool``; it is asked about
vector hits whose similarity is below ``threshold + verify_margin`` (``verify_margin=2`` asks
about every one). A verifier that raises, times out or answers something else counts as "no":
the lookup misses, which costs a re-plan, never a wrong answer. Two ready-made ones:

* :class:`CrossEncoderVerifier` -- a local sentence-transformers cross-encoder (``[semantic]``
  extra and a model on disk, e.g. a Quora-duplicate or STS cross-encoder); no network.
* :class:`LLMJudgeVerifier` -- asks a chat model over any OpenAI-compatible endpoint whether the
  stored request's plan answers the new one. Off by default (the default cache runs offline).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import urllib.error
import urllib.request
from typing import Any

from .embedders import EmbedderError, json_post

log = logging.getLogger("actioncache.semantic")


class CrossEncoderVerifier:
    """Accept a hit when a local cross-encoder scores the two requests at least ``min_score``.

    ``model`` is a directory or a name sentence-transformers can load offline. Scores are read as
    the model gives them (a probability for the usual duplicate/STS cross-encoders).
    """

    def __init__(self, model: str, *, min_score: float = 0.5, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise EmbedderError(f"CrossEncoderVerifier needs sentence-transformers ({exc}): pip install 'actioncache[semantic]'") from exc
        try:
            self._model = CrossEncoder(model, device=device)
        except Exception as exc:
            raise EmbedderError(f"cannot load cross-encoder {model!r} ({type(exc).__name__}: {exc}); pass a local model directory") from exc
        self.min_score = min_score
        self._lock = threading.Lock()

    def __call__(self, request: str, hit: Any) -> bool:
        with self._lock:
            score = float(self._model.predict([(request, hit.prompt)])[0])
        return score >= self.min_score


_JUDGE_PROMPT = (
    "You decide whether a cached plan of tool calls may be reused. The plan was made for the STORED "
    "request. Answer YES only if carrying it out would fully and correctly satisfy the NEW request "
    "(same action, same objects, names, numbers, dates, direction, negation and scope). Otherwise "
    "answer NO. Answer with one word: YES or NO."
)


class LLMJudgeVerifier:
    """Ask an OpenAI-compatible chat model (``POST {base_url}/chat/completions``) to confirm a hit.

    ``base_url`` defaults to ``$OPENAI_BASE_URL``, ``api_key`` to ``$OPENAI_API_KEY``. Any error,
    a reply slower than ``timeout_s`` or a reply that is not a clear YES is a rejection.
    """

    def __init__(self, model: str = "gpt-4o-mini", *, base_url: str | None = None, api_key: str | None = None,
                 timeout_s: float = 5.0) -> None:
        base = base_url or os.environ.get("OPENAI_BASE_URL")
        if not base:
            raise ValueError("LLMJudgeVerifier needs base_url= or $OPENAI_BASE_URL (an OpenAI-compatible server)")
        self.base_url = base.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.model = model
        self.timeout_s = timeout_s

    def __call__(self, request: str, hit: Any) -> bool:
        req = json_post(f"{self.base_url}/chat/completions", {
            "model": self.model, "temperature": 0, "max_tokens": 3,
            "messages": [{"role": "system", "content": _JUDGE_PROMPT},
                         {"role": "user", "content": f"STORED: {hit.prompt}\nNEW: {request}"}],
        }, self.api_key)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as response:
                content = json.loads(response.read())["choices"][0]["message"]["content"]
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            log.warning("LLM judge at %s failed (%s); treating the hit as a miss", self.base_url, exc)
            return False
        return isinstance(content, str) and content.strip().upper().startswith("YES")
