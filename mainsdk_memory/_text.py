"""Turn text into index terms, the same way at write and at recall, before any term is blinded.

Nothing can be normalised once a term is blinded (an HMAC), so every step happens here, first:
Unicode NFKC, removal of invisible characters, case folding, splitting on word characters,
the language's stopwords (:mod:`mainsdk_memory._stopwords`), and the language's Snowball
stemmer. Chinese, Japanese and Korean are written without spaces between words, so a run of
their characters is indexed as its overlapping character pairs (one character alone stays
itself), in every language, as search engines do: a query of some of the characters of a
longer run finds it.

**Languages.** :data:`LANGUAGES` lists them; :data:`DEFAULT_LANGUAGE` is English, whose terms
are exactly what they were before languages existed (stores hold them already, and the
LoCoMo BM25 numbers depend on them). A store must be written and searched in one language:
a term is blinded, so the terms of one language can never be turned into another's.

**Prefix terms (every language but English).** Snowball strips endings, but not all of
them: German ``wohnen`` stems to ``wohn`` while ``wohnt`` stays ``wohnt``; ``spielen`` and
``spielt``, French ``écrire`` and ``écrit``, Portuguese ``irmã`` and ``irmãs`` part the same
way, and a partial word (``Geburt`` for ``Geburtstag``) never stems like the whole. So each
stem of at least :data:`PREFIX_LENGTH` letters is also indexed as a *prefix term*: the marker
:data:`PREFIX_MARK` (``"\\x00pre:"``) and the stem's first :data:`PREFIX_LENGTH` characters.
``\\x00`` is no word character, so a prefix term never equals a word's term; it is blinded
like any other term. Stems that are shorter, or hold a digit or an underscore, get none
(a number would match every longer number).

**Write path and recall path.** A memory is indexed under :func:`index_terms`: its stems and
their prefix terms, counted. A query is searched with :func:`query_terms`: one *group* of
alternatives per query word: its stem, its stem's prefix term, and the prefix term of the
word as written (a partial word may stem shorter than its letters: Portuguese ``fute`` stems
to ``fut``, but is the start of ``futebol``; a memory's words are whole, so the index holds
stem prefixes only). BM25 scores a group as *one* query term: the counts of its tokens are
summed and its idf is counted once (``drivers._bm25.query_counts``). So a memory holding
the query's own form counts 2 for the word (stem and prefix), one holding another form of it
counts 1, and no word is scored twice: the exact form ranks first, then the other forms. In
English a group is the word's one term, as before.

**The length** was measured on the pairs of ``tests/test_languages.py``, which recomputes
this table: 45 pairs (9 for each of German, French, Spanish, Portuguese and Russian) of a
memory and a query holding one of its words in another form, or a part of it. *found* counts
the queries that share a term with their memory; *false matches* the queries that share one
with another memory of their language (the other pairs' and 9 everyday memories a language,
765 in all); the last column is the number of index terms of a memory per word indexed::

    length         found   false matches   index terms per memory
    none (stems)   30/45   0/765           1.0x
    3              45/45   5/765           2.0x
    4              45/45   2/765           1.7x
    5              38/45   0/765           1.5x
    6              33/45   0/765           1.3x

Four finds all that three does with fewer false matches, and seven pairs more than five
(``wohnt`` and ``wohnen``, ``kocht`` and ``kochen``, ``écrit`` and ``écrire``, ``irmã`` and
``irmãs`` ...). Its costs: a memory has about 1.7 times as many index terms (so its stored
row and term postings grow about as much), and a query word matches every word of a memory
whose stem begins with its first four letters: ``Schwestern`` finds ``schwarzen``, ``comer``
finds ``comenta``, ``Roma`` finds ``romanzi``. Those matches count 1 where the exact word
counts 2, so, other things equal, they rank below it. The pairs were written for this
choice: a check of it on everyday sentences, not a benchmark. Stems that change inside the
word (``gewohnt`` and ``wohnen``, ``пишет`` and ``писать``, ``juega`` and ``jugar``, ``vit``
and ``vivre``) are found by no length.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Final

import snowballstemmer

from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory._stopwords import STOPWORDS

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "PREFIX_LENGTH",
    "PREFIX_MARK",
    "check_language",
    "index_terms",
    "query_terms",
]

LANGUAGES: Final[tuple[str, ...]] = tuple(STOPWORDS)
"""The languages text can be indexed in: the names of their Snowball stemmers."""
DEFAULT_LANGUAGE: Final = "english"
"""The language of every store written before languages existed."""
PREFIX_LENGTH: Final = 4
"""How many characters of a stem its prefix term keeps (measured: see the module docstring)."""
PREFIX_MARK: Final = "\x00pre:"
"""What a prefix term starts with: no word holds ``\\x00``, so no word's term can equal it."""

# English has no prefix terms: its terms must stay what stores already hold.
_PREFIXED = frozenset(LANGUAGES) - {DEFAULT_LANGUAGE}

# Zero-width, bidi and other invisible format characters would split or hide words.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_WORD = re.compile(r"\w+")

_local = threading.local()


def check_language(value: object) -> str:
    """``value`` if it names a supported language (one of :data:`LANGUAGES`), else
    :class:`InvalidInputError`."""
    if isinstance(value, str) and value in STOPWORDS:
        return value
    raise _unknown_language()


def _unknown_language() -> InvalidInputError:
    return InvalidInputError(f"language is one of: {', '.join(LANGUAGES)}.")


def _stemmer(language: str) -> snowballstemmer.stemmer:
    # Stemmer objects keep state between calls, so each thread has its own, per language.
    stemmers: dict[str, snowballstemmer.stemmer] | None = getattr(_local, "stemmers", None)
    if stemmers is None:
        stemmers = _local.stemmers = {}
    stemmer = stemmers.get(language)
    if stemmer is None:
        stemmer = stemmers[language] = snowballstemmer.stemmer(language)
    return stemmer


def _cached_stem(language: str) -> Callable[[str], str]:
    @lru_cache(maxsize=65536)
    def stem(word: str) -> str:
        return str(_stemmer(language).stemWord(word))

    return stem


# One stem cache per language, keyed by the word alone: English stays as fast as it was.
_STEM: Final[Mapping[str, Callable[[str], str]]] = MappingProxyType(
    {language: _cached_stem(language) for language in LANGUAGES}
)


# Han ideographs (with extensions and compatibility forms), kana, and Hangul syllables.
_CJK = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\U00020000-\U0002fa1f]+"
)


def _cjk_terms(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _prefix(stem: str) -> str | None:
    """The prefix term of ``stem`` (or of a query word as written), or ``None`` if it is too
    short or not all letters."""
    if len(stem) >= PREFIX_LENGTH and stem.isalpha():
        return PREFIX_MARK + stem[:PREFIX_LENGTH]
    return None


def _words(text: str, language: str) -> tuple[list[str], list[str]]:
    """The indexed words of ``text``, in order, as two lists of one length: the words as
    written (NFKC, case folded) and their stems. A CJK pair is ``""`` in the first list and
    itself in the second: a term as it stands, never stemmed nor prefixed."""
    stem = _STEM.get(language) if isinstance(language, str) else None
    if stem is None:
        raise _unknown_language()
    stopwords = STOPWORDS[language]
    folded = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).casefold()
    written: list[str] = []
    stems: list[str] = []
    for word in _WORD.findall(folded):
        if not _CJK.search(word):
            if word not in stopwords:
                written.append(word)
                stems.append(stem(word))
            continue
        start = 0
        for run in _CJK.finditer(word):  # the CJK runs as pairs, the rest as words
            rest = word[start : run.start()]
            if rest and rest not in stopwords:
                written.append(rest)
                stems.append(stem(rest))
            pairs = _cjk_terms(run.group())
            written.extend([""] * len(pairs))
            stems.extend(pairs)
            start = run.end()
        rest = word[start:]
        if rest and rest not in stopwords:
            written.append(rest)
            stems.append(stem(rest))
    return written, stems


def index_terms(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The index terms of ``text`` in ``language``, in order, repeats kept (for term counts):
    what a memory is indexed under (the write path). Each word gives its stem, then, outside
    English, its stem's prefix term (see the module docstring). :class:`InvalidInputError`
    for an unsupported ``language``."""
    written, stems = _words(text, language)
    if language not in _PREFIXED:
        return stems
    terms: list[str] = []
    for word, stem in zip(written, stems, strict=True):
        terms.append(stem)
        prefix = _prefix(stem) if word else None
        if prefix is not None:
            terms.append(prefix)
    return terms


def query_terms(text: str, language: str = DEFAULT_LANGUAGE) -> list[frozenset[str]]:
    """What recall searches for ``text`` in ``language`` (the recall path): one group of
    alternative terms per query word, in order (a repeated word repeats its group), each to
    be scored as one BM25 query term. In English a group is the one term :func:`index_terms`
    gives the word; elsewhere it adds the prefix terms of the word's stem and of the word as
    written (see the module docstring). :class:`InvalidInputError` for an unsupported
    ``language``."""
    written, stems = _words(text, language)
    if language not in _PREFIXED:
        return [frozenset((stem,)) for stem in stems]
    groups: list[frozenset[str]] = []
    for word, stem in zip(written, stems, strict=True):
        group = {stem}
        if word:
            group.update(
                prefix for prefix in (_prefix(stem), _prefix(word)) if prefix is not None
            )
        groups.append(frozenset(group))
    return groups
