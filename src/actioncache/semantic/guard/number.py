"""``number``: the digits differ, or the number words, or the unit of a shared number or of a rate.

"5 minutes" / "5 hours", "fix-7" / "fix-9" (digits inside identifiers count), "three" / "four",
"7 am" / "7 pm", "per second" / "per minute", "3 times a day" / "... a week". An inflection or a
WordNet abbreviation is the same unit ("5 min" / "5 minutes", "per sec" / "per second").

``bound``: a bound on a shared number faces the other way ("under 200" / "over 200").
``relation``: a shared number stands in another relation ("by 20 %" / "to 20 %"), or two shared
numbers trade relations ("move the 2pm call to 4pm" / "move the 4pm call to 2pm").
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from .. import lexicon
from .registry import SPELLINGS, rule
from .story import one_sided_doubt, request_part
from .text import (
    CARDINALS,
    NUMBER_WORDS,
    SKIP_AFTER_RELATION,
    UNIT_SYMBOLS,
    UNIT_WORDS,
    Side,
    is_number,
    number_key,
    stops_after,
)

_NUMERONYM = re.compile(r"[a-z]\d{1,2}[a-z]")  # "k8s", "i18n": a word, spelt by its ends (a name to the entity check)


@lru_cache(maxsize=8192)
def digit_groups(side: Side) -> frozenset[str]:
    """Every run of digits, inside identifiers too ("fix-7", "PROJ-123", "iphone15"), and the
    cardinal number words as digits; one value spelt another way is one group: "60,000" / "60k" /
    "sixty thousand", "five hundred" / "500", "two thousand five hundred" / "2500", "1.5k" / "1500",
    "a dozen" / "12", "sixty-five" / "65", "21:00" / "9" (its unit "pm")."""
    toks = list(side.tokens)
    out: set[str] = set()
    spans = number_spans(side.tokens)
    covered = {k for start, end, _ in spans for k in range(start, end)}
    out |= {value for _, _, value in spans}
    for i, t in enumerate(toks):
        if i in covered or _NUMERONYM.fullmatch(t):
            continue
        millions = re.fullmatch(r"(\d+(?:\.\d+)?)M", side.raw[i]) if len(side.raw) == len(toks) else None
        if millions:  # "2M rows" is "2 million rows" (a lower-case "5m" may be minutes or metres)
            out.add(_value(float(millions[1]) * 10**6))
            continue
        time = clock(t)
        if time:
            out.add(time[0])
            continue
        out |= {g.replace(",", "") for g in re.findall(r"\d+(?:[.,:/]\d+)*", t)}
        if "-" in t:  # "two-factor" says two as "2fa" does
            out |= {value for _, _, value in number_spans(t.split("-"))}
    for run in _THOUSANDS.findall(side.text):  # "60,000" was read as "60" and "000"
        parts = run.split(",")
        out -= set(parts)
        out.add("".join(parts))
    return frozenset(out)


_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,]*\d)")
# Number words that multiply what comes before them ("five hundred", "2 thousand", "two dozen").
_MULTIPLIERS = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "dozen": 12}
# A plain number as typed: "500", "2.5", "60k", "1.5k" (not a time, a date, an ordinal or an identifier).
_PLAIN = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(k?)")


def _value(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def number_spans(toks: tuple[str, ...] | list[str]) -> list[tuple[int, int, str]]:
    return list(_number_spans(tuple(toks)))  # every gate asks for the same requests' numbers


def _one_is_a_number(parts: list[str], j: int, current: int, started: bool, following: str) -> bool:
    """"one" (also a pronoun: "the first one", "this one") is a number inside a composed one: after a
    tens word ("twenty-one", "forty one") or before a multiplier ("one hundred", "one-thousand")."""
    before = parts[j - 1] if j else None
    tens = (before is not None and before in CARDINALS and int(CARDINALS[before]) % 10 == 0
            and int(CARDINALS[before]) >= 20) or (before is None and started and current % 100 >= 20
                                                 and current % 10 == 0)
    after = parts[j + 1] if j + 1 < len(parts) else following
    return tens or after in _MULTIPLIERS


@lru_cache(maxsize=8192)
def _number_spans(toks: tuple[str, ...]) -> tuple[tuple[int, int, str], ...]:
    """The numbers of a request as ``(start, end, value)``: a run of number words composes into one
    value ("two thousand five hundred" is 2500, "a dozen" 12, "two hundred and fifty" 250, "half a
    dozen" 6, "sixty-five" 65), as does a plain number and the multipliers after it ("5 thousand",
    "1.5 million", "1.5k")."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(toks)
    while i < n:
        tok = toks[i]
        plain = _PLAIN.fullmatch(tok)
        if plain:
            number = float(plain[1].replace(",", "")) * (1000 if plain[2] else 1)
            k = i + 1
            while k < n and toks[k] in _MULTIPLIERS:
                number *= _MULTIPLIERS[toks[k]]
                k += 1
            # as typed when nothing multiplies it ("007", "2.50" stay as they are)
            out.append((i, k, _value(number) if plain[2] or k > i + 1 else tok.replace(",", "")))
            i = k
            continue
        start = i
        total, current, started = 0, 0, False
        if tok == "half" and tuple(toks[i + 1:i + 3]) == ("a", "dozen"):
            out.append((i, i + 3, "6"))
            i += 3
            continue
        if tok in ("a", "an") and i + 1 < n and toks[i + 1] in _MULTIPLIERS:
            i += 1  # "a hundred", "a dozen": one of them
        k = i
        while k < n:
            parts = toks[k].split("-")
            following = toks[k + 1] if k + 1 < n else ""
            parts = ["1" if p == "one" and _one_is_a_number(parts, j, current, started, following) else p
                     for j, p in enumerate(parts)]
            if not all(p in CARDINALS or p in _MULTIPLIERS or p == "1" for p in parts):
                # "two hundred and fifty": "and" inside a run, after a multiplier, before a cardinal
                if toks[k] == "and" and started and toks[k - 1] in _MULTIPLIERS and k + 1 < n \
                        and toks[k + 1].split("-")[0] in CARDINALS and toks[k + 1] not in _MULTIPLIERS:
                    k += 1
                    continue
                break
            for p in parts:
                if p in _MULTIPLIERS:
                    current = max(current, 1) * _MULTIPLIERS[p]
                    if _MULTIPLIERS[p] >= 1000:
                        total, current = total + current, 0
                else:
                    current += 1 if p == "1" else int(CARDINALS[p])
            started = True
            k += 1
        if started:
            out.append((start, k, str(total + current)))
            i = k
        else:
            i = start + 1
    return tuple(out)


def spelt(side: Side) -> tuple[str, ...]:
    """The request's tokens with each number spelt one way, as its value, and a unit symbol or a
    unit's written form as the unit's name after it: "send five hundred dollars" and "send $500"
    are both ``send 500 dollar``."""
    toks = side.tokens
    starts = {start: (end, value) for start, end, value in number_spans(toks)}
    out: list[str] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok in UNIT_SYMBOLS and i + 1 in starts:
            end, value = starts[i + 1]
            out += [value, UNIT_SYMBOLS[tok]]
            if end < len(toks) and _unit_name(toks[end]) == UNIT_SYMBOLS[tok]:
                end += 1  # "$5 dollars"
            i = end
            continue
        if i in starts:
            end, value = starts[i]
            out.append(value)
            if end < len(toks) and toks[end].isalpha() and toks[end] not in lexicon.FUNCTION_WORDS:
                out.append(_unit_name(toks[end]))
                end += 1
            i = end
            continue
        out.append(tok)
        i += 1
    return tuple(out)


def clock(tok: str) -> tuple[str, str] | None:
    """A time on a 24-hour clock ("21:00", "02:00") as the number a 12-hour clock says and its half
    ("9", "pm"; "2", "am"; "9:30", "pm"), so that it meets "9pm" and "9 pm"; else None."""
    m = re.fullmatch(r"(\d{2}):(\d{2})", tok)
    if not m or int(m[1]) > 23 or int(m[2]) > 59 or not (int(m[1]) > 12 or m[1].startswith("0")):
        return None
    hour = int(m[1])
    twelve = str(hour % 12 or 12) + ("" if m[2] == "00" else f":{m[2]}")
    return twelve, ("pm" if hour >= 12 else "am")


# Units of time and what they hold: seconds for the units that convert exactly, months for the
# calendar's ("30 days" is not "a month", "12 weeks" not "3 months"; "a year" is "12 months").
_SECONDS = {"second": 1, "sec": 1, "secs": 1, "minute": 60, "min": 60, "mins": 60, "hour": 3600, "hr": 3600,
            "hrs": 3600, "day": 86400, "week": 604800, "fortnight": 1209600}
_MONTHS = {"month": 1, "year": 12, "decade": 120}
# A unit counted once: "a week", "every minute", "one hour" (not after a number: "twice a week" is a rate).
_ONCE = frozenset({"a", "an", "one", "every", "each", "per"})
_EVERY = frozenset({"every", "each", "per"})


def _time_unit(word: str) -> tuple[str, float] | None:
    for form in (word, lexicon.lemma(word), word[:-1] if word.endswith("s") else word):
        if form in _SECONDS:
            return "s", _SECONDS[form]
        if form in _MONTHS:
            return "mo", _MONTHS[form]
    return None


def _amount(word: str) -> float | None:
    """A number as written in a compound ("30", "3/4", "1.5", "one", "sixty")."""
    if re.fullmatch(r"\d+(?:\.\d+)?", word):
        return float(word)
    fraction = re.fullmatch(r"(\d+)/(\d+)", word)
    if fraction and int(fraction[2]):
        return int(fraction[1]) / int(fraction[2])
    if word in CARDINALS:
        return float(CARDINALS[word])
    return 1.0 if word in ("one", "a", "an") else None


class Duration(NamedTuple):
    """A length of time a request says, over its tokens ``start:end``: ``amount`` seconds or months
    (``scale`` ``"s"`` or ``"mo"``), a period when ``every``."""

    start: int
    end: int
    amount: float
    scale: str
    every: bool = False

    @property
    def key(self) -> str:
        """What two sides compare: "5 minutes", "five minutes", "300 seconds" are ``300s``; "every
        minute" ``every60s``; "a year", "12 months" ``12mo``."""
        return ("every" if self.every else "") + _value(self.amount) + self.scale


@lru_cache(maxsize=8192)
def durations(side: Side) -> tuple[Duration, ...]:
    """The lengths of time ``side`` says: "5 minutes", "a 30-day notice", "half an hour", "an hour
    and a half", "a year", "every minute", "10 gb a month" (a period)."""
    toks = side.tokens
    found: list[Duration] = []
    spans = {start: (end, value) for start, end, value in number_spans(toks)}
    i = 0
    while i < len(toks):
        tok = toks[i]
        before = toks[i - 1] if i else ""
        compound = re.fullmatch(r"([\w./]+)-(\w+)", tok)  # "30-day", "3/4-hour", "one-hour", "60-min"
        if compound and (unit := _time_unit(compound[2])) and (amount := _amount(compound[1])) is not None:
            found.append(Duration(i, i + 1, amount * unit[1], unit[0]))
        elif i in spans and spans[i][0] < len(toks) and (unit := _time_unit(toks[spans[i][0]])):
            found.append(Duration(i, spans[i][0] + 1, float(spans[i][1]) * unit[1], unit[0]))
        elif tok == "half" and toks[i + 1:i + 2] in (("a",), ("an",)) and i + 2 < len(toks) and (unit := _time_unit(toks[i + 2])):
            found.append(Duration(i, i + 3, 0.5 * unit[1], unit[0]))  # "half an hour"
        elif (tok in _ONCE and i + 1 < len(toks) and (unit := _time_unit(toks[i + 1]))
              and not (is_number(before) or before in CARDINALS or before in ("once", "twice", "times"))):
            found.append(Duration(i, i + 2, unit[1], unit[0]))  # "a week", "every minute"
        else:
            i += 1
            continue
        said = found[-1]
        if toks[said.end:said.end + 3] == ("and", "a", "half"):  # "an hour and a half", "2 days and a half"
            per_unit = _time_unit(toks[said.end - 1])
            if per_unit is not None:
                said = said._replace(end=said.end + 3, amount=said.amount + per_unit[1] / 2)
        rate = toks[said.start] in ("a", "an") and any(is_number(t) or t in CARDINALS
                                                      for t in toks[max(0, said.start - 2):said.start])
        if rate or toks[said.start] in _EVERY or (said.start and toks[said.start - 1] in _EVERY):
            # "every minute", "each 60 seconds", "per week", "10 gb a month": a period, never a delay or a length
            widened = said.start - 1 if not rate and toks[said.start] not in _EVERY else said.start  # "every 60 seconds"
            said = said._replace(start=widened, every=True)
        found[-1] = said
        i = said.end
    return tuple(found)


def _duration_keys(side: Side) -> list[str]:
    return sorted(d.key for d in durations(side))


def _without(side: Side, spans: tuple[Duration, ...]) -> Side:
    cut = {k for d in spans for k in range(d.start, d.end)}
    tokens = tuple(t for k, t in enumerate(side.tokens) if k not in cut)
    raw = tuple(t for k, t in enumerate(side.raw) if k not in cut) if len(side.raw) == len(side.tokens) else tokens
    return Side(" ".join(tokens), tokens, raw)


def same_durations(a: Side, b: Side) -> bool:
    """The two sides say the same lengths of time, in other units ("60-min" / "one-hour", "7 days" /
    "a week", "every minute" / "60 seconds"), and the same other numbers."""
    mine = _duration_keys(a)
    return (bool(mine) and mine == _duration_keys(b)
            and digit_groups(_without(a, durations(a))) == digit_groups(_without(b, durations(b))))


def spell_durations(a: Side, b: Side) -> tuple[Side, Side]:
    """Both sides with each length of time spelt as one token of its value ("60-min" and "one hour"
    both ``3600s``), when they say the same ones (:func:`same_durations`); else as they are. Every
    check then reads one duration as one thing: not a name ("60-min"), not a date ("a week")."""
    if not same_durations(a, b):
        return a, b
    return _spelt_durations(a), _spelt_durations(b)


SPELLINGS.append(spell_durations)


def _spelt_durations(side: Side) -> Side:
    """``side`` with each length of time said as a number of seconds or of months ("a week": "604800
    seconds", "every minute": "every 60 seconds"), which the other number checks read as they read
    any number and its unit (its relation, its bound)."""
    toks, raw, text = list(side.tokens), list(side.raw), side.text
    keep_raw = len(raw) == len(toks)
    for d in reversed(durations(side)):
        spelt = ["every"] * d.every + [_value(d.amount), "seconds" if d.scale == "s" else "months"]
        said = r"\s+".join(re.escape(t) for t in toks[d.start:d.end])
        text = re.sub(rf"(?<!\w){said}(?!\w)", " ".join(spelt), text, count=1)
        toks[d.start:d.end] = spelt
        if keep_raw:
            raw[d.start:d.end] = spelt
    return Side(text, tuple(toks), tuple(raw) if keep_raw else tuple(toks))


def numbers_on_one_side(a: Side, b: Side) -> bool:
    """Only one side says a number: the finding may be a count told around the request ("battery's at
    12% 😅 where's the closest EV charger?"), a doubt. Numbers on both sides that differ never are."""
    return not digit_groups(a) or not digit_groups(b)


def number_doubt(a: Side, b: Side) -> bool:
    """The number rule's doubt in a request: only one side says a number (:func:`numbers_on_one_side`)
    and it may still be the same request (``story.detail_may_be_the_same``: told in the story around
    it, or said otherwise by the other side). A number the other side simply leaves out of the same
    request ("buy 100 shares of AAPL" / "buy shares of AAPL") never is, whatever a model says."""
    return one_sided_doubt(a, b, digit_groups)


@rule("number", doubt=number_doubt)
def numbers(a: Side, b: Side) -> bool:
    """The digits, the number words, a shared number's unit or a rate's unit differ, in the requests
    (a number in a sentence that tells the story around one request, and that the other leaves out,
    is background: "my 8-year-old is getting her shots 💉 explain how vaccines work")."""
    if not numbers_differ(a, b):
        return False
    mine, theirs = digit_groups(a), digit_groups(b)
    if mine == theirs or not (mine < theirs or theirs < mine):
        return True  # numbers on both sides that the other lacks: one slot, two values ("3 replicas" / "5 replicas")
    more, fewer = (a, b) if theirs < mine else (b, a)
    told = _request_of(more, fewer)
    return told is more or numbers_differ(told, fewer)


@lru_cache(maxsize=4096)
def _request_of(side: Side, other: Side) -> Side:
    theirs = digit_groups(other)
    return request_part(side, other, lambda part: bool(digit_groups(part) - theirs) and _only_counts(part, theirs))


def _only_counts(sentence: Side, theirs: frozenset[str]) -> bool:
    """Each number of ``sentence`` the other side lacks counts or measures something of the story
    ("he's 4", "after 35 years", "eaten two hubcaps"): none names a thing ("flight UA 512", "PR
    #428": a word before it that is no function word nor verb, or letters around its digits), none
    counts the speakers themselves ("we're a party of 6", "6 of us")."""
    toks = sentence.tokens
    if "us" in toks and "of" in toks or toks[:2] == ("we", "are"):
        return False
    for start, _, value in number_spans(toks):
        before = toks[start - 1] if start else ""
        if value in theirs or not before:
            continue
        if before not in lexicon.FUNCTION_WORDS and "v" not in lexicon.pos(lexicon.lemma(before)) + lexicon.pos(before):
            return False
    named = {t for t in toks if re.search(r"\d", t) and not is_number(t) and not _hyphen_count(t)}
    return not named


def _hyphen_count(tok: str) -> bool:
    """A count joined to its noun ("8-year-old", "two-hour")."""
    head = tok.split("-")[0]
    return "-" in tok and (is_number(head) or head in CARDINALS)


def numbers_differ(a: Side, b: Side) -> bool:
    """The digits, the number words, a shared number's unit or a rate's unit differ."""
    if digit_groups(a) != digit_groups(b):
        return True
    mine, theirs = _duration_keys(a), _duration_keys(b)
    if mine and theirs and mine != theirs:
        return True  # "every minute" / "in a minute", "a week" / "a month"
    a_words = {t for t in a.tokens if t in NUMBER_WORDS and t not in CARDINALS}
    b_words = {t for t in b.tokens if t in NUMBER_WORDS and t not in CARDINALS}
    if a_words and b_words and a_words != b_words:
        return True
    # The word right after a shared number is its unit: it must agree when both sides have one.
    a_units, b_units = units(a), units(b)
    a_words, b_words = {lexicon.lemma(t) for t in a.tokens}, {lexicon.lemma(t) for t in b.tokens}
    if any(not same_unit(a_units[n], b_units[n]) and not (a_units[n] in b_words and b_units[n] in a_words)
           for n in a_units.keys() & b_units.keys()):
        return True  # (both words on both sides: "10 shares of apple" / "ten apple shares")
    # A number that counts another thing on one side only: "2 adults" / "2 adults and 2 children".
    if _counts_more(a, b, b_words) or _counts_more(b, a, a_words):
        return True
    # A percentage or an amount of money on one side is not a bare number on the other.
    da, db = decisive_units(a), decisive_units(b)
    if any(n not in b_units for n in da) or any(n not in a_units for n in db):
        return True
    # A rate's unit ("per second", "100 requests a minute") must agree when both sides give one.
    a_rates, b_rates = rates(a), rates(b)
    return bool(a_rates and b_rates) and not (all(any(same_unit(x, y) for y in b_rates) for x in a_rates)
                                              and all(any(same_unit(y, x) for x in a_rates) for y in b_rates))


# Words that bound a number from above or from below (a closed class of English comparison).
_UPPER = frozenset({"under", "below", "less", "fewer", "max", "maximum", "within", "lower", "cheaper", "smaller",
                    "shorter", "up", "until", "till", "most", "beneath", "lt"})
_LOWER = frozenset({"over", "above", "more", "greater", "min", "minimum", "higher", "exceeding", "beyond", "bigger",
                    "larger", "longer", "least", "past", "gt", "plus"})
_BETWEEN_BOUND_AND_NUMBER = frozenset({"than", "to", "of", "the", "a", "an", "at", "or", "equal"}) | set(UNIT_SYMBOLS)


def bounds(side: Side) -> dict[str, str]:
    """Number -> "<" or ">" when a bounding word stands before it ("under 200", "at least 3", "more than $5")."""
    out: dict[str, str] = {}
    toks = side.tokens
    for i, tok in enumerate(toks):
        if not (is_number(tok) or tok in CARDINALS):
            continue
        j = i - 1
        while j >= 0 and i - j <= 3 and toks[j] in _BETWEEN_BOUND_AND_NUMBER:
            j -= 1
        if j >= 0 and i - j <= 3:
            word = toks[j]
            flipped = j > 0 and toks[j - 1] in ("no", "not")  # "no more than 180" is at most 180
            if word in _UPPER and not (word == "up" and toks[j + 1:j + 2] != ("to",)):
                out[number_key(tok)] = ">" if flipped else "<"
            elif word in _LOWER:
                out[number_key(tok)] = "<" if flipped else ">"
    return out


@rule("bound")
def bound(a: Side, b: Side) -> bool:
    """A bound on a shared number faces the other way: "under 200" is not "over 200" nor "more than 200"."""
    a_bounds, b_bounds = bounds(a), bounds(b)
    return any(a_bounds[n] != b_bounds[n] for n in a_bounds.keys() & b_bounds.keys())


def same_unit(x: str, y: str) -> bool:
    """One unit, in one inflection or an abbreviation of it: "seconds" / "second", "sec" / "second",
    "hr" / "hour" (a WordNet synonym whose letters the longer word has in order, from its first)."""
    if x == y or lexicon.lemmas(x) & lexicon.lemmas(y):
        return True
    short, long = sorted((lexicon.lemma(x), lexicon.lemma(y)), key=len)
    if len(short) < 2 or short[0] != long[0] or not short.isalpha():
        return False
    letters = iter(long)
    return all(c in letters for c in short) and lexicon.synonyms(short, long)


# What a rate is counted against: "per X" anywhere, and "a"/"an"/"each"/"every" X right after a
# number and its unit ("100 requests a second", "3 times every day").
_RATE_AFTER_NUMBER = {"a", "an", "each", "every", "per"}


def rates(side: Side) -> set[str]:
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        if tok == "per":
            j = i + 1
        elif tok in _RATE_AFTER_NUMBER and any(is_number(t) or t in NUMBER_WORDS for t in toks[max(0, i - 2):i]):
            j = i + 1  # right after a number or a number and its unit
        else:
            continue
        while j < len(toks) and toks[j] in SKIP_AFTER_RELATION:
            j += 1
        if j < len(toks) and toks[j].isalpha() and toks[j] not in lexicon.FUNCTION_WORDS:
            out.add(toks[j])
    return out


# Unit symbols and their common written forms read as one unit ("5 %" / "5 percent", "$5" / "5 dollars").
# "g" after a number is grams ("350 g of flour"), a letter too short for WordNet's abbreviations
# (kept out of the shared unit words: alone, "the G train" is a name).
_UNIT_ALIASES = {**UNIT_SYMBOLS, **UNIT_WORDS, "yens": "yen", "g": "gram"}
# Symbols whose presence decides what a number is: "raise the price by 5" is not "by 5 %".
_DECISIVE = frozenset({"percent", "dollar", "euro", "pound", "yen"})


def _unit_name(tok: str) -> str:
    return _UNIT_ALIASES.get(tok) or _UNIT_ALIASES.get(lexicon.lemma(tok)) or lexicon.lemma(tok)


def units(side: Side) -> dict[str, str]:
    """Number -> the unit written with it: a symbol before it ("$ 5"), or the word after it."""
    out: dict[str, str] = {}
    for value, unit in counted(side):
        out.setdefault(value, unit)
    return {k: v for k, v in out.items() if v}


def _counts_more(a: Side, b: Side, b_words: set[str]) -> bool:
    """``a`` says a number of something ``b`` never names, with a number ``b`` says of something
    else: the digits alike, the request bigger ("2 adults and 2 children" against "2 adults")."""
    b_counted = counted(b)
    b_values = {value for value, unit in b_counted if unit}  # ("a table for 4" / "for 4 people": one count)
    return any(unit and value in b_values and (value, unit) not in b_counted and unit not in b_words
               and lexicon.lemma(unit) not in b_words for value, unit in counted(a))


@lru_cache(maxsize=8192)
def counted(side: Side) -> tuple[tuple[str, str], ...]:
    """Each number of a request with the unit written with it (``""`` for none), in order, every
    occurrence: a symbol before it ("$ 5"), or the word after it. Remembered: the number check asks
    it of each side three times (``units`` of both, then each side's count against the other's)."""
    out: list[tuple[str, str]] = []
    toks = side.tokens
    stops = stops_after(side)  # "1.2k, pick a laptop": no unit across the comma
    starts = {start: (end, value) for start, end, value in number_spans(toks)}
    i = 0
    while i < len(toks):
        tok = toks[i]
        time = clock(tok)
        if time:
            out.append((time[0], time[1]))  # "21:00" is 9 pm
            i += 1
            continue
        if i in starts or is_number(tok) or tok in NUMBER_WORDS:
            end, value = starts.get(i, (i + 1, number_key(tok)))  # "five hundred dollars": one number, 500
            unit = ""
            if i and toks[i - 1] in UNIT_SYMBOLS:
                unit = UNIT_SYMBOLS[toks[i - 1]]
            elif end < len(toks) and end - 1 not in stops and not is_number(toks[end]) and (
                    toks[end] not in lexicon.FUNCTION_WORDS or toks[end] in UNIT_SYMBOLS) and not _verb_only(toks[end]):
                unit = _unit_name(toks[end])
            out.append((value, unit))
            i = end
            continue
        i += 1
    return tuple(out)


def _verb_only(word: str) -> bool:
    """A word English knows only as a verb is no unit: the next sentence starts there ("Twelve.
    Suggest some activities" counts twelve of nothing said)."""
    kinds = lexicon.pos(word) or lexicon.pos(lexicon.lemma(word))
    return kinds == "v"


def decisive_units(side: Side) -> dict[str, str]:
    return {n: u for n, u in units(side).items() if u in _DECISIVE}


# Prepositions that tell what a number is (a closed class of English): "by 20 %" is a change, "to
# 20 %" a target, "from 20 %" a start, "at 7" a time, "for 7" a party, "in 5 minutes" a delay,
# "within 5 minutes" a deadline.
_NUMBER_RELATIONS = frozenset({
    "by", "to", "from", "of", "per", "at", "in", "on", "for", "into", "with", "within", "after", "before",
    "until", "till", "since", "between", "through", "past", "near", "around", "about", "x", "times",
    "during", "throughout",
})
# Prepositions that give a number the same relation: "a party of 4" / "for 4" / "with 4 guests",
# "between 240 and 300" / "from 240 to 300", "into 3 parts" / "to 3 parts", "till" / "until".
_SAME_RELATION = {"of": "for", "with": "for", "between": "from", "into": "to", "till": "until", "x": "times"}
_TIME_OF_DAY = frozenset({"am", "pm", "o'clock", "oclock"})
# Words that stand between a preposition and its number and say nothing of the relation.
_APPROXIMATE = frozenset({"about", "around", "approximately", "roughly", "nearly", "almost", "exactly", "just",
                          "precisely", "some", "only", "another", "an", "extra", "additional", "over"})


def relations_of_numbers(side: Side) -> dict[str, set[str]]:
    """Number value -> the relations it stands in: the preposition right before it (past an article,
    a unit symbol or an approximation: "by about 20 %"), a bound as its direction ("under 20", "at most
    20", "up to 20" are all "<")."""
    toks = side.tokens
    bounded = bounds(side)
    out: dict[str, set[str]] = {}
    for start, end, value in number_spans(toks):
        key = value
        bound = bounded.get(value) or bounded.get(number_key(toks[start])) or bounded.get(number_key(toks[end - 1]))
        if bound:
            out.setdefault(key, set()).add(bound)
            continue
        j = start - 1
        while j >= 0 and (toks[j] in SKIP_AFTER_RELATION or toks[j] in UNIT_SYMBOLS) and start - j <= 2:
            j -= 1
        if j >= 1 and toks[j] in _APPROXIMATE and toks[j - 1] in _NUMBER_RELATIONS:
            j -= 1  # "by about 20": the relation is "by"
        if j >= 0 and toks[j] in _NUMBER_RELATIONS and toks[j] not in _APPROXIMATE - {"about", "around"}:
            if toks[j] in ("about", "around") and (j == 0 or toks[j - 1] not in _NUMBER_RELATIONS):
                continue  # "about 20": an approximation, no relation
            out.setdefault(key, set()).add(_SAME_RELATION.get(toks[j], toks[j]))
    return out


# A year: the prepositions that place something inside it say one thing.
_WITHIN_A_YEAR = frozenset({"in", "for", "during", "of", "on", "throughout"})


def _years(a: Side, b: Side) -> set[str]:
    return {n for n in digit_groups(a) | digit_groups(b) if re.fullmatch(r"(19|20)\d\d", n)}


@rule("relation")
def relation(a: Side, b: Side) -> bool:
    """A shared number stands in another relation: "increase the price by 20 %" is not "to 20 %"
    (both sides give the number a preposition, and they differ), and "move the 2pm call to 4pm" is
    not "move the 4pm call to 2pm" (one relation governs another of the shared numbers). A number
    with a preposition on one side only ("by 20 %" / "20 %") is left alone."""
    ra, rb = relations_of_numbers(a), relations_of_numbers(b)
    # A time of day on either side: "a reminder for 10" is one at 10 am.
    times = {value for side in (a, b) for _, end, value in number_spans(side.tokens)
             if side.tokens[end:end + 1] and side.tokens[end] in _TIME_OF_DAY}
    for found in (ra, rb):
        for n in times & found.keys():
            found[n] = {"at" if w == "for" else w for w in found[n]}
        for n in found.keys() & _years(a, b):  # "revenue in 2024" / "for 2024" / "during 2024"
            found[n] = {"in" if w in _WITHIN_A_YEAR else w for w in found[n]}
    if any(ra[n] and rb[n] and not ra[n] & rb[n] for n in ra.keys() & rb.keys()):
        return True
    shared = set(digit_groups(a)) & set(digit_groups(b))
    for word in set().union(*ra.values(), *rb.values()):
        governed_a = {n for n in shared if word in ra.get(n, set())}
        governed_b = {n for n in shared if word in rb.get(n, set())}
        if governed_a and governed_b and governed_a != governed_b:
            return True
    return False
