"""Both requests read alike: tokens, normal forms and the word classes every check shares.

A request becomes a :class:`Side`: its text (Unicode NFKC, curly quotes straightened), its tokens
as typed (``raw``) and lower-cased (``tokens``). Contractions are split with or without their
apostrophe ("what's", "whats" -> "what is"; "dont" -> "do not"), chat spellings read as words
("pls" -> "please", "tmrw" -> "tomorrow"), an arrow between two words reads "to", a number's
unit symbol is a token of its own ("5%" -> "5 %", "$5" -> "$ 5"), and social talk that asks for
nothing (greetings, thanks, "if it's not too much trouble") is left out (``chatter.py``).

:func:`align` then gives both sides one spelling of a compound written apart, hyphenated or
joined ("to-do" / "todo", "log in" / "login"). Every table here is a closed class of English
(pronouns, auxiliaries, prepositions, number words); none is a list of a test set's words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .. import lexicon
from .chatter import strip_chatter

# A command-line flag ("-la", "--force") at the start of a word is one token, an identifier; so is a
# path ("./run.sh", "~/notes", "/var/log"). A unit symbol after a number or a currency sign before
# one is a token of its own.
TOKEN = re.compile(
    r"(?<!\S)--?[^\W\d_][\w-]*"
    r"|(?<![\w/])(?:~|\.{1,2})?/[\w.\-/~]*[\w~/]"
    r"|(?<![\w.,])\d{1,3}(?:,\d{3})+(?!\w|,\d)"  # "2,500": one number, its thousands grouped ("2,500, then": a comma after it ends it)
    r"|[#@]?\w+(?:[./\-:'’]\w+)*"
    r"|[%$€£¥°]",
    re.UNICODE,
)
ARROW = re.compile(r"\s*(?:->|→|⟶)\s*")

NUMBER_WORDS = frozenset({
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    "hundred", "thousand", "million", "billion", "half", "dozen", "second", "third",
    "fourth", "fifth",
})
DATE_WORDS = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "tomorrow", "yesterday", "tonight", "morning", "afternoon",
    "evening", "weekend", "week", "month", "year", "am", "pm", "noon", "midnight",
})
NOW = frozenset({"today", "now", "currently", "current", "right"})
RELATIONS = frozenset({"from", "to", "into", "onto", "than", "via", "between", "against", "vs", "versus"})
SKIP_AFTER_RELATION = frozenset({"the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "this", "that"})
WH_WORDS = frozenset({"what", "which", "who", "whom", "where", "when", "why", "how"})
UNIT_SYMBOLS = {"%": "percent", "$": "dollar", "€": "euro", "£": "pound", "¥": "yen", "°": "degree"}
# Written forms of units that WordNet does not know as such (currency codes, slang): units, not names.
UNIT_WORDS = {"pct": "percent", "usd": "dollar", "buck": "dollar", "bucks": "dollar", "eur": "euro", "gbp": "pound",
              "jpy": "yen", "chf": "franc", "cad": "dollar", "aud": "dollar", "inr": "rupee", "gb": "gigabyte",
              "mb": "megabyte", "kb": "kilobyte", "tb": "terabyte", "ms": "millisecond", "hrs": "hour", "mins": "minute",
              "secs": "second"}

# Cardinal number words read as digits ("two tickets" is "2 tickets"); "one" (also a pronoun) and
# "second" (also a unit of time) stay words.
CARDINALS = {w: str(n) for n, w in enumerate(
    ["zero", "_", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]) if w != "_"}
CARDINALS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                  "ninety": "90", "hundred": "100", "thousand": "1000", "dozen": "12"})


@dataclass(frozen=True, slots=True)
class Side:
    """One request as the checks read it."""

    text: str  # normalised, lower-case
    tokens: tuple[str, ...]  # lower-case
    raw: tuple[str, ...]  # as typed


def normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")


@lru_cache(maxsize=4096)
def side(text: str) -> Side:
    normalised = strip_chatter(normal(text), breaks=True)
    # A leading "No," / "Yes," answers a question; it neither negates nor quantifies the request
    # (a bare "no" or "yes" is the whole request and stays).
    normalised = re.sub(r"^\s*(?:no|nope|nah|yes|yeah|yep|yup|sure|ok|okay)\s*[,.!]\s*(?=\S)", "", normalised,
                        flags=re.IGNORECASE)
    # An arrow between two words says "to" ("nyc -> la", "eur→usd").
    normalised = ARROW.sub(" to ", normalised)
    raw = tuple(split_contractions(TOKEN.findall(normalised)))
    return Side(normalised.lower(), tuple(t.lower() for t in raw), raw)


# Contractions, closed classes of English: auxiliaries that take "n't", and the pronouns and question
# words that take "'s", "'re", "'ll"... They are recognised with the apostrophe or without ("dont",
# "whats", "youre": people type to agents without one), the latter only when WordNet does not know
# the joined word ("ill", "were", "well", "id" stay words).
_NOT_AUXILIARIES = {"do": "do", "does": "does", "did": "did", "is": "is", "are": "are", "was": "was", "were": "were",
                    "has": "has", "have": "have", "had": "had", "could": "could", "would": "would", "should": "should",
                    "must": "must", "need": "need", "might": "might", "ca": "can", "wo": "will", "sha": "shall"}
_CONTRACTING_HEADS = {"i", "you", "we", "they", "he", "she", "it", "that", "there", "here", "what", "who", "where",
                      "when", "why", "how", "which", "this", "let"}
CONTRACTION_TAILS = {"s": "is", "re": "are", "ll": "will", "ve": "have", "m": "am", "d": "would"}
# Chat spellings of ordinary words (a closed class of chat English).
CHAT_SPELLINGS = {"pls": ("please",), "plz": ("please",), "thx": ("thanks",), "u": ("you",), "ur": ("your",),
                  "tmrw": ("tomorrow",), "tmr": ("tomorrow",), "tomorow": ("tomorrow",), "tommorow": ("tomorrow",),
                  "rn": ("right", "now"), "asap": ("now",), "gonna": ("going", "to"), "wanna": ("want", "to"),
                  "gotta": ("have", "to"), "gimme": ("give", "me"), "lemme": ("let", "me"), "cuz": ("because",),
                  "b4": ("before",), "w/": ("with",), "w/o": ("without",), "msg": ("message",), "pic": ("picture",),
                  "pics": ("pictures",), "info": ("information",), "yr": ("your",), "abt": ("about",), "bc": ("because",),
                  "yep": ("yes",), "yup": ("yes",), "yeah": ("yes",), "ya": ("yes",), "yea": ("yes",), "nope": ("no",),
                  "nah": ("no",), "ok": ("okay",), "k": ("okay",), "kk": ("okay",)}


# Auxiliaries and modals after which a chat "ya" is "you" ("could ya unzip it").
_ADDRESSING = frozenset({"can", "could", "would", "will", "do", "did", "are", "have", "thank", "see"})


def _contraction(low: str) -> tuple[str, str] | None:
    """("what", "is") for "what's" or "whats"; ("do", "not") for "don't" or "dont"; else None."""
    bare = low.replace("'", "")
    apostrophe = "'" in low
    if not apostrophe and (bare in lexicon.FUNCTION_WORDS or lexicon.pos(bare)) and bare not in ("cant", "wont"):
        return None
    if bare.endswith("nt") and (apostrophe and low.endswith("n't") or not apostrophe) and bare[:-2] in _NOT_AUXILIARIES:
        return _NOT_AUXILIARIES[bare[:-2]], "not"
    for tail, word in CONTRACTION_TAILS.items():
        head = bare[: -len(tail)]
        if bare.endswith(tail) and head in _CONTRACTING_HEADS and (not apostrophe or low == f"{head}'{tail}"):
            return head, ("us" if head == "let" else word)
    return None


_TAILED = re.compile(r"\w+'(s|re|ll|ve|d|m)")
_POSSESSIVE = re.compile(r"\S*[^\W_]\S*'s")
_CLOCK = re.compile(r"\d+(am|pm)")


def split_contractions(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for tok in tokens:
        low = tok.lower()
        split = _contraction(low) if low.replace("'", "").isalpha() else None
        if low in ("ya", "yah") and out and out[-1].lower() in _ADDRESSING:
            out.append("you")  # "could ya", "do ya": the one addressed, not "yes"
        elif low in CHAT_SPELLINGS:
            out += CHAT_SPELLINGS[low]
        elif split is not None:
            out += [tok[: len(split[0])] if tok[: len(split[0])].lower() == split[0] else split[0], split[1]]
        elif low.endswith("n't") and len(low) > 3:
            out += [tok[:-3], "not"]
        elif _TAILED.fullmatch(low):
            head, tail = tok.split("'", 1)
            # a possessive "'s" is dropped ("Madrid's station" ~ "Madrid station").
            out += [head] + ([CONTRACTION_TAILS[tail.lower()]] if tail.lower() != "s" else [])
        elif _POSSESSIVE.fullmatch(low) and not low[:-2].replace("'", "").isalpha():
            out.append(tok[:-2])  # the possessive of a name or identifier: "draft.docx's name" ~ "draft.docx"
        elif _CLOCK.fullmatch(low):  # "7am" is "7 am"
            out += [tok[:-2], tok[-2:]]
        else:
            out.append(tok)
    return out


_NUMBER_TOKEN = re.compile(r"\d+(?:[.,:/]\d+)*(?:st|nd|rd|th|k|m)?")


@lru_cache(maxsize=8192)
def stops_after(side: Side) -> frozenset[int]:
    """The positions of the tokens a punctuation mark follows ("1.2k, pick a laptop": the number's).
    The tokens are found in order in the text; a token the text does not hold as such (a split
    contraction) ends the search, and no later token is said to have a stop after it."""
    out = set()
    at = 0
    for i, tok in enumerate(side.tokens):
        found = side.text.find(tok, at)
        if found < 0:
            break
        at = found + len(tok)
        rest = side.text[at:at + 3].lstrip(" ")
        if rest[:1] in (",", ";", ":", ".", "!", "?", ")") and not rest[1:2].isalnum():
            out.add(i)
    return frozenset(out)


def words_of(text: str) -> list[str]:
    """The words of ``text``, lower-case, contractions split ("don't": "do", "not")."""
    return list(_words(text))


@lru_cache(maxsize=8192)
def _words(text: str) -> tuple[str, ...]:  # every gate asks again for the same two texts
    return tuple(t.lower() for t in split_contractions(TOKEN.findall(text)))


def is_number(tok: str) -> bool:
    return tok[:1].isdigit() and bool(_NUMBER_TOKEN.fullmatch(tok))  # (every gate asks, for every token)


def number_key(tok: str) -> str:
    return CARDINALS.get(tok) or tok.replace(",", "")


def only_in(a: Side, b: Side) -> tuple[set[str], set[str]]:
    """The words each side has and the other lacks; two inflections of one word, each on one side
    only, cancel ("cheaper" / "cheap"), but a word shared by both cancels nothing ("show hidden
    files" / "hide hidden files" still differ by show / hide)."""
    a_set, b_set = set(a.tokens), set(b.tokens)
    a_only, b_only = a_set - b_set, b_set - a_set
    a_lemmas = {lexicon.lemma(t) for t in a_only}
    b_lemmas = {lexicon.lemma(t) for t in b_only}
    return ({t for t in a_only if lexicon.lemma(t) not in b_lemmas},
            {t for t in b_only if lexicon.lemma(t) not in a_lemmas})


def content(side: Side) -> list[str]:
    return [lexicon.lemma(t) for t in side.tokens if t not in lexicon.FUNCTION_WORDS and t not in RELATIONS]


def content_word(tok: str) -> bool:
    return (tok.isalpha() and tok not in lexicon.FUNCTION_WORDS and tok not in RELATIONS and tok not in NOW
            and tok not in NUMBER_WORDS)


def overlap(a: Side, b: Side) -> float:
    """Share of content words the two sides have in common (Jaccard), two inflections of one word
    counting as one ("servers" / "server": their shortest base forms differ, "server" / "serve")."""
    ca = {t for t in a.tokens if t not in lexicon.FUNCTION_WORDS and t not in RELATIONS}
    cb = {t for t in b.tokens if t not in lexicon.FUNCTION_WORDS and t not in RELATIONS}
    shared = min(len(cb), sum(1 for x in ca if any(x == y or lexicon.lemmas(x) & lexicon.lemmas(y) for y in cb)))
    return shared / max(1, len(ca) + len(cb) - shared)


# Two requests worded alike share at least this share of their content words (``overlap``).
ALIKE = 0.5


# Where one clause ends and the next begins: punctuation, or a word that joins two clauses.
CLAUSE_BREAK = re.compile(r"[.;:!?,]+(?:\s|$)|\b(?:and|then|also|plus|afterwards|next)\b")


def clause_sides(side: Side) -> list[Side]:
    """The side's clauses, each read as a side of its own."""
    parts = [[t.lower() for t in TOKEN.findall(part)] for part in CLAUSE_BREAK.split(side.text)]
    return [Side(" ".join(p), tuple(p), tuple(p)) for p in parts if p]


def backstory(detailed: Side, other: Side, has_detail: Callable[[Side], bool]) -> bool:
    """The details of ``detailed`` that ``other`` lacks (a name, a day) stand in clauses apart from
    the request: the clauses without them say all that ``other`` says. They tell the story around the
    request ("woohoo launch day at initech, can u tag the current commit as v2.0.0?", "i cooked too
    much pasta on tuesday, how long does it keep?"); inside the request ("email the report to priya")
    they change it."""
    parts = clause_sides(detailed)
    plain = [p for p in parts if not has_detail(p)]
    if len(plain) == len(parts) or not plain:
        return False
    told = Side(" ".join(p.text for p in plain), tuple(t for p in plain for t in p.tokens),
                tuple(t for p in plain for t in p.raw))
    return not uncovered(other.tokens, told)


def neighbours(side: Side, word: str) -> set[str]:
    """Lemmas of the words right before and right after ``word`` (past an article or possessive)."""
    toks = side.tokens
    out: set[str] = set()
    for i, tok in enumerate(toks):
        if tok != word:
            continue
        if i:
            out.add("<" + lexicon.lemma(toks[i - 1]))
        j = i + 1
        while j < len(toks) and toks[j] in SKIP_AFTER_RELATION:
            j += 1
        if j < len(toks):
            out.add(">" + lexicon.lemma(toks[j]))
    return out


def typo_of(word: str, others: set[str]) -> bool:
    """An unknown word one transposition, insertion, deletion or substitution away from a word of the
    other side. Only letters: "fix-7" and "fix-9" are two identifiers, not a typo."""
    if len(word) < 5 or not word.isalpha():
        return False
    for other in others:
        if abs(len(other) - len(word)) <= 1 and len(other) >= 5 and edit_distance_le1(word, other):
            return True
    return False


def shared_ends(x: Sequence[str], y: Sequence[str]) -> tuple[int, int]:
    """How many tokens the two share at the start, and then at the end (not counting the start's
    again): what lies between is the span in which they differ."""
    start = 0
    while start < min(len(x), len(y)) and x[start] == y[start]:
        start += 1
    end = 0
    while end < min(len(x), len(y)) - start and x[len(x) - 1 - end] == y[len(y) - 1 - end]:
        end += 1
    return start, end


def edit_distance_le1(a: str, b: str) -> bool:
    if a == b:
        return True
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    if len(a) > len(b):
        a, b = b, a
    return any(b[:i] + b[i + 1:] == a for i in range(len(b)))


def uncovered(words: list[str] | tuple[str, ...], b: Side) -> list[str]:
    """The content words among ``words`` that ``b`` does not cover: not there as such, nor a base
    form, a WordNet synonym or a typo of one of ``b``'s words. Names and numbers have their checks."""
    theirs = {t for t in b.tokens if t.isalpha()}
    their_lemmas = set().union(*(lexicon.lemmas(t) for t in theirs)) if theirs else set()
    their_content = [t for t in theirs if t not in lexicon.FUNCTION_WORDS]
    out = []
    for tok in words:
        if not content_word(tok) or tok in theirs or lexicon.lemmas(tok) & their_lemmas:
            continue
        if any(lexicon.synonyms(tok, w) for w in their_content) or typo_of(tok, theirs):
            continue
        out.append(tok)
    return out


def align(a: Side, b: Side) -> tuple[Side, Side]:
    """Compounds spelt apart, hyphenated or joined take one spelling: a run of words of one side
    (or a hyphenated word) that joins into a word of the other side becomes that word ("to-do" /
    "todo", "log in" / "login", "e-mail" / "email")."""
    return _join_into(a, set(b.tokens)), _join_into(b, set(a.tokens))


def _join_into(side: Side, others: set[str]) -> Side:
    toks, raw = list(side.tokens), list(side.raw)
    changed = False
    i = 0
    while i < len(toks):
        if "-" in toks[i] and not toks[i].startswith("-") and toks[i] not in others and toks[i].replace("-", "") in others:
            toks[i] = raw[i] = toks[i].replace("-", "")
            changed = True
        for n in (4, 3, 2):
            joined = "".join(t.replace("-", "") for t in toks[i:i + n])
            if len(toks[i:i + n]) == n and joined in others and joined not in toks and all(t.isalpha() for t in toks[i:i + n]):
                toks[i:i + n] = [joined]
                raw[i:i + n] = [joined]
                changed = True
                break
        i += 1
    return Side(side.text, tuple(toks), tuple(raw)) if changed else side
