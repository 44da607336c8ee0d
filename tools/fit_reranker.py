"""Fit the second pass of hybrid recall (mainsdk_memory._rerank) on its training set.

    python -m tools.fit_reranker            # fit for the default embedder, print the model
    python -m tools.fit_reranker --minilm   # for MiniLM (needs the embeddings extra)

It remembers ``tools/rerank_train_set.py`` in a fresh store opened with the embedder, asks
every question through the public API with the second pass replaced by a recorder (which
keeps each candidate's features and leaves every candidate in), labels each candidate by
whether it answers its question, and fits a logistic regression (Newton's method, a small L2
penalty, no library). Recall uses the model only to leave out vector-only candidates; the
order stays the first pass's, and so it is scored here. The floor is the least relevance at
which a candidate only the vectors found is kept: the highest that costs at most 2.5 points
of hit@3 on the training set (:data:`FLOOR_BUDGET`); what it buys is the share of
unanswerable questions that get no vector-only hit, printed beside it. Leave-one-person-out
scores are printed first, so the numbers show how the fit carries to people it has not seen;
the model printed last is fitted on everyone and goes into ``_rerank.WEIGHTS``. The training
set is written for this; LoCoMo and the paraphrase set are the benchmarks and never reach
this script.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mainsdk_memory import Memory, _recall, tenant
from mainsdk_memory import _rerank as rerank
from mainsdk_memory.embeddings import Embedder, StaticEmbedder
from mainsdk_memory.keys import KeyStore
from tools import rerank_train_set as train

Matrix = npt.NDArray[np.float64]


@dataclass
class Row:
    """One candidate of one question."""

    person: str
    question: int
    features: rerank.Features
    answers: bool
    vector_only: bool


#: Candidates per question the model is fitted on: the first pass's best 20.
CANDIDATES = 20


class _Recorder:
    """Stands in for a fitted model: keeps the fused score, so the first pass's order stands."""

    floor = 0.0

    def relevance(self, features: rerank.Features) -> float:
        return features.fused


@contextmanager
def _recording(seen: dict[str, rerank.Features]) -> Iterator[None]:
    """While active, every hybrid recall records each candidate's features in ``seen``."""
    original_model, original_pass = rerank.model_for, _recall._second_pass
    recorder = _Recorder()

    def second_pass(model: object, scored: _recall.Scored, *rest: Any) -> _recall.Scored:
        for record, _subject, _score in scored:
            seen[record.id] = _recall._features(record, scored_fused(scored, record.id), *rest)
        return original_pass(recorder, scored, *rest)  # type: ignore[arg-type]

    rerank.model_for = lambda _name: recorder  # type: ignore[assignment,return-value]
    _recall._second_pass = second_pass  # type: ignore[assignment]
    try:
        yield
    finally:
        rerank.model_for = original_model
        _recall._second_pass = original_pass


def scored_fused(scored: _recall.Scored, memory_id: str) -> float:
    return next(score for record, _, score in scored if record.id == memory_id)


def collect(embedder: Embedder) -> list[Row]:
    """Every question's candidates (the best :data:`CANDIDATES` of the first pass), with
    features and labels."""
    rows: list[Row] = []
    seen: dict[str, rerank.Features] = {}
    with tempfile.TemporaryDirectory(prefix="rerank-") as folder, _recording(seen):
        tmp = Path(folder)
        KeyStore.create(tmp / "keys")
        memory = Memory.open(
            f"local:{tmp / 'store'}", keys=tmp / "keys", app="fit", embedder=embedder
        )
        try:
            with tenant.use("fit"):
                ids: dict[str, list[str]] = {}
                for person in train.PEOPLE:
                    handle = memory.acting_for(person, agent="fit-bot")
                    ids[person] = [
                        handle.remember(text, formation=False).id
                        for text in train.MEMORIES[person]
                    ]
                for number, (person, question, gold) in enumerate(train.QUESTIONS):
                    handle = memory.acting_for(person, agent="fit-bot")
                    seen.clear()
                    # top_k 10 opens a pool of 20 (max(DEPTH, 2 * top_k)): the candidates
                    handle.recall(question, top_k=CANDIDATES // 2, ranking="relevance")
                    answers = {ids[person][index] for index in gold}
                    for memory_id, features in seen.items():
                        rows.append(
                            Row(
                                person=person,
                                question=number,
                                features=features,
                                answers=memory_id in answers,
                                vector_only=features.bm25 == 0.0 and features.coverage == 0.0,
                            )
                        )
        finally:
            memory.close()
    return rows


def design(rows: Sequence[Row]) -> tuple[Matrix, Matrix]:
    x = np.array([row.features.vector() for row in rows], dtype=np.float64)
    y = np.array([1.0 if row.answers else 0.0 for row in rows], dtype=np.float64)
    return x, y


def fit(x: Matrix, y: Matrix, penalty: float = 1e-2, steps: int = 50) -> tuple[Matrix, float]:
    """Logistic regression by Newton's method; ``penalty`` is L2 on the weights (not bias)."""
    n, d = x.shape
    a = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    ridge = np.eye(d + 1) * penalty
    ridge[d, d] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        gradient = a.T @ (p - y) + ridge @ w
        hessian = (a * (p * (1 - p))[:, None]).T @ a + ridge
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.max(np.abs(step))) < 1e-9:
            break
    return w[:d], float(w[d])


def relevance(x: Matrix, weights: Matrix, bias: float) -> Matrix:
    return np.asarray(1.0 / (1.0 + np.exp(-(x @ weights + bias))), dtype=np.float64)


#: How much hit@3 the floor may cost on the training set, against no floor.
FLOOR_BUDGET = 0.025


def choose_floor(rows: Sequence[Row], scores: Matrix) -> float:
    """The highest floor (on a 0.01 grid) whose hit@3 stays within :data:`FLOOR_BUDGET` of
    no floor at all: each step up leaves out more vector-only noise and some answers."""
    allowed = evaluate(rows, scores, 0.0)["hit@3"] - FLOOR_BUDGET
    floor = 0.0
    for step in range(1, 100):
        if evaluate(rows, scores, step / 100)["hit@3"] < allowed:
            break
        floor = step / 100
    return floor


def evaluate(rows: Sequence[Row], scores: Matrix, floor: float) -> dict[str, float]:
    """hit@1 and hit@3 of answerable questions, and the share of unanswerable questions
    whose every candidate is left out or only BM25-found (what the floor promises), as
    recall serves them: vector-only candidates whose ``scores`` are under ``floor`` left
    out, the rest in their first-pass (fused) order."""
    by_question: dict[int, list[tuple[float, Row]]] = {}
    for row, score in zip(rows, scores, strict=True):
        if row.vector_only and score < floor:
            continue
        by_question.setdefault(row.question, []).append((row.features.fused, row))
    people = {row.person for row in rows}
    asked = [(n, gold) for n, (who, _, gold) in enumerate(train.QUESTIONS) if who in people]
    answerable = [n for n, gold in asked if gold]
    empty = [n for n, gold in asked if not gold]
    hit1 = hit3 = 0
    for n in answerable:
        ranked = [row for _, row in sorted(by_question.get(n, []), key=lambda t: -t[0])]
        hit1 += bool(ranked) and ranked[0].answers
        hit3 += any(row.answers for row in ranked[:3])
    silent = sum(
        all(not row.vector_only for _, row in by_question.get(n, [])) for n in empty
    )
    return {
        "hit@1": hit1 / len(answerable),
        "hit@3": hit3 / len(answerable),
        "unanswerable with no vector-only hit": silent / len(empty) if empty else 1.0,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minilm", action="store_true", help="fit for MiniLMEmbedder")
    args = parser.parse_args(argv)
    if args.minilm:
        from mainsdk_memory.embeddings import MiniLMEmbedder

        embedder: Embedder = MiniLMEmbedder()
    else:
        embedder = StaticEmbedder()
    rows = collect(embedder)
    x, y = design(rows)
    print(f"{len(rows)} candidates, {int(y.sum())} answers, embedder {embedder.name}")
    fused = np.array([row.features.fused for row in rows])
    print("first pass only:", evaluate(rows, fused, 0.0))
    for person in train.PEOPLE:  # leave one person out
        train_rows = [row for row in rows if row.person != person]
        test_rows = [row for row in rows if row.person == person]
        w, b = fit(*design(train_rows))
        floor = choose_floor(train_rows, relevance(design(train_rows)[0], w, b))
        held = relevance(design(test_rows)[0], w, b)
        print(f"  held out {person}:", evaluate(test_rows, held, floor))
    weights, bias = fit(x, y)
    scores = relevance(x, weights, bias)
    floor = choose_floor(rows, scores)
    print("fitted on everyone:", evaluate(rows, scores, floor))
    names = ", ".join(f"{value:.4f}" for value in weights)
    print(f'    "{embedder.name}": Model(weights=({names}), bias={bias:.4f}, floor={floor:.3f}),')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
