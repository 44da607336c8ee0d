"""Relative dates are resolved against when they were said and written in ISO form.

``mainsdk_memory._dates.resolve`` is pure: each case gives the moment a sentence was said and
pins the text it becomes, the first date it names (``when``) and, for a date that points back,
``valid_from``. The module docstring is the table these cases follow: weeks run Monday to
Sunday, seasons are the northern meteorological ones, a yearless date is the next one (the
last one in a past-tense clause), a date inside quotes or a word that only looks like one
(``may``, ``Black Friday``, ``the 12th floor``) is left alone.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

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
        ("My exam is tomorrow.", "My exam is on 2026-12-02 (Wednesday)."),
        ("I called her yesterday.", "I called her on 2026-11-30 (Monday)."),
        ("I started today.", "I started on 2026-12-01 (Tuesday)."),
        ("I'm cooking tonight.", "I'm cooking on the evening of 2026-12-01 (Tuesday)."),
        ("We met last night.", "We met on the night of 2026-11-30 (Monday)."),
        ("It's due the day after tomorrow.", "It's due on 2026-12-03 (Thursday)."),
        ("I left the day before yesterday.", "I left on 2026-11-29 (Sunday)."),
        ("I ran this morning.", "I ran on the morning of 2026-12-01 (Tuesday)."),
        ("Call me tomorrow morning.", "Call me on the morning of 2026-12-02 (Wednesday)."),
        ("Tomorrow I fly.", "On 2026-12-02 (Wednesday) I fly."),
    ],
)
def test_days_around_today(sentence: str, expected: str) -> None:
    assert text(sentence) == expected


def test_tomorrow_rolls_into_the_next_year() -> None:
    assert text("The party is tomorrow.", NEW_YEARS_EVE) == "The party is on 2027-01-01 (Friday)."


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
    assert text("We leave next Monday.", NEW_YEARS_EVE) == "We leave on 2027-01-04 (Monday)."


def test_a_weekday_with_its_date_is_one_date() -> None:
    assert text("See you on Friday, March 5!") == "See you on 2027-03-05 (Friday)!"


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
        ("I moved last week.", TUESDAY, "I moved in the week of 2026-11-23."),
        ("I'm away next week.", TUESDAY, "I'm away in the week of 2026-12-07."),
        ("I'm away next week.", SUNDAY, "I'm away in the week of 2026-12-07."),
        ("I'm busy this week.", SUNDAY, "I'm busy in the week of 2026-11-30."),
        ("Camping next weekend!", TUESDAY, "Camping on the weekend of 2026-12-12!"),
        ("We start next week.", NEW_YEARS_EVE, "We start in the week of 2027-01-04."),
        ("I moved last month.", TUESDAY, "I moved in November 2026 (2026-11)."),
        ("I start next month.", TUESDAY, "I start in January 2027 (2027-01)."),
        ("I retire next year.", TUESDAY, "I retire in 2027."),
        ("I graduated last year.", TUESDAY, "I graduated in 2025."),
        ("Since last year I cycle.", TUESDAY, "Since 2025 I cycle."),
    ],
)
def test_weeks_months_and_years(sentence: str, now: datetime, expected: str) -> None:
    assert text(sentence, now) == expected


def test_last_month_in_january_is_last_december() -> None:
    january = datetime(2026, 1, 15, tzinfo=UTC)
    assert text("I moved last month.", january) == "I moved in December 2025 (2025-12)."


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I fly in 3 days.", "I fly on 2026-12-04 (Friday)."),
        ("I fly in two weeks' time.", "I fly on 2026-12-15 (Tuesday)."),
        ("I fly in a fortnight.", "I fly on 2026-12-15 (Tuesday)."),
        ("I moved in two months.", "I moved in two months."),  # a duration in the past tense
        ("We marry in six months.", "We marry in June 2027 (2027-06)."),
        ("I'll retire in 2 years.", "I'll retire in 2028."),
        ("I quit 3 days ago.", "I quit on 2026-11-28 (Saturday)."),
        ("I quit a couple of weeks ago.", "I quit on 2026-11-17 (Tuesday)."),
        ("I moved here 3 years ago.", "I moved here in 2023."),
        ("I moved a month ago.", "I moved in November 2026 (2026-11)."),
        ("It ends ten days from now.", "It ends on 2026-12-11 (Friday)."),
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
    assert text("My exam is on the 12th.") == "My exam is on 2026-12-12 (Saturday)."


@pytest.mark.parametrize(
    "sentence",
    ["I live on the 12th floor.", "It's the 5th time I ask.", "My 21st birthday was fun."],
)
def test_an_ordinal_before_a_noun_is_no_date(sentence: str) -> None:
    assert text(sentence) == sentence


@pytest.mark.parametrize(
    ("sentence", "now", "expected"),
    [
        ("I'm moving in June.", TUESDAY, "I'm moving in June 2027 (2027-06)."),
        ("I went vegetarian in June.", TUESDAY, "I went vegetarian in June 2026 (2026-06)."),
        ("We got married last June.", TUESDAY, "We got married in June 2026 (2026-06)."),
        ("We marry next June.", TUESDAY, "We marry in June 2027 (2027-06)."),
        ("I've been vegan since March.", TUESDAY,
         "I've been vegan since March 2026 (2026-03)."),
        ("It's due by March.", TUESDAY, "It's due by March 2027 (2027-03)."),
        # said in June, June is this month
        ("I'm moving in June.", datetime(2026, 6, 20, tzinfo=UTC),
         "I'm moving in June 2026 (2026-06)."),
        ("We moved here in August 2019.", TUESDAY,
         "We moved here in August 2019 (2019-08)."),
        ("I'm moving in may", TUESDAY, "I'm moving in May 2027 (2027-05)"),
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
         "In summer 2025 (2025-06 to 2025-08) we went to Iceland."),
        ("We went to Iceland last summer.", TUESDAY,
         "We went to Iceland in summer 2026 (2026-06 to 2026-08)."),
        ("We're going to Japan this winter.", END_OF_SUMMER,
         "We're going to Japan in winter 2026-27 (2026-12 to 2027-02)."),
        ("We're going next summer.", END_OF_SUMMER,
         "We're going in summer 2027 (2027-06 to 2027-08)."),
        ("We'll move in the spring.", TUESDAY,
         "We'll move in spring 2027 (2027-03 to 2027-05)."),
        # no tense, a habit: no one season
        ("In the summer I swim.", TUESDAY, "In the summer I swim."),
        ("We met last Christmas.", TUESDAY, "We met at Christmas (2025-12-25)."),
        ("We're visiting for Christmas.", TUESDAY, "We're visiting for Christmas (2026-12-25)."),
        ("Our Christmas party is fun.", TUESDAY, "Our Christmas party is fun."),
    ],
)
def test_seasons_and_holidays(sentence: str, now: datetime, expected: str) -> None:
    assert text(sentence, now) == expected


# -- recurring dates, quotes, prepositions ----------------------------------------------------


def test_a_recurring_date_keeps_its_words_and_gains_its_next_day() -> None:
    assert text("My birthday is on the 20th.") == (
        "My birthday is on December 20 (next: 2026-12-20)."
    )
    assert text("Our anniversary is March 3.") == (
        "Our anniversary is on March 3 (next: 2027-03-03)."
    )


@pytest.mark.parametrize(
    "sentence",
    ['He said "next Friday" twice.', "The song \u201cSee You Tomorrow\u201d is old."],
)
def test_dates_inside_quotes_are_left_alone(sentence: str) -> None:
    assert text(sentence) == sentence


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I'm away until next Friday.", "I'm away until 2026-12-11 (Friday)."),
        ("I'm free from tomorrow.", "I'm free from 2026-12-02 (Wednesday)."),
        ("Booked for Friday.", "Booked for 2026-12-04 (Friday)."),
        ("Since last week I run.", "Since the week of 2026-11-23 I run."),
    ],
)
def test_the_preposition_written_is_kept(sentence: str, expected: str) -> None:
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
    assert found.text == "I fly on 2026-12-02 (Wednesday)."
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
