"""Formation at write: how a new memory relates to the closest ones held, decided without a model.

:func:`classify` compares a candidate text with its neighbours (the memories a search of the
same scope found closest, already opened) and returns one :class:`Decision`: ``duplicate``,
``supersession``, ``refinement``, ``contradiction``, ``related`` or ``novel``, the neighbour
it was decided against, and a content-free reason code. It is a pure function of the texts,
the neighbours' cosines and a few word lists; nothing here touches a store or a key.

The signals (ADR 0086 says why each is there and where it fails):

* the *content terms* of each text (:func:`mainsdk_memory._text.index_terms`: stemmed, no
  stopwords), their overlap and what each side holds that the other does not;
* *attribute classes*: words that name one changeable attribute of a person (where they
  live, where they work, their phone, partner, diet, favourite things …), so "lives in
  Lisbon" and "moved to Porto" share a frame although they share no word;
* *polarity*: a negation on one side only;
* *change cues*: words that say a value replaced another ("now", "moved", "switched", "no
  longer", "from … to", "new") — the clearest sign of a supersession;
* *fixed attributes*: birthdays, birthplaces, blood type: another value is a contradiction,
  never a change;
* *dates*: two dated events of one kind on other days are separate, related memories.

The cues are English; in other languages formation decides duplicates, refinements, related
and novel memories from the terms and vectors alone, and typed facts (``data=`` with a
``fact_key``) supersede exactly in every language.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from mainsdk_memory._mentions import mentions
from mainsdk_memory._text import DEFAULT_LANGUAGE, index_terms

__all__ = [
    "OUTCOMES",
    "REASONS",
    "Decision",
    "Neighbour",
    "Outcome",
    "WordSimilarity",
    "classify",
    "refined_text",
]

Outcome = Literal["novel", "duplicate", "supersession", "refinement", "contradiction", "related"]
OUTCOMES: tuple[Outcome, ...] = (
    "novel",
    "duplicate",
    "supersession",
    "refinement",
    "contradiction",
    "related",
)

#: Every reason a decision can give: codes, never content.
REASONS: Final = frozenset(
    {
        "nothing-close",
        "same-text",
        "same-terms",
        "same-meaning",
        "same-key",
        "same-key-same-value",
        "says-it-changed",
        "new-value",
        "negation",
        "fixed-attribute",
        "another-date",
        "adds-detail",
        "shares-terms",
        "close-meaning",
        "formation-off",
        "not-allowed",
    }
)


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A memory held close to the candidate, opened: its id, text and how close it is."""

    memory_id: str
    text: str
    cosine: float | None = None
    """The cosine of the two embeddings, when the store has an embedder."""
    language: str = DEFAULT_LANGUAGE


@dataclass(frozen=True, slots=True)
class Decision:
    """What formation decided: the outcome, the neighbour it is about, and why (a code)."""

    outcome: Outcome
    target: str | None
    reason: str


# -- the word lists ------------------------------------------------------------------------

_WORD: Final = re.compile(r"[\w]+(?:['\u2019][\w]+)?")
_DIGITS: Final = re.compile(r"\d")
_YEAR: Final = re.compile(r"(?:19|20)\d\d")

_NEGATIONS: Final = frozenset(
    {
        "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without",
        "cannot", "can't", "won't", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't",
        "weren't", "hasn't", "haven't", "hadn't", "shouldn't", "wouldn't", "couldn't",
        "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "hasnt", "havent", "cant", "wont",
        "nope",
    }
)  # fmt: skip
#: Negations that also say the old state ended: a supersession, not a contradiction.
_ENDINGS: Final = (
    "no longer", "not anymore", "anymore", "any more", "stopped", "quit", "gave up",
    "used to", "no more", "not any longer", "isn't … anymore", "ended", "broke up",
    "left", "retired", "sold", "cancelled", "canceled",
)  # fmt: skip
_CHANGES: Final = (
    "now", "moved", "moving", "switched", "switching", "changed", "changing", "new",
    "instead", "nowadays", "these days", "currently", "relocated", "replaced", "upgraded",
    "became", "got married", "just started", "started", "starting", "joined", "promoted",
    "took a job", "got a job", "updated", "since", "no longer", "anymore", "from", "as of",
    "recently", "has become", "is now", "are now", "went from", "swapped", "transferred",
    "decided", "rescheduled", "postponed", "pushed", "bumped", "renamed", "changed to",
)  # fmt: skip
_FIXED: Final = (
    "born", "birthday", "birth", "birthplace", "blood type", "blood group", "grew up",
    "native", "hometown", "first language", "mother tongue", "was raised", "zodiac",
    "graduated", "maiden name",
)  # fmt: skip
_MONTHS: Final = frozenset(
    {
        "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun",
        "jul", "aug", "sep", "sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday",
        "thursday", "friday", "saturday", "sunday", "yesterday", "today", "tomorrow",
        "weekend", "christmas", "easter",
    }
)  # fmt: skip

#: Attribute classes: the stems (English Snowball) that name one attribute a person has one
#: value of at a time. Two texts that name the same class speak of the same attribute.
_ATTRIBUTES: Final[dict[str, frozenset[str]]] = {
    "residence": frozenset(
        {"live", "move", "reloc", "home", "resid", "address", "apart", "flat", "hous",
         "base", "stay", "neighborhood", "neighbourhood"}
    ),
    "work": frozenset(
        {"work", "job", "employ", "employer", "join", "hire", "posit", "role", "compani",
         "offic", "career", "titl", "promot", "intern", "freelanc", "contract"}
    ),
    "manager": frozenset({"manag", "boss", "supervisor", "lead", "report"}),
    "phone": frozenset({"phone", "number", "mobil", "cell", "cellphon", "telephon"}),
    "email": frozenset({"email", "mail", "inbox"}),
    "partner": frozenset(
        {"marri", "wife", "husband", "partner", "girlfriend", "boyfriend", "date",
         "engag", "divorc", "spous", "fianc", "fiance", "fiancé", "fiancée", "relationship"}
    ),
    "diet": frozenset(
        {"vegetarian", "vegan", "meat", "diet", "pescatarian", "gluten", "keto", "eat",
         "dairi", "lactos"}
    ),
    "favourite": frozenset({"favorit", "favourit", "prefer", "prefe", "rather"}),
    "car": frozenset({"car", "drive", "vehicl"}),
    "school": frozenset({"school", "studi", "univers", "colleg", "degre", "major", "student"}),
    "schedule": frozenset(
        {"meet", "appoint", "schedul", "resched", "call", "class", "lesson", "shift",
         "deadlin", "flight", "reserv", "book"}
    ),
    "language": frozenset({"languag", "speak", "learn"}),
    "pet": frozenset({"dog", "cat", "pet", "puppi", "kitten"}),
    "age": frozenset({"age", "old", "turn"}),
    "birth": frozenset({"born", "birthday", "birth", "birthplac", "birthdat"}),
    "name": frozenset({"name", "call", "nicknam"}),
    "timezone": frozenset({"timezon", "zone"}),
    "bank": frozenset({"bank", "account", "iban", "card", "credit"}),
    "pay": frozenset({"rent", "salari", "wage", "mortgag", "rate", "pay", "earn", "budget"}),
    "device": frozenset({"laptop", "phone", "comput", "iphon", "android", "tablet"}),
    "health": frozenset(
        {"medic", "medicin", "prescript", "dose", "doctor", "dentist", "therapist"}
    ),
    "hobby": frozenset({"play", "hobbi", "sport"}),
}  # fmt: skip
_CLASS_OF: Final[dict[str, frozenset[str]]] = {}
for _name, _stems in _ATTRIBUTES.items():
    for _stem in _stems:
        _CLASS_OF[_stem] = _CLASS_OF.get(_stem, frozenset()) | {_name}

#: Attributes whose values coexist: two different values are related facts, not a change.
_MANY_VALUED: Final = frozenset({"hobby", "language", "pet", "schedule", "health"})

# -- thresholds (chosen on tools/formation_dev_set.py; ADR 0086) -----------------------------

#: Similarity (the greater of the cosine and the term overlap) under which nothing held is
#: about the same thing as the candidate.
RELATED: Final = 0.42
#: Similarity from which a text with nothing of its own says what a memory says.
SAME: Final = 0.78
#: Similarity from which two texts speak of one attribute (for a change or a contradiction).
FRAME: Final = 0.5
#: Word cosine from which two words are near-synonyms (doctor and physician 0.82; home and
#: house 0.72; chemistry and history 0.10; window and aisle 0.0).
SYNONYM: Final = 0.6
#: How many words of its own each side of a paraphrase may hold (no name, no number).
PARAPHRASE: Final = 2
#: Share of the neighbour's terms the candidate must hold to refine it.
REFINES: Final = 0.7
#: Share of terms two texts must have in common for one to change or contradict the other.
SHARED: Final = 0.2
#: Content terms from which a text is a message, not a fact: no change or contradiction.
LONG: Final = 12

#: Words that name who a memory is about, not what it says ("I live …", "Ben lives …").
_SUBJECT_WORDS: Final = frozenset(
    {"i", "im", "i'm", "i've", "i'd", "my", "me", "mine", "user", "user's", "users", "she",
     "he", "her", "his", "they", "their", "we", "our", "us", "ive", "id"}
)  # fmt: skip
_NUMBER_WORDS: Final = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5",
}  # fmt: skip
#: A few words everyday memories use for one thing.
_SYNONYMS: Final = {
    "physician": "doctor", "gp": "doctor", "kid": "child", "children": "child",
    "kids": "child", "mom": "mother", "mum": "mother", "mam": "mother", "dad": "father",
    "begin": "start", "begins": "start", "backyard": "garden", "cilantro": "coriander",
    "favorite": "favourite", "color": "colour", "rather": "prefer", "doesn": "not",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Text:
    """What the classifier reads of one text."""

    terms: frozenset[str]
    """Content terms, subject words and a subject name left out."""
    classes: frozenset[str]
    folded: str
    negated: bool
    dated: frozenset[str]
    numbers: Counter[str]
    """The numbers it holds, each as often as it is written."""
    names: frozenset[str]
    """Capitalised words inside the text (not the first): names of people, places, things."""
    first: frozenset[str]
    """The first word's terms, when it is capitalised (a name, or just a sentence start)."""
    written: dict[str, str]
    """Each term's first word as written (what a word similarity compares)."""


#: A number as written: digits, with the separators of thousands, times and phone numbers.
_NUMERAL: Final = re.compile(r"\d(?:[\d,.:]|\s(?=\d{3}))*\d|\d")
_CAPITALISED: Final = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'\u2019-]+)")


def _number(written: str) -> str | None:
    digits = "".join(ch for ch in written if ch.isdigit())
    return digits.lstrip("0") or ("0" if digits else None)


@functools.lru_cache(maxsize=4096)
def _read(text: str, language: str) -> _Text:
    folded = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    words = _WORD.findall(folded)
    english = language == DEFAULT_LANGUAGE
    raw_first = _WORD.findall(unicodedata.normalize("NFKC", text))
    subject_name = None
    if raw_first and raw_first[0][:1].isupper() and len(words) > 2:
        first = raw_first[0]
        # A name that starts the text is whom it is about ("Ada lives …"); a capitalised
        # word that is not a name is a sentence start ("Allergic to nuts.").
        if any(found.name.split()[0] == first for found in mentions(text, language)):
            subject_name = frozenset(index_terms(first, language))
    numbers = Counter(_number(found.group()) or "0" for found in _NUMERAL.finditer(folded))
    numbers.update(_NUMBER_WORDS[word] for word in words if word in _NUMBER_WORDS)
    terms = set()
    written: dict[str, str] = {}
    for word in words:
        if word in _SUBJECT_WORDS:
            continue
        for term in index_terms(word, language):
            if _DIGITS.search(term) or term in _NUMBER_WORDS:
                continue  # numbers are compared as numbers
            term = _SYNONYMS.get(term, term)
            terms.add(term)
            written.setdefault(term, word)
    if subject_name and english:
        terms -= subject_name
    names = frozenset(
        term
        for match in _CAPITALISED.finditer(text)
        for term in index_terms(match.group(1), language)
    )
    classes: frozenset[str] = frozenset()
    if english:
        classes = frozenset(name for term in terms for name in _CLASS_OF.get(term, ()))
    return _Text(
        terms=frozenset(terms),
        classes=classes,
        folded=" " + " ".join(words) + " ",
        negated=english and any(word in _NEGATIONS for word in words),
        dated=frozenset(
            word for word in words if word in _MONTHS or _YEAR.fullmatch(word)
        ),
        numbers=numbers,
        names=names,
        first=subject_name or frozenset(),
        written=written,
    )


def _says(text: _Text, phrases: Sequence[str]) -> bool:
    return any(f" {phrase} " in text.folded for phrase in phrases)


def _normal(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    return " ".join(_WORD.findall(folded))


def _alike(one: str, other: str) -> bool:
    """Whether two terms are one word misspelt, or one the start of the other."""
    if len(one) >= 4 and len(other) >= 4 and (one.startswith(other) or other.startswith(one)):
        return True
    if min(len(one), len(other)) < 5 or abs(len(one) - len(other)) > 1:
        return False
    return _one_edit(one, other)


def _one_edit(one: str, other: str) -> bool:
    if len(one) > len(other):
        one, other = other, one
    for place, (a, b) in enumerate(zip(one, other, strict=False)):
        if a != b:
            if len(one) == len(other):
                return one[place + 1 :] == other[place + 1 :]
            return one[place:] == other[place + 1 :]
    return True


def _unmatched(mine: frozenset[str], theirs: frozenset[str]) -> frozenset[str]:
    """Terms of ``mine`` with no equal or alike term in ``theirs`` (alike terms share their
    first letter or their last two: a typo elsewhere is one edit, a longer word a prefix)."""
    left = mine - theirs
    if not left:
        return left
    by_start: dict[str, list[str]] = {}
    by_end: dict[str, list[str]] = {}
    for other in theirs - mine:
        by_start.setdefault(other[:1], []).append(other)
        by_end.setdefault(other[-2:], []).append(other)
    return frozenset(
        term
        for term in left
        if not any(
            _alike(term, other)
            for other in (*by_start.get(term[:1], ()), *by_end.get(term[-2:], ()))
        )
    )


# -- the decision --------------------------------------------------------------------------


WordSimilarity = Callable[[str, str], float]
"""The cosine of two words' embeddings (the store's embedder), or nothing without one."""


def classify(
    candidate: str,
    neighbours: Sequence[Neighbour],
    *,
    language: str = DEFAULT_LANGUAGE,
    similar: WordSimilarity | None = None,
) -> Decision:
    """How ``candidate`` relates to ``neighbours`` (closest first), as one :class:`Decision`.

    ``similar`` compares single words (a paraphrase is a duplicate only when each word of
    its own has a near-synonym on the other side); without it (no embedder, a child's
    memory) only texts with the same terms are duplicates."""
    if not neighbours:
        return Decision("novel", None, "nothing-close")
    normal = _normal(candidate)
    for neighbour in neighbours:
        if _normal(neighbour.text) == normal:
            return Decision("duplicate", neighbour.memory_id, "same-text")
    english = language == DEFAULT_LANGUAGE
    new = _read(candidate, language)
    best: tuple[float, Neighbour, _Text] | None = None
    for neighbour in neighbours:
        held = _read(neighbour.text, neighbour.language)
        closeness = _similarity(new, held, neighbour)
        if best is None or closeness > best[0]:
            best = (closeness, neighbour, held)
    assert best is not None  # noqa: S101 - there is a neighbour
    closeness, neighbour, held = best
    same_attribute = bool((new.classes & held.classes) - _MANY_VALUED)
    if closeness < RELATED and not _shared_names(new, held) and not same_attribute:
        return Decision("novel", None, "nothing-close")
    return _against(new, held, neighbour.memory_id, closeness, english, similar)


def _fact_sized(new: _Text, held: _Text) -> bool:
    """Whether both texts are the size of a fact or two: a long message says many things,
    and one of its words (a "not", a "new") is no claim about the memory it resembles."""
    return max(len(new.terms), len(held.terms)) <= LONG


def _overlap(new: _Text, held: _Text) -> float:
    """The share of the two texts' terms they hold in common (alike terms count)."""
    union = new.terms | held.terms
    if not union:
        return 0.0
    missing = _unmatched(new.terms, held.terms) | _unmatched(held.terms, new.terms)
    return 1.0 - len(missing) / len(union)


def _similarity(new: _Text, held: _Text, neighbour: Neighbour) -> float:
    """How close two texts are: the cosine, or the share of terms (alike ones count) when
    that is greater; a shared name lifts it a little."""
    cosine = neighbour.cosine if neighbour.cosine is not None else 0.0
    return max(cosine, _overlap(new, held)) + (0.1 if _shared_names(new, held) else 0.0)


def _shared_names(new: _Text, held: _Text) -> frozenset[str]:
    """Names both texts hold, but not one that starts both (the person a memory is about
    starts most of their memories: "Ada lives …", "Ada has …")."""
    return (new.names & (held.names | held.first)) | (new.first & held.names)


def _against(
    new: _Text,
    held: _Text,
    target: str,
    closeness: float,
    english: bool,
    similar: WordSimilarity | None,
) -> Decision:
    """The decision against the closest neighbour (see the module docstring)."""
    only_new = _unmatched(new.terms, held.terms)
    only_held = _unmatched(held.terms, new.terms)
    # A number of its own on each side (another time, another amount); one that only adds
    # a number ("June 14" to "14/06") says no other value.
    numbers_differ = bool(new.numbers - held.numbers) and bool(held.numbers - new.numbers)
    facts = _fact_sized(new, held)
    shared = _overlap(new, held) >= SHARED
    exclusive = bool((new.classes & held.classes) - _MANY_VALUED)
    claims = english and facts  # cues are read in English, in texts the size of a fact
    if not english:
        # Outside English a negation is a stopword ("nicht", "pas"): two texts with the same
        # terms may say opposite things, so only the same words are a duplicate (above).
        if facts and only_new and 1 - len(only_held) / (len(held.terms) or 1) >= REFINES:
            return Decision("refinement", target, "adds-detail")
        return Decision("related", target, "shares-terms")
    if _subject_kin(new) != _subject_kin(held) or (
        _holders(new) != _holders(held) and _holders(new) and _holders(held)
    ):
        # "My sister lives in Lisbon" is no version of "My brother lives in Lisbon" (nor of
        # "I live in Lisbon"), nor "Ben is allergic to peanuts" a repeat of "Tom is allergic
        # to peanuts"; "I moved to Porto" still replaces "I live in Lisbon with my husband".
        return Decision("related", target, "shares-terms")
    if claims and new.negated != held.negated and closeness >= FRAME and (shared or exclusive):
        if _says(new, _ENDINGS):
            return Decision("supersession", target, "says-it-changed")
        return Decision("contradiction", target, "negation")
    says_more = bool(new.numbers - held.numbers)  # a number the held text does not hold
    if not only_new and not says_more and (not only_held or closeness >= SAME):
        return Decision("duplicate", target, "same-terms")
    named = (only_new & new.names) or (only_held & held.names)
    if (
        facts
        and similar is not None
        and (only_held or not only_new)  # words of its own and none lost: it adds detail
        and _synonyms(new, only_new, held, only_held, similar)
        and closeness >= SAME
        and not says_more
        and not named
        and new.negated == held.negated
        and len(only_new) <= PARAPHRASE
        and len(only_held) <= PARAPHRASE
    ):
        return Decision("duplicate", target, "same-meaning")
    values_differ = numbers_differ or (bool(only_new) and bool(only_held))
    if claims and values_differ and (shared or exclusive) and (closeness >= FRAME or exclusive):
        if _says(new, _FIXED) or _says(held, _FIXED):
            return Decision("contradiction", target, "fixed-attribute")
        if new.dated and held.dated and new.dated != held.dated and not _says(new, _CHANGES):
            return Decision("related", target, "another-date")
        if _says(new, _CHANGES) or _says(new, _ENDINGS):
            return Decision("supersession", target, "says-it-changed")
        if exclusive:
            return Decision("supersession", target, "new-value")
    if claims and _says(new, _ENDINGS) and closeness >= RELATED and (shared or exclusive):
        return Decision("supersession", target, "says-it-changed")
    held_terms = len(held.terms) or 1
    if facts and only_new and 1 - len(only_held) / held_terms >= REFINES:
        return Decision("refinement", target, "adds-detail")
    return Decision("related", target, "shares-terms" if closeness < SAME else "close-meaning")


#: Words that say whose fact it is: a relative, a partner, a colleague.
_KIN: Final = frozenset(
    {
        "mother", "father", "sister", "brother", "son", "daughter", "wife", "husband",
        "partner", "girlfriend", "boyfriend", "fiance", "fiancee", "grandmother",
        "grandfather", "grandma", "grandpa", "aunt", "uncle", "cousin", "niece", "nephew",
        "friend", "colleague", "neighbour", "neighbor", "roommate", "child", "baby", "kid",
        "mum", "mom", "dad", "parents", "sibling", "stepmother", "stepfather",
    }
)  # fmt: skip


def _kin(text: _Text) -> frozenset[str]:
    """The relatives, partners and colleagues the text names."""
    return frozenset(_KIN_SAME.get(word, word) for word in text.written.values() if word in _KIN)


def _subject_kin(text: _Text) -> frozenset[str]:
    """The relative whose fact the text states: the one it starts with ("My sister lives…",
    "Our older son is…", "Wife is a nurse."), not one named in passing ("I live here with my
    wife", "Has a sister.")."""
    written = _WORD.findall(text.folded)[:3]
    words = [word.removesuffix("'s") for word in written]
    if words[:1] and words[0] in _KIN:
        words = words[:1]  # "Mum's phone…", "Wife is…"
    elif words[:1] and (words[0] in ("my", "our", "his", "her", "their") or written[0] != words[0]):
        words = words[1:]  # the possessive ("my", "Priya's"), then the relative or one word
    else:
        return frozenset()
    return frozenset(_KIN_SAME.get(word, word) for word in words[:2] if word in _KIN)


#: Other words for one relative ("mum" and "mother" are one holder).
_KIN_SAME: Final = {
    "mum": "mother", "mom": "mother", "dad": "father", "grandma": "grandmother",
    "grandpa": "grandfather", "neighbor": "neighbour", "kid": "child",
}  # fmt: skip


def _holders(text: _Text) -> frozenset[str]:
    """Whose fact the text states, as far as its words say: the name it starts with and the
    relatives it names (nothing for a note about the person acted for)."""
    return text.first | _kin(text)


def _synonyms(
    new: _Text,
    only_new: frozenset[str],
    held: _Text,
    only_held: frozenset[str],
    similar: WordSimilarity,
) -> bool:
    """Whether every word of its own on each side has a near-synonym on the other ("doctor"
    and "physician" do; "chemistry" and "history" do not: another value, not other words)."""
    def matched(mine: frozenset[str], me: _Text, theirs: frozenset[str], them: _Text) -> bool:
        return all(
            any(similar(me.written[a], them.written[b]) >= SYNONYM for b in theirs)
            for a in mine
        )

    if not only_new or not only_held:
        return True  # one side holds nothing of its own: nothing to match
    return matched(only_new, new, only_held, held) and matched(only_held, held, only_new, new)


def refined_text(held: str, candidate: str, language: str = DEFAULT_LANGUAGE) -> str:
    """The text of a refinement's version: the candidate when it restates every term of
    what was held, else both, so the version holds both details."""
    if frozenset(index_terms(held, language)) <= frozenset(index_terms(candidate, language)):
        return candidate
    joiner = " " if held.rstrip().endswith((".", "!", "?")) else "; "
    return held.rstrip() + joiner + candidate.strip()
