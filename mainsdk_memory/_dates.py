"""Resolve the relative dates of an English sentence against when it was said, in ISO form.

:func:`resolve` rewrites every date expression it understands and returns the new text with
what it found (:class:`Resolved`). Pure: no clock (the moment comes in as ``now``), no I/O.
A memory written with ``"next Friday"`` in it means another day next week; written with
``"2026-12-11 (Friday)"`` it means the same day for ever.

**Calendar.** Dates are days of ``now``'s own zone (``now.date()``). A week runs Monday to
Sunday (ISO 8601). The seasons are the northern meteorological ones: spring March-May,
summer June-August, autumn (fall) September-November, winter December-February (named by
the year of its December: winter 2026-27).

**What is resolved,** with ``today`` the day of ``now``:

===============================  ===========================================================
``today`` ``tonight``            today (``tonight`` is written "the evening of ...",
                                 ``this morning`` "the morning of ...")
``tomorrow`` ``yesterday``       today +1 / -1; ``the day after tomorrow`` +2,
                                 ``the day before yesterday`` -2, ``last night`` -1
``next <weekday>``               that weekday of next week (the Monday-Sunday week after
                                 today's): said on Tuesday 2026-12-01, ``next Friday`` is
                                 2026-12-11; said on Sunday, ``next Monday`` is tomorrow
``last <weekday>``               that weekday of the week before today's
``this <weekday>``               the next one on or after today; in a past-tense clause the
                                 last one on or before today
``coming <weekday>``             the next one after today (``this coming`` too);
                                 ``past <weekday>`` the last one before today
``<weekday>``, ``on <weekday>``  the next one after today; in a past-tense clause the last
                                 one before today. Plurals (``Mondays``) and ``every|each
                                 <weekday>`` are habits and stay as written
``this|next|last week``          the Monday of that week, written "the week of YYYY-MM-DD";
                                 ``weekend`` the Saturday of that week
``this|next|last month|year``    written ``December 2026 (2026-12)`` / ``2027``
``in N days|weeks``              today + N (day precision); ``in N months|years`` and
                                 ``N months|years ago`` are month and year precision;
                                 ``N days|weeks ago``, ``N ... from now``; N is a digit or
                                 ``a``/``an``/``one`` ... ``twelve``, ``a couple of``;
                                 ``in a fortnight`` is 14 days
``the 12th``                     the next 12th after today (the last one before today in a
                                 past-tense clause); ``the 12th of next month``; not when a
                                 noun follows (``the 12th floor``)
``March 3``, ``3 March``,        the next March 3 after today (the last one before today,
``the 3rd of March``             in a past-tense clause); with a year, that day
``in June``, ``since June``      next June: this year's if June is this month or later, else
                                 next year's; in a past-tense clause or after ``since`` the
                                 last June (this month or earlier); ``last June`` and
                                 ``next June`` the June before / after this month. Written
                                 ``June 2027 (2027-06)``
``last|this|next summer``        ``last``: the latest season that has ended; ``next``: the
                                 first that has not begun; ``this``: the one now, else the
                                 coming one (the last one in a past-tense clause). ``in
                                 (the) summer`` only in a clause with a tense marker.
                                 Written ``summer 2026 (2026-06 to 2026-08)``
``Christmas``, ``New Year's      as ``March 3`` (``Christmas (2026-12-25)``)
Eve``, ``Halloween`` ...
===============================  ===========================================================

ISO dates (``2024-03-01``) and years after a preposition (``since 2019``) are left as they
are but reported, so a fact "since 2019" knows when it began. Months named as a word that
is also a verb (``may``, ``march``) count only when capitalised or after a preposition of
time (``in may``); a date inside quotes is never touched, nor a weekday of a name
(``Black Friday``). Past tense is read from the clause around a date (``went``, ``was``,
a verb in ``-ed`` not after ``is`` or ``a``, ``ago`` ...; a future marker, ``will``,
``going to``, ``I'm flying``, wins), and ``since`` always points back, ``for`` and
``until`` forward. A clause of habits (``usually``, ``always``, ``every`` ...) is not
resolved except for its unambiguous words (``tomorrow``, ``next week``); nor is ``in two
weeks`` in a past-tense clause (``I lost 5 kg in two weeks``: a duration).

**Written form.** A day is ``YYYY-MM-DD (Weekday)``, and the words before it say how it is
used: the preposition written before the expression is kept (``until next Friday`` becomes
``until 2026-12-11 (Friday)``); without one, ``on`` (day), ``in`` (week, month, season,
year) is added (``I'm flying to Lisbon next Friday`` becomes ``I'm flying to Lisbon on
2026-12-11 (Friday)``), capitalised at the start of the text. A yearless date in a clause
about something that recurs (a birthday, an anniversary) keeps its words and gains its next
day (today counts): ``my birthday is on the 20th`` becomes ``my birthday is on December 20
(next: 2026-12-20)``.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Final, Literal

__all__ = ["Mention", "Precision", "Resolved", "is_past", "resolve"]

Precision = Literal["day", "week", "month", "season", "year"]


@dataclass(frozen=True, slots=True)
class Mention:
    """One date expression found in a text, and what it was rewritten to."""

    start: date
    """The first day it names."""
    end: date
    """The last day it names (``start`` for a day; Sunday for a week ...)."""
    precision: Precision
    past: bool
    """It points back from the moment it was said (``since``, ``ago``, ``last``, past tense)."""
    original: str
    """The words as written."""
    written: str
    """What replaced them (``original`` for a date already absolute)."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """A text with its relative dates resolved."""

    text: str
    mentions: tuple[Mention, ...]
    when: datetime | None
    """The start of the first date found, at midnight in ``now``'s zone; ``None`` without one."""
    valid_from: datetime | None
    """The start of the first date that points back (a fact that has begun); else ``None``."""


# -- words ----------------------------------------------------------------------------------

_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WD: Final = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH_NAMES: Final = tuple(calendar.month_name)
_FULL_NAMES: Final = frozenset(name.lower() for name in _MONTH_NAMES if name)
_FULL_MONTH: Final = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
)
_ANY_MONTH: Final = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
#: Month words that are also everyday words: a date only capitalised (or after ``in`` ...).
_AMBIGUOUS_MONTHS: Final = frozenset({"may", "march", "mar", "jan", "jun", "aug", "dec", "sept"})
_NUMBERS: Final = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a couple": 2, "couple of": 2,
}
_NUM: Final = (
    r"(?:\d{1,3}|a\s+couple(?:\s+of)?|couple\s+of|an?|one|two|three|four|five|six|seven|eight"
    r"|nine|ten|eleven|twelve)"
)
_SEASONS: Final = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
#: Words after which a date takes no preposition of ours (``until next Friday``).
_PREPOSITIONS: Final = frozenset(
    "on in by until till til before after from since starting for of during over around "
    "through throughout between to early late mid about at than as".split()
)
#: Words before a weekday that make it a name, not a day.
_NAMED_DAYS: Final = frozenset("black good cyber casual holy ash easter super giving".split())
#: Words that make a clause about something that recurs (its yearless dates keep their words).
_RECURRING: Final = re.compile(
    r"\b(?:birthdays?|b-?days?|anniversar(?:y|ies)|name\s*days?|annual(?:ly)?|yearly|"
    r"every\s+year|each\s+year)\b",
    re.IGNORECASE,
)
#: Words of habit: a clause with one is about what usually happens, no one date.
_HABIT: Final = re.compile(
    r"\b(?:usually|always|often|normally|generally|typically|sometimes|never|rarely|"
    r"every|each|tend\s+to|most\s+years)\b",
    re.IGNORECASE,
)

# -- tense ----------------------------------------------------------------------------------

_FUTURE: Final = re.compile(
    r"\b(?:will|shall|won't|gonna|going\s+to|plan(?:ning)?\s+to|intend(?:ing)?\s+to|"
    r"hop(?:e|ing)\s+to|about\s+to|can'?t\s+wait|upcoming|coming\s+up|due|expecting|"
    r"scheduled|(?:is|are|am|be)\s+(?:\w+ly\s+)?\w{2,}ing)\b|"
    r"(?:'ll|'m|'re)\s+(?:\w+ly\s+|also\s+|still\s+|just\s+)?\w{2,}ing\b|'ll\b",
    re.IGNORECASE,
)
_IRREGULAR_PAST: Final = (
    "was were did had went came saw met took made left began bought brought flew drove ran won "
    "lost found gave ate drank wrote sold spent broke became felt told heard sent paid quit fell "
    "got caught taught thought sang swam rode chose grew knew threw wore forgot hid held kept "
    "led lent meant said sat slept spoke stood stole struck swore woke arrived"
)
_PAST: Final = re.compile(
    r"\b(?:" + "|".join(_IRREGULAR_PAST.split()) + r"|ago|used\s+to|back\s+in|earlier|"
    r"previously|last)\b|"
    r"(?:'ve|\bhave|\bhas)\s+(?:\w+ly\s+|just\s+|already\s+|finally\s+|also\s+|never\s+)?"
    r"(?:\w{2,}ed|been|gone|done|seen|taken|given|eaten|written|driven|flown|known|grown|"
    r"broken|chosen|spoken|forgotten|gotten|begun|won|lost|met|bought|left|made|had|sold|"
    r"paid|found|felt|kept|quit)\b",
    re.IGNORECASE,
)
#: What ends a clause when reading the tense around a date.
_CLAUSE_END: Final = re.compile(
    r"[,;:!?()]|\.(?:\s|$)|\s[-\u2013\u2014]\s|\b(?:and|but|so|because|while|although|though|"
    r"whereas|then|when)\b",
    re.IGNORECASE,
)


#: Words in ``-ed`` that are no past tense.
_NOT_PAST_ED: Final = frozenset(
    "need feed seed weed bleed breed speed proceed succeed exceed indeed hundred sacred naked "
    "wicked beloved crooked rugged ragged embed greed shred sled tired bored interested excited "
    "married scheduled booked supposed based located called named related used aged allowed "
    "required advanced limited detailed unlimited red bed wed shed fed".split()
)
#: Words before an ``-ed`` word that make it an adjective or a passive, not a past tense.
_BEFORE_ADJECTIVE: Final = frozenset(
    "is am be a an are was get got the its our any been were very your this that feel gets "
    "seem being their i'm we're it's he's she's they're you're so too really my his her "
    "'m 're 's".split()
)
_HAVE_GOT: Final = re.compile(r"(?:'ve|\bhave|\bhas|'s)\s+got\b", re.IGNORECASE)
_ED_WORD: Final = re.compile(r"(?:(?P<before>[\w']+)\s+)?\b(?P<word>\w{2,}ed)\b", re.IGNORECASE)


def is_past(clause: str) -> bool | None:
    """Whether ``clause`` is in the past tense: ``True``, ``False`` (a future marker), or
    ``None`` when it says neither (a present tense)."""
    if _FUTURE.search(clause):
        return False
    clause = _HAVE_GOT.sub("have", clause)  # "I've got an exam on Friday": a present
    if _PAST.search(clause):
        return True
    for found in _ED_WORD.finditer(clause):
        before = (found["before"] or "").lower()
        if found["word"].lower() not in _NOT_PAST_ED and before not in _BEFORE_ADJECTIVE:
            return True
    return None


def _clause(text: str, start: int, end: int) -> str:
    """The clause of ``text`` around ``[start, end)``: the date's own words left out."""
    left = 0
    for found in _CLAUSE_END.finditer(text, 0, start):
        left = found.end()
    after = _CLAUSE_END.search(text, end)
    right = len(text) if after is None else after.start()
    return text[left:start] + " " + text[end:right]


# -- calendar arithmetic ---------------------------------------------------------------------


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _season(year: int, first: int) -> tuple[date, date]:
    """The season starting in month ``first`` of ``year``: its first and last day."""
    start = date(year, first, 1)
    last = _add_months(start, 2)
    return start, _month_end(last.year, last.month)


def _seasons_around(today: date, first: int) -> list[tuple[date, date]]:
    return [_season(year, first) for year in range(today.year - 2, today.year + 2)]


def _beyond(candidate: date, today: date, *, past: bool, strict: bool) -> bool:
    if past:
        return candidate < today if strict else candidate <= today
    return candidate > today if strict else candidate >= today


def _next_day_of_month(today: date, day: int, *, past: bool, strict: bool = True) -> date | None:
    """The next (or last) date after (before) ``today`` whose day of month is ``day``; with
    ``strict`` false, today counts."""
    step = -1 if past else 1
    month = date(today.year, today.month, 1)
    for _ in range(14):
        if day <= calendar.monthrange(month.year, month.month)[1]:
            candidate = month.replace(day=day)
            if _beyond(candidate, today, past=past, strict=strict):
                return candidate
        month = _add_months(month, step)
    return None


def _next_month_day(
    today: date, month: int, day: int, *, past: bool, strict: bool = True
) -> date | None:
    """The next (or last) ``month``/``day`` after (before) today, Feb 29 in leap years; with
    ``strict`` false, today counts."""
    step = -1 if past else 1
    for offset in range(9):
        year = today.year + step * offset
        if day > calendar.monthrange(year, month)[1]:
            continue
        candidate = date(year, month, day)
        if _beyond(candidate, today, past=past, strict=strict):
            return candidate
    return None


# -- writing --------------------------------------------------------------------------------


def _day_text(day: date) -> str:
    return f"{day.isoformat()} ({_WEEKDAYS[day.weekday()].capitalize()})"


def _month_text(day: date) -> str:
    return f"{_MONTH_NAMES[day.month]} {day.year} ({day.year:04d}-{day.month:02d})"


def _season_text(name: str, start: date, end: date) -> str:
    label = f"{start.year}-{str(end.year)[2:]}" if end.year != start.year else str(start.year)
    return f"{name} {label} ({start.isoformat()[:7]} to {end.isoformat()[:7]})"


_LEADS: Final[dict[str, str]] = {
    "day": "on", "week": "in", "month": "in", "season": "in", "year": "in",
}


@dataclass(frozen=True, slots=True)
class _Found:
    """What a pattern's handler found: ``None`` fields for a span kept as written."""

    span: tuple[int, int]
    start: date | None = None
    end: date | None = None
    precision: Precision = "day"
    past: bool = False
    core: str = ""
    lead: str | None = None  # None: the precision's preposition (``on`` / ``in``)


@dataclass(frozen=True, slots=True)
class _Context:
    text: str
    today: date


Handler = Callable[[re.Match[str], _Context], "_Found | None"]


def _direction(context: _Context, match: re.Match[str], default: bool = False) -> bool:
    """Whether an ambiguous date points back: ``since`` yes, ``for``/``until`` no, else tense."""
    before = context.text[: match.start()].rstrip().rsplit(None, 1)
    word = before[-1].lower() if before else ""
    if word in ("since",):
        return True
    if word in ("for", "until", "till", "til", "by"):
        return False
    tense = is_past(_clause(context.text, match.start(), match.end()))
    return default if tense is None else tense


def _habitual(context: _Context, match: re.Match[str]) -> bool:
    return bool(_HABIT.search(_clause(context.text, match.start(), match.end())))


def _recurring(context: _Context, match: re.Match[str]) -> bool:
    return bool(_RECURRING.search(_clause(context.text, match.start(), match.end())))


def _tense_past(context: _Context, match: re.Match[str]) -> bool:
    return is_past(_clause(context.text, match.start(), match.end())) is True


def _day(match: re.Match[str], day: date, *, past: bool, core: str | None = None) -> _Found:
    return _Found(match.span(), day, day, "day", past, core or _day_text(day))


# -- handlers, one per family ------------------------------------------------------------


def _kept(match: re.Match[str], context: _Context) -> _Found:
    return _Found(match.span())  # a habit or a name: blocks the other patterns, stays as is


_PARTS: Final = {"morning": "morning", "afternoon": "afternoon", "evening": "evening",
                 "night": "night", "tonight": "evening"}


def _near_day(match: re.Match[str], context: _Context) -> _Found | None:
    word = " ".join(match["near"].lower().split())
    offset = {
        "today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1, "last night": -1,
        "the day after tomorrow": 2, "day after tomorrow": 2,
        "the day before yesterday": -2, "day before yesterday": -2,
    }[word]
    day = context.today + timedelta(days=offset)
    part = match["part"]
    part = part.lower() if part else ("evening" if word == "tonight" else None)
    if word == "last night":
        part = "night"
    past = offset < 0 or (offset == 0 and _tense_past(context, match))
    core = _day_text(day) if part is None else f"the {_PARTS[part]} of {_day_text(day)}"
    return _day(match, day, past=past, core=core)


def _this_part(match: re.Match[str], context: _Context) -> _Found | None:
    day = context.today
    return _day(match, day, past=_tense_past(context, match),
                core=f"the {match['part'].lower()} of {_day_text(day)}")


def _relative_weekday(match: re.Match[str], context: _Context) -> _Found | None:
    which = " ".join(match["rel"].lower().split())
    target = _WEEKDAYS.index(match["wd"].lower())
    today = context.today
    if which == "next":
        day = _monday(today) + timedelta(days=7 + target)
    elif which == "last":
        day = _monday(today) + timedelta(days=-7 + target)
    elif which in ("coming", "this coming"):
        day = today + timedelta(days=(target - today.weekday() - 1) % 7 + 1)
    elif which in ("past", "this past"):
        day = today - timedelta(days=(today.weekday() - target - 1) % 7 + 1)
    elif _tense_past(context, match):  # "this Monday" in a past-tense clause
        day = today - timedelta(days=(today.weekday() - target) % 7)
    else:
        day = today + timedelta(days=(target - today.weekday()) % 7)
    return _day(match, day, past=day < today or (day == today and _tense_past(context, match)))


def _bare_weekday(match: re.Match[str], context: _Context) -> _Found | None:
    before = context.text[: match.start()].rstrip().rsplit(None, 1)
    if before and before[-1].lower().strip("\"'(") in _NAMED_DAYS:
        return _kept(match, context)
    if context.text[match.end() : match.end() + 2] in ("'s", "\u2019s"):
        return None
    if _habitual(context, match):
        return _kept(match, context)
    target = _WEEKDAYS.index(match["wd"].lower())
    today = context.today
    past = _direction(context, match)
    if past:
        day = today - timedelta(days=(today.weekday() - target - 1) % 7 + 1)
    else:
        day = today + timedelta(days=(target - today.weekday() - 1) % 7 + 1)
    return _day(match, day, past=past)


_UNIT_DAYS: Final = {"day": 1, "week": 7, "fortnight": 14}


def _number(words: str) -> int:
    key = " ".join(words.lower().split())
    return int(key) if key.isdigit() else _NUMBERS[key]


def _offset(match: re.Match[str], context: _Context, sign: int) -> _Found | None:
    unit = match["unit"].lower()
    count = 1 if unit == "fortnight" else _number(match["n"])
    if count == 0 or count > 400:
        return None
    today = context.today
    if unit in _UNIT_DAYS:
        day = today + timedelta(days=sign * count * _UNIT_DAYS[unit])
        return _day(match, day, past=sign < 0)
    if unit == "month":
        day = _add_months(today, sign * count)
        start = day.replace(day=1)
        return _Found(match.span(), start, _month_end(day.year, day.month), "month",
                      sign < 0, _month_text(day))
    year = today.year + sign * count
    return _Found(match.span(), date(year, 1, 1), date(year, 12, 31), "year", sign < 0,
                  str(year))


def _in_offset(match: re.Match[str], context: _Context) -> _Found | None:
    if match[0].lower().startswith("in") and _tense_past(context, match):
        return _kept(match, context)  # "I lost 5 kg in two weeks": a duration, no date
    return _offset(match, context, +1)


def _ago(match: re.Match[str], context: _Context) -> _Found | None:
    return _offset(match, context, -1)


def _relative_unit(match: re.Match[str], context: _Context) -> _Found | None:
    which = " ".join(match["rel"].lower().split())
    step = {"this": 0, "next": 1, "coming": 1, "the coming": 1, "last": -1}[which]
    unit = match["unit"].lower()
    today = context.today
    past = step < 0 or (step == 0 and _tense_past(context, match))
    if unit in ("week", "weekend"):
        monday = _monday(today) + timedelta(days=7 * step)
        if unit == "weekend":
            saturday = monday + timedelta(days=5)
            return _Found(match.span(), saturday, saturday + timedelta(days=1), "day", past,
                          f"the weekend of {saturday.isoformat()}", "on")
        return _Found(match.span(), monday, monday + timedelta(days=6), "week", past,
                      f"the week of {monday.isoformat()}")
    if unit == "month":
        first = _add_months(today.replace(day=1), step)
        return _Found(match.span(), first, _month_end(first.year, first.month), "month", past,
                      _month_text(first))
    year = today.year + step
    return _Found(match.span(), date(year, 1, 1), date(year, 12, 31), "year", past, str(year))


def _season_of(match: re.Match[str], context: _Context, which: str) -> _Found | None:
    name = match["season"].lower()
    first = _SEASONS[name]
    today = context.today
    seasons = _seasons_around(today, first)
    current = next(((s, e) for s, e in seasons if s <= today <= e), None)
    if which in ("last", "this past"):
        start, end = [(s, e) for s, e in seasons if e < today][-1]
    elif which in ("next", "this coming"):
        start, end = next((s, e) for s, e in seasons if s > today)
    else:  # "this" or a bare "in summer" read from the tense
        past = _direction(context, match, default=False)
        if current is not None:
            start, end = current
        elif past:
            start, end = [(s, e) for s, e in seasons if e < today][-1]
        else:
            start, end = next((s, e) for s, e in seasons if s > today)
    past = end < today or (start <= today and _tense_past(context, match))
    return _Found(match.span(), start, end, "season", past, _season_text(name, start, end))


def _relative_season(match: re.Match[str], context: _Context) -> _Found | None:
    return _season_of(match, context, " ".join(match["rel"].lower().split()))


def _bare_season(match: re.Match[str], context: _Context) -> _Found | None:
    clause = _clause(context.text, match.start(), match.end())
    if is_past(clause) is None or _habitual(context, match):
        return _kept(match, context)  # "in the summer I swim": a habit, no one summer
    found = _season_of(match, context, "")
    if found is None:
        return None
    # keep "in (the)" as the preposition: write only over the season's word
    start = match.start("season")
    if match["the"]:
        start = match.start("the")
    return _Found((start, match.end()), found.start, found.end, found.precision, found.past,
                  found.core, "")


def _month_word_ok(word: str, strong: bool) -> bool:
    """A month word counts capitalised, or in lower case when it is no everyday word, or with
    strong context (``in may``)."""
    if word[0].isupper():
        return True
    return strong or word.lower() not in _AMBIGUOUS_MONTHS


def _year_of(match: re.Match[str]) -> int | None:
    year = match["year"]
    return int(year) if year else None


def _calendar_day(match: re.Match[str], context: _Context) -> _Found | None:
    word = match["month"]
    key = word.lower().rstrip(".")
    if key not in _FULL_NAMES and not word[0].isupper():
        return None  # an abbreviation counts capitalised only ("Mar 3", not "mar 3")
    day_first = match.start("day") < match.start("month")
    strong = bool(match["year"]) or (day_first and bool(match["suffix"] or match["of"]))
    if not _month_word_ok(word, strong=strong):
        return None
    month = _MONTHS[word.lower().rstrip(".")]
    day = int(match["day"])
    year = _year_of(match)
    if not 1 <= day <= 31:
        return None
    today = context.today
    if year is not None:
        if day > calendar.monthrange(year, month)[1]:
            return None
        found = date(year, month, day)
        return _day(match, found, past=found < today)
    if _recurring(context, match):
        nxt = _next_month_day(today, month, day, past=False, strict=False)
        if nxt is None:
            return None
        return _Found(match.span(), nxt, nxt, "day", False,
                      f"{_MONTH_NAMES[month]} {day} (next: {nxt.isoformat()})")
    if _habitual(context, match):
        return _kept(match, context)
    past = _direction(context, match)
    found_day = _next_month_day(today, month, day, past=past)
    if found_day is None:
        return None
    return _day(match, found_day, past=past)


_NOUN_OK_AFTER_ORDINAL: Final = frozenset(
    "at and or so but because for in of when which then since until by to with from this "
    "next i we my our is was will if as after before around too though it that the".split()
)


def _day_of_month(match: re.Match[str], context: _Context) -> _Found | None:
    after = context.text[match.end() :]
    following = re.match(r"\s+([A-Za-z]+)", after)
    if following and following[1].lower() not in _NOUN_OK_AFTER_ORDINAL and not match["rel"]:
        return None  # "the 12th floor", "the 5th time"
    day = int(match["day"])
    if not 1 <= day <= 31:
        return None
    today = context.today
    if match["rel"]:
        step = {"this": 0, "next": 1, "last": -1}[match["rel"].lower()]
        first = _add_months(today.replace(day=1), step)
        if day > calendar.monthrange(first.year, first.month)[1]:
            return None
        found = first.replace(day=day)
        return _day(match, found, past=found < today)
    if _recurring(context, match):
        nxt = _next_day_of_month(today, day, past=False, strict=False)
        if nxt is None:
            return None
        return _Found(match.span(), nxt, nxt, "day", False,
                      f"{_MONTH_NAMES[nxt.month]} {day} (next: {nxt.isoformat()})")
    if _habitual(context, match):
        return _kept(match, context)
    past = _direction(context, match)
    found_day = _next_day_of_month(today, day, past=past)
    return None if found_day is None else _day(match, found_day, past=past)


def _month(match: re.Match[str], context: _Context) -> _Found | None:
    word = match["month"]
    rel = (match["rel"] or "").lower()
    ctx = (match["ctx"] or "").lower()
    year = _year_of(match)
    if not (rel or ctx or year) or not _month_word_ok(word, strong=bool(rel or ctx)):
        return None  # "March is my favourite month", "May I ask": no one month
    month = _MONTHS[word.lower()]
    today = context.today
    span = (match.start("month") if ctx else match.start(), match.end())
    if year is None:
        if rel == "last":
            year = today.year if month < today.month else today.year - 1
        elif rel == "next":
            year = today.year if month > today.month else today.year + 1
        elif rel == "this":
            year = today.year
        else:
            if _habitual(context, match):
                return _kept(match, context)
            if ctx == "since":
                past = True
            elif ctx in ("until", "till", "by", "starting"):
                past = False
            else:
                past = _direction(context, match)
            if past:
                year = today.year if month <= today.month else today.year - 1
            else:
                year = today.year if month >= today.month else today.year + 1
    first = date(year, month, 1)
    end = _month_end(year, month)
    past = end < today or (first <= today and (ctx == "since" or _tense_past(context, match)))
    return _Found(span, first, end, "month", past, _month_text(first), "" if ctx else None)


#: Holidays on fixed days: (month, day, name), by their words without apostrophes.
_HOLIDAYS: Final = {
    "christmas": (12, 25, "Christmas"), "christmas day": (12, 25, "Christmas Day"),
    "christmas eve": (12, 24, "Christmas Eve"), "new years eve": (12, 31, "New Year's Eve"),
    "new years day": (1, 1, "New Year's Day"), "halloween": (10, 31, "Halloween"),
    "valentines day": (2, 14, "Valentine's Day"), "valentines": (2, 14, "Valentine's Day"),
}


def _holiday(match: re.Match[str], context: _Context) -> _Found | None:
    key = re.sub(r"[^a-z ]", "", " ".join(match["holiday"].lower().split()))
    key = key.replace("new year ", "new years ")
    if key not in _HOLIDAYS:
        return None
    following = re.match(r"\s+([A-Za-z]+)", context.text[match.end() :])
    if following and following[1].lower() not in _NOUN_OK_AFTER_ORDINAL:
        return None  # "a Christmas tree", "the Christmas party": a thing, not the day
    month, day, name = _HOLIDAYS[key]
    today = context.today
    rel = (match["rel"] or "").lower()
    if rel == "last":
        found = _next_month_day(today, month, day, past=True)
    elif rel == "next":
        found = _next_month_day(today, month, day, past=False)
    elif rel == "this":
        found = date(today.year, month, day)
    else:
        if _habitual(context, match) or _recurring(context, match):
            return _kept(match, context)
        found = _next_month_day(today, month, day, past=_direction(context, match))
    if found is None:
        return None
    return _Found(match.span(), found, found, "day", found < today,
                  f"{name} ({found.isoformat()})", "at")


def _iso(match: re.Match[str], context: _Context) -> _Found | None:
    try:
        found = date(int(match["y"]), int(match["m"]), int(match["d"]))
    except ValueError:
        return None
    before = context.text[: match.start()].rstrip().rsplit(None, 1)
    since = bool(before) and before[-1].lower() == "since"
    return _Found(match.span(), found, found, "day", found < context.today or since,
                  match[0], "")


def _year(match: re.Match[str], context: _Context) -> _Found | None:
    year = int(match["year"])
    start, end = date(year, 1, 1), date(year, 12, 31)
    since = match["ctx"].lower() == "since"
    span = (match.start("year"), match.end())
    return _Found(span, start, end, "year", since or end < context.today, match["year"], "")


# -- the patterns, longest first where two start together -------------------------------------

_I = re.IGNORECASE
_PATTERNS: Final[tuple[tuple[re.Pattern[str], Handler], ...]] = (
    # habits stay as written ("every Friday", "each morning", "every Tuesday and Thursday")
    (re.compile(
        r"\b(?:every|each)\s+(?:other\s+|second\s+)?(?:" + _WD + r"|weekend|week|month|year|"
        r"morning|afternoon|evening|night|day|spring|summer|autumn|fall|winter|" + _FULL_MONTH
        + r")s?(?:(?:\s*,\s*|\s+(?:and|or|&)\s+|\s*,\s*(?:and|or)\s+)" + _WD + r"s?)*\b", _I),
     _kept),
    (re.compile(r"\b(?P<near>(?:the\s+)?day\s+after\s+tomorrow|(?:the\s+)?day\s+before\s+"
                r"yesterday|tomorrow|yesterday|today|tonight|last\s+night)(?!['\u2019]s)\b"
                r"(?:\s+(?P<part>morning|afternoon|evening|night)\b)?", _I), _near_day),
    (re.compile(r"\bthis\s+(?P<part>morning|afternoon|evening)\b", _I), _this_part),
    (re.compile(r"\b(?P<rel>this\s+coming|this\s+past|coming|past|this|next|last)\s+(?P<wd>"
                + _WD + r")\b(?!['\u2019]s)", _I), _relative_weekday),
    (re.compile(r"\b(?P<wd>" + _WD + r")\b", _I), _bare_weekday),
    (re.compile(r"\bin\s+(?P<n>" + _NUM + r")\s+(?P<unit>day|week|month|year)s?"
                r"(?:['\u2019]?\s+time)?\b", _I), _in_offset),
    (re.compile(r"\bin\s+a\s+(?P<unit>fortnight)(?:['\u2019]?s\s+time)?\b", _I), _in_offset),
    (re.compile(r"\b(?P<n>" + _NUM + r")\s+(?P<unit>day|week|month|year)s?\s+from\s+"
                r"(?:now|today)\b", _I), _in_offset),
    (re.compile(r"\b(?P<n>" + _NUM + r")\s+(?P<unit>day|week|month|year)s?\s+ago\b", _I), _ago),
    (re.compile(r"\b(?P<rel>the\s+coming|coming|this|next|last)\s+(?P<unit>weekend|week|month|"
                r"year)\b(?!['\u2019]s)", _I), _relative_unit),
    (re.compile(r"\b(?P<rel>this\s+past|this\s+coming|this|next|last)\s+(?P<season>spring|"
                r"summer|autumn|fall|winter)\b", _I), _relative_season),
    (re.compile(r"\bin\s+(?P<the>the\s+)?(?P<season>spring|summer|autumn|fall|winter)\b"
                r"(?!\s+of\b)", _I), _bare_season),
    (re.compile(r"\b(?:(?P<wd>" + _WD + r"),?\s+)?(?P<month>" + _ANY_MONTH + r")\.?\s+"
                r"(?P<day>\d{1,2})(?P<suffix>st|nd|rd|th)?(?P<of>)(?![\d:%.,]\d)"
                r"(?:,?\s+(?P<year>\d{4}))?\b(?!\s*(?:am|pm|a\.m|p\.m|%|:\d))", _I), _calendar_day),
    (re.compile(r"\b(?:(?P<wd>" + _WD + r"),?\s+)?(?:the\s+)?(?P<day>\d{1,2})"
                r"(?P<suffix>st|nd|rd|th)?\s+(?P<of>of\s+)?(?P<month>" + _ANY_MONTH + r")\b\.?"
                r"(?:,?\s+(?P<year>\d{4})\b)?", _I), _calendar_day),
    (re.compile(r"\bthe\s+(?P<day>\d{1,2})(?:st|nd|rd|th)\b(?:\s+of\s+(?P<rel>this|next|last)"
                r"\s+month\b)?", _I), _day_of_month),
    (re.compile(r"\b(?:(?P<rel>last|next|this)\s+|(?P<ctx>in|since|until|till|by|from|during|"
                r"before|after|early|late|mid-?|of|around|through|starting)\s+)?(?P<month>"
                + _FULL_MONTH + r")\b(?:,?\s+(?P<year>\d{4})\b)?(?!\s+\d{1,2}(?:st|nd|rd|th)?"
                r"\b(?!\d))", _I), _month),
    (re.compile(r"\b(?:(?P<rel>last|next|this)\s+)?(?P<holiday>christmas(?:\s+eve|\s+day)?|new\s+"
                r"years?['\u2019]?s?\s+(?:eve|day)|halloween|valentine['\u2019]?s(?:\s+day)?)\b",
                _I), _holiday),
    (re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"), _iso),
    (re.compile(r"\b(?P<ctx>in|since|from|of|by|until|till|during|around|before|after)\s+"
                r"(?P<year>(?:19|20)\d{2})\b(?![-/]\d)", _I), _year),
)

_QUOTED: Final = re.compile(
    r"\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d|\u2018[^\u2019\n]*\u2019|(?<!\w)'[^'\n]{1,200}'(?!\w)"
)


def resolve(text: str, now: datetime) -> Resolved:
    """``text`` with its relative dates resolved against ``now``, and what was found.

    ``now`` is the moment the text was said; its own zone decides which day ``today`` is
    (aware or naive, both are read as they stand). The returned ``when`` and ``valid_from``
    are midnight of their day in ``now``'s zone.
    """
    context = _Context(text, now.date())
    quoted = [found.span() for found in _QUOTED.finditer(text)]
    found: list[_Found] = []
    for pattern, handler in _PATTERNS:
        for match in pattern.finditer(text):
            if any(a < match.end() and match.start() < b for a, b in quoted):
                continue
            result = handler(match, context)
            if result is not None:
                found.append(result)
    found.sort(key=lambda one: (one.span[0], one.span[0] - one.span[1]))
    chosen: list[_Found] = []
    for one in found:
        if chosen and one.span[0] < chosen[-1].span[1]:
            continue  # overlaps a longer or earlier one
        chosen.append(one)
    parts: list[str] = []
    mentions: list[Mention] = []
    cursor = 0
    for one in chosen:
        begin, end = one.span
        parts.append(text[cursor:begin])
        cursor = end
        original = text[begin:end]
        if one.start is None or one.end is None:
            parts.append(original)
            continue
        written = one.core
        if one.core != original:
            lead = _LEADS[one.precision] if one.lead is None else one.lead
            previous = text[:begin].rstrip().rsplit(None, 1)
            if previous and previous[-1].lower().strip(",") in _PREPOSITIONS:
                lead = ""
            written = f"{lead} {one.core}" if lead else one.core
            if not text[:begin].strip() or re.search(r"[.!?]\s*$", text[:begin]):
                written = written[0].upper() + written[1:]
        parts.append(written)
        mentions.append(Mention(one.start, one.end, one.precision, one.past, original, written))
    parts.append(text[cursor:])
    zone = now.tzinfo

    def midnight(day: date) -> datetime:
        return datetime.combine(day, time(), tzinfo=zone)

    first = midnight(mentions[0].start) if mentions else None
    began = next((midnight(one.start) for one in mentions if one.past), None)
    return Resolved("".join(parts), tuple(mentions), first, began)
