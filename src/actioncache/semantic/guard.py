"""The literal guard: a near neighbour is not a hit when the literal details of the request differ.

Sentence embeddings place "book a flight to Paris on May 3" and "... on May 4", "turn on the
lights" and "do not turn on the lights", "convert USD to EUR" and "convert EUR to USD" closer
together than many true paraphrases (all-MiniLM-L6-v2 scores the negation pair ~0.91, a real
paraphrase ~0.81). No threshold separates them, so a cheap rule check runs on every vector hit
(never on the exact-match path) and rejects a candidate when, between the request and the stored
prompt:

* the numbers differ (digits exactly; number words when both sides use some),
* the dates differ (month and weekday names, today/tomorrow/yesterday/tonight ...),
* one is negated and the other is not,
* a name (a capitalized word inside the sentence, or a quoted string) of one is absent from the other,
* the same relation word (from/to/into/than/via/between/per/for) is followed by different names,
  which catches swapped arguments.

It looks at spelling only, so a paraphrase that rewrites a name ("NYC" for "New York") becomes a
miss: the agent plans afresh, which is the safe side.
"""

from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(r"\d+(?:[.,:/-]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
# Double quotes and backticks; a single quote only as a pair around words, not an apostrophe.
_QUOTED = re.compile(r"[\"“”`]([^\"“”`\n]{1,80})[\"“”`]|(?<!\w)'([^'\n]{1,80})'(?!\w)")

_NUMBER_WORDS = {
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    "hundred", "thousand", "million", "billion", "half", "dozen", "first", "second", "third",
    "fourth", "fifth", "last", "next", "previous",
}
_DATE_WORDS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "today", "tomorrow", "yesterday", "tonight", "morning", "afternoon",
    "evening", "weekend", "week", "month", "year", "am", "pm",
}
# "may" is also a verb: it counts as a date only next to a number ("May 3", "3 May").
_AMBIGUOUS_DATES = {"may", "march", "second"}
_NEGATIONS = {
    "not", "no", "never", "none", "nothing", "nobody", "nor", "neither", "without", "cannot",
    "can't", "don't", "doesn't", "didn't", "won't", "isn't", "aren't", "wasn't", "weren't",
    "shouldn't", "wouldn't", "couldn't", "haven't", "hasn't", "hadn't", "mustn't", "stop", "unless",
    "except", "exclude", "excluding",
}
_RELATIONS = {"from", "to", "into", "than", "via", "between", "per", "for", "over", "against", "vs", "versus"}
# Words capitalized inside a sentence that are not names.
_NOT_NAMES = {"i", "i'm", "i've", "i'd", "i'll", "ok", "okay", "please"}


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(_normal(text))


def _numbers(tokens: list[str]) -> tuple[set[str], set[str]]:
    """Digit groups, and number/ordinal words (which also serve as ordinary words: "one can", "first")."""
    digits, words = set(), set()
    for tok in tokens:
        low = tok.lower()
        if tok[0].isdigit():
            digits.add(low.replace(",", ""))
        elif low in _NUMBER_WORDS:
            words.add(low)
    return digits, words


def _numbers_agree(a: tuple[set[str], set[str]], b: tuple[set[str], set[str]]) -> bool:
    # Digits must match exactly. Number words only contradict when both sides use some:
    # "the first episode" vs "the second episode", but not "one can ..." vs a rewording without it.
    return a[0] == b[0] and (not a[1] or not b[1] or a[1] == b[1])


def _dates(tokens: list[str]) -> set[str]:
    out = set()
    for i, tok in enumerate(tokens):
        low = tok.lower()
        if low not in _DATE_WORDS:
            continue
        if low in _AMBIGUOUS_DATES:
            near = tokens[max(0, i - 1):i] + tokens[i + 1:i + 2]
            if not any(t[0].isdigit() for t in near):
                continue
        out.add(low[:3] if low in _months_long() else low)
    return out


def _months_long() -> set[str]:
    return {"january", "february", "march", "april", "june", "july", "august", "september", "october",
            "november", "december"}


def _negated(tokens: list[str]) -> bool:
    return any(t.lower() in _NEGATIONS or t.lower().endswith("n't") for t in tokens)


def _names(text: str, tokens: list[str]) -> set[str]:
    """Capitalized words not at a sentence start, and quoted strings, lower-cased."""
    names = {q.strip().lower() for pair in _QUOTED.findall(_normal(text)) for q in pair if q.strip()}
    sentence_start = True
    for tok in tokens:
        if tok[:1].isupper() and not sentence_start and tok.lower() not in _NOT_NAMES:
            names.add(tok.lower())
        sentence_start = False
    # A new sentence starts after . ! ? ; the tokenizer drops punctuation, so find them in the text.
    for match in re.finditer(r"[.!?;:]\s+([^\W\d_]+)", _normal(text)):
        word = match.group(1)
        if word[:1].isupper():
            names.discard(word.lower())
    return names


def _relations(tokens: list[str]) -> dict[str, str]:
    """Relation word -> the name-like token right after it ("from" -> "paris")."""
    out: dict[str, str] = {}
    for i, tok in enumerate(tokens[:-1]):
        low = tok.lower()
        nxt = tokens[i + 1]
        if low in _RELATIONS and (nxt[:1].isupper() or nxt[0].isdigit()):
            out.setdefault(low, nxt.lower())
    return out


def literal_guard(request: str, candidate: str) -> bool:
    """True when ``candidate`` may answer ``request``: no literal detail of one contradicts the other."""
    a_tokens, b_tokens = _tokens(request), _tokens(candidate)
    if not _numbers_agree(_numbers(a_tokens), _numbers(b_tokens)):
        return False
    if _dates(a_tokens) != _dates(b_tokens):
        return False
    if _negated(a_tokens) != _negated(b_tokens):
        return False
    a_words = {t.lower() for t in a_tokens}
    b_words = {t.lower() for t in b_tokens}
    a_text, b_text = _normal(request).lower(), _normal(candidate).lower()
    for name in _names(request, a_tokens):
        if name not in b_words and name not in b_text:
            return False
    for name in _names(candidate, b_tokens):
        if name not in a_words and name not in a_text:
            return False
    a_rel, b_rel = _relations(a_tokens), _relations(b_tokens)
    return all(a_rel[word] == b_rel[word] for word in a_rel.keys() & b_rel.keys())
