"""The injection model: a linear classifier over hashed character n-grams, numpy only.

The rules (:mod:`._injection_rules`) catch the forms they were written for; this model scores
the wording around them, so a paraphrase, a role-play set-up or an attack in another language
that no rule names can still be caught. It reads the same ``words`` view the language rules
read (look-alikes, invisible characters, leetspeak and spacing already undone), so it needs no
tokenizer and no vocabulary: every character n-gram of 1 to 5 characters is hashed into one of
``2**BITS`` weights.

A text is scored in windows of :data:`WINDOW` characters (half overlapping), because an
instruction planted in a long document is a few sentences among many; the text's score is the
highest window's probability. Each window's logit is ``bias + sum(weights[gram]) / sqrt(n)``
over its ``n`` grams, so the cost is linear in the length and the same for every text of a
length.

The weights ship in the package (``data/injection-model.npz``, float16) and are written by
``tools/train_injection_model.py`` from the training sets it names (they are recorded in
the file, with their digests); nothing is downloaded. Detection only: the model keeps no text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BITS",
    "GRAMS",
    "MODEL_FILE",
    "STRIDE",
    "WINDOW",
    "InjectionModel",
    "gram_indices",
    "load_model",
    "model_view",
    "window_rows",
]

MODEL_FILE: Final = "injection-model.npz"
"""The shipped weights, under ``mainsdk_memory/data``."""
BITS: Final = 18
"""``2**BITS`` hashed features."""
GRAMS: Final = (1, 2, 3, 4, 5)
"""The character n-gram lengths (single characters are words in Chinese)."""
WINDOW: Final = 128
"""Characters per scored window."""
STRIDE: Final = 64
"""Characters between window starts."""
PIECE: Final = 1 << 16
"""Characters of a long text scored at a time (a multiple of :data:`STRIDE`, so the pieces'
windows start where the whole text's would)."""

_MIX1: Final = np.uint64(0xFF51AFD7ED558CCD)
_MIX2: Final = np.uint64(0xC4CEB9FE1A85EC53)
_PRIME: Final = np.uint64(0x100000001B3)
_SHIFT33: Final = np.uint64(33)
_SALT: Final = {n: np.uint64((0x9E3779B97F4A7C15 * n) & 0xFFFFFFFFFFFFFFFF) for n in GRAMS}


def _mix(values: NDArray[np.uint64], bits: int) -> NDArray[np.int64]:
    # MurmurHash3's 64-bit finaliser: every input bit moves every output bit.
    values = values ^ (values >> _SHIFT33)
    values = values * _MIX1
    values = values ^ (values >> _SHIFT33)
    values = values * _MIX2
    values = values ^ (values >> _SHIFT33)
    return (values >> np.uint64(64 - bits)).astype(np.int64)


def gram_indices(text: str, bits: int = BITS) -> list[NDArray[np.int64]]:
    """For each n in :data:`GRAMS`, the feature index of the n-gram starting at each position.

    The text is padded with one space each side, so a word's first and last letters make
    their own grams. Deterministic across processes and machines (no ``hash()``).
    """
    padded = " " + text + " "
    # surrogatepass: a lone surrogate (valid in a str, not in UTF-8) is one more code point
    codes = np.frombuffer(padded.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    codes = codes.astype(np.uint64)
    length = len(codes)
    rolling = np.zeros(length, dtype=np.uint64)
    found: list[NDArray[np.int64]] = []
    for n in range(1, GRAMS[-1] + 1):
        if n > length:
            found.extend(np.zeros(0, dtype=np.int64) for gram in GRAMS if gram >= n)
            break
        # rolling[i] is the hash of codes[i:i + n]
        rolling = rolling[: length - n + 1] * _PRIME + codes[n - 1 :]
        if n in _SALT:
            found.append(_mix(rolling ^ _SALT[n], bits))
    return found


_RUNS: Final = re.compile(r"(.)\1{3,}", re.S)


def model_view(words: str) -> str:
    """``words`` with every run of one character cut to three (``xxxxxxxx`` -> ``xxx``,
    ``!!!!!!`` -> ``!!!``): a repeated character adds no meaning, but would add its n-grams'
    weights again and again."""
    return _RUNS.sub(r"\1\1\1", words)


def window_rows(length: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` positions of the windows a text of ``length`` grams is read in."""
    if length <= WINDOW:
        return [(0, length)]
    starts = list(range(0, length - WINDOW + 1, STRIDE))
    if starts[-1] + WINDOW < length:
        starts.append(length - WINDOW)
    return [(start, start + WINDOW) for start in starts]


@dataclass(frozen=True, slots=True)
class InjectionModel:
    """The weights and the threshold; :meth:`score` gives a probability in [0, 1]."""

    weights: NDArray[np.float32]
    bias: float
    threshold: float
    id: str
    info: dict[str, Any]

    def score(self, words: str) -> float:
        """The probability that ``words`` (the ``words`` view of a text) is an injection:
        the highest of its windows'.

        A long text is scored in pieces of :data:`PIECE` characters (each overlapping the
        next by a window), so memory stays bounded whatever the length: about 75 bytes a
        character of a piece, where a whole 8 MiB model answer would take 600 MB."""
        view = model_view(words)
        if len(view) <= PIECE + WINDOW:
            return self._score_view(view)
        return max(self._score_view(view[start : start + PIECE + WINDOW])
                   for start in range(0, len(view) - WINDOW, PIECE))

    def _score_view(self, view: str) -> float:
        if not view:
            return 0.0
        per_gram = gram_indices(view, BITS)
        length = len(per_gram[0])  # single characters: one per position
        if length == 0:
            return 0.0
        sums = np.zeros(length + 1, dtype=np.float64)
        counts = np.zeros(length + 1, dtype=np.float64)
        weights = self.weights
        for indices in per_gram:
            sums[1 : len(indices) + 1] += weights[indices]
            counts[1 : len(indices) + 1] += 1.0
        np.cumsum(sums, out=sums)
        np.cumsum(counts, out=counts)
        rows = np.asarray(window_rows(length), dtype=np.int64)
        grams = counts[rows[:, 1]] - counts[rows[:, 0]]
        logit = self.bias + float(np.max((sums[rows[:, 1]] - sums[rows[:, 0]]) / np.sqrt(grams)))
        return 1.0 / (1.0 + math.exp(-logit)) if logit > -700 else 0.0


def load_model() -> InjectionModel:
    """The shipped model, read from the package's data (no network)."""
    from importlib.resources import files

    resource = files("mainsdk_memory").joinpath("data", MODEL_FILE)
    with resource.open("rb") as handle, np.load(handle, allow_pickle=False) as stored:
        weights = stored["weights"].astype(np.float32)
        bias = float(stored["bias"])
        threshold = float(stored["threshold"])
        model_id = str(stored["id"])
        info = {
            str(key): stored[key].tolist()
            for key in stored.files
            if key not in {"weights", "bias", "threshold", "id"}
        }
    if weights.shape != (1 << BITS,):
        raise ValueError("The shipped injection model does not match this version's features.")
    return InjectionModel(weights, bias, threshold, model_id, info)
