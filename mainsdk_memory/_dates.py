"""Resolve the relative dates of an English sentence against when it was said, in ISO form.

:func:`resolve` finds every date expression it understands and returns the text with what
each one means written after it, in parentheses (:class:`Resolved`). Pure: no clock (the
moment comes in as ``now``), no I/O. A memory written with ``"next Friday"`` in it means
another day next week; written with ``"next Friday (2026-12-11)"`` it means the same day
for ever, and still reads as it was said.

**Calendar.** Dates are days of ``now``'s own zone (``now.date()``). A week runs Monday to
Sunday (ISO 8601). The seasons are the northern meteorological ones: spring March-May,
summer June-August, autumn (fall) September-November, winter December-February (named by
the year of its December: winter 2026-27).

**What is resolved,** with ``today`` the day of ``now``:

===============================  ===========================================================
``today`` ``tonight``            today (``tonight``, ``this morning`` ... too)
``tomorrow`` ``yesterday``       today +1 / -1; ``the day after tomorrow`` +2,
                                 ``the day before yesterday`` -2, ``last night`` -1
``next <weekday>``               that weekday of next week (the Monday-Sunday week after
                                 today's): said on Tuesday 2026-12-01, ``next Friday`` is
                                 2026-12-11; said on Sunday, ``next Monday`` is tomorrow;
                                 ``<weekday> next week`` too
``last <weekday>``               that weekday of the week before today's
``this <weekday>``               the next one on or after today; in a past-tense clause the
                                 last one on or before today
``coming <weekday>``             the next one after today (``this coming`` too);
                                 ``past <weekday>`` the last one before today
``<weekday>``, ``on <weekday>``  the next one after today; in a past-tense clause the last
                                 one before today. Plurals (``Mondays``) and ``every|each
                                 <weekday>`` are habits and stay as written
``<weekday> the 11th``           one day: the 11th as ``the 11th`` below, kept as said when
                                 it is no such weekday
``Monday to Friday``             the next such run of days (the last one in a past-tense
                                 clause); in a clause with no tense a schedule, kept as said
``this|next|last week``          that Monday-Sunday week; ``weekend`` its Saturday and Sunday
``this|next|last month|year``    that month, that year
``in N days|weeks``              today + N (day precision); ``in N months|years`` and
                                 ``N months|years ago`` are month and year precision;
                                 ``N days|weeks ago``, ``N ... from now``; N is a digit or
                                 ``a``/``an``/``one`` ... ``twelve``, ``a couple of``;
                                 ``in a fortnight`` is 14 days
``in a week or two``             a range: ``in N or M|N-M|N to M <unit>s``, ``a day or
                                 two ago``; ``in a few days``, ``in a month or so`` are
                                 kept as said
``the 12th``                     the next 12th after today (the last one before today in a
                                 past-tense clause); ``the 12th of next month``; not when a
                                 noun follows (``the 12th floor``)
``March 3``, ``3 March``,        the next March 3 after today (the last one before today,
``the 3rd of March``             in a past-tense clause); with a year, that day
``in June``, ``since June``      next June: this year's if June is this month or later, else
                                 next year's; in a past-tense clause or after ``since`` the
                                 last June (this month or earlier); ``last June`` and
                                 ``next June`` the June before / after this month
``last|this|next summer``        ``last``: the latest season that has ended; ``next``: the
                                 first that has not begun; ``this``: the one now, else the
                                 coming one (the last one in a past-tense clause). ``in
                                 (the) summer`` only in a clause with a tense marker
``Christmas``, ``New Year's      as ``March 3``
Eve``, ``Halloween`` ...
===============================  ===========================================================

ISO dates (``2024-03-01``) and years after a preposition (``since 2019``) are left as they
are but reported, so a fact "since 2019" knows when it began. Months named as a word that
is also a verb (``may``, ``march``) count only when capitalised or after a preposition of
time (``in may``). Never resolved: a date inside quotes; a weekday or month that is part of
a name (``Black Friday``, ``the Sunday Times``, ``Saturday Night Live``, ``Monday.com``, a
cat ``called Friday``) or stands before a noun (``the Sunday paper``, ``Sunday school``); a
yearless date of birth (``I was born on March 3rd`` is kept as said: the year is not
this one). Past tense is read from the clause around a date (at most
:data:`_WINDOW` characters either side: ``went``, ``was``, a verb in ``-ed`` not after
``is`` or ``a``, ``ago`` ...; a future marker, ``will``, ``going to``, ``I'm flying``,
wins), and ``since`` always points back, ``for`` and ``until`` forward. A clause of habits
(``usually``, ``always``, ``every`` ...) is not resolved except for its unambiguous words
(``tomorrow``, ``next week``); nor is ``in two weeks`` in a past-tense clause (``I lost 5
kg in two weeks``: a duration).

**Written form.** The words stay as said; what they mean follows them in parentheses:

- a day: ``YYYY-MM-DD``, with ``, Weekday`` unless the words name it: ``next Friday
  (2026-12-11)``, ``tomorrow (2026-12-02, Wednesday)``, ``on the 12th (2026-12-12,
  Saturday)``;
- a week, a weekend, a season or a range: its first and last day or month, ``last week
  (2026-11-23 to 2026-11-29)``, ``last summer (2026-06 to 2026-08)``, ``in a week or two
  (2026-12-08 to 2026-12-15)``;
- a month ``YYYY-MM`` (``in June (2027-06)``), a year ``YYYY`` (``next year (2027)``);
- a yearless date in a clause about something that recurs (a birthday, an anniversary):
  its next day, today counting: ``my birthday is on the 20th (next: 2026-12-20)``.

A date written absolutely (``2024-03-01``, ``since 2019``) gains nothing.

**Cost.** Linear in the length of the text: the clause around a date is read from clause
marks found once, within a bounded window.
"""

from __future__ import annotations

import bisect
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
    """What they became in the text: ``original`` and what it means in parentheses
    (``next Friday (2026-12-11)``); ``original`` alone for a date already absolute."""


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


