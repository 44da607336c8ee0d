"""Find the entities a memory's text names, offline, from capitals and cue words, each weighted.

:func:`mentions` reads one memory's text and returns the people, places, organisations,
projects and tools it names, each once (one per :func:`alias_key`), with a weight in [0, 1];
:func:`same_entity` decides whether two names can be one entity within one person's scope.
Pure functions: no model, no network, no storage (the caller stores what it keeps, and may
drop the person the memories are about). Precision is preferred to recall: a word is an
entity only when its capitals or a cue say so, and an unsure one is ``"other"``.

**Reading.** The text is NFKC-normalised and stripped of invisible characters (as
:mod:`mainsdk_memory._text` does), then split by one linear regular expression into words of
the cased scripts (Latin, Greek, Cyrillic, with inner ``' \u2019 - . &``, plus ``C++``,
``C#``, ``F#``, ``.NET``), sentence ends (``. ! ? … :``, a line break), runs of caseless letters
(CJK, Arabic, Thai ...) and single punctuation marks. French and Italian elisions are split
off (``l'Italie`` is ``l'`` and ``Italie``). A ``.`` right after a title (``Dr.``) or an
initial (``J.``) does not end the sentence.

**Rules,** in order:

1. *Names.* A name is a run of capitalised words (a first capital, or ``iPhone``-like words)
   that may hold connectors between two of its words (``de``, ``da``, ``van``, ``von``,
   ``of``, ``of the``, ``&`` ..., per language: ``Ana da Silva``, ``Bank of America``,
   ``Johnson & Johnson``). A run ends at any other word or mark. A run of more than
   :data:`MAX_NAME_WORDS` words (a title in Title Case) is not a name.
2. *Never entities,* anywhere: the language's stopwords (:mod:`mainsdk_memory._stopwords`,
   so ``I``, ``The``, ``My``), months and weekdays (they are dates), day words (``Today``,
   ``Yesterday``), greetings, common abbreviations (``OK``, ``TV``, ``CEO``, ``PhD``) and
   relation words (``Mom``, ``Sister``). They split a run.
3. *Sentence starts.* Every sentence starts with a capital, so the first word of a sentence
   (or after an opening quote or bracket) counts only if it is not one of the language's
   common sentence-start words (``Prefers``, ``Visited``, ``Lives`` ...), is not written in
   lower case elsewhere in the text, and, in English, is not a word of six letters or more
   ending in ``-ed`` or ``-ing``. A name on the built-in lists passes anyway (``New York``).
   A failing first word is dropped and the rest of the run is kept (``Met Tom Becker``).
   In English, a lone first word followed by an object word (``me``, ``the``, ``to``,
   ``in`` ...) is a verb (``Cut me some slack``, ``Born in Porto``); a first word followed
   by a person verb (``said``, ``moved`` ...) is a name even if it ends in ``-ed`` or is
   written in lower case elsewhere (``Mohamed moved``, ``Rose said``).
4. *Types,* each from a cue with a strength; a name takes the type of its strongest cue
   over all its mentions (the first on a tie), and is ``"other"`` with none::

     5  person        a title before it: Dr, Mr, Mrs, Ms, Prof, Herr, Mme, Sra ...
     5  organisation  a word of a name of 2+ words: Inc, Ltd, GmbH, AG, SA, LLC, Corp,
                      University, Bank, Hospital, School, Clinic ... ("Acme GmbH")
     5  place         ... Street, Park, Airport, Rua, Café ... ("Central Park")
     5  project       ... "Project" first or last ("Project Apollo")
     4  person        a relation word before it ("my sister Ana", "her manager Tom"),
                      or after its possessive ("Tom's wife")
     4  project       "project" just before or after it ("the Apollo project")
     4  tool          the built-in tool list (Python, PostgreSQL, Slack, VS Code ...)
     4  organisation  the built-in list of well-known organisations (Siemens, IBM ...)
     3  place         the built-in list of countries, regions and cities
     2  place         a verb and a preposition before it: "lives in", "moved to",
                      "flew back to", "born in", "is from" ...
     2  organisation  "works at", "works for", "engineer at", "employed by" ..., or
                      "joined" / "founded" just before it
     2  person        "with", or "met", "called", "said" ... just before it
     1  place         "in" or "near" just before it ("a flat in Porto")
     1  person        a person's verb just after it ("said", "told", "loves", "moved")

   Other languages have their own words for these cues (``meine Schwester``, ``habite à``,
   ``trabaja en``, ``mit``, ``avec`` ...), fewer of them.
5. *Tools in lower case.* Distinctive tool names are found in any case (``python``,
   ``postgresql``, ``docker``, ``vscode``); those that are also everyday words (``slack``,
   ``notion``, ``excel``, ``zoom``, ``rust``, ``teams``) only when capitalised.
6. *One entity, several names.* Mentions are grouped by :func:`alias_key`; then a one-word
   name that :func:`same_entity` links to exactly one longer name of the text, with no
   conflicting type, is counted as that name (``Tom Becker ... Tom`` is one entity, named
   ``Tom Becker``). An ambiguous short name (``Tom`` beside ``Tom Becker`` and ``Tom Silva``)
   stays apart.
7. *German* capitalises every noun, so there a one-word name with no cue at all is dropped.
8. *No case, no names.* Text with more caseless letters (CJK ...) than cased ones, or with
   most words in capitals, gives no capitalisation cue: only tool-list words are returned.

**Weights.** Each mention scores 1, plus 0.5 if it is the *subject* of its sentence (its
first name, before any content word: ``Ada moved ...``, ``My sister Ana ...``,
``Yesterday Tom ...``). An entity's score ``s`` is the sum over its mentions, and with
``s_max`` the highest score of the text::

    weight = s / (s + 1) · (1/2 + 1/2 · s / s_max)

so a lone name in passing weighs 0.5, a lone subject 0.6, and more mentions weigh more
(never 1). The order is weight, then first appearance; at most :data:`MAX_MENTIONS`.

**Aliases.** :func:`alias_key` folds accents (``José`` and ``Jose`` share a key), so names
match however they were typed; ``+`` and ``#`` stay (``C++`` and ``C#`` are not ``C``).

**Known weaknesses.** Capitalisation is the only name signal: a lower-case name (``ana``) is
missed, and a capitalised common noun mid-sentence (``I love Coffee``) is ``"other"``. First
names that are months or day words (``April``, ``May``, ``June``, ``August``) are never
found. A sentence-start name ending in ``-ed``/``-ing`` (``Irving``), or followed by an
object word (``Tom in Porto is ...``), is found only if a person's verb follows it or it
appears again mid-sentence. Cues read one or two words around a name: ``with Google`` is a
person unless the organisation is on the list, ``joined Tom for lunch`` makes Tom an
organisation, ``a job in Marketing`` makes Marketing a place, and the lists are short
(``with Jordan`` is a place; ``Ana`` in ``it is Ana`` is ``"other"``). ``Tom & Ana`` is one
name, as ``Johnson & Johnson`` is; ``Building C. Tom`` too, as ``John F. Kennedy`` is.
``'s`` is taken as a possessive (``Macy's`` is ``Macy``), inflected forms (Russian
``Москве``, German ``Deutschen Bank``) miss the lists or are kept as inflected, ``L'Oréal``
is read as ``l'`` and ``Oréal`` in French and Italian, and German nouns after ``mit`` look
like people (``mit Freunden`` is blocked by name, other plurals are not). Text in Title Case
gives a name for every run of up to six words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Final, Literal

from mainsdk_memory._stopwords import STOPWORDS
from mainsdk_memory._text import _INVISIBLE, check_language

__all__ = [
    "MAX_MENTIONS",
    "MAX_NAME_WORDS",
    "EntityType",
    "Mention",
    "alias_key",
    "mentions",
    "same_entity",
]

EntityType = Literal["person", "place", "organisation", "project", "tool", "other"]
"""What an entity is; ``"other"`` when no cue says."""

MAX_MENTIONS: Final = 64
"""The most entities :func:`mentions` returns for one text (the weightiest)."""
MAX_NAME_WORDS: Final = 6
"""The most words a name may have (connectors not counted): a longer run is a title."""


@dataclass(frozen=True, slots=True)
class Mention:
    """One entity a text names."""

    name: str
    """The name as written (NFKC, trimmed, spaces collapsed, possessive ``'s`` removed)."""
    type: EntityType
    """What it is, from its strongest cue (see the module docstring)."""
    weight: float
    """How central it is to the text, in [0, 1]: subjects and repeated names weigh more."""


def _fold(word: str) -> str:
    """A word as the tables hold it: NFKC, case folded, with ``\u2019`` written ``'``."""
    return unicodedata.normalize("NFKC", word).casefold().replace("\u2019", "'")


def _words(text: str) -> frozenset[str]:
    return frozenset(_fold(word) for word in text.split())


# -- alias keys -----------------------------------------------------------------------------

_POSSESSIVE: Final = re.compile(r"['\u2019]s(?!\w)|(?<=s)['\u2019](?!\w)")
_SEPARATOR: Final = re.compile(r"[\-_/\u2010-\u2015]+")
_DROPPED: Final = re.compile(r"[^\w\s+#]+")


@lru_cache(maxsize=8192)
def alias_key(name: str) -> str:
    """The normalised form two spellings of one name share.

    NFKC, invisible characters removed, case folded, possessive ``'s`` / ``\u2019s`` (and a
    plural's ``s'``) removed, accents folded (``José`` and ``Jose`` share ``jose``), hyphens,
    underscores and slashes read as spaces, other punctuation dropped (``+`` and ``#`` stay,
    so ``C++`` and ``C#`` keep apart), spaces collapsed: ``"Tom Becker's"`` is
    ``"tom becker"``, ``"Jean-Luc"`` is ``"jean luc"``, ``"AT&T"`` is ``"att"``.
    """
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", name)).casefold()
    text = _POSSESSIVE.sub("", text)
    if not text.isascii():
        decomposed = unicodedata.normalize("NFD", text)
        text = unicodedata.normalize(
            "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
        )
    text = _DROPPED.sub("", _SEPARATOR.sub(" ", text))
    return " ".join(text.split())


def _keys(text: str) -> frozenset[str]:
    """Names, one a line, as alias keys (a table of multi-word names)."""
    return frozenset(alias_key(line) for line in text.splitlines() if line.strip())


# -- built-in lists (alias keys) ------------------------------------------------------------

_PLACES: Final = _keys(
    """
    Afghanistan
    Albania
    Algeria
    Argentina
    Armenia
    Australia
    Austria
    Azerbaijan
    Bangladesh
    Belarus
    Belgium
    Bolivia
    Bosnia
    Brazil
    Bulgaria
    Cambodia
    Cameroon
    Canada
    Chile
    China
    Colombia
    Croatia
    Cuba
    Cyprus
    Czechia
    Czech Republic
    Denmark
    Ecuador
    Egypt
    England
    Estonia
    Ethiopia
    Finland
    France
    Germany
    Ghana
    Greece
    Guatemala
    Hungary
    Iceland
    India
    Indonesia
    Iran
    Iraq
    Ireland
    Israel
    Italy
    Jamaica
    Japan
    Kazakhstan
    Kenya
    Korea
    South Korea
    North Korea
    Kosovo
    Latvia
    Lebanon
    Lithuania
    Luxembourg
    Malaysia
    Malta
    Mexico
    Moldova
    Monaco
    Mongolia
    Montenegro
    Morocco
    Mozambique
    Nepal
    Netherlands
    Holland
    New Zealand
    Nigeria
    Norway
    Pakistan
    Palestine
    Panama
    Paraguay
    Peru
    Philippines
    Poland
    Portugal
    Qatar
    Romania
    Russia
    Rwanda
    Saudi Arabia
    Scotland
    Senegal
    Serbia
    Singapore
    Slovakia
    Slovenia
    South Africa
    Spain
    Sri Lanka
    Sudan
    Sweden
    Switzerland
    Syria
    Taiwan
    Tanzania
    Thailand
    Tunisia
    Turkey
    Ukraine
    Uganda
    United Arab Emirates
    UAE
    United Kingdom
    UK
    United States
    USA
    Uruguay
    Uzbekistan
    Venezuela
    Vietnam
    Wales
    Costa Rica
    Deutschland
    Österreich
    Schweiz
    Frankreich
    Spanien
    Italien
    Nederland
    België
    España
    Italia
    Brasil
    Polska
    Alemania
    Alemanha
    Allemagne
    Angleterre
    Inglaterra
    Inghilterra
    Espagne
    Espanha
    Spagna
    Italie
    Itália
    Francia
    França
    Germania
    Suíça
    Suiza
    Suisse
    Svizzera
    Grecia
    Europe
    Europa
    Asia
    Africa
    America
    South America
    North America
    Latin America
    Scandinavia
    California
    Texas
    Florida
    Bavaria
    Bayern
    Catalonia
    Catalunya
    Andalusia
    Tuscany
    Toscana
    Provence
    Normandy
    Algarve
    Madeira
    Azores
    Açores
    Sicily
    Sicilia
    Sardinia
    Crete
    Bali
    Hawaii
    Alaska
    Patagonia
    London
    Paris
    Berlin
    Madrid
    Barcelona
    Lisbon
    Lisboa
    Porto
    Rome
    Roma
    Milan
    Milano
    Naples
    Napoli
    Venice
    Venezia
    Firenze
    Turin
    Torino
    Vienna
    Wien
    Munich
    München
    Hamburg
    Frankfurt
    Cologne
    Köln
    Stuttgart
    Dresden
    Leipzig
    Düsseldorf
    Hannover
    Bremen
    Nuremberg
    Nürnberg
    Zurich
    Zürich
    Geneva
    Genève
    Basel
    Bern
    Lausanne
    Salzburg
    Innsbruck
    Graz
    Amsterdam
    Rotterdam
    Utrecht
    The Hague
    Brussels
    Bruxelles
    Antwerp
    Copenhagen
    Stockholm
    Oslo
    Helsinki
    Reykjavik
    Dublin
    Edinburgh
    Manchester
    Liverpool
    Birmingham
    Glasgow
    Prague
    Praha
    Warsaw
    Warszawa
    Krakow
    Budapest
    Bucharest
    Athens
    Istanbul
    Ankara
    Moscow
    Saint Petersburg
    St Petersburg
    Kyiv
    Kiev
    Tallinn
    Riga
    Vilnius
    Ljubljana
    Zagreb
    Belgrade
    Marseille
    Lyon
    Bordeaux
    Toulouse
    Lille
    Strasbourg
    Nantes
    Seville
    Sevilla
    Valencia
    Bilbao
    Malaga
    Granada
    Faro
    Coimbra
    Braga
    Funchal
    Dubai
    Abu Dhabi
    Doha
    Riyadh
    Tel Aviv
    Jerusalem
    Beirut
    Tehran
    Cairo
    Casablanca
    Marrakech
    Lagos
    Nairobi
    Johannesburg
    Cape Town
    Tokyo
    Osaka
    Kyoto
    Seoul
    Beijing
    Shanghai
    Hong Kong
    Shenzhen
    Taipei
    Bangkok
    Hanoi
    Ho Chi Minh City
    Jakarta
    Manila
    Kuala Lumpur
    Mumbai
    Delhi
    New Delhi
    Bangalore
    Bengaluru
    Karachi
    Lahore
    Dhaka
    Kathmandu
    Sydney
    Melbourne
    Brisbane
    Perth
    Auckland
    Toronto
    Montreal
    Vancouver
    Ottawa
    New York
    New York City
    NYC
    Boston
    Chicago
    Seattle
    San Francisco
    Los Angeles
    Miami
    Denver
    Atlanta
    Houston
    Dallas
    Philadelphia
    Detroit
    Las Vegas
    Mexico City
    Bogotá
    Lima
    Santiago
    Buenos Aires
    São Paulo
    Rio de Janeiro
    Montevideo
    Caracas
    Havana
    Россия
    Москва
    Германия
    Украина
    Киев
    """
)

_ORGANISATIONS: Final = _keys(
    """
    Google
    Alphabet
    Microsoft
    Apple
    Amazon
    Meta
    Facebook
    Netflix
    IBM
    Intel
    AMD
    Nvidia
    Samsung
    Sony
    Huawei
    Xiaomi
    Siemens
    Bosch
    SAP
    BASF
    Bayer
    Allianz
    Volkswagen
    BMW
    Audi
    Porsche
    Daimler
    Mercedes-Benz
    Toyota
    Honda
    Nissan
    Ford
    Tesla
    SpaceX
    OpenAI
    Anthropic
    DeepMind
    Oracle
    Cisco
    Adobe
    Salesforce
    Uber
    Lyft
    Airbnb
    PayPal
    Stripe
    Shopify
    Twitter
    IKEA
    Lidl
    Aldi
    Tesco
    Walmart
    Carrefour
    Zara
    H&M
    AT&T
    Nike
    Adidas
    Unilever
    Nestlé
    Novartis
    Roche
    Pfizer
    Moderna
    AstraZeneca
    Airbus
    Boeing
    Lufthansa
    Ryanair
    easyJet
    KLM
    Starbucks
    McDonald's
    Deloitte
    Accenture
    McKinsey
    PwC
    KPMG
    BCG
    Goldman Sachs
    JPMorgan
    Morgan Stanley
    HSBC
    Barclays
    Santander
    UBS
    Mastercard
    UNICEF
    UNESCO
    NASA
    CERN
    NATO
    NHS
    BBC
    CNN
    Reuters
    Vodafone
    Harvard
    Stanford
    MIT
    Yale
    Princeton
    Berkeley
    ETH
    EPFL
    Sorbonne
    Atlassian
    Mozilla
    Red Hat
    Wikipedia
    """
)

# Found in any case: names that are no everyday word.
_TOOLS_ANY_CASE: Final = _words(
    """
    python java javascript typescript kotlin scala haskell golang php perl c++ c# f# .net
    sql nosql postgresql postgres mysql mariadb sqlite mongodb redis elasticsearch rabbitmq
    powerpoint onedrive sharepoint onenote figma docker kubernetes k8s vscode intellij
    pycharm webstorm xcode jira confluence trello asana clickup airtable github gitlab
    bitbucket git gmail whatsapp skype wechat instagram tiktok youtube linkedin spotify
    chatgpt copilot midjourney photoshop lightroom illustrator indesign godot autocad
    solidworks matlab rstudio jupyter tableau looker bigquery hadoop terraform ansible aws
    gcp heroku vercel netlify firebase supabase npm conda numpy scipy pytorch tensorflow
    keras scikit-learn sklearn vue.js node.js nodejs next.js django fastapi laravel
    wordpress canva lucidchart postman grafana datadog ubuntu debian macos ios android
    firefox emacs vim neovim zsh powershell evernote todoist dropbox icloud duolingo strava
    anki goodreads
    """
)
# Found only when capitalised: also everyday words ("cut me some slack", "zoom in").
_TOOLS_CAPITALISED: Final = _words(
    """
    slack notion excel zoom teams rust ruby swift go outlook telegram signal discord unity
    blender spark snowflake kafka airflow azure yarn pandas react angular flask rails linux
    windows chrome safari fedora obsidian miro sentry prometheus kindle
    """
)
_TOOLS: Final = frozenset(
    alias_key(word) for word in _TOOLS_ANY_CASE | _TOOLS_CAPITALISED
) | _keys(
    """
    VS Code
    Visual Studio
    Visual Studio Code
    Android Studio
    Sublime Text
    Power BI
    Google Docs
    Google Sheets
    Google Slides
    Google Drive
    Google Maps
    Google Meet
    Google Calendar
    Microsoft Teams
    MS Teams
    Microsoft Word
    Microsoft Excel
    Final Cut Pro
    After Effects
    """
)
_KNOWN: Final = _PLACES | _ORGANISATIONS | _TOOLS

# Words of a name that make it an organisation or a place (checked on names of 2+ words).
_ORGANISATION_WORDS: Final = _words(
    """
    inc ltd llc llp plc gmbh ag sa corp corporation co kg ohg ug bv nv srl spa sarl sas oy ab
    pty pte limited se fc
    university universität universitat université universidad universidade università
    universiteit college institute institut instituto istituto school schule école escola
    escuela scuola academy akademie hospital krankenhaus klinik clinic clinique clínica
    clinica ziekenhuis bank banco banque banca foundation stiftung fundação fundación
    association group gruppe labs laboratories ministry agency council airlines airways
    motors systems technologies software studios partners consulting solutions holdings
    ventures capital media pharma insurance
    """
)
_LEGAL_FORMS: Final = _words(
    "inc ltd llc llp plc gmbh ag sa corp corporation co kg ohg ug bv nv srl spa sarl sas oy ab"
    " pty pte limited se"
)
_PLACE_WORDS: Final = _words(
    """
    street road avenue lane boulevard square park lake river mountain mount beach island bay
    valley airport station café cafe restaurant bar pub hotel museum gallery stadium theatre
    theater rua avenida praça praia straße strasse platz weg rue place calle plaza playa via
    piazza straat plein gracht
    """
)
_PROJECT_WORDS: Final = _words("project projekt projet proyecto projeto projecto progetto проект")
# The titles same_entity strips from a name's front (not Don, Dom or M: also first names).
_ALL_TITLES: Final = _words(
    "mr mrs ms miss mx dr prof professor sir dame rev herr frau mme mlle monsieur madame"
    " docteur sra srta señor señora doña dra senhor senhora sig signor signora dott dottor"
    " dottoressa dhr mevr"
)
# Skipped when reading an initialism off a name ("Bank of America" is BoA or BA).
_INITIALISM_SKIPS: Final = _words("of the and for & de da do du des di del della van von der den")


# -- per-language cues ----------------------------------------------------------------------

_Cue = tuple[int, EntityType]


@dataclass(frozen=True, slots=True)
class _Cues:
    """What one language's words say about the names beside them."""

    blocked: frozenset[str]
    """Never an entity: stopwords, months, weekdays, day words, relation words ..."""
    start: frozenset[str]
    """Not an entity as the first word of a sentence."""
    connectors: frozenset[str]
    titles: frozenset[str]
    relations: frozenset[str]
    articles: frozenset[str]
    """Skipped once when reading the words before a name ("works at the Hospital")."""
    particles: frozenset[str]
    """Skipped between a verb and its preposition ("grew up in")."""
    objects: frozenset[str]
    """After a lone sentence-start word, they make it a verb ("Cut me", "Born in")."""
    before: Mapping[str, tuple[_Cue, ...]]
    """The cues of the word just before a name ("sister", "with", "joined", "in" ...)."""
    after: Mapping[str, tuple[_Cue, ...]]
    """The cues of the word just after a name ("project", "said" ...)."""
    verbs: Mapping[str, tuple[tuple[frozenset[str], _Cue], ...]]
    """For a preposition just before a name, the verbs before it that make a cue
    ("lives" + "in", "works" + "at")."""
    suffix_rule: bool = False
    """English: a sentence-start word of six letters or more in -ed or -ing is no name."""
    nouns_capitalised: bool = False
    """German: a one-word name with no cue is a noun, not a name."""
    elisions: bool = False
    """French, Italian: ``L'Italie`` is ``l'`` and ``Italie`` even when capitalised."""


def _cue_table(*entries: tuple[str, _Cue]) -> Mapping[str, tuple[_Cue, ...]]:
    """Words mapped to their cues, strongest first, from ``(words, cue)`` pairs."""
    table: dict[str, list[_Cue]] = {}
    for words, cue in entries:
        for word in _words(words):
            table.setdefault(word, []).append(cue)
    return MappingProxyType({w: tuple(sorted(c, reverse=True)) for w, c in table.items()})


def _cues(
    language: str,
    *,
    common: str,
    start: str,
    connectors: str,
    titles: str,
    relations: str,
    articles: str,
    with_words: str,
    person_verbs: str,
    near_places: str = "",
    particles: str = "",
    objects: str = "",
    places: tuple[str, str] = ("", ""),
    organisations: tuple[str, str] = ("", ""),
    direct: str = "",
    direct_person: str = "",
    suffix_rule: bool = False,
    nouns_capitalised: bool = False,
    elisions: bool = False,
) -> _Cues:
    relation_words = _words(relations)
    project = " ".join(_PROJECT_WORDS)
    verbs: dict[str, list[tuple[frozenset[str], _Cue]]] = {}
    pairs: tuple[tuple[tuple[str, str], EntityType], ...] = (
        (places, "place"),
        (organisations, "organisation"),
    )
    for (verb_words, prep_words), kind in pairs:
        for prep in _words(prep_words):
            verbs.setdefault(prep, []).append((_words(verb_words), (2, kind)))
    return _Cues(
        blocked=STOPWORDS[language] | _words(common) | relation_words,
        start=_words(start),
        connectors=_words(connectors),
        titles=_words(titles),
        relations=relation_words,
        articles=_words(articles),
        particles=_words(particles),
        objects=_words(objects),
        before=_cue_table(
            (relations, (4, "person")),
            (project, (4, "project")),
            (direct, (2, "organisation")),
            (direct_person, (2, "person")),
            (with_words, (2, "person")),
            (near_places, (1, "place")),
        ),
        after=_cue_table((project, (4, "project")), (person_verbs, (1, "person"))),
        verbs=MappingProxyType({prep: tuple(v) for prep, v in verbs.items()}),
        suffix_rule=suffix_rule,
        nouns_capitalised=nouns_capitalised,
        elisions=elisions,
    )


_ENGLISH_COMMON: Final = """
    january february march april may june july august september october november december
    feb apr aug sep sept oct nov dec
    monday tuesday wednesday thursday friday saturday sunday
    today yesterday tomorrow tonight morning afternoon evening night weekend week weeks month
    months year years day days ago
    christmas easter halloween thanksgiving ramadan hanukkah diwali
    hi hello hey thanks thank please yes yeah yep nope ok okay oh wow sorry dear cheers
    lol btw fyi asap tbd todo etc e.g i.e
    everyone someone somebody anyone anybody nobody everybody everything something anything
    nothing maybe perhaps probably actually finally apparently hopefully unfortunately
    luckily however although though anyway besides meanwhile otherwise instead overall
    generally basically honestly also still already yet usually often always never sometimes
    recently lately currently later soon earlier last next first second third
    tv pc ai ml ui ux hr pr pm vp ceo cto cfo coo phd mba msc bsc usb pdf gps dna faq dm eta
    note notes reminder remember important update fwd fw re
"""
_ENGLISH_RELATIONS: Final = """
    sister brother mother mom mum mommy mummy father dad daddy parents wife husband partner
    spouse boyfriend girlfriend fiancé fiancée fiance fiancee son daughter aunt auntie uncle
    cousin niece nephew grandma grandpa granny grandmother grandfather grandson granddaughter
    sibling twin stepmother stepfather stepson stepdaughter sister-in-law brother-in-law
    mother-in-law father-in-law friend bestie colleague coworker co-worker boss manager
    supervisor mentor teacher tutor coach doctor dentist therapist nurse lawyer neighbour
    neighbor roommate flatmate housemate classmate teammate client landlord landlady nanny
    babysitter assistant cofounder co-founder founder intern student kid child baby
"""
_ENGLISH = _cues(
    "english",
    common=_ENGLISH_COMMON,
    start="""
        met meet meets visited visit visits moved move moves went go goes going started starts
        joined joins works work worked lives live lived loves love loved likes like liked
        prefers prefer preferred wants want wanted needs need needed hates hate hated enjoys
        enjoy enjoyed uses use used bought buy buys called call calls talked talk saw see sees
        seen got get gets took take takes plays play played studies study studied learned
        learnt learn learns thinks think thought knows know knew asked ask asks told tell
        tells said say says wrote write writes read reads watched watch watches listened
        listens cooked cooks cook ate eat eats drinks drink drank flew fly flies travelled
        traveled travels travel returned left came come comes arrived booked book books
        ordered order finished finish graduated married dated adopted owns own owned wears
        drives drove runs ran walked walks speaks spoke teaches taught born had did does can
        could
        will would should must might let lets let's try tries tried keep keeps kept make makes
        made send sends sent check add set plan plans planned
        allergic vegetarian vegan interested happy glad excited good great nice big small
        favorite favourite best worst lots plenty many much every another none either neither
        birthday anniversary appointment meeting dinner lunch breakfast trip flight user
        wedding vacation holiday
        """,
    connectors="de da do dos das di del della du van von der den ter ten bin ibn al of the",
    titles="mr mrs ms miss mx dr prof professor sir dame rev",
    relations=_ENGLISH_RELATIONS,
    articles="the a an",
    with_words="with",
    person_verbs="""
        said says told tells asked asks thinks thought feels felt loves loved likes liked
        hates hated wants wanted lives lived texted emailed called married prefers preferred
        studies studied moved works worked met visited recommended suggested invited agreed
        replied laughed smiled cried wrote mentioned explained promised complained went came
        flew drove travelled traveled bought brought gave got took started joined left
        arrived returned graduated cooked decided plans planned hopes hoped misses missed
        remembers forgot enjoys enjoyed needs needed knows knew
        """,
    near_places="in near around outside",
    particles="up back over down out away",
    objects="""
        me him her us them it the a an my his your our their its some any this that these
        those to in at on from with for of into about by up out over off back down all every
        no
        """,
    places=(
        """
        live lives lived living moved move moves moving relocated relocate relocating flew
        fly flies flying flight flights travelled traveled travel travels travelling
        traveling trip trips holiday holidays vacation vacations vacationing born grew raised
        based stayed stay stays staying drove drive drives driving commute commutes
        emigrated settled is am are was were comes come came originally
        """,
        "in to from near",
    ),
    organisations=(
        """
        works work worked working job jobs employed intern internship interning interview
        interviewed interviewing hired position career manager engineer developer designer
        analyst consultant researcher scientist ceo cto cfo founder cofounder co-founder
        employee student professor lecturer teaches taught studies studied studying
        volunteer volunteers volunteered contractor
        """,
        "at for by",
    ),
    direct="joined joins founded cofounded co-founded",
    direct_person="""
        met meet meeting texted emailed phoned called married marry marrying dating dated
        invited thanked hugged said says asked replied told
        """,
    suffix_rule=True,
)
_GERMAN = _cues(
    "german",
    common="""
        januar jänner februar märz april mai juni juli august september oktober november
        dezember montag dienstag mittwoch donnerstag freitag samstag sonntag sonnabend heute
        gestern morgen übermorgen vorgestern abend nacht woche wochenende jahr monat tag
        letzte letzten nächste nächsten jetzt dann danach später bald immer nie oft manchmal
        auch leider hallo danke bitte ja nein ok okay geburtstag weihnachten ostern silvester
        guten liebe lieber freunde freunden kollegen kindern leuten
        """,
    start="wohnt arbeitet mag liebt trifft traf besuchte besucht zog spielt lernt hat ist war",
    connectors="von zu van de da di del",
    titles="herr frau dr prof",
    relations="""
        schwester bruder mutter vater mama papa ehefrau ehemann partner partnerin freund
        freundin sohn tochter tante onkel cousin cousine oma opa großmutter großvater kollege
        kollegin chef chefin nachbar nachbarin arzt ärztin lehrer lehrerin kind eltern
        geschwister
        """,
    articles="der die das dem den des",
    with_words="mit",
    person_verbs="""
        sagt sagte meint meinte wohnt wohnte arbeitet arbeitete liebt mag heißt lebt lebte
        studiert besucht besuchte ruft rief schreibt schrieb erzählt erzählte fragt fragte
        denkt möchte
        """,
    places=(
        """
        wohnt wohne wohnen wohnte lebt lebe leben lebte zog zieht umgezogen gezogen flog
        fliegt geflogen reist reiste gereist geboren urlaub fuhr fährt kommt komme kam stammt
        """,
        "in nach aus",
    ),
    organisations=(
        "arbeitet arbeite arbeiten arbeitete gearbeitet job praktikum angestellt studiert",
        "bei für an",
    ),
    nouns_capitalised=True,
)
_FRENCH = _cues(
    "french",
    common="""
        janvier février mars avril mai juin juillet août septembre octobre novembre décembre
        lundi mardi mercredi jeudi vendredi samedi dimanche aujourd'hui hier demain soir
        matin nuit semaine week-end année mois jour bonjour salut merci oui non ensuite puis
        alors aussi toujours jamais souvent parfois maintenant dernier dernière prochain
        prochaine noël pâques
        """,
    start="habite travaille aime adore préfère va vient joue étudie parle déteste veut",
    connectors="de du des d",
    titles="m mme mlle dr pr monsieur madame mademoiselle docteur",
    relations="""
        sœur soeur frère mère père maman papa femme mari épouse époux copain copine ami amie
        fils fille tante oncle cousin cousine grand-mère grand-père mamie papi collègue patron
        patronne chef voisin voisine médecin professeur prof enfant
        """,
    articles="le la les l",
    with_words="avec",
    person_verbs="dit pense aime adore habite travaille veut préfère déteste",
    near_places="en",
    places=(
        """
        habite habitait vit vivait vivre déménagé déménage allé allée parti partie voyage
        voyagé né née vacances installé installée vient venu venue originaire
        """,
        "à en au aux de d dans",
    ),
    organisations=(
        "travaille travaillait travaillé bosse stage employé employée embauché embauchée",
        "chez pour à au",
    ),
    elisions=True,
)
_SPANISH = _cues(
    "spanish",
    common="""
        enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre
        noviembre diciembre lunes martes miércoles jueves viernes sábado domingo hoy ayer
        mañana anoche hola gracias sí luego después siempre nunca ahora semana año mes día
        noche tarde próximo próxima pasado pasada navidad pascua bueno vale
        """,
    start="""
        vive trabaja gusta prefiere tiene fue va juega estudia ama odia quiere conoció
        """,
    connectors="de del la",
    titles="sr sra srta don doña dr dra señor señora señorita",
    relations="""
        hermana hermano madre padre mamá papá esposa esposo mujer marido novio novia pareja
        hijo hija tía tío prima primo abuela abuelo amigo amiga colega compañero compañera
        jefe jefa vecino vecina médico médica doctor doctora profesor profesora niño niña
        """,
    articles="el la los las",
    with_words="con",
    person_verbs="dice dijo piensa ama vive trabaja quiere prefiere odia",
    near_places="en",
    places=(
        """
        vive vivía vivo mudó mudé mudamos mudarse viajó viajé viaja voló fue nació nacido
        nacida vacaciones viene es soy eres son
        """,
        "en a de desde",
    ),
    organisations=(
        "trabaja trabajo trabajé trabajaba trabajando empleado empleada prácticas",
        "en para",
    ),
)
_PORTUGUESE = _cues(
    "portuguese",
    common="""
        janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro
        dezembro segunda terça quarta quinta sexta sábado domingo segunda-feira terça-feira
        quarta-feira quinta-feira sexta-feira hoje ontem amanhã olá oi obrigado obrigada sim
        depois sempre nunca agora semana ano mês dia noite tarde próximo próxima passado
        passada natal páscoa
        """,
    start="mora vive trabalha gosta prefere tem foi vai joga estuda ama odeia quer conheceu",
    connectors="de da do dos das",
    titles="sr sra dona dom dr dra senhor senhora",
    relations="""
        irmã irmão mãe pai mamãe papai esposa esposo mulher marido namorado namorada filho
        filha tia tio prima primo avó avô amigo amiga colega chefe vizinho vizinha médico
        médica professor professora
        """,
    articles="o a os as",
    with_words="com",
    person_verbs="diz disse acha ama mora vive trabalha quer prefere odeia",
    near_places="em",
    places=(
        """
        mora morava moro vive vivia mudou mudei mudamos viajou viajei voou foi nasceu nascido
        nascida férias vem veio é sou
        """,
        "em para no na de do da",
    ),
    organisations=(
        "trabalha trabalho trabalhei trabalhava trabalhando estágio empregado empregada",
        "na no em para",
    ),
)
_ITALIAN = _cues(
    "italian",
    common="""
        gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre
        dicembre lunedì martedì mercoledì giovedì venerdì sabato domenica oggi ieri domani
        stasera ciao grazie sì poi sempre mai ora adesso settimana anno mese giorno notte
        sera prossimo prossima scorso scorsa natale pasqua
        """,
    start="vive abita lavora ama adora preferisce va gioca studia vuole odia conosce",
    connectors="di de del della da",
    titles="sig sig.ra signor signora signore dott dottor dottore dottoressa prof dr",
    relations="""
        sorella fratello madre padre mamma papà moglie marito fidanzato fidanzata ragazzo
        ragazza figlio figlia zia zio cugino cugina nonna nonno amico amica collega capo
        vicino vicina medico dottore professore professoressa
        """,
    articles="il lo la i gli le l",
    with_words="con",
    person_verbs="dice disse pensa ama abita vive lavora vuole preferisce odia",
    near_places="in",
    places=(
        """
        vive viveva abita abitava trasferito trasferita trasferiti volato volata viaggio
        viaggiato nato nata vacanza vacanze viene
        """,
        "a in da",
    ),
    organisations=(
        "lavora lavoro lavorato lavorava stage tirocinio assunto assunta",
        "a in per da presso alla al",
    ),
    elisions=True,
)
_DUTCH = _cues(
    "dutch",
    common="""
        januari februari maart april mei juni juli augustus september oktober november
        december maandag dinsdag woensdag donderdag vrijdag zaterdag zondag vandaag gisteren
        morgen vanavond hallo hoi dank bedankt ja nee daarna later altijd nooit soms week
        weekend jaar maand dag nacht avond volgende vorige kerst pasen
        """,
    start="woont werkt houdt speelt studeert gaat",
    connectors="van de der den ter ten",
    titles="dhr mevr mr dr prof",
    relations="""
        zus zuster broer moeder vader mama papa vrouw echtgenote echtgenoot vriend vriendin
        zoon dochter tante oom neef nicht oma opa collega baas buurman buurvrouw dokter arts
        leraar lerares
        """,
    articles="de het",
    with_words="met",
    person_verbs="zegt zei denkt woont werkt houdt wil",
    near_places="in",
    places=(
        "woont woonde wonen verhuisd verhuisde vloog gevlogen reisde gereisd geboren vakantie"
        " komt kwam",
        "in naar uit",
    ),
    organisations=("werkt werkte gewerkt werken stage studeert studeerde", "bij voor aan"),
)
_RUSSIAN = _cues(
    "russian",
    common="""
        январь января февраль февраля март марта апрель апреля май мая июнь июня июль июля
        август августа сентябрь сентября октябрь октября ноябрь ноября декабрь декабря
        понедельник вторник среда среду четверг пятница пятницу суббота субботу воскресенье
        сегодня вчера завтра привет здравствуйте спасибо потом тоже всегда никогда иногда
        неделя неделе год месяц день ночь вечер утро следующий прошлый
        """,
    start="""
        живёт живет работает любит предпочитает ходил ходила был была поехал поехала
        переехал переехала встретил встретила учится играет хочет
        """,
    connectors="",
    titles="",
    relations="""
        сестра сестрой брат братом мама мамой мать папа папой отец жена женой муж мужем
        парень девушка сын дочь тётя тетя дядя бабушка дедушка друг другом подруга подругой
        коллега коллегой начальник начальница сосед соседка врач учитель учительница
        """,
    articles="",
    with_words="с со",  # noqa: RUF001 - Cyrillic words, not look-alikes of Latin ones
    person_verbs="сказал сказала думает любит живёт живет работает хочет",
    near_places="в во",
    places=(
        """
        живёт живет жил жила живу переехал переехала переехали полетел полетела летал летала
        поехал поехала родился родилась
        """,
        "в во из на",
    ),
    organisations=("работает работал работала работаю стажировка учится учился училась", "в во на"),
)
_CUES: Final = {
    "english": _ENGLISH,
    "german": _GERMAN,
    "french": _FRENCH,
    "spanish": _SPANISH,
    "portuguese": _PORTUGUESE,
    "russian": _RUSSIAN,
    "italian": _ITALIAN,
    "dutch": _DUTCH,
}
_ELIDED: Final = _words("l d j m n s t c qu dell all nell dall sull un quell")


# -- reading --------------------------------------------------------------------------------

# Letters of the cased scripts (Latin, Greek, Cyrillic), combining marks, digits.
_CASED = (
    "0-9A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0300-\u036f\u0370-\u03ff"
    "\u0400-\u052f\u1e00-\u1fff"
)
# Every part is a character class or a fixed string, and a word's inner separators are
# not word characters, so matching is linear in the text. In order: C++, C#, F#, a word
# of the cased scripts, .NET, sentence ends, a run of caseless letters, any other mark.
# No groups, so findall builds no tuples: the reader tells kinds apart by first character.
_TOKEN: Final = re.compile(
    rf"[cC]\+\+|[cCfF]#|[{_CASED}]+(?:['\u2019.\-&][{_CASED}]+)*|\.NET(?![{_CASED}])"
    r"|[.!?\u2026\u3002\uff01\uff1f:]+|\n"
    rf"|[^\W_{_CASED}]+"
    r"|\S"
)
_CASED_LETTER: Final = re.compile(f"[{_CASED}]")
_END_MARKS: Final = frozenset(".!?\u2026\u3002\uff01\uff1f:\n")
_OPENING_MARKS: Final = frozenset("\"'([\u00ab\u201c\u201e\u2018")
_WORD, _END, _CASELESS, _AMP, _OPEN, _MARK = range(6)
_NAME, _TITLE, _JOIN, _SOFT = range(4)  # roles of a token in a run


@dataclass(slots=True)
class _Entity:
    """One entity of a text while it is being read: its mentions' sum and its cues."""

    key: str
    name: str
    first: int
    score: float = 0.0
    cues: list[_Cue] = field(default_factory=list)

    def best(self) -> _Cue:
        best: _Cue = (0, "other")
        for cue in self.cues:
            if cue[0] > best[0]:
                best = cue
        return best


# Capitalised words in a row (rule 1), kept until the whole text is read: their tokens,
# their roles, whether the first begins a sentence, and whether the run is its sentence's
# first name, before any content word.
_Run = tuple[list[int], list[int], bool, bool]


class _Reader:
    """Reads one text, in one pass, into entities (rules 1 to 5 of the module docstring).

    The tokens are kept as parallel lists; runs of capitalised words are judged once the
    whole text is read, since a sentence-start word is judged by the words after it."""

    def __init__(self, text: str, cues: _Cues) -> None:
        self.text = text
        self.cues = cues
        self.kinds: list[int] = []
        self.texts: list[str] = []
        self.folds: list[str] = []
        """Case folded, ``\u2019`` as ``'``, possessive removed; ``""`` for no word."""
        self.lower: set[str] = set()
        """The words written in lower case."""
        self.runs: list[_Run] = []
        self.entities: dict[str, _Entity] = {}
        self.case_cues = True

    def add(
        self,
        name: str,
        position: int,
        subject: bool,
        cues: Iterable[_Cue],
        key: str | None = None,
    ) -> None:
        """Count a mention of ``name`` (``position``: its first token; ``key``: its alias
        key, if known): 1, or 1.5 as its sentence's subject."""
        if key is None:
            key = alias_key(name)
        if len(key) < 2:
            return
        entity = self.entities.get(key)
        if entity is None:
            entity = self.entities[key] = _Entity(key, name, position)
        entity.score += 1.5 if subject else 1.0
        entity.cues.extend(cues)

    def read(self) -> None:
        """Tokenise the text and gather its runs and its lower-case tool names."""
        cues = self.cues
        kinds, texts, folds, lower = self.kinds, self.texts, self.folds, self.lower
        connectors, titles, blocked = cues.connectors, cues.titles, cues.blocked
        runs = self.runs
        caseless = words = capitals = 0
        run: list[int] = []
        roles: list[int] = []
        named = False  # the run holds a name word
        run_at_start = at_start = True
        content = False  # a content word was seen in this sentence
        names = 0  # runs closed in this sentence
        i = -1
        for piece in _TOKEN.findall(self.text):
            first = piece[0]
            if not (
                (first.isalnum() and (first < "\u0250" or _CASED_LETTER.match(first)))
                or piece == ".NET"
            ):
                i += 1
                texts.append(piece)
                folds.append("")
                if first == "&" and named:
                    kinds.append(_AMP)
                    run.append(i)
                    roles.append(_JOIN)
                    continue
                if (
                    piece == "."
                    and run
                    and (roles[-1] == _TITLE or (roles[-1] == _NAME and len(texts[i - 1]) == 1))
                ):
                    kinds.append(_END)
                    run.append(i)  # "Dr." or "J.": no sentence end
                    roles.append(_SOFT)
                    continue
                if run:
                    runs.append((run, roles, run_at_start, not content and not names))
                    names += 1
                    run, roles, named = [], [], False
                if first in _END_MARKS:
                    kinds.append(_END)
                    at_start, content, names = True, False, 0
                elif first.isalnum():
                    kinds.append(_CASELESS)
                    at_start, content = False, True
                    caseless += len(piece)
                elif first in _OPENING_MARKS:
                    kinds.append(_OPEN)
                    at_start = True
                else:
                    kinds.append(_MARK)
                continue
            if "'" in piece or "\u2019" in piece:
                cut = min(j for j in (piece.find("'"), piece.find("\u2019")) if j >= 0)
                head = piece[:cut]
                if _fold(head) in _ELIDED and (head.islower() or cues.elisions):
                    i += 1
                    kinds.append(_WORD)  # "l'Italie": "l'", then "Italie"
                    texts.append(piece[: cut + 1])
                    folds.append(_fold(head))
                    if run:
                        runs.append((run, roles, run_at_start, not content and not names))
                        names += 1
                        run, roles, named = [], [], False
                    at_start = False
                    piece = piece[cut + 1 :]
            i += 1
            kinds.append(_WORD)
            texts.append(piece)
            fold = piece.casefold()
            if "\u2019" in fold:
                fold = fold.replace("\u2019", "'")
            if fold.endswith("'s"):
                fold = fold[:-2]
            folds.append(fold)
            words += 1
            low = piece.islower()
            if not low and (
                piece[0].isupper() or (len(piece) > 3 and piece[1].isupper())
            ):  # "Ada", "IBM", "iPhone"
                if len(piece) > 1 and piece.isupper():
                    capitals += 1
                if named and fold in connectors:
                    role = _JOIN
                elif fold in titles:
                    role = _TITLE
                    if named:
                        runs.append((run, roles, run_at_start, not content and not names))
                        names += 1
                        run, roles, named = [], [], False
                elif fold in blocked:
                    if run:
                        runs.append((run, roles, run_at_start, not content and not names))
                        names += 1
                        run, roles, named = [], [], False
                    at_start = False
                    continue
                else:
                    role = _NAME
                    named = True
                if not run:
                    run_at_start = at_start
                run.append(i)
                roles.append(role)
                at_start = False
                continue
            if low:
                lower.add(fold)
            elif piece.isdigit():
                words -= 1
                if run:
                    runs.append((run, roles, run_at_start, not content and not names))
                    names += 1
                    run, roles, named = [], [], False
                at_start = False
                continue
            if named and fold in connectors:
                run.append(i)  # "da" in "Ana da Silva"; dropped if no name follows
                roles.append(_JOIN)
                continue
            if run:
                runs.append((run, roles, run_at_start, not content and not names))
                names += 1
                run, roles, named = [], [], False
            at_start = False
            if fold in _TOOLS_ANY_CASE:
                self.add(piece, i, not content and not names, ((4, "tool"),))
                names += 1
            elif fold not in blocked:
                content = True
        if run:
            runs.append((run, roles, run_at_start, not content and not names))
        # More caseless letters (CJK ...) than cased ones, or mostly capitals: no case cues
        # (rule 8). Cased letters are counted only when there are caseless ones.
        cased = 0
        if caseless:
            cased = sum(len(t) for t, k in zip(texts, kinds, strict=True) if k == _WORD)
        self.case_cues = caseless <= cased and not (words >= 4 and 2 * capitals > words)

    def judge(self) -> None:
        """Turn the runs into mentions: names with cues where the text has case cues, else
        only the tool names among their words (rule 8)."""
        if self.case_cues:
            for run in self.runs:
                self.finish(run)
            return
        for tokens, roles, _, subject in self.runs:
            for j, role in zip(tokens, roles, strict=True):
                token, fold = self.texts[j], self.folds[j]
                if role == _NAME and (
                    fold in _TOOLS_ANY_CASE
                    or (fold in _TOOLS_CAPITALISED and not token.isupper())
                ):
                    self.add(token, j, subject, ((4, "tool"),))

    def passes_start(self, index: int, alone: bool) -> bool:
        """Whether the word at ``index``, first of its sentence (``alone``: the only word of
        its run), may be a name (rule 3)."""
        folds, cues = self.folds, self.cues
        fold = folds[index]
        if fold in cues.start:
            return False
        after = index + 1
        following = folds[after] if after < len(folds) and self.kinds[after] == _WORD else ""
        if (1, "person") in cues.after.get(following, ()):
            return True  # "Mohamed moved", "Rose said": a person's verb follows
        if fold in self.lower:
            return False
        if cues.suffix_rule and len(fold) >= 6 and fold.endswith(("ed", "ing")):
            return False
        return not (alone and following in cues.objects and not _owner(self.texts[index]))

    def finish(self, run: _Run) -> None:
        """Turn a run of tokens into a mention, or into nothing (rules 1 to 4)."""
        tokens, roles, at_start, subject = run
        if _NAME not in roles:
            return
        folds = self.folds
        titled = roles[0] == _TITLE
        names = [token for token, role in zip(tokens, roles, strict=True) if role == _NAME]
        if (
            at_start
            and not titled
            and not self.passes_start(names[0], len(names) == 1)
            and self.surface(names[0], names[-1])[1] not in _KNOWN
        ):
            names = names[1:]  # "Visited Porto": a verb, then the name
            subject = False
            if not names:
                return
        if len(names) > MAX_NAME_WORDS:
            return
        start, end = tokens[0] if titled else names[0], names[-1]
        name, key = self.surface(names[0], end)
        if len(names) > 1 and key not in _TOOLS and all(folds[j] in _TOOLS for j in names):
            for j in names:  # "Python Django": two tools side by side
                self.add(self.texts[j], j, subject, ((4, "tool"),))
            return
        found: list[_Cue] = []
        if titled:
            found.append((5, "person"))
        if len(names) > 1:
            words = [folds[j] for j in names]
            if words[0] in _PROJECT_WORDS or words[-1] in _PROJECT_WORDS:
                found.append((5, "project"))
            if not _ORGANISATION_WORDS.isdisjoint(words):
                found.append((5, "organisation"))
            if not _PLACE_WORDS.isdisjoint(words):
                found.append((5, "place"))
        self.context(start, end, found)
        self.add(name, names[0], subject, found, key)

    def surface(self, first: int, last: int) -> tuple[str, str]:
        """The name from token ``first`` to ``last`` as written (one space between words,
        none before a dot), without a possessive, and its alias key."""
        texts = self.texts
        name = texts[first]
        if last > first:
            name = " ".join(texts[first : last + 1]).replace(" .", ".")
        if _owner(name):
            name = name[:-2]
        return name, alias_key(name)

    def context(self, start: int, end: int, found: list[_Cue]) -> None:
        """Add the cues of the words around the name from token ``start`` to ``end``."""
        cues, kinds, folds = self.cues, self.kinds, self.folds
        j = start - 1
        if j >= 0 and kinds[j] == _WORD:
            word = folds[j]
            if word in cues.articles and j > 0 and kinds[j - 1] == _WORD:
                j -= 1
                word = folds[j]
            found.extend(cues.before.get(word, ()))
            for verbs, cue in cues.verbs.get(word, ()):
                k = j - 1
                if k >= 0 and kinds[k] == _WORD and folds[k] in cues.particles:
                    k -= 1
                if k >= 0 and kinds[k] == _WORD and folds[k] in verbs:
                    found.append(cue)
        elif j >= 1 and self.texts[j] == "," and folds[j - 1] in cues.relations:
            found.append((4, "person"))  # "my sister, Ana"
        after = end + 1
        if after < len(kinds) and kinds[after] == _WORD:
            word = folds[after]
            found.extend(cues.after.get(word, ()))
            if word in cues.relations and _owner(self.texts[end]):
                found.append((4, "person"))  # "Tom's wife"


def _owner(word: str) -> bool:
    """Whether ``word`` ends in a possessive ``'s``."""
    return word.endswith(("'s", "\u2019s", "'S", "\u2019S"))


def _links(entities: list[_Entity]) -> dict[str, str]:
    """For each short name that stands for exactly one longer name of the text, that name's
    key (rule 6): ``{"tom": "tom becker"}``."""
    index: dict[str, set[str]] = {}
    for entity in entities:
        if " " in entity.key:
            for alias in _short_forms(entity.key):
                index.setdefault(alias, set()).add(entity.key)
    if not index:
        return {}
    links: dict[str, str] = {}
    by_key = {entity.key: entity for entity in entities}
    for entity in entities:
        words = entity.key.split()
        candidates = set(index.get(entity.key, ()))
        if len(words) == 1 and _capitals(entity.name) >= 2:
            candidates |= index.get("\x00" + entity.key, set())
        candidates.discard(entity.key)
        if len(candidates) != 1:
            continue
        target = by_key[candidates.pop()]
        if len(target.key.split()) <= len(words):
            continue
        mine, theirs = entity.best()[1], target.best()[1]
        if mine == theirs or "other" in (mine, theirs):
            links[entity.key] = target.key
    return links


def _capitals(name: str) -> int:
    return sum(1 for c in name if c.isupper())


def _core(words: list[str]) -> list[str]:
    """A name's words without leading titles and trailing legal forms."""
    low, high = 0, len(words)
    while low < high - 1 and words[low] in _ALL_TITLES:
        low += 1
    while high > low + 1 and words[high - 1] in _LEGAL_FORMS:
        high -= 1
    return words[low:high]


def _personal(words: list[str]) -> bool:
    """Whether a name of several words can be a person's (its first and last words may then
    stand for it)."""
    return (
        len(words) <= 4
        and " ".join(words) not in _KNOWN
        and _ORGANISATION_WORDS.isdisjoint(words)
        and _PLACE_WORDS.isdisjoint(words)
        and _PROJECT_WORDS.isdisjoint(words)
    )


@lru_cache(maxsize=8192)
def _short_forms(key: str) -> frozenset[str]:
    """The shorter names that can stand for a name of several words (``key``: its alias
    key): its core, its first and last words if it is a person's, and (marked with
    ``\\x00``, to be matched only by a name written in capitals) its initials."""
    core = _core(key.split())
    forms = {" ".join(core)}
    if len(core) > 1 and _personal(core):
        forms.update(w for w in (core[0], core[-1]) if len(w) > 1 and w not in _INITIALISM_SKIPS)
    if len(core) > 1:
        forms.add("\x00" + "".join(w[0] for w in core))
        kept = [w for w in core if w not in _INITIALISM_SKIPS]
        if len(kept) > 1:
            forms.add("\x00" + "".join(w[0] for w in kept))
    return frozenset(forms)


def same_entity(a: str, b: str) -> bool:
    """Whether names ``a`` and ``b`` can be one entity (symmetric).

    True when their :func:`alias_key` is equal; or equal without leading titles and trailing
    legal forms (``"Dr Becker"`` and ``"Becker"``, ``"Siemens AG"`` and ``"Siemens"``); or one
    is one word, at least two letters, equal to the first or last word of the other, a name
    of two to four words that can be a person's (no organisation, place or project word, not
    on the built-in lists): ``"Tom"`` and ``"Becker"`` are ``"Tom Becker"``, ``"Tom"`` is not
    ``"Tomas"``; or one is one word written with two capitals or more whose letters are the
    initials of the other's words, with or without its small words (``of``, ``the``, ``&``
    ...): ``"IBM"`` is ``"International Business Machines"``, ``"BoA"`` ``"Bank of
    America"``. Empty names are no entity.
    """
    key_a, key_b = alias_key(a), alias_key(b)
    if not key_a or not key_b:
        return False
    if key_a == key_b:
        return True
    words_a, words_b = key_a.split(), key_b.split()
    if _core(words_a) == _core(words_b):
        return True
    if len(words_a) > len(words_b):
        (short, short_name), long = (words_b, b), words_a
    else:
        (short, short_name), long = (words_a, a), words_b
    if len(short) != 1 or len(long) < 2:
        return False
    forms = _short_forms(" ".join(long))
    return short[0] in forms or (_capitals(short_name) >= 2 and "\x00" + short[0] in forms)


def mentions(text: str, language: str = "english") -> list[Mention]:
    """Entities named in ``text``, most weighty first (ties: first appearance), one per
    distinct alias key, at most :data:`MAX_MENTIONS` (the rules, weights and weaknesses are
    in the module docstring). ``language`` is one of ``_text.LANGUAGES``
    (:class:`InvalidInputError` otherwise); empty or blank text has none."""
    cues = _CUES[check_language(language)]
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    if not text.strip():
        return []
    reader = _Reader(text, cues)
    reader.read()
    reader.judge()
    for entity in reader.entities.values():
        if entity.key in _TOOLS:
            entity.cues.append((4, "tool"))
        elif entity.key in _ORGANISATIONS:
            entity.cues.append((4, "organisation"))
        elif entity.key in _PLACES:
            entity.cues.append((3, "place"))
    entities = reader.entities
    links = _links(list(entities.values()))
    for key in list(entities):
        target = key
        while target in links:  # "Siemens" -> "Siemens AG" -> "Siemens AG Inc"
            target = links[target]
        if target != key:
            entity, into = entities.pop(key), entities[target]
            into.score += entity.score
            into.cues.extend(entity.cues)
            into.first = min(into.first, entity.first)
    typed: list[tuple[_Entity, EntityType]] = []
    for entity in entities.values():
        strength, kind = entity.best()
        if not (cues.nouns_capitalised and strength == 0 and " " not in entity.key):
            typed.append((entity, kind))  # German: a capitalised word alone is a noun
    top = max((entity.score for entity, _ in typed), default=1.0)
    kept: list[tuple[float, int, str, EntityType]] = []
    for entity, kind in typed:
        score = entity.score
        weight = round(score / (score + 1) * (0.5 + 0.5 * score / top), 4)
        kept.append((weight, entity.first, entity.name, kind))
    kept.sort(key=lambda item: (-item[0], item[1]))
    return [Mention(name, kind, weight) for weight, _, name, kind in kept[:MAX_MENTIONS]]
