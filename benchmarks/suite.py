"""The benchmark suite: LoCoMo quality, speed and scale, the cost of privacy; JSON and Markdown.

``python -m benchmarks`` runs the full size on every driver and writes
``benchmarks/results/full.json``, ``docs/benchmarks.md`` and ``docs/benchmarks/*.png``.
``python -m benchmarks --size smoke`` is the tiny size CI runs (one slice of one conversation,
200 memories, local and SQLite). ``python -m benchmarks --size default-install`` measures what
``pip install mainsdk-memory`` gives (issue 14): LoCoMo on every configuration, and speed at
10,000 memories per person with the default embedder in the hybrid rows instead of the
stand-in (results in ``benchmarks/results/default-install.json``, no Markdown unless
``--docs``). Targets are reported, never enforced: the exit status is 0 whether or not a
target is met, and non-zero only when the run itself fails.

LoCoMo runs, per driver, ``<driver>`` (sealed BM25, ``embedder=None``, signals off: it must
equal plaintext BM25 exactly), ``<driver>-default`` (``Memory.open`` with no embedder option,
recall as the SDK defaults it: hybrid with ``StaticEmbedder``, re-ranked, signals on),
``<driver>-default-relevance`` (the same with ``ranking="relevance"``),
``<driver>-default-no-formation`` (the default install with ``remember(..., formation=False)``:
issue 15's target is recall@5 with formation within 0.01 of it) and ``<driver>-hybrid``
(MiniLM). See :mod:`benchmarks.stores`.

Hybrid recall runs wherever it can: LoCoMo with MiniLM needs the ``embeddings`` extra and a
driver that declares vectors; the hybrid speed rows need only the driver (their embedder is a
model-free stand-in, see :mod:`benchmarks.speed`). What cannot run is reported "not run" with
the reason; ``--no-hybrid`` leaves all of it out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks import locomo, report
from benchmarks.machine import describe, load_average
from benchmarks.speed import (
    Corpus,
    DriverRun,
    SpeedPlan,
    blind_vs_plain_bm25,
    embedding_latency,
    run_driver,
    seal_rows,
    seal_vectors,
)
from benchmarks.stores import (
    SteppingClock,
    StoreConfig,
    Workspace,
    default_embedder,
    make_configs,
    minilm,
    minilm_unavailable,
    opened,
    stand_in_embedder,
)
from mainsdk_memory import MemoryCapabilityError

__all__ = ["SIZES", "Size", "main", "run"]

REPO = Path(__file__).resolve().parents[1]
DRIVERS = ("local", "sqlite", "postgresql")
SCHEMA = 1

#: Targets (reported, never enforced).
TARGET_SEALING_RATIO = 1.3
TARGET_RECALL_P95_MS = 50.0
TARGET_P95_AT = 10_000
TARGET_P95_DRIVERS = ("local", "postgresql")
TARGET_SEALED_RECALL5 = 0.526
TARGET_HYBRID_RECALL5 = 0.65
#: Issue 14's targets for the default install (``<driver>-default``).
TARGET_DEFAULT_RECALL5 = 0.68
TARGET_DEFAULT_MULTI_HOP_RECALL5 = 0.60
MULTI_HOP = "1"
TARGET_DEFAULT_P95_MS = {"local": 10.0, "postgresql": 30.0}
TARGET_DEFAULT_REMEMBER_RATIO = 1.5
#: Issue 15: LoCoMo recall@5 with formation on may be at most this much below formation off.
TARGET_FORMATION_LOSS = 0.01


@dataclass(frozen=True)
class Size:
    """How big a run is."""

    name: str
    drivers: tuple[str, ...]
    locomo_limit: int | None
    """Conversations (the smallest first); ``None``: all ten."""
    locomo_sessions: int | None
    """Sessions per conversation; ``None``: all."""
    speed: SpeedPlan = field(default_factory=SpeedPlan)
    workers: int = 4


SIZES: dict[str, Size] = {
    "full": Size("full", DRIVERS, None, None),
    "smoke": Size(
        "smoke",
        ("local", "sqlite"),
        locomo_limit=1,
        locomo_sessions=2,
        speed=SpeedPlan(
            write_n=10, scale=(200,), unsealed_scale=(200,), queries=6, scale_queries=(6,),
            persons=3, per_person=10, person_queries=4, person_writes=2, forgets=2, erases=1,
            rss_at=200, profile_queries=2, embedding_queries=10,
        ),
        workers=2,
    ),
    # Issue 14: the default install at 10,000 memories per person, the hybrid speed rows
    # with the default embedder (StaticEmbedder) instead of the stand-in.
    "default-install": Size(
        "default-install",
        ("local", "postgresql"),
        locomo_limit=None,
        locomo_sessions=None,
        speed=SpeedPlan(
            write_n=500, scale=(10_000,), unsealed_scale=(10_000,), queries=100,
            scale_queries=(200,), persons=100, per_person=20, person_queries=50,
            person_writes=20, forgets=10, erases=2, rss_at=10_000, profile_queries=10,
            embedding_queries=200, hybrid_embedder="default",
        ),
    ),
}

_DESCRIPTIONS = {
    "sdk": "BM25 over blind terms, sealed (embedder=None, ranking=\"relevance\")",
    "default": "the default install: Memory.open with no embedder option (StaticEmbedder), "
               "recall mode=\"auto\" (BM25 + vectors fused, second pass), sealed",
    "hybrid": "BM25 + vectors (MiniLMEmbedder, each text embedded once and shared by the "
              "hybrid stores), sealed",
}


def _skipped() -> str:
    return "not measured in this run (--no-hybrid)"


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- LoCoMo ---------------------------------------------------------------------------------


def _run_locomo(
    dataset: locomo.Dataset,
    configs: Sequence[StoreConfig],
    workspace: Workspace,
    workers: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    conversations = dataset.conversations
    results: dict[str, Any] = {}

    started = time.perf_counter()
    okapi = [locomo.rank_bm25_okapi(c) for c in conversations]
    okapi_scores = locomo.score(conversations, [answers for answers, _ in okapi])
    full_ranks = [rank for _, ranks in okapi for rank in ranks]
    okapi_scores["overall"]["mrr_full"] = round(
        sum(1.0 / r for r in full_ranks if r is not None) / max(1, len(full_ranks)), 4
    )
    results["rank_bm25"] = {
        "status": "ok", "kind": "baseline", "driver": None,
        "description": "rank_bm25.BM25Okapi, plaintext turns, lowercase \\w+ tokens, every turn",
        "seconds": round(time.perf_counter() - started, 2), **okapi_scores,
    }
    started = time.perf_counter()
    skip = {tuple(item.split("/", 1)) for item in dataset.refused_by_detector}
    plain = [
        locomo.rank_plain_ours(c, {dia for sample, dia in skip if sample == c.sample_id})
        for c in conversations
    ]
    results["plaintext-ours"] = {
        "status": "ok", "kind": "baseline", "driver": None,
        "description": "bm25_rank on plaintext rows with the SDK's index_terms "
                       "(stopwords, Snowball stems), no sealing",
        "seconds": round(time.perf_counter() - started, 2),
        **locomo.score(conversations, plain),
    }
    progress("LoCoMo baselines done")

    rankings: dict[str, list[list[locomo.Ranked]]] = {}
    runnable: list[tuple[StoreConfig, dict[str, Any], str]] = []
    for config in configs:
        reason = config.unavailable()
        entry: dict[str, Any] = {
            "kind": config.kind, "driver": config.driver,
            "description": _DESCRIPTIONS.get(config.kind, config.kind)
            + ("" if config.kind == "sdk" else
               f"; ranking={config.ranking or 'signals'} (signals "
               f"{'off' if config.ranking == 'relevance' else 'on'})"),
            "ranking": config.ranking or "signals",
        }
        if reason is not None:
            results[config.name] = {**entry, "status": "not run", "reason": reason}
            progress(f"LoCoMo {config.name}: not run ({reason})")
            continue
        results[config.name] = entry  # keeps the table's order
        runnable.append((config, entry, workspace.new_url(config.driver)))

    def measure(config: StoreConfig, entry: dict[str, Any], url: str) -> None:
        try:
            started = time.perf_counter()
            run = locomo.rank_with_sdk(
                config, url, workspace.keys, conversations, workers=workers, progress=progress
            )
            rankings[config.name] = run.rankings
            results[config.name] = {
                **entry, "status": "ok", "seconds": round(time.perf_counter() - started, 1),
                "remember_seconds_summed": run.remember_seconds,
                "recall_seconds_summed": run.recall_seconds,
                "refused_by_injection_check": run.refused,
                "embedder": run.embedder,
                **({"reranker_fitted": _reranker_fitted(run.embedder),
                    "reranker": _reranker(run.embedder)}
                   if run.embedder is not None else {}),
                **locomo.score(conversations, run.rankings),
            }
        except MemoryCapabilityError as exc:  # the store refused the embedder: cannot run
            results[config.name] = {**entry, "status": "not run", "reason": str(exc)}
            progress(f"LoCoMo {config.name}: not run ({exc})")
        except Exception as exc:  # a failing configuration is reported; the rest still runs
            results[config.name] = {**entry, "status": "failed",
                                    "reason": f"{type(exc).__name__}: {exc}"}
            progress(f"LoCoMo {config.name}: FAILED {exc!r}")
        finally:
            workspace.release(url)
        progress(f"LoCoMo {config.name}: {results[config.name].get('overall')}")

    # Quality does not depend on timing, so the configurations run side by side (each spends
    # most of its time waiting for its own commits); the seconds they report are informative.
    with ThreadPoolExecutor(max_workers=max(1, len(runnable))) as pool:
        for future in [pool.submit(measure, *item) for item in runnable]:
            future.result()

    equality: dict[str, Any] = {}
    for name, ranked in rankings.items():
        if results[name]["kind"] != "sdk":
            continue
        compared = locomo.compare_rankings(ranked, plain)
        compared["metrics_equal"] = (
            results[name]["overall"] == results["plaintext-ours"]["overall"]
            and results[name]["by_category"] == results["plaintext-ours"]["by_category"]
        )
        equality[f"{name} vs plaintext-ours"] = compared
    # Hybrid recall has no plaintext twin; the same embedder and fusion on every driver must
    # still rank alike, so each hybrid store is compared with the first one measured.
    hybrids = [n for n, r in results.items() if r.get("kind") == "hybrid" and n in rankings]
    across = {
        f"{name} vs {hybrids[0]}": locomo.compare_rankings(rankings[name], rankings[hybrids[0]])
        for name in hybrids[1:]
    }
    return {"data": dataset.summary(), "results": results, "sealed_equals_plaintext": equality,
            "hybrid_across_drivers": across}


def _reranker_fitted(embedder: str | None) -> bool:
    """Whether the second pass has fitted weights for ``embedder`` (else the fused ranking
    stands, ``_rerank.WEIGHTS``)."""
    from mainsdk_memory import _rerank

    return embedder is not None and _rerank.model_for(embedder) is not None


def _reranker(embedder: str) -> str | None:
    """The second pass's fitted model for ``embedder`` as measured (weights change while it
    is being fitted; the result says which ones it ran with)."""
    from mainsdk_memory import _rerank

    model = _rerank.model_for(embedder)
    return None if model is None else repr(model)


# --- speed ----------------------------------------------------------------------------------


def _run_speed(
    dataset: locomo.Dataset,
    drivers: Sequence[str],
    configs: dict[str, StoreConfig],
    workspace: Workspace,
    plan: SpeedPlan,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    refused = set(dataset.refused_by_detector)
    corpus = Corpus(
        texts=[t.memory_text for c in dataset.conversations for t in c.turns
               if f"{c.sample_id}/{t.dia_id}" not in refused],
        queries=[q.question for c in dataset.conversations for q in c.questions],
    )
    largest = max(plan.scale)
    scale_person = "scale"
    scratch = workspace.new_url("local")
    local = make_configs(["local"])  # sealing needs no store: any driver's Memory would do
    started = time.perf_counter()
    with opened(local["local"], scratch, workspace.keys, SteppingClock()) as sealer, \
         opened(local["local-unsealed"], scratch, workspace.keys, SteppingClock()) as plain:
        texts = [corpus.texts[i % len(corpus.texts)] for i in range(largest)]
        scale_rows = seal_rows(sealer, scale_person, texts)
        plain_rows = seal_rows(plain, scale_person, texts[: max(plan.unsealed_scale, default=0)])
        seal_seconds = time.perf_counter() - started
        person_rows = []
        for i in range(plan.persons):
            offset = (i * plan.per_person) % len(corpus.texts)
            own = [corpus.texts[(offset + j) % len(corpus.texts)] for j in range(plan.per_person)]
            person_rows += seal_rows(sealer, f"person-{i:05d}", own)
        bm25 = blind_vs_plain_bm25(
            sealer, scale_person, scale_rows[: plan.scale[0]], plain_rows[: plan.scale[0]],
            corpus.queries[: plan.queries],
        )
        with_vectors = _hybrid_config_name(plan)
        reasons = {d: configs[f"{d}-{with_vectors}"].unavailable() for d in drivers}
        scale_vectors = None
        vector_seconds = None
        if plan.hybrid and any(reason is None for reason in reasons.values()):
            vector_started = time.perf_counter()
            scale_vectors = seal_vectors(sealer, scale_person, scale_rows, texts,
                                         _hybrid_embedder(plan))
            vector_seconds = time.perf_counter() - vector_started
    workspace.release(scratch)
    progress(f"sealed {len(scale_rows) + len(person_rows)} rows"
             + (f" and {len(scale_vectors)} vectors" if scale_vectors else "")
             + f" for bulk loading in {time.perf_counter() - started:.0f} s")
    run = DriverRun(workspace, corpus, plan, scale_rows, plain_rows, person_rows, scale_person,
                    progress, scale_texts=texts, scale_vectors=scale_vectors)
    per_driver: dict[str, Any] = {}
    for driver in drivers:
        progress(f"speed: {driver}")
        sealed, plain = configs[driver], configs[f"{driver}-unsealed"]
        reason = reasons[driver] if plan.hybrid else "not measured in this run (--no-hybrid)"
        hybrid = configs[f"{driver}-{with_vectors}"] if reason is None else None
        try:
            per_driver[driver] = run_driver(run, sealed, plain, hybrid, reason)
        except Exception as exc:
            if hybrid is None:
                per_driver[driver] = {"driver": driver, "status": "failed",
                                      "reason": f"{type(exc).__name__}: {exc}"}
                progress(f"speed {driver}: FAILED {exc!r}")
                continue
            # A hybrid failure must not cost the driver its BM25 numbers: run again without.
            status = "not run" if isinstance(exc, MemoryCapabilityError) else "failed"
            why = f"{type(exc).__name__}: {exc}"
            progress(f"speed {driver} with hybrid: {status.upper()} {exc!r}; again without")
            try:
                per_driver[driver] = run_driver(run, sealed, plain, None, why)
                per_driver[driver]["hybrid"]["status"] = status
            except Exception as again:
                per_driver[driver] = {"driver": driver, "status": "failed",
                                      "reason": f"{type(again).__name__}: {again}"}
                progress(f"speed {driver}: FAILED {again!r}")
    return {
        "plan": asdict(plan),
        "hybrid_config": with_vectors,
        "seal_rows_per_s": round(len(scale_rows) / seal_seconds, 1) if seal_seconds else None,
        "seal_vectors_per_s": (round(len(scale_vectors) / vector_seconds, 1)
                               if scale_vectors and vector_seconds else None),
        "bm25_blind_vs_plain": bm25,
        **({"embedding": _embedding(corpus, plan, progress)} if plan.hybrid else {}),
        "drivers": per_driver,
    }


def _hybrid_config_name(plan: SpeedPlan) -> str:
    """The configuration suffix of the speed runs' store with vectors."""
    return "default" if plan.hybrid_embedder == "default" else "hybrid-hashing"


def _hybrid_embedder(plan: SpeedPlan) -> Any:
    """The embedder whose vectors are bulk-loaded at the scale points."""
    return default_embedder() if plan.hybrid_embedder == "default" else stand_in_embedder()


def _embedding(
    corpus: Corpus, plan: SpeedPlan, progress: Callable[[str], None]
) -> dict[str, Any]:
    """Per-query embedding time of the stand-in, of the default embedder and of MiniLM (if
    the extra is installed)."""
    queries = corpus.queries[: plan.embedding_queries]
    stand_in = stand_in_embedder()
    static = default_embedder()
    out: dict[str, Any] = {
        "queries": len(queries),
        "stand_in": {"status": "ok", "embedder": stand_in.name,
                     **embedding_latency(stand_in, queries)},
        "static": {"status": "ok", "embedder": static.name,
                   **embedding_latency(static, queries)},
    }
    reason = minilm_unavailable()
    if reason is not None:
        out["minilm"] = {"status": "not run", "reason": reason}
        progress(f"MiniLM query embedding: not run ({reason})")
    else:
        model = minilm()
        out["minilm"] = {"status": "ok", "embedder": model.name,
                         **embedding_latency(model, queries)}
        progress(f"MiniLM query embedding: p50 {out['minilm']['p50_ms']} ms")
    return out


# --- targets --------------------------------------------------------------------------------


def _target(
    name: str, goal: str, measured: Any, met: bool | None, note: str = ""
) -> dict[str, Any]:
    return {"target": name, "goal": goal, "measured": measured, "met": met, "note": note}


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with what was measured and whether it was met (``None``: not measured)."""
    found = []
    speed = result.get("speed", {}).get("drivers", {})
    for driver, data in speed.items():
        if "write" not in data:
            continue
        write = data["write"]["ratio_total_time"]
        found.append(_target(f"sealing overhead on write ({driver})", f"< {TARGET_SEALING_RATIO}x",
                             write, None if write is None else write < TARGET_SEALING_RATIO))
        for point in [data["recall"], *data.get("scale", [])]:
            ratio = point.get("ratio_p50")
            if ratio is None:
                continue
            found.append(_target(
                f"sealing overhead on recall, {point['memories']:,} memories ({driver})",
                f"< {TARGET_SEALING_RATIO}x (p50)", ratio, ratio < TARGET_SEALING_RATIO))
        for point in data.get("scale", []):
            if point["memories"] == TARGET_P95_AT:
                p95 = point["sealed"]["p95_ms"]
                found.append(_target(
                    f"recall p95 at {TARGET_P95_AT:,} memories per person ({driver})",
                    f"< {TARGET_RECALL_P95_MS:g} ms"
                    + ("" if driver in TARGET_P95_DRIVERS else " (not a target driver)"),
                    p95, p95 < TARGET_RECALL_P95_MS))
    found += _default_speed_targets(result.get("speed", {}))
    locomo_results = result.get("locomo", {}).get("results", {})
    goals = {"hybrid": TARGET_HYBRID_RECALL5, "default": TARGET_DEFAULT_RECALL5}
    for name, data in locomo_results.items():
        if data["kind"] == "baseline":
            continue
        goal = goals.get(data["kind"], TARGET_SEALED_RECALL5)
        if data["status"] != "ok":
            found.append(_target(f"LoCoMo recall@5 ({name})", f">= {goal}", None, None,
                                 data.get("reason", "")))
            continue
        value = data["overall"]["recall@5"]
        note = ("" if data.get("reranker_fitted", True) else
                "second pass unfitted (_rerank.WEIGHTS has no model): the fused ranking stands")
        found.append(_target(f"LoCoMo recall@5 ({name})", f">= {goal}", value, value >= goal,
                             note))
        if data["kind"] != "default":
            continue
        multi = data["by_category"].get(MULTI_HOP, {}).get("recall@5")
        if multi is not None:
            found.append(_target(f"LoCoMo multi-hop recall@5 ({name})",
                                 f">= {TARGET_DEFAULT_MULTI_HOP_RECALL5}", multi,
                                 multi >= TARGET_DEFAULT_MULTI_HOP_RECALL5, note))
        unformed = locomo_results.get(f"{name}-no-formation")
        if unformed is not None and unformed.get("status") == "ok":
            before = unformed["overall"]["recall@5"]
            found.append(_target(
                f"LoCoMo recall@5, formation on vs off ({name} vs {name}-no-formation)",
                f">= formation off - {TARGET_FORMATION_LOSS}", value,
                value >= before - TARGET_FORMATION_LOSS, f"formation off: {before}"))
        off = locomo_results.get(f"{name}-relevance")
        if off is not None and off.get("status") == "ok":
            found.append(_target(
                f"LoCoMo recall@5, signals on vs off ({name} vs {name}-relevance)",
                ">= signals off", value, value >= off["overall"]["recall@5"],
                f"signals off: {off['overall']['recall@5']}"))
    return found


def _default_speed_targets(speed: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 14's default-install speed targets, when the hybrid rows are the default's."""
    if speed.get("hybrid_config") != "default":
        return []
    found = []
    for driver, data in speed.get("drivers", {}).items():
        hybrid = data.get("hybrid", {})
        if hybrid.get("status") != "ok":
            continue
        goal = TARGET_DEFAULT_P95_MS.get(driver)
        for point in hybrid["points"]:
            if point["memories"] == TARGET_P95_AT and goal is not None:
                p95 = point["warm"]["p95_ms"]
                found.append(_target(
                    f"default-install recall p95 at {TARGET_P95_AT:,} memories per person "
                    f"({driver})", f"<= {goal:g} ms", p95, p95 <= goal))
        write = data.get("hybrid_write")
        if write:
            ratio = write["ratio_p50_vs_sealed"]
            found.append(_target(
                f"default-install remember p50 ÷ text-only remember p50 ({driver})",
                f"<= {TARGET_DEFAULT_REMEMBER_RATIO:g}x", ratio,
                ratio is not None and ratio <= TARGET_DEFAULT_REMEMBER_RATIO))
    return found


# --- running --------------------------------------------------------------------------------


def run(
    size: Size,
    *,
    data: Path,
    drivers: Sequence[str],
    workdir: Path,
    skip_locomo: bool = False,
    skip_speed: bool = False,
    hybrid: bool = True,
    progress: Callable[[str], None] = _log,
) -> dict[str, Any]:
    """Run the suite and return the result document (also what the JSON file holds).

    ``hybrid=False`` leaves out every configuration with an embedder (LoCoMo with MiniLM,
    the hybrid speed rows); they are reported as not run.
    """
    started = time.perf_counter()
    dataset = locomo.load(data, limit=size.locomo_limit, sessions=size.locomo_sessions)
    progress(f"LoCoMo: {dataset.summary()['turns']} turns, "
             f"{dataset.summary()['questions']} questions")
    workspace = Workspace(workdir)
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "name": size.name,
        "machine": describe(workdir),
        "drivers": list(drivers),
    }
    try:
        if "postgresql" in drivers:
            workspace.postgres.start()
            result["postgresql"] = workspace.postgres.settings()
        configs = make_configs(drivers)
        plan = size.speed
        if not hybrid:
            configs = {name: replace(config, unavailable=_skipped) if config.hybrid else config
                       for name, config in configs.items()}
            plan = replace(plan, hybrid=False)
        if not skip_locomo:
            sdk = [configs[f"{d}{suffix}"]
                   for suffix in ("", "-default", "-default-relevance",
                                  "-default-no-formation", "-hybrid")
                   for d in drivers]
            result["locomo"] = _run_locomo(dataset, sdk, workspace, size.workers, progress)
        if not skip_speed:
            result["speed"] = _run_speed(dataset, drivers, configs, workspace, plan, progress)
    finally:
        workspace.close()
    result["machine"]["load_average_at_end"] = load_average()
    result["targets"] = targets(result)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks``: run, write the JSON and the Markdown report."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--drivers", help="comma-separated subset of local,sqlite,postgresql")
    parser.add_argument("--data", type=Path, default=None,
                        help=f"folder holding locomo10.json (default ${locomo.DATA_ENV} or "
                             "../shared/data beside the checkout)")
    parser.add_argument("--json", type=Path, default=None,
                        help="result file (default benchmarks/results/<size>.json)")
    parser.add_argument("--docs", type=Path, default=None,
                        help="Markdown report (default docs/benchmarks.md for the full size; "
                             "none for other sizes unless given)")
    parser.add_argument("--no-plots", action="store_true", help="no PNGs (no matplotlib needed)")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch folder (default: temp)")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--no-hybrid", action="store_true",
                        help="leave out the embedder configurations (LoCoMo with MiniLM and "
                             "the hybrid speed rows)")
    parser.add_argument("--report-only", type=Path, default=None, metavar="JSON",
                        help="only render the Markdown and plots from an existing result file")
    args = parser.parse_args(argv)

    size = SIZES[args.size]
    # A terminated run still drops its databases and stops the PostgreSQL it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    docs = args.docs or (REPO / "docs" / "benchmarks.md" if size.name == "full" else None)
    if args.report_only is not None:
        result = json.loads(args.report_only.read_text(encoding="utf-8"))
        if docs is not None:
            report.write(result, docs, plots=not args.no_plots, json_path=args.report_only)
        return 0
    drivers = tuple(args.drivers.split(",")) if args.drivers else size.drivers
    unknown = set(drivers) - set(DRIVERS)
    if unknown:
        parser.error(f"unknown drivers: {', '.join(sorted(unknown))}")
    data_folder = args.data or locomo.data_dir()
    data_file = data_folder / "locomo10.json"
    if not data_file.is_file():
        print(f"LoCoMo data not found at {data_file}. Put the shared data folder beside the "
              f"checkout, or pass --data / set {locomo.DATA_ENV}.", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mainsdk-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = run(size, data=data_file, drivers=drivers, workdir=workdir,
                     skip_locomo=args.skip_locomo, skip_speed=args.skip_speed,
                     hybrid=not args.no_hybrid)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    out = args.json or REPO / "benchmarks" / "results" / f"{size.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    _log(f"wrote {out}")
    if docs is not None:
        report.write(result, docs, plots=not args.no_plots, json_path=out)
        _log(f"wrote {docs}")
    return 0

