"""A held-out conversation set for ``learn``: durable facts labelled, chit-chat that forms none.

Provenance and purpose (issue 16, "Measure"): written for measurement only, by an evaluator
who had not read the default extractor (``mainsdk_memory/_extract.py``,
``mainsdk_memory/_dates.py``) nor its tuning set (``tools/learn_dev_set.py``), while those were
being written by someone else. Nothing is tuned on it: a rule, a pattern or a threshold fitted
to these conversations measures nothing, so when the extractor misses something here, the fix
is tested on the tuning set and this set is re-run only to report. Do not add cases to this set
to match a change in the extractor.

What is here: :data:`CONVERSATIONS`, each a dict with

- ``name``: unique, short;
- ``at``: when the conversation happened (timezone-aware, spread over 2025 and 2026, in several
  UTC offsets; times of day are chosen so the local date is also the UTC date);
- ``messages``: role/content dicts as the OpenAI API uses them (``user``, ``assistant``,
  ``tool``; a tool message also carries its ``tool_call_id``);
- ``facts``: the durable facts about the person, each
  ``{"turn": <index in messages>, "role": ..., "kind": "fact"|"preference"|"event",
  "must": (<strings>,)}``. A memory holds the fact when its text contains every ``must`` string
  (case-insensitive): the key noun or name, and for a relative date the date resolved from
  ``at`` in ISO form (``YYYY-MM-DD``; ``YYYY-MM`` where only the month is said, or for "last
  week", whose days all fall in one month here). The extractor is required to write resolved
  dates in ISO form in the memory's text. Dates said as a calendar date without a year ("the
  14th of June", "Mar 20") need only the key noun. Polarity ("no longer", "hate") is not
  checked where the key noun does not carry it.

Conversations with no facts are chit-chat only (greetings, thanks, small talk, questions,
requests, hypotheticals, one-off moods, world facts, what a friend thinks): nothing should be
learned from them. Conversations with facts also hold chit-chat turns, which are unlabelled:
a memory formed from one is a false positive. Facts are mostly stated by the person (role
``user``); a few are stated only by the assistant ("I've booked your table for Friday", role
``assistant``) or appear only in a tool's output (role ``tool``). A fact restated by the
assistant or echoed by a tool after the person said it is labelled once, on the person's turn.

Adjudicated once, after the first run of the rules extractor (2026-12-01): four durable facts
the labels had overlooked were added (the customer's name and membership date in a CRM tool
result, "I'm getting married!", "I'm off work until monday"); every miss was checked for a
label error and none was found; no label was removed or loosened, and no conversation was
changed, because of a result.

Every resolved date below is computed from ``at`` by the helpers at the top, which assert that
the phrase is unambiguous on that day ("next Friday" is only said on a day where the coming
Friday is also the Friday of next week, "on the 12th" only where the next 12th is clear, and
"last week" only where that week lies in one month).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

__all__ = ["CONVERSATIONS", "KINDS", "QUICK", "ROLES"]

KINDS = ("fact", "preference", "event")
ROLES = ("user", "assistant", "tool")

_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


# ------------------------------------------------------------------------------ dates


def _at(year: int, month: int, day: int, hour: int, minute: int = 0, offset: float = 0) -> datetime:
    """A timezone-aware time; ``offset`` in hours east of UTC."""
    moment = datetime(year, month, day, hour, minute,
                      tzinfo=timezone(timedelta(hours=offset)))
    assert moment.astimezone(UTC).date() == moment.date(), "local date != UTC date"
    return moment


def _iso(day: date) -> str:
    return day.isoformat()


def _days(at: datetime, n: int) -> str:
    """``n`` days from the conversation's date ("tomorrow": 1, "two weeks ago": -14)."""
    return _iso(at.date() + timedelta(days=n))


def _coming(at: datetime, weekday: str) -> date:
    target = _DAYS.index(weekday)
    ahead = (target - at.weekday()) % 7 or 7
    return at.date() + timedelta(days=ahead)


def _next(at: datetime, weekday: str) -> str:
    """"next Friday": only said when the coming Friday is in the next calendar week."""
    assert _DAYS.index(weekday) <= at.weekday(), f"'next {weekday}' is ambiguous on {at:%A}"
    return _iso(_coming(at, weekday))


def _this(at: datetime, weekday: str) -> str:
    """"this Friday", "on Friday", "Friday works": the coming one, later in the same week."""
    assert _DAYS.index(weekday) > at.weekday(), f"'this {weekday}' said on {at:%A}"
    return _iso(_coming(at, weekday))


def _last(at: datetime, weekday: str) -> str:
    """"last Sunday", "on Monday" (of something past): the most recent one before today."""
    assert _DAYS.index(weekday) != at.weekday(), f"'last {weekday}' said on a {weekday}"
    back = (at.weekday() - _DAYS.index(weekday)) % 7
    return _iso(at.date() - timedelta(days=back))


def _last_week(at: datetime) -> str:
    """"last week": the previous Monday-Sunday week, here always inside one month."""
    monday = at.date() - timedelta(days=at.weekday() + 7)
    sunday = monday + timedelta(days=6)
    assert monday.month == sunday.month, f"last week of {at:%F} spans two months"
    return f"{monday:%Y-%m}"


def _on_the(at: datetime, day: int, weekday: str | None = None) -> str:
    """"on the 12th": the next such day after today (this month or the next)."""
    assert day != at.day, "'on the Nth' said on the Nth"
    if day > at.day:
        found = at.date().replace(day=day)
    else:
        first = (at.date().replace(day=1) + timedelta(days=32)).replace(day=1)
        found = first.replace(day=day)
    if weekday is not None:
        assert found.weekday() == _DAYS.index(weekday), f"{found} is not a {weekday}"
    return _iso(found)


def _month(at: datetime, delta: int) -> str:
    """"next month" (1), "last month" (-1)."""
    index = at.year * 12 + at.month - 1 + delta
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _named_month(at: datetime, month: int, *, past: bool = False) -> str:
    """"in September": the next September (or, of something past, the last one)."""
    assert month != at.month, "the current month is ambiguous"
    if past:
        year = at.year if month < at.month else at.year - 1
    else:
        year = at.year if month > at.month else at.year + 1
    return f"{year:04d}-{month:02d}"


# ------------------------------------------------------------------------------ building


def _fact(*must: str) -> tuple[str, tuple[str, ...]]:
    return ("fact", must)


def _pref(*must: str) -> tuple[str, tuple[str, ...]]:
    return ("preference", must)


def _event(*must: str) -> tuple[str, tuple[str, ...]]:
    return ("event", must)


_Label = tuple[str, tuple[str, ...]]
_Turn = tuple[dict[str, str], tuple[_Label, ...]]


def _u(content: str, *facts: _Label) -> _Turn:
    return ({"role": "user", "content": content}, facts)


def _a(content: str, *facts: _Label) -> _Turn:
    return ({"role": "assistant", "content": content}, facts)


def _t(content: str, *facts: _Label, call: str = "call_1") -> _Turn:
    return ({"role": "tool", "tool_call_id": call, "content": content}, facts)


def _conversation(name: str, at: datetime, *turns: _Turn) -> dict[str, Any]:
    messages = [message for message, _ in turns]
    facts = [
        {"turn": index, "role": message["role"], "kind": kind, "must": must}
        for index, (message, labels) in enumerate(turns)
        for kind, must in labels
    ]
    return {"name": name, "at": at, "messages": messages, "facts": facts}


# ------------------------------------------------------------------------------ the set

_C: list[dict[str, Any]] = []

at = _at(2025, 1, 15, 12, 10, offset=1)
_C.append(_conversation(
    "dinner_booking_vegetarian", at,
    _u("hey! can you book me a table for 4 at Trattoria Lucia this Friday around 8? I'm "
       "vegetarian by the way so they need to have real options, not just a sad salad",
       _event("Trattoria Lucia", _this(at, "friday")), _pref("vegetarian")),
    _a("Sure, let me check Trattoria Lucia for Friday evening."),
    _t('{"restaurant": "Trattoria Lucia", "date": "2025-01-17", "time": "20:00", "party": 4, '
       '"status": "confirmed", "menu_notes": "vegetarian and vegan dishes marked"}'),
    _a("Done. I've booked a table for four at Trattoria Lucia on Friday at 20:00; their menu "
       "marks the vegetarian dishes."),
    _u("amazing. my wife Greta can't eat gluten (she's coeliac), could you add a note? and our "
       "son Jonas is coming too, he's 6, crayons would be nice lol",
       _fact("Greta", "gluten"), _fact("Jonas")),
    _a("Added a note: one guest needs a gluten-free meal, and a child is joining."),
    _u("thanks!! you're a lifesaver"),
))

at = _at(2025, 1, 29, 11, 40)
_C.append(_conversation(
    "new_job_commute", at,
    _u("Morning. Quick one: what's the fastest way from Clapham Junction to Canary Wharf at "
       "rush hour?"),
    _a("Usually the Overground to Canada Water and then the Jubilee line, about 35 minutes."),
    _u("ok. I started a new job there on Monday — I'm a risk analyst at Barclays now, so I'll "
       "be doing this trip every day. I live in Clapham, just off Northcote Road.",
       _event("job", _last(at, "monday")), _fact("risk analyst", "Barclays"),
       _fact("Clapham")),
    _a("Congratulations on the new job! For a daily trip, a monthly Travelcard for zones 1-2 "
       "is the cheapest option."),
    _u("thanks. i hate crowded trains tho, if there's a slower but quieter option i'd take it",
       _pref("crowded")),
    _a("The 344 bus takes about 50 minutes but is rarely packed before 8."),
    _u("Also please just give me short answers, I read these on my phone between meetings",
       _pref("short", "answer")),
))

at = _at(2025, 2, 6, 13, 0, offset=-5)
_C.append(_conversation(
    "allergy_pharmacy", at,
    _u("hi, I need to pick up a prescription later. what are pharmacy hours usually on a "
       "thursday?"),
    _a("Most chain pharmacies are open until 9pm on weekdays; some are open 24 hours."),
    _u("cool. fyi I'm allergic to penicillin, bad reaction as a kid, so if my doctor ever "
       "prescribes amoxicillin I need to flag it",
       _fact("allergic", "penicillin")),
    _a("Good to know: amoxicillin is a penicillin-type antibiotic, so do flag it."),
    _u("yeah. Also I have type 1 diabetes, diagnosed when I was 12. I've been on an insulin "
       "pump since 2019.",
       _fact("type 1 diabetes"), _fact("insulin pump")),
    _a("Thanks for telling me, I'll keep that in mind when we talk about medication."),
    _u("My endocrinologist appointment is in two weeks, can you remind me the day before?",
       _event("endocrinologist", _days(at, 14))),
    _a("Will do, I'll remind you the day before."),
    _u("ty"),
))

at = _at(2025, 2, 20, 10, 30, offset=1)
_C.append(_conversation(
    "chit_weather_amsterdam", at,
    _u("hello!"),
    _a("Hi! What can I do for you today?"),
    _u("what's the weather going to be like in Amsterdam this weekend?"),
    _a("Mostly cloudy, around 8°C, with some rain on Saturday afternoon."),
    _u("ugh typical. ok thanks, have a nice day"),
    _a("You too!"),
))

at = _at(2025, 3, 5, 11, 0, offset=1)
_C.append(_conversation(
    "moved_to_lyon", at,
    _u("So I finally did it, I moved to Lyon last month! Still unpacking boxes lol",
       _fact("Lyon")),
    _a("Congratulations! How are you finding Lyon so far?"),
    _u("Love it. The food is insane. I'm working remotely for the same company, still a UX "
       "designer at Doctolib, so nothing changed there",
       _fact("UX designer", "Doctolib")),
    _a("Nice, remote work makes a move much easier."),
    _u("Can you recommend a French course? My French is pretty basic, A2 maybe. I'm a native "
       "Portuguese speaker and fluent in English.",
       _fact("French", "basic"), _fact("Portuguese"), _fact("fluent", "English")),
    _a("The Alliance Française de Lyon has evening classes at every level, and the Université "
       "Lumière runs intensive courses in the summer."),
    _u("evenings work, I'm not a morning person at all",
       _pref("morning person")),
))

at = _at(2025, 3, 18, 14, 0)
_C.append(_conversation(
    "dog_ears_vet", at,
    _u("My dog Biscuit has been scratching his ears a lot, should I be worried?",
       _fact("dog", "Biscuit")),
    _a("Frequent ear scratching in dogs is often an ear infection or an allergy. Is there any "
       "smell or redness?"),
    _u("a bit of redness. He's a 4 year old beagle. we also have a cat, Pepper, but she's fine",
       _fact("beagle"), _fact("cat", "Pepper")),
    _a("Beagles have floppy ears that trap moisture, so infections are common. A vet visit is "
       "a good idea."),
    _u("ok I booked the vet for tomorrow at 9",
       _event("vet", _days(at, 1))),
    _a("Good call."),
    _u("what should I ask the vet?"),
    _a("Ask whether it's bacterial or yeast, how long to treat it, and how to clean his ears "
       "afterwards."),
))

at = _at(2025, 4, 3, 10, 15, offset=-8)
_C.append(_conversation(
    "support_address_change_crm", at,
    _u("Hi, I want to change the delivery address on my order"),
    _a("Of course. Let me pull up your account."),
    _t('{"customer": {"name": "Dana Whitfield", "member_since": "2019-06-02", '
       '"loyalty_tier": "Gold", "preferred_contact": "SMS", '
       '"default_address": "1420 Alder St, Portland, OR 97205"}, '
       '"open_orders": [{"id": "A-88213", "item": "standing desk", "status": "processing"}]}',
       _fact("Dana Whitfield"), _fact("2019-06-02"), _fact("Gold"), _pref("SMS"),
       _fact("Alder St"), _event("standing desk"),
       call="call_lookup"),
    _a("I see order A-88213 for a standing desk. What's the new address?"),
    _u("We just moved, new place is 77 Birch Lane, Beaverton. Please send it there. And yes "
       "text me, don't email, I never check email",
       _fact("Birch Lane"), _pref("email")),
    _a("Updated. The desk will go to 77 Birch Lane, Beaverton, and I'll send updates by SMS."),
    _u("great, thanks"),
))

at = _at(2025, 4, 24, 12, 0, offset=2)
_C.append(_conversation(
    "half_marathon_training", at,
    _u("I ran my first half marathon last Sunday!! 1:52, so happy",
       _event("half marathon", _last(at, "sunday"))),
    _a("Congratulations, 1:52 is a great first time!"),
    _u("thx. now I'm training for the Berlin Marathon in September. I run 4 times a week, "
       "mostly early mornings before work",
       _event("Berlin Marathon", _named_month(at, 9)), _fact("4 times")),
    _a("Exciting! A typical plan builds the long run by about 10% a week."),
    _u("any tips for a long run on the weekend? also I can't stand energy gels, they make me "
       "feel sick",
       _pref("gels")),
    _a("Try dates, bananas or salted boiled potatoes instead of gels."),
    _u("i'm lactose intolerant too so no milk-based recovery drinks pls",
       _fact("lactose")),
))

at = _at(2025, 5, 8, 11, 0)
_C.append(_conversation(
    "chit_poem_rain", at,
    _u("write me a short poem about rain on a tin roof"),
    _a("Tin roof drumming, soft and slow,\nthe sky lets all its secrets go."),
    _u("haha nice. now make it sadder"),
    _a("Tin roof weeping, cold and grey,\nthe rain remembers yesterday."),
    _u("if I were a poet I'd only ever write about weather tbh"),
    _a("Weather is a fine muse: it never runs out of moods."),
    _u("perfect, thank you!"),
))

at = _at(2025, 5, 22, 13, 30, offset=1)
_C.append(_conversation(
    "flight_to_lisbon_wedding", at,
    _u("I need a flight to Lisbon for the wedding of my best friend Inês, it's on the 14th of "
       "June",
       _event("wedding", "Inês")),
    _a("Happy to help. Any preferences for the flight?"),
    _u("Window seat always. And I only fly TAP or BA, I have oneworld Sapphire status",
       _pref("window"), _pref("TAP"), _fact("Sapphire")),
    _a("Searching flights from London to Lisbon around 12-15 June."),
    _t('[{"flight": "TP1351", "from": "LHR", "to": "LIS", "date": "2025-06-12", '
       '"dep": "07:40", "seats_left": 9}, {"flight": "BA500", "from": "LHR", "to": "LIS", '
       '"date": "2025-06-12", "dep": "10:15", "seats_left": 3}]',
       call="call_search"),
    _a("I've booked you on TAP flight TP1351 on Thursday 12 June, leaving Heathrow at 07:40, "
       "seat 14A by the window.",
       _event("TP1351")),
    _u("perfect. I'll need a hotel near Alfama too, I don't mind paying more for quiet",
       _pref("quiet")),
))

at = _at(2025, 6, 5, 12, 0, offset=-4)
_C.append(_conversation(
    "kindergarten_after_school", at,
    _u("Hey so my daughter Maya starts kindergarten in the fall and I'm freaking out a bit",
       _fact("daughter", "Maya"), _event("kindergarten")),
    _a("That's a big milestone! What's worrying you most?"),
    _u("she's our oldest, her little brother Theo is 2. My husband and I both work full time "
       "so we need after-school care",
       _fact("Theo"), _fact("full time")),
    _a("Many schools run their own after-school programs; there are also private centers."),
    _u("we're in Somerville, near Davis Square. what are the options around there?",
       _fact("Somerville")),
    _a("Around Davis Square there are the Somerville Public Schools program, the YMCA and a "
       "few private centers; here are eight of them with prices..."),
    _u("thanks, this is super helpful. I'm not great with long lists though, can you give me "
       "your top 3?",
       _pref("long lists")),
))

at = _at(2025, 6, 19, 10, 0, offset=9)
_C.append(_conversation(
    "chit_mount_fuji", at,
    _u("how tall is Mount Fuji?"),
    _a("3,776 metres."),
    _u("and when did it last erupt?"),
    _a("In 1707, the Hōei eruption."),
    _u("wow. I'm so sleepy today"),
    _a("Maybe a short walk and some water would help."),
    _u("lol thanks. bye"),
))

at = _at(2025, 7, 2, 11, 30, offset=2)
_C.append(_conversation(
    "quit_deloitte_freelance", at,
    _u("big news: i quit my job at Deloitte last week. going freelance as a data consultant "
       "from now on",
       _event("Deloitte", _last_week(at)), _fact("freelance")),
    _a("Congratulations on taking the leap! How can I help?"),
    _u("Can you help me draft a LinkedIn post about it? Keep it humble, I hate bragging posts",
       _pref("bragging")),
    _a("Here's a draft:\n\n\"Some personal news: I've left Deloitte and I'm now working as an "
       "independent data consultant. I'm grateful to everyone I worked with and excited for "
       "what's next. If your team needs help with data, let's talk! 🚀\""),
    _u("love it, but drop the emoji, I never use emojis in anything professional",
       _pref("emoji")),
    _a("Updated, without the emoji."),
    _u("great. my first client call is on the 10th, w/ a logistics company in Hamburg",
       _event("client", _on_the(at, 10))),
))

at = _at(2025, 7, 17, 12, 0, offset=-4)
_C.append(_conversation(
    "back_injury_gym", at,
    _u("i hurt my back deadlifting 2 days ago and it still hurts. what stretches are safe?",
       _event("back", _days(at, -2))),
    _a("Sorry to hear that. Gentle knee-to-chest stretches and walking usually help; avoid "
       "loaded bending for now."),
    _u("I've had a herniated disc before, L5-S1, back in 2021",
       _fact("herniated disc")),
    _a("Then it's worth seeing a physiotherapist before you lift again."),
    _u("I normally go to the gym on Mondays, Wednesdays and Fridays. should I skip tomorrow?",
       _fact("gym", "Wednesday")),
    _a("Yes, rest tomorrow and see how it feels over the weekend."),
    _u("ok. also i prefer metric units please, i'm in Canada lol",
       _pref("metric"), _fact("Canada")),
))

at = _at(2025, 8, 6, 13, 0, offset=2)
_C.append(_conversation(
    "chit_fridge_pasta", at,
    _u("what's a quick pasta I can make with what's in the fridge: zucchini, lemon, parmesan"),
    _a("Zucchini-lemon spaghetti: grate the zucchini, sauté it in olive oil with garlic, toss "
       "with pasta, lemon zest and parmesan."),
    _u("do I need to salt the water a lot?"),
    _a("About 10 g of salt per litre."),
    _u("cool cool. making it now, I'm starving"),
    _a("Enjoy!"),
    _u("thank you!!"),
))

at = _at(2025, 8, 21, 11, 0, offset=5.5)
_C.append(_conversation(
    "japanese_practice", at,
    _u("Namaste! I want to practise my Japanese. I've been learning for about a year, I passed "
       "JLPT N4 in December.",
       _fact("Japanese"), _fact("N4")),
    _a("すごいですね! Let's practise. Tell me about your weekend in Japanese."),
    _u("Please correct my mistakes but explain in English, not Japanese, I get lost otherwise.",
       _pref("English")),
    _a("Of course. Go ahead!"),
    _u("My mother tongue is Tamil, and I speak Hindi and English at work. I'm a software "
       "engineer at Infosys in Bengaluru.",
       _fact("Tamil"), _fact("Hindi"), _fact("software engineer", "Infosys")),
    _a("That's a lot of languages! Japanese will feel easier with that background."),
    _u("I'm going to Osaka in November for two weeks!! first time in Japan",
       _event("Osaka", _named_month(at, 11))),
))

at = _at(2025, 9, 4, 12, 30, offset=-7)
_C.append(_conversation(
    "anniversary_dinner_booked", at,
    _u("can you book somewhere nice for dinner? we love Italian, ideally in the Mission where "
       "we live",
       _pref("Italian"), _fact("Mission")),
    _a("How about Flour + Water, on Friday evening?"),
    _u("friday works. 7:30. it's our 10th anniversary so maybe mention it",
       _fact("10th anniversary")),
    _t('{"reservation": {"venue": "Flour + Water", "date": "2025-09-05", "time": "19:30", '
       '"covers": 2, "note": "10th anniversary", "confirmation": "FW-4471"}}',
       call="call_reserve"),
    _a("I've booked your table at Flour + Water for Friday at 7:30pm, and noted that it's "
       "your 10th anniversary.",
       _event("Flour", _this(at, "friday"))),
    _u("you're the best. my husband Sam is allergic to shellfish, can you let them know",
       _fact("Sam", "shellfish")),
    _a("Done, I've added a note about the shellfish allergy."),
    _u("👍"),
))

at = _at(2025, 9, 18, 14, 0)
_C.append(_conversation(
    "chit_small_talk", at,
    _u("hiii"),
    _a("Hey! How's it going?"),
    _u("meh, mondays amirite. oh wait it's thursday lol"),
    _a("Ha, one of those weeks?"),
    _u("yeah. anyway do you think AI will take over the world"),
    _a("Unlikely: today's systems are tools that people choose how to use."),
    _u("haha ok. what's 17% of 240?"),
    _a("40.8"),
    _u("thanks, ttyl"),
))

at = _at(2025, 10, 2, 11, 0, offset=2)
_C.append(_conversation(
    "migraine_neurologist", at,
    _u("I get migraines a few times a month, usually with aura. Is it ok to take ibuprofen "
       "with sumatriptan?",
       _fact("migraine")),
    _a("They're often taken together, but check with your doctor or pharmacist first."),
    _u("My neurologist is Dr. Okafor at the Charité, I see her every 3 months",
       _fact("Okafor")),
    _a("Good, she can confirm the combination."),
    _u("next appointment is on Monday the 13th",
       _event("appointment", _on_the(at, 13, "monday"))),
    _a("Write down how often the migraines come until then."),
    _u("also, I stopped drinking coffee completely in August, it was a trigger",
       _fact("coffee")),
    _a("Caffeine is a common trigger, so that may well help."),
    _u("thanks, that's reassuring"),
))

at = _at(2025, 10, 16, 10, 0, offset=-5)
_C.append(_conversation(
    "calendar_next_week_tool", at,
    _u("what's on my calendar next week?"),
    _a("Checking your calendar."),
    _t("Calendar, 2025-10-20 to 2025-10-26:\n"
       "- Mon 2025-10-20 09:00 Dentist (Dr. Patel)\n"
       "- Wed 2025-10-22 18:30 Parent-teacher conference, Lincoln Elementary\n"
       "- Sat 2025-10-25 all day: Chloe's birthday party",
       _event("Dentist", "2025-10-20"), _event("parent-teacher", "2025-10-22"),
       _event("Chloe", "2025-10-25"), call="call_calendar"),
    _a("Next week you have the dentist on Monday at 9, a parent-teacher conference on "
       "Wednesday evening, and Chloe's birthday party on Saturday."),
    _u("oh god I forgot about the party. Chloe's turning 7, what do 7 year olds like?",
       _fact("Chloe", "7")),
    _a("Crafts, simple science kits, and anything with their favourite characters."),
    _u("she's obsessed with dinosaurs rn",
       _fact("dinosaur")),
    _a("Then a dig-your-own fossil kit would be a hit."),
))

at = _at(2025, 11, 6, 12, 0)
_C.append(_conversation(
    "chit_hypotheticals", at,
    _u("hypothetically, if I moved to Norway, would I need to learn Norwegian to get a job?"),
    _a("In tech and research English is often enough, but most other jobs expect Norwegian."),
    _u("and if I had a million dollars, would it be smarter to buy a flat in Oslo or invest it?"),
    _a("That depends on your horizon and risk tolerance; a diversified index fund is the usual "
       "default advice."),
    _u("interesting. my friend says index funds are always better, is that true?"),
    _a("Not always, but over long periods they beat most actively managed funds."),
    _u("ok cool, thanks for the chat"),
))

at = _at(2025, 11, 17, 11, 0)
_C.append(_conversation(
    "boiler_drumcondra", at,
    _u("We bought a house in Dublin last year, a 1930s semi in Drumcondra, and now the boiler's "
       "dying",
       _fact("Drumcondra")),
    _a("Sorry to hear that. Are you thinking of replacing it like for like or a heat pump?"),
    _u("not sure yet. the installer is coming tomorrow morning for a quote",
       _event("installer", _days(at, 1))),
    _a("Ask about SEAI grants: a heat pump can get a large one."),
    _u("i work from home 3 days a week so a noisy heat pump outside my office window would "
       "drive me mad",
       _fact("from home")),
    _a("Modern units are quieter than they used to be, but placement matters."),
    _u("also my partner Aoife is pregnant, due in March, so we want it done before the baby "
       "comes",
       _fact("Aoife", "pregnant"), _event("due", _named_month(at, 3))),
))

at = _at(2025, 12, 4, 15, 0, offset=1)
_C.append(_conversation(
    "contact_preferences_teacher", at,
    _u("Please stop calling me during the day. I'm a teacher, I can't pick up between 8 and 3",
       _pref("call", "day"), _fact("teacher")),
    _a("Understood. What's the best way to reach you?"),
    _u("WhatsApp is best. or email after 4pm. never voicemail, i don't listen to them",
       _pref("WhatsApp"), _pref("voicemail")),
    _a("Noted: WhatsApp first, email after 4pm, no voicemails."),
    _u("and can you reply in Spanish from now on? my English is fine but Spanish is easier for "
       "me",
       _pref("Spanish")),
    _a("¡Claro! A partir de ahora te escribiré en español."),
    _u("gracias 🙏"),
))

at = _at(2025, 12, 18, 10, 0, offset=-8)
_C.append(_conversation(
    "chit_wifi_trouble", at,
    _u("my laptop won't connect to wifi, any ideas?"),
    _a("Try forgetting the network and reconnecting, and make sure airplane mode is off."),
    _u("tried that. still nothing"),
    _a("Then restart the router: unplug it for 30 seconds."),
    _u("ok restarting the router fixed it, thank you!!"),
    _a("Great!"),
))

at = _at(2026, 1, 8, 13, 0, offset=-6)
_C.append(_conversation(
    "new_year_ramble", at,
    _u("ok so this is going to be a long one sorry. I've been thinking about new year stuff "
       "and honestly 2025 was rough, the layoffs at work were a mess but I kept my job (I'm "
       "still a QA lead at Grubhub, 6 years now), and my mom moved in with us in October after "
       "her fall, which has been a lot but also kind of nice? anyway what I wanted to ask is "
       "how do people actually stick to resolutions, because every year I say I'll read more "
       "and every year I don't",
       _fact("QA lead", "Grubhub"), _event("mom", _named_month(at, 10, past=True))),
    _a("That sounds like a lot. Small, specific habits work best: ten pages a night, or an "
       "audiobook on a commute."),
    _u("i like the idea of audiobooks actually, I have a 45 min drive each way to the office in "
       "Naperville",
       _fact("Naperville")),
    _a("That's seven and a half hours a week: a book every week or two."),
    _u("I'm into sci-fi mostly, loved Project Hail Mary. Hate anything with romance tbh",
       _pref("sci-fi"), _pref("romance")),
    _a("You might like The Expanse series, or Children of Time."),
))

at = _at(2026, 1, 25, 11, 0, offset=1)
_C.append(_conversation(
    "piano_recital_correction", at,
    _u("my son Felix has his piano recital next Saturday, can you help me find a nice gift for "
       "him? he's 9",
       _fact("Felix"), _event("recital", _next(at, "saturday"))),
    _a("Of course! What is he into?"),
    _u("sorry, correction, the recital is on Saturday the 7th, not next week, they moved it",
       _event("recital", _on_the(at, 7, "saturday"))),
    _a("Got it, Saturday 7 February."),
    _u("he loves Minecraft and Lego, anything like that",
       _fact("Minecraft")),
    _a("A Minecraft Lego set would combine both."),
    _u("my budget is like 40 euros"),
    _a("There are several sets under 40 euros."),
))

at = _at(2026, 2, 5, 10, 0)
_C.append(_conversation(
    "chit_thanks_sydney_time", at,
    _u("thanks for yesterday's help!"),
    _a("Anytime!"),
    _u("you're great"),
    _a("Thank you, that's kind."),
    _u("what time is it in Sydney right now?"),
    _a("It's 9pm in Sydney."),
    _u("cool, night!"),
))

at = _at(2026, 2, 19, 12, 0, offset=1)
_C.append(_conversation(
    "no_longer_vegan", at,
    _u("Update on me: I'm no longer vegan, I started eating fish again in January. Doctor's "
       "orders, my B12 was super low",
       _pref("fish"), _fact("B12")),
    _a("That makes sense. How are you feeling?"),
    _u("better. but still no meat or dairy. and I really don't like salmon, the texture is "
       "gross",
       _pref("meat", "dairy"), _pref("salmon")),
    _a("Noted."),
    _u("can you plan me a week of dinners? I cook for two, me and my girlfriend Lena",
       _fact("Lena")),
    _a("Monday: miso-glazed cod with rice. Tuesday: chickpea curry. Wednesday: tuna niçoise. "
       "Thursday: lentil bolognese. Friday: fish tacos. Saturday: mushroom risotto with olive "
       "oil. Sunday: baked sea bream with potatoes."),
    _u("looks good. oh and I can't have anything too spicy, I have IBS",
       _fact("IBS"), _pref("spicy")),
))

at = _at(2026, 3, 5, 11, 0, offset=-5)
_C.append(_conversation(
    "unread_emails_tool", at,
    _u("summarize my unread emails"),
    _a("Fetching them."),
    _t("3 unread:\n"
       "1. From: United Airlines. Subject: Your trip to Denver on Mar 20, confirmation KX7P2Q.\n"
       "2. From: Dr. Lee's office. Subject: Reminder: annual physical on 2026-03-12 at 10:30.\n"
       "3. From: Lakeside Gym. Subject: Your membership renews on 2026-04-01.",
       _event("Denver"), _event("physical", "2026-03-12"), _fact("Lakeside"),
       call="call_mail"),
    _a("You have a United trip to Denver on March 20, your annual physical on the 12th, and "
       "your Lakeside Gym membership renews on April 1."),
    _u("ugh cancel the gym, I haven't gone since the fall. I'm doing climbing now at Brooklyn "
       "Boulders",
       _fact("Brooklyn Boulders")),
    _a("I can't cancel it for you, but here's their cancellation page and what to write."),
))

at = _at(2026, 3, 19, 12, 0)
_C.append(_conversation(
    "engaged_wedding_cornwall", at,
    _u("I'm getting married!!! Tom proposed last weekend 💍",
       _fact("married"), _event("Tom", _month(at, 0))),
    _a("Congratulations!! How did he do it?"),
    _u("on the beach, very cheesy, i loved it. we're thinking of a small wedding next summer, "
       "maybe in Cornwall where my family's from",
       _event("wedding", "Cornwall")),
    _a("Cornwall is beautiful for a small wedding."),
    _u("budget is tight, we're both nurses lol. I work nights at the Royal Free",
       _fact("nights", "Royal Free")),
    _a("There are lovely low-cost venues: village halls, a beach ceremony with a pub after."),
    _u("and pls don't send me those long checklists, I get overwhelmed, one step at a time",
       _pref("checklist")),
))

at = _at(2026, 4, 9, 14, 0, offset=2)
_C.append(_conversation(
    "chit_jokes_vaccines", at,
    _u("tell me a joke about cats"),
    _a("Why did the cat sit on the computer? To keep an eye on the mouse."),
    _u("lol. another one"),
    _a("What do you call a pile of kittens? A meowtain."),
    _u("can you explain how vaccines work in simple terms?"),
    _a("A vaccine shows your immune system a harmless piece or copy of a germ, so it learns to "
       "recognise and fight the real one later."),
    _u("thanks, that makes sense"),
))

at = _at(2026, 4, 23, 11, 0, offset=10)
_C.append(_conversation(
    "tesla_ev_owner", at,
    _u("G'day. I just bought a Tesla Model 3, picking it up on Saturday. Any tips for a "
       "first-time EV owner?",
       _fact("Model 3"), _event("pick", _this(at, "saturday"))),
    _a("Congrats! Set a charge limit of about 80% for daily driving."),
    _u("we have solar panels on the roof already so charging at home should be cheap",
       _fact("solar")),
    _a("Then charge during the day when the panels produce the most."),
    _u("i do long drives to my parents' farm near Dubbo every month or so, about 400km",
       _fact("Dubbo")),
    _a("A Model 3 can do that with one short charging stop."),
    _u("and i'm colourblind (red-green) so if the app uses colours only i'm stuffed haha",
       _fact("colourblind")),
    _a("The app also shows text labels and percentages."),
))

at = _at(2026, 5, 5, 12, 0, offset=-3)
_C.append(_conversation(
    "anxiety_therapist", at,
    _u("Oi! I've been struggling with anxiety lately, mostly at work. I'm a project manager at "
       "Nubank.",
       _fact("anxiety"), _fact("project manager", "Nubank")),
    _a("I'm sorry to hear that. Would you like some techniques that help in the moment?"),
    _u("I don't want breathing exercises, I've tried them and they don't work for me",
       _pref("breathing exercises")),
    _a("Fair enough. Some people find writing down worries helps."),
    _u("i started seeing a therapist two weeks ago, every tuesday",
       _event("therapist", _days(at, -14)), _fact("therapist", "tuesday")),
    _a("That's a great step."),
    _u("Also please call me Bia, nobody calls me Beatriz except my mother",
       _pref("Bia")),
))

at = _at(2026, 5, 21, 10, 0)
_C.append(_conversation(
    "chit_goldfish_canberra", at,
    _u("is it true that goldfish have a 3 second memory?"),
    _a("No, goldfish can remember things for months."),
    _u("my coworker swears it's true lol. also what's the capital of Australia, we argued "
       "about it"),
    _a("Canberra."),
    _u("ha I knew it. ok thx"),
))

at = _at(2026, 6, 4, 13, 0, offset=2)
_C.append(_conversation(
    "running_shoes_order", at,
    _u("I need new running shoes, same as last time"),
    _a("Let me look at your order history."),
    _t('{"orders": [{"date": "2025-11-02", "item": "Brooks Ghost 16, men\'s US 11, wide"}, '
       '{"date": "2025-06-14", "item": "Brooks Ghost 15, men\'s US 11, wide"}]}',
       _fact("US 11"), call="call_orders"),
    _a("You've bought the Brooks Ghost in men's US 11 wide twice. The Ghost 17 is out, so I've "
       "ordered a pair in your size, arriving Monday.",
       _event("Ghost 17", _coming(at, "monday").isoformat())),
    _u("perfect. and I'm training for an ultra in October, so durability matters",
       _event("ultra", _named_month(at, 10))),
    _a("The Ghost is known to last 500-700 km."),
    _u("ty"),
))

at = _at(2026, 6, 18, 11, 0, offset=-7)
_C.append(_conversation(
    "resume_barista_ux", at,
    _u("yo can u help me wiht my resume. im a barista rn but i want to get into ux",
       _fact("barista"), _fact("into ux")),
    _a("Sure! Lead with transferable skills: customer empathy, working under pressure."),
    _u("i finshed a google ux certificate last month lol",
       _event("certificate", _month(at, -1))),
    _a("Put that at the top, with a link to your portfolio."),
    _u("also im dyslexic so pls keep it simple and no walls of text",
       _fact("dyslexic"), _pref("walls of text")),
    _a("Got it. Short bullets from now on."),
    _u("my interview at figma is on the 29th!!! so nervous",
       _event("figma", _on_the(at, 29))),
))

at = _at(2026, 7, 9, 12, 0, offset=1)
_C.append(_conversation(
    "chit_grumpy_podcast", at,
    _u("ugh today is the worst"),
    _a("Oh no, what happened?"),
    _u("nothing really, just tired and grumpy. it's so hot"),
    _a("Heat makes everything harder. Drink some water."),
    _u("can you suggest a podcast for the train?"),
    _a("Try \"99% Invisible\": short episodes about design."),
    _u("sounds good, thanks"),
))

at = _at(2026, 7, 23, 11, 0, offset=-4)
_C.append(_conversation(
    "caregiver_dad", at,
    _u("My dad has early-stage Alzheimer's and I'm his main caregiver. He lives with me in "
       "Raleigh.",
       _fact("Alzheimer"), _fact("Raleigh")),
    _a("That's a lot to carry. How are you holding up?"),
    _u("I'm an only child so it's all on me. I work part-time as a bookkeeper now",
       _fact("only child"), _fact("bookkeeper")),
    _a("Local caregiver support groups can help, and respite care exists for breaks."),
    _u("his neurologist appointment is next Tuesday, the 28th",
       _event("neurologist", _on_the(at, 28, "tuesday"))),
    _a("Bring a list of changes you've noticed since the last visit."),
    _u("I'd rather get practical advice than sympathy, honestly",
       _pref("practical")),
))

at = _at(2026, 8, 13, 12, 0, offset=2)
_C.append(_conversation(
    "cat_died_rescue_dog", at,
    _u("Sad news, our cat Luna died last week. She was 17.",
       _event("Luna", _last_week(at))),
    _a("I'm so sorry. Seventeen years is a long, loved life."),
    _u("we're thinking of adopting a rescue dog in a couple of months, once we're ready. we "
       "have a big garden",
       _event("rescue"), _fact("garden")),
    _a("A garden is great for a dog. Shelters can match you with a calm adult dog."),
    _u("I'm allergic to some dogs though, poodles are fine",
       _fact("allergic", "dog")),
    _a("Poodles and poodle crosses shed less, so that's a good place to start."),
    _u("thanks for listening. oh, I'm off work until monday anyway",
       _event("off work", _coming(at, "monday").isoformat())),
))

at = _at(2026, 8, 22, 10, 30, offset=5.5)
_C.append(_conversation(
    "reminders_bank_birthday", at,
    _u("remind me to call the bank tomorrow",
       _event("bank", _days(at, 1))),
    _a("Reminder set: call the bank tomorrow morning."),
    _u("and my sister Priya's birthday is on the 2nd of next month, don't let me forget",
       _event("Priya", _on_the(at, 2))),
    _a("I've added Priya's birthday with a reminder the day before."),
    _u("she loves orchids, I always get her one",
       _fact("orchid")),
    _a("Lovely tradition!"),
    _u("ok that's all, thanks!"),
))

at = _at(2026, 9, 3, 12, 0, offset=-3)
_C.append(_conversation(
    "river_fan_madrid", at,
    _u("who won the River game last night?"),
    _a("River beat Boca 2-1."),
    _u("YESSS. I'm a River fan since I was born, my grandpa took me to the Monumental every "
       "week",
       _pref("River", "fan")),
    _a("A superclásico win is the best kind."),
    _u("can you send me the scores every monday morning? just the River ones, I don't care "
       "about other teams",
       _pref("score", "monday")),
    _a("Sure, every Monday morning."),
    _u("also I'm moving to Madrid in January, I got a job at Mercado Libre's office there, so "
       "I'll need the times in Spain time",
       _event("Madrid", _named_month(at, 1)), _fact("Mercado Libre")),
))

at = _at(2026, 9, 17, 11, 0, offset=9)
_C.append(_conversation(
    "chit_korean_phrases", at,
    _u("translate 'where is the train station' to Korean"),
    _a("기차역이 어디예요? (gichayeogi eodiyeyo?)"),
    _u("and how do you say thank you"),
    _a("감사합니다 (gamsahamnida)."),
    _u("thx, how many won is 50 dollars"),
    _a("About 69,000 won at today's rate."),
    _u("ok great"),
))

at = _at(2026, 10, 8, 12, 0)
_C.append(_conversation(
    "onboarding_intro", at,
    _a("Hi! I'm your new assistant. Tell me a bit about yourself so I can help better."),
    _u("Sure. I'm Karim, 41, I live in Marseille with my wife and our twins (Nour and Adam, "
       "8). I'm a civil engineer, mostly bridges. I speak French and Arabic, my English is ok. "
       "I don't drink alcohol. I prefer voice messages to long texts. I'm a big chess fan, I "
       "play online most evenings.",
       _fact("Karim"), _fact("Marseille"), _fact("Nour", "Adam"), _fact("civil engineer"),
       _fact("Arabic"), _pref("alcohol"), _pref("voice messages"), _pref("chess")),
    _a("Thanks Karim! Nice to meet you."),
    _u("oh and we're going to Tunisia on the 20th to see my parents",
       _event("Tunisia", _on_the(at, 20))),
    _a("Have a great trip!"),
))

at = _at(2026, 10, 22, 14, 0, offset=-7)
_C.append(_conversation(
    "one_on_one_scheduling", at,
    _u("Can you schedule a 1:1 with my manager Rachel for next Monday at 10?",
       _event("Rachel", _next(at, "monday")), _fact("manager", "Rachel")),
    _a("Sure, checking Rachel's calendar."),
    _t('{"event_created": true, "title": "1:1 Rachel / Omar", '
       '"start": "2026-10-26T10:00:00-07:00", "location": "Zoom"}',
       call="call_schedule"),
    _a("Booked: a 1:1 with Rachel on Monday at 10:00, on Zoom."),
    _u("thanks. going forward never schedule anything before 9:30, I drop my kids at school",
       _pref("9:30"), _fact("kids", "school")),
    _a("Got it."),
    _u("and I'm out of office from the 2nd to the 6th, family trip to Yosemite",
       _event("Yosemite", _on_the(at, 2))),
))

at = _at(2026, 11, 5, 12, 0, offset=1)
_C.append(_conversation(
    "book_club_host", at,
    _u("I host a book club at my place every first Thursday of the month, today actually!",
       _fact("book club")),
    _a("Fun! What are you reading?"),
    _u("we're reading Klara and the Sun. I didn't love it, honestly I'm more into non-fiction, "
       "history especially",
       _pref("non-fiction")),
    _a("Ishiguro divides people. Non-fiction picks can spark great discussions too."),
    _u("next month we're doing Sapiens, my pick",
       _event("Sapiens", _month(at, 1))),
    _a("Good choice for debate."),
    _u("can you give me 5 discussion questions for tonight?"),
    _a("1. Is Klara's love real? 2. ..."),
))

del at

CONVERSATIONS: tuple[dict[str, Any], ...] = tuple(_C)
"""The set: see the module docstring."""

#: The conversations ``--quick`` runs: the person, the assistant and a tool, and chit-chat.
QUICK = ("dinner_booking_vegetarian", "support_address_change_crm", "chit_weather_amsterdam")


def _check() -> None:
    names = [conversation["name"] for conversation in CONVERSATIONS]
    assert len(set(names)) == len(names), "conversation names repeat"
    assert set(QUICK) <= set(names)
    for conversation in CONVERSATIONS:
        assert conversation["at"].tzinfo is not None
        for fact in conversation["facts"]:
            message = conversation["messages"][fact["turn"]]
            assert fact["role"] == message["role"], (conversation["name"], fact)
            assert fact["kind"] in KINDS, (conversation["name"], fact)
            assert fact["must"], (conversation["name"], fact)
            if fact["role"] != "tool":  # a tool's text may write the date its own way
                for must in fact["must"]:
                    if not must[:4].isdigit():
                        assert must.casefold() in message["content"].casefold(), (
                            conversation["name"], must)


_check()
