"""The default extractor of ``learn``: a conversation's durable facts about the person, by rules.

:func:`extract` reads :class:`Turn` s and returns :class:`Candidate` s, the memories a caller
may form from them. Pure and offline: English sentence segmentation and regular expressions,
no model, no I/O, no clock (``now`` comes in). Precision is preferred to recall: a sentence
forms a memory only when one of the patterns below says it is a durable fact about the
person; anything else is chit-chat and forms nothing.

**Reading a turn.** The text is NFKC-normalised, stripped of invisible characters and emoji,
its curly apostrophes made straight, and split into sentences at ``. ! ? …`` and line
breaks (not after ``Dr.``, ``St.``, ``e.g.`` or an initial). Each sentence is cleaned:
fillers at its start (``oh, by the way,``, ``so,``, ``haha``, ``quick update:``, ``thanks,``)
and end (``haha``, ``lol``, ``btw``, ``though``) are dropped, a lone ``i`` is written ``I``,
the first letter is capitalised and a full stop added. The stored text is that sentence,
with its relative dates resolved (:func:`mainsdk_memory._dates.resolve`: the words stay as
said and their date follows them, ``next Friday`` said on 2026-12-01 is written ``next
Friday (2026-12-11)``, ``tomorrow`` ``tomorrow (2026-12-02, Wednesday)``); the date it names
becomes the candidate's ``valid_from`` when it points back (``since March``, ``I moved last
week``). A plan's date stays in the text only: a plan holds from when it is said. A
yearless date of birth (``I was born on March 3rd``) stays as said, with no ``valid_from``.

**User turns.** A sentence forms nothing when it is a question (``?``, or ``what``, ``can
you`` ... first), a request to the assistant (``can you``, ``write me``, ``find`` ...), a
hypothetical (``if I were``, ``I wish``, ``imagine``, ``I would``, ``I might``), a guess or
opinion (``I think``), a joke (``just kidding`` forms nothing, and takes back the fact said
just before), a passing mood or state (``I'm tired today``, ``I'm a bit stressed``, ``I'm in
a hurry``), or says nothing about the person (the weather, world facts, other people's
opinions). Otherwise it forms a memory when it matches one of these families, tried in
this order (its kind in brackets):

- *name*: ``I'm Dana``, ``my name is``, ``call me Sam`` (fact; ``call me`` a preference);
- *what suits them*: ``mornings are best for me``, ``email is best``, ``the best way to
  reach me is ...`` (preference), ``shellfish makes me sick`` (fact);
- *how to be served*: an instruction that lasts (``always``, ``never``, ``from now on``,
  ``by default``), a reply language (``answer in German``), how to be contacted (``don't
  call me before 9am``, ``text me on Signal``), ``I want you to always ...`` (preference);
- *likes*: ``I prefer``, ``I love``, ``I can't stand``, ``I'm not a fan of``, ``my
  favourite ...`` (preference), not about the conversation itself (``I love this``,
  ``I like your idea``) nor a request (``I'd like a table``);
- *routines*: ``when I travel, I always book ...``, ``if I'm late, text my wife``
  (procedure);
- *plans and events*: ``I'm flying to ...``, ``we're moving ...``, ``I'm starting ...``, ``I
  have an exam ...``, ``I'll be in Paris next week``, ``my flight leaves ...``, ``my sister
  is visiting this Saturday``, ``we got married``, ``I started a new job``, and any other
  first-person sentence with a date (event);
- *who they are and what they have*: ``I'm a nurse``, ``I'm allergic to``, ``I'm from``,
  ``I'm 34``, ``I work at``, ``I live in``, ``I have two cats``, ``I can swim``, ``I don't
  drink``, ``I no longer eat meat``, ``I used to live in``, ``I've been vegan since ...``,
  habits (``I go running every morning``, ``I'm usually not home on weekdays``), and facts
  about their people and things (``my daughter is called Mia``, ``my wife Anna works at
  Google``, ``my email is ...``), not about someone else's (``my friend's cousin ...``)
  (fact); a state for today only (``I'm working from home today``) forms nothing;
- *goals*: ``I'm trying to lose weight``, ``I want to learn``, ``I'm saving for``, ``I'm
  looking for a new job``, and a dated obligation (``I need to renew my passport before
  March``) (note).

**Short answers.** A user turn that forms nothing by itself but answers the question the
assistant just asked about the person (its name, home, origin, work, age, allergies, diet,
children or pets, birthday, contact details, an order number, a favourite) is written as
the fact it gives: ``Where are you based?`` then ``Manchester`` forms ``I live in
Manchester.``; a refusal or a question back (``I'd rather not say``, ``why?``) forms
nothing. A sentence said without its subject (``Allergic to penicillin``, ``Love hiking``,
``Been vegan since 2018``) is read, and written, with ``I``.

**She, he, it, they.** A user sentence that forms nothing and opens with a pronoun is read
with the last of the person's people or things named before it (in this turn or the two
user turns before), when the pronoun fits (``she`` not for a husband, ``it`` for a thing or
a pet, ``they`` for kids or parents; a pet once called ``she`` is not ``he``), and written
so: ``My dog Luna has hip dysplasia.`` then ``She's 9.`` forms ``My dog Luna is 9.``

**Splitting.** A sentence is cut where a new first-person clause begins (``, I ...``,
``and my ...``, ``; we ...``) and before ``and`` + a fact verb (``I live in Lyon and work at
Siemens`` gives ``I work at Siemens``), but only when each part forms a memory on its own; a
part that forms none stays with its neighbour (``I'm allergic to peanuts, so please keep
that in mind`` is one memory).

**Assistant turns** form at most what the assistant reports having done for the person or
states about them: ``I've booked your table ...``, ``Your appointment is confirmed for
...``, ``You're registered for ...``, ``I've set a reminder for the vet visit ...``, ``I've
noted that you ...``, ``Got it, you're vegetarian`` (event when it holds a date, a booking or
a reminder, else fact). Suggestions (``you could``, ``I recommend``), offers and promises
(``I can``, ``I'll``), questions and general knowledge form nothing.

**Tool turns** form only declarative facts about the customer: a ``key: value`` line whose
key names the customer, their account, plan, order or booking (``Account status: premium
since 2024``; a JSON object is read as such lines, ``customer city: Braga``), or a sentence
naming the customer (``the customer``, ``the user``) or an order, booking or ticket by its
number, with a verb of fact (``Order 1234 shipped to the customer's address in Porto``).

Every candidate is at most :data:`MAX_CANDIDATE_CHARS` characters (a longer sentence is cut
at its clauses; a clause still longer forms nothing), and one text forms one candidate per
conversation (compared case-insensitively).

**Tuning.** The patterns were written on ``tools/learn_dev_set.py`` (``python
tools/learn_dev_set.py`` prints recall and precision there); its later batches were scored
before the rules were tuned on them, which is the fairest estimate this set gives (see its
docstring). The measurement is a separate, held-out set in ``benchmarks/``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Literal

from mainsdk_memory._dates import is_past, resolve

__all__ = ["MAX_CANDIDATE_CHARS", "Candidate", "CandidateKind", "Role", "Turn", "extract",
           "sentences"]

Role = Literal["user", "assistant", "tool"]
CandidateKind = Literal["fact", "preference", "event", "procedure", "note"]

#: The longest memory text a candidate holds.
MAX_CANDIDATE_CHARS: Final = 500


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, as the extractor reads it."""

    role: Role
    text: str
    index: int
    """Its position in the conversation."""
    at: datetime | None = None
    """When it was said, if the message said; else the conversation's ``now``."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory the extractor proposes: the caller remembers it through formation."""

    text: str
    """The memory text: the sentence as said, lightly cleaned, its dates in ISO form."""
    kind: CandidateKind
    role: Role
    """Whose turn it came from."""
    turn: int
    """The :attr:`Turn.index` it came from."""
    valid_from: datetime | None = None
    """When the fact began, if the text says (``since March``, ``I moved last week``)."""


# -- normalising and segmenting --------------------------------------------------------------

_INVISIBLE: Final = re.compile(r"[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_APOSTROPHES: Final = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_EMOTICON: Final = re.compile(r"(?<!\w)(?:[:;=8xX]-?[()DPpOo3/\\|\]\[]+|<3+|\^_?\^)(?!\w)")
_SPACES: Final = re.compile(r"[ \t\f\v\u00a0]+")


def _strip_symbols(text: str) -> str:
    """Emoji and other pictographs out (category So and the variation selectors)."""
    if text.isascii():
        return text
    return "".join(
        char for char in text
        if unicodedata.category(char) != "So" and not 0xFE00 <= ord(char) <= 0xFE0F
        and char != "\u200d"
    )


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _INVISIBLE.sub("", text).translate(_APOSTROPHES)
    text = _strip_symbols(text)
    if any(mark in text for mark in ":;=<^"):
        text = _EMOTICON.sub(" ", text)
    return _SPACES.sub(" ", text) if "  " in text or "\t" in text or "\xa0" in text else text


_ABBREVIATIONS: Final = frozenset(
    "mr mrs ms dr prof st mt jr sr vs etc e.g i.e eg ie approx no nr inc ltd co corp dept ave "
    "rd fig est min max a.m p.m u.s u.k jan feb mar apr jun jul aug sep sept oct nov dec "
    "mon tue tues wed thu thurs fri sat sun".split()
)
_BOUNDARY: Final = re.compile(r"[.!?\u2026]+[\"')\]\u201d]*(?=\s)|\n+")


def sentences(text: str) -> list[str]:
    """``text`` (already normalised) cut into sentences, each stripped, none empty."""
    out: list[str] = []
    start = 0
    for found in _BOUNDARY.finditer(text):
        mark = found.group()
        if mark[0] == ".":
            word = text[start : found.start()].rsplit(None, 1)
            last = word[-1].lower().lstrip("(\"'") if word else ""
            if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
                continue  # "St. Mary's", "R. Silva"
        piece = text[start : found.end()].strip()
        if piece:
            out.append(piece)
        start = found.end()
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


_LEADING_FILLER: Final = re.compile(
    r"^(?:(?:oh+|ah+|um+|uh+|er+m?|hmm+|well|so|anyway|anyways|anyhow|btw|also|and|plus|hey|"
    r"hi|hello|yeah|yes|yep|ok|okay|k|actually|honestly|basically|haha+|hah|hehe+|lol|lmao|"
    r"fyi|just\s+so\s+you\s+know|by\s+the\s+way|for\s+the\s+record|as\s+i\s+said|"
    r"like\s+i\s+said|as\s+i\s+mentioned|as\s+mentioned|to\s+be\s+honest|tbh|"
    r"quick\s+update|update|side\s+note|oh\s+yeah|just\s+fyi|ps|p\.s\.)"
    r"(?:\s*[,.:;!\u2014\u2013-]+\s*|\s+)"
    r"|(?:thanks|thank\s+you|cool|great|nice|awesome|perfect|sure|alright|right|no|nope|sorry|"
    r"wow|good|fine|true|exactly|indeed|oops|ugh|argh|damn|dear|listen|look|guess\s+what)"
    r"(?:\s*[,.:;!\u2014\u2013-]+\s*))+",
    re.IGNORECASE,
)
#: "Remember that ...", "note: ...": the fact is what follows.
_UNWRAP: Final = re.compile(
    r"^(?:please\s+)?(?:(?:always\s+)?remember|note|keep\s+in\s+mind|bear\s+in\s+mind|"
    r"don't\s+forget|never\s+forget|make\s+a\s+note|take\s+note|for\s+(?:future\s+)?"
    r"reference|you\s+should\s+know|i\s+should\s+(?:mention|say|tell\s+you)|"
    r"i\s+forgot\s+to\s+(?:mention|say|tell\s+you)|i\s+wanted\s+to\s+(?:mention|say|tell\s+"
    r"you|let\s+you\s+know)|i\s+want\s+you\s+to\s+know|let\s+me\s+tell\s+you|"
    r"i\s+(?:have|need|must)\s+to\s+tell\s+you|just\s+(?:a\s+)?heads\s+up|heads\s+up|"
    r"fun\s+fact|for\s+context|some\s+context|background|about\s+me)"
    r"(?:\s+(?:that|this))?(?:\s*[,:;\u2014-]\s*|\s+)(?=(?:i|we|my|our|i'm|i've)\b)",
    re.IGNORECASE,
)
_TRAILING_FILLER: Final = re.compile(
    r"(?:(?:,\s*|\s+)(?:haha+|hah|hehe+|lol|lmao|rofl|xd|btw|by\s+the\s+way|though|tbh|"
    r"honestly|fyi|just\s+so\s+you\s+know|for\s+the\s+record|anyway)\b)+\s*([.!?]*)\s*$",
    re.IGNORECASE,
)
_INNER_FILLER: Final = re.compile(
    r"(?:,\s*|\s+)(?:btw|by\s+the\s+way|haha+|lol|lmao|fyi)\b(?=\s*[,;:])", re.IGNORECASE
)
_LOWER_I: Final = re.compile(r"(?<![\w'])i(?=(?:'m|'ve|'d|'ll)?(?![\w']))|(?<![\w'])im(?![\w'])")


def _clean(sentence: str) -> str:
    """The sentence without fillers, ``I`` capitalised; no end punctuation added yet."""
    text = sentence.strip().strip("\"'\u201c\u201d*_~-").strip()
    for _ in range(3):
        before = text
        text = _LEADING_FILLER.sub("", text).strip()
        text = _UNWRAP.sub("", text).strip()
        last = _LAST_WORD.search(text)
        if last is not None and last[1].lower() in _TRAILING_WORDS:  # the costly search, rarely
            text = _TRAILING_FILLER.sub(r"\1", text).strip()
        if text == before:
            break
    lowered = text.lower()
    if any(word in lowered for word in ("btw", "by the way", "haha", "lol", "lmao", "fyi")):
        text = _INNER_FILLER.sub("", text)
    if " i" in f" {lowered}" or "im " in lowered:
        text = _LOWER_I.sub(_capital_i, text)
    text = _SPACE_BEFORE_MARK.sub(r"\1", text)
    text = _REPEATED_END.sub(r"\1", text)
    return text.strip(" ,;:-\u2014\u2013")


def _capital_i(found: re.Match[str]) -> str:
    return "I'm" if found.group().lower() == "im" else "I"


_LAST_WORD: Final = re.compile(r"(\w+)\W*$")
#: Last words of the fillers :data:`_TRAILING_FILLER` drops.
_TRAILING_WORDS: Final = frozenset(
    "haha hahaha hahahaha hah hehe hehehe lol lmao rofl xd btw way though tbh honestly fyi know "
    "record anyway".split()
)
_SPACE_BEFORE_MARK: Final = re.compile(r"\s+([,.;:!?])")
_REPEATED_END: Final = re.compile(r"([!?.])\1+$")


#: What :func:`_finish` strips from the ends of a memory text.
_ENDS: Final = " ,;:-\u2014\u2013"


def _finish(text: str) -> str:
    """Capitalised, ending in a full stop unless it ends in ``. ! ?``."""
    text = text.strip(_ENDS)
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


# -- words ------------------------------------------------------------------------------------

_I = re.IGNORECASE
_WD: Final = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTH: Final = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
)
_NUMBER_WORD: Final = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+couple\s+of"
    r"|several|a\s+few)"
)
#: Adverbs that may stand between a subject and its verb.
_ADV: Final = (
    r"(?:(?:really|also|actually|currently|now|still|just|recently|finally|usually|always|"
    r"never|often|sometimes|generally|mostly|definitely|absolutely|totally|truly|kind\s+of|"
    r"sort\s+of|do|does|did|even|only|mainly|officially|already|both|all|honestly|literally|"
    r"seriously|genuinely|personally|typically|normally|rarely|basically|pretty\s+much|"
    r"exclusively|primarily|very\s+much|certainly|obviously|happily|proudly|occasionally|"
    r"regularly|mostly|hardly\s+ever|also\s+still|still\s+also)\s+)*"
)
#: A first-person subject, before a verb or a contraction (``I love``, ``I'm into``).
_IWE: Final = r"^(?:i|we)(?:\s+|(?='))"
#: What may open a clause before its subject: a joining word, or a time (``Next month I ...``).
_OPENER: Final = re.compile(
    r"^(?:(?:and|but|so|also|plus|now|then|today|currently|recently|finally|luckily|sadly|"
    r"unfortunately|fortunately|actually|anyway|besides|meanwhile|oh|well|btw|these\s+days|"
    r"nowadays|at\s+the\s+moment|right\s+now|since\s+then|as\s+of\s+now|both|all|"
    r"(?:one|two|three|all|each|both|most|some)\s+of)\b[\s,]*)*"
    r"(?:(?:(?:on|in|since|by|from|until|after|before|around|over|during|starting|as\s+of|"
    r"early|late)\s+)?(?:(?:the|this|next|last|coming|past|early|late|mid|end\s+of|"
    r"beginning\s+of|start\s+of|day\s+after|day\s+before)\s+)*"
    r"(?:tomorrow|yesterday|today|tonight|" + _WD + r"|weekend|week|month|year|spring|summer|"
    r"autumn|fall|winter|morning|evening|night|afternoon|" + _MONTH + r"|christmas|"
    r"\d{4}|\d{1,2}(?:st|nd|rd|th)?|" + _NUMBER_WORD + r"\s+(?:days?|weeks?|months?|years?)"
    r"(?:\s+ago)?)(?:\s+(?:\d{1,2}(?:st|nd|rd|th)?|\d{4}|morning|evening|night|afternoon|ago|"
    r"of\s+" + _MONTH + r"))*[\s,]+)?",
    _I,
)

_RELATION: Final = (
    r"(?:wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|spouse|son|sons|daughter|"
    r"daughters|kids?|child|children|baby|babies|twins|toddler|teenager|mom|mum|mother|mommy|"
    r"mummy|dad|father|daddy|parents|brother|brothers|sister|sisters|siblings?|grandma|"
    r"grandmother|grandpa|grandfather|grandparents|grandson|granddaughter|grandkids|"
    r"grandchildren|aunt|uncle|cousin|niece|nephew|in-laws|mother-in-law|father-in-law|"
    r"sister-in-law|brother-in-law|stepson|stepdaughter|stepmom|stepdad|dog|dogs|cat|cats|"
    r"puppy|kitten|pets?|horse|parrot|rabbit|bunny|hamster|goldfish|tortoise|turtle|"
    r"best\s+friend|friend|roommate|flatmate|housemate|boss|manager|colleague|coworker|"
    r"co-worker|team|company|employer|doctor|therapist|landlord|landlady|neighbou?r|family|"
    r"household|fiance|husband-to-be|wife-to-be)"
)
_ATTRIBUTE: Final = (
    r"(?:name|birthday|email|e-mail|phone|number|mobile|address|job|role|title|occupation|"
    r"profession|salary|hometown|home\s+town|home|house|flat|apartment|car|bike|motorbike|"
    r"major|degree|school|university|college|native\s+language|first\s+language|"
    r"mother\s+tongue|language|blood\s+type|size|diet|allergy|allergies|pronouns|religion|"
    r"nationality|zodiac\s+sign|star\s+sign|username|handle|time\s*zone|age|height|goal|"
    r"goals|dream|hobby|hobbies|passion|routine|schedule|shift|shifts|hours|commute|"
    r"due\s+date|wedding|anniversary|exam|exams|test|interview|appointment|surgery|operation|"
    r"flight|trip|holiday|vacation|party|graduation|move|lease|contract|deadline|"
    r"presentation|concert|match|game|race|marathon|class|course|lesson|conference|visa|"
    r"passport|licen[cs]e|subscription|membership|plan|insurance|mortgage|rent|check-?up|"
    r"train|bus|ferry|office|workplace|team|station|gym|budget|favou?rite\s+\w+)"
)
_EVENT_NOUN: Final = (
    r"(?:exam|exams|test|interview|appointment|surgery|operation|flight|trip|holiday|vacation|"
    r"party|graduation|wedding|move|deadline|presentation|concert|match|game|race|marathon|"
    r"class|course|lesson|conference|meeting|check-?up|date|shift|reservation|booking|"
    r"session|consultation|procedure|scan|ultrasound|visit|funeral|ceremony|recital|gig|"
    r"audition|hearing|court\s+date|orientation|competition|tournament|retreat|"
    r"baby\s+shower|hen\s+do|stag\s+do|bachelorette|bachelor\s+party)"
)
#: Transient states: ``I'm <one of these>`` (after its adverbs) is a mood, not a fact.
_TRANSIENT: Final = (
    r"(?:tired|exhausted|sleepy|hungry|starving|thirsty|bored|sad|happy|glad|excited|stressed|"
    r"anxious|nervous|worried|cold|hot|freezing|sick|ill|unwell|poorly|grumpy|annoyed|upset|"
    r"angry|mad|furious|frustrated|busy|late|early|done|finished|fine|good|great|well|ok|okay|"
    r"alright|all\s+right|awesome|sorry|confused|lost|ready|back|here|home|away|out|free|"
    r"available|curious|sure|unsure|not\s+sure|wondering|thinking|looking|trying\s+(?!to)|"
    r"fed\s+up|overwhelmed|lonely|cranky|hungover|jet-?lagged|sore|in\s+a\s+hurry|"
    r"on\s+my\s+way|running\s+late|off|tipsy|drunk|full|stuffed|relieved|thrilled|"
    r"delighted|pleased|impressed|surprised|shocked|scared(?!\s+of)|afraid(?!\s+of)|"
    r"kidding|joking|serious|listening|waiting|wide\s+awake|awake|up|bit|little|tad|"
    r"feeling|so|very|super|pretty|quite|too|extremely|kind\s+of|sort\s+of|a\s+bit|"
    r"a\s+little|doing|having\s+a|stuck|struggling|fuming|buzzing|knackered|beat|shattered|"
    r"starved|dying|dead|gutted|heartbroken|devastated|disappointed|embarrassed|ashamed|"
    r"proud|grateful|thankful|honou?red|amazed|speechless|in\s+(?:a\s+)?(?:good|bad|great)\s+"
    r"mood|in\s+love\s+with\s+(?:this|that|it))"
)

# -- rejections -------------------------------------------------------------------------------

_QUESTION_START: Final = re.compile(
    r"^(?:what|what's|whats|who|who's|whom|whose|where|where's|when(?!\s+(?:i|we|my|our)\b)|"
    r"why|how|how's|which|do|does|did|can|could|would|will|should|shall|is|isn't|are|aren't|"
    r"am|was|were|have\s+you|has|may|might|won't|wouldn't|couldn't|shouldn't|didn't|doesn't|"
    r"any|anything|anyone|anybody|is\s+there|are\s+there|wanna|want\s+to|care\s+to)\b",
    _I,
)
_REQUEST: Final = re.compile(
    r"^(?:please\s+|pls\s+|plz\s+|kindly\s+|just\s+|now\s+|quickly\s+|first\s+|also\s+)*"
    r"(?:(?:can|could|would|will|won't)\s+you|(?:i\s+)?need\s+you\s+to|help|tell|show|give|"
    r"find|write|make|create|draft|send|book|get|search|look|check|explain|suggest|recommend|"
    r"list|summari[sz]e|translate|calculate|convert|remind|set|schedule|order|buy|play|open|"
    r"generate|compose|plan|organi[sz]e|describe|compare|fix|edit|rewrite|review|read|add|"
    r"remove|delete|cancel|update|change|let's|lets|let\s+me|go|pick|choose|name|give|"
    r"continue|start|stop|try|use|imagine|pretend|act|guess|sing|draw|take|do|proofread|"
    r"brainstorm|outline|define|teach|quiz|answer|respond|reply|turn|switch|move|put|keep|"
    r"repeat|say|ask|share|sort|format|correct|shorten|expand|simplify|elaborate|clarify|"
    r"hit|ping|notify|email|text|message|call|ring|phone|contact)\b",
    _I,
)
_HYPOTHETICAL_START: Final = re.compile(
    r"^(?:if|unless|suppose|supposing|imagine|what\s+if|say|assuming|in\s+case|even\s+if|"
    r"hypothetically|let's\s+say|pretend|i\s+wonder)\b|^(?:maybe|perhaps|possibly)\b"
    r"(?!\s*,?\s*but\b)",
    _I,
)
_HYPOTHETICAL: Final = re.compile(
    r"\b(?:i|we)\s+(?:wish|would|could|might|may|should|ought\s+to|'d\s+(?!(?:rather|prefer|"
    r"like\s+you|love\s+(?:it\s+)?if\s+you)\b))\b|\bif\s+(?:i|we)\s+(?:were|was|had|could|won|"
    r"would|did|lived|owned|got)\b|\b(?:i|we)'d\s+(?:have|be|buy|move|go|love\s+to|like\s+to|"
    r"want)\b|\bi\s+would\b|\bmaybe\s+(?:i|we)\b|\bperhaps\s+(?:i|we)\b",
    _I,
)
_SUBJUNCTIVE: Final = re.compile(
    r"\bif\s+(?:i|we)\s+(?:were|was|had|could|won|would|did|lived|owned|got)\b|"
    r"\b(?:i|we)(?:'d|\s+would|\s+could|\s+might)\b",
    _I,
)
_OPINION: Final = re.compile(
    r"^(?:i|we)\s+(?:really\s+|just\s+|kinda\s+|kind\s+of\s+|sort\s+of\s+)?(?:think|guess|"
    r"suppose|believe|feel\s+like|bet|wonder|doubt|hope|reckon|imagine|assume|expect(?!ing)|"
    r"mean|see|know|agree|disagree|understand|get\s+it|appreciate|forgot|remember\s+when|"
    r"wanted\s+to\s+(?:ask|know|say|check)|was\s+wondering|just\s+wanted|can't\s+believe|"
    r"don't\s+(?:know|think|get|understand|care|mind|remember|see|want|need|believe)|"
    r"have\s+no\s+idea|have\s+a\s+question|have\s+(?:an?\s+)?(?:idea|question|doubt|"
    r"feeling|hunch|problem|issue|request))\b",
    _I,
)
_JOKE: Final = re.compile(
    r"\b(?:just\s+kidding|jk|j/k|kidding|joking|lol\s+no)\b|(?:^|,\s*)not\s+really\W*$", _I
)
_TRANSIENT_STATE: Final = re.compile(
    r"^(?:i|we)(?:'m|'re|\s+am|\s+are|\s+feel|'m\s+feeling|\s+am\s+feeling|\s+was|\s+were|"
    r"'ve\s+been|\s+have\s+been|\s+got|\s+get)\s+(?:(?:so|very|really|super|pretty|quite|a\s+bit|"
    r"a\s+little|kind\s+of|sort\s+of|kinda|too|extremely|incredibly|totally|absolutely|just|"
    r"still|also|not|now|all|getting|feeling|being|bloody|damn|so\s+so)\s+)*" + _TRANSIENT
    + r"\b",
    _I,
)
_SIGN_OFF: Final = re.compile(
    r"^(?:i|we)(?:'ll|\s+will)\s+(?:talk|see|speak|catch|chat|get\s+back|let\s+you\s+know|think|"
    r"check|ask|call\s+you|text\s+you|message\s+you|be\s+(?:right\s+)?back|try|look|come\s+back|"
    r"keep\s+you|update\s+you|do\s+that|take\s+it|have\s+(?:a\s+)?look|go\s+with)\b",
    _I,
)

# -- user patterns ------------------------------------------------------------------------------

_SUBJECT: Final = re.compile(
    r"^(?:i|we|my|our|i'm|i've|i'd|i'll|we're|we've|we'd|we'll|me|mine|myself|please|always|"
    r"never|from\s+now\s+on|don't|do\s+not|call|text|email|e-mail|message|contact|ring|phone|"
    r"answer|reply|respond|write|talk|speak|use|keep|address|refer|[A-Z][\w'-]+\s+(?:is|are)\s+"
    r"(?:my|our))\b",
    _I,
)
#: How to be served: an instruction that lasts, a reply language, how to be contacted.
_LASTING: Final = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|by\s+default|"
    r"every\s+time|each\s+time|whenever|at\s+all\s+times|for\s+all\s+future|any\s+time\s+you|"
    r"in\s+all\s+(?:your\s+)?(?:answers|replies|responses))\b",
    _I,
)
_SERVICE_VERB: Final = re.compile(
    r"^(?:please\s+|pls\s+|kindly\s+|and\s+)*(?:(?:i\s+(?:want|need|would\s+like|'d\s+like|"
    r"prefer)\s+(?:you\s+to|it\s+if\s+you)|(?:can|could|would)\s+you)\s+)?(?:always\s+|never\s+|"
    r"(?:don't|do\s+not)\s+(?:ever\s+)?|from\s+now\s+on,?\s+|going\s+forward,?\s+|"
    r"in\s+(?:the\s+)?future,?\s+|by\s+default,?\s+)*(?:answer|reply|respond|write|talk|speak|"
    r"use|call|address|refer\s+to|keep|give|include|send|remind|format|show|put|ask|tell|"
    r"spell|sign|avoid|add|start|end|list|explain|summari[sz]e|mention|cc|copy|text|email|"
    r"message|contact|ring|wake|notify|greet|round|convert|measure|quote|be|stop|recommend|"
    r"suggest|book|order)\b",
    _I,
)
_NEGATED_SERVICE: Final = re.compile(
    r"^(?:please\s+|pls\s+|kindly\s+|and\s+)*(?:don't|do\s+not|never)\s+(?:ever\s+)?"
    r"(?:send|use|call|text|email|e-mail|message|contact|wake|notify|ping|include|mention|"
    r"recommend|suggest|book|give|show|reply|answer|write|talk|address|put|add|schedule|"
    r"share|sign\s+me|cc|copy|refer\s+to|assume|offer|remind)\b",
    _I,
)
_PRONOUNS: Final = re.compile(
    r"^(?:please\s+)?(?:use|refer\s+to\s+me\s+(?:as|with))\s+(?:the\s+)?(?:pronouns?\s+)?"
    r"(?:they/them|she/her|he/him|they|she|he|ze/zir|xe/xem)\b",
    _I,
)
#: "Mornings are best for me", "the best way to reach me is email".
_BEST_FOR_ME: Final = re.compile(
    r"\b(?:works?|is|are)\s+(?:the\s+)?best\s+for\s+me\b|\bbest\s+(?:way|time|days?|number|"
    r"channel|place)\s+to\s+(?:reach|contact|call|get\s+hold\s+of|text|email|find)\s+me\b|"
    r"\bsuits?\s+me\s+(?:best|better)\b|^(?:i|we)\s+(?:\w+\s+)?(?:learn|work|sleep|focus|"
    r"study|think|function|concentrate|train|perform|write|read)\s+(?:best|better)\b|^[\w-]+(?:\s+[\w-]+)?\s+(?:is|are|works?)\s+"
    r"(?:usually\s+|always\s+)?(?:the\s+)?best(?:\s+for\s+(?:me|us))?\s*(?:[,.!;]|$)|\b(?:makes|make|gives|give)\s+me\s+(?:sick|ill|"
    r"nauseous|a\s+headache|headaches|hives|migraines?|a\s+rash|heartburn)\b",
    _I,
)
#: Facts where the person is the object, or counted: "the doctor put me on lisinopril".
_ALWAYS_THIS: Final = re.compile(
    r"^(?!(?:yes|yeah|no|ok|okay|sure|thanks|thank\s+you|same|me|you|that|this|it|as|love|"
    r"miss|see|cheers|take\s+care|talk|bye|friends|yours|forever|now|not|like|i|i'm|we|my|"
    r"our)\b)"
    r"[a-z][\w-]*(?:\s+[\w-]+){0,3},?\s+(?:always|every\s+time|all\s+the\s+way|"
    r"never\s+(?:a|an|the)?\s*[\w-]+)[.!]*$",
    _I,
)
_ABOUT_ME: Final = re.compile(
    r"^there\s+(?:are|'re)\s+(?:\w+)\s+of\s+us\b|(?:^|[,;]\s*|\band\s+)(?:the\s+|my\s+)?"
    r"(?:doctor|gp|dr\.?|"
    r"physician|specialist|consultant|psychiatrist|cardiologist|dermatologist|nurse|surgeon|"
    r"dentist|therapist|physio)\b[^,.;]{0,30}?\b(?:put|started|switched|took)\s+me\s+(?:on|off)"
    r"\s+\w+|\bprescribed\s+me\b|\bdiagnosed\s+me\s+with\b|^(?:the|my|our)\s+(?:vet|doctor|"
    r"dentist|gp|specialist|surgeon|physio|therapist|consultant|nurse|midwife|optician)\s+"
    r"(?:wants|would\s+like|needs|has\s+asked)\s+to\s+see\s+(?:me|us|her|him|them|my\s+\w+)\b"
    r"(?=.*\b(?:in\s+\w+\s+(?:days?|weeks?|months?)|next|tomorrow|on\s+\w+day|the\s+\d))",
    _I,
)
_REPLY_LANGUAGE: Final = re.compile(
    r"\b(?:answer|reply|respond|write|talk|speak|communicate|chat)\s+(?:to\s+me\s+|with\s+me\s+)?"
    r"(?:only\s+)?in\s+(?-i:[A-Z][a-z]+)\b",
    _I,
)
_CONTACT: Final = re.compile(
    r"^(?:please\s+|pls\s+|kindly\s+|and\s+)*(?:(?:don't|do\s+not|never|only|always|"
    r"rather)\s+)?(?:call|text|email|e-mail|message|contact|ring|phone|ping|reach|wake|disturb|"
    r"whatsapp|dm)\s+me\b(?P<rest>.*)$",
    _I,
)
_CONTACT_HOW: Final = re.compile(
    r"^\s*(?:(?:on|via|through|by|at|over)\s+(?:(?-i:[A-Z])|my\s+(?:mobile|cell|work|personal|"
    r"landline|phone|number|email|home))|(?:before|after)\s+\d|(?:only|rather|instead)\b|"
    r"(?:in\s+the\s+)?(?:mornings?|evenings?|afternoons?)\b|(?:on\s+)?weekends\b|.*\b(?:instead|"
    r"rather\s+than)\b)",
    _I,
)
_NAME: Final = re.compile(
    r"^(?:my\s+name\s+is|my\s+name's|i'm\s+called|i\s+am\s+called|i\s+go\s+by|"
    r"people\s+call\s+me|everyone\s+calls\s+me|friends\s+call\s+me|you\s+can\s+call\s+me|"
    r"please\s+call\s+me|just\s+call\s+me|call\s+me|i'm|i\s+am|this\s+is)\s+"
    r"(?-i:(?P<name>[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*)?))(?P<tail>.*)$",
    _I,
)
_NOT_NAMES: Final = frozenset(
    "ok okay fine good great sorry back here just not so sure well ready done home glad happy "
    "tired excited afraid also in on at the a an from still really very super always never "
    "currently now new learning studying working living moving flying going trying looking "
    "english american british french german spanish italian portuguese".split()
)
_NATIONALITY: Final = re.compile(r"(?-i:[A-Z][a-z]+(?:an|ian|ish|ese|i|ch|ic|ean))\b")
_PREFERENCE: Final = re.compile(
    _IWE + _ADV + r"(?P<verb>love|like|enjoy|adore|prefer|hate|dislike|detest|loathe|"
    r"despise|can't\s+stand|cannot\s+stand|can't\s+bear|can't\s+live\s+without|don't\s+like|"
    r"do\s+not\s+like|don't\s+enjoy|don't\s+care\s+for|don't\s+eat|"
    r"(?:'m|am|'re|are)\s+(?:not\s+)?(?:really\s+|very\s+|so\s+|totally\s+|big\s+|"
    r"quite\s+)?into|(?:'m|am|'re|are)\s+(?:not\s+)?(?:really\s+)?(?:a\s+)?"
    r"(?:big\s+|huge\s+|massive\s+|great\s+)?fans?\s+of|'m\s+obsessed\s+with|'m\s+passionate\s+"
    r"about|'m\s+crazy\s+about|'m\s+a\s+sucker\s+for|'d\s+rather|would\s+rather|'d\s+prefer|"
    r"would\s+prefer|tend\s+to\s+prefer|favou?r|swear\s+by|'m\s+partial\s+to|"
    r"(?:try\s+to\s+|tend\s+to\s+)?(?:avoid|stay\s+away\s+from|limit|cut\s+down\s+on)|"
    r"(?:'m|am|'re|are)\s+(?:a\s+)?(?:big|huge|massive|great|die-?hard|lifelong|loyal|"
    r"massive|total)\s+(?:[\w-]+\s+){1,2}?fans?(?=\W*$)|"
    r"(?:'m|am)\s+(?:not\s+)?(?:a\s+)?(?:morning|night|evening|dog|cat|coffee|tea|beach|"
    r"mountain|city|people)\s+person)\b\s*(?P<obj>.*)$",
    _I,
)
_BAD_OBJECT: Final = re.compile(
    r"^(?:it\b(?!\s+when)|this|that|these|those|you\b|your|yours|them\b|him\b|her\b|the\s+idea|"
    r"the\s+sound|the\s+way\s+you|how\s+you|what\s+you|the\s+(?:first|second|third|last|other|"
    r"new|latest|previous|next)\s+(?:one|option|idea|suggestion|version|draft|answer|reply)|"
    r"the\s+(?:weather|rain|sun|sunshine|view|song|movie|answer|reply|response|poem|story|joke)|"
    r"to\s+(?:book|order|get|have|know|see|ask|talk|check|try|hear|change|cancel|buy|return|"
    r"go|make|find|say|tell|start)\b|a\s+(?:coffee|beer|table|refund|drink|glass|cup|word|"
    r"minute|moment|break)|some\b|one\b|not\s+(?:to\s+)?(?:say|answer|talk|discuss|share|go)|"
    r"that\s+idea|it\s+here|it$|here|there|so\s+much|a\s+lot|very\s+much|please|$|"
    r"(?:it\s+)?when\s+(?:that|this|it)\b|both\b|either\b|neither\b|all\s+of\s+them|"
    r"the\s+(?:[\w-]+\s+)?(?:one|ones|version|option|options|choice|colou?r|size|model|design|"
    r"style|draft|plan|deal|offer|link)\b|\w+\s+(?:it|that|this|them|one)\b(?!\s+when)|"
    r"how\s+(?:you|it|that|this)\b)",
    _I,
)
_FAVOURITE: Final = re.compile(
    r"\b(?:my|our)\s+(?:absolute\s+|all-time\s+|current\s+)?(?:favou?rite|fave|go-to|"
    r"preferred|least\s+favou?rite)\b|\b(?:is|are)\s+my\s+(?:absolute\s+|all-time\s+)?"
    r"(?:favou?rite|fave|go-to)\b",
    _I,
)
_PROCEDURE: Final = re.compile(
    r"^(?:when(?:ever)?|every\s+time|each\s+time|before|after|once)\s+(?:i|we)\b[^,]{2,80},?\s+"
    r"(?:i|we)\s+" + _ADV + r"\w+|^(?:if|when(?:ever)?)\s+[^,]{2,80},\s*(?:please\s+)?(?:call|"
    r"text|email|message|contact|use|send|ask|tell|remind|wake|notify|ping|reach|leave|let|"
    r"book|order|don't|do\s+not|never|always|try)\b",
    _I,
)
_PLAN_ALWAYS: Final = (
    r"flying|moving|relocating|retiring|graduating|getting\s+(?:married|engaged|divorced|"
    r"a\s+(?:dog|cat|puppy|kitten)|surgery)|starting(?!\s+to\b)|emigrating|immigrating|"
    r"expecting\s+(?:a\s+(?:baby|child|girl|boy)|twins|our|my)|due|having\s+(?:a\s+baby|"
    r"surgery|an\s+operation|twins|a\s+(?:girl|boy))|changing\s+jobs|switching\s+(?:jobs|to)|"
    r"quitting|joining|launching|opening|closing|selling|buying|adopting|renovating|"
    r"training\s+for|running\s+(?:a|the|in)\s+\w*\s*(?:marathon|race|half|10k|5k)|"
    r"competing|planning\s+(?:to|a|our|my)|off\s+to|heading\s+to\s+(?-i:[A-Z])|"
    r"travell?ing\s+to|going\s+to\s+(?-i:[A-Z])|visiting\s+(?-i:[A-Z])|leaving\s+(?:for|my|"
    r"the\s+company|(?-i:[A-Z]))"
)
_PLAN: Final = re.compile(
    r"^(?:i|we)(?:'m|'re|\s+am|\s+are)\s+" + _ADV + r"(?:(?P<always>" + _PLAN_ALWAYS + r")|"
    r"(?P<dated>going|heading|driving|coming|returning|staying|meeting|seeing|picking|doing|"
    r"playing|presenting|interviewing|celebrating|throwing|organi[sz]ing|hosting|taking|"
    r"visiting|travell?ing|leaving|away|off|on\s+(?:holiday|vacation|leave)|working|attending|"
    r"having|getting|spending|running|finishing|sitting|catching|babysitting|volunteering|"
    r"speaking|performing|singing|cooking|baking|in|at|back|free|busy|out|flying|seeing))\b",
    _I,
)
_FUTURE_FIRST: Final = re.compile(
    r"^(?:i|we)(?:'ll|\s+will|\s+shall|'m\s+going\s+to|\s+am\s+going\s+to|'re\s+going\s+to|"
    r"\s+are\s+going\s+to|'m\s+gonna|'re\s+gonna)\s+" + _ADV + r"\w+",
    _I,
)
_INTENT: Final = re.compile(
    r"^(?:i|we)(?:\s+plan|'m\s+planning|\s+am\s+planning|'re\s+planning|\s+intend|"
    r"'m\s+intending|\s+have\s+decided|'ve\s+decided|\s+decided)\s+to\s+\w+",
    _I,
)
_HAVE_EVENT: Final = re.compile(
    r"^(?:i|we)(?:\s+have|'ve\s+got|\s+have\s+got|\s+got|'ve)\s+" + _ADV + r"(?:a|an|my|our|"
    r"the|another|two|three|\d+)\s+(?:[\w'-]+\s+){0,3}?" + _EVENT_NOUN + r"s?\b",
    _I,
)
_NEED_DATED: Final = re.compile(
    r"^(?:i|we)(?:\s+need\s+to|\s+have\s+to|'ve\s+got\s+to|\s+must|'ve\s+to|\s+got\s+to)\s+\w+",
    _I,
)
_LIFE_EVENT: Final = re.compile(
    r"^(?:i|we)\s+" + _ADV + r"(?:got\s+(?:married|engaged|divorced|promoted|hired|fired|"
    r"laid\s+off|a\s+(?:new\s+)?(?:job|dog|cat|puppy|kitten|car|house|flat|apartment|degree|"
    r"promotion|raise|tattoo|diagnosis)|my\s+(?:degree|license|licence|driving|phd|masters|"
    r"diploma|results|black\s+belt)|into|accepted|back\s+from)|had\s+(?:a\s+(?:baby|son|"
    r"daughter|girl|boy|stroke|heart\s+attack|miscarriage|car\s+accident|accident|"
    r"operation)|twins|surgery|an\s+operation|my\s+(?:baby|surgery|operation|appendix|"
    r"wisdom\s+teeth))|got\s+diagnosed|married|graduated|retired|adopted|gave\s+birth|"
    r"was\s+(?:diagnosed|promoted|hired|laid\s+off|fired|adopted|made\s+redundant|"
    r"accepted)|were\s+married|moved|relocated|emigrated|divorced|separated|split\s+up|"
    r"broke\s+up|came\s+out|converted|went\s+(?:vegan|vegetarian|pescatarian|sober|"
    r"freelance|part-time|full-time|back\s+to\s+(?:school|work|university|college))|"
    r"took\s+up|turned\s+\d+)\b",
    _I,
)
#: Past verbs that make a life event only with a weighty object (``I left my job``, not
#: ``I left the house``), a name, or (for the last group) a date and such an object.
_LIFE_VERB: Final = re.compile(
    r"^(?:i|we)\s+" + _ADV + r"(?:started|began|finished|completed|passed|failed|quit|left|"
    r"joined|bought|sold|broke|tore|sprained|won|lost|signed|launched|founded|opened|closed|"
    r"switched|changed|became|enrolled|applied|signed\s+up|registered|renewed|recovered|"
    r"stopped|gave\s+up|cut\s+out|picked\s+up)\b(?P<rest>.*)$",
    _I,
)
_LIFE_OBJECT: Final = re.compile(
    r"\b(?:job|jobs|career|degree|phd|masters|master's|bachelor's|course|school|university|"
    r"college|uni|company|business|startup|team|gym|club|band|choir|marriage|leg|arm|wrist|"
    r"ankle|hip|back|nose|foot|hand|finger|toe|rib|collarbone|knee|shoulder|lottery|award|"
    r"prize|championship|position|role|contract|therapy|treatment|chemo|rehab|diet|"
    r"medication|meds|apartment|house|flat|home|car|bike|lease|mortgage|smoking|vaping|"
    r"drinking|alcohol|meat|sugar|caffeine|coffee|dairy|gluten|meat|marathon|race|triathlon|"
    r"exam|exams|test|driving|licen[cs]e|visa|citizenship|residency|passport|internship|"
    r"apprenticeship|training|program|programme|class|lessons|practice|shop|bakery|"
    r"restaurant|cafe|café|salon|clinic|studio|firm|agency|charity|ngo|podcast|channel|"
    r"blog|novel|book|album|relationship|boyfriend|girlfriend|husband|wife|partner|"
    r"engagement|pregnancy|baby|dog|cat|puppy|kitten|horse|provider|plan|bank|insurer|"
    r"insurance|subscription|membership|habit|to\s+(?:eat|drink|smoke|use)|eating|using|"
    r"working|running|yoga|pilates|piano|guitar|violin|lessons|new\s+\w+|my\s+own)\b",
    _I,
)
_LEFT_PLACE: Final = re.compile(
    r"^(?:i|we)\s+" + _ADV + r"left\s+(?:the\s+|my\s+|our\s+)?(?:house|home|office|work|flat|"
    r"apartment|car|keys|phone|bag|wallet)\b(?!\s+(?:for\s+good|behind))",
    _I,
)
_DATED_OBJECT: Final = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+)?(?:" + _RELATION + r")\b|\b(?:dentist|doctor|hospital|"
    r"surgeon|specialist|clinic|vet|therapist|funeral|wedding|graduation|concert|festival|"
    r"marathon|race|conference|interview|exam|holiday|vacation|trip|honeymoon|abroad)\b",
    _I,
)
#: Changes that leave a lasting state (a fact, not an event).
_BECAME: Final = re.compile(
    r"^(?:i|we)\s+" + _ADV + r"(?:moved|relocated|emigrated|became|went\s+(?:vegan|"
    r"vegetarian|pescatarian|sober)|stopped|gave\s+up|quit|cut\s+out|switched|converted|"
    r"came\s+out|was\s+born|were\s+born)\b",
    _I,
)
_DATED_PAST: Final = re.compile(
    r"^(?:i|we)\s+" + _ADV + r"(?:went|visited|travell?ed|flew|drove|returned|came\s+back|"
    r"booked|met|saw|got|had|did|ran|hiked|climbed|attended|hosted|celebrated|spent|took|"
    r"made|cooked|finished|stayed|toured|watched|played|organi[sz]ed|threw|received)\b",
    _I,
)
_FACT_VERB: Final = (
    r"(?:work|works|live|lives|teach|study|own|run|drive|ride|speak|play|coach|volunteer|"
    r"manage|lead|use|have|go\s+to|attend|belong|support|follow|eat|drink|smoke|take|wear|"
    r"collect|practi[cs]e|train|bake|cook|knit|paint|sing|dance|swim|hike|climb|surf|ski|"
    r"commute|rent|share|grow|breed|celebrate|observe|fast|come\s+from|walk|cycle|bike|jog|"
    r"meditate|pray|read|write|blog|tutor|freelance|do|keep|raise|care\s+for|look\s+after|"
    r"babysit|homeschool|identify\s+as|sleep|wake\s+up|get\s+up|go|vote|foster|weigh|"
    r"stream|code|program|design|sew|garden|fish|hunt|sail|row|box|lift|skate|golf|"
    r"listen\s+to|watch|rely\s+on|suffer\s+from|struggle\s+with|deal\s+with|"
    r"shop\s+at|bank\s+with|fly\s+with|drive\s+a|ride\s+a|grew\s+up|was\s+born|were\s+born|"
    r"was\s+raised|were\s+raised|used\s+to\s+(?:live|work|be|have|play|study|smoke|drink|"
    r"eat|own|run|teach|dance|sing|swim|ride|drive|compete|train|coach|volunteer|skate|ski|"
    r"surf|climb|box|fight|race|paint|write|go\s+to|attend))"
)
_ABILITY: Final = re.compile(
    r"^(?:i|we)\s+" + _ADV + r"(?:can|can't|cannot|could\s+never)\s+" + _ADV + r"(?:run|swim|"
    r"speak|drive|cook|play|read|write|ski|ride|code|sing|dance|knit|lift|bench|squat|type|"
    r"walk|climb|surf|skate|sew|paint|draw|program|dive|sail|bake)\b",
    _I,
)
_I_FACT: Final = re.compile(
    r"^(?:i|we)\s+" + _ADV + r"(?:" + _FACT_VERB + r")\b(?P<rest>.*)$", _I
)
_BAD_HAVE: Final = re.compile(
    r"^\s+(?:a\s+|an\s+|some\s+|no\s+|the\s+|any\s+|one\s+|another\s+|more\s+|too\s+many\s+)?"
    r"(?:quick\s+|small\s+|little\s+|big\s+|silly\s+|stupid\s+|weird\s+|follow-up\s+|"
    r"short\s+|last\s+|few\s+|couple\s+(?:of\s+)?|lot\s+of\s+|bit\s+of\s+)*"
    r"(?:question|questions|idea|ideas|problem|problems|issue|issues|doubt|feeling|hunch|"
    r"headache|cold|fever|cough|hangover|minute|minutes|moment|second|sec|time|clue|"
    r"to\b|nothing|something|anything|everything|it|that|this|them|enough|fun|lunch|"
    r"dinner|breakfast|coffee|look|go|try|chance|word|request|complaint|suggestion|"
    r"favou?r|update|meeting|call|bad\s+day|good\s+day|long\s+day|rough|tough|busy|great|"
    r"lovely|nice|wonderful|no\s+idea|plenty|same|one|been|had|done|gone|seen|heard|made|"
    r"finished|tried|read|told|said|got|already|just|never|ever|always|also|still)\b",
    _I,
)
_DURABLE_NEGATION: Final = re.compile(
    r"^(?:i|we)\s+" + _ADV + r"(?:don't|do\s+not|never|no\s+longer|can't|cannot|won't|"
    r"doesn't|didn't\s+use\s+to)\s+" + _ADV + r"(?:eat|drink|smoke|drive|own|have|work|live|"
    r"speak|use|fly|wear|celebrate|cook|swim|ride|tolerate|digest|vote|watch|do|take|"
    r"go\s+to|attend|play|read|travel|believe\s+in|touch|consume|allow)\b",
    _I,
)
_HABIT_WORDS: Final = re.compile(
    r"\b(?:every|each)\s+(?:other\s+)?(?:day|morning|evening|night|week|weekend|month|year|"
    r"summer|winter|spring|autumn|" + _WD + r"|" + _MONTH + r")\b|\b(?:daily|weekly|monthly|"
    r"yearly|annually|nightly|twice\s+a|three\s+times\s+a|once\s+a|on\s+" + _WD + r"s|"
    r"on\s+weekends|at\s+weekends|on\s+weekdays|every\s+\w+\s+(?:and|or)\s+\w+day)\b",
    _I,
)
_FREQUENCY: Final = re.compile(
    r"^(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+(?:usually|always|normally|typically|generally|often|rarely|never|mostly|"
    r"regularly|occasionally|tend\s+to)\s+(?!(?:forget|get|feel|wonder|think|say|ask|try|"
    r"want|need|have\s+to|end\s+up|seem|mess|lose|miss)\b)\w+",
    _I,
)
_BE_FACT: Final = re.compile(
    r"^(?:i|we)(?:'m|'re|\s+am|\s+are|'ve\s+been|\s+have\s+been|\s+was|\s+were)\s+" + _ADV
    + r"(?:not\s+|no\s+longer\s+|now\s+)?(?P<what>"
    r"(?:a|an)\s+(?!(?:bit|little|tad|lot|mess|wreck|moment|second|minute|few|total|complete|"
    r"huge|big|massive|real|bit\s+of|little\s+bit|fan|sucker|fool|idiot|genius|legend|"
    r"star|lucky|happy|proud|tired|busy)\b)[\w-]+|vegetarian|vegan|pescatarian|celiac|"
    r"coeliac|diabetic|epileptic|asthmatic|autistic|dyslexic|lactose|gluten|allergic|"
    r"intolerant|married|divorced|single|engaged|widowed|separated|pregnant|retired|"
    r"unemployed|self-employed|freelance|freelancing|left-handed|right-handed|ambidextrous|"
    r"colou?r-?blind|deaf|blind|hard\s+of\s+hearing|disabled|sober|teetotal|in\s+recovery|"
    r"from\s+(?-i:[A-Z])|originally\s+from|born\s+(?:in|on)|based\s+in|located\s+in|"
    r"living\s+(?:in|with|on|near|abroad)|studying|"
    r"learning(?!\s+(?:a\s+lot|so\s+much|loads|lots|something|from|that|this|how\s+to\s+use\s+"
    r"(?:this|you)))|(?:reading|writing|building|renovating|restoring)\s+\w|training\s+(?:to|as|for)|"
    r"working\s+(?:as|at|for|in|from|remotely|part-time|full-time|nights|"
    r"freelance)|employed|enrolled|in\s+(?:my|the\s+(?:process|middle)|grade|year|college|"
    r"school|high\s+school|university|uni|med\s+school|law\s+school|a\s+relationship|"
    r"love\s+with\s+(?!this|that|it\b)|therapy|charge\s+of)|on\s+(?:the|a|an|my)\s+"
    r"(?:[\w-]+\s+){0,3}(?:plan|diet|team|board|tier|medication|meds|pill|list|committee|"
    r"contract|program|programme|course)\b|on\s+(?:medication|meds|a\s+diet|the\s+pill|"
    r"antidepressants|insulin|blood\s+thinners)|\d{1,3}(?:\s+years?\s+old)?\s*[.,!]?$|"
    r"\d{1,3}\s+years?\s+old|\d{1,2}\s+(?:weeks?|months?)\s+pregnant|\d+(?:[.,]\d+)?\s*(?:m|cm|ft|feet|foot|kg|kilos|lbs|pounds|"
    r"stone)\b|\d'\s?\d+|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
    r"(?:-\w+)?(?:\s+years?\s+old)?|turning\s+\d+|raising|caring\s+for|looking\s+after|"
    r"afraid\s+of|scared\s+of|terrified\s+of|frightened\s+of|a\s+member\s+of|part\s+of|"
    r"fluent\s+in|native|bilingual|trilingual|jewish|muslim|christian|catholic|hindu|"
    r"buddhist|sikh|atheist|agnostic|mormon|protestant|gay|lesbian|bisexual|straight|trans|"
    r"non-binary|nonbinary|queer|short-sighted|nearsighted|long-sighted|farsighted|"
    r"there\s+since|there\s+for|here\s+since|here\s+for|with\s+(?:\w+\s+){0,3}since|"
    r"together|a\s+(?:big|huge)\s+\w+\s+person|to\s+(?-i:[A-Z])|to\s+\w+\s+(?:before|"
    r"twice|\d+\s+times)|into\s+\w+|obsessed\s+with|addicted\s+to|interested\s+in|"
    r"passionate\s+about|good\s+at|bad\s+at|terrible\s+at|great\s+at|an?\s+only\s+child|"
    r"the\s+(?:oldest|youngest|eldest|middle|only|first|second|third)\b|"
    r"(?:doing|taking|pursuing|completing)\s+(?:a|an|my)\s+\w+|"
    r"responsible\s+for|in\s+charge\s+of|"
    r"(?-i:[A-Z][a-z]+(?:an|ian|ish|ese|i|ch))\b)",
    _I,
)
_GOAL: Final = re.compile(
    r"^(?:i|we)(?:'m|'re|\s+am|\s+are)\s+" + _ADV + r"(?:trying\s+to\s+(?:lose|quit|learn|"
    r"get\s+(?:fit|fitter|better|healthier|pregnant|in\s+shape)|save|eat|cut|stop|run|build|"
    r"find\s+a\s+(?:new\s+)?(?:job|flat|house|apartment|partner)|become|improve|drink|sleep|"
    r"exercise|be\s+more|read\s+more|write|walk|give\s+up|reduce|avoid|go)|"
    r"saving\s+(?:up\s+)?for|looking\s+for\s+(?:a\s+)?(?:new\s+)?(?:job|flat|apartment|house|"
    r"home|place\s+to\s+live|roommate|flatmate|partner|school)|job\s+hunting|house\s+hunting|"
    r"working\s+towards?|hoping\s+to)\b|" + _IWE + _ADV + r"(?:want|wanna|"
    r"hope|'d\s+love|would\s+love|dream\s+of|aim)\s+to\s+(?:learn|become|move|retire|run|quit|"
    r"lose|start|improve|travel|visit|buy|get\s+better|finish|write|open|build|save|climb|"
    r"see|study|speak|eat|stop|cut)\b|^(?:my|our)\s+(?:main\s+|big\s+|new\s+)?(?:goal|dream|plan|"
    r"new\s+year's\s+resolution|"
    r"resolution|aim)(?:\s+(?:this|for|next|in)\s+(?:the\s+)?\w+)?\s+(?:is|for)\b",
    _I,
)
_PERFECT_FACT: Final = re.compile(
    r"^(?:i|we)(?:'ve|\s+have)\s+" + _ADV + r"(?:lived|worked|studied|taught|owned|known|"
    r"played|practi[cs]ed|used|driven|run|coached|volunteered|followed|been(?!\s+(?:there|"
    r"here|through|thinking|wondering|meaning|trying|waiting|looking|told|asked|doing\s+"
    r"(?:that|this|it)))|done(?!\s+(?:that|this|it))|had\s+"
    r"(?:\w+\s+){0,4}?(?:for|since)|smoked|drunk|eaten|flown|got|switched|moved|started|"
    r"stopped|quit|given\s+up|become|joined|finished|signed\s+up|decided|booked|bought|"
    r"adopted|passed|graduated|retired)\b",
    _I,
)
_POSSESSIVE: Final = re.compile(
    r"^(?:my|our)\s+(?:(?:[\w-]+)\s+){0,2}(?P<noun>" + _RELATION + r"|" + _ATTRIBUTE
    + r")(?:'s\s+(?P<of>[\w-]+(?:\s+[\w-]+)?))?(?:\s*,?\s+(?-i:(?P<name>[A-Z][\w'-]+(?:\s+"
    r"[A-Z][\w'-]+)?)),?)?\s+(?P<pred>.+)$",
    _I,
)
_MY_DAY: Final = re.compile(
    r"^(?:it's|it\s+is|today\s+is|today's|tomorrow\s+is|tomorrow's)\s+(?:our|my)\s+"
    r"(?:\d+\w*\s+|wedding\s+)?(?:birthday|anniversary|name\s+day)\b",
    _I,
)
_OWN_EVENT: Final = re.compile(r"\b(?:my|our)\s+(?:[\w-]+\s+){0,2}?" + _EVENT_NOUN + r"\b", _I)
_PHRASE: Final = re.compile(r"^(?:to|from|at|in|with|for|of|on)\s", _I)
_RELATION_ONLY: Final = re.compile(r"^" + _RELATION + r"$", _I)
_EVENT_ONLY: Final = re.compile(r"^" + _EVENT_NOUN + r"s?$", _I)
_DURABLE_PREDICATE: Final = re.compile(
    r"^(?:(?:is|'s|are|was|were|has\s+been|have\s+been|will\s+be|'ll\s+be)\s+(?:now\s+|still\s+|"
    r"also\s+|just\s+|currently\s+|officially\s+)?(?:called|named|(?:a|an)\s+(?!bit\b|little\b|"
    r"mess\b|nightmare\b|pain\b|joke\b)\w|the\s+\w+\s+(?:of|at|for)|\d|(?:one|two|three|four|"
    r"five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)\b|"
    r"(?-i:[A-Z])|allergic|intolerant|vegetarian|vegan|married|engaged|divorced|single|"
    r"pregnant|retired|diabetic|autistic|deaf|blind|disabled|from|in\s+(?:\w+\s+)?(?:school|"
    r"college|university|grade|year|kindergarten|nursery|preschool|daycare|the\s+army|"
    r"hospital|care)|at\s+(?:school|college|university|uni|(?-i:[A-Z]))|turning|starting|"
    r"getting|moving|visiting|coming|graduating|expecting|due|going\s+to|studying|learning|"
    r"working|living|staying|flying|leaving|having|on\s+\w+|at\s+\d+(?![\d.,]*\s*%)|scheduled|"
    r"booked|set|"
    r"planned|confirmed|[\w.+-]+@|\+?\d|(?:\w+\s+){0,3}?years?\s+old|older|younger|"
    r"twins|my\s+\w+|our\s+\w+|his|her|their|\w+ing\s+(?:to|in|at|on|for|next|this|a)\b|"
    r"(?:\w+\s+)?(?:blue|green|red|black|white|grey|gray|yellow|purple|pink|orange|brown)"
    r")|(?:(?:just|recently|finally|also|still|now|currently|already|actually|really|"
    r"usually|always|often|never)\s+)*"
    r"(?:eat|eats|drink|drinks|lives|live|works|work|studies|study|plays|play|loves|love|"
    r"likes|like|hates|hate|"
    r"enjoys|enjoy|prefers|prefer|has|have|goes|go|attends|attend|teaches|teach|runs|run|"
    r"owns|own|drives|drive|speaks|speak|turned|turns|turn|moved|passed|died|started|starts|"
    r"start|graduated|graduates|got|joined|left|retired|retires|was\s+born|were\s+born|"
    r"is\s+allergic|can't\s+eat|can't\s+have|doesn't\s+eat|don't\s+eat|doesn't\s+drink|"
    r"leaves|lands|departs|arrives|begins|ends|expires|renews|runs\s+out|falls|is\s+on|"
    r"costs|takes\s+place|happens|comes|came|just\s+got|had\s+(?:a\s+baby|twins|a\s+(?:boy|"
    r"girl|son|daughter))|"
    r"needs\s+(?:a|an)\s+\w+|suffers|uses|use|wears|wear|collects|plays|coaches|manages|"
    r"looks\s+after|cares\s+for|lived|worked|moved|bought|sold|adopted|married|divorced|"
    r"broke\s+(?:his|her|their)|won|lost\s+(?:his|her|their)|visited|visits|stays|stay|failed|"
    r"passed)\b)",
    _I,
)
_OPINION_PREDICATE: Final = re.compile(
    r"^(?:is|'s|are|was|were)\s+(?:so\s+|really\s+|very\s+|super\s+|such\s+|a\s+bit\s+|"
    r"kind\s+of\s+|being\s+|totally\s+|being\s+so\s+)?(?:annoying|great|awesome|amazing|"
    r"terrible|awful|lovely|nice|mean|rude|weird|funny|crazy|slow|fast|down|broken|dead|"
    r"dying|cold|hot|late|sick|ill|tired|upset|angry|mad|busy|away|out|here|there|gone|"
    r"back|home|asleep|awake|a\s+(?:pain|nightmare|joke|mess)|such\s+a)\b",
    _I,
)
_THING_IS: Final = re.compile(
    r"^(?:my|our)\s+(?:[\w-]+\s+){0,2}?[\w-]+\b[^.;,]*,\s*(?:it's|it\s+is|he's|he\s+is|"
    r"she's|she\s+is|they're|they\s+are)\s+(?:a|an|\d|called|named)\b",
    _I,
)
_ONE_OFF_PREDICATE: Final = re.compile(
    r"^(?:just\s+)?(?:won|lost|played|drew)\s+(?:the|a|our|their|its|tonight's|today's)\s+"
    r"(?:game|match|race|round|final)\b|^(?:says|said)\s+(?:hi|hello|thanks)\b",
    _I,
)
_RELATION_IS: Final = re.compile(
    r"^(?-i:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)\s+(?:is|'s|are)\s+(?:my|our)\s+(?:[\w-]+\s+)?"
    + _RELATION + r"\b",
    _I,
)
_DATEISH: Final = re.compile(
    r"\b(?:tomorrow|yesterday|today|tonight|" + _WD + r"|" + _MONTH + r"|(?:next|last|this|"
    r"coming)\s+(?:week|weekend|month|year|spring|summer|autumn|fall|winter)|ago|"
    r"in\s+" + _NUMBER_WORD + r"\s+(?:days?|weeks?|months?|years?)|in\s+a\s+fortnight|"
    r"the\s+\d{1,2}(?:st|nd|rd|th)|\d{4}-\d{2}-\d{2}|christmas|halloween|new\s+year|"
    r"(?:in|since|by|until)\s+(?:19|20)\d{2})\b",
    _I,
)
#: Words of today only: a chore for today is no lasting note.
_TODAY_ONLY: Final = re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", _I)
_OTHER_DAY: Final = re.compile(
    r"\b(?:tomorrow|yesterday|" + _WD + r"|" + _MONTH + r"|next|last|ago|the\s+\d{1,2}"
    r"(?:st|nd|rd|th)|\d{4})\b",
    _I,
)
_PROPER_NOUN: Final = re.compile(r"\s(?-i:[A-Z][a-z]+)")


def _strip_opener(text: str) -> str:
    return _OPENER.sub("", text, count=1)


def _preference(core: str) -> bool:
    found = _PREFERENCE.match(core)
    if found is None:
        return False
    verb = found["verb"].lower()
    obj = found["obj"].strip()
    if verb.endswith(("person", "fan", "fans")):
        return True  # "I'm a night person", "I'm a huge Liverpool fan"
    return not _BAD_OBJECT.match(obj) and len(obj) >= 2


def _service(core: str) -> bool:
    """An instruction about how to be served from now on, a reply language, or contact."""
    if _REPLY_LANGUAGE.search(core) and not core.lower().startswith(("can you", "could you")):
        return True
    contact = _CONTACT.match(core)
    if contact is not None:
        lowered = core.lower()
        if lowered.startswith(("don't", "do not", "never", "please don't", "please do not",
                               "only", "please only", "always", "please always")):
            return True
        return bool(_CONTACT_HOW.match(contact["rest"]))
    if _NEGATED_SERVICE.match(core) or _PRONOUNS.search(core):
        return True
    return bool(_LASTING.search(core) and _SERVICE_VERB.match(core))


def _lasting_request(sentence: str) -> bool:
    """A question that is an instruction for good (``Could you keep answers short from now
    on?``)."""
    core = _strip_opener(sentence)
    return bool(_LASTING.search(core) and _SERVICE_VERB.match(core))


def _name(core: str) -> CandidateKind | None:
    found = _NAME.match(core)
    if found is None:
        return None
    name, tail = found["name"], found["tail"].strip()
    first = name.split()[0].lower().rstrip(".")
    if first in _NOT_NAMES:
        return None
    lead = core[: found.start("name")].lower()
    is_am = lead.startswith(("i'm", "i am", "this is"))
    if is_am and (tail and not re.match(r"^(?:[,.!]|and\b|from\b|by\b|here\b|$)", tail)):
        return None  # "I'm Italian-born ...", "I'm Flying": not a name said alone
    if lead.startswith("this is") and tail and tail[0] not in ",.!":
        return None
    if is_am and _NATIONALITY.fullmatch(name):
        return "fact"  # "I'm French"
    return "preference" if "call me" in lead else "fact"


def _possessive(core: str, dated: bool) -> CandidateKind | None:
    found = _POSSESSIVE.match(core)
    if found is None:
        return None
    noun = found["noun"].lower()
    pred = found["pred"].strip()
    if found["of"] and _RELATION_ONLY.match(found["of"].split()[0]):
        return None  # "my friend's cousin ...": someone else's people
    if (_OPINION_PREDICATE.match(pred) and not dated) or _ONE_OFF_PREDICATE.match(pred):
        return None
    pair = re.match(r"^(?:and|&)\s+(?:his|her|their|my|our|i)\b(?:\s+[\w-]+)?\s+", pred, _I)
    if pair is not None:
        pred = pred[pair.end() :]  # "my brother and his wife just had a baby"
    phrase = _PHRASE.match(pred)
    if phrase is not None and not _DURABLE_PREDICATE.match(pred):
        # "my flight to Tokyo leaves ...": the noun's phrase first, then its predicate
        words = pred.split()
        for length in range(2, min(len(words), 6)):
            rest = " ".join(words[length:])
            if _DURABLE_PREDICATE.match(rest) and not _OPINION_PREDICATE.match(rest):
                pred = rest
                break
    if not _DURABLE_PREDICATE.match(pred):
        if found["name"] and _RELATION_ONLY.match(noun) and re.match(r"^\w+s\b", pred):
            return "fact"  # "my son Leo hates mushrooms"
        if dated and re.match(r"^(?:is|are|'s|was|were|will|'ll|has|have)\b", pred, _I):
            return "event"
        return None
    if noun.startswith(("favourite", "favorite")):
        return "preference"
    if _EVENT_ONLY.match(noun) or (dated and re.match(r"^(?:is|are|'s)\s+\w+ing\b", pred, _I)):
        return "event"
    return "fact"


_JOINED: Final = re.compile(
    r"\s*[;]\s*|\s*,\s*(?:(?:and|but|plus|also|and\s+also)\s+)?(?!so\b)(?=(?:i|we|my|our)\b)|"
    r"\s+(?:and|but|plus)\s+(?:also\s+)?(?=(?:i|we|my|our)\b(?!\s+(?:and|or)\b))|"
    r"\s+(?:because|since|as)\s+(?=(?:i|we)(?:'m|'re|\s+am|\s+are|'ve|\s+have)\b)|"
    r"\s+and\s+(?=(?:also\s+|now\s+|still\s+)?(?:work|live|study|teach|own|have|speak|love|"
    r"like|hate|enjoy|prefer|drive|play|am|'m|recently\s+\w+|just\s+\w+|moved|started|got)\b)",
    _I,
)
_BARE_VERB_SPLIT: Final = re.compile(r"^\s+and\s+$", _I)
#: A clause that points back at the one before it cannot stand alone.
_BACK_REFERENCE: Final = re.compile(
    r"\b(?:them|it|him|her|they|there|those|these|that\s+one|this\s+one|one\s+of\s+them|"
    r"the\s+same)\b",
    _I,
)


def _classify(part: str) -> CandidateKind | None:
    """The kind of memory ``part`` (a cleaned clause of a user turn) forms, or ``None``."""
    core = _strip_opener(part).strip()
    if len(core) < 4 or not re.search(r"[A-Za-z]", core):
        return None
    kind = _kind(core)
    if (
        kind in ("fact", "event")
        and _TODAY_ONLY.search(core)
        and not _OTHER_DAY.search(core)
        and not _MY_DAY.match(core)
        and not _HAVE_EVENT.match(core)
        and not _plan_always(core)
        and is_past(core) is not True
    ):
        return None  # "I'm working from home today", "my dog is sick today": for today only
    return kind


def _plan_always(core: str) -> bool:
    plan = _PLAN.match(core)
    return plan is not None and bool(plan["always"])


def _kind(core: str) -> CandidateKind | None:
    lowered = core.lower()
    if (core.endswith("?") or _QUESTION_START.match(core)) and not (
        lowered.startswith(("do not", "don't", "does not")) or _lasting_request(core)
    ):
        return None
    if _JOKE.search(core) or _OPINION.match(core) or _SIGN_OFF.match(core):
        return None
    if _lasting_request(core):
        return "preference"
    if _MY_DAY.match(core):
        return "fact"  # "it's my birthday today": the day it falls on
    if _ABOUT_ME.search(core) and not re.match(r"^(?:what|which|when|how|did|does|do|can)\b",
                                                core, _I):
        return "fact"  # "there are four of us", "the doctor put me on lisinopril"
    if _ALWAYS_THIS.match(core):
        return "preference"  # "Window seat, always."
    best = _BEST_FOR_ME.search(core)
    if best is not None and not re.match(
        r"^(?:what|which|when|how|that|this|it|either|both|any|whatever|whichever|those|these)\b",
        core, _I,
    ):
        return "fact" if re.search(r"\bme\s+(?:sick|ill|nau|a\s+h|head|hiv|mig|a\s+r|heart)",
                                   best.group(), _I) else "preference"
    if not _SUBJECT.match(core):
        return None
    named = _name(core)
    if named is not None:
        return named
    if _service(core):
        return "preference"
    if _REQUEST.match(core) or _HYPOTHETICAL.search(core):
        return None
    if _PROCEDURE.match(core):
        return "procedure"
    dated = bool(_DATEISH.search(core))
    if _GOAL.match(core):
        return "note"
    if _TRANSIENT_STATE.match(core) and not (dated and _PLAN.match(core)):
        if dated and _OWN_EVENT.search(core):
            return "event"  # "I'm so excited about my trip to Rome next week"
        return None
    if _preference(core) or _FAVOURITE.search(core):
        return "preference"
    if _GOAL.match(core):
        return "note"
    plan = _PLAN.match(core)
    lasting_date = dated and not (_TODAY_ONLY.search(core) and not _OTHER_DAY.search(core))
    if plan is not None and (plan["always"] or lasting_date):
        return "event"
    if _INTENT.match(core) or (lasting_date and _FUTURE_FIRST.match(core)):
        return "event"
    if _HAVE_EVENT.match(core) and (dated or not re.search(r"\b(?:meeting|call|date)\b", lowered)):
        return "event"
    if dated and _NEED_DATED.match(core) and not _TODAY_ONLY.search(core):
        return "note"
    if _LIFE_EVENT.match(core):
        return "fact" if _BECAME.match(core) else "event"
    life = _LIFE_VERB.match(core)
    if life is not None and _LEFT_PLACE.match(core):
        life = None  # "I left the house at 8"
    if life is not None and (_LIFE_OBJECT.search(life["rest"]) or _PROPER_NOUN.search(
            life["rest"])):
        return "fact" if _BECAME.match(core) else "event"
    if _DATED_PAST.match(core) and (
        _PROPER_NOUN.search(core) or (dated and _DATED_OBJECT.search(core))
    ):
        return "event"
    if _RELATION_IS.match(core):
        return "fact"
    if _THING_IS.match(core):
        return "fact"  # "my laptop keeps crashing, it's a 2021 MacBook Air"
    if lowered.startswith(("my ", "our ")):
        return _possessive(core, dated)
    if _DURABLE_NEGATION.match(core) or _PERFECT_FACT.match(core) or _BE_FACT.match(core):
        return "fact"
    if _ABILITY.match(core):
        return "fact"
    fact = _I_FACT.match(core)
    if fact is not None:
        verb_have = re.match(r"^(?:i|we)\s+" + _ADV + r"(?:have|'ve\s+got)\b", core, _I)
        if verb_have and _BAD_HAVE.match(fact["rest"]):
            return None
        if not fact["rest"].strip() and not _HABIT_WORDS.search(core):
            return None  # "I work.", "I do": a verb alone says nothing
        return "fact"
    if re.match(r"^(?:i|we)(?:'ve|\s+have)\s+got\s+" + _ADV + r"(?:a|an|\d+|two|three|four|"
                r"five|six|my|no)\b", core, _I) and not _BAD_HAVE.match(core[core.lower().find(
                    "got") + 3 :]):
        return "fact"
    if _FREQUENCY.match(core) or (
        _HABIT_WORDS.search(core)
        and re.match(r"^(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+" + _ADV + r"\w+", core, _I)
    ):
        return "fact"
    if lasting_date and re.match(r"^(?:i|we|my|our)\b", core, _I) and _eventful(core):
        return "event"
    return None


def _eventful(core: str) -> bool:
    """A first-person clause with a date that says something happens (not a state)."""
    return bool(re.match(
        r"^(?:i|we)(?:'m|'re|\s+am|\s+are|'ll|\s+will|'ve|\s+have|\s+had|\s+got|\s+went|"
        r"\s+\w+ed)\b|^(?:my|our)\s+\w+|^(?:i|we)\s+" + _ADV + r"(?:start|begin|finish|leave|"
        r"fly|move|arrive|return|graduate|retire|marry|travel|go|head|come\s+back|get\s+back|"
        r"land|depart|sit|take|have|see|meet)\b", core, _I,
    ))


#: First words of a sentence said without its subject, and the subject they take.
_FRAGMENT_BE: Final = frozenset(
    "allergic intolerant vegan vegetarian pescatarian married single divorced engaged widowed "
    "pregnant retired unemployed self-employed based originally living working studying "
    "learning training flying moving going heading starting leaving visiting travelling "
    "traveling getting expecting diabetic celiac coeliac left-handed right-handed "
    "terrified scared afraid obsessed".split()
)
_FRAGMENT_VERB: Final = frozenset(
    "love like hate enjoy prefer adore dislike work live have own drive speak play teach study "
    "moved quit started got grew want need".split()
)


def _fragment(text: str) -> tuple[str, CandidateKind] | None:
    """A sentence without its subject (``Allergic to penicillin``, ``Love hiking``): read and
    written with ``I``, if it then forms a memory."""
    words = text.split(None, 1)
    if len(words) < 2:
        return None
    first = words[0].lower()
    if first == "been":
        subject = "I've"
    elif first in _FRAGMENT_BE or (first == "not" and re.match(r"not\s+(?:a\s+)?(?:big\s+)?"
                                                               r"fan\b", text, _I)):
        subject = "I'm"
    elif first in _FRAGMENT_VERB or (first == "born"):
        subject = "I was" if first == "born" else "I"
    else:
        return None
    whole = f"{subject} {text[0].lower()}{text[1:]}"
    kind = _classify(whole)
    return None if kind is None else (whole, kind)


def _parts(sentence: str) -> list[tuple[str, CandidateKind]]:
    """The memories of one cleaned user sentence: its clauses that each form one, a clause
    that forms none kept with its neighbour."""
    lowered = sentence.lower()
    if _PROCEDURE.match(_strip_opener(sentence)) and not _SUBJUNCTIVE.search(sentence):
        return [(sentence, "procedure")]  # a routine or a standing instruction, whole
    if _HYPOTHETICAL_START.match(sentence):
        return []
    if sentence.endswith("?") and not _lasting_request(sentence):
        return []
    if _JOKE.search(lowered):
        return []
    pieces: list[tuple[str, str]] = []  # (separator before, text)
    cursor = 0
    separator = ""
    for found in _JOINED.finditer(sentence):
        if found.start() <= cursor:
            continue
        pieces.append((separator, sentence[cursor : found.start()]))
        separator = found.group()
        cursor = found.end()
    pieces.append((separator, sentence[cursor:]))
    groups: list[tuple[str, CandidateKind]] = []
    pending = ""  # leading words that form nothing, kept with the clause after them
    for separator, text in pieces:
        clause = text
        if _BARE_VERB_SPLIT.match(separator) and not re.match(r"^(?:i|we|my|our)\b", text, _I):
            we = groups and re.match(r"^(?:we|our)\b", _strip_opener(groups[-1][0]), _I)
            clause = ("We " if we else "I ") + text  # "I live in Lyon and work at Siemens"
        kind = _classify(clause) if text.strip() else None
        if kind is not None and groups and _BACK_REFERENCE.search(text):
            kind = None  # "I love dogs but I'm allergic to them": one fact, kept whole
        if kind is None and not groups and not pending:
            whole = _fragment(clause)  # "Allergic to penicillin", "Love hiking"
            if whole is not None:
                clause, kind = whole
        if kind is not None:
            groups.append((pending + separator + text, kind) if pending else (clause, kind))
            pending = ""
        elif groups:
            groups[-1] = (groups[-1][0] + separator + text, groups[-1][1])
        else:
            pending = pending + separator + text if pending else text
    return groups


# -- assistant and tool turns ----------------------------------------------------------------

_ASSISTANT_SKIP: Final = re.compile(
    r"^(?:you\s+(?:could|should|might|may|can|'d|would|will\s+want|need\s+to|must)|"
    r"i\s+(?:recommend|suggest|would|'d|can|could|think|believe|will|'ll|am\s+going\s+to)|"
    r"how\s+about|what\s+about|why\s+not|consider|try|maybe|perhaps|let\s+me|let's|if\s+you|"
    r"would\s+you|do\s+you|here\s+(?:is|are)|here's|feel\s+free|don't\s+forget|remember\s+to|"
    r"make\s+sure|it's\s+(?:a\s+)?(?:good|best|worth)|one\s+option|another\s+option)\b",
    _I,
)
_ASSISTANT_DID: Final = re.compile(
    r"^(?:i|we)(?:'ve|\s+have|\s+just|\s+also)?\s+" + _ADV + r"(?:booked|reserved|scheduled|"
    r"rescheduled|set\s+up|created|added|saved|noted|updated|changed|cancell?ed|ordered|sent|"
    r"renewed|registered|signed\s+you\s+up|enrolled|confirmed|moved|transferred|paid|"
    r"submitted|requested|arranged|put|marked|recorded|logged|set|blocked|emailed|texted|"
    r"forwarded|upgraded|downgraded|activated|deactivated|switched|applied|issued|refunded|"
    r"placed|opened|started|filed|raised|extended|reactivated|unsubscribed|subscribed|"
    r"removed|deleted|made\s+a\s+note|taken\s+note|remembered|stored|organi[sz]ed|"
    r"secured|locked\s+in|checked\s+you\s+in|rebooked|processed)\b",
    _I,
)
_ASSISTANT_YOUR: Final = re.compile(
    r"^your\s+(?:[\w'#-]+\s+){0,5}?(?:(?:is|are|has\s+been|have\s+been|was|were|will\s+be|"
    r"'s)\s+(?:now\s+|all\s+|officially\s+|successfully\s+)?(?:confirmed|booked|scheduled|"
    r"rescheduled|set|reserved|cancell?ed|shipped|delivered|renewed|moved|updated|approved|"
    r"registered|due|active|activated|expired|expiring|pending|on|at|for|in|ready|paid|"
    r"processed|dispatched|upgraded|downgraded|refunded|arriving|leaving|departing|valid|"
    r"set\s+up|open|closed|complete)|shipped|arrived|renews|expires|starts|begins|ends|"
    r"expired|renewed|ended|started|began|lapsed|"
    r"leaves|departs|lands|arrives|was\s+delivered|has\s+shipped|went\s+out)\b",
    _I,
)
_ASSISTANT_YOU: Final = re.compile(
    r"^you(?:'re|\s+are|'ve\s+been|\s+have\s+been)\s+(?:now\s+|all\s+)?(?:booked|registered|"
    r"confirmed|scheduled|signed\s+up|enrolled|subscribed|checked\s+in|set\s+for|on\s+the|"
    r"on\s+our|upgraded|moved|added|waitlisted|approved)\b|^you(?:'ve|\s+have)\s+(?:an?|your)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:appointment|reservation|booking|meeting|flight|session|class|"
    r"consultation|delivery|order)\b",
    _I,
)
_ASSISTANT_CLAUSE: Final = re.compile(r",\s*(?:but|and|so)\s+|;\s*|\s+and\s+(?=i've\b)", _I)
_ASSISTANT_OPENER: Final = re.compile(
    r"^(?:(?:ok(?:ay)?|done|great|perfect|all\s+set|got\s+it|sure|alright|noted|good\s+news|"
    r"excellent|wonderful|no\s+problem|of\s+course|certainly|absolutely|thanks|thank\s+you|"
    r"there\s+you\s+go|understood)\b[!,.:;\s\u2014-]*)+",
    _I,
)
_REMINDER: Final = re.compile(r"\b(?:reminder|calendar|appointment|alarm)\b", _I)
_YOU: Final = re.compile(r"\b(?:you|your|yours|you're|you've)\b", _I)
_BOOKING: Final = re.compile(
    r"\b(?:book(?:ed|ing)?|reserv\w+|schedul\w+|appointment|table|flight|ticket|delivery|"
    r"deliver\w*|ship\w*|arriv\w+|collect\w*|courier|technician|visit|renew\w*|expir\w+)\b",
    _I,
)


def _assistant(sentence: str) -> CandidateKind | None:
    core = _ASSISTANT_OPENER.sub("", sentence).strip()
    if not core or core.endswith("?") or _ASSISTANT_SKIP.match(core):
        return None
    you_are = re.match(r"^you(?:'re|\s+are)\s+", core, _I)
    if you_are is not None:
        mirrored = "I'm " + core[you_are.end() :]  # "got it, you're vegetarian"
        if _BE_FACT.match(mirrored) and not _TRANSIENT_STATE.match(mirrored):
            return "fact"
    clauses = [core, *(core[found.end() :] for found in _ASSISTANT_CLAUSE.finditer(core))]
    if not any(
        _ASSISTANT_DID.match(one) or _ASSISTANT_YOUR.match(one) or _ASSISTANT_YOU.match(one)
        for one in clauses
    ):
        return None
    if not (_YOU.search(core) or _BOOKING.search(core) or _REMINDER.search(core)):
        return None
    booked = _DATEISH.search(core) or _BOOKING.search(core) or _REMINDER.search(core)
    return "event" if booked else "fact"


_TOOL_KEY: Final = re.compile(
    r"\b(?:customer|client|user|account|member|membership|subscriber|subscription|plan|tier|"
    r"loyalty|billing|shipping|delivery|order|booking|reservation|appointment|patient|guest|"
    r"passenger|contract|policy|policyholder|holder|preferred)\b",
    _I,
)
_TOOL_PERSON: Final = re.compile(
    r"\b(?:customer|client|user|account\s+holder|subscriber|patient|guest|passenger|member|"
    r"policyholder|cardholder)(?:'s)?\b|\b(?:order|booking|reservation|ticket|case|invoice|"
    r"subscription|account|shipment|parcel|claim)\s+(?:no\.?\s*|number\s+|#|id\s+)?[A-Z]*-?\d{2,}",
    _I,
)
_TOOL_VERB: Final = re.compile(
    r"\b(?:is|are|was|were|has|have|had|shipped|delivered|renewed|renews|expires|expired|"
    r"registered|lives|located|upgraded|downgraded|cancell?ed|scheduled|confirmed|booked|"
    r"placed|paid|refunded|prefers|opted|opened|closed|joined|signed\s+up|moved|dispatched|"
    r"returned|created|updated|subscribed|holds|owns|since)\b",
    _I,
)
_TOOL_SKIP: Final = re.compile(
    r"^(?:please|ignore|you|do|don't|always|never|note|warning|error|assistant|system|"
    r"instructions?)\b|\b(?:should|must|ought)\b",
    _I,
)
_KEY_VALUE: Final = re.compile(
    r"^(?P<key>[A-Za-z][\w .'/-]{0,40}?)\s*[:=]\s*(?P<value>\S.{0,200})$"
)


def _flatten(document: object, prefix: str = "", depth: int = 0) -> list[str]:
    """A JSON object's scalar values as ``key: value`` lines, nested keys joined by spaces."""
    lines: list[str] = []
    if not isinstance(document, dict) or depth > 2:
        return lines
    for key, value in list(document.items())[:200]:
        name = f"{prefix} {key}".strip().replace("_", " ")
        if isinstance(value, dict):
            lines.extend(_flatten(value, name, depth + 1))
        elif isinstance(value, str | int | float) and not isinstance(value, bool):
            lines.append(f"{name[0].upper()}{name[1:]}: {value}")
    return lines


def _tool_lines(text: str) -> list[str]:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            document = json.loads(stripped)
        except ValueError:
            document = None
        if isinstance(document, dict):
            return _flatten(document)
    return sentences(_normalise(text))


def _tool(line: str) -> CandidateKind | None:
    line = line.strip().rstrip(".")
    if not line or "?" in line or len(line) > 300 or _TOOL_SKIP.search(line):
        return None
    pair = _KEY_VALUE.match(line)
    if pair is not None:
        key = pair["key"]
        if re.search(r"\b(?:id|token|password|secret|hash|key)\b", key, _I):
            return None
        if _TOOL_KEY.search(key):
            booking = re.search(r"booking|reservation|appointment|delivery", key, _I)
            return "event" if booking else "fact"
    if _TOOL_PERSON.search(line) and _TOOL_VERB.search(line):
        return "fact"
    return None


# -- the extractor ---------------------------------------------------------------------------

_Found = tuple[str, CandidateKind]


_TAKE_BACK: Final = re.compile(
    r"(?:(?:haha+|lol|lmao)\s*[,!.]*\s*)?(?:(?:just\s+)?(?:kidding|joking)|jk|j/k|not\s+really|"
    r"lol\s+no)(?:\s*[,!.]*\s*(?:haha+|lol|lmao))?",
    _I,
)


def _takes_back(sentence: str) -> bool:
    """A sentence that is only ``just kidding`` (or ``jk``, ``not really`` ...)."""
    return bool(_TAKE_BACK.fullmatch(sentence.strip(" .!")))


# -- who "she", "he", "it" and "they" are ------------------------------------------------------

_FEMALE: Final = frozenset(
    "wife girlfriend fiancee fiancée daughter daughters mom mum mother mommy mummy sister "
    "sisters grandma grandmother aunt niece granddaughter stepdaughter stepmom landlady "
    "wife-to-be".split()
)
_MALE: Final = frozenset(
    "husband boyfriend fiance fiancé son sons dad father daddy brother brothers grandpa "
    "grandfather uncle nephew grandson stepson stepdad landlord husband-to-be".split()
)
_PLURAL: Final = frozenset(
    "kids children twins parents siblings brothers sisters grandparents grandkids "
    "grandchildren in-laws dogs cats pets sons daughters babies family household".split()
)
_PETS: Final = frozenset(
    "dog cat puppy kitten pet horse parrot rabbit bunny hamster goldfish tortoise turtle".split()
)
_THINGS: Final = frozenset(
    "car laptop computer phone tablet bike motorbike house flat apartment business shop company "
    "van truck boat team".split()
)
_REFERENT: Final = re.compile(
    r"\b(?:my|our)\s+(?:(?:new|little|big|older|younger|eldest|youngest|oldest|best|old|baby|"
    r"twin|step|late|first|second)\s+)?(?P<noun>" + _RELATION + r"|car|laptop|computer|phone|"
    r"tablet|bike|motorbike|house|flat|apartment|business|shop|van|truck|boat)\b"
    r"(?:,?\s+(?-i:(?P<name>[A-Z][a-z]+))\b)?",
    _I,
)
_PRONOUN_START: Final = re.compile(
    r"^(?P<pronoun>she|he|it|they)(?P<verb>'s|'re|\s+(?:is|are|was|were|has|have|had|just|also|"
    r"still|now|only|loves|likes|hates|works|lives|plays|goes|turned|turns|starts|started|"
    r"needs|takes|eats|gets|got|can't|cannot|doesn't|don't|isn't|aren't|won't|will|'ll)\b)",
    _I,
)


@dataclass(slots=True)
class _Said:
    """What a conversation has said so far that later sentences lean on."""

    referent: tuple[str, str] | None = None  # ("my dog Luna", "dog")
    age: int = 0  # user turns since the referent was named
    pronoun: str | None = None  # the pronoun it was last called by


def _fits(pronoun: str, noun: str, named: bool) -> bool:
    noun = noun.lower().split()[-1]
    if pronoun == "it":
        return noun in _THINGS or noun in _PETS
    if pronoun == "they":
        return noun in _PLURAL or noun in ("partner", "team", "company")
    if noun in _THINGS or noun in _PLURAL:
        return False
    other = _MALE if pronoun == "she" else _FEMALE
    return noun not in other or named


def _with_referent(sentence: str, said: _Said) -> str | None:
    """``She's 9`` said after ``my dog Luna ...`` as ``My dog Luna is 9``; else ``None``."""
    found = _PRONOUN_START.match(sentence)
    if found is None or said.referent is None:
        return None
    pronoun = found["pronoun"].lower()
    phrase, noun = said.referent
    if said.pronoun is not None and said.pronoun != pronoun:
        return None  # "she" then "he": someone else
    if not _fits(pronoun, noun, named=bool(re.search(r"\s[A-Z][a-z]+$", phrase))):
        return None
    verb = found["verb"]
    rest = sentence[found.end() :]
    if verb == "'s":
        perfect = re.match(r"\s+(?:got|been|had|gone|done|just\s+\w+ed)\b", rest, _I)
        verb = " has" if perfect else " is"
    elif verb == "'re":
        verb = " are"
    return phrase[0].upper() + phrase[1:] + verb + rest


def _note_referent(sentence: str, said: _Said) -> None:
    named = list(_REFERENT.finditer(sentence))
    if named:
        last = named[-1]
        said.referent = (last.group().rstrip(","), last["noun"])
        said.age = 0
        said.pronoun = None


def _user(text: str, said: _Said | None = None) -> list[_Found]:
    said = _Said() if said is None else said
    found: list[_Found] = []
    for sentence in sentences(_normalise(text)):
        cleaned = _clean(sentence)
        if not cleaned:
            continue
        if _takes_back(cleaned):
            if found:
                found.pop()  # "just kidding" takes back what was said just before
            continue
        formed: list[_Found] = []
        for piece in _bounded(cleaned):
            formed.extend(_parts(piece))
        if not formed:
            whole = _with_referent(cleaned, said)  # "She's 9 and a golden retriever."
            if whole is not None:
                formed = _parts(whole)
                if formed:
                    said.age = 0
                    said.pronoun = cleaned.split(None, 1)[0].lower().split("'")[0]
        found.extend(formed)
        _note_referent(cleaned, said)
    return found


def _bounded(sentence: str) -> list[str]:
    """``sentence``, or a longer one than :data:`MAX_CANDIDATE_CHARS` cut at its clause marks
    (a clause still longer forms nothing: the caller drops it)."""
    if len(sentence) <= MAX_CANDIDATE_CHARS:
        return [sentence]
    pieces = re.split(r"(?<=[,;:])\s+|\s+[-\u2013\u2014]\s+", sentence)
    return [piece.strip(" ,;:") for piece in pieces if piece.strip(" ,;:")]


def _assistant_found(text: str) -> list[_Found]:
    out: list[_Found] = []
    for sentence in sentences(_normalise(text)):
        for piece in _bounded(_clean(sentence)):
            kind = _assistant(piece) if piece else None
            if kind is not None:
                out.append((_ASSISTANT_OPENER.sub("", piece).strip(), kind))
    return out


def _tool_found(text: str) -> list[_Found]:
    out: list[_Found] = []
    for line in _tool_lines(text):
        for piece in _bounded(_normalise(line).strip()):
            kind = _tool(piece)
            if kind is not None:
                out.append((piece.rstrip("."), kind))
    return out


# -- short answers to the assistant's questions -------------------------------------------------

#: Questions an assistant asks about the person, and how a short answer is written as a fact:
#: ``{}`` is the answer, ``{a}`` its article. Tried in order.
_QUESTION_TABLE: Final[tuple[tuple[str, str, CandidateKind], ...]] = (
    (r"\bwhat(?:'s|\s+is)\s+your\s+(?:first\s+|full\s+)?name\b|\bwhat\s+(?:should|can)\s+"
     r"i\s+call\s+you\b|\bwho\s+am\s+i\s+(?:speaking|talking|chatting)\s+(?:to|with)\b",
     "My name is {}.", "fact"),
    (r"\bwhere\s+(?:do\s+you\s+live|are\s+you\s+(?:based|located|living)|is\s+home)\b",
     "I live in {}.", "fact"),
    (r"\bwhere\s+(?:are\s+you\s+(?:from|originally\s+from)|do\s+you\s+come\s+from)\b",
     "I'm from {}.", "fact"),
    (r"\bwhere\s+did\s+you\s+grow\s+up\b", "I grew up in {}.", "fact"),
    (r"\bwhere\s+do\s+you\s+work\b|\bwho\s+do\s+you\s+work\s+for\b|\bwhich\s+company\b",
     "I work at {}.", "fact"),
    (r"\bhow\s+old\s+are\s+you\b|\bwhat(?:'s|\s+is)\s+your\s+age\b", "I'm {}.", "fact"),
    (r"\bwhat\s+do\s+you\s+do(?:\s+for\s+(?:work|a\s+living))?\b|\bwhat(?:'s|\s+is)\s+your\s+"
     r"(?:job|profession|occupation|line\s+of\s+work)\b", "I'm {a}{}.", "fact"),
    (r"\b(?:any|have\s+any)\s+(?:food\s+)?allerg(?:ies|y)\b|\ballergic\s+to\s+anything\b",
     "I'm allergic to {}.", "fact"),
    (r"\bdietary\s+(?:restrictions?|requirements?|preferences?|needs)\b|\bdo\s+you\s+eat\s+"
     r"(?:meat|fish|dairy)\b", "My dietary requirements: {}.", "fact"),
    (r"\b(?:do\s+you\s+have\s+any|how\s+many)\s+(?P<noun>kids|children|pets|siblings|"
     r"brothers|sisters|cats|dogs)\b", "I have {}.", "fact"),
    (r"\bwhen(?:'s|\s+is)\s+your\s+birthday\b", "My birthday is {}.", "fact"),
    (r"\b(?:a|your|the)\s+budget\b|\bhow\s+much\s+(?:do\s+you\s+want|are\s+you\s+"
     r"(?:willing|looking|happy))\s+to\s+spend\b", "My budget is {}.", "preference"),
    (r"\b(?:your|the)\s+(?P<noun>(?:order|booking|reservation|account|membership|customer|"
     r"policy|ticket|tracking|reference|confirmation)\s+(?:number|id|no\.?|reference|code))\b",
     "My {noun} is {}.", "fact"),
    (r"\bwhat(?:'s|\s+is)\s+your\s+(?P<noun>email(?:\s+address)?|e-mail|phone\s+number|"
     r"(?:mobile|cell)\s+number|number|address|postcode|zip\s+code)\b", "My {noun} is {}.",
     "fact"),
    (r"\bhow\s+(?:should|would\s+you\s+like|do\s+you\s+prefer|can|shall)\s+(?:we|i)\s+"
     r"(?:contact|reach)\s+you\b|\bpreferred\s+(?:contact|way\s+to\s+be\s+contacted)\b",
     "I prefer to be contacted by {}.", "preference"),
    (r"\b(?:what(?:'s|\s+is|\s+are)\s+your|do\s+you\s+have\s+a|any)\s+favou?rites?\s+"
     r"(?P<noun>[\w-]+(?:\s+(?!yet\b|at\b|in\b|for\b)[\w-]+)?)\b",
     "My favourite {noun} is {}.", "preference"),
    (r"\bwhich\s+language\b.*\b(?:prefer|like)\b|\bwhat\s+language\s+(?:do\s+you\s+)?"
     r"prefer\b", "I prefer {}.", "preference"),
)
_QUESTIONS: Final = tuple(
    (re.compile(question, _I), template, kind) for question, template, kind in _QUESTION_TABLE
)
_ANSWER_LEAD: Final = re.compile(
    r"^(?:(?:yes|yeah|yep|yup|sure|well|um+|uh+|oh|ok|okay|it's|its|it\s+is|that's|that\s+would\s+"
    r"be|i'm|i\s+am|my\s+name\s+is|call\s+me|in|at|by|via|from|just|only|actually|i\s+have|"
    r"i've\s+got|i\s+live\s+in|i\s+work\s+at)\b[\s,.:!-]*)+",
    _I,
)
#: Templates whose answer is a name, kept as written.
_PROPER_ANSWERS: Final = frozenset(
    {"I live in {}.", "I'm from {}.", "I grew up in {}.", "I work at {}.", "My {noun} is {}.",
     "I prefer {}.", "I prefer to be contacted by {}."}
)
_COUNTED: Final = re.compile(
    r"\b(?:kids?|children|child|pets?|siblings?|brothers?|sisters?|cats?|dogs?|sons?|"
    r"daughters?|boys?|girls?|twins|hamsters?|rabbits?|birds?|fish)\b",
    _I,
)
_NO_ANSWER: Final = re.compile(
    r"^(?:no|nope|nah|none|nothing|not\s+really|i\s+don't\s+know|dunno|not\s+sure|no\s+idea|"
    r"i'd\s+rather\s+not(?:\s+say)?|pass|skip|why|what|huh|maybe|later|n/?a|idk)\b",
    _I,
)


def _answer(question: str, answer: str) -> list[_Found]:
    """A short answer (``Lisbon.``, ``Yes, peanuts``) to a question the assistant asked about
    the person, written as the fact it gives (``I live in Lisbon.``)."""
    text = _clean(_normalise(answer)).strip(" .!")
    if not text or "?" in text or _NO_ANSWER.match(text) or _takes_back(text):
        return []
    value = _ANSWER_LEAD.sub("", text).strip(" .,!")
    value = re.sub(r"[\s,]+(?:please|thanks|thank\s+you|thx|cheers)$", "", value, flags=_I)
    if not value or len(value.split()) > 6 or _NO_ANSWER.match(value):
        return []
    for pattern, template, kind in _QUESTIONS:
        asked = pattern.search(question)
        if asked is None:
            continue
        noun = asked.groupdict().get("noun") or ""
        if template == "I have {}." and noun and not _COUNTED.search(value):
            value = f"{value} {noun.lower()}"  # "Yes, two." to "I have two kids."
        if template.startswith("My name"):
            words = value.split()
            if len(words) > 3 or not all(w.replace("-", "").replace("'", "").isalpha()
                                         for w in words) or words[0].lower() in _NOT_NAMES:
                return []
            value = " ".join(w if w[0].isupper() else w.capitalize() for w in words)
        elif (template not in _PROPER_ANSWERS and re.match(r"^[A-Z][a-z]*\b", value)
              and not re.match(r"^(?:" + _MONTH + r"|" + _WD + r")\b", value, _I)):
            value = value[0].lower() + value[1:]  # "Nurse." is "a nurse", "A dog" is "a dog"
        article = ""
        if "{a}" in template and not re.match(r"^(?:a|an|the|my)\s", value, _I):
            article = "an " if value[:1].lower() in "aeiou" else "a "
        written = template.replace("{a}", article).replace("{noun}", noun.lower())
        return [(written.replace("{}", value), kind)]
    return []


_READERS: Final[dict[str, Callable[[str], list[_Found]]]] = {
    "assistant": _assistant_found, "tool": _tool_found,
}


@dataclass(slots=True)
class _Conversation:
    """What :func:`extract` carries from one turn to the next."""

    said: _Said = field(default_factory=_Said)
    question: str | None = None  # the assistant's last question, for a short answer to it
    last_user: int | None = None  # the index of the last user turn


def _read(turn: Turn, conversation: _Conversation) -> tuple[list[_Found], bool]:
    """The memories of one turn, and whether it takes back the user's last one (``jk``)."""
    if turn.role != "user":
        found = _READERS[turn.role](turn.text)
        if turn.role == "assistant":
            said = sentences(_normalise(turn.text))
            conversation.question = next((one for one in reversed(said) if one.endswith("?")),
                                         None)
        return found, False
    said = sentences(_normalise(turn.text))
    takes_back = bool(said) and _takes_back(_clean(said[0]))
    context = conversation.said
    context.age += 1
    if context.age > 2:
        context.referent = None  # "she" two turns on may be someone else
    found = _user(turn.text, context)
    if conversation.question is not None and said and not _user(said[0]):
        found = _answer(conversation.question, said[0]) + found  # "Manchester." / "Yes, two."
    conversation.question = None
    return found, takes_back


def extract(turns: Sequence[Turn], *, now: datetime) -> list[Candidate]:
    """The candidate memories of a conversation's ``turns``, in the order said.

    Each turn's relative dates are resolved against its ``at``, or ``now`` when it has none.
    A text said twice in the conversation is one candidate (its first turn).
    """
    out: list[Candidate] = []
    seen: set[str] = set()
    conversation = _Conversation()
    for turn in turns:
        if turn.role not in ("user", "assistant", "tool") or not turn.text.strip():
            continue
        found, takes_back = _read(turn, conversation)
        if turn.role == "user":
            if takes_back and out and out[-1].turn == conversation.last_user:
                seen.discard(out.pop().text.casefold())  # "jk" said in the next turn
            conversation.last_user = turn.index
        moment = turn.at if turn.at is not None else now
        for text, kind in found:
            if len(text.strip(_ENDS)) > MAX_CANDIDATE_CHARS:
                continue  # too long to keep, and resolving only lengthens it
            resolved = resolve(text, moment)
            written = _finish(resolved.text)
            key = written.casefold()
            if not written or len(written) > MAX_CANDIDATE_CHARS or key in seen:
                continue
            seen.add(key)
            out.append(
                Candidate(
                    text=written,
                    kind=kind,
                    role=turn.role,
                    turn=turn.index,
                    valid_from=resolved.valid_from,
                )
            )
    return out
