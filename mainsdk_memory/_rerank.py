"""The second pass of hybrid recall: whether a candidate only the vectors found answers at all.

The first pass (:mod:`mainsdk_memory._recall`) finds candidates: the best 50 by BM25 over
blind terms and the best 50 by cosine over the sealed embeddings, fused into one ranking
(:mod:`mainsdk_memory._fusion`). The fused score is relative: the best candidate of any
query scores 1, even when nothing in memory answers it, and a vector ranking always has
neighbours. This pass opens the best ``max(DEPTH, 2 · top_k)`` candidates (more, a pool at a
time, when it leaves some out) and estimates, for each, the
probability that it answers the query, from features that keep their meaning from one
query to the next::

    x = (bm25', cosine, cosine - best cosine, coverage, fused)
    relevance = 1 / (1 + exp(-(w · x + b)))

- ``bm25'``: the candidate's BM25 score divided by the best BM25 score of the query (0 when
  BM25 did not find it);
- ``cosine``: its embedding's cosine with the query's (the lowest cosine among the vector
  candidates when it was not one of them);
- ``cosine - best cosine``: how far it is behind the query's nearest memory (0 for that one);
- ``coverage``: the share of the query's words found in the memory's text;
- ``fused``: its first-pass score.

A candidate only the vectors found (no query word in its text) is left out when its
relevance is under the model's floor (:attr:`Model.floor`); one that shares a word with the
query is always kept, as BM25 alone would keep it. The kept candidates keep their
first-pass order and scores: ordered by the relevance itself, LoCoMo recall@5 fell from
0.619 to 0.578, and on the training set the order was no better (ADR 0085). So fewer
questions that nothing in memory answers get unrelated memories back (not all of them: the
floor is set low, to cost few answers).

``w``, ``b`` and the floor are a logistic regression fitted by ``tools/fit_reranker.py`` on a
training set written for it (``tools/rerank_train_set.py``), never on LoCoMo or the
paraphrase set, which are the benchmarks. They are per embedder, since a cosine means
something else in each embedding: :data:`WEIGHTS` holds the ones fitted; with another
embedder every candidate is kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["DEPTH", "WEIGHTS", "Features", "Model", "coverage", "model_for"]

#: The fewest first-pass candidates opened at a time (``max(DEPTH, 2 · top_k)``).
DEPTH: Final = 10


@dataclass(frozen=True, slots=True)
class Features:
    """What the second pass knows of one candidate (see the module docstring)."""

    bm25: float
    cosine: float
    cosine_gap: float
    coverage: float
    fused: float

    def vector(self) -> tuple[float, ...]:
        return (self.bm25, self.cosine, self.cosine_gap, self.coverage, self.fused)


@dataclass(frozen=True, slots=True)
class Model:
    """A fitted logistic re-ranker: weights in :meth:`Features.vector` order, and a bias."""

    weights: tuple[float, ...]
    bias: float
    floor: float
    """The least relevance at which a candidate only the vectors found is kept."""

    def relevance(self, features: Features) -> float:
        terms = zip(self.weights, features.vector(), strict=True)
        z = self.bias + math.fsum(w * x for w, x in terms)
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


#: The fitted models, by embedder name (``tools/fit_reranker.py`` prints these). On its
#: training set (320 questions, 8 people) the default embedder's floor, chosen to cost at
#: most 2.5 points of hit@3 (0.788 to 0.767), leaves 40% of the unanswerable questions with
#: no vector-only hit instead of 17.5% (ADR 0085).
WEIGHTS: Final[dict[str, Model]] = {
    "static-minilm-256-v1": Model(
        weights=(-2.6817, -0.7597, 9.7032, 1.8100, 6.3649), bias=-3.6070, floor=0.050
    ),
}


def model_for(embedder: str) -> Model | None:
    """The re-ranker fitted for ``embedder``, or ``None`` (the first pass's ranking stands)."""
    return WEIGHTS.get(embedder)


def coverage(asked: Sequence[frozenset[str]], memory_terms: Sequence[str]) -> float:
    """The share of the query's distinct words (each a group of alternative terms,
    :func:`mainsdk_memory._text.query_terms`) with a term among the memory's terms."""
    groups = set(asked)
    if not groups:
        return 0.0
    held = set(memory_terms)
    return sum(1 for group in groups if group & held) / len(groups)
