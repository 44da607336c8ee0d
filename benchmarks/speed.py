"""Speed and scale: remember throughput, recall percentiles, forget and erase, what sealing costs.

Every time here is wall-clock ``time.perf_counter`` around one public call, in this process.
Comparisons are ratios of two stores measured in the same run, calls interleaved one for one
(sealed, unsealed, sealed, ...), so both see the same disk, caches and background noise.

Scale points (10,000 and 100,000 memories per person, 1,000 persons) are bulk-loaded: the
rows are sealed by the SDK's own code (``ScopedMemory._seal_row``: the same payload, AES-GCM
envelope, blind terms and pseudonym as ``remember``) and written with the driver's own row
format without a durable write per row (:func:`benchmarks.stores.bulk_load`). ``remember``
itself is timed at 1,000 memories, and for 1,000 persons on top of the bulk-loaded tenant.
"""

from __future__ import annotations

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
from mainsdk_memory._text import index_terms
from mainsdk_memory._validate import new_memory_id
from mainsdk_memory.drivers import StoredRow, bm25_rank

__all__ = [
    "SpeedPlan",
    "blind_vs_plain_bm25",
    "latency",
    "run_driver",
    "seal_rows",
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
    """Rows for ``person`` sealed by the SDK's own ``_seal_row``, one per text.

    Payload, envelope, associated data, blind terms and pseudonym are exactly ``remember``'s;
    ``recorded_at`` steps by one millisecond per row.
    """
    base = start or datetime(2023, 1, 1, tzinfo=UTC)
    with tenant.use(TENANT):
        handle = memory.acting_for(person, agent=AGENT)
        rows = []
        for i, text in enumerate(texts):
            when = base + timedelta(milliseconds=i)
            rows.append(handle._seal_row(
                TENANT, subject=person, memory_id=new_memory_id(), version=1, text=text,
                kind=Kind.FACT, labels=("personal",), source=Source.agent(AGENT),
                trust=Trust.INFERRED, owner=AGENT, confirmed_by=None, data=None,
                data_type=None, session_only=False, session=None, pinned=False,
                created_at=when, recorded_at=when, valid_from=when,
            ))
    return rows


def _cycle(items: Sequence[str], n: int) -> list[str]:
    return [items[i % len(items)] for i in range(n)]


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _recall_pairs(
    handles: Sequence[Any], queries: Sequence[str], warmup: int = 3
) -> list[list[float]]:
    """Time ``recall(q, top_k=10)`` on each handle, interleaved query by query."""
    for query in queries[:warmup]:
        for handle in handles:
            handle.recall(query, top_k=10)
    times: list[list[float]] = [[] for _ in handles]
    for i, query in enumerate(queries):
        order = range(len(handles)) if i % 2 == 0 else reversed(range(len(handles)))
        for j in order:
            times[j].append(_timed(partial(handles[j].recall, query, top_k=10)))
    return times


@dataclass
class Corpus:
    """Texts to store and questions to ask (LoCoMo turns and questions, cycled)."""

    texts: list[str]
    queries: list[str]


# --- hot spots ------------------------------------------------------------------------------

#: (file suffix, function name) → what it is, for the profile breakdown.
HOT_SPOTS: dict[tuple[str, str], str] = {
    ("_scoped.py", "_screen"): "injection check on recalled memories (_screen)",
    ("_scoped.py", "_check_injection"): "injection check on the written text",
    ("_scoped.py", "_open_row"): "opening sealed rows (_open_row)",
    ("_scoped.py", "_seal_row"): "sealing and blinding (_seal_row)",
    ("_scoped.py", "_query_groups"): "normalising and blinding the query",
    ("_scoped.py", "_filter"): "building the filter (grant and kill-switch reads)",
    ("_scoped.py", "_check_write"): "write checks (kill switch, grant, limits)",
    ("_scoped.py", "_is_child"): "child-policy read",
    ("_control.py", "get"): "control records read (ControlStore.get), in total",
    ("_protocol.py", "bm25_rank"): "bm25_rank (reference BM25 in Python)",
    ("_driver.py", "search"): "driver.search, in total",
    ("_driver.py", "put"): "driver.put, in total",
    ("_driver.py", "_candidates"): "local: filtering every row (_candidates)",
    ("_driver.py", "_rank"): "db: BM25 arithmetic in Python (_rank)",
    ("~", "<built-in method posix.fsync>"): "fsync",
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


def _open(
    config: StoreConfig, workspace: Workspace, url: str
) -> AbstractContextManager[Memory]:
    return opened(config, url, workspace.keys, SteppingClock())


def _small(run: DriverRun, sealed: StoreConfig, plain: StoreConfig) -> dict[str, Any]:
    """``write_n`` remembers sealed and unsealed (interleaved), then recall, forget, erase."""
    plan, corpus, ws = run.plan, run.corpus, run.workspace
    urls = [ws.new_url(sealed.driver), ws.new_url(plain.driver)]
    person = "writer"
    out: dict[str, Any] = {}
    with (
        _open(sealed, ws, urls[0]) as m_sealed,
        _open(plain, ws, urls[1]) as m_plain,
        tenant.use(TENANT),
    ):
        handles = [m.acting_for(person, agent=AGENT) for m in (m_sealed, m_plain)]
        texts = _cycle(corpus.texts, plan.write_n)
        write_times: list[list[float]] = [[], []]
        ids: list[list[str]] = [[], []]
        for i, text in enumerate(texts):
            for j in ((0, 1) if i % 2 == 0 else (1, 0)):
                started = time.perf_counter()
                record = handles[j].remember(text)
                write_times[j].append(time.perf_counter() - started)
                ids[j].append(record.id)
        run.progress(f"  {sealed.driver}: {plan.write_n} remembers x2 done")
        for url in urls:
            ws.settle(url)
        queries = _cycle(corpus.queries, plan.queries)
        recall_times = _recall_pairs(handles, queries)
        out["profile_recall"] = _profile(
            lambda: [handles[0].recall(q, top_k=10) for q in queries[: plan.profile_queries]],
            "recall",
        )
        out["profile_remember"] = _profile(
            lambda: [handles[0].remember(t) for t in texts[: plan.profile_queries]],
            "remember",
        )
        # forget (the person's own, hard delete and receipt), and the next recall after it
        people = [m.person(person) for m in (m_sealed, m_plain)]
        forget_times: list[list[float]] = [[], []]
        after_times: list[list[float]] = [[], []]
        for i in range(min(plan.forgets, plan.write_n)):
            for j in (0, 1):
                forget_times[j].append(_timed(partial(people[j].forget, ids[j][i])))
                after_times[j].append(_timed(
                    partial(handles[j].recall, queries[i % len(queries)], top_k=10)
                ))
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
    return out


def _scale_point(
    run: DriverRun, sealed: StoreConfig, plain: StoreConfig, n: int, queries_n: int
) -> dict[str, Any]:
    """Recall latency with ``n`` bulk-loaded memories for one person (and unsealed too)."""
    ws, plan = run.workspace, run.plan
    with_plain = n in plan.unsealed_scale
    configs = [(sealed, run.scale_rows[:n])]
    if with_plain:
        configs.append((plain, run.plain_scale_rows[:n]))
    urls = [ws.new_url(config.driver) for config, _ in configs]
    memories = []
    load_seconds = []
    result: dict[str, Any] = {"memories": n}
    try:
        for (config, rows), url in zip(configs, urls, strict=True):
            memory = config.open(url, ws.keys, SteppingClock())
            memories.append(memory)
            load_seconds.append(round(_timed(partial(bulk_load, memory, rows)), 2))
            ws.settle(url)
        with tenant.use(TENANT):
            handles = [m.acting_for(run.scale_person, agent=AGENT) for m in memories]
            first = _timed(lambda: handles[0].recall(run.corpus.queries[0], top_k=10))
            queries = _cycle(run.corpus.queries[1:], queries_n)
            times = _recall_pairs(handles, queries, warmup=2)
            if n == plan.scale[0]:
                result["profile_recall"] = _profile(
                    lambda: [handles[0].recall(q, top_k=10)
                             for q in queries[: plan.profile_queries]],
                    "recall",
                )
        result["bulk_load_s"] = load_seconds
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
        if sealed.driver == "local" and n == plan.rss_at:
            result["peak_rss"] = _rss(urls[0], ws.keys, run.scale_person, queries[:5])
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
                    recall_times.append(_timed(partial(handle.recall, query, top_k=10)))
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


def run_driver(run: DriverRun, sealed: StoreConfig, plain: StoreConfig) -> dict[str, Any]:
    """Every speed measurement on one driver."""
    result: dict[str, Any] = {"driver": sealed.driver}
    started = time.perf_counter()
    result.update(_small(run, sealed, plain))
    growth = [{
        "memories": run.plan.write_n, "how": "remember", **result["recall"]["sealed"],
    }]
    points = []
    for n, queries_n in zip(run.plan.scale, run.plan.scale_queries, strict=True):
        point = _scale_point(run, sealed, plain, n, queries_n)
        run.progress(f"  {sealed.driver}: {n} memories: p50 {point['sealed'].get('p50_ms')} ms")
        points.append(point)
        growth.append({"memories": n, "how": "bulk", **point["sealed"]})
    result["scale"] = points
    result["growth"] = growth
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
        keys = memory._subject_keys(TENANT, person, create=False)
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


def _rss(url: str, keys: Path, person: str, queries: Sequence[str]) -> dict[str, Any]:
    """Peak RSS of a fresh process that opens the local store and recalls (VmHWM)."""
    command = [
        sys.executable, "-m", "benchmarks.rss", "--url", url, "--keys", str(keys),
        "--person", person, "--agent", AGENT, "--queries", json.dumps(list(queries)),
    ]
    done = subprocess.run(  # noqa: S603 - our own interpreter and module
        command, cwd=REPO, capture_output=True, text=True, check=True, timeout=1800
    )
    parsed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return parsed
