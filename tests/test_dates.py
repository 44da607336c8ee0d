"""Relative dates are resolved against when they were said and written in ISO form.

``mainsdk_memory._dates.resolve`` is pure: each case gives the moment a sentence was said and
pins the text it becomes, the first date it names (``when``) and, for a date that points back,
``valid_from``. The module docstring is the table these cases follow: weeks run Monday to
Sunday, seasons are the northern meteorological ones, a yearless date is the next one (the
last one in a past-tense clause), the words stay as said with their date after them in
parentheses, a date inside quotes or a word that only looks like one (``may``, ``Black
Friday``, ``the Sunday Times``, ``Monday.com``, a cat ``called Friday``, ``the 12th floor``)
is left alone, a weekday with its day number is one date, an approximate span (``in a week
or two``) a range, a yearless birth date no date of this year; and the cost is linear in the
length of the text.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from mainsdk_memory import _dates
from mainsdk_memory._dates import is_past, resolve

TUESDAY = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # the brief's example day
SUNDAY = datetime(2026, 12, 6, 18, 0, tzinfo=UTC)
NEW_YEARS_EVE = datetime(2026, 12, 31, 9, 0, tzinfo=UTC)
END_OF_SUMMER = datetime(2026, 8, 29, 9, 0, tzinfo=UTC)  # a Saturday


def text(sentence: str, now: datetime = TUESDAY) -> str:
    return resolve(sentence, now).text


def day(sentence: str, now: datetime = TUESDAY) -> date | None:
    when = resolve(sentence, now).when
    return None if when is None else when.date()


# -- days next to today ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("My exam is tomorrow.", "My exam is tomorrow (2026-12-02, Wednesday)."),
        ("I called her yesterday.", "I called her yesterday (2026-11-30, Monday)."),
        ("I started today.", "I started today (2026-12-01, Tuesday)."),
        ("I'm cooking tonight.", "I'm cooking tonight (2026-12-01, Tuesday)."),
        ("We met last night.", "We met last night (2026-11-30, Monday)."),
        ("It's due the day after tomorrow.",
         "It's due the day after tomorrow (2026-12-03, Thursday)."),
        ("I left the day before yesterday.",
         "I left the day before yesterday (2026-11-29, Sunday)."),
        ("I ran this morning.", "I ran this morning (2026-12-01, Tuesday)."),
        ("Call me tomorrow morning.", "Call me tomorrow morning (2026-12-02, Wednesday)."),
        ("Tomorrow I fly.", "Tomorrow (2026-12-02, Wednesday) I fly."),
    ],
)
def test_days_around_today(sentence: str, expected: str) -> None:
    assert text(sentence) == expected


def test_tomorrow_rolls_into_the_next_year() -> None:
    assert text("The party is tomorrow.", NEW_YEARS_EVE) == (
        "The party is tomorrow (2027-01-01, Friday)."
    )


def test_possessive_day_words_stay_as_written() -> None:
    assert text("Today's meeting moved.") == "Today's meeting moved."


# -- weekdays ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "now", "expected"),
    [
        # next <weekday>: that weekday of next week (the brief's example)
        ("I'm flying to Lisbon next Friday.", TUESDAY, date(2026, 12, 11)),
        # said on a Sunday, next week starts tomorrow
        ("I start next Monday.", SUNDAY, date(2026, 12, 7)),
        ("I start next Friday.", SUNDAY, date(2026, 12, 11)),
        # last <weekday>: that weekday of the week before
        ("I moved last Friday.", TUESDAY, date(2026, 11, 27)),
        ("I moved last Saturday.", SUNDAY, date(2026, 11, 28)),
        # this <weekday>: the next one on or after today
        ("I'm off this Friday.", TUESDAY, date(2026, 12, 4)),
        ("I'm off this Tuesday.", TUESDAY, date(2026, 12, 1)),
        # a bare weekday: the next one after today, or the last one in a past-tense clause
        ("I'm flying on Friday.", TUESDAY, date(2026, 12, 4)),
        ("My interview is Tuesday.", TUESDAY, date(2026, 12, 8)),
        ("I saw her on Monday.", TUESDAY, date(2026, 11, 30)),
        ("I saw her on Tuesday.", TUESDAY, date(2026, 11, 24)),
        # coming / past
        ("The coming Sunday is free.", TUESDAY, date(2026, 12, 6)),
        ("The past Sunday was fun.", TUESDAY, date(2026, 11, 29)),
    ],
)
def test_weekdays(sentence: str, now: datetime, expected: date) -> None:
    assert day(sentence, now) == expected


def test_next_weekday_across_the_new_year() -> None:
    assert text("We leave next Monday.", NEW_YEARS_EVE) == "We leave next Monday (2027-01-04)."


def test_a_weekday_with_its_date_is_one_date() -> None:
    assert text("See you on Friday, March 5!") == "See you on Friday, March 5 (2027-03-05)!"


@pytest.mark.parametrize(
    "sentence",
    [
        "I work from home on Mondays and Fridays.",
        "I swim every Tuesday and Thursday.",
        "Black Friday deals are wild.",
        "I usually play tennis on Saturday.",
    ],
)
def test_habits_and_named_days_stay_as_written(sentence: str) -> None:
    assert text(sentence) == sentence
    assert resolve(sentence, TUESDAY).mentions == ()


# -- weeks, months, years ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "now", "expected"),
    [
        ("I moved last week.", TUESDAY, "I moved last week (2026-11-23 to 2026-11-29)."),
        ("I'm away next week.", TUESDAY, "I'm away next week (2026-12-07 to 2026-12-13)."),
        ("I'm away next week.", SUNDAY, "I'm away next week (2026-12-07 to 2026-12-13)."),
        ("I'm busy this week.", SUNDAY, "I'm busy this week (2026-11-30 to 2026-12-06)."),
        ("Camping next weekend!", TUESDAY, "Camping next weekend (2026-12-12 to 2026-12-13)!"),
        ("We start next week.", NEW_YEARS_EVE, "We start next week (2027-01-04 to 2027-01-10)."),
        ("I moved last month.", TUESDAY, "I moved last month (2026-11)."),
        ("I start next month.", TUESDAY, "I start next month (2027-01)."),
        ("I retire next year.", TUESDAY, "I retire next year (2027)."),
        ("I graduated last year.", TUESDAY, "I graduated last year (2025)."),
        ("Since last year I cycle.", TUESDAY, "Since last year (2025) I cycle."),
    ],
)
def test_weeks_months_and_years(sentence: str, now: datetime, expected: str) -> None:
    assert text(sentence, now) == expected


def test_last_month_in_january_is_last_december() -> None:
    january = datetime(2026, 1, 15, tzinfo=UTC)
    assert text("I moved last month.", january) == "I moved last month (2025-12)."


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I fly in 3 days.", "I fly in 3 days (2026-12-04, Friday)."),
        ("I fly in two weeks' time.", "I fly in two weeks' time (2026-12-15, Tuesday)."),
        ("I fly in a fortnight.", "I fly in a fortnight (2026-12-15, Tuesday)."),
        ("I moved in two months.", "I moved in two months."),  # a duration in the past tense
        ("We marry in six months.", "We marry in six months (2027-06)."),
        ("I'll retire in 2 years.", "I'll retire in 2 years (2028)."),
        ("I quit 3 days ago.", "I quit 3 days ago (2026-11-28, Saturday)."),
        ("I quit a couple of weeks ago.",
         "I quit a couple of weeks ago (2026-11-17, Tuesday)."),
        ("I moved here 3 years ago.", "I moved here 3 years ago (2023)."),
        ("I moved a month ago.", "I moved a month ago (2026-11)."),
        ("It ends ten days from now.", "It ends ten days from now (2026-12-11, Friday)."),
        ("I lost 5 kg in two weeks.", "I lost 5 kg in two weeks."),
    ],
)
def test_counted_offsets(sentence: str, expected: str) -> None:
    assert text(sentence) == expected


# -- days of the month, calendar dates, months ------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "now", "expected"),
    [
        ("My exam is on the 12th.", TUESDAY, date(2026, 12, 12)),
        ("My exam is on the 12th.", datetime(2026, 12, 28, tzinfo=UTC), date(2027, 1, 12)),
        ("It's due on the 1st.", TUESDAY, date(2027, 1, 1)),  # today would be "today"
        ("My birthday is on the 1st.", TUESDAY, date(2026, 12, 1)),  # but a recurring day is
        ("I paid on the 3rd.", TUESDAY, date(2026, 11, 3)),  # past tense: the last one
        # a month without the day: the next month that has it
        ("Rent is due on the 31st.", datetime(2026, 2, 5, tzinfo=UTC), date(2026, 3, 31)),
        ("I'll be there on the 5th of next month.", TUESDAY, date(2027, 1, 5)),
        ("I'm visiting Porto on January 3.", datetime(2026, 12, 28, tzinfo=UTC),
         date(2027, 1, 3)),
        ("The launch is on 3 March.", TUESDAY, date(2027, 3, 3)),
        ("The launch is on the 3rd of March.", TUESDAY, date(2027, 3, 3)),
        ("We met on March 3.", TUESDAY, date(2026, 3, 3)),
        ("We met on March 3, 2019.", TUESDAY, date(2019, 3, 3)),
        ("The launch is on December 1.", TUESDAY, date(2027, 12, 1)),
        ("We marry on 29 February.", TUESDAY, date(2028, 2, 29)),
    ],
)
def test_calendar_days(sentence: str, now: datetime, expected: date) -> None:
    assert day(sentence, now) == expected


def test_a_day_is_written_with_its_weekday() -> None:
    assert text("My exam is on the 12th.") == "My exam is on the 12th (2026-12-12, Saturday)."
    assert text("I fly next Saturday.") == "I fly next Saturday (2026-12-12)."


@pytest.mark.parametrize(
    "sentence",
    ["I live on the 12th floor.", "It's the 5th time I ask.", "My 21st birthday was fun."],
)
def test_an_ordinal_before_a_noun_is_no_date(sentence: str) -> None:
    assert text(sentence) == sentence


@pytest.mark.parametrize(
    ("sentence", "now", "expected"),
    [
        ("I'm moving in June.", TUESDAY, "I'm moving in June (2027-06)."),
        ("I went vegetarian in June.", TUESDAY, "I went vegetarian in June (2026-06)."),
        ("We got married last June.", TUESDAY, "We got married last June (2026-06)."),
        ("We marry next June.", TUESDAY, "We marry next June (2027-06)."),
        ("I've been vegan since March.", TUESDAY, "I've been vegan since March (2026-03)."),
        ("It's due by March.", TUESDAY, "It's due by March (2027-03)."),
        # said in June, June is this month
        ("I'm moving in June.", datetime(2026, 6, 20, tzinfo=UTC), "I'm moving in June (2026-06)."),
        ("We moved here in August 2019.", TUESDAY,
         "We moved here in August 2019 (2019-08)."),
        ("I'm moving in may", TUESDAY, "I'm moving in may (2027-05)"),
    ],
)
def test_months(sentence: str, now: datetime, expected: str) -> None:
    assert text(sentence, now) == expected


@pytest.mark.parametrize(
    "sentence",
    ["May I ask something?", "We may go.", "Troops march on.", "March is my favourite month."],
)
def test_month_words_that_are_no_date(sentence: str) -> None:
    assert text(sentence) == sentence


# -- seasons and holidays ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "now", "expected"),
    [
        # still in summer: last summer is the one before
        ("Last summer we went to Iceland.", END_OF_SUMMER,
         "Last summer (2025-06 to 2025-08) we went to Iceland."),
        ("We went to Iceland last summer.", TUESDAY,
         "We went to Iceland last summer (2026-06 to 2026-08)."),
        ("We're going to Japan this winter.", END_OF_SUMMER,
         "We're going to Japan this winter (2026-12 to 2027-02)."),
        ("We're going next summer.", END_OF_SUMMER,
         "We're going next summer (2027-06 to 2027-08)."),
        ("We'll move in the spring.", TUESDAY,
         "We'll move in the spring (2027-03 to 2027-05)."),
        # no tense, a habit: no one season
        ("In the summer I swim.", TUESDAY, "In the summer I swim."),
        ("We met last Christmas.", TUESDAY, "We met last Christmas (2025-12-25)."),
        ("We're visiting for Christmas.", TUESDAY, "We're visiting for Christmas (2026-12-25)."),
        ("Our Christmas party is fun.", TUESDAY, "Our Christmas party is fun."),
    ],
)
def test_seasons_and_holidays(sentence: str, now: datetime, expected: str) -> None:
    assert text(sentence, now) == expected


# -- recurring dates, quotes, prepositions ----------------------------------------------------


def test_a_recurring_date_keeps_its_words_and_gains_its_next_day() -> None:
    assert text("My birthday is on the 20th.") == "My birthday is on the 20th (next: 2026-12-20)."
    assert text("Our anniversary is March 3.") == "Our anniversary is March 3 (next: 2027-03-03)."
    anniversary = resolve("My anniversary is on June 5.", TUESDAY)
    assert anniversary.text == "My anniversary is on June 5 (next: 2027-06-05)."
    assert anniversary.valid_from is None  # no year of its own: nothing began then


@pytest.mark.parametrize(
    "sentence",
    ['He said "next Friday" twice.', "The song \u201cSee You Tomorrow\u201d is old."],
)
def test_dates_inside_quotes_are_left_alone(sentence: str) -> None:
    assert text(sentence) == sentence


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I'm away until next Friday.", "I'm away until next Friday (2026-12-11)."),
        ("I'm free from tomorrow.", "I'm free from tomorrow (2026-12-02, Wednesday)."),
        ("Booked for Friday.", "Booked for Friday (2026-12-04)."),
        ("Since last week I run.", "Since last week (2026-11-23 to 2026-11-29) I run."),
    ],
)
def test_the_words_around_a_date_are_kept(sentence: str, expected: str) -> None:
    assert text(sentence) == expected


def test_absolute_dates_are_reported_but_not_rewritten() -> None:
    found = resolve("Premium since 2024, renewed on 2026-06-12.", TUESDAY)
    assert found.text == "Premium since 2024, renewed on 2026-06-12."
    assert [m.start for m in found.mentions] == [date(2024, 1, 1), date(2026, 6, 12)]


# -- when and valid_from --------------------------------------------------------------------


def test_a_date_that_points_back_is_valid_from() -> None:
    moved = resolve("I moved to Munich last month.", TUESDAY)
    assert moved.valid_from == datetime(2026, 11, 1, tzinfo=UTC)
    since = resolve("I've been vegan since March.", TUESDAY)
    assert since.valid_from == datetime(2026, 3, 1, tzinfo=UTC)


def test_a_plan_has_a_date_but_no_valid_from() -> None:
    plan = resolve("I'm flying to Lisbon next Friday.", TUESDAY)
    assert plan.when == datetime(2026, 12, 11, tzinfo=UTC)
    assert plan.valid_from is None
    (mention,) = plan.mentions
    assert (mention.precision, mention.past, mention.original) == ("day", False, "next Friday")
    assert mention.written == "next Friday (2026-12-11)"


def test_periods_have_their_first_and_last_day() -> None:
    (week,) = resolve("I moved last week.", TUESDAY).mentions
    assert (week.start, week.end, week.precision) == (date(2026, 11, 23), date(2026, 11, 29),
                                                     "week")
    (winter,) = resolve("We ski this winter.", END_OF_SUMMER).mentions
    assert (winter.start, winter.end) == (date(2026, 12, 1), date(2027, 2, 28))


def test_no_date_no_when() -> None:
    found = resolve("I live in Lyon.", TUESDAY)
    assert (found.text, found.when, found.valid_from, found.mentions) == (
        "I live in Lyon.", None, None, ()
    )


def test_today_is_the_day_of_nows_own_zone() -> None:
    # 23:30 in New York is already the next day in UTC: "tomorrow" is New York's tomorrow
    new_york = timezone(timedelta(hours=-5))
    late = datetime(2026, 12, 1, 23, 30, tzinfo=new_york)
    found = resolve("I fly tomorrow.", late)
    assert found.text == "I fly tomorrow (2026-12-02, Wednesday)."
    assert found.when == datetime(2026, 12, 2, tzinfo=new_york)


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("I moved to Munich", True),
        ("Your order shipped", True),
        ("we got married", True),
        ("I'm flying to Lisbon", False),
        ("I will call", False),
        ("my exam is", None),
        ("I've got an exam", None),
        ("I need to renew my passport", None),
        ("I'm interested", None),
    ],
)
def test_tense(clause: str, expected: bool | None) -> None:
    assert is_past(clause) is expected


# -- what is no date, or one date, or a range (the review's corruptions) ------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "I work at the Sunday Times.",
        "I read the Sunday paper.",
        "I teach Sunday school.",
        "I watch Saturday Night Live.",
        "I work for Tuesday Morning.",
        "I work at Monday.com.",
        "My cat is called Friday.",
        "My cat's name is Friday.",
        "I love Good Friday.",
        "Easter Sunday is nice.",
        "I'm having a Monday meeting.",
    ],
)
def test_a_weekday_in_a_name_stays_as_written(sentence: str) -> None:
    found = resolve(sentence, TUESDAY)
    assert (found.text, found.mentions, found.when) == (sentence, (), None)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # the same words as a day are still one
        ("I'll read the paper on Sunday.", "I'll read the paper on Sunday (2026-12-06)."),
        ("I'm free Friday evening.", "I'm free Friday evening (2026-12-04)."),
        ("On Friday I fly.", "On Friday (2026-12-04) I fly."),
        ("I met Anna on Friday.", "I met Anna on Friday (2026-11-27)."),
        ("I'm flying to Lisbon Friday.", "I'm flying to Lisbon Friday (2026-12-04)."),
        ("I fly Friday next week.", "I fly Friday next week (2026-12-11)."),
    ],
)
def test_a_weekday_that_is_a_day_is_still_resolved(sentence: str, expected: str) -> None:
    assert text(sentence) == expected


@pytest.mark.parametrize(
    ("sentence", "expected", "day"),
    [
        ("I fly to Rome on Friday the 11th.", "I fly to Rome on Friday the 11th (2026-12-11).",
         date(2026, 12, 11)),
        ("I start my new job on Monday the 7th.",
         "I start my new job on Monday the 7th (2026-12-07).", date(2026, 12, 7)),
        ("I start on Monday the 7th.", "I start on Monday the 7th (2026-12-07).",
         date(2026, 12, 7)),
        ("I started on Monday the 23rd.", "I started on Monday the 23rd (2026-11-23).",
         date(2026, 11, 23)),
    ],
)
def test_a_weekday_with_its_day_number_is_one_date(sentence: str, expected: str,
                                                   day: date) -> None:
    found = resolve(sentence, TUESDAY)
    assert found.text == expected
    assert [m.start for m in found.mentions] == [day]


@pytest.mark.parametrize(
    "sentence",
    ["I fly on Tuesday the 7th.", "See you on Saturday, March 5!"],  # the 7th is a Monday ...
)
def test_a_weekday_that_disagrees_with_its_day_number_is_kept_as_said(sentence: str) -> None:
    found = resolve(sentence, TUESDAY)
    assert (found.text, found.mentions) == (sentence, ())


@pytest.mark.parametrize(
    "sentence",
    ["I was born on March 3rd.", "I was born on 3 March.", "My daughter was born in May.",
     "I was born on the 3rd."],
)
def test_a_yearless_birth_date_is_kept_as_said(sentence: str) -> None:
    found = resolve(sentence, TUESDAY)
    assert (found.text, found.mentions, found.when, found.valid_from) == (
        sentence, (), None, None
    )


def test_a_birth_date_with_its_year_or_a_recent_birth_is_resolved() -> None:
    dated = resolve("I was born on March 3, 1990.", TUESDAY)
    assert dated.text == "I was born on March 3, 1990 (1990-03-03, Saturday)."
    assert dated.valid_from == datetime(1990, 3, 3, tzinfo=UTC)
    recent = resolve("My son was born last week.", TUESDAY)
    assert recent.text == "My son was born last week (2026-11-23 to 2026-11-29)."


@pytest.mark.parametrize(
    ("sentence", "expected", "span"),
    [
        ("I'll be back in a week or two.",
         "I'll be back in a week or two (2026-12-08 to 2026-12-15).",
         (date(2026, 12, 8), date(2026, 12, 15))),
        ("I fly in 2-3 days.", "I fly in 2-3 days (2026-12-03 to 2026-12-04).",
         (date(2026, 12, 3), date(2026, 12, 4))),
        ("We marry in two or three months.",
         "We marry in two or three months (2027-02 to 2027-03).",
         (date(2027, 2, 1), date(2027, 3, 31))),
        ("I moved here a week or two ago.",
         "I moved here a week or two ago (2026-11-17 to 2026-11-24).",
         (date(2026, 11, 17), date(2026, 11, 24))),
        ("I'll be away Monday to Wednesday.",
         "I'll be away Monday to Wednesday (2026-12-07 to 2026-12-09).",
         (date(2026, 12, 7), date(2026, 12, 9))),
    ],
)
def test_an_approximate_span_is_a_range(sentence: str, expected: str,
                                        span: tuple[date, date]) -> None:
    found = resolve(sentence, TUESDAY)
    assert found.text == expected
    (mention,) = found.mentions
    assert (mention.start, mention.end) == span


def test_a_range_that_points_back_is_valid_from_its_first_day() -> None:
    found = resolve("I moved here a week or two ago.", TUESDAY)
    assert found.valid_from == datetime(2026, 11, 17, tzinfo=UTC)


@pytest.mark.parametrize(
    "sentence",
    [
        "I'm moving in a month or so.",
        "I'll be done in a few days.",
        "It takes 3 to 5 days.",  # a duration
        "I lost 3 kg in a week or two.",  # a duration in the past
        "I work Monday to Friday.",  # a schedule
        "I'll see you Friday week.",
    ],
)
def test_a_vague_span_or_a_duration_is_kept_as_said(sentence: str) -> None:
    assert resolve(sentence, TUESDAY).mentions == ()
    assert text(sentence) == sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "I'm flying to Lisbon next Friday for a conference.",
        "I moved to Munich last month and started at Siemens two weeks ago.",
        "My birthday is on the 20th.",
        "We went to Iceland last summer.",
        "I'm flying out tomorrow morning or Thursday.",
        "I'll be back in a week or two.",
        "See you on Friday, March 5!",
        "I was born on 3 March.",
    ],
)
def test_the_sentence_still_reads_as_said(sentence: str) -> None:
    found = resolve(sentence, TUESDAY)
    assert re.sub(r" \([^()]*\)", "", found.text) == sentence
    for mention in found.mentions:
        assert mention.written.startswith(mention.original + " (")
        assert mention.written in found.text


# -- cost -------------------------------------------------------------------------------------

#: Dates in one long clause: each date once re-read its clause from the start of the text
#: (quadratic: 469 s at 72,000 characters).
LONG_CLAUSE = "I moved on Monday " * 6000


def test_the_clause_read_around_a_date_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    clause = _dates._Context.clause

    def counted(self: _dates._Context, start: int, end: int) -> str:
        found = clause(self, start, end)
        read.append(len(found))
        return found

    monkeypatch.setattr(_dates._Context, "clause", counted)
    said = LONG_CLAUSE[:20_000]
    found = resolve(said, TUESDAY)
    assert len(found.mentions) == said.count("Monday")
    assert found.valid_from is not None  # still read as past: "moved"
    assert max(read) <= 2 * _dates._WINDOW + 1


def _best_cpu(runs: dict[str, Callable[[], object]], rounds: int = 3) -> dict[str, float]:
    """The least CPU time of a few runs of each, taken in turn (collector off)."""
    best = dict.fromkeys(runs, float("inf"))
    gc.disable()
    try:
        for _ in range(rounds):
            for name, run in runs.items():
                start = time.process_time()
                run()
                best[name] = min(best[name], time.process_time() - start)
    finally:
        gc.enable()
    return best


def test_resolving_costs_time_linear_in_the_text() -> None:
    small_text, large_text = LONG_CLAUSE[:6_000], LONG_CLAUSE[:24_000]
    cost = _best_cpu({"small": lambda: resolve(small_text, TUESDAY),
                      "large": lambda: resolve(large_text, TUESDAY)})
    # Four times the text: about four times the work; quadratic would be sixteen.
    assert cost["large"] < 6 * cost["small"] + 0.02, cost
