"""Recall where the words differ: hit@1, hit@3 and MRR@10 on the paraphrase set, per embedder.

Not a test. Issue 14's target, reported beside LoCoMo: on the default install, hit@3 ≥ 0.85 on
:mod:`benchmarks.paraphrase_set` (126 memory/question pairs over six people, 66 distractors;
no question shares a content word with its memory). The set is checked first: each question's
:func:`mainsdk_memory._text.index_terms` (stopwords dropped, stemmed) must share no term with
its memory's nor with the person's name; a pair that does is listed and the run exits 1.

Each configuration opens a fresh store through the public API (``local:`` driver, a new key
store, in a temporary folder), and for each person, as ``bench-bot``, remembers all of that
person's memories (answers and distractors, about 32 a person) and asks each question
**once**, ``recall(question, top_k=10)``: hit@1 and hit@3 (the answering memory is first, or
among the first three of that same list) and MRR@10 (mean of 1/rank of the answering memory
in the top 10, 0 if absent). Once, because every recall counts its hits as uses, which the
ranking signals then reward: asking twice would let the first answer lift the second. Recall
is in the default ``auto`` mode, so hybrid when there is an embedder. Configurations:

- ``text``: ``embedder=None``, BM25 only (near 0 by construction: no shared word);
- ``default``: no ``embedder`` option, the default
  :class:`~mainsdk_memory.embeddings.StaticEmbedder` (no model runs), recall as the SDK
  defaults it (signals on): what ``pip install mainsdk-memory`` gives;
- ``default-relevance``: the same with ``recall(..., ranking="relevance")`` (signals off);
- ``minilm``: :class:`~mainsdk_memory.embeddings.MiniLMEmbedder`, when the ``embeddings``
  extra (torch) is installed; otherwise listed as not run, with the reason::

    .venv/bin/python -m benchmarks.paraphrase                    # ~10 s without MiniLM
    .venv/bin/python -m benchmarks.paraphrase --json out.json --misses
    .venv/bin/python -m benchmarks.paraphrase --no-minilm

The set is for reporting only: never tune anything on it (see its docstring).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.paraphrase_set import DISTRACTORS, PAIRS, PEOPLE
from mainsdk_memory import Memory, tenant
from mainsdk_memory._text import index_terms
from mainsdk_memory.keys import KeyStore

TENANT = "bench"
AGENT = "bench-bot"
TOP = 10
#: Issue 14's target for the default install.
TARGET_HIT_AT_3 = 0.85


def shared_words() -> list[str]:
    """Every pair whose question shares an index term with its memory or its person's name."""
    offending = []
    for person in PEOPLE:
        name = set(index_terms(person))
        for memory, question in PAIRS[person]:
            asked = set(index_terms(question))
            common = asked & (set(index_terms(memory)) | name)
            if common:
                offending.append(
                    f"{person}: {question!r} / {memory!r} share {', '.join(sorted(common))}"
                )
    return offending


@dataclass
class Result:
    """One configuration's scores on the set."""

    configuration: str
    embedder: str
    ranking: str
    people: int
    pairs: int
    distractors: int
    hit_at_1: float
    hit_at_3: float
    mrr_at_10: float
    seconds: float
    misses: list[dict[str, Any]] = field(default_factory=list)
    """Questions whose memory is not in the top 3, with what came back instead."""


def run(configuration: str, ranking: str | None = None, **options: Any) -> Result:
    """Remember the set in a fresh store opened with ``options`` and ask every question once
    (``ranking`` passed to ``recall`` when given)."""
    asked: dict[str, Any] = {} if ranking is None else {"ranking": ranking}
    started = time.perf_counter()
    hits1 = hits3 = 0
    reciprocal = 0.0
    misses: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="paraphrase-") as folder:
        tmp = Path(folder)
        KeyStore.create(tmp / "keys")
        memory = Memory.open(f"local:{tmp / 'store'}", keys=tmp / "keys", app="bench", **options)
        try:
            embedder = memory.embedder
            name = "none (BM25 only)" if embedder is None else embedder.name
            with tenant.use(TENANT):
                for person in PEOPLE:
                    handle = memory.acting_for(person, agent=AGENT)
                    # Stored as they are: this measures recall by meaning, not formation.
                    answers = [
                        handle.remember(text, formation=False).id for text, _ in PAIRS[person]
                    ]
                    for text in DISTRACTORS[person]:
                        handle.remember(text, formation=False)
                    for (text, question), answer in zip(PAIRS[person], answers, strict=True):
                        found = [hit.record for hit in handle.recall(question, top_k=TOP, **asked)]
                        top3 = found[:3]
                        top10 = [record.id for record in found]
                        rank = top10.index(answer) + 1 if answer in top10 else None
                        hits1 += rank == 1
                        reciprocal += 0.0 if rank is None else 1.0 / rank
                        if rank is not None and rank <= 3:
                            hits3 += 1
                        else:
                            misses.append(
                                {
                                    "person": person,
                                    "question": question,
                                    "memory": text,
                                    "rank": rank,
                                    "top3": [record.text for record in top3],
                                }
                            )
        finally:
            memory.close()
    pairs = sum(len(PAIRS[person]) for person in PEOPLE)
    return Result(
        configuration=configuration,
        embedder=name,
        ranking=ranking or "signals",
        people=len(PEOPLE),
        pairs=pairs,
        distractors=sum(len(DISTRACTORS[person]) for person in PEOPLE),
        hit_at_1=hits1 / pairs,
        hit_at_3=hits3 / pairs,
        mrr_at_10=reciprocal / pairs,
        seconds=time.perf_counter() - started,
        misses=misses,
    )


def machine() -> dict[str, Any]:
    """The machine the run was on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def table(results: list[Result]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| configuration | embedder | ranking | pairs | hit@1 | hit@3 | MRR@10 | seconds |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.configuration} | {r.embedder} | {r.ranking} | {r.pairs} | {r.hit_at_1:.3f} | "
        f"{r.hit_at_3:.3f} | {r.mrr_at_10:.3f} | {r.seconds:.1f} |"
        for r in results
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--no-minilm", action="store_true",
                        help="leave MiniLMEmbedder out even when the embeddings extra is there")
    parser.add_argument("--misses", action="store_true", help="list the hit@3 misses")
    args = parser.parse_args(argv)

    offending = shared_words()
    if offending:
        print("Pairs whose question shares a content word:", file=sys.stderr)
        for line in offending:
            print(f"  {line}", file=sys.stderr)
        return 1

    configurations: list[tuple[str, dict[str, Any]]] = [
        ("text", {"embedder": None}),
        ("default", {}),
        ("default-relevance", {"ranking": "relevance"}),
    ]
    not_run: dict[str, str] = {}
    if args.no_minilm:
        not_run["minilm"] = "left out (--no-minilm)"
    else:
        from benchmarks.stores import minilm, minilm_unavailable

        reason = minilm_unavailable()
        if reason is None:
            configurations.append(("minilm", {"embedder": minilm()}))
        else:
            not_run["minilm"] = reason

    from mainsdk_memory import _rerank

    results = [run(name, **options) for name, options in configurations]
    first = results[0]
    described = machine()
    described["load_average"] = [round(v, 2) for v in os.getloadavg()]
    static = next(r for r in results if r.configuration == "default").embedder
    model = _rerank.model_for(static)
    described["reranker_fitted"] = model is not None
    described["reranker"] = None if model is None else repr(model)
    print(
        f"Paraphrase set: {first.people} people, {first.pairs} pairs, "
        f"{first.distractors} distractors (no question shares a content word with its memory)"
    )
    print()
    print(table(results))
    for name, reason in not_run.items():
        print(f"\n{name}: not run ({reason})")
    default = next(r for r in results if r.configuration == "default")
    met = "met" if default.hit_at_3 >= TARGET_HIT_AT_3 else "missed"
    print(f"\nTarget (default install): hit@3 >= {TARGET_HIT_AT_3}: {default.hit_at_3:.3f}, {met}")
    if described["reranker_fitted"]:
        print(f"Second pass: {described['reranker']} (_rerank.WEIGHTS[{static!r}])")
    else:
        print(f"Second pass unfitted: _rerank.WEIGHTS has no model for {static}, "
              "so the fused ranking stands.")
    print()
    print(
        f"Machine: {described['platform']}, {described['processor']}, "
        f"{described['cpu_count']} CPUs, Python {described['python']}, "
        f"load average {described['load_average']}"
    )
    if args.misses:
        for result in results:
            print(f"\n{result.configuration}: {len(result.misses)} misses at 3")
            for miss in result.misses:
                print(
                    f"  {miss['person']}: {miss['question']!r} -> {miss['memory']!r} "
                    f"(rank {miss['rank']}); top: {miss['top3'][:1]}"
                )
    if args.json:
        payload = {"machine": described, "results": [asdict(result) for result in results],
                   "not_run": not_run}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
