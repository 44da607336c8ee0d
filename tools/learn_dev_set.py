"""The tuning set for the rules extractor of ``learn`` (issue 16): its patterns were written
and adjusted on these conversations; its quality is measured on a separate, held-out set in
``benchmarks/``, written by someone else and never tuned on. Not a benchmark: after tuning,
the extractor finds every fact here (recall and precision 1.000 on 39 conversations, 184
facts).

The set grew in batches. The first 18 conversations were written with the first rules; each
later batch was scored *before* the rules were adjusted to it, which is the honest estimate
of how the rules do on sentences they were not written for (the last batch was written at
the weak spots the earlier ones showed; in batch 4, two candidates counted as false
positives were labelled as facts afterwards)::

    batch                                   facts  recall  precision
    2  new_pet_and_baby .. chitchat_two        33    0.88       0.93
    3  onboarding_answers .. long_message      26    0.77       1.00
    4  meal_planning .. tech_support           25    0.68       0.89
    5  new_year_goals .. travel_preferences    21    0.38       1.00
    pooled                                    105    0.70       0.95

Batch 6 (``names_births_and_ranges``, 7 facts) was written with a fix of the date resolver,
from a review's examples: weekdays in names (``the Sunday Times``, ``Monday.com``, a cat
``called Friday``), a yearless birth date, ``Friday the 11th`` and ``in a week or two``.
Before the fix it scored 0 of 7 (every candidate a corrupted sentence); it is a regression
check, not an estimate, and is not pooled above.

Each conversation has the time it happened (``at``), its ``messages`` as ``(role, text)``
pairs, and the durable ``facts`` labelled in it: the turn and role a fact comes from, its
kind, and ``must``, short strings a correct memory text contains (case-insensitive). A fact
is *found* when one candidate from its turn contains all its ``must`` strings; a candidate
that matches no labelled fact of its turn is a false positive. Chit-chat-only conversations
have no facts::

    .venv/bin/python tools/learn_dev_set.py          # recall and precision
    .venv/bin/python tools/learn_dev_set.py -v       # and every miss and false positive
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

from mainsdk_memory._extract import Candidate, Turn, extract

__all__ = ["CONVERSATIONS", "score"]


def _at(day: str) -> datetime:
    return datetime.fromisoformat(day + "T10:00:00").replace(tzinfo=UTC)


def _fact(turn: int, kind: str, *must: str, role: str = "user") -> dict[str, Any]:
    return {"turn": turn, "role": role, "kind": kind, "must": must}


CONVERSATIONS: tuple[dict[str, Any], ...] = (
    {
        "name": "intro_nurse_trip",  # a Tuesday
        "at": _at("2026-12-01"),
        "messages": (
            ("user", "Hi there! I'm Dana, by the way."),
            ("assistant", "Nice to meet you, Dana! How can I help today?"),
            ("user", "I'm a nurse at St. Mary's hospital and I live in Lyon with my husband."),
            ("user", "Oh, by the way, I'm flying to Lisbon next Friday for a conference."),
            ("user", "Can you find me a hotel near the centre?"),
            ("assistant", "Sure! Here are three hotels near Baixa: Hotel Avenida, Lisboa Plaza "
                          "and Casa do Rio. Would you like me to check prices?"),
            ("user", "Thanks, that's great haha"),
        ),
        "facts": (
            _fact(0, "fact", "Dana"),
            _fact(2, "fact", "nurse"),
            _fact(2, "fact", "Lyon"),
            _fact(3, "event", "Lisbon", "2026-12-11"),
        ),
    },
    {
        "name": "chitchat_only",
        "at": _at("2026-03-15"),
        "messages": (
            ("user", "Hey, how's it going?"),
            ("assistant", "Great, thanks! What's up?"),
            ("user", "Not much, just bored. It's raining again lol"),
            ("user", "Tell me a joke"),
            ("assistant", "Why did the scarecrow win an award? Because he was outstanding in "
                          "his field."),
            ("user", "Haha good one. I'm so tired today."),
            ("user", "What's the capital of Australia?"),
            ("assistant", "Canberra."),
            ("user", "Elon Musk bought Twitter a few years ago, right?"),
            ("user", "The weather is lovely today. Thanks, bye!"),
        ),
        "facts": (),
    },
    {
        "name": "family_pets",
        "at": _at("2026-05-20"),
        "messages": (
            ("user", "My daughter is called Mia and she just turned seven."),
            ("user", "We have two cats, Pixel and Tofu."),
            ("user", "I'm allergic to peanuts, so please keep that in mind for recipes."),
            ("user", "Can you suggest a dinner recipe for tonight?"),
            ("assistant", "How about a lemon chicken traybake? It takes 40 minutes."),
            ("user", "Sounds good. My son Leo hates mushrooms though."),
        ),
        "facts": (
            _fact(0, "fact", "daughter", "Mia"),
            _fact(0, "fact", "seven"),
            _fact(1, "fact", "two cats"),
            _fact(2, "fact", "allergic to peanuts"),
            _fact(5, "fact", "Leo", "mushrooms"),
        ),
    },
    {
        "name": "service_preferences",
        "at": _at("2026-01-10"),
        "messages": (
            ("user", "Please always answer in German from now on."),
            ("user", "I prefer WhatsApp over email for reminders."),
            ("user", "I can't stand cilantro."),
            ("user", "I love hiking in the mountains."),
            ("user", "I love this answer!"),
            ("user", "Write me a short poem about snow."),
            ("user", "Call me Sam, not Samantha."),
        ),
        "facts": (
            _fact(0, "preference", "German"),
            _fact(1, "preference", "WhatsApp"),
            _fact(2, "preference", "cilantro"),
            _fact(3, "preference", "hiking"),
            _fact(6, "preference", "Sam"),
        ),
    },
    {
        "name": "changes",  # a Monday
        "at": _at("2026-09-07"),
        "messages": (
            ("user", "Quick update: I moved to Munich last month."),
            ("user", "I no longer eat meat, I went vegetarian in June."),
            ("user", "And I started a new job at Siemens two weeks ago."),
            ("user", "If I were rich I'd buy a house by the lake."),
            ("user", "Anyway, what's a good beer garden nearby?"),
        ),
        "facts": (
            _fact(0, "fact", "Munich", "2026-08"),
            _fact(1, "fact", "no longer eat meat"),
            _fact(1, "fact", "vegetarian", "2026-06"),
            _fact(2, "event", "Siemens", "2026-08-24"),
        ),
    },
    {
        "name": "events_year_end",  # a Monday, dates roll into the next year
        "at": _at("2026-12-28"),
        "messages": (
            ("user", "My exam is on the 12th."),
            ("user", "We got married last June."),
            ("user", "I'm visiting my parents in Porto on January 3."),
            ("user", "Next month I'm starting a pottery class."),
            ("user", "I have a dentist appointment tomorrow at 9."),
            ("user", "Happy holidays btw!"),
        ),
        "facts": (
            _fact(0, "event", "exam", "2027-01-12"),
            _fact(1, "event", "married", "2026-06"),
            _fact(2, "event", "Porto", "2027-01-03"),
            _fact(3, "event", "pottery", "2027-01"),
            _fact(4, "event", "dentist", "2026-12-29"),
        ),
    },
    {
        "name": "assistant_actions",  # a Thursday
        "at": _at("2026-04-02"),
        "messages": (
            ("user", "Can you book a table at Nonna's for Friday? 4 people."),
            ("assistant", "Done! I've booked your table at Nonna's for Friday at 8pm, for four "
                          "people."),
            ("user", "Perfect. My dentist appointment needs moving too."),
            ("assistant", "Your dentist appointment is now confirmed for April 14 at 10:30."),
            ("assistant", "You might also want to try the tiramisu there, it's famous."),
            ("assistant", "Rome is known for its carbonara, if you ever go."),
            ("user", "Great, thank you so much!"),
        ),
        "facts": (
            _fact(1, "event", "Nonna's", "2026-04-03", role="assistant"),
            _fact(3, "event", "dentist", "2026-04-14", role="assistant"),
        ),
    },
    {
        "name": "tool_output",  # a Monday
        "at": _at("2026-06-15"),
        "messages": (
            ("user", "Where is my order?"),
            ("tool", "Order 1234 shipped to the customer's address in Porto on 2026-06-12. "
                     "Carrier: CTT."),
            ("tool", "Account status: premium since 2024"),
            ("assistant", "Your order 1234 shipped on June 12 and should arrive by Thursday."),
            ("tool", "Search results: Porto is the second-largest city in Portugal."),
            ("user", "Ok thanks. I live in Porto, near the river."),
        ),
        "facts": (
            _fact(1, "fact", "1234", "Porto", role="tool"),
            _fact(2, "fact", "premium", "2024", role="tool"),
            _fact(3, "event", "1234", "2026-06-18", role="assistant"),
            _fact(5, "fact", "Porto"),
        ),
    },
    {
        "name": "hypotheticals_and_jokes",
        "at": _at("2026-02-14"),
        "messages": (
            ("user", "If I won the lottery I would move to Bali."),
            ("user", "I'm a billionaire, just kidding."),
            ("user", "I wish I could speak Japanese."),
            ("user", "Imagine if we had a dog."),
            ("user", "My friend thinks pineapple on pizza is fine, which is wrong."),
            ("user", "Do you think it'll snow tomorrow?"),
            ("user", "What would you do with a million dollars?"),
            ("user", "Actually, I do speak a bit of Spanish."),
        ),
        "facts": (_fact(7, "fact", "Spanish"),),
    },
    {
        "name": "health_habits",
        "at": _at("2026-07-22"),
        "messages": (
            ("user", "I'm lactose intolerant and I have type 2 diabetes."),
            ("user", "I go running every morning before work."),
            ("user", "I don't drink alcohol."),
            ("user", "I take metformin twice a day."),
            ("user", "I'm a bit stressed at the moment."),
            ("user", "What's a good low-sugar breakfast?"),
        ),
        "facts": (
            _fact(0, "fact", "lactose intolerant"),
            _fact(0, "fact", "diabetes"),
            _fact(1, "fact", "running", "every morning"),
            _fact(2, "fact", "alcohol"),
            _fact(3, "fact", "metformin"),
        ),
    },
    {
        "name": "work_life",  # a Friday
        "at": _at("2026-10-30"),
        "messages": (
            ("user", "So, I work as a software engineer at Spotify."),
            ("user", "I've been working there since March 2023."),
            ("user", "My manager is called Priya."),
            ("user", "I work from home on Mondays and Fridays."),
            ("user", "My team is launching a new app in two weeks."),
            ("user", "Ugh, Fridays are so slow."),
            ("user", "Can you draft an email to Priya about the launch?"),
        ),
        "facts": (
            _fact(0, "fact", "software engineer", "Spotify"),
            _fact(1, "fact", "since March 2023"),
            _fact(2, "fact", "manager", "Priya"),
            _fact(3, "fact", "home", "Mondays and Fridays"),
            _fact(4, "event", "launching", "2026-11-13"),
        ),
    },
    {
        "name": "travel_plans",  # a Saturday at the end of summer
        "at": _at("2026-08-29"),
        "messages": (
            ("user", "We're going to Japan this winter for three weeks."),
            ("user", "My flight to Tokyo leaves on December 18th."),
            ("user", "I prefer aisle seats on long flights."),
            ("user", "Last summer we went to Iceland."),
            ("user", "How cold is Hokkaido in January?"),
        ),
        "facts": (
            _fact(0, "event", "Japan", "2026-12"),
            _fact(1, "event", "Tokyo", "2026-12-18"),
            _fact(2, "preference", "aisle"),
            _fact(3, "event", "Iceland", "2025-06"),
        ),
    },
    {
        "name": "contact_preferences",
        "at": _at("2026-11-11"),
        "messages": (
            ("user", "Don't call me before 9am, I work night shifts."),
            ("user", "My email is dana.k@example.com"),
            ("user", "Text me on Signal if anything changes."),
            ("user", "I'm in a hurry, can you be quick?"),
            ("user", "I'm not a fan of long emails."),
        ),
        "facts": (
            _fact(0, "preference", "before 9am"),
            _fact(0, "fact", "night shifts"),
            _fact(1, "fact", "dana.k@example.com"),
            _fact(2, "preference", "Signal"),
            _fact(4, "preference", "long emails"),
        ),
    },
    {
        "name": "assistant_suggestions",
        "at": _at("2026-03-03"),
        "messages": (
            ("user", "Any ideas for getting fitter?"),
            ("assistant", "You could try swimming twice a week, it's easy on the joints."),
            ("assistant", "I recommend starting with 20-minute sessions."),
            ("assistant", "Most adults need about 150 minutes of exercise per week."),
            ("user", "I actually swim already, every Tuesday and Thursday."),
            ("assistant", "Great! I've noted that you swim on Tuesdays and Thursdays."),
            ("user", "lol ok"),
        ),
        "facts": (
            _fact(4, "fact", "swim", "every Tuesday and Thursday"),
            _fact(5, "fact", "swim", role="assistant"),
        ),
    },
    {
        "name": "lowercase_chat",  # a Tuesday
        "at": _at("2026-12-01"),
        "messages": (
            ("user", "hey! so i'm a vet, i live in cork, and i've got three dogs haha"),
            ("user", "what should i name a new puppy?"),
            ("assistant", "How about Biscuit?"),
            ("user", "love it. we're picking her up on saturday!"),
            ("user", "my birthday is on the 20th btw"),
        ),
        "facts": (
            _fact(0, "fact", "vet"),
            _fact(0, "fact", "cork"),
            _fact(0, "fact", "three dogs"),
            _fact(3, "event", "picking", "2026-12-05"),
            _fact(4, "fact", "birthday", "12-20"),
        ),
    },
    {
        "name": "tool_conservative",  # a Tuesday
        "at": _at("2026-05-05"),
        "messages": (
            ("tool", '{"customer": {"name": "R. Silva", "city": "Braga", "tier": "gold"}, '
                     '"open_tickets": 2}'),
            ("tool", "Weather in Braga: 18°C, light rain."),
            ("tool", "Product: Trail shoes X2. Price: 89 EUR. In stock."),
            ("user", "I'd like to return the shoes I bought last week."),
            ("assistant", "I've started a return for your trail shoes; a courier will collect "
                          "them on Thursday."),
        ),
        "facts": (
            _fact(0, "fact", "R. Silva", role="tool"),
            _fact(0, "fact", "Braga", role="tool"),
            _fact(0, "fact", "gold", role="tool"),
            _fact(4, "event", "return", "2026-05-07", role="assistant"),
        ),
    },
    {
        "name": "weekday_edges",  # a Tuesday, the last day of a month
        "at": _at("2026-06-30"),
        "messages": (
            ("user", "I'm starting physiotherapy next Monday."),
            ("user", "My sister is visiting this Saturday."),
            ("user", "In three days I'm moving into a new flat in Graz."),
            ("user", "I sold my car last Wednesday."),
            ("user", "My wife Anna works at Google and my brother lives in Leeds."),
            ("user", "I used to live in Paris."),
        ),
        "facts": (
            _fact(0, "event", "physiotherapy", "2026-07-06"),
            _fact(1, "event", "sister", "2026-07-04"),
            _fact(2, "event", "Graz", "2026-07-03"),
            _fact(3, "event", "sold my car", "2026-06-24"),
            _fact(4, "fact", "Anna", "Google"),
            _fact(4, "fact", "brother", "Leeds"),
            _fact(5, "fact", "Paris"),
        ),
    },
    {
        "name": "support_chat",  # a Monday
        "at": _at("2026-02-02"),
        "messages": (
            ("user", "hello"),
            ("user", "my internet is down again, can you help?"),
            ("assistant", "I'm sorry to hear that. Have you tried restarting your router?"),
            ("user", "yes twice. ugh."),
            ("user", "I'm on the Fibre 500 plan btw, since last year"),
            ("tool", "Line status: degraded. Ticket 8812 opened for the customer at 12 Rua "
                     "Augusta, Lisbon."),
            ("assistant", "I've opened ticket 8812 for you; a technician will call you tomorrow "
                          "between 9 and 12."),
            ("user", "thanks, you're a star"),
        ),
        "facts": (
            _fact(4, "fact", "Fibre 500", "2025"),
            _fact(5, "fact", "Rua Augusta", role="tool"),
            _fact(6, "event", "8812", "2026-02-03", role="assistant"),
        ),
    },
    {
        "name": "new_pet_and_baby",  # a Wednesday
        "at": _at("2026-04-08"),
        "messages": (
            ("user", "Guess what, I just adopted a puppy named Bruno!"),
            ("assistant", "Congratulations! What breed is he?"),
            ("user", "He's a beagle mix. We're also expecting our first baby in September."),
            ("user", "My partner is vegan, so we mostly cook plant-based."),
            ("user", "I'm terrified of spiders, by the way."),
            ("user", "lol that's hilarious"),
            ("user", "Our anniversary is on the 14th of February."),
        ),
        "facts": (
            _fact(0, "event", "puppy", "Bruno"),
            _fact(2, "event", "baby", "2026-09"),
            _fact(3, "fact", "partner", "vegan"),
            _fact(4, "fact", "spiders"),
            _fact(6, "fact", "anniversary", "02-14"),
        ),
    },
    {
        "name": "work_and_commute",  # a Friday in September
        "at": _at("2026-09-18"),
        "messages": (
            ("user", "I teach maths at a secondary school in Leeds."),
            ("user", "I'm originally from Kraków but I've lived in Berlin since 2019."),
            ("user", "I drive a 2015 Honda Civic."),
            ("user", "I got promoted to senior manager yesterday!"),
            ("user", "I see what you mean."),
            ("user", "I usually go to bed around 11."),
            ("user", "My son starts kindergarten in September."),
        ),
        "facts": (
            _fact(0, "fact", "maths", "Leeds"),
            _fact(1, "fact", "Kraków"),
            _fact(1, "fact", "Berlin", "2019"),
            _fact(2, "fact", "Honda Civic"),
            _fact(3, "event", "promoted", "2026-09-17"),
            _fact(5, "fact", "bed", "11"),
            _fact(6, "event", "kindergarten", "2026-09"),
        ),
    },
    {
        "name": "diet_and_health",  # a Sunday in January
        "at": _at("2026-01-25"),
        "messages": (
            ("user", "I'm on a low-FODMAP diet."),
            ("user", "I have a peanut allergy."),
            ("user", "I broke my wrist last month, so typing is slow."),
            ("user", "I stopped eating sugar in January."),
            ("user", "I need to renew my passport before March."),
            ("user", "It's so cold today."),
            ("user", "I'm starving lol"),
        ),
        "facts": (
            _fact(0, "fact", "low-FODMAP"),
            _fact(1, "fact", "peanut allergy"),
            _fact(2, "event", "wrist", "2025-12"),
            _fact(3, "fact", "sugar", "2026-01"),
            _fact(4, "note", "passport", "2026-03"),
        ),
    },
    {
        "name": "switching_providers",  # a Monday
        "at": _at("2026-11-02"),
        "messages": (
            ("user", "I'm no longer with Vodafone; I switched to O2 last week."),
            ("user", "We bought a house in Ghent last spring."),
            ("user", "I've switched to decaf."),
            ("user", "I hate flying."),
            ("user", "Please don't send me notifications after 10pm."),
            ("user", "Could you keep responses under 100 words from now on?"),
            ("user", "Use metric units, please."),
            ("user", "I'm a night owl."),
            ("user", "I support Arsenal."),
        ),
        "facts": (
            _fact(0, "fact", "no longer with Vodafone"),
            _fact(0, "event", "O2", "2026-10-26"),
            _fact(1, "event", "Ghent", "2026-03"),
            _fact(2, "fact", "decaf"),
            _fact(3, "preference", "flying"),
            _fact(4, "preference", "notifications", "10pm"),
            _fact(5, "preference", "100 words"),
            _fact(7, "fact", "night owl"),
            _fact(8, "fact", "Arsenal"),
        ),
    },
    {
        "name": "assistant_calendar",  # a Wednesday
        "at": _at("2026-07-01"),
        "messages": (
            ("user", "Add my dentist appointment on Tuesday at 3pm to the calendar please."),
            ("assistant", "I've added the dentist appointment to your calendar for Tuesday at "
                          "3pm."),
            ("assistant", "Your subscription renews on August 1."),
            ("assistant", "I've set a reminder for you to call your mom on Sunday."),
            ("assistant", "Paris is lovely in July, by the way."),
            ("tool", "Customer tier: Gold. Member since: 2019-04-02. Preferred language: "
                     "Portuguese."),
            ("tool", "Reservation R-5521 confirmed for 2 guests on 2026-07-10 at Casa Alma."),
            ("user", "ok cool"),
        ),
        "facts": (
            _fact(1, "event", "dentist", "2026-07-07", role="assistant"),
            _fact(2, "event", "subscription", "2026-08-01", role="assistant"),
            _fact(3, "event", "mom", "2026-07-05", role="assistant"),
            _fact(5, "fact", "Gold", role="tool"),
            _fact(5, "fact", "2019-04-02", role="tool"),
            _fact(5, "fact", "Portuguese", role="tool"),
            _fact(6, "event", "R-5521", "Casa Alma", role="tool"),
        ),
    },
    {
        "name": "chitchat_two",
        "at": _at("2026-10-11"),
        "messages": (
            ("user", "good morning!"),
            ("user", "I'm back!"),
            ("user", "Sorry, I was away for a bit."),
            ("user", "Hmm, let me think about it."),
            ("user", "I'd like a pizza recipe."),
            ("user", "Could you translate this into French?"),
            ("user", "My friend's cousin won the lottery."),
            ("user", "Tom Hanks is a great actor."),
            ("user", "If I had a boat I'd sail around the world."),
            ("user", "I guess that's fine."),
            ("user", "I love that!"),
            ("user", "I'm just curious, how do planes fly?"),
            ("user", "That makes sense, thanks."),
            ("user", "I'm thinking about moving to Spain, not sure yet."),
        ),
        "facts": (),
    },
    {
        "name": "onboarding_answers",  # a Friday; short answers to the assistant's questions
        "at": _at("2026-03-20"),
        "messages": (
            ("assistant", "Hi! I'm your new assistant. What's your name?"),
            ("user", "Priya \U0001F60A"),
            ("assistant", "Lovely to meet you, Priya. Where are you based?"),
            ("user", "Manchester"),
            ("assistant", "Any dietary restrictions I should know about?"),
            ("user", "Yes, I'm vegan and I can't have soy."),
            ("assistant", "Got it. How would you like me to contact you?"),
            ("user", "Email is best, not calls."),
            ("assistant", "Great. Anything else?"),
            ("user", "Nope, that's all for now. Thanks!"),
        ),
        "facts": (
            _fact(1, "fact", "Priya"),
            _fact(3, "fact", "Manchester"),
            _fact(5, "fact", "vegan"),
            _fact(5, "fact", "soy"),
            _fact(7, "preference", "Email"),
        ),
    },
    {
        "name": "fitness_coach",  # a Monday
        "at": _at("2026-10-05"),
        "messages": (
            ("user", "I want to run a half marathon next spring."),
            ("user", "Right now I can run about 5k without stopping."),
            ("user", "I have asthma, so I need to be careful in cold weather."),
            ("user", "I'm free on Tuesday and Thursday evenings."),
            ("assistant", "I suggest three runs a week: two easy runs and one long run on "
                          "Sundays."),
            ("user", "Sounds good! I weigh 82 kg and I'm 1.80 m tall."),
            ("user", "My knee surgery was in 2023 but it's fine now."),
            ("user", "ugh I'm so sore today lol"),
        ),
        "facts": (
            _fact(0, "note", "half marathon", "2027-03"),
            _fact(1, "fact", "5k"),
            _fact(2, "fact", "asthma"),
            _fact(3, "preference", "Tuesday", "Thursday"),
            _fact(5, "fact", "82 kg"),
            _fact(5, "fact", "1.80"),
            _fact(6, "event", "knee surgery", "2023"),
        ),
    },
    {
        "name": "shopping_support",  # a Sunday
        "at": _at("2026-05-31"),
        "messages": (
            ("user", "Hi, I ordered a jacket on Tuesday and it still hasn't arrived."),
            ("assistant", "I'm sorry about that! Could you give me your order number?"),
            ("user", "It's 55102."),
            ("tool", "Order 55102: status in transit, estimated delivery 2026-06-03, shipped to "
                     "customer in Coimbra."),
            ("assistant", "Thanks for waiting! Your order 55102 is in transit and should arrive "
                          "on Wednesday."),
            ("user", "Ok. Also, I'm usually not home on weekdays, so please leave parcels with "
                     "my neighbour."),
            ("user", "And my size is M, if you need it for the exchange."),
        ),
        "facts": (
            _fact(0, "event", "jacket", "2026-05-26"),
            _fact(2, "fact", "55102"),
            _fact(3, "fact", "55102", "Coimbra", role="tool"),
            _fact(4, "event", "55102", "2026-06-03", role="assistant"),
            _fact(5, "preference", "neighbour"),
            _fact(6, "fact", "size is M"),
        ),
    },
    {
        "name": "long_message",  # a Wednesday
        "at": _at("2026-08-12"),
        "messages": (
            ("user", "So a bit about me: I'm 29, I work as a pharmacist in Leeds, and I share a "
                     "flat with two friends. I'm originally from Lagos. In my free time I play "
                     "the violin and I'm learning Korean. Oh, and I'm allergic to penicillin!"),
            ("assistant", "That's a great mix! How long have you been learning Korean?"),
            ("user", "About a year. I'm going to Seoul in October to practise."),
            ("user", "my flatmate's birthday is on friday, any gift ideas?"),
        ),
        "facts": (
            _fact(0, "fact", "29"),
            _fact(0, "fact", "pharmacist", "Leeds"),
            _fact(0, "fact", "flat", "two friends"),
            _fact(0, "fact", "Lagos"),
            _fact(0, "fact", "violin"),
            _fact(0, "fact", "Korean"),
            _fact(0, "fact", "penicillin"),
            _fact(2, "event", "Seoul", "2026-10"),
        ),
    },
    {
        "name": "meal_planning",  # a Friday
        "at": _at("2026-02-20"),
        "messages": (
            ("user", "Hey! Can you help me plan meals for the week? There are four of us."),
            ("assistant", "Of course! Any dietary needs in the family?"),
            ("user", "My husband is diabetic and our youngest can't have nuts. I try to avoid "
                     "red meat."),
            ("assistant", "Thanks, noted. Do you have a budget in mind?"),
            ("user", "Around 120 euros a week. Also I hate cooking on weekdays, so quick "
                     "recipes please!"),
            ("assistant", "Here's a plan with five 20-minute dinners."),
            ("user", "Perfect, thanks!"),
        ),
        "facts": (
            _fact(0, "fact", "four of us"),
            _fact(2, "fact", "husband", "diabetic"),
            _fact(2, "fact", "nuts"),
            _fact(2, "preference", "red meat"),
            _fact(4, "preference", "120 euros"),
            _fact(4, "preference", "cooking on weekdays"),
        ),
    },
    {
        "name": "moving_house",  # a Wednesday
        "at": _at("2026-06-03"),
        "messages": (
            ("user", "We're finally moving! We signed the lease on a place in Utrecht "
                     "yesterday."),
            ("user", "The move is on the 20th and my parents are coming to help."),
            ("assistant", "Congrats! Do you need a moving checklist?"),
            ("user", "Yes please. Btw we have a piano, which makes it tricky."),
            ("user", "I work remotely so I can set up my office anywhere."),
            ("user", "Also my new address will be Oudegracht 12."),
        ),
        "facts": (
            _fact(0, "event", "moving"),
            _fact(0, "event", "Utrecht", "2026-06-02"),
            _fact(1, "event", "move", "2026-06-20"),
            _fact(3, "fact", "piano"),
            _fact(4, "fact", "remotely"),
            _fact(5, "fact", "Oudegracht 12"),
        ),
    },
    {
        "name": "language_learning",  # a Sunday
        "at": _at("2026-09-27"),
        "messages": (
            ("user", "I'm trying to improve my Spanish before my trip to Mexico in December."),
            ("user", "I'm a beginner, I did a bit of Duolingo last year."),
            ("assistant", "Great goal! How many hours a week can you study?"),
            ("user", "Maybe 3 hours, mostly in the evenings."),
            ("user", "Please correct my mistakes every time I write in Spanish."),
            ("user", "I learn best with short dialogues."),
            ("user", "Gracias!"),
        ),
        "facts": (
            _fact(0, "note", "Spanish", "2026-12"),
            _fact(1, "fact", "beginner"),
            _fact(1, "event", "Duolingo"),
            _fact(4, "preference", "correct my mistakes"),
            _fact(5, "preference", "short dialogues"),
        ),
    },
    {
        "name": "health_check_in",  # a Thursday
        "at": _at("2026-11-19"),
        "messages": (
            ("user", "Morning. My blood pressure has been high lately, the doctor put me on "
                     "lisinopril last week."),
            ("user", "I also have a follow-up appointment on December 2."),
            ("assistant", "Thanks for sharing. Are you experiencing any side effects?"),
            ("user", "A bit of dizziness in the mornings, nothing major."),
            ("user", "I'm 58 and I walk my dog for an hour every day."),
            ("user", "I quit smoking 10 years ago."),
        ),
        "facts": (
            _fact(0, "fact", "lisinopril"),
            _fact(1, "event", "follow-up", "2026-12-02"),
            _fact(4, "fact", "58"),
            _fact(4, "fact", "walk my dog"),
            _fact(5, "fact", "quit smoking", "2016"),
        ),
    },
    {
        "name": "tech_support",  # a Sunday
        "at": _at("2026-04-26"),
        "messages": (
            ("user", "My laptop keeps crashing, it's a 2021 MacBook Air."),
            ("assistant", "Sorry to hear that. Which macOS version are you on?"),
            ("user", "Sonoma, I think."),
            ("tool", "Device record: customer laptop MacBook Air M1, warranty expired "
                     "2024-03-01."),
            ("assistant", "Your warranty expired on 1 March 2024, but I've booked you a repair "
                          "slot for Tuesday at 10am."),
            ("user", "Thanks. I use my laptop for video editing, so I need it back quickly."),
            ("user", "And I'm left-handed if that matters for the keyboard lol"),
        ),
        "facts": (
            _fact(0, "fact", "MacBook Air"),
            _fact(3, "fact", "warranty", "2024-03-01", role="tool"),
            _fact(4, "event", "repair", "2026-04-28", role="assistant"),
            _fact(5, "fact", "video editing"),
            _fact(6, "fact", "left-handed"),
        ),
    },
    {
        "name": "new_year_goals",  # a Monday, lower-case chat
        "at": _at("2026-01-05"),
        "messages": (
            ("user", "happy new year!! \U0001F389"),
            ("user", "my resolution this year is to read 30 books"),
            ("user", "also want to cut down on sugar"),
            ("assistant", "Great goals! Do you have a favourite genre?"),
            ("user", "sci-fi mostly, and some history"),
            ("user", "i read on my kindle on the train to work"),
            ("user", "work's been crazy tbh"),
        ),
        "facts": (
            _fact(1, "note", "30 books"),
            _fact(2, "note", "sugar"),
            _fact(4, "preference", "sci-fi"),
            _fact(5, "fact", "kindle"),
        ),
    },
    {
        "name": "wedding_planning",  # a Friday
        "at": _at("2026-07-17"),
        "messages": (
            ("user", "We're getting married on September 12th in Sintra!"),
            ("user", "Around 80 guests, mostly family."),
            ("user", "My fiancé Jonas is German, so half the guests are flying in from "
                     "Hamburg."),
            ("assistant", "How exciting! Have you picked a caterer yet?"),
            ("user", "Not yet, but we want a vegetarian menu since we're both vegetarian."),
            ("user", "Can you suggest some caterers near Lisbon?"),
            ("assistant", "Sure \u2014 here are three options near Lisbon that do vegetarian "
                          "menus."),
        ),
        "facts": (
            _fact(0, "event", "Sintra", "2026-09-12"),
            _fact(2, "fact", "Jonas", "German"),
            _fact(4, "fact", "vegetarian"),
        ),
    },
    {
        "name": "car_trouble",  # a Sunday
        "at": _at("2026-03-29"),
        "messages": (
            ("user", "My car failed its MOT on Friday."),
            ("user", "It's a 2012 Ford Focus with 140k miles."),
            ("user", "I drive about 50 miles a day for work."),
            ("assistant", "That's a lot of driving! Would you consider an electric car?"),
            ("user", "Maybe, but I can't charge at home, I live in a flat with no parking."),
            ("user", "What's the cheapest EV right now?"),
        ),
        "facts": (
            _fact(0, "event", "MOT", "2026-03-27"),
            _fact(1, "fact", "Ford Focus"),
            _fact(2, "fact", "50 miles"),
            _fact(4, "fact", "flat", "no parking"),
        ),
    },
    {
        "name": "pet_care",  # a Wednesday
        "at": _at("2026-10-21"),
        "messages": (
            ("user", "My dog Luna has hip dysplasia."),
            ("user", "She's 9 and a golden retriever."),
            ("user", "The vet wants to see her again in three weeks."),
            ("assistant", "Poor Luna. I've set a reminder for the vet visit on November 11."),
            ("user", "Thanks! She's on a special diet too, only salmon-based food."),
            ("user", "I love her so much lol"),
        ),
        "facts": (
            _fact(0, "fact", "Luna", "hip dysplasia"),
            _fact(1, "fact", "golden retriever"),
            _fact(2, "event", "vet", "2026-11-11"),
            _fact(3, "event", "vet", "2026-11-11", role="assistant"),
            _fact(4, "fact", "salmon"),
        ),
    },
    {
        "name": "travel_preferences",  # a Monday
        "at": _at("2026-12-14"),
        "messages": (
            ("user", "ugh, mondays"),
            ("user", "Anyway. I always fly with KLM when I can, I've got gold status with them."),
            ("user", "Window seat, always."),
            ("user", "I'm flying to Toronto for Christmas to see my sister."),
            ("user", "She just had a baby boy!"),
            ("user", "Do I need a visa for Canada with a Portuguese passport?"),
            ("assistant", "No visa needed, but you'll need an eTA before you fly."),
        ),
        "facts": (
            _fact(1, "fact", "KLM"),
            _fact(1, "fact", "gold status"),
            _fact(2, "preference", "window"),
            _fact(3, "event", "Toronto", "2026-12-25"),
            _fact(4, "fact", "baby boy"),
        ),
    },
    # batch 6, written after a review: words that only look like dates, and dates said twice
    {
        "name": "names_births_and_ranges",  # a Tuesday
        "at": _at("2026-12-01"),
        "messages": (
            ("user", "I work at the Sunday Times as a sub-editor."),
            ("user", "My cat is called Friday and she's 3."),
            ("user", "I was born on March 3rd, in Leeds."),
            ("user", "I fly to Rome on Friday the 11th for a wedding."),
            ("user", "I'm moving to Porto in a week or two."),
            ("user", "I also freelance for Monday.com."),
            ("user", "I teach Sunday school at St. Anne's."),
        ),
        "facts": (
            _fact(0, "fact", "at the Sunday Times"),
            _fact(1, "fact", "called Friday"),
            _fact(2, "fact", "born on March 3rd"),
            _fact(3, "event", "Rome", "Friday the 11th (2026-12-11)"),
            _fact(4, "event", "Porto", "in a week or two (2026-12-08 to 2026-12-15)"),
            _fact(5, "fact", "freelance for Monday.com"),
            _fact(6, "fact", "teach Sunday school"),
        ),
    },
)


def _turns(conversation: dict[str, Any]) -> list[Turn]:
    return [
        Turn(role=role, text=text, index=index)
        for index, (role, text) in enumerate(conversation["messages"])
    ]


def _matches(candidate: Candidate, fact: dict[str, Any]) -> bool:
    text = candidate.text.casefold()
    return (
        candidate.turn == fact["turn"]
        and candidate.role == fact["role"]
        and all(part.casefold() in text for part in fact["must"])
    )


def score(verbose: bool = False) -> tuple[float, float, int, int, int]:
    """Recall and precision of :func:`extract` on the set, with the counts: facts, facts
    found, candidates."""
    facts = found = candidates = true = 0
    for conversation in CONVERSATIONS:
        out = extract(_turns(conversation), now=conversation["at"])
        labelled = conversation["facts"]
        facts += len(labelled)
        candidates += len(out)
        for fact in labelled:
            if any(_matches(one, fact) for one in out):
                found += 1
            elif verbose:
                print(f"MISS {conversation['name']} turn {fact['turn']}: {fact['must']}")
        for one in out:
            if any(_matches(one, fact) for fact in labelled):
                true += 1
            elif verbose:
                print(f"FP   {conversation['name']} turn {one.turn} ({one.role}, {one.kind}): "
                      f"{one.text!r}")
    recall = found / facts if facts else 1.0
    precision = true / candidates if candidates else 1.0
    return recall, precision, facts, found, candidates


def main() -> None:
    recall, precision, facts, found, candidates = score(verbose="-v" in sys.argv[1:])
    print(
        f"conversations={len(CONVERSATIONS)} facts={facts} found={found} "
        f"candidates={candidates} recall={recall:.3f} precision={precision:.3f}"
    )


if __name__ == "__main__":
    main()
