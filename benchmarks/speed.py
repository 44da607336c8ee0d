"""Speed and scale: remember throughput, recall percentiles, forget and erase, what sealing costs.

Every time here is wall-clock ``time.perf_counter`` around one public call, in this process.
Comparisons are ratios of two stores measured in the same run, calls interleaved one for one
(sealed, unsealed, sealed, ...), so both see the same disk, caches and background noise.

Scale points (10,000 and 100,000 memories per person, 1,000 persons) are bulk-loaded: the
rows are sealed by the SDK's own code (``mainsdk_memory._sealing.seal``: the same payload, AES-GCM
envelope, blind terms and pseudonym as ``remember``) and written with the driver's own row
format without a durable write per row (:func:`benchmarks.stores.bulk_load`). ``remember``
itself is timed at 1,000 memories, and for 1,000 persons on top of the bulk-loaded tenant.

Hybrid recall (BM25 and vectors, fused) is measured at the same sizes on a third store per
size, opened with an embedder. The embedder is a model-free stand-in of MiniLM's width,
``HashingEmbedder(dimensions=384)`` (:func:`benchmarks.stores.stand_in_embedder`): embedding
100,000 texts with MiniLM would take far longer than the run, and everything else a hybrid
recall does (reading, opening and ranking 384-float vectors, fusing) costs the same for any
embedder of that width. At 1,000 memories the vectors are written by ``remember`` itself; at
the scale points they are sealed by the SDK's own code (:func:`seal_vectors`: the core's
``VectorIndex.embed``/``seal``, the vector's associated data and the person's key, as
``_sealing.seal_vector``) and bulk-loaded with the rows. What MiniLM adds per query is
measured on its own (:func:`embedding_latency`), next to the stand-in's own time, so a reader
can swap one for the other. Cold (the first recall on a freshly opened store: the driver's
first read and opening every vector) and warm recall are reported separately, since the core
keeps opened vectors per person.

With ``SpeedPlan(hybrid_embedder="default")`` (``python -m benchmarks --size default-install``)
the store with vectors is instead the default install's, ``<driver>-default`` (``Memory.open``
with no embedder option: :class:`~mainsdk_memory.embeddings.StaticEmbedder`, recall with the
SDK's defaults, signals on), and the scale points bulk-load ``StaticEmbedder`` vectors sealed
the same way; the text-only store it is compared with is ``<driver>`` (``embedder=None``).
Every recall passes its configuration's ``ranking`` (:class:`benchmarks.stores.StoreConfig`).
"""

from __future__ import annotations

import contextlib
import cProfile
import json
import math
import pstats
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.stores import (
    TENANT,
    SteppingClock,
    StoreConfig,
    Workspace,
    bulk_load,
    opened,
)
from mainsdk_memory import Kind, Memory, Source, Trust, tenant
from mainsdk_memory._caller import Caller
from mainsdk_memory._memory import services_of
from mainsdk_memory._sealing import Contents, first_places, seal, vector_ad
from mainsdk_memory._text import index_terms
from mainsdk_memory._vectors import VectorIndex
from mainsdk_memory.drivers import StoredRow, bm25_rank
from mainsdk_memory.embeddings import Embedder

__all__ = [
    "SpeedPlan",
    "blind_vs_plain_bm25",
    "embedding_latency",
    "latency",
    "run_driver",
    "seal_rows",
    "seal_vectors",
]

AGENT = "speed"
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SpeedPlan:
    """How much to measure: sizes and sample counts."""

    write_n: int = 1000
    """Memories written through ``remember`` (sealed and unsealed each) for throughput."""
    scale: tuple[int, ...] = (10_000, 100_000)
    """Bulk-loaded memories per person for the recall growth curve (beyond ``write_n``)."""
    unsealed_scale: tuple[int, ...] = (10_000,)
    """Scale points also measured unsealed, for the recall ratio."""
    queries: int = 100
    """Timed recalls at ``write_n`` memories (each store)."""
    scale_queries: tuple[int, ...] = (60, 20)
    """Timed recalls at each scale point (each store)."""
    persons: int = 1000
    per_person: int = 20
    person_queries: int = 100
    person_writes: int = 50
    forgets: int = 30
    erases: int = 5
    rss_at: int = 100_000
    """Peak RSS of the local driver is measured at this size (0: not measured)."""
    profile_queries: int = 10
    hybrid: bool = True
    """Also measure hybrid recall (stand-in embedder) at every size."""
    hybrid_embedder: str = "stand-in"
    """The store with vectors: ``"stand-in"`` (``<driver>-hybrid-hashing``) or
    ``"default"`` (``<driver>-default``, the default install's ``StaticEmbedder``)."""
    embedding_queries: int = 200
    """Queries embedded one by one to time MiniLM (and the stand-in) per query."""


def latency(samples: Sequence[float]) -> dict[str, float | int]:
    """Percentiles (nearest rank) and mean of ``samples`` seconds, in milliseconds."""
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)

    def pick(p: float) -> float:
        index = max(0, math.ceil(p / 100.0 * len(ordered)) - 1)
        return round(ordered[index] * 1000.0, 3)

    return {
        "n": len(ordered),
        "p50_ms": pick(50),
        "p95_ms": pick(95),
        "p99_ms": pick(99),
        "mean_ms": round(statistics.fmean(ordered) * 1000.0, 3),
        "max_ms": round(ordered[-1] * 1000.0, 3),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if not a or not b else round(a / b, 3)


def seal_rows(
    memory: Memory, person: str, texts: Sequence[str], *, start: datetime | None = None
) -> list[StoredRow]:
    """Rows for ``person`` sealed by the SDK's own ``_sealing.seal``, one per text.

    Payload, envelope, associated data, blind terms and pseudonym are exactly ``remember``'s;
    ``recorded_at`` steps by one millisecond per row.
    """
    base = start or datetime(2023, 1, 1, tzinfo=UTC)
    caller = Caller(services_of(memory), TENANT, person, AGENT, None)
    rows = []
    created = [base + timedelta(milliseconds=i) for i in range(len(texts))]
    places = first_places(caller, person, created, ("personal",))  # one transaction
    for text, when, place in zip(texts, created, places, strict=True):
        contents = Contents(
            text=text, kind=Kind.FACT, labels=("personal",), source=Source.agent(AGENT),
            trust=Trust.INFERRED, agent=AGENT, author=AGENT, confirmed_by=None, data=None,
            data_type=None, session=None, session_token=None, session_only=False,
            valid_from=when, recorded_at=when,
        )
        rows.append(seal(caller, contents, place))
    return rows


def seal_vectors(
    memory: Memory, person: str, rows: Sequence[StoredRow], texts: Sequence[str],
    embedder: Embedder,
) -> list[bytes]:
    """The sealed embedding of each of ``person``'s ``rows`` (of ``texts``), as ``remember``
    stores it.

    The core's own steps (``_sealing.seal_vector``): ``VectorIndex.embed`` (the
    embedder's unit vector, checked), ``VectorIndex.seal`` (packed with the embedder's name),
    sealed under the person's key with the version's vector associated data
    (``_sealing.vector_ad``). Each distinct text is embedded once (the corpus is cycled).
    """
    index = VectorIndex(embedder)
    embedded: dict[str, Any] = {}
    sealed: list[bytes] = []
    caller = Caller(services_of(memory), TENANT, person, AGENT, None)
    keys = caller.services.subject_keys(TENANT, person, create=True)
    assert keys is not None  # create=True always returns keys
    anchors, scope = caller.services.keys.anchors, caller.services.anchor_scope(TENANT)
    for row, text in zip(rows, texts, strict=True):
        vector = embedded.get(text)
        if vector is None:
            vector = embedded[text] = index.embed(text)
        ad = vector_ad(caller, person, row.memory_id, row.version)
        anchor = anchors.memory(scope, row.memory_id)
        assert anchor is not None  # seal_rows anchored it
        seal_one = partial(keys.seal_memory, anchor.salt, associated_data=ad)
        sealed.append(index.seal(vector, seal_one))
    return sealed


def embedding_latency(
    embedder: Embedder, queries: Sequence[str], warmup: int = 5
) -> dict[str, float | int]:
    """Time embedding one query at a time, as recall does (``VectorIndex.embed``)."""
    index = VectorIndex(embedder)
    for query in queries[:warmup]:
        index.embed(query)
    return latency([_timed(partial(index.embed, query)) for query in queries])


def _cycle(items: Sequence[str], n: int) -> list[str]:
    return [items[i % len(items)] for i in range(n)]


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


Recall = Callable[[str], object]


def _recall_of(handle: Any, mode: str | None = None, config: StoreConfig | None = None) -> Recall:
    """``handle.recall(query, top_k=10)`` (with ``mode`` when given, and ``config``'s
    ``ranking``) as a one-argument call."""
    options: dict[str, Any] = {} if config is None else dict(config.recall_options)
    if mode is not None:
        options["mode"] = mode
    return partial(handle.recall, top_k=10, **options)


def _recall_interleaved(
    calls: Sequence[Recall], queries: Sequence[str], warmup: int = 3
) -> list[list[float]]:
    """Time each call on every query, interleaved query by query (order flips each query)."""
    for query in queries[:warmup]:
        for call in calls:
            call(query)
    times: list[list[float]] = [[] for _ in calls]
    for i, query in enumerate(queries):
        order = range(len(calls)) if i % 2 == 0 else reversed(range(len(calls)))
        for j in order:
            times[j].append(_timed(partial(calls[j], query)))
    return times


def _recall_pairs(
    handles: Sequence[Any], queries: Sequence[str], warmup: int = 3
) -> list[list[float]]:
    """Time ``recall(q, top_k=10)`` on each handle, interleaved query by query."""
    return _recall_interleaved([_recall_of(h) for h in handles], queries, warmup)


def _embedder_option(config: StoreConfig) -> str:
    """What :mod:`benchmarks.rss` opens a store of ``config`` with (``--embedder``)."""
    if config.kind == "default":
        return "default"
    return "hashing-384" if config.hybrid else "none"


@dataclass
class Corpus:
    """Texts to store and questions to ask (LoCoMo turns and questions, cycled)."""

    texts: list[str]
    queries: list[str]


# --- hot spots ------------------------------------------------------------------------------

#: (file suffix, function name) → what it is, for the profile breakdown.
HOT_SPOTS: dict[tuple[str, str], str] = {
    ("_walls.py", "screen"): "injection check on recalled memories (screen)",
    ("_walls.py", "check_injection"): "injection check on the written text",
    ("_sealing.py", "open_contents"): "opening sealed rows (open_contents)",
    ("_sealing.py", "seal"): "sealing and blinding (seal)",
    ("_recall.py", "query_groups"): "normalising and blinding the query",
    ("_caller.py", "filter"): "building the filter (grant and kill-switch reads)",
    ("_walls.py", "check_write"): "write checks (kill switch, grant, limits)",
    ("_caller.py", "guardian_policy"): "child-policy read",
    ("_control.py", "get"): "control records read (ControlStore.get), in total",
    ("_protocol.py", "bm25_rank"): "bm25_rank (reference BM25 in Python)",
    ("_driver.py", "search"): "driver.search, in total",
    ("_driver.py", "put"): "driver.put, in total",
    ("_driver.py", "_candidates"): "local: filtering every row (_candidates)",
    ("_driver.py", "_rank"): "the driver's BM25 arithmetic in Python (_rank)",
    ("~", "<built-in method posix.fsync>"): "fsync",
    ("_vectors.py", "rank"): "vector ranking in total (VectorIndex.rank)",
    ("_driver.py", "vectors"): "driver.vectors (sealed vectors read)",
    ("_sealing.py", "open_vector"): "opening sealed vectors (open_vector)",
    ("embeddings.py", "cosine_top_k"): "cosine_top_k (numpy)",
    ("_vectors.py", "embed"): "embedding the query (VectorIndex.embed)",
    ("_fusion.py", "fuse"): "fusion",
    ("_recall.py", "_second_pass"): "second pass (re-ranker)",
    ("_signals.py", "rank"): "ranking signals (_signals.rank)",
    ("_signals.py", "count_uses"): "counting the hits as uses (_signals.count_uses, a write)",
}


def _breakdown(profile: cProfile.Profile, total_label: str) -> dict[str, Any]:
    stats = pstats.Stats(profile)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    found: dict[str, float] = {}
    total = 0.0
    for (filename, _line, function), (_cc, _nc, _tt, cumulative, _callers) in raw.items():
        if function == total_label:
            total = max(total, cumulative)
        for (suffix, name), label in HOT_SPOTS.items():
            if function == name and (filename == suffix or filename.endswith(suffix)):
                found[label] = found.get(label, 0.0) + cumulative
    if not total:
        return {}
    return {
        "total_s": round(total, 3),
        "share": {label: round(seconds / total, 3) for label, seconds in sorted(
            found.items(), key=lambda item: -item[1]) if seconds / total >= 0.01},
    }


def _profile(call: Callable[[], object], label: str) -> dict[str, Any]:
    profile = cProfile.Profile()
    profile.enable()
    try:
        call()
    finally:
        profile.disable()
    return _breakdown(profile, label)


# --- one driver -------------------------------------------------------------------------------


@dataclass
class DriverRun:
    """Inputs shared by every driver: the workspace, sealed rows and the corpus."""

    workspace: Workspace
    corpus: Corpus
    plan: SpeedPlan
    scale_rows: list[StoredRow]
    plain_scale_rows: list[StoredRow]
    person_rows: list[StoredRow]
    scale_person: str
    progress: Callable[[str], None]
    scale_texts: list[str] | None = None
    """The text of each of ``scale_rows`` (for the self-check of bulk-loaded vectors)."""
    scale_vectors: list[bytes] | None = None
    """Sealed stand-in embeddings of ``scale_rows``; ``None``: hybrid is not measured."""


def _open(
    config: StoreConfig, workspace: Workspace, url: str
) -> AbstractContextManager[Memory]:
    return opened(config, url, workspace.keys, SteppingClock())


def _small(
    run: DriverRun, sealed: StoreConfig, plain: StoreConfig, hybrid: StoreConfig | None = None
) -> dict[str, Any]:
    """``write_n`` remembers sealed and unsealed (interleaved), then recall, forget, erase.

    With ``hybrid``, a third store opened with the stand-in embedder is written and recalled
    in the same interleaving (its ``remember`` embeds and seals a vector too).
    """
    plan, corpus, ws = run.plan, run.corpus, run.workspace
    configs = [sealed, plain] + ([hybrid] if hybrid is not None else [])
    urls = [ws.new_url(config.driver) for config in configs]
    person = "writer"
    out: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        memories = [stack.enter_context(_open(config, ws, url))
                    for config, url in zip(configs, urls, strict=True)]
        stack.enter_context(tenant.use(TENANT))
        m_sealed, m_plain = memories[0], memories[1]
        handles = [m.acting_for(person, agent=AGENT) for m in memories]
        texts = _cycle(corpus.texts, plan.write_n)
        write_times: list[list[float]] = [[] for _ in handles]
        ids: list[list[str]] = [[] for _ in handles]
        for i, text in enumerate(texts):
            order = range(len(handles)) if i % 2 == 0 else reversed(range(len(handles)))
            for j in order:
                started = time.perf_counter()
                record = handles[j].remember(text, **configs[j].remember_options)
                write_times[j].append(time.perf_counter() - started)
                ids[j].append(record.id)
        run.progress(f"  {sealed.driver}: {plan.write_n} remembers x{len(handles)} done")
        for url in urls:
            ws.settle(url)
        queries = _cycle(corpus.queries, plan.queries)
        hybrid_cold: dict[str, Any] = {}
        if hybrid is not None:
            # The writing Memory's driver has seen every row: cold is a fresh Memory's.
            with _open(hybrid, ws, urls[2]) as fresh:
                hybrid_cold = _cold_hybrid(fresh, person, queries[0], texts,
                                           hybrid.recall_options)
        calls = [_recall_of(h, config=c) for h, c in zip(handles, configs, strict=True)]
        if hybrid is not None:
            calls.append(_recall_of(handles[2], "text", hybrid))
        recall_times = _recall_interleaved(calls, queries)
        out["profile_recall"] = _profile(
            lambda: [calls[0](q) for q in queries[: plan.profile_queries]], "recall",
        )
        out["profile_remember"] = _profile(
            lambda: [handles[0].remember(t, **configs[0].remember_options)
                     for t in texts[: plan.profile_queries]],
            "remember",
        )
        if hybrid is not None:
            out["profile_recall_hybrid"] = _profile(
                lambda: [calls[2](q) for q in queries[: plan.profile_queries]], "recall",
            )
        # forget (the person's own, hard delete and receipt), and the next recall after it
        people = [m.person(person) for m in (m_sealed, m_plain)]
        forget_times: list[list[float]] = [[], []]
        after_times: list[list[float]] = [[], []]
        for i in range(min(plan.forgets, plan.write_n)):
            for j in (0, 1):
                forget_times[j].append(_timed(partial(people[j].forget, ids[j][i])))
                after_times[j].append(_timed(partial(calls[j], queries[i % len(queries)])))
        run.progress(f"  {sealed.driver}: recall and forget done")
    for url in urls:
        ws.release(url)
    sealed_w, plain_w = latency(write_times[0]), latency(write_times[1])
    sealed_r, plain_r = latency(recall_times[0]), latency(recall_times[1])
    out["write"] = {
        "n": plan.write_n,
        "sealed": {**sealed_w, "per_s": round(len(texts) / sum(write_times[0]), 1)},
        "unsealed": {**plain_w, "per_s": round(len(texts) / sum(write_times[1]), 1)},
        "ratio_total_time": _ratio(sum(write_times[0]), sum(write_times[1])),
        "ratio_p50": _ratio(float(sealed_w["p50_ms"]), float(plain_w["p50_ms"])),
    }
    out["recall"] = {
        "memories": plan.write_n,
        "sealed": sealed_r,
        "unsealed": plain_r,
        "ratio_p50": _ratio(float(sealed_r["p50_ms"]), float(plain_r["p50_ms"])),
        "ratio_mean": _ratio(float(sealed_r["mean_ms"]), float(plain_r["mean_ms"])),
    }
    out["forget"] = {
        "memories": plan.write_n,
        "sealed": latency(forget_times[0]),
        "unsealed": latency(forget_times[1]),
        "recall_after_forget_sealed": latency(after_times[0]),
        "recall_after_forget_unsealed": latency(after_times[1]),
    }
    if hybrid is not None:
        hybrid_w = latency(write_times[2])
        out["hybrid_write"] = {
            "n": plan.write_n,
            "with_vectors": {**hybrid_w, "per_s": round(len(texts) / sum(write_times[2]), 1)},
            "ratio_total_time_vs_sealed": _ratio(sum(write_times[2]), sum(write_times[0])),
            "ratio_p50_vs_sealed": _ratio(float(hybrid_w["p50_ms"]), float(sealed_w["p50_ms"])),
        }
        out["hybrid_recall"] = _hybrid_point(
            plan.write_n, "remember", recall_times[2], recall_times[3], recall_times[0],
            hybrid_cold,
        )
    return out


def _forget_opened_vectors(memory: Memory) -> None:
    """Drop the vectors ``memory`` has opened (as a fresh process would have none).

    The core keeps them in its services' ``vectors`` (``VectorIndex``, per person); a new
    index for the same embedder starts empty, and the driver's own caches stay warm.
    """
    services = services_of(memory)
    if services.vectors is not None:
        services.vectors = VectorIndex(services.vectors.embedder)


def _cold_hybrid(
    memory: Memory, person: str, query: str, texts: Sequence[str],
    options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Cold hybrid recall on ``memory``, which must not have recalled ``person`` yet, and a
    check of the stored vectors.

    ``first_recall_ms``: the first recall (the driver's first read of the person, when it
    caches, and every vector opened); ``vectors_cold_ms``: the first recall after dropping
    only the opened vectors (the driver warm). The check asks ``mode="vector"`` for a stored
    text: its own vector must come first with cosine 1, so the stored vectors open and are
    the texts' own. ``options``: the configuration's recall options (its ``ranking``).
    """
    options = options or {}
    with tenant.use(TENANT):
        handle = memory.acting_for(person, agent=AGENT)
        first = _timed(partial(handle.recall, query, top_k=10, **options))
        _forget_opened_vectors(memory)
        vectors_cold = _timed(partial(handle.recall, query, top_k=10, **options))
        probe = texts[len(texts) // 2]
        hits = handle.recall(probe, top_k=1, mode="vector", ranking="relevance")
        checked = bool(hits) and hits[0].record.text == probe and hits[0].score > 0.999
    return {
        "first_recall_ms": round(first * 1000.0, 1),
        "vectors_cold_ms": round(vectors_cold * 1000.0, 1),
        "vector_self_check": checked,
    }


def _hybrid_point(
    n: int, how: str, hybrid: Sequence[float], text_same_store: Sequence[float],
    bm25: Sequence[float], cold: dict[str, Any],
) -> dict[str, Any]:
    warm = latency(hybrid)
    text = latency(text_same_store)
    bm25_l = latency(bm25)
    return {
        "memories": n,
        "how": how,
        "warm": warm,
        **cold,
        "text_same_store": text,
        "ratio_p50_vs_bm25": _ratio(float(warm["p50_ms"]), float(bm25_l["p50_ms"])),
        "ratio_p50_text_same_store_vs_bm25": _ratio(
            float(text["p50_ms"]), float(bm25_l["p50_ms"])),
    }


def _scale_point(
    run: DriverRun, sealed: StoreConfig, plain: StoreConfig, n: int, queries_n: int,
    hybrid: StoreConfig | None = None,
) -> dict[str, Any]:
    """Recall latency with ``n`` bulk-loaded memories for one person (and unsealed too).

    With ``hybrid`` (and sealed vectors in ``run``), a third store holds the same rows with
    their sealed stand-in embeddings; its hybrid recall, and BM25 (``mode="text"``) on it,
    are timed in the same interleaving as the other stores.
    """
    ws, plan = run.workspace, run.plan
    with_plain = n in plan.unsealed_scale
    configs: list[tuple[StoreConfig, list[StoredRow], list[bytes] | None]] = [
        (sealed, run.scale_rows[:n], None)
    ]
    if with_plain:
        configs.append((plain, run.plain_scale_rows[:n], None))
    vectored = None if run.scale_vectors is None or run.scale_texts is None else hybrid
    with_hybrid = vectored is not None
    if vectored is not None and run.scale_vectors is not None:
        configs.append((vectored, run.scale_rows[:n], run.scale_vectors[:n]))
    urls = [ws.new_url(config.driver) for config, _, _ in configs]
    memories = []
    load_seconds = []
    result: dict[str, Any] = {"memories": n}
    try:
        for (config, rows, vectors), url in zip(configs, urls, strict=True):
            memory = config.open(url, ws.keys, SteppingClock())
            memories.append(memory)
            load_seconds.append(round(_timed(partial(bulk_load, memory, rows, vectors)), 2))
            ws.settle(url)
        with tenant.use(TENANT):
            handles = [m.acting_for(run.scale_person, agent=AGENT) for m in memories]
            calls = [_recall_of(h, config=c) for h, (c, _, _) in zip(handles, configs, strict=True)]
            first = _timed(lambda: calls[0](run.corpus.queries[0]))
            queries = _cycle(run.corpus.queries[1:], queries_n)
            cold: dict[str, Any] = {}
            if vectored is not None and run.scale_texts is not None:
                # Bulk loading bypassed the driver's caches: this Memory is still cold.
                cold = _cold_hybrid(memories[-1], run.scale_person, run.corpus.queries[0],
                                    run.scale_texts[:n], vectored.recall_options)
                calls.append(_recall_of(handles[-1], "text", vectored))
            times = _recall_interleaved(calls, queries, warmup=2)
            if n == plan.scale[0]:
                result["profile_recall"] = _profile(
                    lambda: [calls[0](q) for q in queries[: plan.profile_queries]], "recall",
                )
                if with_hybrid:
                    result["profile_recall_hybrid"] = _profile(
                        lambda: [calls[-2](q) for q in queries[: plan.profile_queries]],
                        "recall",
                    )
        result["bulk_load_s"] = load_seconds[: 2 if with_plain else 1]
        result["first_recall_ms"] = round(first * 1000.0, 1)
        result["sealed"] = latency(times[0])
        if with_plain:
            result["unsealed"] = latency(times[1])
            result["ratio_p50"] = _ratio(
                float(result["sealed"]["p50_ms"]), float(result["unsealed"]["p50_ms"])
            )
            result["ratio_mean"] = _ratio(
                float(result["sealed"]["mean_ms"]), float(result["unsealed"]["mean_ms"])
            )
        if with_hybrid:
            result["hybrid"] = {
                **_hybrid_point(n, "bulk", times[-2], times[-1], times[0], cold),
                "bulk_load_s": load_seconds[-1],
            }
        if sealed.driver == "local" and n == plan.rss_at:
            result["peak_rss"] = _rss(urls[0], ws.keys, run.scale_person, queries[:5])
            if vectored is not None:
                result["hybrid"]["peak_rss"] = _rss(
                    urls[-1], ws.keys, run.scale_person, queries[:5],
                    embedder=_embedder_option(vectored), options=vectored.recall_options,
                )
    finally:
        for memory in memories:
            memory.close()
        for url in urls:
            ws.release(url)
    return result


def _persons(run: DriverRun, sealed: StoreConfig) -> dict[str, Any]:
    """A tenant of ``persons`` people: recall and remember for random ones, then erase some."""
    ws, plan, corpus = run.workspace, run.plan, run.corpus
    url = ws.new_url(sealed.driver)
    rng = random.Random(8)
    result: dict[str, Any] = {"persons": plan.persons, "memories_per_person": plan.per_person}
    try:
        with _open(sealed, ws, url) as memory:
            result["bulk_load_s"] = round(_timed(lambda: bulk_load(memory, run.person_rows)), 2)
            ws.settle(url)
            with tenant.use(TENANT):
                names = [f"person-{i:05d}" for i in range(plan.persons)]
                queries = _cycle(corpus.queries, plan.person_queries)
                recall_times = []
                for query in queries:
                    handle = memory.acting_for(rng.choice(names), agent=AGENT)
                    recall_times.append(_timed(partial(_recall_of(handle, config=sealed), query)))
                write_times = []
                for text in _cycle(corpus.texts[7:], plan.person_writes):
                    handle = memory.acting_for(rng.choice(names), agent=AGENT)
                    write_times.append(_timed(partial(handle.remember, text)))
                erase_times = []
                for name in rng.sample(names, min(plan.erases, len(names))):
                    erase_times.append(_timed(partial(memory.privacy.erase, name)))
        result["recall"] = latency(recall_times)
        result["remember"] = latency(write_times)
        result["erase"] = {"memories_per_person": plan.per_person, **latency(erase_times)}
    finally:
        ws.release(url)
    return result


def run_driver(
    run: DriverRun, sealed: StoreConfig, plain: StoreConfig,
    hybrid: StoreConfig | None = None, hybrid_reason: str | None = None,
) -> dict[str, Any]:
    """Every speed measurement on one driver (hybrid too when ``hybrid`` is given)."""
    result: dict[str, Any] = {"driver": sealed.driver}
    started = time.perf_counter()
    result.update(_small(run, sealed, plain, hybrid))
    growth = [{
        "memories": run.plan.write_n, "how": "remember", **result["recall"]["sealed"],
    }]
    hybrid_points = [result.pop("hybrid_recall")] if hybrid is not None else []
    points = []
    for n, queries_n in zip(run.plan.scale, run.plan.scale_queries, strict=True):
        point = _scale_point(run, sealed, plain, n, queries_n, hybrid)
        run.progress(f"  {sealed.driver}: {n} memories: p50 {point['sealed'].get('p50_ms')} ms"
                     + (f", hybrid p50 {point['hybrid']['warm'].get('p50_ms')} ms"
                        if "hybrid" in point else ""))
        points.append(point)
        growth.append({"memories": n, "how": "bulk", **point["sealed"]})
        if "hybrid" in point:
            hybrid_points.append(point["hybrid"])
    result["scale"] = points
    result["growth"] = growth
    if hybrid is not None:
        result["hybrid"] = {"status": "ok", "config": hybrid.name, "points": hybrid_points}
    else:
        result["hybrid"] = {"status": "not run", "reason": hybrid_reason or "not requested"}
    result["persons"] = _persons(run, sealed)
    run.progress(f"  {sealed.driver}: persons done")
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


# --- blind terms against plain terms ---------------------------------------------------------


def blind_vs_plain_bm25(
    memory: Memory, person: str, sealed_rows: Sequence[StoredRow],
    plain_rows: Sequence[StoredRow], queries: Sequence[str],
) -> dict[str, Any]:
    """Time :func:`bm25_rank` alone on blind-term rows against the same rows with plain terms.

    The query is normalised once; the blind side also blinds it with the person's index key,
    as recall does. Same corpus, same order of calls (interleaved).
    """
    with tenant.use(TENANT):
        keys = services_of(memory).subject_keys(TENANT, person, create=False)
    assert keys is not None
    blind_times: list[float] = []
    plain_times: list[float] = []
    same = 0
    for i, query in enumerate(queries):
        terms = index_terms(query)

        def blind(t: list[str] = terms) -> list[tuple[StoredRow, float]]:
            return bm25_rank(sealed_rows, [[keys.blind(term)] for term in t], 10)

        def plain(t: list[str] = terms) -> list[tuple[StoredRow, float]]:
            return bm25_rank(plain_rows, [[term] for term in t], 10)

        for which in ((blind, plain) if i % 2 == 0 else (plain, blind)):
            started = time.perf_counter()
            got = which()
            (blind_times if which is blind else plain_times).append(
                time.perf_counter() - started)
            if which is blind:
                blind_scores = [s for _, s in got]
            else:
                plain_scores = [s for _, s in got]
        same += blind_scores == plain_scores
    blind_l, plain_l = latency(blind_times), latency(plain_times)
    return {
        "memories": len(sealed_rows),
        "blind": blind_l,
        "plain": plain_l,
        "ratio_p50": _ratio(float(blind_l["p50_ms"]), float(plain_l["p50_ms"])),
        "queries_with_identical_scores": same,
        "queries": len(queries),
    }


# --- peak RSS -------------------------------------------------------------------------------


def _rss(
    url: str, keys: Path, person: str, queries: Sequence[str], embedder: str = "none",
    options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Peak RSS of a fresh process that opens the local store and recalls (VmHWM).

    ``embedder`` is :mod:`benchmarks.rss`'s ``--embedder``; ``options`` holds the recall's
    ``ranking`` when the configuration fixes one.
    """
    command = [
        sys.executable, "-m", "benchmarks.rss", "--url", url, "--keys", str(keys),
        "--person", person, "--agent", AGENT, "--queries", json.dumps(list(queries)),
        "--embedder", embedder,
    ]
    if options and "ranking" in options:
        command += ["--ranking", options["ranking"]]
    done = subprocess.run(  # noqa: S603 - our own interpreter and module
        command, cwd=REPO, capture_output=True, text=True, check=True, timeout=1800
    )
    parsed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return parsed
