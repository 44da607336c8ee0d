"""The BM25 kernel: the one place the SDK's BM25 arithmetic and tie order are written.

The reference ranking (:func:`~mainsdk_memory.drivers.bm25_rank`), the local driver's exact
rescoring and the db driver's exact rescoring all call these functions, so they agree by
construction (ADR 0025). Candidate stages (numpy arrays, SQL) may approximate a score to pick
rows; the score a driver returns is always :func:`score` here.

Scoring is Okapi BM25 with ``k1 = 1.5``, ``b = 0.75`` and the non-negative idf
``ln(1 + (N - df + 0.5) / (df + 0.5))``, summed once per query term group; the score returned
is the raw score divided by the query's ceiling ``sum(idf) * (k1 + 1)``, so it lies in [0, 1].
Equal scores are ordered by :func:`order_key`: the more trusted row first
(:data:`TRUST_RANK`), then the newer ``recorded_at``, then the greater memory id.

Each expression keeps the operations and their order of the first reference implementation,
so scores are bit-identical to it; precomputed constants are exact (``k1 + 1 = 2.5``,
``1 - b = 0.25``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

__all__ = [
    "BM25_B",
    "BM25_K1",
    "TRUST_RANK",
    "OrderKey",
    "Scored",
    "Weights",
    "average_length",
    "best",
    "ceiling",
    "document_frequencies",
    "idf",
    "length_norm",
    "normalised",
    "order_key",
    "query_counts",
    "raw_score",
    "score",
    "weights",
]

BM25_K1 = 1.5
BM25_B = 0.75
#: Tie order of equal scores: a more trusted row never ranks below a less trusted one.
TRUST_RANK = {"confirmed": 2, "inferred": 1, "untrusted": 0}

_K1_PLUS_1 = BM25_K1 + 1.0  # exact: 2.5
_ONE_MINUS_B = 1.0 - BM25_B  # exact: 0.25

OrderKey = tuple[int, float, str]
"""The tie key of a row: trust rank, ``recorded_at`` as a timestamp, memory id."""

Scored = tuple[float, OrderKey, int]
"""A candidate as :func:`best` ranks it: score, tie key, and the caller's position for it."""


@dataclass(frozen=True, slots=True)
class Weights:
    """What one query over one corpus weighs every row with: computed once, used per row."""

    idf: tuple[float, ...]
    """One idf per query term group, in query order."""
    avgdl: float
    """The corpus's average document length (1.0 for an empty or zero-length corpus)."""
    ceiling: float
    """The raw score of a row that saturates every query term: ``sum(idf) * (k1 + 1)``."""


def idf(n_docs: int, df: int) -> float:
    """The non-negative idf of a term held by ``df`` of ``n_docs`` documents."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def average_length(total_length: int, n_docs: int) -> float:
    """The average document length, 1.0 when it would be 0 (every document empty)."""
    return total_length / n_docs or 1.0


def ceiling(idfs: Sequence[float]) -> float:
    """The query's ceiling ``sum(idf) * (k1 + 1)``: the divisor that maps raw scores to [0, 1]."""
    return sum(idfs) * (BM25_K1 + 1.0)


def weights(n_docs: int, total_length: int, df: Sequence[int]) -> Weights | None:
    """The weights of a query over a corpus of ``n_docs`` documents of ``total_length`` index
    terms in all, whose term groups have document frequencies ``df``; ``None`` when nothing
    can score (an empty corpus or query)."""
    if n_docs <= 0:
        return None
    idfs = tuple([idf(n_docs, d) for d in df])
    top = ceiling(idfs)
    if top <= 0.0:
        return None
    return Weights(idfs, average_length(total_length, n_docs), top)


def query_counts(terms: Mapping[str, int], query: Sequence[Collection[str]]) -> list[int]:
    """A document's count of each query term group: the summed counts of the group's tokens
    (a token repeated in a group counts once per repetition)."""
    return [sum(terms.get(token, 0) for token in group) for group in query]


def document_frequencies(counts: Iterable[Sequence[int]], groups: int) -> list[int]:
    """How many of the documents (given by their :func:`query_counts`) hold each group."""
    df = [0] * groups
    for row in counts:
        for i, count in enumerate(row):
            if count:
                df[i] += 1
    return df


def length_norm(length: int, avgdl: float) -> float:
    """BM25's length normalisation of a document of ``length`` terms."""
    return BM25_K1 * (_ONE_MINUS_B + BM25_B * length / avgdl)


def raw_score(weights: Weights, counts: Sequence[int], length: int) -> float:
    """A document's raw BM25 score: one term per group it holds (zero counts are skipped, not
    added as 0.0, which keeps the sum bit-identical)."""
    norm = length_norm(length, weights.avgdl)
    # zip(strict=False): counts has one entry per group by construction, and a strict zip
    # costs a tenth of this function's time.
    return sum(
        w * (tf * _K1_PLUS_1) / (tf + norm)
        for w, tf in zip(weights.idf, counts, strict=False)
        if tf
    )


def normalised(weights: Weights, raw: float) -> float:
    """A raw score divided by the query's ceiling, capped at 1.0 against rounding."""
    return min(1.0, raw / weights.ceiling)


def score(weights: Weights, counts: Sequence[int], length: int) -> float:
    """A document's score in [0, 1]: its :func:`raw_score`, :func:`normalised`."""
    return normalised(weights, raw_score(weights, counts, length))


def order_key(trust: str, recorded_at: datetime, memory_id: str) -> OrderKey:
    """The tie key of equal scores, compared descending: trust, then newer, then greater id."""
    return (TRUST_RANK.get(trust, 0), recorded_at.timestamp(), memory_id)


def best(scored: Iterable[Scored], top_k: int) -> list[Scored]:
    """The ``top_k`` best candidates, best first: by score, then :func:`order_key`, then the
    greater position (a full tie keeps the later candidate first)."""
    return heapq.nlargest(top_k, scored)
