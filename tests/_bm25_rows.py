"""Stored rows made straight from term lists, for ranking tests that bypass the SDK."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mainsdk_memory.drivers import StoredRow

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def rows_of(documents: list[list[str]]) -> list[StoredRow]:
    """One current row per document (its terms as they are stored: counted), the later
    documents recorded later (BM25's tie order puts them first)."""
    rows = []
    for i, terms in enumerate(documents):
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        rows.append(
            StoredRow(
                tenant="t", app="a", subject="p_x", memory_id=f"mem_{i:026d}", version=1,
                kind="fact", labels=("personal",), trust="inferred", agent="bot", session=None,
                session_only=False, pinned=False, created_at=T0, recorded_at=T0 + timedelta(i),
                valid_from=T0, valid_to=None, sealed=b"x", terms=counts, length=len(terms),
            )
        )
    return rows
