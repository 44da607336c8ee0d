"""The development set the static embedder's recipe was chosen on (ADR 0083); not a benchmark.

Fifteen short memories about one person and twenty questions that share few or no words
with the memory that answers them. Written for choosing the distillation's pooling and its
smooth-inverse-frequency weight, and used for nothing else: the recipe's quality is reported
on LoCoMo and on the separate paraphrase set in ``benchmarks/``, never on this one::

    .venv/bin/python tools/static_dev_set.py mainsdk_memory/data/static-minilm-256.npz
"""

from __future__ import annotations

import sys

from mainsdk_memory.embeddings import StaticEmbedder, _StaticTable, cosine_top_k

MEMORIES = [
    "Ada prefers WhatsApp over email.", "Ada lives in Lisbon.", "Ada is allergic to peanuts.",
    "Ada's daughter plays the violin.", "Ada works as a nurse at the city hospital.",
    "Refunds go back to the original card.", "Ada drinks green tea, no sugar.",
    "Ada's flight lands at nine.", "Ada runs a marathon every spring.",
    "Ada's dog is called Biscuit.", "Ada is learning Japanese.",
    "Ada's rent is due on the first of the month.", "Ada moved to Porto in October.",
    "Ada hates loud music.", "Ada's car is a blue Volvo.",
]
QUESTIONS = [
    ("how do we reach her?", 0), ("where is her home?", 1), ("what food should she avoid?", 2),
    ("which instrument does her child play?", 3), ("what is her job?", 4),
    ("what happens to money returned to customers?", 5), ("what does she like to drink?", 6),
    ("when does her plane arrive?", 7), ("what sport does she do?", 8),
    ("what is the name of her pet?", 9), ("which language is she studying?", 10),
    ("when does she pay for the apartment?", 11), ("where did she relocate?", 12),
    ("what noise bothers her?", 13), ("what vehicle does she drive?", 14),
    ("best way to contact Ada", 0), ("her medical condition with nuts", 2),
    ("her profession", 4), ("her beverage", 6), ("her puppy", 9),
]


def score(embedder: StaticEmbedder) -> tuple[float, float]:
    """hit@1 and MRR of every question against the fifteen memories."""
    matrix = embedder.embed(MEMORIES)
    hits = reciprocal = 0.0
    for question, answer in QUESTIONS:
        ranked = [row for row, _ in cosine_top_k(matrix, embedder.embed([question])[0], 15)]
        rank = ranked.index(answer) + 1
        hits += rank == 1
        reciprocal += 1 / rank
    return hits / len(QUESTIONS), reciprocal / len(QUESTIONS)


def main() -> None:
    embedder = StaticEmbedder.__new__(StaticEmbedder)
    embedder._table = _StaticTable(sys.argv[1] if len(sys.argv) > 1 else None)
    hit, mrr = score(embedder)
    print(f"hit@1={hit:.2f} mrr={mrr:.3f}")


if __name__ == "__main__":
    main()
