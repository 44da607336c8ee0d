"""The benchmark suite still runs: ``python -m benchmarks --size smoke`` end to end.

Not a timed test: it checks the shape and sanity of the result (recall values in [0, 1],
percentiles in order, sealed BM25 equal to plaintext BM25 on the same normalised terms), never
how fast anything was. The LoCoMo data is read from ``../shared/data`` beside the checkout (or
``$MAINSDK_BENCH_DATA``); without it the test skips, except under ``CI=true``, where it fails.
matplotlib is not needed (``--no-plots``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA_ENV = "MAINSDK_BENCH_DATA"


def _data_file() -> Path:
    folder = os.environ.get(DATA_ENV)
    base = Path(folder) if folder else REPO.parent / "shared" / "data"
    return base / "locomo10.json"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    data = _data_file()
    if not data.is_file():
        message = f"LoCoMo data missing at {data}: the benchmark smoke run needs it"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    out = tmp_path_factory.mktemp("bench")
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--size", "smoke", "--no-plots",
         "--json", str(out / "smoke.json"), "--docs", str(out / "benchmarks.md"),
         "--workdir", str(out / "work")],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, DATA_ENV: str(data.parent)},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads((out / "smoke.json").read_text(encoding="utf-8"))
    return result, (out / "benchmarks.md").read_text(encoding="utf-8")


def _check_metrics(metrics: dict[str, Any]) -> None:
    assert metrics["n"] > 0
    for key in ("recall@1", "recall@5", "recall@10", "mrr@10"):
        assert 0.0 <= metrics[key] <= 1.0, key
    assert metrics["recall@1"] <= metrics["recall@5"] <= metrics["recall@10"]
    assert metrics["recall@1"] <= metrics["mrr@10"] <= metrics["recall@10"]


def _check_latency(stats: dict[str, Any]) -> None:
    assert stats["n"] > 0
    assert 0.0 < stats["p50_ms"] <= stats["p95_ms"] <= stats["p99_ms"] <= stats["max_ms"]


def test_the_result_describes_the_machine(smoke: tuple[dict[str, Any], str]) -> None:
    result, _ = smoke
    assert result["schema"] == 1
    assert result["name"] == "smoke"
    machine = result["machine"]
    assert machine["logical_cpus"] >= 1
    assert machine["python"].startswith("CPython") or machine["python"]
    for key in ("cpu_model", "ram_gib", "os", "date", "fsync_4k_ms"):
        assert machine[key], key


def test_locomo_rows_have_sane_metrics(smoke: tuple[dict[str, Any], str]) -> None:
    result, _ = smoke
    lo = result["locomo"]
    questions = lo["data"]["questions"]
    assert questions > 0
    rows = lo["results"]
    for name in ("rank_bm25", "plaintext-ours", "local", "sqlite"):
        assert rows[name]["status"] == "ok", name
        _check_metrics(rows[name]["overall"])
        assert rows[name]["overall"]["n"] == questions
        assert sum(c["n"] for c in rows[name]["by_category"].values()) == questions
        for per_category in rows[name]["by_category"].values():
            _check_metrics(per_category)
    for name in ("local-hybrid", "sqlite-hybrid"):
        assert rows[name]["status"] in {"ok", "not run"}
        if rows[name]["status"] == "not run":
            assert rows[name]["reason"]


def test_sealed_bm25_equals_plaintext_bm25_exactly(smoke: tuple[dict[str, Any], str]) -> None:
    result, _ = smoke
    lo = result["locomo"]
    plain = lo["results"]["plaintext-ours"]
    for driver in ("local", "sqlite"):
        assert lo["results"][driver]["overall"] == plain["overall"]
        assert lo["results"][driver]["by_category"] == plain["by_category"]
        compared = lo["sealed_equals_plaintext"][f"{driver} vs plaintext-ours"]
        assert compared["identical_rankings"] == compared["questions"] > 0
        assert compared["max_score_difference"] == 0.0
        assert compared["metrics_equal"] is True


def test_speed_numbers_are_in_order(smoke: tuple[dict[str, Any], str]) -> None:
    result, _ = smoke
    speed = result["speed"]
    plan = speed["plan"]
    for driver in ("local", "sqlite"):
        data = speed["drivers"][driver]
        assert data["write"]["n"] == plan["write_n"]
        for side in ("sealed", "unsealed"):
            assert data["write"][side]["per_s"] > 0
            _check_latency(data["write"][side])
            _check_latency(data["recall"][side])
        assert data["write"]["ratio_total_time"] > 0
        assert data["recall"]["ratio_p50"] > 0
        assert [p["memories"] for p in data["scale"]] == plan["scale"]
        for point in data["scale"]:
            _check_latency(point["sealed"])
        assert [g["memories"] for g in data["growth"]] == [plan["write_n"], *plan["scale"]]
        persons = data["persons"]
        assert persons["persons"] == plan["persons"]
        _check_latency(persons["recall"])
        _check_latency(persons["remember"])
        assert persons["erase"]["n"] == plan["erases"]
        assert data["forget"]["sealed"]["n"] == plan["forgets"]
    rss = speed["drivers"]["local"]["scale"][-1]["peak_rss"]
    assert rss["peak_mib"] >= rss["after_import_mib"] > 0
    bm25 = speed["bm25_blind_vs_plain"]
    assert bm25["queries_with_identical_scores"] == bm25["queries"] > 0


def test_hybrid_speed_is_measured_or_says_why(smoke: tuple[dict[str, Any], str]) -> None:
    """Hybrid recall (the model-free stand-in embedder) at every size, or "not run" + reason;
    MiniLM's per-query time, or "not run" + reason when the embeddings extra is missing."""
    result, page = smoke
    speed = result["speed"]
    plan = speed["plan"]
    for driver in ("local", "sqlite"):
        hybrid = speed["drivers"][driver]["hybrid"]
        assert hybrid["status"] in {"ok", "not run"}, hybrid
        if hybrid["status"] != "ok":
            assert hybrid["reason"]
            continue
        points = hybrid["points"]
        assert [p["memories"] for p in points] == [plan["write_n"], *plan["scale"]]
        for point in points:
            _check_latency(point["warm"])
            _check_latency(point["text_same_store"])
            assert point["first_recall_ms"] > 0
            assert point["vectors_cold_ms"] > 0
            assert point["vector_self_check"] is True  # bulk-sealed vectors open, are the texts'
            assert point["ratio_p50_vs_bm25"] > 0
        write = speed["drivers"][driver]["hybrid_write"]
        assert write["n"] == plan["write_n"]
        _check_latency(write["with_vectors"])
        assert "### hybrid recall (BM25 + vectors)" in page
    embedding = speed["embedding"]
    assert embedding["stand_in"]["status"] == "ok"
    _check_latency(embedding["stand_in"])
    assert embedding["minilm"]["status"] in {"ok", "not run"}
    if embedding["minilm"]["status"] == "ok":
        _check_latency(embedding["minilm"])
    else:
        assert embedding["minilm"]["reason"]


def test_targets_and_report_are_written(smoke: tuple[dict[str, Any], str]) -> None:
    result, page = smoke
    names = [target["target"] for target in result["targets"]]
    assert "LoCoMo recall@5 (local)" in names
    assert "sealing overhead on write (sqlite)" in names
    for target in result["targets"]:
        assert target["met"] in {True, False, None}
    for heading in ("## Machine", "## Targets", "## Retrieval quality (LoCoMo)",
                    "## Speed and scale", "### The cost of privacy"):
        assert heading in page
    assert "![" not in page  # --no-plots: no images, no matplotlib


def test_the_learn_benchmark_runs_quick_and_reports_its_structure(tmp_path: Path) -> None:
    """``python -m benchmarks.learn --quick`` (three conversations of the held-out set, the real
    ``learn`` on a local store, one timed round): the result holds recall and precision that
    add up, the chit-chat count and the speed with the machine. No score threshold."""
    out = tmp_path / "learn.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.learn", "--quick", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "| overall |" in done.stdout
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["benchmark"] == "learn"
    assert result["quick"] is True
    assert result["extractor"] == "rules"
    shape = result["set"]
    assert shape["conversations"] == 3
    assert shape["chit_chat_only"] == 1
    assert shape["labelled_facts"] > 0
    assert 0 < shape["user_turns"] < shape["turns"]
    accuracy = result["accuracy"]
    assert accuracy["labelled_facts"] == shape["labelled_facts"]
    overall = accuracy["overall"]
    assert overall["labelled"] == shape["labelled_facts"]
    for groups in ("per_kind", "per_role"):
        rows = accuracy[groups]
        assert sum(row["labelled"] for row in rows.values()) == overall["labelled"], groups
        assert sum(row["found"] for row in rows.values()) == overall["found"], groups
        assert sum(row["records"] for row in rows.values()) == overall["records"], groups
        assert sum(row["right"] for row in rows.values()) == overall["right"], groups
    for row in [overall, *accuracy["per_kind"].values(), *accuracy["per_role"].values()]:
        assert 0 <= row["found"] <= row["labelled"]
        assert 0 <= row["right"] <= row["records"]
        for name, part, whole in (("recall", "found", "labelled"),
                                  ("precision", "right", "records")):
            if row[whole]:
                assert row[name] == round(row[part] / row[whole], 3)
            else:
                assert row[name] is None
    assert {"fact", "preference", "event"} <= set(accuracy["per_kind"])
    assert {"user", "assistant", "tool"} <= set(accuracy["per_role"])
    chit = accuracy["chit_chat"]
    assert chit["conversations"] == 1
    assert chit["turns"] > 0
    assert chit["memories_formed"] >= 0
    assert accuracy["found_from_labelled_turn"] <= overall["found"]
    assert accuracy["found_with_labelled_kind"] <= overall["found"]
    speed = result["speed"]
    assert speed["driver"] == "local"
    assert speed["rounds"] == 1
    chit_timed = speed["timed_chit_chat_only"]
    assert chit_timed["calls"] == 1
    assert chit_timed["turns"] == chit["turns"]
    assert chit_timed["records"] >= 0
    for timed in (speed["timed"], speed["first_pass"]):
        assert timed["calls"] == 3
        assert timed["turns"] == shape["turns"]
        assert timed["user_turns"] == shape["user_turns"]
        assert timed["turns_per_s"] > 0
        assert timed["ms_per_1000_turns"] > 0
        assert timed["ms_per_1000_user_turns"] >= timed["ms_per_1000_turns"]
        assert (timed["ms_per_record"] is None) == (timed["records"] == 0)
        assert 0 < timed["per_call_ms"]["p50"] <= timed["per_call_ms"]["p95"]
        assert timed["per_call_ms"]["p95"] <= timed["per_call_ms"]["max"]
    machine = result["machine"]
    assert machine["logical_cpus"] >= 1
    assert machine["cpu_model"]
    assert "load_average_at_start" in machine
    assert "load_average_at_end" in machine


def test_engine_fts_runs_tiny_and_measures_both_sides(tmp_path: Path) -> None:
    """``python -m benchmarks.engine_fts`` at a tiny size (200 memories of one person, 20
    persons x 5, 5 queries; SQLite and the local driver): every goal has both sides
    measured, ratios are positive, the SDK's recalls equal plaintext BM25 on the sampled
    queries, the FTS5 baseline indexes exactly the SDK's terms, and the tables are rendered.
    No timing assertion."""
    data = _data_file()
    if not data.is_file():
        message = f"LoCoMo data missing at {data}: the engine_fts smoke run needs it"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    out = tmp_path / "engine-fts.json"
    page_file = tmp_path / "engine-fts.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.engine_fts", "--sizes", "200", "--queries", "5",
         "--persons", "20", "--per-person", "5", "--remember-n", "5", "--bulk-n", "50",
         "--exact-queries", "10", "--drivers", "sqlite,local", "--no-strace",
         "--out", str(out), "--markdown", str(page_file), "--workdir", str(tmp_path / "work")],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, DATA_ENV: str(data.parent)},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["benchmark"] == "engine-fts"
    machine = result["machine"]
    assert machine["logical_cpus"] >= 1
    assert "load_average_at_start" in machine
    assert "load_average_at_end" in machine
    assert result["data"]["texts"] >= 200
    assert set(result["sections"]) == {"recall", "local", "persons", "remember", "bulk",
                                       "vectors"}

    def both_sides(point: dict[str, Any], n: int) -> None:
        assert point["sdk"]["n"] == point["baseline_ms"]["n"] == n
        assert 0.0 < point["sdk"]["p50_ms"] <= point["sdk"]["p95_ms"]
        assert 0.0 < point["baseline_ms"]["p50_ms"] <= point["baseline_ms"]["p95_ms"]
        assert point["ratio_p50"] > 0 and point["ratio_p95"] > 0

    [sqlite] = result["recall"]["sqlite"]
    [local] = result["local"]["points"]
    for point in (sqlite, local):
        assert point["memories"] == 200
        both_sides(point, 5)
        assert point["exact"]["equal"] == point["exact"]["queries"] == 10
        assert point["exact"]["max_score_difference"] == 0.0
        assert point["same_terms"]["identical"] is True
        assert point["same_terms"]["sdk_terms"] > 0
        assert point["driver_search"]["p50_ms"] > 0.0
        assert 0.0 < point["driver_search_share_of_recall"] <= 1.0
        assert point["storage"]["ratio"] > 0
    assert sqlite["per_recall"]["begin"] >= 1
    cold = local["cold"]
    assert cold["first_recall_ms"] > 0 and cold["fts5_first_query_ms"] > 0
    assert cold["sdk"]["peak_mib"] >= cold["sdk"]["after_import_mib"] > 0
    assert cold["fts5"]["peak_mib"] > 0
    persons = result["persons"]["sqlite"]
    assert (persons["persons"], persons["memories_per_person"]) == (20, 5)
    both_sides(persons, 5)
    assert persons["storage"]["ratio"] > 0
    for driver in ("sqlite", "local"):
        remember = result["remember"][driver]
        both_sides(remember, 5)
        bulk = result["bulk"][driver]
        assert bulk["memories"] == 50
        assert len(bulk["baseline_per_s"]) == 2 and min(bulk["baseline_per_s"]) > 0
        for side in ("embedder=None", "default embedder"):
            assert bulk[side]["per_s"] > 0 and bulk[side]["ratio_baseline_over_sdk"] > 0
        [vectors] = result["vectors"][driver]
        assert vectors["embedder"]
        for side in ("hybrid", "text_same_store", "numpy_brute_force"):
            assert vectors[side]["n"] == 5 and vectors[side]["p50_ms"] > 0
    assert result["remember"]["sqlite"]["per_remember"]["begin"] >= 1
    assert result["remember"]["local"]["python_fsyncs_per_remember"] >= 1  # durable
    names = {goal["goal"]: goal for goal in result["goals"]}
    for goal in names.values():
        assert goal["met"] in {True, False, None}
    assert names["recall equals plaintext BM25, 200 (sqlite)"]["met"] is True
    assert names["local recall equals plaintext BM25, 200"]["met"] is True
    assert "recall ÷ FTS, 200 memories (sqlite)" in names
    assert names["local warm recall ÷ bm25s, 200"]["met"] is None or result["bm25s"] == "installed"
    page = page_file.read_text(encoding="utf-8")
    for heading in ("### Goals", "### Recall, one person", "### The local driver",
                    "### Many persons", "### remember", "### Bulk write", "### Hybrid recall",
                    "### Storage"):
        assert heading in page, heading
