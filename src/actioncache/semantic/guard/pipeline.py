"""One pipeline: the gates a candidate must pass, in order; the first reason found refuses it.

The rule gates (the contrast checks, which read the two texts alone) come first and are
remembered for the last 4,096 pairs of texts: an agent asks the same request again and again.
:func:`contrast` is the default rules' answer for two texts.

Two kinds of rule finding. Most rules find a small edit that turns the meaning (a negation, an
antonym, two roles traded, a name or a code token swapped, a question for a command): a model that
reads both texts together is known to miss exactly those, so they refuse, whatever follows. A few
findings are *doubts* (:class:`~.registry.Doubt`): the number rule's when both sides say the same
values or one side says none (a count told in the story around the request), the date rule's when
one side says no day at all. A verifier that can settle a doubt (the cross-encoder, when it is sure:
``settles(pair)``) lets the candidate through after reading both requests; with no such verifier a
doubt refuses as any rule does. Another value on both sides ("today" / "tomorrow", "5" / "50") is
never a doubt.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from . import (  # noqa: F401 - importing a check module registers its gate
    clause,
    code,
    comparison,
    condition,
    date,
    direction,
    entity,
    environment,
    modality,
    number,
    person,
    polarity,
    quantifier,
    role,
    speech_act,
    substitution,
)
from .registry import RULE, VERIFIER, Doubt, Gate, Pair, lookup

# The contrast checks in the order they are asked (the reason reported is the first that fires).
DEFAULT_RULES = ("number", "date", "negation", "opposite", "direction", "person", "relative", "quantifier", "comparison",
                 "bound", "relation", "modality", "obligation", "speech_act", "entity", "environment", "code_exact",
                 "command_line", "role", "substitution", "clause", "extra_action", "condition")
_MEMORY = 4096
log = logging.getLogger("actioncache.semantic")


class Pipeline:
    """Gates run in order; :meth:`check` returns ``(reason, gate)`` of the first refusal, or ``None``.

    A gate is a registered name or any object with ``name``, ``kind`` and ``__call__(pair)``.
    A gate that raises refuses (its reason is its name): a broken check must never serve."""

    def __init__(self, gates: Iterable[str | Gate]) -> None:
        self.gates: tuple[Gate, ...] = tuple(lookup(g) if isinstance(g, str) else g for g in gates)
        self._rules = tuple(g for g in self.gates if g.kind == RULE)
        self._others = tuple(g for g in self.gates if g.kind != RULE)
        # Verifiers that may settle a rule's doubt (``settles(pair) -> bool``): the cross-encoder.
        self._settlers = tuple(g for g in self._others if g.kind == VERIFIER and callable(getattr(g, "settles", None)))
        # Verifiers that may start on a candidate before the rules read it (``prepare(pair)``: the cross-encoder).
        self._preparers = tuple(g for g in self._others if g.kind == VERIFIER and callable(getattr(g, "prepare", None)))
        self._memo: OrderedDict[tuple[str, str, tuple[str, str] | None], tuple[str | None, tuple[str, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.gates)

    def findings(self, pair: Pair) -> tuple[str | None, tuple[str, ...]]:
        """The rule gates' findings for the two texts (remembered): the first refusal that is not a
        doubt, or ``None``, and the doubts found before it (every doubt when nothing else refuses)."""
        key = (pair.request, pair.candidate, pair.story)
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        found: tuple[str | None, tuple[str, ...]] = (None, ())
        doubts: list[str] = []
        for gate in self._rules:
            reason = _ask(gate, pair)
            if reason is None:
                continue
            if not isinstance(reason, Doubt) or not self._settlers:
                found = (reason, tuple(doubts))
                break
            doubts.append(reason)
        else:
            found = (None, tuple(doubts))
        with self._lock:
            self._memo[key] = found
            if len(self._memo) > _MEMORY:
                self._memo.popitem(last=False)
        return found

    def rules(self, pair: Pair) -> str | None:
        """The first rule gate's reason for the two texts (a doubt included), or ``None``."""
        reason, doubts = self.findings(pair)
        return doubts[0] if doubts else reason

    def prepare(self, pair: Pair) -> None:
        """Let the verifiers that can (``prepare(pair)``: the cross-encoder) start on ``pair`` while the
        rules read it; decides nothing, and a failure here only loses the head start."""
        for gate in self._preparers:
            try:
                gate.prepare(pair)  # type: ignore[attr-defined]
            except Exception as exc:  # noqa: BLE001 - the verifier runs again when asked, and fails there if it must
                log.warning("semantic gate %r raised %s while preparing: %s", gate.name, type(exc).__name__, exc)

    def check(self, pair: Pair, *, verify: bool = True) -> tuple[str, Gate] | None:
        """The first refusal: the rules, then the other gates in order (with ``verify=False``, the
        verifiers left out: a lookup screens every candidate, then verifies only the one it would serve).
        A candidate with doubts only passes the screen when a verifier may settle them."""
        reason, doubts = self.findings(pair)
        if reason is not None:
            return self._rule(doubts[0] if doubts else reason)
        gated: list[tuple[str, Gate]] = []
        for gate in self._others:
            if not verify and gate.kind == VERIFIER:
                continue
            reason = _ask(gate, pair)
            if reason is None:
                continue
            if not (self._settlers and gate.kind != VERIFIER and isinstance(reason, Doubt)):
                return self._rule(doubts[0]) if doubts else (reason, gate)
            gated.append((reason, gate))
        return self._settle(pair, doubts, gated) if verify else None

    def verify(self, pair: Pair) -> tuple[str, Gate] | None:
        """The first refusal among the verifier gates, then the doubts (the rules', and those of the
        gates after them, asked again) unless a verifier settles them."""
        for gate in self._others:
            if gate.kind == VERIFIER:
                reason = _ask(gate, pair)
                if reason is not None:
                    return reason, gate
        gated: list[tuple[str, Gate]] = []
        if self._settlers:
            for gate in self._others:
                if gate.kind != VERIFIER and (reason := _ask(gate, pair)) is not None:
                    if not isinstance(reason, Doubt):
                        return reason, gate  # the screen let it through; it never serves on a refusal
                    gated.append((reason, gate))
        return self._settle(pair, self.findings(pair)[1], gated)

    def _settle(self, pair: Pair, doubts: tuple[str, ...],
                gated: Sequence[tuple[str, Gate]] = ()) -> tuple[str, Gate] | None:
        """``None`` when there is no doubt or a settling verifier is sure; else the first doubt refuses."""
        if not doubts and not gated:
            return None
        for gate in self._settlers:
            try:
                if gate.settles(pair):  # type: ignore[attr-defined]
                    return None
            except Exception as exc:  # noqa: BLE001 - a broken verifier settles nothing
                log.warning("semantic gate %r raised %s while settling: %s", gate.name, type(exc).__name__, exc)
        return self._rule(doubts[0]) if doubts else (str(gated[0][0]), gated[0][1])

    def doubts(self, pair: Pair) -> tuple[str, ...] | None:
        """Every finding of the rule gates when each is a doubt (``()``: none), ``None`` when one is not."""
        found = []
        for gate in self._rules:
            reason = _ask(gate, pair)
            if reason is not None:
                if not isinstance(reason, Doubt):
                    return None
                found.append(reason)
        return tuple(found)

    def _rule(self, reason: str) -> tuple[str, Gate]:
        return reason, next((g for g in self._rules if g.name == reason), self._rules[0])

    def __repr__(self) -> str:
        return f"Pipeline({list(self.names)!r})"


def _ask(gate: Gate, pair: Pair) -> str | None:
    try:
        reason = gate(pair)
    except Exception as exc:  # noqa: BLE001 - a broken gate must never serve, nor fail the lookup
        log.warning("semantic gate %r raised %s: %s; the candidate is refused", gate.name, type(exc).__name__, exc)
        return gate.name
    if reason is None:
        return None
    return reason if isinstance(reason, str) and reason else gate.name


_DEFAULT = Pipeline(DEFAULT_RULES)


@lru_cache(maxsize=_MEMORY)
def contrast(request: str, candidate: str) -> str | None:
    """The name of the first contrast check that finds the two requests contradicting, or ``None``."""
    return _DEFAULT.rules(Pair(request, candidate))


def literal_guard(request: str, candidate: str) -> bool:
    """True when ``candidate`` may answer ``request``: no contrast check finds a contradiction."""
    return contrast(request, candidate) is None


CONTRAST_CHECKS: Sequence[str] = DEFAULT_RULES
Check = Callable[[Pair], "str | None"]
