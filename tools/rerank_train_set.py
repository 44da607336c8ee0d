"""Memories and questions, with gold answers, for fitting the light re-ranker.

This is the re-ranker's training data, written for that purpose and for nothing else: it
teaches a small logistic model (over BM25, the static embedding's cosine, query-term
coverage and the like) how well a recalled memory answers a question, and whether a memory
found only by vector similarity is relevant at all, so that a question nothing in memory
answers gets nothing back rather than the nearest unrelated memories. It is disjoint from
every set anything is reported on: its people, facts and phrasings are not those of
``benchmarks/paraphrase_set.py``, of LoCoMo, or of ``tools/static_dev_set.py``. Nothing in it
may be used for reporting: a score measured here says how well the re-ranker fits its own
training data, not how well recall works.

``MEMORIES[person]`` lists what an app agent keeps about one user; every memory names its
person. ``QUESTIONS`` lists ``(person, question, answers)``, where ``answers`` are indexes into
``MEMORIES[person]`` of every memory that answers the question, and an empty tuple means
nothing in that person's memories answers it. Per person, about 35% of the questions share no
content word with their answer (once normalised by :func:`mainsdk_memory._text.index_terms`
and leaving out the person's name), 30% share one or more, 10% have two answers, and 25% have
none: half of those ask about a topic the memories touch without answering it (a phone
number when only the email is kept), and some share a word with an unrelated memory.
"""

from __future__ import annotations

PEOPLE: tuple[str, ...] = ("gus", "hana", "ivo", "kai", "milo", "nora", "omar", "pia")

MEMORIES: dict[str, tuple[str, ...]] = {
    "gus": (
        "Gus's email is gus.brandt@posteo.de.",  # 0
        "Gus asked for no marketing newsletters, only order confirmations.",  # 1
        "Gus is an electrician and runs his own two-person company.",  # 2
        "Gus's wife Marta works as a midwife.",  # 3
        "Gus drives his kids to school every weekday at 7:40.",  # 4
        "Gus has two boys, Felix (9) and Anton (6).",  # 5
        "Gus was stung by a wasp in 2022 and needed his EpiPen.",  # 6
        "Gus is cutting down on sugar on his doctor's advice after a blood test in March.",  # 7
        "Gus has chronic lower back pain and sees a chiropractor once a month.",  # 8
        "Gus plays bass in a covers band; rehearsals are Thursday nights.",  # 9
        "Gus has season tickets for the local ice hockey club.",  # 10
        "Gus lives at 14 Birkenweg, Bremen.",  # 11
        "Gus: Samsung Galaxy phone, old Windows laptop for invoices.",  # 12
        "Gus's mother-in-law is moving in with the family in the autumn.",  # 13
        "Gus prefers appointments early, before 8 am.",  # 14
        "Gus's annual boiler service is booked for 3 October.",  # 15
        "Gus can't stand olives.",  # 16
        "Gus went to Crete with the family in August 2023.",  # 17
        "Gus is planning a fishing trip to Norway next June.",  # 18
        "Gus banks with Sparkasse and pays invoices by transfer.",  # 19
        "Gus wants to put solar panels on the roof this year.",  # 20
        "Gus collects vintage fountain pens.",  # 21
        "On 12 February Gus reported a damaged delivery; we refunded him in full.",  # 22
        "Gus speaks German and English, plus some Polish from his grandmother.",  # 23
        "Gus wears glasses, but only for reading.",  # 24
        "Gus's birthday: 17 November.",  # 25
        "Gus quit smoking in 2020.",  # 26
        "Gus's brother Henrik lives in Hamburg and sometimes helps out in the business.",  # 27
        "Gus dislikes small talk on the phone; keep calls short.",  # 28
        "Gus has a beagle called Rolf who needs a walk at lunchtime.",  # 29
    ),
    "hana": (
        "Hana reads messages in the app's chat but ignores SMS.",  # 0
        "Hana's work phone: +44 20 7946 0321 (weekdays only).",  # 1
        "Hana is a sign-language interpreter at the county court.",  # 2
        "Hana is allergic to sesame; even a little tahini sets it off.",  # 3
        "Hana is anaemic and takes iron tablets with orange juice.",  # 4
        "Hana's partner Idris is a train driver.",  # 5
        "Hana has a stepdaughter, Yusra, who is 15.",  # 6
        "Hana swims 2 km at the lido before work from April to September.",  # 7
        "Hana grows bonsai trees; she has eleven of them.",  # 8
        "Hana lives in a ground-floor flat at 3 Quay Road, Exeter.",  # 9
        "Hana - left-handed.",  # 10
        "Hana's laptop is a Surface Pro and she hates its keyboard.",  # 11
        "Hana is travelling to Seoul on 4 December for a conference.",  # 12
        "Hana can't bear the smell of cigarette smoke.",  # 13
        "Hana's comfort food is the ramen from the little place on Fore Street.",  # 14
        "Hana is saving for a sabbatical in 2026.",  # 15
        "Hana's GP is Dr Wren at Heavitree surgery.",  # 16
        "Hana had her appendix removed in 2019.",  # 17
        "Hana's favourite author is Ursula K. Le Guin.",  # 18
        "Hana drinks oat-milk lattes, never tea.",  # 19
        "Hana's father Kenji lives in Osaka and phones her every Sunday.",  # 20
        "Hana sleeps with earplugs because of the street noise.",  # 21
        "Hana missed her 9 May optician appointment and wants to rebook.",  # 22
        "Hana is learning the cello, with lessons on Saturday mornings.",  # 23
        "Hana has a 40-year-old tortoise called Gilbert.",  # 24
        "Hana bought a second-hand electric bike in June.",  # 25
        "Hana doesn't celebrate Christmas but loves New Year's Eve.",  # 26
        "Hana has been afraid of dogs since one bit her as a child.",  # 27
        "Hana's mortgage is with Nationwide, fixed until 2027.",  # 28
        "Hana volunteers once a month, reading to children at the library.",  # 29
    ),
    "ivo": (
        "Ivo wants letters by post; he doesn't use email.",  # 0
        "Ivo's landline is 01 4567 890, and he is usually in after lunch.",  # 1
        "Ivo retired in 2018 after 35 years as a tram mechanic.",  # 2
        "Ivo is a widower; his wife Vesna died in 2021.",  # 3
        "Ivo's daughter Dora lives nearby and has power of attorney.",  # 4
        "Ivo has high blood pressure and takes amlodipine every evening.",  # 5
        "Ivo has walked with a cane since his hip replacement in 2020.",  # 6
        "Ivo is on a low-salt diet.",  # 7
        "Ivo plays bocce in the park with friends on Sunday mornings.",  # 8
        "Ivo keeps racing pigeons on the roof of his building.",  # 9
        "Ivo's address: Ilica 112, 10000 Zagreb.",  # 10
        "Ivo has a flip phone, no smartphone.",  # 11
        "Ivo asked for large-print statements because his eyesight is poor.",  # 12
        "Ivo's grandson Luka studies engineering in Graz.",  # 13
        "Ivo visits Vesna's grave every Saturday.",  # 14
        "Ivo's cataract operation (left eye) is on 14 March at 10:30.",  # 15
        "Ivo loves plum brandy, but his doctor allows him one glass a day.",  # 16
        "Ivo doesn't eat fish.",  # 17
        "Ivo watches every Dinamo Zagreb match on TV.",  # 18
        "Ivo plays the accordion at family weddings.",  # 19
        "Ivo went on a pilgrimage to Medjugorje in May 2023.",  # 20
        "Ivo's brother Stipe emigrated to Melbourne in 1975.",  # 21
        "Ivo hopes to fly to Australia next winter to see Stipe.",  # 22
        "Ivo does not trust online banking and pays his bills at the counter.",  # 23
        "Ivo has a home carer, Marija, on Tuesdays and Fridays.",  # 24
        "Ivo speaks Croatian and only a little English, so use simple words.",  # 25
        "Ivo fell in the bathroom on 2 January; a grab rail was fitted afterwards.",  # 26
        "Ivo grows paprika peppers and cabbage on an allotment.",  # 27
        "Ivo naps every afternoon from 2 to 3.",  # 28
        "Ivo reads Vecernji list every morning.",  # 29
    ),
    "kai": (
        "Kai uses they/them pronouns.",  # 0
        "Kai answers fastest on Telegram (@kai_beats).",  # 1
        "Kai is a freelance sound engineer for theatre shows.",  # 2
        "Kai shares a flat in Rotterdam with two housemates.",  # 3
        "Kai's address: Witte de Withstraat 40B, Rotterdam.",  # 4
        "Kai has ADHD and takes methylphenidate on workdays.",  # 5
        "Kai is vegetarian but eats eggs.",  # 6
        "Kai is allergic to latex.",  # 7
        "Kai's mum runs a flower shop in Utrecht.",  # 8
        "Kai has no siblings.",  # 9
        "Kai skateboards most evenings at the Westblaak skatepark.",  # 10
        "Kai is saving up for a modular synthesizer, roughly 3,000 euros.",  # 11
        "Kai's bike was stolen on 5 April; they filed a police report.",  # 12
        "Don't book Kai for anything before noon: they work late shifts.",  # 13
        "Kai's phone contract is 25 euros a month and renews in January.",  # 14
        "Kai drinks a lot of energy drinks and wants to cut back.",  # 15
        "Kai has a tattoo appointment at Ink Lab on 19 July.",  # 16
        "Kai streams indie games on Twitch on Sunday nights.",  # 17
        "Kai has a Pixel 8 and a gaming PC they built themselves.",  # 18
        "Kai went to Berlin for a techno festival in March 2024.",  # 19
        "Kai plans to move to Copenhagen next year for a job.",  # 20
        "Kai's partner Noor is a tattoo artist.",  # 21
        "Kai dislikes coconut in anything.",  # 22
        "Kai has had eczema on their hands since childhood.",  # 23
        "Kai fosters kittens for the local animal shelter.",  # 24
        "Kai is learning Danish on Duolingo.",  # 25
        "Kai's birthday party is on 8 August at a rooftop bar.",  # 26
        "Kai once worked as a barista at Hopper Coffee.",  # 27
        "Kai's favourite band is Khruangbin.",  # 28
        "Kai broke their ankle skateboarding in 2021.",  # 29
    ),
    "milo": (
        "Milo is on the road Monday to Thursday, so call him on Fridays.",  # 0
        "Milo's email is milo.ferreira@gmail.com; he checks it at weekends.",  # 1
        "Milo drives an articulated lorry for a supermarket chain.",  # 2
        "Milo's own car is a silver 2015 Skoda Octavia.",  # 3
        "Milo is divorced and shares custody of his daughter Alba, 11.",  # 4
        "Milo has Alba every other weekend.",  # 5
        "Milo had a heart attack in 2021 and takes a statin every night.",  # 6
        "Milo does cardiac rehab exercises three times a week.",  # 7
        "Milo loves barbecue, especially smoked brisket.",  # 8
        "Milo gave up fizzy drinks in January.",  # 9
        "Milo is a keen amateur astronomer with a 200 mm telescope.",  # 10
        "Milo rents a two-bedroom house on Gorse Lane, Leicester.",  # 11
        "Milo's landlord put the rent up by 90 pounds in May.",  # 12
        "Milo is saving to take Alba to Disneyland Paris next Easter.",  # 13
        "Milo's HGV licence medical is due on 30 September.",  # 14
        "Milo watches films on a Galaxy Tab in the cab at night.",  # 15
        "Milo's sister Ines runs a cafe in Faro.",  # 16
        "Milo grew up in Portugal and moved to England at 19.",  # 17
        "Milo is a Benfica fan.",  # 18
        "Milo spent two weeks in the Algarve in July 2023.",  # 19
        "Milo likes his steak well done.",  # 20
        "Milo is terrible with paperwork and wants reminders by text.",  # 21
        "Milo's tachograph card expires in 2026.",  # 22
        "Milo plays darts in a pub league on Friday nights.",  # 23
        "Milo snores badly; his doctor has suggested a sleep study.",  # 24
        "Milo - allergic to ibuprofen (rash).",  # 25
        "Milo's dad passed away in March 2022, and the anniversary is hard for him.",  # 26
        "Milo would like to retire to Portugal one day.",  # 27
        "Milo has no pets; his hours are too long.",  # 28
        "Milo filed his 2023 tax return late and paid a 100 pound fine.",  # 29
    ),
    "nora": (
        "Nora wants appointment reminders by email, two days ahead.",  # 0
        "Nora's mobile: 087 555 0142.",  # 1
        "Nora is a PhD student in marine biology at the University of Galway.",  # 2
        "Nora's thesis is on seagrass meadows and is due in spring 2026.",  # 3
        "Nora rents a room in a shared house in Salthill.",  # 4
        "Nora has epilepsy, well controlled with lamotrigine.",  # 5
        "Nora cycles everywhere; she has no driving licence.",  # 6
        "Nora is pescatarian.",  # 7
        "Nora can't digest onions or garlic (low-FODMAP).",  # 8
        "Nora's girlfriend Aoife teaches at a primary school.",  # 9
        "Nora's parents run a dairy farm in County Clare.",  # 10
        "Nora has three younger brothers.",  # 11
        "Nora surfs at Lahinch most weekends.",  # 12
        "Nora plays tin whistle at a trad session on Wednesday nights.",  # 13
        "Nora's laptop is a hand-me-down Dell with a dying battery.",  # 14
        "Nora's research stipend is 19,000 euros a year.",  # 15
        "Nora's fieldwork on the Aran Islands runs from 10 to 24 June.",  # 16
        "Nora gave a talk at a conference in Bergen in October 2023.",  # 17
        "Nora reads fantasy novels, mostly Terry Pratchett.",  # 18
        "Nora is afraid of heights.",  # 19
        "Nora drinks rooibos tea and no coffee.",  # 20
        "Nora gets seasick on small boats.",  # 21
        "Nora is applying for a postdoc in Tasmania.",  # 22
        "Nora's family has a sheepdog called Bran on the farm.",  # 23
        "Nora has a PADI Advanced scuba certificate.",  # 24
        "Nora's birthday is 29 February.",  # 25
        "Nora got a concussion falling off her bike in November 2023.",  # 26
        "Nora counts seals for a wildlife charity as a volunteer.",  # 27
        "Nora's phone is a second-hand iPhone SE.",  # 28
        "Nora speaks Irish fluently.",  # 29
    ),
    "omar": (
        "Omar wants SMS for anything urgent and email for receipts.",  # 0
        "Omar's work email is omar@haddad-architects.co.uk.",  # 1
        "Omar is an architect who designs schools and libraries.",  # 2
        "Omar runs his practice from a converted mill in Stockport.",  # 3
        "Omar's wife Leila is a GP.",  # 4
        "Omar has twin daughters, Sara and Yasmin, born in 2012.",  # 5
        "Omar fasts during Ramadan, so don't schedule lunches with him then.",  # 6
        "Omar eats halal only.",  # 7
        "Omar has gout that flares up after rich food.",  # 8
        "Omar had LASIK eye surgery in 2016.",  # 9
        "Omar plays squash at 6:30 on Tuesday mornings.",  # 10
        "Omar is restoring a 1972 Land Rover.",  # 11
        "Omar's everyday car is a Tesla Model 3.",  # 12
        "Omar lives at 22 Park Crescent, Didsbury, Manchester.",  # 13
        "Omar's mother lives with the family and uses a wheelchair.",  # 14
        "Omar sometimes pays his quarterly VAT bill late; remind him a week before.",  # 15
        "Omar follows cricket and never misses a Lancashire home match.",  # 16
        "Omar went to Amman for his cousin's wedding in April 2024.",  # 17
        "Omar is planning a family trip to Vietnam over Easter 2025.",  # 18
        "Omar hates cold calls and hangs up on salespeople.",  # 19
        "Omar speaks Arabic, English and some French.",  # 20
        "Omar sketches on an iPad Pro with a pencil.",  # 21
        "Omar prefers video meetings, never before 9 am.",  # 22
        "Omar's father was a tailor in Beirut.",  # 23
        "Omar donates monthly to a refugee charity.",  # 24
        "Omar bought a holiday cottage in Wales in 2019.",  # 25
        "Omar's dog is a cockapoo called Simba.",  # 26
        "Omar hates being kept waiting, so be punctual.",  # 27
        "Omar got a speeding fine on the M60 in January.",  # 28
        "Omar's favourite dessert is knafeh.",  # 29
    ),
    "pia": (
        "Pia's roster is in the shared calendar; message her only on her days off.",  # 0
        "Pia is a captain flying A320s for a regional airline.",  # 1
        "Pia has been married to Urs for 30 years.",  # 2
        "Pia's husband Urs is a retired watchmaker.",  # 3
        "Pia's son Nico is a medical student in Bern.",  # 4
        "Pia became a grandmother in May 2024 when her daughter Elsa had a boy.",  # 5
        "Pia has to pass a flight medical every six months.",  # 6
        "Pia had a melanoma removed from her shoulder in 2020.",  # 7
        "Pia follows a keto diet.",  # 8
        "Pia is allergic to mango.",  # 9
        "Pia paraglides in the Alps in summer.",  # 10
        "Pia collects a snow globe from every city she lands in.",  # 11
        "Pia drives a Subaru Outback with a roof box.",  # 12
        "Pia's flat: Seefeldstrasse 88, 8008 Zurich.",  # 13
        "Pia speaks Swiss German, French, English and Spanish.",  # 14
        "Pia jogs along the lake before early flights.",  # 15
        "Pia never drinks alcohol within 12 hours of flying.",  # 16
        "Pia's personal phone is a Fairphone 5.",  # 17
        "Pia's favourite holiday spot is the Azores.",  # 18
        "Pia went to Patagonia in November 2022.",  # 19
        "Pia plans to retire at 60, in 2029.",  # 20
        "Pia's pension fund is with Swiss Life.",  # 21
        "Pia hates crowded beaches.",  # 22
        "Pia's brother Dario died in a climbing accident in 2015.",  # 23
        "Pia sleeps with an eye mask to cope with jet lag.",  # 24
        "Pia makes her own cheese.",  # 25
        "Pia's mother, 84, lives in Lugano and has dementia.",  # 26
        "Pia's next simulator check is on 18 November.",  # 27
        "Pia cancelled her gym membership in February.",  # 28
        "Pia has two Bengal cats, Sol and Luna.",  # 29
    ),
}

QUESTIONS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    # gus: no word shared with the answer
    ("gus", "what's his inbox address?", (0,)),
    ("gus", "does he want promotional mail from us?", (1,)),
    ("gus", "what's his trade?", (2,)),
    ("gus", "name of his other half", (3,)),
    ("gus", "how old are his sons?", (5,)),
    ("gus", "anything he's severely allergic to?", (6,)),
    ("gus", "any spinal problems?", (8,)),
    ("gus", "is he musical?", (9,)),
    ("gus", "his home street", (11,)),
    ("gus", "what handset has he got?", (12,)),
    ("gus", "who's joining their household later this year?", (13,)),
    ("gus", "foods he won't touch", (16,)),
    ("gus", "is he going angling abroad soon?", (18,)),
    ("gus", "what breed is his pooch?", (29,)),
    # gus: a word shared with the answer
    ("gus", "what does Gus do on Thursday nights?", (9,)),
    ("gus", "does Gus go to hockey games?", (10,)),
    ("gus", "when is the boiler service?", (15,)),
    ("gus", "where did Gus go in August 2023?", (17,)),
    ("gus", "which bank does Gus use?", (19,)),
    ("gus", "is he getting solar panels?", (20,)),
    ("gus", "what languages does Gus speak?", (23,)),
    ("gus", "does he need glasses to drive?", (24,)),
    ("gus", "Gus birthday", (25,)),
    ("gus", "when did he quit smoking?", (26,)),
    ("gus", "where does his brother live?", (27,)),
    ("gus", "what happened with his damaged delivery?", (22,)),
    # gus: two answers
    ("gus", "tell me about his children", (4, 5)),
    ("gus", "his email, and how to handle phoning him", (0, 28)),
    ("gus", "trips he has taken or planned", (17, 18)),
    ("gus", "what's changing at his house this year?", (13, 20)),
    # gus: nothing answers
    ("gus", "what's Gus's phone number?", ()),
    ("gus", "what's his sister called?", ()),
    ("gus", "what blood type is he?", ()),
    ("gus", "when is his next dentist appointment?", ()),
    ("gus", "when is his wife's birthday?", ()),
    ("gus", "which school do his boys go to?", ()),
    ("gus", "what car does he drive?", ()),
    ("gus", "does Gus play golf?", ()),
    ("gus", "what does his mother do for work?", ()),
    ("gus", "what size shoes does he wear?", ()),
    # hana: no word shared with the answer
    ("hana", "will she notice a text?", (0,)),
    ("hana", "her office number", (1,)),
    ("hana", "what's her career?", (2,)),
    ("hana", "any seeds she reacts to?", (3,)),
    ("hana", "is she on any supplements?", (4,)),
    ("hana", "her significant other's job", (5,)),
    ("hana", "does she have kids?", (6,)),
    ("hana", "where does she do laps?", (7,)),
    ("hana", "what miniature plants does she keep?", (8,)),
    ("hana", "which town does she reside in?", (9,)),
    ("hana", "is she a southpaw?", (10,)),
    ("hana", "her computer setup", (11,)),
    ("hana", "when does she leave for Korea?", (12,)),
    ("hana", "what age is her reptile?", (24,)),
    # hana: a word shared with the answer
    ("hana", "what is Hana allergic to?", (3,)),
    ("hana", "where does Hana swim?", (7,)),
    ("hana", "who is Hana's GP?", (16,)),
    ("hana", "when was her appendix removed?", (17,)),
    ("hana", "favourite author", (18,)),
    ("hana", "does she drink tea?", (19,)),
    ("hana", "where does her father live?", (20,)),
    ("hana", "she missed an optician appointment, when was it?", (22,)),
    ("hana", "when are her cello lessons?", (23,)),
    ("hana", "when did Hana buy the electric bike?", (25,)),
    ("hana", "is Hana afraid of dogs?", (27,)),
    ("hana", "who is her mortgage with?", (28,)),
    # hana: two answers
    ("hana", "contact options for Hana", (0, 1)),
    ("hana", "her finances: savings and loans", (15, 28)),
    ("hana", "her partner and step-kid", (5, 6)),
    ("hana", "which animals does she keep, and which ones scare her?", (24, 27)),
    # hana: nothing answers
    ("hana", "what's her personal mobile number?", ()),
    ("hana", "is Hana allergic to nuts?", ()),
    ("hana", "which school does Yusra go to?", ()),
    ("hana", "when is her next GP appointment?", ()),
    ("hana", "what's her mother's name?", ()),
    ("hana", "which train does she take to work?", ()),
    ("hana", "which court does she play squash at?", ()),
    ("hana", "what's her favourite film?", ()),
    ("hana", "is Hana vegetarian?", ()),
    ("hana", "how tall is she?", ()),
    # ivo: no word shared with the answer
    ("ivo", "does he have an inbox?", (0,)),
    ("ivo", "his home number", (1,)),
    ("ivo", "what was his former job?", (2,)),
    ("ivo", "marital status", (3,)),
    ("ivo", "who handles his legal affairs?", (4,)),
    ("ivo", "his prescriptions", (5,)),
    ("ivo", "any orthopaedic surgery?", (6,)),
    ("ivo", "sodium restrictions?", (7,)),
    ("ivo", "does he look after any birds?", (9,)),
    ("ivo", "what kind of mobile does he carry?", (11,)),
    ("ivo", "what subject is his grandchild doing at university?", (13,)),
    ("ivo", "can I offer him a drink of liquor?", (16,)),
    ("ivo", "which football club does he follow?", (18,)),
    ("ivo", "does he have a caregiver?", (24,)),
    # ivo: a word shared with the answer
    ("ivo", "Ivo's address", (10,)),
    ("ivo", "when is Ivo's cataract operation?", (15,)),
    ("ivo", "what does Ivo grow on his allotment?", (27,)),
    ("ivo", "does he read a newspaper, and which one?", (29,)),
    ("ivo", "when does Ivo nap?", (28,)),
    ("ivo", "when did Ivo fall in the bathroom?", (26,)),
    ("ivo", "where did he go on pilgrimage?", (20,)),
    ("ivo", "does Ivo trust online banking?", (23,)),
    ("ivo", "what does Ivo play on Sundays?", (8,)),
    ("ivo", "what was his job before he retired?", (2,)),
    ("ivo", "Ivo's daughter", (4,)),
    ("ivo", "Ivo blood pressure medicine", (5,)),
    # ivo: two answers
    ("ivo", "best time to phone Ivo?", (1, 28)),
    ("ivo", "how's his vision?", (12, 15)),
    ("ivo", "what should he not eat?", (7, 17)),
    ("ivo", "tell me about his brother", (21, 22)),
    # ivo: nothing answers
    ("ivo", "what's Ivo's mobile number?", ()),
    ("ivo", "does Ivo have a son?", ()),
    ("ivo", "is he diabetic?", ()),
    ("ivo", "when is his next blood test?", ()),
    ("ivo", "what's his carer's phone number?", ()),
    ("ivo", "which hospital is doing his eye operation?", ()),
    ("ivo", "does he play cards?", ()),
    ("ivo", "which TV provider does he use?", ()),
    ("ivo", "what did he study at school?", ()),
    ("ivo", "when is Dora's birthday?", ()),
    # kai: no word shared with the answer
    ("kai", "how should I refer to Kai, he or she?", (0,)),
    ("kai", "quickest way to message them?", (1,)),
    ("kai", "what do they do for work?", (2,)),
    ("kai", "do they live alone?", (3,)),
    ("kai", "any neurodivergence or meds?", (5,)),
    ("kai", "are they plant-based?", (6,)),
    ("kai", "are rubber gloves a problem for them?", (7,)),
    ("kai", "what does their mother do?", (8,)),
    ("kai", "brothers or sisters?", (9,)),
    ("kai", "what instrument purchase are they planning?", (11,)),
    ("kai", "did they lose their bicycle?", (12,)),
    ("kai", "are early meetings ok?", (13,)),
    ("kai", "when are they getting new body art?", (16,)),
    ("kai", "who are they dating?", (21,)),
    # kai: a word shared with the answer
    ("kai", "where is Kai moving next year?", (20,)),
    ("kai", "when is Kai's birthday party?", (26,)),
    ("kai", "what does Kai stream on Twitch?", (17,)),
    ("kai", "where did Kai work as a barista?", (27,)),
    ("kai", "Kai's favourite band", (28,)),
    ("kai", "what language is Kai learning?", (25,)),
    ("kai", "does Kai have eczema?", (23,)),
    ("kai", "how many energy drinks does Kai have?", (15,)),
    ("kai", "when does their phone contract renew?", (14,)),
    ("kai", "where did they go in March 2024?", (19,)),
    ("kai", "does Kai have a Pixel?", (18,)),
    ("kai", "does Kai foster kittens?", (24,)),
    # kai: two answers
    ("kai", "which city do they live in?", (3, 4)),
    ("kai", "what board sport are they into?", (10, 29)),
    ("kai", "what's in their diary for July and August?", (16, 26)),
    ("kai", "current and past jobs", (2, 27)),
    # kai: nothing answers
    ("kai", "what's Kai's email address?", ()),
    ("kai", "do they drink alcohol?", ()),
    ("kai", "their father's job?", ()),
    ("kai", "when is their next doctor's appointment?", ()),
    ("kai", "how much rent do they pay?", ()),
    ("kai", "what's Noor's phone number?", ()),
    ("kai", "what sound system do they have at home?", ()),
    ("kai", "what's their shoe size?", ()),
    ("kai", "which football team do they support?", ()),
    ("kai", "what's Kai's dog called?", ()),
    # milo: no word shared with the answer
    ("milo", "what day is best to ring him?", (0,)),
    ("milo", "where can I send electronic correspondence to him?", (1,)),
    ("milo", "how does he earn money?", (2,)),
    ("milo", "what's his personal vehicle?", (3,)),
    ("milo", "relationship status", (4,)),
    ("milo", "what cholesterol pills is he on?", (6,)),
    ("milo", "does he still have soda?", (9,)),
    ("milo", "stargazing hobby", (10,)),
    ("milo", "what city is he based in?", (11,)),
    ("milo", "is he an only child?", (16,)),
    ("milo", "where is he originally from?", (17,)),
    ("milo", "does he throw arrows competitively?", (23,)),
    ("milo", "painkiller he can't take", (25,)),
    ("milo", "does he have an animal?", (28,)),
    # milo: a word shared with the answer
    ("milo", "how much did Milo's rent go up?", (12,)),
    ("milo", "how does Milo want reminders?", (21,)),
    ("milo", "when does his tachograph card expire?", (22,)),
    ("milo", "does Milo snore?", (24,)),
    ("milo", "when did his dad pass away?", (26,)),
    ("milo", "is Milo a Benfica fan?", (18,)),
    ("milo", "what did he do in July 2023?", (19,)),
    ("milo", "when is Milo's HGV medical due?", (14,)),
    ("milo", "what kind of lorry does Milo drive?", (2,)),
    ("milo", "Milo tax fine", (29,)),
    ("milo", "when is the Disneyland trip?", (13,)),
    ("milo", "how big is his telescope?", (10,)),
    # milo: two answers
    ("milo", "custody arrangement for his daughter", (4, 5)),
    ("milo", "heart problems?", (6, 7)),
    ("milo", "what food does he like?", (8, 20)),
    ("milo", "what does he drive, at work and off duty?", (2, 3)),
    # milo: nothing answers
    ("milo", "what's Milo's mobile number?", ()),
    ("milo", "what's his ex-wife called?", ()),
    ("milo", "what year is Alba in at school?", ()),
    ("milo", "when is his next cardiac check-up?", ()),
    ("milo", "what's his brother's name?", ()),
    ("milo", "what time does his supermarket open?", ()),
    ("milo", "which films does he like?", ()),
    ("milo", "what's his favourite pub?", ()),
    ("milo", "what's his golf handicap?", ()),
    ("milo", "is his mother still alive?", ()),
    # nora: no word shared with the answer
    ("nora", "how much warning does she like before a booked slot?", (0,)),
    ("nora", "her cell number", (1,)),
    ("nora", "where is she enrolled?", (2,)),
    ("nora", "what's her dissertation topic?", (3,)),
    ("nora", "her living situation", (4,)),
    ("nora", "does she have seizures?", (5,)),
    ("nora", "can she give someone a lift in a car?", (6,)),
    ("nora", "is fish ok for her?", (7,)),
    ("nora", "what vegetables upset her stomach?", (8,)),
    ("nora", "who is she seeing?", (9,)),
    ("nora", "where does she catch waves?", (12,)),
    ("nora", "when's she offshore for field research?", (16,)),
    ("nora", "is she prone to motion sickness at sea?", (21,)),
    ("nora", "any head injuries?", (26,)),
    # nora: a word shared with the answer
    ("nora", "what do Nora's parents do?", (10,)),
    ("nora", "how many brothers does Nora have?", (11,)),
    ("nora", "when is the trad session?", (13,)),
    ("nora", "is her laptop battery ok?", (14,)),
    ("nora", "how much is Nora's stipend?", (15,)),
    ("nora", "dates of her fieldwork", (16,)),
    ("nora", "what did she do in Bergen?", (17,)),
    ("nora", "what is Nora afraid of?", (19,)),
    ("nora", "does Nora drink coffee?", (20,)),
    ("nora", "what's the sheepdog called?", (23,)),
    ("nora", "where is she applying for a postdoc?", (22,)),
    ("nora", "what phone does Nora have?", (28,)),
    # nora: two answers
    ("nora", "what's her PhD about?", (2, 3)),
    ("nora", "what can't she eat?", (7, 8)),
    ("nora", "any brain-related health issues?", (5, 26)),
    ("nora", "how should we contact Nora?", (0, 1)),
    # nora: nothing answers
    ("nora", "what's Nora's email address?", ()),
    ("nora", "what's her girlfriend's number?", ()),
    ("nora", "does Nora have a sister?", ()),
    ("nora", "who is her GP?", ()),
    ("nora", "who supervises her PhD?", ()),
    ("nora", "which school did she go to?", ()),
    ("nora", "when is her next therapy session?", ()),
    ("nora", "what bike does she ride?", ()),
    ("nora", "does she smoke?", ()),
    ("nora", "has she been to America?", ()),
    # omar: no word shared with the answer
    ("omar", "where is his studio based?", (3,)),
    ("omar", "how do I get hold of him if it can't wait?", (0,)),
    ("omar", "what's he qualified as?", (2,)),
    ("omar", "who is he married to, and what's her job?", (4,)),
    ("omar", "does he have kids, and how old are they?", (5,)),
    ("omar", "when is he not eating during the day?", (6,)),
    ("omar", "does he have a joint condition?", (8,)),
    ("omar", "has he had vision correction?", (9,)),
    ("omar", "which racket sport?", (10,)),
    ("omar", "what EV does he own?", (12,)),
    ("omar", "is anyone in his household disabled?", (14,)),
    ("omar", "will he talk to telemarketers?", (19,)),
    ("omar", "what does he draw on?", (21,)),
    ("omar", "what kind of pup does he have?", (26,)),
    # omar: a word shared with the answer
    ("omar", "Omar's work email", (1,)),
    ("omar", "where does Omar live?", (13,)),
    ("omar", "when does Omar play squash?", (10,)),
    ("omar", "what year is the Land Rover?", (11,)),
    ("omar", "when should I remind him about VAT?", (15,)),
    ("omar", "which cricket team does Omar follow?", (16,)),
    ("omar", "why did he go to Amman?", (17,)),
    ("omar", "when is the Vietnam trip?", (18,)),
    ("omar", "does Omar speak French?", (20,)),
    ("omar", "what did Omar's father do?", (23,)),
    ("omar", "where is his holiday cottage?", (25,)),
    ("omar", "Omar speeding fine", (28,)),
    # omar: two answers
    ("omar", "his cars, old and new", (11, 12)),
    ("omar", "tell me about his wife and daughters", (4, 5)),
    ("omar", "where has he travelled recently and where is he going next?", (17, 18)),
    ("omar", "what's his email and when should we text instead?", (0, 1)),
    # omar: nothing answers
    ("omar", "what's Omar's mobile number?", ()),
    ("omar", "what's his son's name?", ()),
    ("omar", "what does he take for his gout?", ()),
    ("omar", "what's Leila's mobile?", ()),
    ("omar", "what are the twins' hobbies?", ()),
    ("omar", "which football club does Omar support?", ()),
    ("omar", "does he play tennis?", ()),
    ("omar", "what's his favourite band?", ()),
    ("omar", "what colour is his Tesla?", ()),
    ("omar", "who does his books?", ()),
    # pia: no word shared with the answer
    ("pia", "when is she reachable?", (0,)),
    ("pia", "what aircraft does she pilot?", (1,)),
    ("pia", "what was her partner's trade?", (3,)),
    ("pia", "does she have grandkids?", (5,)),
    ("pia", "how often are her health checks for work?", (6,)),
    ("pia", "any skin cancer history?", (7,)),
    ("pia", "low-carb eater?", (8,)),
    ("pia", "which tropical fruit is dangerous for her?", (9,)),
    ("pia", "what does she bring back from trips?", (11,)),
    ("pia", "how many languages does she know?", (14,)),
    ("pia", "can she have wine the night before a flight?", (16,)),
    ("pia", "when will she hang up her wings?", (20,)),
    ("pia", "is her mum unwell?", (26,)),
    ("pia", "any animals at home?", (29,)),
    # pia: a word shared with the answer
    ("pia", "what does Pia's son do?", (4,)),
    ("pia", "when did Pia go to Patagonia?", (19,)),
    ("pia", "where does Pia paraglide?", (10,)),
    ("pia", "where is Pia's flat?", (13,)),
    ("pia", "what car does Pia drive?", (12,)),
    ("pia", "does Pia speak Spanish?", (14,)),
    ("pia", "who manages her pension fund?", (21,)),
    ("pia", "what happened to her brother?", (23,)),
    ("pia", "why the eye mask?", (24,)),
    ("pia", "how old is Pia's mother?", (26,)),
    ("pia", "when is her next simulator check?", (27,)),
    ("pia", "when did she cancel her gym membership?", (28,)),
    # pia: two answers
    ("pia", "who's her husband?", (2, 3)),
    ("pia", "tell me about her children", (4, 5)),
    ("pia", "retirement plans and savings", (20, 21)),
    ("pia", "where has she travelled, and where does she love going?", (18, 19)),
    # pia: nothing answers
    ("pia", "what's Pia's email?", ()),
    ("pia", "what does her daughter do?", ()),
    ("pia", "what blood pressure medication is she on?", ()),
    ("pia", "what's her dad's name?", ()),
    ("pia", "what's her pilot licence number?", ()),
    ("pia", "what does she drink at breakfast?", ()),
    ("pia", "does she collect stamps?", ()),
    ("pia", "what shoulder exercises were recommended?", ()),
    ("pia", "what does she do in winter?", ()),
    ("pia", "what's her favourite colour?", ()),
)


def check() -> None:
    """Raise ValueError if a person, an index or a memory's naming of its person is wrong."""
    problems: list[str] = []
    if set(MEMORIES) != set(PEOPLE):
        problems.append("MEMORIES and PEOPLE differ")
    for person, memories in MEMORIES.items():
        if not 25 <= len(memories) <= 35:
            problems.append(f"{person}: {len(memories)} memories")
        problems += [f"{person}: not named in {m!r}" for m in memories if person not in m.lower()]
    seen: set[tuple[str, str]] = set()
    for person, question, answers in QUESTIONS:
        if (person, question.lower()) in seen:
            problems.append(f"{person}: repeated question {question!r}")
        seen.add((person, question.lower()))
        if person not in MEMORIES:
            problems.append(f"unknown person {person!r}")
            continue
        if len(set(answers)) != len(answers):
            problems.append(f"{person}: repeated answer in {question!r}")
        if any(not 0 <= index < len(MEMORIES[person]) for index in answers):
            problems.append(f"{person}: answer out of range in {question!r}")
    if problems:
        raise ValueError("; ".join(problems))
