"""Choose the fusion of BM25 and vectors on LoCoMo: recall@1/5/10 and MRR@10 per ranker.

Not a test. Each LoCoMo conversation is indexed on its own (one document per dialogue turn,
text ``"speaker: text"``, with ``--date`` prefixed by its session date), and every question
with evidence is asked against its conversation. Rankers, all on plaintext (sealing changes
no score: the blind index ranks equal to plaintext BM25, and vectors are opened before
ranking):

- ``bm25``: :func:`mainsdk_memory.drivers.bm25_rank` over rows whose "blind" tokens are the
  plain :func:`mainsdk_memory._text.index_terms` of each turn (the SDK's BM25, unsealed);
- ``minilm``: cosine of :class:`~mainsdk_memory.embeddings.MiniLMEmbedder` vectors
  (:func:`~mainsdk_memory.embeddings.cosine_top_k`); ``static``: the same with the default
  :class:`~mainsdk_memory.embeddings.StaticEmbedder` (no model runs); ``hashing``: the same
  with the model-free :class:`~mainsdk_memory.embeddings.HashingEmbedder`;
- fusions of ``bm25`` with a vector ranking, each list cut at ``--depth`` candidates as a
  store would return them: reciprocal rank fusion (:func:`mainsdk_memory._fusion.rrf`) with
  several ``k`` and vector weights; convex combinations of min-max-normalised scores
  (:func:`mainsdk_memory._fusion.convex`) with several ``alpha``; and, for comparison,
  convex combinations of clipped absolute scores and of distribution-based (mean ± 3 sd)
  normalised scores.

To keep the choice honest the parameters are picked on conversations 1-5 (``tune``) and
reported on conversations 6-10 (``held-out``) as well as on all ten. recall@k: at least one
evidence turn in the top k. MRR@10: mean of 1/rank of the first evidence turn in the top 10.

Evidence ids are normalised as in ``benchmarks/locomo.py``: a string is split on ``;``, ``,``
and spaces, a stray colon after ``D`` is dropped (``D:11:26``), leading zeros are dropped
(``D30:05``), and pieces that are no id or name no turn are dropped; a question left with no
evidence stays in the totals as a miss (1,982 questions)::

    .venv/bin/pip install -e '.[embeddings]'
    .venv/bin/python -m benchmarks.locomo_vectors              # Markdown tables, ~3 min on 2 cores
    .venv/bin/python -m benchmarks.locomo_vectors --json out.json --date --speed

The data is read in place from ``../shared/data/locomo10.json`` (never copied).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mainsdk_memory._fusion import convex, rrf
from mainsdk_memory._text import index_terms
from mainsdk_memory.drivers import StoredRow, bm25_rank
from mainsdk_memory.embeddings import Embedder, HashingEmbedder, StaticEmbedder, cosine_top_k

REPO = Path(__file__).resolve().parents[1]
DEFAULT_LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
TOP = 10
_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")

Ranked = list[tuple[str, float]]


@dataclass(frozen=True)
class Turn:
    """One dialogue turn: one document."""

    dia_id: str
    text: str
    date: datetime


@dataclass(frozen=True)
class Question:
    """One question with its normalised evidence turn ids."""

    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample."""

    number: int
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def _evidence(raw: Sequence[str], ids: set[str]) -> frozenset[str]:
    found = set()
    for item in raw:
        for piece in filter(None, re.split(r"[;,\s]+", item)):
            match = _ID.fullmatch(piece)
            if match:
                dia_id = f"D{int(match[1])}:{int(match[2])}"
                if dia_id in ids:
                    found.add(dia_id)
    return frozenset(found)


def load(path: Path, *, date: bool) -> list[Conversation]:
    """Every conversation of locomo10.json with its questions that have evidence."""
    conversations = []
    for number, sample in enumerate(json.loads(path.read_text(encoding="utf-8")), start=1):
        talk = sample["conversation"]
        sessions = sorted(int(m[1]) for key in talk if (m := _SESSION.fullmatch(key)))
        turns = []
        for session in sessions:
            when = datetime.strptime(
                talk[f"session_{session}_date_time"], "%I:%M %p on %d %B, %Y"
            ).replace(tzinfo=UTC)
            for i, turn in enumerate(talk[f"session_{session}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                if date:
                    text = f"[{when:%d %B %Y}] {text}"
                turns.append(Turn(turn["dia_id"], text, when + timedelta(seconds=i)))
        ids = {turn.dia_id for turn in turns}
        questions = tuple(
            Question(qa["question"], int(qa["category"]), _evidence(qa["evidence"], ids))
            for qa in sample["qa"]
            if qa.get("evidence")
        )
        conversations.append(Conversation(number, tuple(turns), questions))
    return conversations


# --- rankers -------------------------------------------------------------------------------


def bm25_ranker(turns: Sequence[Turn]) -> Callable[[str, int], Ranked]:
    """The SDK's BM25 with plain index terms as the blind tokens."""
    rows = []
    for turn in turns:
        terms = index_terms(turn.text)
        rows.append(StoredRow(
            tenant="t", app="a", subject="p", memory_id=turn.dia_id, version=1, kind="note",
            labels=("personal",), trust="confirmed", agent="bench", session=None,
            session_only=False, pinned=False, created_at=turn.date, recorded_at=turn.date,
            valid_from=turn.date, valid_to=None, sealed=b"", terms=Counter(terms),
            length=len(terms),
        ))

    def rank(question: str, depth: int) -> Ranked:
        query = [[term] for term in index_terms(question)]
        return [(row.memory_id, score) for row, score in bm25_rank(rows, query, depth)]

    return rank


def vector_ranker(
    turns: Sequence[Turn], matrix: np.ndarray, queries: dict[str, np.ndarray]
) -> Callable[[str, int], Ranked]:
    """Cosine over the turns' vectors; ``queries`` maps question text to its vector."""
    ids = [turn.dia_id for turn in turns]

    def rank(question: str, depth: int) -> Ranked:
        found = cosine_top_k(matrix, queries[question], depth, unit_rows=True)
        return [(ids[i], s) for i, s in found]

    return rank


# --- metrics -------------------------------------------------------------------------------


def score(results: Sequence[tuple[Question, Ranked]]) -> dict[str, float]:
    """recall@1/5/10 and MRR@10 over ``results``."""
    hits = {1: 0, 5: 0, 10: 0}
    reciprocal = 0.0
    for question, ranked in results:
        ids = [memory_id for memory_id, _ in ranked[:TOP]]
        first = next((r for r, i in enumerate(ids, start=1) if i in question.evidence), None)
        if first is None:
            continue
        reciprocal += 1.0 / first
        for k in hits:
            hits[k] += first <= k
    n = len(results) or 1
    out = {f"recall@{k}": hits[k] / n for k in hits}
    out["mrr@10"] = reciprocal / n
    out["questions"] = len(results)
    return out


# --- the run -------------------------------------------------------------------------------


def _scored(ranking: Ranked, norm: Callable[[np.ndarray], np.ndarray]) -> dict[str, float]:
    if not ranking:
        return {}
    return dict(zip([i for i, _ in ranking],
                    norm(np.array([s for _, s in ranking])).tolist(), strict=True))


def _clip(values: np.ndarray) -> np.ndarray:
    # Absolute scores: BM25 is already in [0, 1]; a cosine below 0 counts as 0.
    return np.clip(values, 0.0, 1.0)


def _dbsf(values: np.ndarray) -> np.ndarray:
    # Distribution-based score fusion: mean ± 3 standard deviations mapped to [0, 1].
    spread = values.std()
    if spread == 0.0:
        return np.ones_like(values)
    return np.clip((values - (values.mean() - 3 * spread)) / (6 * spread), 0.0, 1.0)


def _other_convex(norm: Callable[[np.ndarray], np.ndarray], alpha: float) -> Callable[
    [Ranked, Ranked], Ranked
]:
    """A convex combination with another normalisation, for comparison only."""

    def fused(bm25: Ranked, vector: Ranked) -> Ranked:
        b, v = _scored(bm25, norm), _scored(vector, norm)
        scores = {i: alpha * b.get(i, 0.0) + (1 - alpha) * v.get(i, 0.0) for i in b.keys() | v}
        return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))

    return fused


def fusion_candidates() -> dict[str, Callable[[Ranked, Ranked], Ranked]]:
    """Every fusion tried, by name: the library's two and two other normalisations."""
    out: dict[str, Callable[[Ranked, Ranked], Ranked]] = {}
    for k in (10, 30, 60):
        for w in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0):
            out[f"rrf k={k} w_vec={w:g}"] = (
                lambda b, v, k=k, w=w: rrf(b, v, k=k, weights=(1.0, w))
            )
    for alpha in (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9):
        out[f"convex minmax alpha={alpha:g}"] = lambda b, v, a=alpha: convex(b, v, alpha=a)
    for alpha in (0.5, 0.6, 0.7, 0.8):
        out[f"convex clip alpha={alpha:g}"] = _other_convex(_clip, alpha)
        out[f"convex dbsf alpha={alpha:g}"] = _other_convex(_dbsf, alpha)
    return out


def embed_all(
    embedder: Embedder, conversations: Sequence[Conversation], cache: Path | None = None
) -> tuple[dict[int, np.ndarray], dict[str, np.ndarray], float | None]:
    """Turn matrices per conversation, question vectors, and texts per second.

    With ``cache`` (a folder outside the project: vectors of LoCoMo are derived from its
    data), vectors are kept there by embedder name and a hash of the texts, and the rate is
    ``None`` when they came from it.
    """
    texts = [turn.text for c in conversations for turn in c.turns]
    questions = sorted({q.text for c in conversations for q in c.questions})
    digest = hashlib.sha256("\x00".join([embedder.name, *texts, *questions]).encode()).hexdigest()
    cached = cache / f"{embedder.name}-{digest[:16]}.npy" if cache else None
    rate = None
    if cached is not None and cached.exists():
        both = np.load(cached)
    else:
        started = time.perf_counter()
        both = embedder.embed([*texts, *questions])
        rate = (len(texts) + len(questions)) / (time.perf_counter() - started)
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            np.save(cached, both)
    matrix, query_matrix = both[: len(texts)], both[len(texts) :]
    per: dict[int, np.ndarray] = {}
    offset = 0
    for c in conversations:
        per[c.number] = np.ascontiguousarray(matrix[offset : offset + len(c.turns)])
        offset += len(c.turns)
    return per, dict(zip(questions, query_matrix, strict=True)), rate


def run(
    path: Path, *, date: bool, depth: int, model: bool, cache: Path | None = None
) -> dict[str, Any]:
    """Every ranker and fusion on every question; metrics on tune, held-out and all."""
    conversations = load(path, date=date)
    embedders: dict[str, Embedder] = {"hashing": HashingEmbedder(), "static": StaticEmbedder()}
    report: dict[str, Any] = {"date_in_text": date, "depth": depth, "embed_rate": {}}
    if model:
        from mainsdk_memory.embeddings import MiniLMEmbedder  # needs the extra

        started = time.perf_counter()
        embedders["minilm"] = MiniLMEmbedder()
        report["minilm_load_seconds"] = round(time.perf_counter() - started, 1)
    vectors = {}
    for name, embedder in embedders.items():
        per, queries, rate = embed_all(embedder, conversations, cache)
        vectors[name] = (per, queries)
        report["embed_rate"][name] = None if rate is None else round(rate, 1)

    fusions = fusion_candidates()
    results: dict[str, list[tuple[int, Question, Ranked]]] = {}

    def add(name: str, c: Conversation, q: Question, ranked: Ranked) -> None:
        results.setdefault(name, []).append((c.number, q, ranked))

    for c in conversations:
        bm25 = bm25_ranker(c.turns)
        vec = {
            name: vector_ranker(c.turns, per[c.number], queries)
            for name, (per, queries) in vectors.items()
        }
        for q in c.questions:
            lexical = bm25(q.text, depth)
            add("bm25", c, q, lexical)
            for name, ranker in vec.items():
                semantic = ranker(q.text, depth)
                add(name, c, q, semantic)
                for fusion_name, fusion in fusions.items():
                    add(f"bm25+{name} {fusion_name}", c, q, fusion(lexical, semantic))

    table: dict[str, dict[str, Any]] = {}
    for name, rows in results.items():
        table[name] = {
            "all": score([(q, r) for _n, q, r in rows]),
            "tune": score([(q, r) for n, q, r in rows if n <= 5]),
            "held-out": score([(q, r) for n, q, r in rows if n > 5]),
            "by_category": {
                str(cat): score([(q, r) for _n, q, r in rows if q.category == cat])
                for cat in sorted({q.category for _n, q, _r in rows})
            },
        }
    report["rankers"] = table
    report["chosen"] = {}
    for name in vectors:
        prefix = f"bm25+{name} "
        candidates = [key for key in table if key.startswith(prefix)]
        best = max(candidates, key=lambda key: (table[key]["tune"]["recall@5"],
                                                table[key]["tune"]["mrr@10"]))
        report["chosen"][name] = best
    return report


def speed(repeat: int = 20) -> dict[str, Any]:
    """p50 of cosine_top_k(k=10) over random unit rows of 384 dimensions, and the load."""
    rng = np.random.default_rng(7)
    out: dict[str, Any] = {"load average before": [round(x, 1) for x in os.getloadavg()]}
    for n in (10_000, 100_000):
        matrix = rng.standard_normal((n, 384), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        query = matrix[0].copy()
        for unit_rows in (False, True):
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                cosine_top_k(matrix, query, 10, unit_rows=unit_rows)
                times.append(time.perf_counter() - started)
            label = f"cosine_top_k {n:,} x 384{' unit_rows' if unit_rows else ''} p50 ms"
            out[label] = round(statistics.median(times) * 1000, 2)
    out["load average after"] = [round(x, 1) for x in os.getloadavg()]
    return out


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables: the plain rankers, then every fusion, best first."""
    table = report["rankers"]
    lines = [
        f"LoCoMo, {table['bm25']['all']['questions']} questions, date in text: "
        f"{report['date_in_text']}, candidates per list: {report['depth']}",
        "",
        "| ranker | r@1 | r@5 | r@10 | MRR@10 | r@5 tune (1-5) | r@5 held-out (6-10) |",
        "|---|---|---|---|---|---|---|",
    ]

    def row(name: str) -> str:
        a, t, h = table[name]["all"], table[name]["tune"], table[name]["held-out"]
        return (f"| {name} | {a['recall@1']:.3f} | {a['recall@5']:.3f} | {a['recall@10']:.3f} "
                f"| {a['mrr@10']:.3f} | {t['recall@5']:.3f} | {h['recall@5']:.3f} |")

    plain = [name for name in table if not name.startswith("bm25+")]
    fused = sorted((name for name in table if name.startswith("bm25+")),
                   key=lambda name: -table[name]["tune"]["recall@5"])
    lines += [row(name) for name in plain + fused]
    lines += ["", "Chosen on conversations 1-5 (recall@5, then MRR): "
              + "; ".join(f"{k}: `{v}`" for k, v in report["chosen"].items()), ""]
    shown = plain + list(report["chosen"].values())
    cats = sorted(table["bm25"]["by_category"])
    lines += ["recall@5 by category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, "
              "5 adversarial):", "",
              "| ranker | " + " | ".join(cats) + " |", "|---|" + "---|" * len(cats)]
    lines += [f"| {name} | " + " | ".join(
        f"{table[name]['by_category'][c]['recall@5']:.3f}" for c in cats) + " |"
        for name in shown]
    extra = {k: v for k, v in report.items() if k not in {"rankers", "chosen"}}
    lines += ["", "```", json.dumps(extra, indent=1), "```"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print Markdown (and write JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--date", action="store_true", help="prefix each turn with its date")
    parser.add_argument("--depth", type=int, default=50, help="candidates from each ranker")
    parser.add_argument("--no-model", action="store_true", help="skip MiniLM (no extra)")
    parser.add_argument("--speed", action="store_true", help="also time cosine_top_k")
    parser.add_argument("--json", type=Path, help="write the full report here")
    parser.add_argument("--cache", type=Path,
                        help="keep vectors in this folder (outside the project) between runs")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    report = run(args.locomo, date=args.date, depth=args.depth, model=not args.no_model,
                 cache=args.cache)
    if args.speed:
        report["speed"] = speed()
    report["machine"] = f"{platform.machine()}, {platform.python_version()}"
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(markdown(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
