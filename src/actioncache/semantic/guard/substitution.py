"""``substitution``: one short span of content words swapped for a non-synonym (or added) in an
otherwise identical request ("share it with the finance team" / "... legal team", "alphabetical" /
"reverse alphabetical"). A WordNet synonym or a typo is no swap ("buy" / "purchase")."""

from __future__ import annotations

from .. import lexicon
from .entity import abbreviates
from .registry import rule
from .text import NOW, RELATIONS, Side, edit_distance_le1, shared_ends


@rule("substitution", whole=True)
def substitution(a: Side, b: Side) -> bool:
    """One short span of content words differs, the rest of the two requests alike."""
    return _swapped(a.tokens, b.tokens)


def _swapped(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
    start, end = shared_ends(x, y)
    # Articles and prepositions go with their nouns ("an alarm" / "a timer", "main" / "the release
    # branch", "a flight to" / "a hotel in"): the swap is in the content words.
    raw_a = [w for w in x[start:len(x) - end] if w not in _ARTICLES]
    raw_b = [w for w in y[start:len(y) - end] if w not in _ARTICLES]
    span_a = tuple(w for w in raw_a if w not in RELATIONS and w not in _PREPOSITIONS)
    span_b = tuple(w for w in raw_b if w not in RELATIONS and w not in _PREPOSITIONS)
    if len(span_a) > 1 or len(span_b) > 1:
        span_a, span_b = tuple(raw_a), tuple(raw_b)  # a longer rewording with its own prepositions: style
    if not (span_a or span_b) or len(raw_a) > 3 or len(raw_b) > 3 or start + end == 0:
        return False
    words = list(span_a + span_b)
    if start == 0 and not (span_a and span_b) and runs(words):
        return False  # "run git push" / "git push": the verb only says to run what follows
    if not all(w.isalpha() and w not in lexicon.FUNCTION_WORDS and w not in NOW for w in words):
        return False  # a changed function word is the other checks' business (or style)
    if not (span_a and span_b) and all("r" in lexicon.pos(w) for w in words):
        return False  # an added adverb ("still", "again") colours the request, it does not change it
    if len(span_a) == 1 and len(span_b) == 1:
        p, q = span_a[0], span_b[0]
        if lexicon.synonyms(p, q) or edit_distance_le1(p, q):
            return False
        if start == 0 and _verb(p) and _verb(q) and not lexicon.opposite(p, q) and not _phase_swap(p, q):
            # The command's verb reworded ("delete" / "remove", "drop" / "delete"): WordNet lists few
            # such pairs as synonyms, and the ones that are not the same act are opposites (the
            # opposite check's) or left to the learned verifier.
            return False
    if (len(span_a) == 1 and abbreviates(span_a[0], list(span_b))) or (len(span_b) == 1 and abbreviates(span_b[0], list(span_a))):
        return False  # a short form of the other side's words ("PRs" / "pull requests")
    return not ({lexicon.lemma(w) for w in span_a} & {lexicon.lemma(w) for w in span_b})


_ARTICLES = frozenset({"a", "an", "the"})
# Phases of an activity whose verbs are few (``lexicon.phase``): another verb in their place names
# another action ("pause the music" / "play the music"). Starting and stopping have many verbs
# ("launch", "run", "boot"; "kill", "shut", "cancel"), so a swap there is left to the other checks.
_FEW_VERBS = frozenset({"break", "continue", "restart"})


def _phase_swap(p: str, q: str) -> bool:
    return bool({lexicon.phase(p), lexicon.phase(q)} & _FEW_VERBS) and lexicon.phase(p) != lexicon.phase(q)


def _verb(word: str) -> bool:
    return "v" in lexicon.pos(lexicon.lemma(word))
_PREPOSITIONS = frozenset({"in", "on", "at", "for", "of", "with", "by", "about", "near", "inside"})


def runs(words: list[str]) -> bool:
    """One verb that means running a program (WordNet: a synonym of "execute")."""
    return len(words) == 1 and (words[0] == "execute" or lexicon.synonyms(words[0], "execute")) and "v" in lexicon.pos(words[0])
