"""Render a result document as docs/benchmarks.md, with matplotlib plots in docs/benchmarks/.

Everything in the page comes from the result JSON, except the hand-written analysis in
``benchmarks/notes.md``, which is appended as it is (so one command rebuilds the whole page).
matplotlib is imported only when plots are drawn (the ``bench`` extra); without it, or with
``plots=False``, the page is written without images.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CATEGORIES", "render", "write"]

NOTES = Path(__file__).resolve().parent / "notes.md"
CATEGORIES = {
    "1": "multi-hop",
    "2": "temporal",
    "3": "open-domain",
    "4": "single-hop",
    "5": "adversarial",
}
#: The data README's reference figures (rank_bm25 and bm25s on the same turns).
REFERENCE = [
    ("reference: rank_bm25 BM25Okapi (data README)", 0.265, 0.490, 0.579, 0.373),
    ("reference: bm25s (data README)", 0.267, 0.499, 0.583, 0.376),
    ("reference: bm25s, stopwords + stemming (data README)", 0.292, 0.526, 0.621, 0.403),
]
Row = tuple[object, ...]
DASH = "\u2013"  # an en dash: "no value"
TIMES = "\u00d7"  # the multiplication sign of ratios
MINUS = "\u2212"  # the minus sign of differences
DRIVER_COLOURS = {"local": "tab:blue", "sqlite": "tab:orange", "postgresql": "tab:green"}
#: The growth plot moves each driver's points sideways by this factor (log x axis), so two
#: drivers with the same latency stay visible.
GROWTH_NUDGE = 1.06


def _table(header: Sequence[str], rows: Iterable[Row]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join("" if cell is None else str(cell) for cell in row) + " |")
    return "\n".join(lines)


def _f(value: object, digits: int = 3) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _ms(value: object) -> str:
    if not isinstance(value, int | float):
        return DASH
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _x(value: object) -> str:
    return DASH if not isinstance(value, int | float) else f"{value:.2f}{TIMES}"


def _met(flag: object) -> str:
    if flag is True:
        return "**met**"
    return "**missed**" if flag is False else "not measured"


# --- sections -------------------------------------------------------------------------------


def _machine(result: dict[str, Any]) -> str:
    m = result["machine"]
    rows: list[Row] = [
        ("CPU", m.get("cpu_model")),
        ("Cores", f"{m.get('logical_cpus')} logical ({m.get('physical_cores') or '?'} physical "
                  f"listed), {m.get('usable_cpus')} usable"),
        ("RAM", f"{m.get('ram_gib')} GiB"),
        ("Disk: write 4 KiB + fsync, median", f"{m.get('fsync_4k_ms')} ms"),
        ("Load average (1, 5, 15 min)", f"{m.get('load_average_at_start')} at the start, "
                                        f"{m.get('load_average_at_end')} at the end"),
        ("Python", m.get("python")),
        ("OS", m.get("os")),
        ("Date (UTC)", m.get("date")),
        ("Packages", ", ".join(f"{k} {v}" for k, v in m.get("packages", {}).items())),
    ]
    if "postgresql" in result:
        pg = result["postgresql"]
        rows.append(("PostgreSQL", f"{pg.get('server_version')} (pgserver, same machine), fsync "
                                   f"{pg.get('fsync')}, synchronous_commit "
                                   f"{pg.get('synchronous_commit')}, shared_buffers "
                                   f"{pg.get('shared_buffers')}"))
    return _table(("", ""), rows)


def _targets(result: dict[str, Any]) -> str:
    rows: list[Row] = [
        (t["target"], t["goal"], _f(t["measured"]), _met(t["met"]), t.get("note", ""))
        for t in result.get("targets", [])
    ]
    return _table(("Target", "Goal", "Measured", "Result", "Note"), rows)


def _locomo(result: dict[str, Any], images: dict[str, str]) -> str:
    lo = result["locomo"]
    data = lo["data"]
    parts = []
    norm = data.get("evidence_normalisation", {})
    parts.append(
        f"{data['conversations']} conversations, {data['turns']:,} turns (one memory each, "
        f"`speaker: text`, `valid_from` = the session date), {data['questions']:,} questions "
        "with evidence, each asked with `recall(top_k=10)`. recall@k: at least one evidence turn "
        "in the top k; MRR@10: mean of 1/rank of the first evidence turn in the top 10 (0 if "
        "none)."
    )
    if norm:
        parts.append("Evidence normalisation (see `benchmarks/locomo.py`): " + "; ".join(
            f"{k}: {v}" for k, v in norm.items()) + ".")
    refused = data.get("refused_by_injection_check") or []
    if refused:
        parts.append(
            f"Turns the default injection check refuses to store ({len(refused)}): "
            + ", ".join(f"`{r}`" for r in refused)
            + ". They are missing from every SDK store (and from `plaintext-ours`, so the "
            "comparison is on the same rows); `rank_bm25` indexes every turn."
        )
    rows: list[Row] = []
    for name, r in lo["results"].items():
        if r["status"] != "ok":
            rows.append((f"`{name}`", r.get("kind"), DASH, DASH, DASH, DASH,
                         f"{r['status']}: {r.get('reason', '')}"))
            continue
        o = r["overall"]
        extra = f"full-ranking MRR {o['mrr_full']:.3f}" if "mrr_full" in o else ""
        rows.append((f"`{name}`", r.get("kind"), _f(o["recall@1"]), _f(o["recall@5"]),
                     _f(o["recall@10"]), _f(o["mrr@10"]), extra))
    for name, r1, r5, r10, mrr in REFERENCE:
        rows.append((name, "reference", _f(r1), _f(r5), _f(r10), _f(mrr),
                     "not run here; MRR over the full ranking"))
    parts.append(_table(("Method", "Kind", "recall@1", "recall@5", "recall@10", "MRR@10", ""),
                        rows))
    if "locomo" in images:
        parts.append(f"![LoCoMo recall@k]({images['locomo']})")
    categories = sorted({c for r in lo["results"].values() if r["status"] == "ok"
                         for c in r["by_category"]})
    header = ["Method", *(f"{c} {CATEGORIES.get(c, '')} (n={_n(lo, c)})" for c in categories)]
    for metric in ("recall@5", "recall@10"):
        rows = [
            (f"`{name}`", *(_f(r["by_category"].get(c, {}).get(metric)) for c in categories))
            for name, r in lo["results"].items() if r["status"] == "ok"
        ]
        parts.append(f"Per QA category, {metric}:\n\n" + _table(header, rows))
    if "categories" in images:
        parts.append(f"![LoCoMo recall@5 per category]({images['categories']})")
    equal = lo.get("sealed_equals_plaintext", {})
    if equal:
        rows = [(pair, _f(e["questions"]), _f(e["identical_rankings"]),
                 f"{e['max_score_difference']:.2e}", _f(e["metrics_equal"]))
                for pair, e in equal.items()]
        parts.append(
            "Sealing does not change BM25: each sealed store's rankings against BM25 on the "
            "same rows with plaintext terms (same normalisation, no sealing):\n\n"
            + _table(("Compared", "Questions", "Identical top-10 (ids and order)",
                      "Largest score difference", "All metrics equal"), rows)
        )
    parts += _locomo_hybrid(lo, categories)
    return "\n\n".join(parts)


def _locomo_hybrid(lo: dict[str, Any], categories: Sequence[str]) -> list[str]:
    """What the embedder adds, per category, and whether hybrid ranks alike on every driver."""
    results = lo["results"]
    parts = []
    rows: list[Row] = []
    for name, r in results.items():
        bm25 = results.get(_bm25_name(name))
        if r.get("kind") != "hybrid" or r["status"] != "ok" or not bm25 or bm25["status"] != "ok":
            continue
        for metric in ("recall@5", "mrr@10"):
            deltas = [_delta(r, bm25, c, metric) for c in categories]
            rows.append((f"`{name}` {MINUS} `{_bm25_name(name)}`", metric,
                         _delta_overall(r, bm25, metric), *deltas))
    if rows:
        header = [f"Hybrid {MINUS} BM25 (same driver)", "Metric", "overall",
                  *(f"{c} {CATEGORIES.get(c, '')}" for c in categories)]
        parts.append(
            "What the embedder adds (MiniLM, convex min-max fusion, ADR 0070): hybrid minus "
            "sealed BM25 on the same driver, overall and per QA category:\n\n"
            + _table(header, rows)
        )
    across = lo.get("hybrid_across_drivers", {})
    if across:
        rows = [(pair, _f(e["questions"]), _f(e["identical_rankings"]),
                 f"{e['max_score_difference']:.2e}") for pair, e in across.items()]
        parts.append(
            "Hybrid recall on each driver against the first hybrid store (same embedder, same "
            "fusion; the drivers only store and return the sealed vectors):\n\n"
            + _table(("Compared", "Questions", "Identical top-10 (ids and order)",
                      "Largest score difference"), rows)
        )
    return parts


def _bm25_name(hybrid_name: str) -> str:
    """The BM25 configuration a hybrid one is compared with (``local-hybrid`` → ``local``)."""
    return hybrid_name.removesuffix("-hybrid")


def _signed(value: float) -> str:
    return f"{value:+.3f}".replace("-", MINUS)


def _delta_overall(hybrid: dict[str, Any], bm25: dict[str, Any], metric: str) -> str:
    return _signed(hybrid["overall"][metric] - bm25["overall"][metric])


def _delta(hybrid: dict[str, Any], bm25: dict[str, Any], category: str, metric: str) -> str:
    a = hybrid["by_category"].get(category, {}).get(metric)
    b = bm25["by_category"].get(category, {}).get(metric)
    return DASH if a is None or b is None else _signed(a - b)


def _n(lo: dict[str, Any], category: str) -> int:
    for r in lo["results"].values():
        if r["status"] == "ok":
            return int(r["by_category"].get(category, {}).get("n", 0))
    return 0


def _speed(result: dict[str, Any], images: dict[str, str]) -> str:
    speed = result["speed"]
    plan = speed["plan"]
    drivers = {d: v for d, v in speed["drivers"].items() if "write" in v}
    parts = []
    failed = {d: v for d, v in speed["drivers"].items() if "write" not in v}
    for driver, v in failed.items():
        parts.append(f"**{driver}: the speed run failed** ({v.get('reason')}).")

    rows: list[Row] = []
    for d, v in drivers.items():
        w = v["write"]
        rows.append((d, _f(w["sealed"]["per_s"], 1), _ms(w["sealed"]["p50_ms"]),
                     _ms(w["sealed"]["p95_ms"]), _ms(w["sealed"]["p99_ms"]),
                     _f(w["unsealed"]["per_s"], 1), _ms(w["unsealed"]["p50_ms"]),
                     _x(w["ratio_total_time"])))
    parts.append(
        f"### remember\n\n{plan['write_n']:,} memories for one person through the public "
        "`remember`, sealed and unsealed stores written alternately, one call each:\n\n"
        + _table(("Driver", "sealed /s", "p50 ms", "p95 ms", "p99 ms", "unsealed /s",
                  "unsealed p50 ms", "time sealed ÷ unsealed"), rows)
    )

    rows = []
    for d, v in drivers.items():
        points = [{"memories": v["recall"]["memories"], "sealed": v["recall"]["sealed"],
                   "how": "remember"}] + [{**p, "how": "bulk"} for p in v.get("scale", [])]
        for p in points:
            s = p["sealed"]
            rows.append((d, f"{p['memories']:,}", p["how"], _f(s.get("n")), _ms(s.get("p50_ms")),
                         _ms(s.get("p95_ms")), _ms(s.get("p99_ms")), _ms(s.get("max_ms")),
                         _ms(p.get("first_recall_ms"))))
    parts.append(
        "### recall\n\n`recall(query, top_k=10)` for one person, LoCoMo questions as queries "
        "(after a few untimed warm-up calls; *first* is the first call on a freshly opened "
        "store, which loads its index):\n\n"
        + _table(("Driver", "Memories", "Stored by", "Queries", "p50 ms", "p95 ms", "p99 ms",
                  "max ms", "first ms"), rows)
    )
    if "growth" in images:
        parts.append(f"![Recall latency against memories per person]({images['growth']})")
    hybrid = _hybrid_speed(speed, drivers)
    if hybrid:
        parts.append(hybrid)

    rows = []
    for d, v in drivers.items():
        p = v.get("persons", {})
        if not p:
            continue
        rows.append((d, f"{p['persons']:,} {TIMES} {p['memories_per_person']:,}",
                     _ms(p["recall"].get("p50_ms")), _ms(p["recall"].get("p95_ms")),
                     _ms(p["recall"].get("p99_ms")), _ms(p["remember"].get("p50_ms")),
                     _ms(p["remember"].get("p95_ms")), _ms(p["erase"].get("p50_ms")),
                     _ms(p["erase"].get("max_ms")), _f(p.get("bulk_load_s"), 1)))
    parts.append(
        "### Many persons in one tenant\n\nOne tenant holding persons x memories each "
        "(bulk-loaded); recall and remember for persons picked at random; "
        "`privacy.erase` of whole persons (every memory, then the key):\n\n"
        + _table(("Driver", f"Persons {TIMES} memories", "recall p50", "recall p95", "recall p99",
                  "remember p50", "remember p95", "erase p50 ms", "erase max ms",
                  "bulk load s"), rows)
    )

    rows = []
    for d, v in drivers.items():
        f = v["forget"]
        rows.append((d, f"{f['memories']:,}", _ms(f["sealed"].get("p50_ms")),
                     _ms(f["sealed"].get("p95_ms")), _ms(f["unsealed"].get("p50_ms")),
                     _ms(f["recall_after_forget_sealed"].get("p50_ms")),
                     _ms(f["recall_after_forget_sealed"].get("p95_ms"))))
    parts.append(
        "### forget\n\nThe person's own `forget(id)` (hard delete of every version and index "
        "entry, then a signed receipt), and the first recall after each forget:\n\n"
        + _table(("Driver", "Memories", "forget p50 ms", "forget p95 ms",
                  "unsealed forget p50 ms", "next recall p50 ms", "next recall p95 ms"), rows)
    )

    rows = []
    for d, v in drivers.items():
        rows.append((d, "remember", f"{plan['write_n']:,}", _x(v["write"]["ratio_total_time"]),
                     _x(v["write"]["ratio_p50"])))
        rows.append((d, "recall", f"{v['recall']['memories']:,}", _x(v["recall"]["ratio_mean"]),
                     _x(v["recall"]["ratio_p50"])))
        for p in v.get("scale", []):
            if "ratio_p50" in p:
                rows.append((d, "recall", f"{p['memories']:,}", _x(p.get("ratio_mean")),
                             _x(p["ratio_p50"])))
    bm = speed.get("bm25_blind_vs_plain", {})
    if bm:
        rows.append(("(none)", "bm25_rank alone, blind vs plain terms", f"{bm['memories']:,}",
                     DASH, _x(bm.get("ratio_p50"))))
    parts.append(
        "### The cost of privacy\n\nSealed ÷ unsealed, measured in the same run with calls "
        "interleaved. The unsealed store runs the same SDK and driver code with a key store "
        "(benchmark only: `benchmarks/stores.py`, `PlainKeyStore`) whose seal, open and blind "
        "are identity functions:\n\n"
        + _table(("Driver", "Operation", "Memories", "ratio (total or mean)", "ratio of p50"),
                 rows)
    )
    if bm:
        parts.append(
            f"`bm25_rank` alone on {bm['memories']:,} rows: blind terms p50 "
            f"{_ms(bm['blind']['p50_ms'])} ms, plain terms p50 {_ms(bm['plain']['p50_ms'])} ms; "
            f"identical scores for {bm['queries_with_identical_scores']} of {bm['queries']} "
            "queries. Quality is identical by construction (the LoCoMo table above)."
        )
    if "privacy" in images:
        parts.append(f"![Sealed ÷ unsealed]({images['privacy']})")

    rss = [(d, p) for d, v in drivers.items() for p in v.get("scale", []) if "peak_rss" in p]
    for d, p in rss:
        r = p["peak_rss"]
        text = (
            f"### Memory use\n\nPeak RSS (VmHWM) of a fresh process that opens the {d} store "
            f"with {p['memories']:,} memories of one person and recalls 5 times: "
            f"**{_f(r['peak_mib'], 1)} MiB** ({_f(r['after_import_mib'], 1)} MiB after the "
            f"imports; opening and the recalls took {r['open_and_recall_s']} s)."
        )
        h = p.get("hybrid", {}).get("peak_rss")
        if h:
            text += (
                f" The same with the stand-in embedder and every memory's sealed 384-float "
                f"vector stored (hybrid recall opens and keeps them all): "
                f"**{_f(h['peak_mib'], 1)} MiB** (opening and the recalls took "
                f"{h['open_and_recall_s']} s)."
            )
        parts.append(text)

    rows = []
    for d, v in drivers.items():
        for label, prof in (("recall, " + f"{plan['write_n']:,}", v.get("profile_recall")),
                            ("hybrid recall, " + f"{plan['write_n']:,}",
                             v.get("profile_recall_hybrid")),
                            ("remember", v.get("profile_remember")),
                            *[(f"recall, {p['memories']:,}", p.get("profile_recall"))
                              for p in v.get("scale", []) if p.get("profile_recall")],
                            *[(f"hybrid recall, {p['memories']:,}", p.get("profile_recall_hybrid"))
                              for p in v.get("scale", []) if p.get("profile_recall_hybrid")]):
            if not prof:
                continue
            top = "; ".join(f"{name} {share:.0%}" for name, share in prof["share"].items())
            rows.append((d, label, top))
    if rows:
        parts.append(
            "### Where the time goes\n\ncProfile of a few calls; each line is the share of the "
            "call's time spent inside that function (nested shares overlap):\n\n"
            + _table(("Driver", "Call", "Shares"), rows)
        )
    return "\n\n".join(parts)


def _hybrid_speed(speed: dict[str, Any], drivers: dict[str, Any]) -> str:
    """Hybrid recall at every size, remember with vectors, and the embedders' own time."""
    plan = speed["plan"]
    embedding = speed.get("embedding")
    measured = {d: v["hybrid"] for d, v in drivers.items()
                if v.get("hybrid", {}).get("status") == "ok"}
    skipped = {d: v["hybrid"] for d, v in drivers.items()
               if "hybrid" in v and v["hybrid"].get("status") != "ok"}
    if not (measured or skipped or embedding):
        return ""  # a result from before hybrid was measured
    if not measured:
        return "### hybrid recall (BM25 + vectors)\n\n" + "\n\n".join(
            f"**{d}: hybrid {h.get('status')}** ({h.get('reason')})." for d, h in skipped.items()
        )
    stand_in = (embedding or {}).get("stand_in", {})
    name = stand_in.get("embedder", "hashing-v1-384")
    parts = [
        "### hybrid recall (BM25 + vectors)\n\n"
        f"`recall(query, top_k=10)` on a store opened with an embedder (`mode=\"auto\"`: "
        "BM25 and vector ranking fused, ADR 0070), at the same sizes as the BM25 rows and "
        "interleaved with them. **The embedder is a stand-in**: "
        f"`HashingEmbedder(dimensions=384)` (`{name}`, model-free), because embedding "
        "100,000 texts with MiniLM would take far longer than the run. Everything else a "
        "hybrid recall does (reading the person's sealed vectors, opening them, ranking 384 "
        "float32 values per memory, fusing, fetching what only the vectors found) costs the "
        "same for any embedder of that width; MiniLM's own time per query is in the next "
        f"table, to add. At {plan['write_n']:,} memories the vectors were written by "
        "`remember`; at the "
        "scale points they were sealed by the SDK's own code (`VectorIndex.embed`/`seal` under "
        "the person's key with the vector's associated data, as `remember` does) and "
        "bulk-loaded with the rows. *cold* is the first recall on a freshly opened store (the "
        "driver's first read and every vector opened); *vectors cold* the first recall after "
        "dropping only the opened vectors (driver warm), which is what a process pays once "
        "per person, since the core keeps opened vectors per person; *warm* is every recall "
        "after a few warm-up calls. *÷ BM25*: warm p50 over the sealed BM25 store's p50 "
        "in the same interleaving; *text on this store* is `mode=\"text\"` on the hybrid "
        "store (what "
        "storing vectors costs BM25). *check*: a stored text asked with `mode=\"vector\"` "
        "comes back first with cosine 1 (the stored vectors open and are the texts' own).",
    ]
    rows: list[Row] = []
    for d, h in measured.items():
        for p in h["points"]:
            w = p["warm"]
            rows.append((d, f"{p['memories']:,}", p["how"], _f(w.get("n")), _ms(w.get("p50_ms")),
                         _ms(w.get("p95_ms")), _ms(w.get("p99_ms")), _ms(w.get("max_ms")),
                         _ms(p.get("first_recall_ms")), _ms(p.get("vectors_cold_ms")),
                         _x(p.get("ratio_p50_vs_bm25")),
                         _ms(p.get("text_same_store", {}).get("p50_ms")),
                         _f(p.get("vector_self_check"))))
    if rows:
        parts.append(_table(("Driver", "Memories", "Stored by", "Queries", "warm p50 ms",
                             "p95 ms", "p99 ms", "max ms", "cold ms", "vectors cold ms",
                             "÷ BM25", "text on this store p50 ms", "check"),
                            rows))
    for d, h in skipped.items():
        parts.append(f"**{d}: hybrid {h.get('status')}** ({h.get('reason')}).")
    if embedding:
        rows = []
        for key, label in (("stand_in", "stand-in (in the rows above)"),
                           ("static", "the default (StaticEmbedder)"), ("minilm", "MiniLM")):
            if key not in embedding:
                continue  # a result from before it was measured
            e = embedding[key]
            if e.get("status") == "ok":
                rows.append((f"`{e['embedder']}`", label, _f(e.get("n")), _ms(e.get("p50_ms")),
                             _ms(e.get("p95_ms")), _ms(e.get("p99_ms")), _ms(e.get("mean_ms"))))
            else:
                rows.append((DASH, label, DASH, DASH, DASH, DASH,
                             f"not run: {e.get('reason', '')}"))
        parts.append(
            f"Embedding one query, as recall does (`VectorIndex.embed`), "
            f"{embedding['queries']:,} LoCoMo questions one at a time after 5 warm-up calls. "
            "A hybrid recall with MiniLM costs about the row above minus the stand-in's time "
            "plus MiniLM's; each `remember` with MiniLM embeds its text the same way:\n\n"
            + _table(("Embedder", "", "Queries", "p50 ms", "p95 ms", "p99 ms", "mean ms"), rows)
        )
    rows = []
    for d, v in drivers.items():
        w = v.get("hybrid_write")
        if not w:
            continue
        x = w["with_vectors"]
        rows.append((d, f"{w['n']:,}", _f(x.get("per_s"), 1), _ms(x.get("p50_ms")),
                     _ms(x.get("p95_ms")), _ms(x.get("p99_ms")),
                     _x(w.get("ratio_total_time_vs_sealed"))))
    if rows:
        parts.append(
            "`remember` on the hybrid store (stand-in embedder: the text is embedded, and the "
            "vector sealed and stored with the version), interleaved with the sealed and "
            "unsealed stores of the remember table:\n\n"
            + _table(("Driver", "Memories", "with vectors /s", "p50 ms", "p95 ms", "p99 ms",
                      "time ÷ sealed without vectors"), rows)
        )
    return "\n\n".join(parts)


# --- plots ----------------------------------------------------------------------------------


def _recall5_goals(result: dict[str, Any]) -> list[tuple[float, str]]:
    """The distinct LoCoMo recall@5 goals of the result's targets (``>= 0.526`` …), ascending,
    each with its legend label (naming the hybrid configurations when it is theirs alone)."""
    goals: dict[float, set[bool]] = {}
    for target in result.get("targets", []):
        name, goal = str(target.get("target", "")), str(target.get("goal", ""))
        if name.startswith("LoCoMo recall@5") and goal.startswith(">="):
            goals.setdefault(float(goal[2:].split()[0]), set()).add(name.endswith("-hybrid)"))
    return [(goal, f"recall@5 target {goal:g}" + (" (hybrid)" if kinds == {True} else ""))
            for goal, kinds in sorted(goals.items())]


def _plots(result: dict[str, Any], folder: Path, prefix: str) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}

    def save(fig: Any, key: str) -> None:
        name = f"{key}.png"
        fig.tight_layout()
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        made[key] = f"{prefix}/{name}"

    lo = result.get("locomo")
    if lo:
        ok = {n: r for n, r in lo["results"].items() if r["status"] == "ok"}
        fig, ax = plt.subplots(figsize=(9.5, 4))
        width = 0.8 / max(1, len(ok))
        metrics = ("recall@1", "recall@5", "recall@10", "mrr@10")
        for i, (name, r) in enumerate(ok.items()):
            ax.bar([m + i * width for m in range(len(metrics))],
                   [r["overall"][k] for k in metrics], width, label=name)
        ax.set_xticks([m + 0.4 - width / 2 for m in range(len(metrics))], metrics)
        # The recall@5 targets, drawn over the recall@5 group only and named in the legend
        # (a label beside the y axis would sit on its tick labels).
        group = metrics.index("recall@5")
        for (goal, label), style in zip(_recall5_goals(result), ("--", ":", "-."), strict=False):
            ax.hlines(goal, group - width, group + 0.8, colors="black", linestyles=style,
                      linewidth=1.2, zorder=3, label=label)
        ax.set_ylim(0, 1)
        ax.set_title("LoCoMo retrieval, all questions with evidence")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
        save(fig, "locomo")

        categories = sorted({c for r in ok.values() for c in r["by_category"]})
        fig, ax = plt.subplots(figsize=(9.5, 4))
        for i, (name, r) in enumerate(ok.items()):
            ax.bar([k + i * width for k in range(len(categories))],
                   [r["by_category"][c]["recall@5"] for c in categories], width, label=name)
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(categories))],
                      [f"{c} {CATEGORIES.get(c, '')}" for c in categories])
        ax.set_ylim(0, 1)
        ax.set_ylabel("recall@5")
        ax.set_title("LoCoMo recall@5 per QA category")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
        save(fig, "categories")

    speed = result.get("speed")
    if speed:
        drivers = {d: v for d, v in speed["drivers"].items() if "growth" in v}
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for i, (d, v) in enumerate(drivers.items()):
            # Equal values of two drivers would hide one series under the other: each driver
            # is nudged sideways (a few percent on the log axis) and drawn with open markers
            # over the filled ones of the drivers before it.
            nudge = GROWTH_NUDGE ** (i - (len(drivers) - 1) / 2)
            xs = [g["memories"] * nudge for g in v["growth"]]
            colour = DRIVER_COLOURS.get(d)
            marks: dict[str, Any] = {"markersize": 7 + 1.5 * i, "zorder": 3 + i,
                                     "fillstyle": "full" if i == 0 else "none",
                                     "markeredgewidth": 1.5}
            ax.plot(xs, [g["p50_ms"] for g in v["growth"]], marker="o", color=colour,
                    label=f"{d} p50", **marks)
            ax.plot(xs, [g["p95_ms"] for g in v["growth"]], marker="^", linestyle="--",
                    color=colour, label=f"{d} p95", **marks)
            hybrid = v.get("hybrid", {})
            if hybrid.get("status") == "ok" and hybrid.get("points"):
                ax.plot([p["memories"] * nudge for p in hybrid["points"]],
                        [p["warm"]["p50_ms"] for p in hybrid["points"]], marker="s",
                        linestyle=":", color=colour, label=f"{d} hybrid p50 (stand-in)",
                        **marks)
        ax.axhline(50, color="grey", linestyle="-.", linewidth=1, zorder=1,
                   label="target: p95 < 50 ms\nat 10,000 memories")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories per person (drivers nudged apart sideways)")
        ax.set_ylabel("recall latency, ms")
        ax.set_title("recall(top_k=10) latency against memories per person")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
        save(fig, "growth")

        labels, values = [], []
        for d, v in drivers.items():
            labels.append(f"{d}\nremember")
            values.append(v["write"]["ratio_total_time"] or 0)
            labels.append(f"{d}\nrecall {v['recall']['memories'] // 1000}k")
            values.append(v["recall"]["ratio_p50"] or 0)
            for p in v.get("scale", []):
                if p.get("ratio_p50"):
                    labels.append(f"{d}\nrecall {p['memories'] // 1000}k")
                    values.append(p["ratio_p50"])
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(labels)), 4))
        ax.bar(range(len(values)), values, color="tab:purple")
        ax.set_xticks(range(len(values)), labels, fontsize=7)
        ax.axhline(1.0, color="black", linewidth=0.8, label="1.0: sealing costs nothing")
        ax.axhline(1.3, color="grey", linestyle="--", linewidth=1, label="target < 1.3x")
        ax.set_ylim(0, max([1.45, *values]) * 1.05)
        ax.legend(fontsize=8, loc="upper right", ncol=2)
        ax.set_ylabel("sealed ÷ unsealed")
        ax.set_title("The cost of sealing (target < 1.3x)")
        save(fig, "privacy")
    return made


# --- the page -------------------------------------------------------------------------------


def render(result: dict[str, Any], images: dict[str, str] | None = None,
           json_path: str | None = None) -> str:
    """The Markdown page for ``result``."""
    images = images or {}
    parts = [
        "# Benchmarks",
        "Retrieval quality on LoCoMo, speed and scale, and what privacy costs, measured by "
        "`python -m benchmarks` (add `--size smoke` for the tiny size CI runs; "
        "`--report-only FILE` rebuilds this page from a result file). This page is generated; "
        "the analysis at the end is `benchmarks/notes.md`. Targets are reported, not enforced, "
        "and the benchmarks are not timed tests.",
    ]
    if json_path:
        parts.append(f"Result file: [`{json_path}`](../{json_path}). Run `{result['name']}`, "
                     f"{result.get('seconds', 0) / 60:.0f} minutes.")
    parts += ["## Machine", _machine(result), "## Targets", _targets(result)]
    if "locomo" in result:
        parts += ["## Retrieval quality (LoCoMo)", _locomo(result, images)]
    if "speed" in result:
        parts += ["## Speed and scale", _speed(result, images)]
    if NOTES.exists():
        parts.append(NOTES.read_text(encoding="utf-8").strip())
    return "\n\n".join(parts) + "\n"


def write(result: dict[str, Any], page: Path, *, plots: bool = True,
          json_path: Path | None = None) -> None:
    """Write the page (and its plots beside it, in ``<page stem>/``)."""
    images: dict[str, str] = {}
    if plots:
        images = _plots(result, page.parent / page.stem, page.stem)
    shown = None
    if json_path is not None:
        root = page.parent.parent
        try:
            shown = os.path.relpath(json_path, root)
        except ValueError:
            shown = str(json_path)
    page.write_text(render(result, images, shown), encoding="utf-8")
