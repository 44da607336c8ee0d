"""The second pass of hybrid recall (ADR 0085): a calibrated relevance, a floor for what only
the vectors found, and weights that the fitting script reproduces from its training set."""

from __future__ import annotations

import pytest

from mainsdk_memory import Memory, tenant
from mainsdk_memory import _rerank as rerank
from mainsdk_memory._text import query_terms
from mainsdk_memory.embeddings import StaticEmbedder

MODEL = rerank.model_for(StaticEmbedder.name)


def _features(**changes: float) -> rerank.Features:
    base = {"bm25": 0.5, "cosine": 0.3, "cosine_gap": -0.05, "coverage": 0.5, "fused": 0.5}
    return rerank.Features(**{**base, **changes})


def test_the_default_embedder_has_a_model_and_others_keep_the_first_pass() -> None:
    assert MODEL is not None
    assert 0.0 < MODEL.floor < 1.0
    assert rerank.model_for("hashing-v1") is None


def test_relevance_is_a_probability_that_rises_with_coverage_and_closeness() -> None:
    assert MODEL is not None
    low = MODEL.relevance(_features(coverage=0.0))
    high = MODEL.relevance(_features(coverage=1.0))
    assert 0.0 < low < high < 1.0
    behind = MODEL.relevance(_features(cosine_gap=-0.3))
    nearest = MODEL.relevance(_features(cosine_gap=0.0))
    assert behind < nearest
    for extreme in (-1e6, 1e6):  # no overflow either way
        assert 0.0 <= MODEL.relevance(_features(fused=extreme)) <= 1.0


def test_coverage_counts_query_words_not_their_alternatives() -> None:
    asked = query_terms("wohnen Berlin", "german")
    assert rerank.coverage(asked, ["wohnt", "\x00pre:wohn", "berlin"]) == 1.0
    assert rerank.coverage(asked, ["berlin"]) == 0.5
    assert rerank.coverage([], ["berlin"]) == 0.0


def test_a_term_match_is_always_kept_and_the_answer_comes_first(memory: Memory) -> None:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        whatsapp = ada.remember("Ada prefers WhatsApp over email.")
        ada.remember("Ada's daughter is called Mia.")
        ada.remember("Ada ran the Lisbon half marathon in 2024.")
        hits = ada.recall("how do we reach her?", ranking="relevance")
        assert hits[0].record.id == whatsapp.id
        assert all(0.0 <= hit.score <= 1.0 for hit in hits)
        # A word in common keeps a memory however weak its relevance.
        assert [hit.record.id for hit in ada.recall("email", ranking="relevance")][:1] == [
            whatsapp.id
        ]


def test_the_floor_leaves_out_what_only_the_vectors_found(memory: Memory) -> None:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        for text in ("Ada prefers WhatsApp over email.", "Ada's daughter is called Mia.",
                     "Ada ran the Lisbon half marathon in 2024."):
            ada.remember(text)
        everything = ada.recall("quantum chromodynamics lecture", mode="vector", top_k=3)
        assert len(everything) == 3  # the vectors alone always have neighbours
        kept = ada.recall("quantum chromodynamics lecture", top_k=3, ranking="relevance")
        assert len(kept) < 3  # no word in common: the floor leaves the unrelated ones out
        assert {hit.record.id for hit in kept} < {hit.record.id for hit in everything}


def test_the_fitting_script_reproduces_the_shipped_weights(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tools import fit_reranker

    assert fit_reranker.main([]) == 0
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert MODEL is not None
    weights = ", ".join(f"{value:.4f}" for value in MODEL.weights)
    assert f"weights=({weights})" in printed
    assert f"bias={MODEL.bias:.4f}" in printed
    assert f"floor={MODEL.floor:.3f}" in printed


def test_the_kept_candidates_keep_their_first_pass_order_and_scores(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        for text in ("Ada prefers WhatsApp over email.", "Ada's daughter is called Mia.",
                     "Ada ran the Lisbon half marathon in 2024.", "Ada's email is on file."):
            ada.remember(text)
        query = "how do we reach her by email?"
        second = [(h.record.id, h.score) for h in ada.recall(query, ranking="relevance")]
        monkeypatch.setattr(rerank, "model_for", lambda _name: None)
        first = [(h.record.id, h.score) for h in ada.recall(query, ranking="relevance")]
    assert second  # the pass only leaves candidates out: the rest are the first pass's
    assert len(second) < len(first)  # it did leave some out
    assert [pair for pair in first if pair in second] == second


def test_a_word_match_is_never_crowded_out_by_vector_only_neighbours(memory: Memory) -> None:
    """The weakest BM25 match has bm25' = 0 and may sit below many vector-only neighbours in
    the fused order; those the pass leaves out make room, pool after pool."""
    drinks = ("chamomile infusion", "oolong brew", "matcha latte", "herbal tisane",
              "jasmine infusion", "earl grey cup", "rooibos brew", "mint infusion")
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        for day in range(60):
            ada.remember(f"Ada sipped {drinks[day % len(drinks)]} on day {day}.")
        tea = ada.remember("Ada's tea is green.")
        umbrella = ada.remember("Borrowed a green umbrella from Mike at the station.")
        text = [h.record.id for h in ada.recall("green tea", mode="text", ranking="relevance")]
        assert text == [tea.id, umbrella.id]
        hybrid = [h.record.id for h in ada.recall("green tea", top_k=5, ranking="relevance")]
        assert set(text) <= set(hybrid)
