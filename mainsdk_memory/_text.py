"""Turn text into index terms, the same way at write and at recall, before any term is blinded.

Nothing can be normalised once a term is blinded (an HMAC), so every step happens here, first:
Unicode NFKC, removal of invisible characters, case folding, splitting on word characters,
English stopwords, and the Snowball English stemmer. Chinese, Japanese and Korean are
written without spaces between words, so a run of their characters is indexed as its
overlapping character pairs (one character alone stays itself), as search engines do: a
query of some of the characters of a longer run finds it.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

import snowballstemmer

__all__ = ["index_terms"]

# Zero-width, bidi and other invisible format characters would split or hide words.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_WORD = re.compile(r"\w+")

# A common English stopword list (the words carry no meaning for ranking).
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most mustn't my
    myself no nor not now of off on once only or other ought our ours ourselves out over own
    same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up very was wasn't we we'd we'll we're we've were weren't
    what what's when when's where where's which while who who's whom why why's will with won't
    would wouldn't you you'd you'll you're you've your yours yourself yourselves s t d ll m re
    ve
    """.split()
)

_local = threading.local()


def _stemmer() -> snowballstemmer.stemmer:
    # Stemmer objects keep state between calls, so each thread has its own.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


# Han ideographs (with extensions and compatibility forms), kana, and Hangul syllables.
_CJK = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\U00020000-\U0002fa1f]+"
)


def _cjk_terms(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def index_terms(text: str) -> list[str]:
    """The normalized index terms of ``text``, in order, repeats kept (for term counts)."""
    folded = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).casefold()
    terms: list[str] = []
    for word in _WORD.findall(folded):
        if not _CJK.search(word):
            if word not in STOPWORDS:
                terms.append(_stem(word))
            continue
        start = 0
        for run in _CJK.finditer(word):  # the CJK runs as pairs, the rest as words
            rest = word[start : run.start()]
            if rest and rest not in STOPWORDS:
                terms.append(_stem(rest))
            terms.extend(_cjk_terms(run.group()))
            start = run.end()
        rest = word[start:]
        if rest and rest not in STOPWORDS:
            terms.append(_stem(rest))
    return terms
