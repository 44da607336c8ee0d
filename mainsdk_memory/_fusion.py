"""Fuse a BM25 ranking and a vector ranking into one ranking whose scores lie in [0, 1].

Inputs are ``(memory id, score)`` pairs, best first, as a driver's BM25 search and
:func:`mainsdk_memory.embeddings.cosine_top_k` return them (each cut at the same depth, say
50). An id may appear in one list or both; a repeated id counts at its first (best) place.

Two fusions, both deterministic, both in [0, 1]:

- :func:`convex` (the default of :func:`fuse`): min-max-normalised scores combined as
  ``alpha * bm25' + (1 - alpha) * cosine'`` with ``alpha = 0.65``.
- :func:`rrf`: weighted reciprocal rank fusion, ``sum(w / (k + rank))`` divided by its best
  attainable value ``sum(w) / (k + 1)``.

Why the default is the convex one (ADR 0070, measured by ``benchmarks/locomo_vectors.py`` on
LoCoMo, 1,982 questions, all-MiniLM-L6-v2 vectors, 50 candidates per list): it lifts recall@5
from BM25 alone's 0.601 to 0.635, and from 0.629 to 0.653 with the session date in the text
(the issue's 0.65 target is met there only), multi-hop questions most (0.489 to 0.585).
Plain RRF (``k=60``, equal weights) falls *below* BM25 alone (0.504): it keeps only ranks,
and the vector ranking, much weaker than BM25 on this data (0.378), pushes its confident
mistakes into the top five. The best RRF tried (``k=10``, vector weight 0.5) reaches 0.613,
above BM25 but below the convex fusion: score-aware fusion knows when BM25 has a clear
winner. ``alpha`` was chosen on conversations 1-5 (with and without dates, both pick 0.65)
and holds on conversations 6-10.

Ties, for both: the greater fused score first; then the better (smaller) best rank in either
list; then the better BM25 rank (absent counts as last); then the smaller id.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, Literal

from mainsdk_memory._errors import InvalidInputError

__all__ = ["DEFAULT_ALPHA", "DEFAULT_K", "DEFAULT_METHOD", "Ranking", "convex", "fuse", "rrf"]

#: Weight of BM25 in :func:`convex`; the vector ranking gets ``1 - DEFAULT_ALPHA``.
DEFAULT_ALPHA: Final = 0.65
#: Scores closer than this (relative) are equal: float32 cosines of one text differ in their
#: last bits from one row of a matrix to the next.
TIE: Final = 1e-6
#: The ``k`` of :func:`rrf`, from Cormack, Clarke and Büttcher (2009).
DEFAULT_K: Final = 60
#: What :func:`fuse` does unless told otherwise.
DEFAULT_METHOD: Final = "convex"

Ranking = Sequence[tuple[str, float]]
"""``(memory id, score)`` pairs, best first."""

_Places = dict[str, tuple[int, float]]


def fuse(
    bm25: Ranking,
    vector: Ranking,
    *,
    method: Literal["convex", "rrf"] = DEFAULT_METHOD,
    alpha: float = DEFAULT_ALPHA,
    k: int = DEFAULT_K,
    weights: tuple[float, float] = (1.0, 1.0),
) -> list[tuple[str, float]]:
    """One ranking of every id in ``bm25`` or ``vector``, best first, scores in [0, 1].

    ``method="convex"`` (the default) is :func:`convex` with ``alpha``; ``method="rrf"`` is
    :func:`rrf` with ``k`` and ``weights``. See the module docstring for why the default.
    """
    if method == "convex":
        return convex(bm25, vector, alpha=alpha)
    if method == "rrf":
        return rrf(bm25, vector, k=k, weights=weights)
    raise InvalidInputError("method must be 'convex' or 'rrf'.")


def convex(
    bm25: Ranking, vector: Ranking, *, alpha: float = DEFAULT_ALPHA
) -> list[tuple[str, float]]:
    """Convex combination of min-max-normalised scores, in [0, 1].

    For each list, ``s' = (s - min) / (max - min)`` over that list (every ``s' = 1`` when all
    its scores are equal, to within :data:`TIE`); an id absent from a list has ``s' = 0``
    there, the same as that list's worst candidate. The fused score is
    ``alpha * bm25' + (1 - alpha) * vector'``: 1.0 exactly when an id is best in both lists,
    and never above 1.

    The normalisation is per query and per list, so scores compare candidates of one query,
    not queries with each other: a weak best match still gets the full share of its list.
    """
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, int | float)
        or not 0.0 <= alpha <= 1.0
    ):
        raise InvalidInputError("alpha must be a number in [0, 1].")
    b = _places(bm25, "BM25")
    v = _places(vector, "vector")
    nb, nv = _minmax(b), _minmax(v)
    scores = {
        memory_id: min(1.0, alpha * nb.get(memory_id, 0.0) + (1.0 - alpha) * nv.get(memory_id, 0.0))
        for memory_id in b.keys() | v.keys()
    }
    return _ordered(scores, b, v)


def rrf(
    bm25: Ranking,
    vector: Ranking,
    *,
    k: int = DEFAULT_K,
    weights: tuple[float, float] = (1.0, 1.0),
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion, normalised to [0, 1]; only ranks count, not scores.

    With ``r_b`` and ``r_v`` an id's 1-based places in the lists (a term is 0 when the id is
    absent) and ``(w_b, w_v) = weights``::

        score = (w_b / (k + r_b) + w_v / (k + r_v)) / ((w_b + w_v) / (k + 1))

    The divisor is the best attainable sum, so an id first in both lists scores exactly 1.0.
    ``k`` (a non-negative integer) damps the lead of the first places; weights are finite,
    non-negative and not both 0.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidInputError("k must be a non-negative integer.")
    w_bm25, w_vector = _weights(weights)
    b = _places(bm25, "BM25")
    v = _places(vector, "vector")
    best = (w_bm25 + w_vector) / (k + 1)
    scores: dict[str, float] = {}
    for memory_id in b.keys() | v.keys():
        raw = 0.0
        if memory_id in b:
            raw += w_bm25 / (k + b[memory_id][0])
        if memory_id in v:
            raw += w_vector / (k + v[memory_id][0])
        scores[memory_id] = min(1.0, raw / best)
    return _ordered(scores, b, v)


def _places(ranking: Ranking, what: str) -> _Places:
    """id → (1-based place, score) of its first occurrence; later repeats are ignored."""
    out: _Places = {}
    for place, item in enumerate(ranking, start=1):
        if not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], str):
            raise InvalidInputError(f"The {what} ranking must hold (id, score) pairs.")
        memory_id, score = item
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise InvalidInputError(f"The {what} ranking holds a score that is not finite.")
        if memory_id not in out:
            out[memory_id] = (place, float(score))
    return out


def _minmax(places: _Places) -> dict[str, float]:
    if not places:
        return {}
    values = [score for _place, score in places.values()]
    low, high = min(values), max(values)
    if high - low <= TIE * max(1.0, abs(high)):
        # Equal scores (within rounding: the same text's cosines can differ in the last
        # bits): all 1, not a spread that would blow rounding noise up to the whole [0, 1].
        return dict.fromkeys(places, 1.0)
    span = high - low
    return {memory_id: (score - low) / span for memory_id, (_p, score) in places.items()}


def _weights(weights: tuple[float, float]) -> tuple[float, float]:
    if (
        not isinstance(weights, tuple)
        or len(weights) != 2
        or not all(
            isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
            for w in weights
        )
        or sum(weights) <= 0
    ):
        raise InvalidInputError("weights must be two finite non-negative numbers, not both 0.")
    return float(weights[0]), float(weights[1])


def _ordered(scores: dict[str, float], b: _Places, v: _Places) -> list[tuple[str, float]]:
    def key(memory_id: str) -> tuple[float, float, float, str]:
        rank_b = b[memory_id][0] if memory_id in b else math.inf
        rank_v = v[memory_id][0] if memory_id in v else math.inf
        return (-scores[memory_id], min(rank_b, rank_v), rank_b, memory_id)

    return [(memory_id, scores[memory_id]) for memory_id in sorted(scores, key=key)]
