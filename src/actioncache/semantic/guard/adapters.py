"""The options of earlier versions as gates: ``guard=`` (two texts -> allowed?) and ``verifier=``
(request, hit -> confirmed?), so that every check a lookup makes runs in one pipeline."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .registry import RULE, VERIFIER, Pair

log = logging.getLogger("actioncache.semantic")


class GuardGate:
    """``guard(request, candidate) -> bool`` (False refuses) as a rule gate named ``guard``."""

    kind = RULE
    name = "guard"

    def __init__(self, guard: Callable[[str, str], bool]) -> None:
        if not callable(guard):
            raise TypeError(f"guard must be callable(request, candidate) -> bool or None, got {guard!r}")
        self.guard = guard

    def __call__(self, pair: Pair) -> str | None:
        return None if self.guard(pair.request, pair.candidate) else self.name


class VerifierGate:
    """``verifier(request, hit) -> bool`` as a verifier gate named ``verifier``, asked about hits
    whose similarity is below ``threshold + margin`` (``margin=2``: every hit). A verifier that
    raises or answers something other than a true value refuses: a re-plan, never a wrong answer."""

    kind = VERIFIER
    name = "verifier"

    def __init__(self, verifier: Callable[[str, Any], bool], *, threshold: float, margin: float) -> None:
        if not callable(verifier):
            raise TypeError(f"verifier must be callable(request, hit) -> bool or None, got {verifier!r}")
        self.verifier = verifier
        self.threshold = threshold
        self.margin = margin

    def __call__(self, pair: Pair) -> str | None:
        if pair.similarity >= self.threshold + self.margin:
            return None
        try:
            confirmed = bool(self.verifier(pair.request, pair.hit))
        except Exception as exc:  # noqa: BLE001 - a failing verifier must not fail the lookup
            log.warning("semantic verifier raised %s: %s; treating the hit as rejected", type(exc).__name__, exc)
            return self.name
        return None if confirmed else self.name
