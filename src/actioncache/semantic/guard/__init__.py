"""Gates: what a near neighbour must pass before it is served (``SemanticCache(gates=...)``).

Sentence embeddings place "turn on the lights" and "turn off the lights", "nyc to la" and "la to
nyc", "delete all my emails" and "delete some of my emails" closer together than many true
paraphrases, so no threshold separates them. After the vector search each candidate goes through
a pipeline of gates (:mod:`.pipeline`); each gate names what it found, or lets the candidate pass.
The gates are registered by name in one registry (:mod:`.registry`), one module each:

======================  =================================================================
``number``              digits, number words or units differ (:mod:`.number`)
``bound``               "under 200" / "over 200", "at least" / "at most" (:mod:`.number`)
``relation``            "by 20 %" / "to 20 %", two numbers in swapped roles (:mod:`.number`)
``date``                dates, days or their modifiers differ (:mod:`.date`)
``negation``            one side negated (:mod:`.polarity`)
``opposite``            antonyms, opposing prefixes, aspectual phases (:mod:`.polarity`)
``direction``           in/out, to/from, before/after ... on the same word (:mod:`.direction`)
``person``              another owner or addressee (:mod:`.person`)
``relative``            "my tenant" / "my landlord": another relation of the speaker (:mod:`.person`)
``quantifier``          all / some / only / first ... (:mod:`.quantifier`)
``comparison``          cheaper / more expensive (:mod:`.comparison`)
``modality``            did / will / should / can I (:mod:`.modality`)
``obligation``          must / may / should of what is stated, on both sides (:mod:`.modality`)
``entity``              a name, identifier or quoted string missing (:mod:`.entity`)
``environment``         production / staging / dev / my laptop: another target (:mod:`.environment`)
``role``                who does what to whom (:mod:`.role`)
``substitution``        one content word swapped in an otherwise identical request (:mod:`.substitution`)
``clause``              an added or dropped action (:mod:`.clause`)
``extra_action``        "X" / "X and send it", "X and my driver's license" (:mod:`.clause`)
``condition``           a stated condition or a scoping adjunct on one side only (:mod:`.condition`)
``speech_act``          a command, a question about it, or about its state (:mod:`.speech_act`)
``code_exact``          flags, paths, identifiers, operators, quoted strings as typed (:mod:`.code`)
``command_line``        two lines typed for a program, a word changed (:mod:`.code`)
``context``             the conversations before the two requests (:mod:`.context`)
======================  =================================================================

Before any rule reads them, both requests lose their greetings, thanks and hedges (:mod:`.chatter`).

Every rule comes from English grammar or from WordNet (``lexicon.py``), never from a list of the
words of a test set. They err on the side of a miss: a paraphrase that renames an entity ("NYC"
for "New York") or reorders arguments misses, and the agent plans afresh.
"""

from __future__ import annotations

from .context import ContextGate
from .pipeline import CONTRAST_CHECKS, DEFAULT_RULES, Pipeline, contrast, literal_guard
from .registry import (
    CONTEXT,
    GATES,
    RULE,
    VERIFIER,
    Gate,
    Pair,
    RuleCheck,
    lookup,
    register,
    rule,
)

__all__ = [
    "CONTEXT",
    "CONTRAST_CHECKS",
    "DEFAULT_RULES",
    "GATES",
    "RULE",
    "VERIFIER",
    "ContextGate",
    "Gate",
    "Pair",
    "Pipeline",
    "RuleCheck",
    "contrast",
    "literal_guard",
    "lookup",
    "register",
    "rule",
]
