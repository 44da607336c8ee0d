"""Blind-index BM25 ranks exactly as plaintext BM25 (rank-bm25) on the same normalized terms."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _bm25_rows import rows_of
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from mainsdk_memory import Memory, tenant
from mainsdk_memory._text import index_terms
from mainsdk_memory.drivers import BM25_B, BM25_K1, StoredRow, bm25_rank
from mainsdk_memory.keys import SubjectKeys


class PlainBM25(BM25Okapi):
    """rank-bm25's Okapi scorer with the non-negative idf the SDK documents."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {
            word: math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
            for word, freq in nd.items()
        }


WORDS = "apple banana cherry date elder fig grape honey iris jade kiwi lemon mango".split()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _rows(docs: list[list[str]], blind: Callable[[str], str]) -> list[StoredRow]:
    return rows_of([[blind(term) for term in terms] for terms in docs])


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12), min_size=1,
                  max_size=25),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
)
def test_blind_ranking_equals_plaintext_bm25(docs: list[list[str]], query: list[str]) -> None:
    keys = SubjectKeys(bytes(range(32)), "test")
    rows = _rows(docs, keys.blind)
    ranked = bm25_rank(rows, [{keys.blind(term)} for term in query], top_k=len(rows))
    plain = PlainBM25(docs, k1=BM25_K1, b=BM25_B).get_scores(query)
    ceiling = sum(
        math.log(1.0 + (len(docs) - df + 0.5) / (df + 0.5)) * (BM25_K1 + 1.0)
        for df in (sum(term in doc for doc in docs) for term in query)
    )
    expected = {f"mem_{i:026d}": score / ceiling for i, score in enumerate(plain) if score > 0}
    assert {row.memory_id: score for row, score in ranked} == pytest.approx(expected, abs=1e-12)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < score <= 1.0 for score in scores)
    # Ties go to the newer memory first.
    for (a, sa), (b, sb) in itertools.pairwise(ranked):
        if sa == sb:
            assert a.recorded_at >= b.recorded_at


def test_recall_through_the_sdk_matches_plaintext_bm25(store_url: str, keys_path: Path) -> None:
    rng = random.Random(7)
    vocabulary = ("garden tomato bicycle harbour violin pepper winter lantern ferry "
                  "pottery glacier mosaic orchard").split()
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(3, 9))) for _ in range(40)]
    times = iter(T0 + timedelta(seconds=i) for i in range(1000))
    with Memory.open(store_url, keys=keys_path, app="a",
                     clock=lambda: next(times)) as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        ids = [ada.remember(text, formation=False).id for text in texts]  # as they are
        query = "tomato harbour violin lantern"
        hits = ada.recall(query, top_k=40, mode="text", ranking="relevance")
    corpus = [index_terms(text) for text in texts]
    plain = PlainBM25(corpus, k1=BM25_K1, b=BM25_B).get_scores(index_terms(query))
    expected = sorted(
        ((score, i) for i, score in enumerate(plain) if score > 0),
        key=lambda pair: (-pair[0], -pair[1]),  # ties: the later (newer) memory first
    )
    assert [hit.record.id for hit in hits] == [ids[i] for _, i in expected]
