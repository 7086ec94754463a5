"""``date``: weekday or month names, relative days ("tomorrow") or their modifier ("this" / "next
Friday") differ; "today", "now" and "currently" count as no date (a request is about now)."""

from __future__ import annotations

from .number import clock
from .registry import rule
from .story import one_sided_doubt
from .text import DATE_WORDS, Side, backstory, is_number

_DATE_MODIFIERS = {"this", "next", "last", "previous", "coming", "following", "past", "current"}
# Modifiers that say the same: "the current month" is "this month", "the previous week" is "last week".
_SAME_MODIFIER = {"current": "this", "previous": "last", "past": "last"}
# A time of day says which half of the day: "6:45 in the morning" is "6:45 am".
_HALF_DAY = {"morning": "am", "afternoon": "pm", "evening": "pm"}
# "may", "march", "second" and "am" are also ordinary words: dates only next to a number.
_AMBIGUOUS_DATES = {"may", "march", "second", "am", "pm"}  # "am": also "I'm"


def dates(side: Side) -> set[str]:
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        time = clock(tok)
        if time:
            out.add(time[1])  # "21:00" is in the pm, as "9pm" is
            continue
        if tok not in DATE_WORDS:
            continue
        if tok in _AMBIGUOUS_DATES:
            near = toks[max(0, i - 1):i] + toks[i + 1:i + 2]
            if not any(is_number(t) for t in near):
                continue
        modifier = toks[i - 1] if i and toks[i - 1] in _DATE_MODIFIERS else ""
        modifier = _SAME_MODIFIER.get(modifier, modifier)
        if tok in _HALF_DAY and modifier == "this" or tok == "tonight":
            modifier, tok = "", ("evening" if tok == "tonight" else tok)  # "this afternoon": today's, as "3pm" says
        out.add(f"{modifier} {_HALF_DAY.get(tok, tok[:3])}".strip())
    return out


def days_told(side: Side) -> set[str]:
    """The days a text says: its dates, and "today" (which a request leaves unsaid as often as not,
    so the date rule does not count it; but "today's standup" does say which day)."""
    return dates(side) | ({"today"} & set(side.tokens))


def dates_on_one_side(a: Side, b: Side) -> bool:
    """Only one side says when, "today" included: the finding may be a day told around the request
    ("big interview tomorrow, eek! set an alarm for 6:30"), a doubt. Two sides that each say a day
    ("today's standup" / "tomorrow's standup") never are."""
    return not days_told(a) or not days_told(b)


def date_doubt(a: Side, b: Side) -> bool:
    """The date rule's doubt in a request: only one side says when (:func:`dates_on_one_side`) and it
    may still be the same request (``story.detail_may_be_the_same``: told in the story around it, or
    said otherwise by the other side, "right now" / "today"). A day the other side simply leaves out of
    the same request ("remind me to call mom on friday" / "remind me to call mom") never is."""
    return one_sided_doubt(a, b, days_told)


@rule("date", doubt=date_doubt)
def date(a: Side, b: Side) -> bool:
    """The dates, days, times of day or their modifiers differ: on both sides ("this friday" / "next
    friday"), or on one side only, unless it stands in the story told around the request (see
    ``backstory``: "i made way too much rice on sunday... how long is cooked rice ok in the fridge?")."""
    da, db = dates(a), dates(b)
    if da == db:
        return False
    if da and db:
        return True
    return not backstory(a, b, lambda part: bool(dates(part))) if da else not backstory(b, a, lambda part: bool(dates(part)))
