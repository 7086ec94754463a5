"""How the rules read two conversations' histories: a number or a day counts where both sides give another.

A request asks for something; a history tells it, and people retell the same facts in other words:
"hosting Thanksgiving for 12 people" / "12 guests", "$10,000 saved" / "10k saved", "9th grade" /
"ninth graders", "a 60 lb labrador" / "about 60 pounds". The request's number rule refuses each of
these (a unit word changed, a currency symbol on one side only, an ordinal in words), so a history
is read with its own number rule instead, every other default rule as it is:

* the numbers' values must be the same on both sides (an ordinal in words counts as the digits the
  other side writes: "ninth" is the other side's "9th"); a number changed or added still refuses;
* with the same values, a unit refuses only where both sides write one and they differ as units do:
  another length of time ("14 years" / "14 weeks"), another currency or percent ("$50" / "50 euros"),
  another rate ("a day" / "a week"), another unit of measure ("5 kg" / "5 lb"). A unit on one side
  only, or the thing counted named in other words ("people" / "guests"), is the same fact retold;
* a day counts where both sides say one ("in june" / "in july", "today's sales" / "tomorrow's
  sales"), or where one side alone sets a deadline ("i must land before noon"); a day only one side
  tells ("interviewing on thursday", "moving next month") is told around the facts.
"""

from __future__ import annotations

from functools import lru_cache

from .. import lexicon
from .date import dates, dates_on_one_side, days_told
from .number import counted, decisive_units, digit_groups, durations, numbers_on_one_side, rates, same_unit
from .pipeline import DEFAULT_RULES, Pipeline
from .registry import RuleCheck
from .text import CARDINALS, NUMBER_WORDS, Side

# Ordinals in words, read as the digits "9th" has.
_ORDINALS = {"first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5", "sixth": "6", "seventh": "7",
             "eighth": "8", "ninth": "9", "tenth": "10", "eleventh": "11", "twelfth": "12"}
# Units of measure (a closed class, with their common abbreviations): the same number in another of
# them is another fact ("a 5 kg turkey" / "a 5 lb turkey"); any other word after a number names what
# it counts, which a history may word freely ("12 people" / "12 guests").
_MEASURES = frozenset({
    "kg", "kilo", "kilogram", "g", "gram", "mg", "milligram", "lb", "lbs", "pound", "oz", "ounce", "ton", "tonne",
    "km", "kilometre", "kilometer", "mi", "mile", "m", "metre", "meter", "cm", "centimetre", "centimeter", "mm",
    "millimetre", "millimeter", "ft", "foot", "feet", "inch", "yard", "l", "litre", "liter", "ml", "millilitre",
    "milliliter", "gallon", "gal", "quart", "pint", "cup", "celsius", "fahrenheit", "kelvin", "c", "f", "mph", "kph",
    "acre", "hectare", "calorie", "kcal", "watt", "kw", "kwh", "volt", "ghz", "mhz", "gigabyte", "megabyte",
    "kilobyte", "terabyte", "byte", "bit",
})


def _ordinals(side: Side) -> set[str]:
    return {_ORDINALS[part] for t in side.tokens for part in t.split("-") if part in _ORDINALS}


def values(a: Side, b: Side) -> tuple[frozenset[str], frozenset[str]]:
    """Each side's numbers, an ordinal in words counted where the other side writes its digits."""
    mine, theirs = digit_groups(a), digit_groups(b)
    return mine | (_ordinals(a) & theirs), theirs | (_ordinals(b) & mine)


def _measure(unit: str) -> bool:
    return unit in _MEASURES or lexicon.lemma(unit) in _MEASURES


def _other_measure(a: Side, b: Side) -> bool:
    """A number ``a`` gives in one unit of measure, ``b`` in another ("5 kg" / "5 lb")."""
    theirs = [(value, unit) for value, unit in counted(b) if _measure(unit)]
    return any(v == value and not (same_unit(u, unit) or lexicon.synonyms(u, unit))
               for value, unit in counted(a) if _measure(unit) for v, u in theirs)


@lru_cache(maxsize=4096)
def history_numbers(a: Side, b: Side) -> bool:
    """The number rule for histories: the values differ, or a shared value's unit differs as units do."""
    mine, theirs = values(a, b)
    if mine != theirs:
        return True
    # The request's rule for the number words it does not read as digits ("third" / "fourth", "half"),
    # an ordinal the other side writes in digits left out.
    words_a = {t for t in a.tokens if t in NUMBER_WORDS and t not in CARDINALS and _ORDINALS.get(t) not in mine}
    words_b = {t for t in b.tokens if t in NUMBER_WORDS and t not in CARDINALS and _ORDINALS.get(t) not in theirs}
    if words_a and words_b and words_a != words_b:
        return True
    long_a, long_b = sorted(d.key for d in durations(a)), sorted(d.key for d in durations(b))
    if long_a and long_b and long_a != long_b:
        return True  # "14 years old" / "14 weeks old"
    money_a, money_b = decisive_units(a), decisive_units(b)
    if any(money_a[n] != money_b[n] for n in money_a.keys() & money_b.keys()):
        return True  # "$50" / "50 euros"
    rate_a, rate_b = rates(a), rates(b)
    if rate_a and rate_b and not any(same_unit(x, y) for x in rate_a for y in rate_b):
        return True  # "twice a day" / "twice a week"
    return _other_measure(a, b) or _other_measure(b, a)


# Words that make a day a bound the answer must keep ("land before noon", "done by friday").
_BOUNDS = frozenset({"before", "after", "by", "until", "till", "no", "later", "earlier", "latest", "earliest"})


def _deadline(side: Side) -> bool:
    """A day ``side`` sets as a bound: a bounding word right before it ("before noon", "by next friday")."""
    toks = side.tokens
    return any(tok in _BOUNDS and dates(Side(" ".join(toks[i + 1:i + 3]), toks[i + 1:i + 3], toks[i + 1:i + 3]))
               for i, tok in enumerate(toks))


def history_dates(a: Side, b: Side) -> bool:
    """The date rule for histories: both sides say when, and say another day ("in june" / "in july");
    or one side alone sets a deadline ("i need to land before noon"). A day only one side tells
    ("interviewing on thursday", "moving next month") is told around the facts."""
    mine, theirs = days_told(a), days_told(b)
    if mine and theirs:
        return mine != theirs
    return _deadline(a) != _deadline(b)


_READ_APART = {"number": RuleCheck("number", history_numbers, doubt=numbers_on_one_side),
               "date": RuleCheck("date", history_dates, doubt=dates_on_one_side)}
HISTORY_RULES = Pipeline([_READ_APART.get(name, name) for name in DEFAULT_RULES])
