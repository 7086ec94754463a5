"""One registry of gates: each looks at a candidate for a request and names a reason to refuse it, or nothing.

A *gate* is any callable ``gate(pair) -> str | None`` with a ``name``: the reason it returns is
the name of what it found (``"negation"``, ``"speech_act"``, ``"learned"``), ``None`` lets the
candidate through. Three kinds, by what they read:

``rule``     the two texts alone (the contrast checks): memoised per pair of texts;
``context``  the conversations around the two requests (``context.py``);
``verifier`` a model's opinion (the learned verifier, a cross-encoder, an LLM judge).

Every built-in gate registers itself here under its name; :mod:`.pipeline` runs a list of them
in order. A gate only ever refuses: it can turn a hit into a miss, never the reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from .text import Side, align, side

RULE, CONTEXT, VERIFIER = "rule", "context", "verifier"


@dataclass(eq=False)
class Pair:
    """A request and a stored candidate, with what the cache knows about them."""

    request: str  # the new request's text (a conversation's last message)
    candidate: str  # the stored request's text
    similarity: float = 1.0
    request_turns: tuple[tuple[str, str], ...] = ()  # the messages before the request: (role, content)
    candidate_turns: tuple[tuple[str, str], ...] = ()
    hit: Any = None  # the SemanticHit under judgement, for verifiers written against it
    # What the cache computed on the way (token features for the learned verifier, vectors ...).
    extras: dict[str, Any] = field(default_factory=dict)
    # For conversations: each side's story, its user turns that say something and then its request.
    story: tuple[str, str] | None = None

    @cached_property
    def sides(self) -> tuple[Side, Side]:
        """Both requests read by the rules, compounds and lengths of time spelt alike."""
        return _alike(side(self.request), side(self.candidate))

    @cached_property
    def story_sides(self) -> tuple[Side, Side]:
        """Both stories (both requests when neither has a history) read by the rules."""
        if self.story is None:
            return self.sides
        return _alike(side(self.story[0]), side(self.story[1]))


# Readings that spell both requests alike before any rule reads them, registered by the check
# modules that own them (``number``: a length of time in other units).
SPELLINGS: list[Callable[[Side, Side], tuple[Side, Side]]] = []


def _alike(a: Side, b: Side) -> tuple[Side, Side]:
    a, b = align(a, b)
    for spell in SPELLINGS:
        a, b = spell(a, b)
    return a, b


class Doubt(str):
    """A gate's reason for a finding that may not change the plan: a detail said otherwise, or told
    on one side only (a number or a day of the story around the request). A verifier that reads both
    requests may settle it when it is sure (``guard.pipeline``); a plain ``str`` reason never is."""

    __slots__ = ()


@runtime_checkable
class Gate(Protocol):
    name: str
    kind: str

    def __call__(self, pair: Pair) -> str | None: ...


class RuleCheck:
    """A gate over the two texts alone: ``test(request_side, candidate_side)`` is true when they contradict.

    ``whole``: the check reads a sentence's structure (which words stand where), so for a conversation
    it reads the whole story, where an elliptical answer ("market", "next friday") has its sentence.
    ``doubt(a, b)``: true when a finding of this check may not change the plan (the same values said
    otherwise, or told by one side only); the reason is then a :class:`Doubt`."""

    kind = RULE

    def __init__(self, name: str, test: Callable[[Side, Side], bool], *, whole: bool = False,
                 doubt: Callable[[Side, Side], bool] | None = None) -> None:
        self.name = name
        self.test = test
        self.whole = whole
        self.doubt = doubt
        self.__doc__ = test.__doc__

    def __call__(self, pair: Pair) -> str | None:
        a, b = pair.story_sides if self.whole else pair.sides
        if a.tokens == b.tokens or not self.test(a, b):
            return None
        return Doubt(self.name) if self.doubt is not None and self.doubt(a, b) else self.name

    def __repr__(self) -> str:
        return f"RuleCheck({self.name!r})"


GATES: dict[str, Gate] = {}


def register(gate: Gate) -> Gate:
    """Add ``gate`` to the registry under its name (a second gate of the same name is refused)."""
    if not isinstance(getattr(gate, "name", None), str) or not gate.name:
        raise ValueError(f"a gate needs a non-empty string name, got {gate!r}")
    if gate.name in GATES and GATES[gate.name] is not gate:
        raise ValueError(f"a gate named {gate.name!r} is already registered; pick another name")
    GATES[gate.name] = gate
    return gate


def rule(name: str, *, whole: bool = False, doubt: Callable[[Side, Side], bool] | None = None
         ) -> Callable[[Callable[[Side, Side], bool]], Callable[[Side, Side], bool]]:
    """Decorator: register ``test(a, b) -> bool`` as the rule gate ``name`` (``whole``, ``doubt``: see :class:`RuleCheck`)."""

    def wrap(test: Callable[[Side, Side], bool]) -> Callable[[Side, Side], bool]:
        register(RuleCheck(name, test, whole=whole, doubt=doubt))
        return test

    return wrap


def lookup(name: str) -> Gate:
    """The registered gate called ``name``; a clear error naming the known ones otherwise."""
    try:
        return GATES[name]
    except KeyError:
        raise ValueError(f"no gate named {name!r}; known gates: {', '.join(sorted(GATES))}") from None
