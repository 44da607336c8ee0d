"""Retrieval quality on LoCoMo: recall@1/@5/@10 and MRR@10, overall and per QA category.

Each conversation is one person. Every dialogue turn becomes one memory, ``"speaker: text"``,
written with the public ``remember`` (session date as ``valid_from``); every question with
evidence is asked once with the public ``recall(top_k=10)``, with the configuration's
``ranking`` (:attr:`~benchmarks.stores.StoreConfig.ranking`). Each recall counts its hits as
uses, so with the ranking signals on a question's answer depends on the questions asked
before it in the same conversation, as it would for a user. A configuration with formation on
(:attr:`~benchmarks.stores.StoreConfig.formation`) lets ``remember`` fold a turn into a memory
held (a duplicate, a new version): a memory then counts for each turn its current text still
holds, and only those. A question counts as found at rank r when the r-th hit is (or holds) one
of its evidence turns. Two baselines run on the plaintext turns in the
same run: ``rank_bm25.BM25Okapi`` on lowercase regex tokens (the data README's reference), and
the SDK's own BM25 (:func:`~mainsdk_memory.drivers.bm25_rank`) on rows whose index terms are
the plain output of :func:`mainsdk_memory._text.index_terms` — what sealing must not change.

The data is read in place from ``../shared/data/locomo10.json`` (beside the checkout) or from
``$MAINSDK_BENCH_DATA``; it is never copied into the project.

Evidence normalisation (:func:`normalise_evidence`): each evidence string is split on ``;``,
``,`` and whitespace (``"D8:6; D9:17"`` is two ids); each piece must read ``D<session>:<turn>``
after dropping a stray colon after the ``D`` (``"D:11:26"`` → ``D11:26``); numbers lose leading
zeros (``"D30:05"`` → ``D30:5``); pieces that are not an id (``"D"``) and ids naming no turn of
the conversation are dropped. A question keeps its place even if nothing is left (it then
counts as a miss for every method), so the totals match the README's 1,982.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.stores import TENANT, SteppingClock, StoreConfig
from mainsdk_memory import Memory, MemoryInjectionError, tenant
from mainsdk_memory._text import index_terms
from mainsdk_memory.drivers import StoredRow, bm25_rank
from mainsdk_memory.injection import DEFAULT_DETECTOR

__all__ = [
    "DATA_ENV",
    "TOP_K",
    "Conversation",
    "Dataset",
    "Question",
    "Ranked",
    "Turn",
    "compare_rankings",
    "data_dir",
    "load",
    "normalise_evidence",
    "rank_bm25_okapi",
    "rank_plain_ours",
    "rank_with_sdk",
    "score",
]

#: Folder holding locomo10.json, instead of ``../shared/data`` beside the checkout.
DATA_ENV = "MAINSDK_BENCH_DATA"
TOP_K = 10
AGENT = "locomo"
_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")
_TOKEN = re.compile(r"\w+")

Ranked = list[tuple[str, float]]
"""One question's answer: ``(dia_id, score)`` pairs, best first, at most :data:`TOP_K`."""


def data_dir() -> Path:
    """``$MAINSDK_BENCH_DATA``, else the ``shared/data`` folder beside the checkout."""
    configured = os.environ.get(DATA_ENV)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


@dataclass(frozen=True)
class Turn:
    """One dialogue turn: a future memory."""

    dia_id: str
    speaker: str
    text: str
    session: int
    date: datetime

    @property
    def memory_text(self) -> str:
        """The memory's text: ``speaker: text``."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    """One QA item with evidence."""

    question: str
    category: int
    evidence: frozenset[str]
    """Normalised evidence ids that name a turn (may be empty: then always a miss)."""


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample: the turns of one person and the questions about them."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass
class Dataset:
    """The conversations loaded, and what evidence normalisation did."""

    path: Path
    conversations: list[Conversation]
    normalisation: dict[str, int] = field(default_factory=dict)
    refused_by_detector: list[str] = field(default_factory=list)
    """``sample_id/dia_id`` of turns the default injection check refuses to store."""

    def summary(self) -> dict[str, Any]:
        """Counts for the result file."""
        return {
            "path": str(self.path),
            "conversations": len(self.conversations),
            "turns": sum(len(c.turns) for c in self.conversations),
            "questions": sum(len(c.questions) for c in self.conversations),
            "questions_by_category": dict(sorted(Counter(
                str(q.category) for c in self.conversations for q in c.questions
            ).items())),
            "evidence_normalisation": dict(self.normalisation),
            "refused_by_injection_check": list(self.refused_by_detector),
        }


def normalise_evidence(
    raw: Iterable[str], turn_ids: set[str], counts: Counter[str]
) -> frozenset[str]:
    """The turn ids ``raw`` names (module docstring); ``counts`` tallies each repair."""
    found = set()
    for item in raw:
        pieces = [piece for piece in re.split(r"[;,\s]+", item) if piece]
        if len(pieces) > 1:
            counts["strings split into several ids"] += 1
        for piece in pieces:
            match = _ID.fullmatch(piece)
            if match is None:
                counts["pieces dropped: not an id"] += 1
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id != piece:
                counts["ids rewritten (stray colon, leading zero)"] += 1
            if dia_id not in turn_ids:
                counts["ids dropped: no such turn"] += 1
                continue
            found.add(dia_id)
    return frozenset(found)


def _session_date(text: str) -> datetime:
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(
    path: Path, *, limit: int | None = None, sessions: int | None = None
) -> Dataset:
    """Read locomo10.json: every conversation, or the ``limit`` smallest (fewest turns).

    ``sessions`` keeps only the first that many sessions of each conversation, and only the
    questions whose evidence lies wholly inside them (a small slice for the smoke run).
    """
    samples = json.loads(path.read_text(encoding="utf-8"))
    counts: Counter[str] = Counter()
    conversations = []
    for sample in samples:
        talk = sample["conversation"]
        numbers = sorted(int(m[1]) for key in talk if (m := _SESSION.fullmatch(key)))
        if sessions is not None:
            numbers = numbers[:sessions]
        turns = tuple(
            Turn(
                dia_id=turn["dia_id"],
                speaker=turn["speaker"],
                text=turn["text"],
                session=number,
                date=_session_date(talk[f"session_{number}_date_time"]),
            )
            for number in numbers
            for turn in talk[f"session_{number}"]
        )
        ids = {turn.dia_id for turn in turns}
        all_ids = {
            turn["dia_id"] for key in talk if _SESSION.fullmatch(key) for turn in talk[key]
        }
        questions = []
        for item in sample["qa"]:
            raw = item.get("evidence") or []
            if not raw:
                continue
            evidence = normalise_evidence(raw, all_ids, counts if sessions is None else Counter())
            if sessions is not None and (not evidence or not evidence <= ids):
                continue
            questions.append(Question(item["question"], int(item["category"]), evidence))
        if questions or sessions is None:
            conversations.append(Conversation(sample["sample_id"], turns, tuple(questions)))
    if limit is not None:
        conversations = sorted(conversations, key=lambda c: (len(c.turns), c.sample_id))[:limit]
    counts["questions with no usable evidence (always a miss)"] = sum(
        1 for c in conversations for q in c.questions if not q.evidence
    )
    refused = [
        f"{c.sample_id}/{t.dia_id}"
        for c in conversations
        for t in c.turns
        if DEFAULT_DETECTOR.check(t.memory_text)
    ]
    return Dataset(path, conversations, dict(counts), refused)


# --- scoring -------------------------------------------------------------------------------


def _first_hit(ranked: Ranked, evidence: frozenset[str]) -> int | None:
    for rank, (dia_id, _score) in enumerate(ranked[:TOP_K], start=1):
        # A memory formation gave several turns names them all, joined by "|".
        if any(one in evidence for one in dia_id.split("|")):
            return rank
    return None


def _metrics(ranks: Sequence[int | None]) -> dict[str, float | int]:
    n = len(ranks)
    if not n:
        return {"n": 0}

    def at(k: int) -> float:
        return round(sum(1 for r in ranks if r is not None and r <= k) / n, 4)

    return {
        "n": n,
        "recall@1": at(1),
        "recall@5": at(5),
        "recall@10": at(10),
        "mrr@10": round(sum(1.0 / r for r in ranks if r is not None) / n, 4),
    }


def score(
    conversations: Sequence[Conversation], rankings: Sequence[Sequence[Ranked]]
) -> dict[str, Any]:
    """Recall@k and MRR@10, overall and per category, from each question's ranking."""
    by_category: dict[int, list[int | None]] = {}
    every: list[int | None] = []
    for conversation, ranked in zip(conversations, rankings, strict=True):
        for question, answer in zip(conversation.questions, ranked, strict=True):
            rank = _first_hit(answer, question.evidence)
            every.append(rank)
            by_category.setdefault(question.category, []).append(rank)
    return {
        "overall": _metrics(every),
        "by_category": {str(c): _metrics(r) for c, r in sorted(by_category.items())},
    }


def compare_rankings(
    left: Sequence[Sequence[Ranked]], right: Sequence[Sequence[Ranked]]
) -> dict[str, Any]:
    """How many questions got the same ids in the same order, and the largest score gap."""
    same = total = 0
    gap = 0.0
    for left_conv, right_conv in zip(left, right, strict=True):
        for a, b in zip(left_conv, right_conv, strict=True):
            total += 1
            if [i for i, _ in a] == [i for i, _ in b]:
                same += 1
                gap = max([gap, *(abs(x - y) for (_, x), (_, y) in zip(a, b, strict=True))])
    return {"questions": total, "identical_rankings": same, "max_score_difference": gap}


# --- methods -------------------------------------------------------------------------------


def rank_bm25_okapi(conversation: Conversation) -> tuple[list[Ranked], list[int | None]]:
    """``rank_bm25.BM25Okapi`` over every turn, lowercase ``\\w+`` tokens (README's baseline).

    Also returns each question's rank over the full ordering (for the README's full MRR).
    Ties keep turn order (a stable sort).
    """
    import numpy as np
    from rank_bm25 import BM25Okapi

    ids = [turn.dia_id for turn in conversation.turns]
    index = BM25Okapi([_TOKEN.findall(turn.memory_text.lower()) for turn in conversation.turns])
    answers: list[Ranked] = []
    full: list[int | None] = []
    for question in conversation.questions:
        scores = index.get_scores(_TOKEN.findall(question.question.lower()))
        order = np.argsort(-scores, kind="stable")
        answers.append([(ids[i], float(scores[i])) for i in order[:TOP_K]])
        full.append(next(
            (rank for rank, i in enumerate(order, start=1) if ids[i] in question.evidence), None
        ))
    return answers, full


def rank_plain_ours(conversation: Conversation, skip: set[str]) -> list[Ranked]:
    """The SDK's :func:`bm25_rank` on plaintext rows: terms are plain ``index_terms``.

    Rows are built like the SDK's (one per stored turn, ``recorded_at`` increasing in turn
    order as the benchmark's clock makes it), so ties break the same way; ``skip`` holds the
    ``dia_id`` of turns the injection check kept out of the store.
    """
    start = datetime(2024, 1, 1, tzinfo=UTC)
    rows = []
    for position, turn in enumerate(conversation.turns):
        if turn.dia_id in skip:
            continue
        terms = index_terms(turn.memory_text)
        rows.append(StoredRow(
            tenant=TENANT, app="plain", subject="plain", memory_id=turn.dia_id, version=1,
            kind="fact", labels=("personal",), trust="inferred", agent=AGENT, session=None,
            session_only=False, pinned=False, created_at=start,
            recorded_at=start + timedelta(seconds=position), valid_from=turn.date,
            valid_to=None, sealed=b"", terms=Counter(terms), length=len(terms),
        ))
    answers: list[Ranked] = []
    for question in conversation.questions:
        query = [[term] for term in index_terms(question.question)]
        answers.append([(row.memory_id, s) for row, s in bm25_rank(rows, query, TOP_K)])
    return answers


@dataclass
class SdkRun:
    """What one SDK configuration produced on LoCoMo."""

    rankings: list[list[Ranked]]
    refused: list[str]
    remember_seconds: float
    recall_seconds: float
    embedder: str | None = None
    """The name of the embedder the store was opened with (``None``: text only)."""


def _ingest_and_ask(
    config: StoreConfig, url: str, keys: Path, conversation: Conversation
) -> tuple[list[Ranked], list[str], float, float, str | None]:
    memory: Memory = config.open(url, keys, SteppingClock())
    embedder = None if memory.embedder is None else memory.embedder.name
    try:
        with tenant.use(TENANT):
            handle = memory.acting_for(conversation.sample_id, agent=AGENT)
            turns_of: dict[str, list[Turn]] = {}
            refused = []
            started = time.perf_counter()
            for turn in conversation.turns:
                try:
                    record = handle.remember(
                        turn.memory_text, valid_from=turn.date, **config.remember_options
                    )
                except MemoryInjectionError:
                    refused.append(f"{conversation.sample_id}/{turn.dia_id}")
                    continue
                # A memory is credited with the turns its current text holds: formation may
                # have made this turn a new version of it (or found it held already), and a
                # turn whose words it no longer holds is not found through it.
                held = turns_of.setdefault(record.id, [])
                held[:] = [old for old in held if old.text in record.text]
                if turn.text in record.text and turn not in held:
                    held.append(turn)
            turn_of = {memory_id: "|".join(turn.dia_id for turn in turns)
                       for memory_id, turns in turns_of.items()}
            remembered = time.perf_counter() - started
            started = time.perf_counter()
            answers: list[Ranked] = []
            for question in conversation.questions:
                hits = config.recall(handle, question.question, top_k=TOP_K)
                answers.append([(turn_of[hit.record.id], hit.score) for hit in hits])
            recalled = time.perf_counter() - started
    finally:
        memory.close()
    return answers, refused, remembered, recalled, embedder


def rank_with_sdk(
    config: StoreConfig,
    url: str,
    keys: Path,
    conversations: Sequence[Conversation],
    *,
    workers: int = 4,
    progress: Callable[[str], None] = lambda _: None,
) -> SdkRun:
    """Write every turn and ask every question through the public API of ``config``.

    Conversations run in parallel threads, each with its own Memory and deterministic clock
    (the numbers do not depend on the interleaving; the times reported are wall-clock sums
    per conversation, for information only — quality is what this measures).
    """
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(
            lambda c: _ingest_and_ask(config, url, keys, c), conversations
        ))
    progress(f"{config.name}: {len(conversations)} conversations done")
    return SdkRun(
        rankings=[r[0] for r in results],
        refused=[refused for r in results for refused in r[1]],
        remember_seconds=round(sum(r[2] for r in results), 2),
        recall_seconds=round(sum(r[3] for r in results), 2),
        embedder=results[0][4] if results else None,
    )
