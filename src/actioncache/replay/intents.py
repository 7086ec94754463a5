"""Clicks chosen for the input: re-decided on each replay, never replayed by identity for another query.

A search for "clip-on desk lamp" ends with a click on the result "Clip-on Desk Lamp". Replayed for
"oak floor lamp", that click must land on the oak lamp, not on the clip-on lamp that is still in the
list. So a click whose target depends on the input carries a *choice* (``Action.choose``): the rule
that picked it and the plan index of the ``input_text`` that holds the query::

    {"rule": "query_match", "query": 0}     # "the result the query named"

Rules: ``query_match`` (the candidate whose text names every word of the query, the closest such),
``first``, ``last``, ``cheapest``, ``most_expensive`` (by the price in the candidate's item text),
``custom`` (``intention`` says what in words, for a resolver that reads it, such as an LLM) and
``unknown`` (the recorder saw the click depend on the input but not why).

On replay the click is re-decided by a *resolver* ``resolve(choice) -> Element | id | None`` among
the *candidates*: the elements of the current page in the recorded element's group (same tag,
role, type, form target and link directory: the other results' links or "Add to cart" buttons).
:func:`rule_resolver` is the default; :func:`llm_resolver` asks a chat model. When the resolver
declines, a replay with the recorded query clicks the recorded element (found by fingerprint), and a
replay with another query stops with ``intent_unresolved``: it never clicks the recorded item for
another query.

The browser recorder infers a choice (:func:`infer_choice`) for a click after a typed query when the
clicked element names a word of the query, or appeared after the query was typed among several
like it (a result list); ``rec.click(target, intent="cheapest")`` states one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..keys import sha256_hex
from .element import Element
from .fingerprints import element_fingerprint, fingerprint_payload
from .validation import reply_text

if TYPE_CHECKING:
    from .page import Page

QUERY_MATCH = "query_match"
FIRST = "first"
LAST = "last"
CHEAPEST = "cheapest"
MOST_EXPENSIVE = "most_expensive"
CUSTOM = "custom"
UNKNOWN = "unknown"

#: The rules and how a recording describes them (the ``intention`` a resolver reads).
RULES = {
    QUERY_MATCH: "the result the query named",
    FIRST: "the first result",
    LAST: "the last result",
    CHEAPEST: "the cheapest result",
    MOST_EXPENSIVE: "the most expensive result",
    UNKNOWN: "the result chosen after the query",
}

#: Parts of the fingerprint that tell one result from another; left out of the group key.
_PER_ITEM_PARTS = ("text", "accessible_name", "label", "aria-label", "title", "alt", "value", "placeholder",
                   "href", "data-testid", "for")
_WORD = re.compile(r"[^\W_]+")
_STOPWORDS = frozenset({"a", "an", "and", "at", "by", "for", "in", "of", "on", "or", "the", "to", "with"})
_PRICE = re.compile(r"[$€£¥]\s*(\d[\d,]*(?:\.\d+)?)|(\d[\d,]*(?:\.\d+)?)\s*(?:[$€£¥]|(?:USD|EUR|GBP)\b)")


def words(text: str | None) -> set[str]:
    """The words of ``text`` as the rules compare them: case-folded, stop words out, a plural's
    ``s`` dropped ("Lamps" names "lamp")."""
    out = set()
    for word in _WORD.findall((text or "").casefold()):
        if word in _STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out


def group_key(element: Element | Mapping[str, Any]) -> str:
    """Elements with the same key are alternatives of one choice (see the module docstring)."""
    element = Element.from_dict(element)
    payload = fingerprint_payload(element, _PER_ITEM_PARTS)
    href = element.attributes.get("href", "").split("#", 1)[0].split("?", 1)[0]
    payload["link_directory"] = href.rsplit("/", 1)[0] if "/" in href else ("" if not href else ".")
    payload["in_item"] = bool(element.item)
    payload["frame"] = element.frame
    return sha256_hex(payload)


def candidates_for(recorded: Element | Mapping[str, Any], page: Page) -> list[Element]:
    """The elements of ``page`` in the recorded element's group, in document order."""
    key = group_key(recorded)
    return [e for e in page.elements if group_key(e) == key]


#: What follows an amount and makes it a rate, not a price: ``/`` and a word (``$9/mo``, ``€2 / kg``) or
#: ``per``/``a``/``an`` and a word (``$9 per month``, ``$9 a month``). The word is the rate's unit.
_RATE = re.compile(r"\s*(?:/\s*([^\W\d_]+)|(?:per|a|an)\s+([^\W\d_]+))", re.IGNORECASE)


def amounts_of(element: Element) -> set[tuple[float, str]]:
    """Every amount named in the element's item text (else its own text), with its unit: ``""`` for a
    price, the rate's word for a rate (``$9/mo`` is ``(9.0, "mo")``)."""
    found: set[tuple[float, str]] = set()
    for text in (element.item, f"{element.name} {element.text}"):
        text = text or ""
        for match in _PRICE.finditer(text):
            number = (match.group(1) or match.group(2) or "").replace(",", "")
            rate = _RATE.match(text, match.end())
            unit = (rate.group(1) or rate.group(2)).casefold() if rate else ""
            try:
                found.add((float(number), unit))
            except ValueError:
                continue
        if found:
            return found
    return found


def prices_of(element: Element) -> set[float]:
    """Every price named in the element's item text (else its own text); rates (``$9/mo``) are no price."""
    return {amount for amount, unit in amounts_of(element) if not unit}


def price_of(element: Element) -> float | None:
    """The price named in the element's item text (else its own text); ``None`` without one, or when
    it names several (a savings badge, a unit price, a monthly rate: which one is the price is not
    ours to guess)."""
    found = prices_of(element)
    return next(iter(found)) if len(found) == 1 else None


@dataclass
class ClickChoice:
    """What a resolver decides on: which of ``candidates`` the recorded click means in this run.

    ``rule`` and ``intention`` say how the recording chose; ``query`` is the text typed in this run
    where the recording typed ``recorded_query`` (``None`` when unknown: a secret, or typed by the
    agent before the replay resumed); ``recorded`` is the element the recording clicked; ``data``
    the caller's ``context=``.
    """

    rule: str
    intention: str
    query: str | None
    recorded_query: str | None
    recorded: Element
    candidates: list[Element]
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def personalized(self) -> bool:
        """Whether this run's query differs from the recording's (or is not known to be the same)."""
        if self.query is None or self.recorded_query is None:
            return True
        return words(self.query) != words(self.recorded_query) or not words(self.query)


#: ``resolve(choice)`` returns the chosen candidate (an :class:`Element` of ``choice.candidates``, or
#: its id), or ``None`` to decline.
Resolver = Callable[[ClickChoice], "Element | str | None"]


def _closeness(element: Element, wanted: set[str]) -> tuple[int, int, int] | None:
    """How well ``element`` is named by the query words ``wanted``: (0 in its own name or 1 only in its
    item, its own words beyond the query, its item's words beyond the query); ``None`` when it does not
    name them all."""
    own = words(f"{element.name} {element.text}")
    whole = own | words(element.item)
    if not wanted <= whole:
        return None
    return (0 if wanted <= own else 1, len(own - wanted), len(whole - wanted))


def _query_match(choice: ClickChoice) -> Element | None:
    wanted = words(choice.query)
    if not wanted:
        return None
    # The chosen result may not be named less closely than the recorded one was by the recorded query:
    # a "Clip-on Desk Lamp Shade" is not what "clip-on desk lamp" named when the lamp itself is gone.
    recorded = _closeness(choice.recorded, words(choice.recorded_query)) if choice.recorded_query else None
    limit = recorded[:2] if recorded is not None else (0, 0)
    ranked = []
    for element in choice.candidates:
        key = _closeness(element, wanted)
        if key is not None and key[0] <= limit[0] and key[1] <= limit[1]:
            ranked.append((key, element))
    ranked.sort(key=lambda pair: pair[0])
    if not ranked or (len(ranked) > 1 and ranked[0][0] == ranked[1][0]):
        return None  # nothing, or two results the query names equally well: not ours to guess
    return ranked[0][1]


def _by_price(choice: ClickChoice, highest: bool) -> Element | None:
    named = [amounts_of(e) for e in choice.candidates]
    if any(len(amounts) > 1 for amounts in named):
        return None  # one candidate names several amounts: the cheapest cannot be told
    units = {unit for amounts in named for _, unit in amounts}
    if units - {""}:
        # A rate ($9/mo) is no price: it cannot be compared with a price, nor with a rate of another unit
        # or of a unit the recording did not choose by.
        recorded = {unit for _, unit in amounts_of(choice.recorded)} if choice.recorded is not None else set()
        if len(units) > 1 or units != recorded:
            return None
        return _lowest([(a, e) for amounts, e in zip(named, choice.candidates) for a, _ in amounts], highest)
    return _lowest([(price, e) for e in choice.candidates if (price := price_of(e)) is not None], highest)


def _lowest(priced: list[tuple[float, Element]], highest: bool) -> Element | None:
    if not priced:
        return None
    best = max(p for p, _ in priced) if highest else min(p for p, _ in priced)
    return next(e for p, e in priced if p == best)


def rule_resolver(choice: ClickChoice) -> Element | None:
    """The default resolver: the rules above, by their definitions; ``custom`` and ``unknown`` decline."""
    if not choice.candidates:
        return None
    if choice.rule == QUERY_MATCH:
        return _query_match(choice)
    if choice.rule == FIRST:
        return choice.candidates[0]
    if choice.rule == LAST:
        return choice.candidates[-1]
    if choice.rule in (CHEAPEST, MOST_EXPENSIVE):
        return _by_price(choice, highest=choice.rule == MOST_EXPENSIVE)
    return None


def choice_for(rule_or_intention: str, query_index: int | None) -> tuple[dict[str, Any], str]:
    """``Action.choose`` and ``Action.intention`` for a stated intent: a rule name or words."""
    if not isinstance(rule_or_intention, str) or not rule_or_intention.strip():
        raise ValueError(f"intent must be one of {', '.join(sorted(RULES))} or a sentence, not {rule_or_intention!r}")
    text = " ".join(rule_or_intention.split())
    rule = text if text in RULES else CUSTOM
    return {"rule": rule, "query": query_index}, RULES.get(rule, text)


def infer_choice(element: Element, page: Page, query_index: int, query: str,
                 page_at_query: Page) -> tuple[dict[str, Any], str] | None:
    """The choice of a recorded click after ``query`` was typed, or ``None`` when it does not depend on it.

    It does when the element names a word of the query, or when it was not on the page while the query
    was typed (``page_at_query``) and is one of several alike (a result among results).
    """
    group = candidates_for(element, page)
    named = bool(words(query) & words(f"{element.name} {element.text} {element.item}"))
    appeared = not page_at_query.ids_for(element_fingerprint(element))
    if not (named or (appeared and len(group) >= 2)):
        return None
    named_best = _query_match(ClickChoice(QUERY_MATCH, RULES[QUERY_MATCH], query, query, element, group))
    rule = QUERY_MATCH if named_best is not None and named_best.id == element.id else UNKNOWN
    return {"rule": rule, "query": query_index}, RULES[rule]


# --- an LLM as the resolver -----------------------------------------------------------------------

LLM_SYSTEM_PROMPT = (
    "You choose which element a browser agent clicks. You get what the agent meant (its intention), the "
    "text it typed in this run, and a numbered list of candidates with their text. Reply with the number "
    "of the one candidate the intention means for this run, or 0 if none of them fits."
)


def llm_resolver(call: Callable[..., Any], **options: Any) -> Resolver:
    """A resolver that sends the intention and the candidates to a chat model (a small LLM will do).

    ``call(messages=[...], **options)`` is any chat-completion callable (the YAML runtime's
    ``llm.call``, or a wrapper around an SDK client); its reply (a string, or a dict with
    ``content``) must hold the chosen number. ``0``, no number or a number out of range declines.
    """
    def resolve(choice: ClickChoice) -> Element | None:
        listing = "\n".join(f"{i}. {(c.item or c.name or c.text)[:200]}" for i, c in enumerate(choice.candidates, 1))
        user = (f"Intention: {choice.intention}\nTyped in this run: {choice.query or '(unknown)'}\n"
                f"Candidates:\n{listing}\nUser data: {json.dumps(dict(choice.data), default=str)[:2000]}")
        reply = call(messages=[{"role": "system", "content": LLM_SYSTEM_PROMPT},
                               {"role": "user", "content": user}], **options)
        return choice.candidates[index - 1] if 1 <= (index := reply_number(reply_text(reply))) <= len(
            choice.candidates) else None

    return resolve


def reply_number(text: str) -> int:
    """The one candidate number a reply names, else ``0`` (declines): a negative number ("-1" for none),
    or several different numbers ("not 1, the answer is 2") are no answer."""
    found = {int(n) for n in re.findall(r"(?<![\w.])-?\d+(?!\w)(?!\.\d)", text)}
    if len(found) != 1:
        return 0
    number = found.pop()
    return number if number > 0 else 0


def pick(choice: ClickChoice, picked: Element | str | None) -> Element | None:
    """The candidate a resolver returned (by object or id); anything not a candidate is refused."""
    if picked is None:
        return None
    wanted = picked.id if isinstance(picked, Element) else picked
    if not isinstance(wanted, str):
        raise TypeError(f"a resolver returns a candidate Element, its id or None, not {type(picked).__name__}")
    for candidate in choice.candidates:
        if candidate.id == wanted:
            return candidate
    raise ValueError(f"the resolver chose {wanted!r}, which is not one of the {len(choice.candidates)} candidates")


__all__: Sequence[str] = ("CHEAPEST", "CUSTOM", "ClickChoice", "FIRST", "LAST", "MOST_EXPENSIVE", "QUERY_MATCH",
                          "RULES", "Resolver", "UNKNOWN", "candidates_for", "choice_for", "group_key", "infer_choice",
                          "llm_resolver", "price_of", "rule_resolver", "words")
