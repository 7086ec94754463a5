"""``modality``: tense or modality of the request differs: past (did, was, has), future (will),
possibility or permission (can I, may I, might), obligation (must, have to, need to, required to),
advice (should, ought to); "can you ..." is politeness and does not count.

A modal that opens the request or stands by a pronoun subject is the request's own ("should I",
"I must"). One after any other subject, before its verb ("the report must include", "employees can
wear", "you need to sign"), is the modal of what the request states: it counts when the other side
says another modal there ("all PRs must have a reviewer" / "... should have ..."), never alone, so
that "I need to book a flight" stays "book a flight". Such a swap is the ``obligation`` rule's."""

from __future__ import annotations

from .. import lexicon
from .registry import rule
from .text import ALIKE, WH_WORDS, Side, overlap

_MODALITY = {
    "did": "past", "was": "past", "were": "past", "had": "past", "has": "past", "have": "past",
    "will": "future", "shall": "future", "won't": "future", "gonna": "future",
    "can": "possibility", "could": "possibility", "may": "possibility", "might": "possibility",
    "must": "obligation", "should": "advice", "ought": "advice", "shouldn't": "advice",
    "would": "conditional",
}
_SUBJECTS = {"i", "we", "you", "he", "she", "it", "they", "the", "my", "our", "this", "that", "there"}


def modalities(side: Side, simple_past: bool = True) -> set[str]:
    """Tense and modality of the request itself: an auxiliary that opens it or a question
    ("did I", "should we", "was the"), or follows a pronoun subject ("I should"). One inside a
    longer statement ("... can be used to ...") describes, it does not ask."""
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        kind = _MODALITY.get(tok)
        if kind is None:
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        prev = toks[i - 1] if i else ""
        opens = i == 0 or (i == 1 and toks[0] in WH_WORDS)
        if not (opens or (nxt in _SUBJECTS and nxt != "there") or prev in ("i", "we")):
            continue
        if nxt == "you" and kind in ("possibility", "future", "conditional"):
            continue  # "can you / could you / will you / would you": a polite request
        if kind == "possibility" and i == 1 and toks[0] in WH_WORDS:
            continue  # "how can I", "where can I": asks the way, as "how do I" does
        if kind == "conditional" and nxt in ("like", "love"):
            continue  # "I would like": a request
        if tok in ("has", "have", "had") and nxt not in ("been",) and not past_participle(nxt):
            perfect_question = i == 0 and any(past_participle(t) for t in toks[2:])  # "has the order shipped"
            if tok != "had" and not perfect_question:
                continue  # "has two doors", "have to": possession or obligation, not tense
        out.add(kind)
    if simple_past and _asks_in_simple_past(toks):
        out.add("past")
    return out


def _asks_in_simple_past(toks: tuple[str, ...]) -> bool:
    """A question whose subject is its question word, asked in the simple past: "what made the build
    fail", "who deployed this", "which test failed", "show me who changed line 42". It asks about the
    past as "why did the build fail" does, with no auxiliary to say so."""
    for i, wh in enumerate(toks):  # opening the request, or the question it embeds ("show me who changed it")
        if wh not in ("what", "who", "which"):
            continue
        for tok in toks[i + 1:i + 3]:
            if _simple_past(tok):
                return True
            if tok in _MODALITY or tok in ("is", "are", "am", "do", "does", "'s"):
                break  # "what is", "who does": the tense is the auxiliary's
    return False


def _simple_past(tok: str) -> bool:
    """A verb's past form: "-ed" of a verb ("failed", "deployed"), or an irregular one WordNet maps to
    its verb that is no noun itself ("made", "broke", "went", "ran"; not "saw", "found")."""
    if tok.endswith(("s", "ing")) or tok in _MODALITY:
        return False
    bases = [b for b in lexicon.lemmas(tok) if b != tok and "v" in lexicon.pos(b)]
    return bool(bases) and (tok.endswith("ed") or "n" not in lexicon.pos(tok))


def past_participle(tok: str) -> bool:
    return tok.endswith("ed") or tok in _IRREGULAR_PARTICIPLES


_IRREGULAR_PARTICIPLES = frozenset({"done", "gone", "sent", "made", "paid", "seen", "been", "taken", "given",
                                    "built", "bought", "sold", "won", "lost", "written", "run", "put", "set"})


# Verbs that with "to" say an obligation ("need to", "have to", "is required to"); a closed class.
_OBLIGING = frozenset({"need", "needs", "have", "has", "required", "obliged", "got"})
_POLITE = frozenset({"you", "ya"})


def stated_modals(side: Side) -> set[str]:
    """The modals of what the request states, wherever their subject stands: a modal verb before a
    verb's base form, "be", "have" or "not" ("the report must include", "passwords should be",
    "employees can wear"), or an obliging verb and "to" before one ("you need to sign", "I have to
    file"). "can you", "could you", "would you" ask politely; "how can I" asks the way (both
    excluded as in :func:`modalities`); "would" and "will" are the request's tense, not its content."""
    toks = side.tokens
    out = set()
    for i, tok in enumerate(toks):
        prev = toks[i - 1] if i else ""
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if tok in _OBLIGING and nxt == "to" and i + 2 < len(toks) and _bare_verb(toks[i + 2]):
            out.add("obligation")
            continue
        kind = _MODALITY.get(tok)
        if kind not in ("possibility", "obligation", "advice") or nxt in _POLITE:
            continue
        if kind == "possibility" and prev in WH_WORDS:
            continue  # "how can I": the way, as "how do I"
        after = toks[i + 2] if nxt in ("not", "also", "always", "only", "still") and i + 2 < len(toks) else nxt
        if tok == "ought" and after == "to" and i + 2 < len(toks):
            after = toks[i + 2]
        if after in ("be", "have", "not") or _bare_verb(after):
            out.add(kind)
    return out


def _bare_verb(tok: str) -> bool:
    """A verb's base form ("include", "wear", "bring"): WordNet knows it as a verb, and it is no
    "-s", "-ed" or "-ing" form of another verb ("includes", "wearing")."""
    if not tok.isalpha() or "v" not in lexicon.pos(tok):
        return False
    return not (tok.endswith(("s", "ed", "ing"))
                and any(b != tok and "v" in lexicon.pos(b) for b in lexicon.lemmas(tok)))


@rule("modality")
def modality(a: Side, b: Side) -> bool:
    """The tense or modality differs, or the same verb stands in another tense. A future against the
    present is no difference: a request is about what comes ("what's the weather tomorrow" / "how will
    the weather be tomorrow")."""
    all_a, all_b = modalities(a), modalities(b)
    ma, mb = all_a - {"future"}, all_b - {"future"}
    said = modalities(a, simple_past=False) | modalities(b, simple_past=False)
    if ma != mb and (ma and mb or "past" in said or overlap(a, b) >= ALIKE):
        # Two modalities ("did I pay" / "should I pay"), a past an auxiliary says on one side ("how many
        # days did I use"), or a modal on one side only of two requests worded alike ("can I cancel my
        # order" / "cancel my order"). A free rewording puts its own "should" or "can" in ("what are the
        # symptoms of x" / "what signs should I look for"), or asks "what changed" for "summarize the
        # changes": the request is the same.
        return True
    if "future" in all_a | all_b and "past" in all_a | all_b:
        return True
    # The same verb in another tense: "deployed" vs "deploy" (a passive "be used" is not a past).
    return _tense_shift(a, b) or _tense_shift(b, a)


def _tense_shift(a: Side, b: Side) -> bool:
    b_set = set(b.tokens)
    for i, tok in enumerate(a.tokens):
        if tok in b_set or not tok.endswith("ed") or len(tok) < 5:
            continue
        # A past tense has a subject right before it ("I cancelled", "who deployed"); otherwise
        # an -ed word is a participle ("titled", "be used"), not a tense.
        if i and a.tokens[i - 1] not in ("i", "we", "you", "he", "she", "they", "who", "it"):
            continue
        bases = lexicon.lemmas(tok) - {tok}
        if any(base in b_set and "v" in lexicon.pos(base) for base in bases):
            return True
    return False


_MODALS = frozenset({"possibility", "obligation", "advice"})


@rule("obligation")
def obligation(a: Side, b: Side) -> bool:
    """Each side says a modal and they differ: what must be against what may, can or should be ("the
    report must include the appendix" / "... may include ...", "should I pay" / "must I pay", "you
    need to sign" / "you may sign"). Not a detail said another way but another rule or question, so
    no verifier settles it (unlike ``modality``'s doubts)."""
    sa = (modalities(a, simple_past=False) | stated_modals(a)) & _MODALS
    sb = (modalities(b, simple_past=False) | stated_modals(b)) & _MODALS
    return bool(sa and sb and sa != sb)
