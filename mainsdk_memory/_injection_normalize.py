"""Fold text into the views the injection rules read, undoing the usual evasions first.

An attacker who knows there is a filter writes ``ignore`` with a Cyrillic i and o, splits words
with zero-width spaces, writes ``i g n o r e``, ``ig-nore`` or ``1gn0r3``, or hides the text in
entities. Every rule reads views in which those tricks are already undone, so no rule has to
know about them:

``clean``
    HTML entities decoded, Unicode NFKC, invisible characters (zero-width, bidi controls,
    tag characters, variation selectors, invisible operators, soft hyphen) removed, case
    folded, look-alike letters folded to Latin (every single letter Unicode's confusables
    pair with a Latin one, and a hand-written table of Cyrillic, Greek, IPA and Latin
    variants over it). Punctuation, digits and line breaks are kept, so URLs, tags and JSON keep
    their shape. The markup and exfiltration rules read this view.
``words``
    ``clean``, then leetspeak undone in tokens that contain a letter (``1gn0r3`` -> ``ignore``,
    while ``2023`` and ``$50`` stay), separators inside words removed (``ig-nore``,
    ``i.g.n.o.r.e``, ``don't`` -> ``dont``), runs of single spaced letters joined
    (``i g n o r e`` -> ``ignore``), and spaces collapsed (line breaks kept). The language
    rules read this view; :func:`normalize_for_detection` returns it.
``squashed``
    ``words`` with everything but ``a``-``z`` removed, for a few long phrases whose words an
    attacker may have run together or spaced apart.

The views are for detection only: nothing here is stored or shown to a model.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from mainsdk_memory._lookalike_table import LOOKALIKE_FOLD

__all__ = ["INVISIBLE", "Views", "clean_view", "normalize_for_detection", "views"]

# Characters that render as nothing (or only change direction) and so can hide or split text.
INVISIBLE: Final = re.compile(
    "["
    "\u00ad"  # soft hyphen
    "\u034f"  # combining grapheme joiner
    "\u061c"  # Arabic letter mark
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers
    "\u17b4\u17b5"  # Khmer inherent vowels
    "\u180b-\u180f"  # Mongolian variation selectors and vowel separator
    "\u200b-\u200f"  # zero-width space, non-joiner, joiner, LRM, RLM
    "\u202a-\u202e"  # bidi embeddings and overrides
    "\u2060-\u206f"  # word joiner, invisible operators, bidi isolates, deprecated formats
    "\ufe00-\ufe0f"  # variation selectors
    "\ufeff"  # byte order mark / zero-width no-break space
    "\U0001d173-\U0001d17a"  # musical formatting characters
    "\U000e0000-\U000e007f"  # tag characters
    "\U000e0100-\U000e01ef"  # variation selectors supplement
    "]"
)

def _table(*chunks: str) -> dict[int, str]:
    """A translation table from pairs written as one look-alike character then its Latin
    replacement, separated by spaces (kept as escapes so that the source stays readable)."""
    table: dict[int, str] = {}
    for chunk in chunks:
        for pair in chunk.split():
            table[ord(pair[0])] = pair[1:]
    return table


# Letters that look like Latin ones, after case folding: Unicode's confusables
# (:mod:`._lookalike_table`, generated from UTS #39), then this hand-written table over them
# (the scripts an attacker reaches for first, folded as they read, e.g. Cyrillic ж as x).
_LOOKALIKES: Final = LOOKALIKE_FOLD | _table(
    # Cyrillic
    "\u0430a \u0431b \u0432b \u0433r \u0434d \u0435e \u0451e \u0436x \u04373 \u0438u \u0439u "
    "\u043ak \u043bn \u043cm \u043dh \u043eo \u043fn \u0440p \u0441c \u0442t \u0443y \u0444f "
    "\u0445x \u0446u \u04474 \u0448w \u0449w \u044ab \u044bbi \u044cb \u044de \u044eio \u044fr "
    "\u0454e \u0455s \u0456i \u0457i \u0458j \u0452h \u045bh \u0501d \u051bq \u051dw \u04bbh "
    "\u04cfl \u04afy \u0493f \u049dk \u04a1k \u04a3h \u04b3x \u04abc \u04d1a \u04d3a \u04d7e "
    "\u04e7o "
    # Greek
    "\u03b1a \u03b2b \u03b3y \u03b4d \u03b5e \u03b6z \u03b7n \u03b8o \u03b9i \u03bak \u03bbl "
    "\u03bcu \u03bdv \u03bee \u03bfo \u03c0n \u03c1p \u03c3o \u03c2c \u03c4t \u03c5u \u03c6f "
    "\u03c7x \u03c8w \u03c9w \u03f2c \u03f3j \u03aca \u03ade \u03aen \u03afi \u03cco \u03cdu "
    "\u03cew \u03cai \u03cbu "
    # Latin variants and IPA letters
    "\u0131i \u0237j \u0251a \u0261g \u0269i \u026ai \u0274n \u0280r \u028fy \u1d00a \u1d04c "
    "\u1d05d \u1d07e \u1d0aj \u1d0bk \u1d0dm \u1d0fo \u1d18p \u1d1bt \u1d1cu \u1d20v \u1d21w "
    "\u1d22z \u029ch \u029fl \u0262g \ua731s \u01c0l \u2113l \u00f8o \u0111d \u0127h \u0142l "
    "\u0140l \u01c3! \u02f8: \u02bc' \u02b9' "
    # Punctuation that stands in for the characters markup needs
    "\u2039< \u203a> \u3008< \u3009> \u27e8< \u27e9> \u276e< \u276f> \uff1c< \uff1e> \uff1a: "
    "\ua789: \u2010- \u2011- \u2012- \u2013- \u2014- \u2015- \u2212- \u2018' \u2019' \u0060' "
    "\u201c\" \u201d\" \u201e\" "
)

# Digits and symbols that stand in for letters, undone only inside tokens that contain a letter.
_LEET: Final = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t",
                              "@": "a", "$": "s"})
_LEET_NEXT_TO_LETTER: Final = re.compile(r"[a-z][0-9@$]|[0-9@$][a-z]")
_LEET_TOKEN: Final = re.compile(r"[a-z0-9@$]+")
_INNER_SEPARATOR: Final = re.compile(r"(?<=[a-z])[-_.*·'~^+|/\\](?=[a-z])")
_SPACED_LETTERS: Final = re.compile(r"\b(?:[a-z] ){2,}[a-z]\b")
_SPACES: Final = re.compile(r"[^\S\n]+")
_LINE_BREAKS: Final = re.compile(r" ?\n[\s]*")
_NOT_LETTER: Final = re.compile(r"[^a-z]+")


@dataclass(frozen=True, slots=True)
class Views:
    """The text as the rules see it; see the module docstring for what each view undoes."""

    raw: str
    clean: str
    words: str
    squashed: str


def clean_view(text: str) -> str:
    """Entities decoded, NFKC, invisible characters removed, case and look-alikes folded."""
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():  # the common case: nothing to normalise but case
        return text.lower()
    text = INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).casefold()
    # Folding can leave compatibility characters behind (e.g. from a Greek final sigma).
    return unicodedata.normalize("NFKC", text.translate(_LOOKALIKES))


def _unleet(match: re.Match[str]) -> str:
    token = match.group()
    # Only tokens with a letter: "1gn0r3" is a word in disguise, "2023" and "$50" are not.
    return token.translate(_LEET) if any("a" <= c <= "z" for c in token) else token


def _words_from_clean(clean: str) -> str:
    # Each step runs only when a cheap search says it has work to do: most text has none.
    text = clean
    if _LEET_NEXT_TO_LETTER.search(text):
        text = _LEET_TOKEN.sub(_unleet, text)
    text = _INNER_SEPARATOR.sub("", text)
    text = _SPACES.sub(" ", text)
    if _SPACED_LETTERS.search(text):
        text = _SPACED_LETTERS.sub(lambda match: match.group().replace(" ", ""), text)
    return _LINE_BREAKS.sub("\n", text).strip()


def normalize_for_detection(text: str) -> str:
    """Fold ``text`` into the ``words`` view the language rules read (detection only).

    Undoes look-alike letters, zero-width and bidi characters, case, leetspeak in words,
    separators inside words and spaced-out letters; keeps line breaks. For example
    ``"IGN0RE  a-l-l  prev\u200bious"`` (its I a Greek iota) becomes ``"ignore all previous"``.
    """
    return _words_from_clean(clean_view(text))


def views(text: str) -> Views:
    """Every view of ``text``, computed once for all the rules."""
    clean = clean_view(text)
    words = _words_from_clean(clean)
    return Views(raw=text, clean=clean, words=words, squashed=_NOT_LETTER.sub("", words))
