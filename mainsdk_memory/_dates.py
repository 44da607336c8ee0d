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
                                 one before today (``Friday evening`` too). Plurals
                                 (``Mondays``) and ``every|each <weekday>`` are habits and
                                 stay as written, as does ``Friday week``
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
cat ``called Friday``) or qualifies a noun (``the Sunday paper``, ``a Monday meeting``,
``Sunday school``); a yearless date of birth (``I was born on March 3rd`` is kept as said:
the year is not this one). Past tense is read from the clause around a date (at most 120
characters either side: ``went``, ``was``, a verb in ``-ed`` not after ``is`` or ``a``,
``ago`` ...; a future marker, ``will``, ``going to``, ``I'm flying``, wins), and ``since``
always points back, ``for`` and ``until`` forward. A clause of habits (``usually``,
``always``, ``every`` ...) is not resolved except for its unambiguous words (``tomorrow``,
``next week``); nor is ``in two weeks`` in a past-tense clause (``I lost 5 kg in two
weeks``: a duration).

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

**Cost.** Linear in the length of the text: the clause marks are found once and each date's
clause is read within its bounded window; a quote in curly marks is looked for over at most
500 characters.
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
#: Words before a weekday that make it a name, not a day (``Black Friday``, ``Palm Sunday``).
_NAMED_DAYS: Final = frozenset(
    "black good cyber casual holy ash easter super bowl giving palm mothering maundy shrove "
    "fat blue bloody man girl travel business".split()
)
#: Words that make a clause about something that recurs (its yearless dates keep their words).
_RECURRING: Final = re.compile(
    r"\b(?:birthdays?|b-?days?|anniversar(?:y|ies)|name\s*days?|annual(?:ly)?|yearly|"
    r"every\s+year|each\s+year)\b",
    re.IGNORECASE,
)
_WORD: Final = re.compile(r"\w+")
#: Words of habit: a clause with one is about what usually happens, no one date.
_HABIT_WORDS: Final = frozenset(
    "usually always often normally generally typically sometimes never rarely every each".split()
)
_HABIT: Final = re.compile(r"\b(?:tend\s+to|most\s+years)\b", re.IGNORECASE)


def _habit(clause: str) -> bool:
    lowered = clause.lower()
    if not _HABIT_WORDS.isdisjoint(_WORD.findall(lowered)):
        return True
    return ("tend" in lowered or "most" in lowered) and bool(_HABIT.search(clause))

# -- tense ----------------------------------------------------------------------------------

#: Words of the future, one by one (a set look-up is much cheaper than an alternation).
_FUTURE_WORDS: Final = frozenset("will shall gonna upcoming due expecting scheduled".split())
_FUTURE: Final = re.compile(
    r"\b(?:won't|going\s+to|plan(?:ning)?\s+to|intend(?:ing)?\s+to|"
    r"hop(?:e|ing)\s+to|about\s+to|can'?t\s+wait|coming\s+up|"
    r"(?:is|are|am|be)\s+(?:\w+ly\s+)?\w{2,}ing)\b|"
    r"(?:'ll|'m|'re)\s+(?:\w+ly\s+|also\s+|still\s+|just\s+)?\w{2,}ing\b|'ll\b",
    re.IGNORECASE,
)
_IRREGULAR_PAST: Final = (
    "was were did had went came saw met took made left began bought brought flew drove ran won "
    "lost found gave ate drank wrote sold spent broke became felt told heard sent paid quit fell "
    "got caught taught thought sang swam rode chose grew knew threw wore forgot hid held kept "
    "led lent meant said sat slept spoke stood stole struck swore woke arrived"
)
#: Letters every match of :data:`_FUTURE` holds: a clause without any skips the search.
_FUTURE_CUES: Final = ("ing", "won't", "plan", "intend", "hope", "about", "can", "'ll")
#: Single words of the past (read as words: one set look-up, not a long alternation).
_PAST_WORDS: Final = frozenset(_IRREGULAR_PAST.split()) | {"ago", "earlier", "previously", "last"}
#: Letters every match of :data:`_PAST` holds: a clause without any skips the search.
_PAST_CUES: Final = ("ve", "has", "used", "back")
_PAST: Final = re.compile(
    r"\b(?:used\s+to|back\s+in)\b|"
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
    lowered = clause.lower()
    if not _FUTURE_WORDS.isdisjoint(_WORD.findall(lowered)):
        return False
    if any(cue in lowered for cue in _FUTURE_CUES) and _FUTURE.search(clause):
        return False
    if "got" in lowered:
        clause = _HAVE_GOT.sub("have", clause)  # "I've got an exam on Friday": a present
        lowered = clause.lower()
    if not _PAST_WORDS.isdisjoint(_WORD.findall(lowered)):
        return True
    if any(word in lowered for word in _PAST_CUES) and _PAST.search(clause):
        return True
    if "ed" not in lowered:
        return None
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


# -- writing --------------------------------------------------------------------------------


def _day_note(day: date, words: str) -> str:
    """``2026-12-02, Wednesday``; the date alone when ``words`` already name its weekday."""
    weekday = _WEEKDAYS[day.weekday()]
    if weekday in words.lower():
        return day.isoformat()
    return f"{day.isoformat()}, {weekday.capitalize()}"


def _month_note(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def _span_note(start: date, end: date, precision: Precision) -> str:
    """A period by its first and last day (``day``), month or year."""
    if precision == "year":
        return f"{start.year} to {end.year}"
    if precision in ("month", "season"):
        return f"{_month_note(start)} to {_month_note(end)}"
    return f"{start.isoformat()} to {end.isoformat()}"


@dataclass(frozen=True, slots=True)
class _Found:
    """What a pattern's handler found: ``None`` dates for a span kept as written."""

    span: tuple[int, int]
    start: date | None = None
    end: date | None = None
    precision: Precision = "day"
    past: bool = False
    note: str = ""
    """What the words mean, written after them in parentheses; empty for a date already
    absolute (``since 2019``)."""


# -- reading around a date --------------------------------------------------------------------

#: How many characters either side of a date its clause is read at most: a text without
#: clause marks costs no more per date than a short one.
_WINDOW: Final = 120
#: How far back (or on) the word next to a date is looked for.
_NEAR: Final = 80


class _Context:
    """A text being resolved: its day, its clause marks (found once) and the clauses read."""

    __slots__ = ("_clauses", "_ends", "_starts", "text", "today")

    def __init__(self, text: str, today: date) -> None:
        self.text = text
        self.today = today
        marks = [found.span() for found in _CLAUSE_END.finditer(text)]
        self._starts = [first for first, _ in marks]
        self._ends = [last for _, last in marks]
        self._clauses: dict[tuple[int, int], str] = {}

    def clause(self, start: int, end: int) -> str:
        """The clause around ``[start, end)``, the date's own words left out: from the clause
        mark before it to the one after it, at most :data:`_WINDOW` characters either side
        (cut at a space)."""
        key = (start, end)
        known = self._clauses.get(key)
        if known is not None:
            return known
        text = self.text
        index = bisect.bisect_right(self._ends, start)
        left = self._ends[index - 1] if index else 0
        if left < start - _WINDOW:
            space = text.find(" ", start - _WINDOW, start)
            left = start if space == -1 else space + 1
        index = bisect.bisect_left(self._starts, end)
        right = self._starts[index] if index < len(self._starts) else len(text)
        if right > end + _WINDOW:
            space = text.rfind(" ", end, end + _WINDOW)
            right = end if space == -1 else space
        clause = text[left:start] + " " + text[end:right]
        self._clauses[key] = clause
        return clause

    def words_before(self, position: int, count: int = 1) -> list[str]:
        """The last ``count`` words (as written) before ``position``."""
        return self.text[max(0, position - _NEAR) : position].split()[-count:]

    def word_before(self, position: int) -> str:
        """The word before ``position``, in lower case (``""`` at the start)."""
        words = self.words_before(position)
        return words[-1].lower() if words else ""

    def word_after(self, position: int) -> str:
        """The word of letters after ``position`` and some white space, as written; ``""``
        when something else comes first."""
        found = re.match(r"\s+([A-Za-z]+)", self.text[position : position + _NEAR])
        return found[1] if found else ""


Handler = Callable[[re.Match[str], _Context], "_Found | None"]


def _direction(context: _Context, match: re.Match[str], default: bool = False) -> bool:
    """Whether an ambiguous date points back: ``since`` yes, ``for``/``until`` no, else tense."""
    word = context.word_before(match.start())
    if word in ("since",):
        return True
    if word in ("for", "until", "till", "til", "by"):
        return False
    tense = is_past(context.clause(match.start(), match.end()))
    return default if tense is None else tense


def _habitual(context: _Context, match: re.Match[str]) -> bool:
    return _habit(context.clause(match.start(), match.end()))


def _recurring(context: _Context, match: re.Match[str]) -> bool:
    return bool(_RECURRING.search(context.clause(match.start(), match.end())))


def _of_birth(context: _Context, match: re.Match[str]) -> bool:
    """A clause about when someone was born: its yearless date is no date of this year."""
    return bool(_BORN.search(context.clause(match.start(), match.end())))


def _tense_past(context: _Context, match: re.Match[str]) -> bool:
    return is_past(context.clause(match.start(), match.end())) is True


def _day(match: re.Match[str], context: _Context, day: date, *, past: bool) -> _Found:
    return _Found(match.span(), day, day, "day", past, _day_note(day, match[0]))


#: A date word of a clause about a birth.
_BORN: Final = re.compile(
    r"\b(?:born|birth\s*date|date\s+of\s+birth|d\.?o\.?b)\b", re.IGNORECASE
)
#: Words after which a weekday or month is a name (``a cat called Friday``).
_NAMING: Final = frozenset("called named nicknamed dubbed titled entitled christened".split())
#: Words before a weekday that make it a kind of day, not one day (``the Sunday paper``).
_DETERMINERS: Final = frozenset(
    "a an the my our your his her their its that those these any some no what which".split()
)
#: Nouns a weekday qualifies (``Sunday school``): a kind of thing, not one day.
_ATTRIBUTIVE: Final = frozenset(
    "school schools paper papers times roast roasts brunch service services mass prayers "
    "league market markets best blues feeling edition supplement club football".split()
)
#: Capitalised words after a weekday or month that make no name of it (``Friday I fly``).
_NOT_NAMES: Final = frozenset(
    {"i", *_WEEKDAYS, *_MONTHS, "am", "pm", "and", "or"}
)
#: Characters that join a weekday to a name around it (``Monday.com``, ``@Friday``).
_JOINED_BEFORE: Final = frozenset(".@/_#")
_JOINED_AFTER: Final = frozenset(".@/_#-")


def _in_name(context: _Context, start: int, end: int, *, weekday: bool) -> bool:
    """Whether the weekday (or month) word at ``[start, end)`` is part of a name or of a noun
    phrase rather than a date: ``Monday.com``, ``called Friday``, ``the Sunday Times``,
    ``Saturday Night Live``, ``Good Friday``, ``Sunday school``."""
    text = context.text
    if start >= 2 and text[start - 1] in _JOINED_BEFORE and text[start - 2].isalnum():
        return True
    if end + 1 < len(text) and text[end] in _JOINED_AFTER and text[end + 1].isalnum():
        return True
    words = context.words_before(start, 2)
    previous = words[-1] if words else ""
    bare = previous.lower().strip("\"'(")
    if bare in _NAMING or bare == "name's" or (
        bare in ("is", "was") and len(words) == 2 and words[0].lower() == "name"
    ):
        return True
    following = re.match(r"[ \t]+([A-Za-z][\w'&]*)", text[end : end + _NEAR])
    if following is not None:
        word = following[1]
        if word[0].isupper() and word.lower().split("'")[0] not in _NOT_NAMES:
            return True  # "Saturday Night Live", "June Carter"
        if weekday and word.lower() in _ATTRIBUTIVE:
            return True
    if not weekday:
        return False
    return bare in _NAMED_DAYS or bare in _DETERMINERS  # "Easter Sunday", "the Sunday paper"


# -- handlers, one per family ------------------------------------------------------------


def _kept(match: re.Match[str], context: _Context) -> _Found:
    return _Found(match.span())  # a habit or a name: blocks the other patterns, stays as is


def _near_day(match: re.Match[str], context: _Context) -> _Found | None:
    word = " ".join(match["near"].lower().split())
    offset = {
        "today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1, "last night": -1,
        "the day after tomorrow": 2, "day after tomorrow": 2,
        "the day before yesterday": -2, "day before yesterday": -2,
    }[word]
    day = context.today + timedelta(days=offset)
    past = offset < 0 or (offset == 0 and _tense_past(context, match))
    return _day(match, context, day, past=past)


def _this_part(match: re.Match[str], context: _Context) -> _Found | None:
    return _day(match, context, context.today, past=_tense_past(context, match))


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
    past = day < today or (day == today and _tense_past(context, match))
    return _day(match, context, day, past=past)


def _after(today: date, target: int) -> date:
    """The first ``target`` weekday after today."""
    return today + timedelta(days=(target - today.weekday() - 1) % 7 + 1)


def _before(today: date, target: int) -> date:
    """The last ``target`` weekday before today."""
    return today - timedelta(days=(today.weekday() - target - 1) % 7 + 1)


def _bare_weekday(match: re.Match[str], context: _Context) -> _Found | None:
    end = match.end("wd")
    if _in_name(context, match.start(), end, weekday=True):
        return _kept(match, context)
    if context.text[end : end + 2] in ("'s", "\u2019s"):
        return None
    if _habitual(context, match):
        return _kept(match, context)
    if context.word_after(end).lower() == "week":
        return _kept(match, context)  # "Friday week": a week after Friday, said as said
    target = _WEEKDAYS.index(match["wd"].lower())
    past = _direction(context, match)
    today = context.today
    day = _before(today, target) if past else _after(today, target)
    return _day(match, context, day, past=past)


def _weekday_and_day(match: re.Match[str], context: _Context) -> _Found | None:
    """``Friday the 11th``: one day, the 11th; kept as said when the 11th is no Friday."""
    day = int(match["day"] or match["nth"])
    if not 1 <= day <= 31:
        return None
    if _habitual(context, match) or _of_birth(context, match):
        return _kept(match, context)
    rel = (match["rel"] or "").lower()
    today = context.today
    past = rel == "last" or (rel not in ("next", "coming") and _direction(context, match))
    found = _next_day_of_month(today, day, past=past, strict=False)
    if found is None or found.weekday() != _WEEKDAYS.index(match["wd"].lower()):
        return _kept(match, context)  # the number and the weekday disagree: as said
    return _day(match, context, found, past=found < today or (found == today and past))


def _weekday_of_week(match: re.Match[str], context: _Context) -> _Found | None:
    """``Friday next week``: that weekday of that week."""
    step = {"next": 1, "this": 0, "last": -1}[match["rel"].lower()]
    target = _WEEKDAYS.index(match["wd"].lower())
    today = context.today
    day = _monday(today) + timedelta(days=7 * step + target)
    past = day < today or (day == today and _tense_past(context, match))
    return _day(match, context, day, past=past)


def _weekday_run(match: re.Match[str], context: _Context) -> _Found | None:
    """``Monday to Friday``: the days of the next (or last) such run; in a clause with no
    tense a schedule (``I work Monday to Friday``), kept as said."""
    first = _WEEKDAYS.index(match["wd"].lower())
    last = _WEEKDAYS.index(match["wd2"].lower())
    length = (last - first) % 7
    tense = is_past(context.clause(match.start(), match.end()))
    if tense is None or length == 0 or _habitual(context, match):
        return _kept(match, context)
    today = context.today
    if tense:
        end = _before(today, last)
        start = end - timedelta(days=length)
    else:
        start = _after(today, first)
        end = start + timedelta(days=length)
    return _Found(match.span(), start, end, "day", tense, _span_note(start, end, "day"))


_UNIT_DAYS: Final = {"day": 1, "week": 7, "fortnight": 14}


def _number(words: str) -> int:
    key = " ".join(words.lower().split())
    return int(key) if key.isdigit() else _NUMBERS[key]


def _shifted(today: date, unit: str, count: int) -> tuple[date, date, Precision]:
    """The day, month or year ``count`` units (``day``, ``week``, ``fortnight``, ``month``,
    ``year``) from today: its first and last day and its precision."""
    if unit in _UNIT_DAYS:
        day = today + timedelta(days=count * _UNIT_DAYS[unit])
        return day, day, "day"
    if unit == "month":
        day = _add_months(today, count)
        return day.replace(day=1), _month_end(day.year, day.month), "month"
    year = today.year + count
    return date(year, 1, 1), date(year, 12, 31), "year"


def _note(start: date, precision: Precision, words: str) -> str:
    if precision == "day":
        return _day_note(start, words)
    return _month_note(start) if precision == "month" else str(start.year)


def _offset(match: re.Match[str], context: _Context, sign: int) -> _Found | None:
    unit = match["unit"].lower()
    count = 1 if unit == "fortnight" else _number(match["n"])
    if count == 0 or count > 400:
        return None
    start, end, precision = _shifted(context.today, unit, sign * count)
    return _Found(match.span(), start, end, precision, sign < 0,
                  _note(start, precision, match[0]))


def _in_offset(match: re.Match[str], context: _Context) -> _Found | None:
    if match[0].lower().startswith("in") and _tense_past(context, match):
        return _kept(match, context)  # "I lost 5 kg in two weeks": a duration, no date
    return _offset(match, context, +1)


def _ago(match: re.Match[str], context: _Context) -> _Found | None:
    return _offset(match, context, -1)


def _offset_range(match: re.Match[str], context: _Context) -> _Found | None:
    """``in a week or two``, ``in 2-3 days``, ``a day or two ago``: a range of days (months,
    years) from the nearer count to the further one."""
    tail = (match["tail"] or "").lower()
    if not match["in"] and not tail:
        return None  # "it takes 3 to 5 days": a duration, no date
    sign = -1 if tail == "ago" else 1
    if match["in"] and _tense_past(context, match):
        return _kept(match, context)  # "I lost 5 kg in two or three weeks": a duration
    low, high = _number(match["n"]), _number(match["m"])
    if not 0 < low < high <= 400:
        return _kept(match, context)
    unit = match["unit"].lower()
    near = _shifted(context.today, unit, sign * low)
    far = _shifted(context.today, unit, sign * high)
    first, last = (far, near) if sign < 0 else (near, far)
    precision = near[2]
    return _Found(match.span(), first[0], last[1], precision, sign < 0,
                  _span_note(first[0], last[1], precision))


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
            sunday = saturday + timedelta(days=1)
            return _Found(match.span(), saturday, sunday, "day", past,
                          _span_note(saturday, sunday, "day"))
        sunday = monday + timedelta(days=6)
        return _Found(match.span(), monday, sunday, "week", past,
                      _span_note(monday, sunday, "day"))
    if unit == "month":
        first = _add_months(today.replace(day=1), step)
        return _Found(match.span(), first, _month_end(first.year, first.month), "month", past,
                      _month_note(first))
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
    return _Found(match.span(), start, end, "season", past, _span_note(start, end, "season"))


def _relative_season(match: re.Match[str], context: _Context) -> _Found | None:
    return _season_of(match, context, " ".join(match["rel"].lower().split()))


def _bare_season(match: re.Match[str], context: _Context) -> _Found | None:
    clause = context.clause(match.start(), match.end())
    if is_past(clause) is None or _habitual(context, match):
        return _kept(match, context)  # "in the summer I swim": a habit, no one summer
    return _season_of(match, context, "")


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
    month = _MONTHS[key]
    day = int(match["day"])
    year = _year_of(match)
    if not 1 <= day <= 31:
        return None
    today = context.today
    if year is not None:
        if day > calendar.monthrange(year, month)[1]:
            return None
        found: date | None = date(year, month, day)
    elif _of_birth(context, match):
        return _kept(match, context)  # "I was born on March 3rd": not this year's
    elif _recurring(context, match):
        nxt = _next_month_day(today, month, day, past=False, strict=False)
        if nxt is None:
            return None
        return _Found(match.span(), nxt, nxt, "day", False, f"next: {nxt.isoformat()}")
    elif _habitual(context, match):
        return _kept(match, context)
    else:
        found = _next_month_day(today, month, day, past=_direction(context, match))
    if found is None:
        return None
    if match["wd"] and found.weekday() != _WEEKDAYS.index(match["wd"].lower()):
        return _kept(match, context)  # "Friday, March 6" when March 6 is a Saturday: as said
    return _day(match, context, found, past=found < today)


_NOUN_OK_AFTER_ORDINAL: Final = frozenset(
    "at and or so but because for in of when which then since until by to with from this "
    "next i we my our is was will if as after before around too though it that the".split()
)


def _day_of_month(match: re.Match[str], context: _Context) -> _Found | None:
    following = context.word_after(match.end())
    if following and following.lower() not in _NOUN_OK_AFTER_ORDINAL and not match["rel"]:
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
        return _day(match, context, found, past=found < today)
    if _of_birth(context, match):
        return _kept(match, context)
    if _recurring(context, match):
        nxt = _next_day_of_month(today, day, past=False, strict=False)
        if nxt is None:
            return None
        return _Found(match.span(), nxt, nxt, "day", False, f"next: {nxt.isoformat()}")
    if _habitual(context, match):
        return _kept(match, context)
    past = _direction(context, match)
    found_day = _next_day_of_month(today, day, past=past)
    return None if found_day is None else _day(match, context, found_day, past=past)


def _month(match: re.Match[str], context: _Context) -> _Found | None:
    word = match["month"]
    rel = (match["rel"] or "").lower()
    ctx = (match["ctx"] or "").lower()
    year = _year_of(match)
    if not (rel or ctx or year) or not _month_word_ok(word, strong=bool(rel or ctx)):
        return None  # "March is my favourite month", "May I ask": no one month
    if _in_name(context, match.start("month"), match.end("month"), weekday=False):
        return _kept(match, context)  # "since June Carter", "in March Madness"
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
            if _habitual(context, match) or _of_birth(context, match):
                return _kept(match, context)  # "my son was born in May": which May?
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
    return _Found(span, first, end, "month", past, _month_note(first))


#: Holidays on fixed days: (month, day), by their words without apostrophes.
_HOLIDAYS: Final = {
    "christmas": (12, 25), "christmas day": (12, 25), "christmas eve": (12, 24),
    "new years eve": (12, 31), "new years day": (1, 1), "halloween": (10, 31),
    "valentines day": (2, 14), "valentines": (2, 14),
}


def _holiday(match: re.Match[str], context: _Context) -> _Found | None:
    key = re.sub(r"[^a-z ]", "", " ".join(match["holiday"].lower().split()))
    key = key.replace("new year ", "new years ")
    if key not in _HOLIDAYS:
        return None
    following = context.word_after(match.end())
    if following and following.lower() not in _NOUN_OK_AFTER_ORDINAL:
        return None  # "a Christmas tree", "the Christmas party": a thing, not the day
    month, day = _HOLIDAYS[key]
    today = context.today
    rel = (match["rel"] or "").lower()
    if rel == "last":
        found = _next_month_day(today, month, day, past=True)
    elif rel == "next":
        found = _next_month_day(today, month, day, past=False)
    elif rel == "this":
        found = date(today.year, month, day)
    else:
        if _habitual(context, match) or _recurring(context, match) or _of_birth(context, match):
            return _kept(match, context)
        found = _next_month_day(today, month, day, past=_direction(context, match))
    if found is None:
        return None
    return _Found(match.span(), found, found, "day", found < today, found.isoformat())


def _iso(match: re.Match[str], context: _Context) -> _Found | None:
    try:
        found = date(int(match["y"]), int(match["m"]), int(match["d"]))
    except ValueError:
        return None
    since = context.word_before(match.start()) == "since"
    return _Found(match.span(), found, found, "day", found < context.today or since)


def _year(match: re.Match[str], context: _Context) -> _Found | None:
    year = int(match["year"])
    start, end = date(year, 1, 1), date(year, 12, 31)
    since = match["ctx"].lower() == "since"
    span = (match.start("year"), match.end())
    return _Found(span, start, end, "year", since or end < context.today)


# -- the patterns, longest first where two start together -------------------------------------

_I = re.IGNORECASE
_UNIT: Final = r"(?P<unit>day|week|month|year)"
#: A part of the day after a weekday (``Friday evening``): one date with it.
_PART: Final = r"(?:\s+(?:morning|afternoon|evening|night|lunchtime)\b)?"
_FEW: Final = r"(?:(?:about|around|roughly|approximately|maybe|like|just|only)\s+)?"
_AGO: Final = r"(?:\s+(?P<tail>ago|from\s+(?:now|today)))?\b"
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
                + _WD + r")\b(?!['\u2019]s)" + _PART, _I), _relative_weekday),
    (re.compile(r"\b(?P<wd>" + _WD + r")\b" + _PART, _I), _bare_weekday),
    # "Friday the 11th", "next Monday the 7th", "Friday 11th": one day, the number decides
    (re.compile(r"\b(?:(?P<rel>next|this|last|coming)\s+)?(?P<wd>" + _WD + r"),?\s+"
                r"(?:the\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?|(?P<nth>\d{1,2})(?:st|nd|rd|th))"
                r"\b(?![.:]\d)", _I), _weekday_and_day),
    (re.compile(r"\b(?P<wd>" + _WD + r")\s+(?P<rel>next|this|last)\s+week\b", _I),
     _weekday_of_week),
    (re.compile(r"\b(?P<wd>" + _WD + r")\s*(?:-|\u2013|\u2014|to|through|thru|till|until)\s*"
                r"(?P<wd2>" + _WD + r")\b", _I), _weekday_run),
    (re.compile(r"\bin\s+(?P<n>" + _NUM + r")\s+" + _UNIT + r"s?(?:['\u2019]?\s+time)?\b", _I),
     _in_offset),
    (re.compile(r"\bin\s+a\s+(?P<unit>fortnight)(?:['\u2019]?s\s+time)?\b", _I), _in_offset),
    (re.compile(r"\b(?P<n>" + _NUM + r")\s+" + _UNIT + r"s?\s+from\s+(?:now|today)\b", _I),
     _in_offset),
    (re.compile(r"\b(?P<n>" + _NUM + r")\s+" + _UNIT + r"s?\s+ago\b", _I), _ago),
    # approximate: "in a week or two", "in 2-3 days", "a day or two ago" as a range ...
    (re.compile(r"\b(?:(?P<in>in)\s+)?(?P<n>" + _NUM + r")\s*(?:or|to|-|\u2013)\s*(?P<m>"
                + _NUM + r")\s+" + _UNIT + r"s?(?:['\u2019]?\s+time)?" + _AGO, _I),
     _offset_range),
    (re.compile(r"\b(?:(?P<in>in)\s+)?(?P<n>an?|one)\s+" + _UNIT + r"\s+or\s+"
                r"(?P<m>two|three|[23])(?:\s+(?:day|week|month|year)s)?" + _AGO, _I),
     _offset_range),
    # ... "in a few days", "in a month or so", "a week or so ago" as said
    (re.compile(r"\bin\s+" + _FEW + r"(?:a\s+few|few|several|some|many)\s+(?:more\s+)?"
                r"(?:day|week|month|year)s?\b", _I), _kept),
    (re.compile(r"\b(?:in\s+" + _FEW + r")?(?:" + _NUM + r"|a\s+few|few|several)\s+"
                r"(?:day|week|month|year)s?\s+or\s+(?:so|more|less|longer)(?:\s+ago)?\b", _I),
     _kept),
    (re.compile(r"\b(?P<rel>the\s+coming|coming|this|next|last)\s+(?P<unit>weekend|week|month|"
                r"year)\b(?!['\u2019]s)", _I), _relative_unit),
    (re.compile(r"\b(?P<rel>this\s+past|this\s+coming|this|next|last)\s+(?P<season>spring|"
                r"summer|autumn|fall|winter)\b", _I), _relative_season),
    (re.compile(r"\bin\s+(?:the\s+)?(?P<season>spring|summer|autumn|fall|winter)\b"
                r"(?!\s+of\b)", _I), _bare_season),
    (re.compile(r"\b(?:(?P<wd>" + _WD + r"),?\s+)?(?P<month>" + _ANY_MONTH + r")\.?\s+"
                r"(?P<day>\d{1,2})(?P<suffix>st|nd|rd|th)?(?P<of>)(?![\d:%.,]\d)"
                r"(?:,?\s+(?P<year>\d{4}))?\b(?!\s*(?:am|pm|a\.m|p\.m|%|:\d))", _I), _calendar_day),
    (re.compile(r"\b(?:(?P<wd>" + _WD + r"),?\s+)?(?:the\s+)?(?P<day>\d{1,2})"
                r"(?P<suffix>st|nd|rd|th)?\s+(?P<of>of\s+)?(?P<month>" + _ANY_MONTH + r")\b"
                r"(?:\.?,?\s+(?P<year>\d{4})\b)?", _I), _calendar_day),
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

#: Quoted text, where no date is touched (a quote read at most this long: bounded cost).
_QUOTED: Final = re.compile(
    r"\"[^\"\n]*\"|\u201c[^\u201d\n]{0,500}\u201d|\u2018[^\u2019\n]{0,500}\u2019|"
    r"(?<!\w)'[^'\n]{1,200}'(?!\w)"
)


def resolve(text: str, now: datetime) -> Resolved:
    """``text`` with what its dates mean written after them, against ``now``, and what was
    found.

    ``now`` is the moment the text was said; its own zone decides which day ``today`` is
    (aware or naive, both are read as they stand). The returned ``when`` and ``valid_from``
    are midnight of their day in ``now``'s zone. Linear in the length of ``text``.
    """
    context = _Context(text, now.date())
    quoted = [found.span() for found in _QUOTED.finditer(text)]
    quote_starts = [first for first, _ in quoted]

    def in_quotes(match: re.Match[str]) -> bool:
        index = bisect.bisect_left(quote_starts, match.end()) - 1
        return index >= 0 and quoted[index][1] > match.start()

    found: list[_Found] = []
    for pattern, handler in _PATTERNS:
        for match in pattern.finditer(text):
            if quoted and in_quotes(match):
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
        parts.append(text[cursor:end])
        cursor = end
        if one.start is None or one.end is None:
            continue  # kept as written
        original = text[begin:end]
        written = f"{original} ({one.note})" if one.note else original
        if one.note:
            parts.append(f" ({one.note})")
        mentions.append(Mention(one.start, one.end, one.precision, one.past, original, written))
    parts.append(text[cursor:])
    zone = now.tzinfo

    def midnight(day: date) -> datetime:
        return datetime.combine(day, time(), tzinfo=zone)

    first = midnight(mentions[0].start) if mentions else None
    began = next((midnight(one.start) for one in mentions if one.past), None)
    return Resolved("".join(parts), tuple(mentions), first, began)
