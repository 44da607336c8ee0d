"""BERT's uncased WordPiece tokenizer in pure Python, for the static embedder's vocabulary.

The same steps as BERT's ``BasicTokenizer`` + ``WordpieceTokenizer`` (and the ``tokenizers``
library's ``BertNormalizer``/``BertPreTokenizer``/``WordPiece`` with ``lowercase=True``):
drop control characters, put spaces around CJK ideographs, lowercase, strip accents (NFD,
marks removed), split on whitespace and on every punctuation character, then cut each word
into the longest vocabulary pieces from its start, later pieces prefixed ``##``; a word that
cannot be cut, or is longer than 100 characters, is ``[UNK]``. No dependency, no download.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from functools import lru_cache

__all__ = ["WordPiece"]

_MAX_WORD_CHARS = 100
UNKNOWN = "[UNK]"


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True  # BERT counts every non-alphanumeric ASCII character as punctuation
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


def _clean(text: str) -> str:
    out = []
    for char in text:
        code = ord(char)
        if code in (0, 0xFFFD):
            continue
        if char in " \t\n\r" or unicodedata.category(char) == "Zs":
            out.append(" ")
        elif unicodedata.category(char).startswith("C"):
            continue
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    return "".join(out)


def _strip_accents(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")


def _split_punctuation(word: str) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    for char in word:
        if _is_punctuation(char):
            if current:
                pieces.append("".join(current))
                current = []
            pieces.append(char)
        else:
            current.append(char)
    if current:
        pieces.append("".join(current))
    return pieces


class WordPiece:
    """Cuts text into the ids of a WordPiece vocabulary (a ``token -> id`` mapping)."""

    def __init__(self, vocabulary: Mapping[str, int]) -> None:
        self._vocabulary = dict(vocabulary)
        self.unknown = self._vocabulary[UNKNOWN]
        self._word = lru_cache(maxsize=65536)(self._word_ids)

    def ids(self, text: str) -> list[int]:
        """The vocabulary ids of ``text``'s pieces, in order (no ``[CLS]``/``[SEP]``)."""
        ids: list[int] = []
        for raw in _clean(text).lower().split():
            for word in _split_punctuation(_strip_accents(raw)):
                ids.extend(self._word(word))
        return ids

    def _word_ids(self, word: str) -> tuple[int, ...]:
        if len(word) > _MAX_WORD_CHARS:
            return (self.unknown,)
        vocabulary = self._vocabulary
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = vocabulary.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unknown,)
            pieces.append(found)
            start = end
        return tuple(pieces)
