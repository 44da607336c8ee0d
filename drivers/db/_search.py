"""BM25 for the db driver, computed in the database and equal to :func:`bm25_rank`.

A search runs in one read transaction (one snapshot):

1. One statement computes N and the summed document length of the rows the filter selects,
   a per-document aggregate of the postings of the query's blind terms (materialised, as it
   is read twice), each query term group's document frequency among those rows, and every
   matching document's BM25 raw score; it returns the best ``k + 16`` with their counts and
   the statistics.
2. The candidates are re-scored in Python with the reference's own arithmetic (the same
   floating-point operations in the same order), and sorted with its tie order (trust,
   ``recorded_at``, memory id). If a document left out by the ``LIMIT`` could still tie
   with or beat the k-th (its SQL score within a relative 1e-9 of it, the bound on how far
   the database's float arithmetic may stray), every document scoring that high is fetched
   and re-scored too, so the result is exact, never approximately right.

Only identifiers, term counts, lengths and tie keys cross the wire; the caller loads the
final ``k`` rows whole. Queries with more than 64 distinct term groups, or a group that
repeats a token, take the plain path: per-token counts of every matching document, ranked
in Python (still nothing but counts leaves the database).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    and_,
    case,
    cast,
    func,
    literal,
    select,
    true,
)

from mainsdk_memory.drivers._protocol import BM25_B, BM25_K1, TRUST_RANK, Filter
from mainsdk_memory.drivers.db._schema import POSTINGS, VERSIONS

__all__ = ["rank"]

_MAX_SQL_GROUPS = 64
_MARGIN = 16
_EPSILON = 1e-9

Key = tuple[str, int]
"""A version: (memory id, version)."""


@dataclass(frozen=True, slots=True)
class _Candidate:
    key: Key
    score: float
    raw: float
    order: tuple[int, float, str]


def _norm(length: int, avgdl: float) -> float:
    return BM25_K1 * (1.0 - BM25_B + BM25_B * length / avgdl)


def _raw(counts: Sequence[int], idf: Sequence[float], norm: float) -> float:
    # bm25_rank's sum, term for term: zero counts are skipped, not added as 0.0.
    return sum(
        w * (tf * (BM25_K1 + 1.0)) / (tf + norm) for w, tf in zip(idf, counts, strict=True) if tf
    )


def _candidate(
    key: Key,
    counts: Sequence[int],
    length: int,
    trust: str,
    recorded_at: datetime,
    idf: Sequence[float],
    avgdl: float,
    ceiling: float,
) -> _Candidate:
    raw = _raw(counts, idf, _norm(length, avgdl))
    return _Candidate(
        key=key,
        score=min(1.0, raw / ceiling),
        raw=raw,
        order=(TRUST_RANK.get(trust, 0), recorded_at.timestamp(), key[0]),
    )


def _best(candidates: list[_Candidate], top_k: int) -> list[_Candidate]:
    # bm25_rank's order: score, then trust, recorded_at and memory id, all descending.
    return sorted(candidates, key=lambda c: (c.score, c.order), reverse=True)[:top_k]


def _idf(n_docs: int, df: Sequence[int]) -> list[float]:
    return [math.log(1.0 + (n_docs - d + 0.5) / (d + 0.5)) for d in df]


def _join_scope(where: Filter, tokens: list[str], scope: list[ColumnElement[bool]]) -> Any:
    """Postings of ``tokens`` in the rows the filter selects, joined to their versions."""
    v, p = VERSIONS.c, POSTINGS.c
    return (
        select()
        .select_from(POSTINGS)
        .join(
            VERSIONS,
            and_(
                v.tenant == p.tenant,
                v.app == p.app,
                v.memory_id == p.memory_id,
                v.version == p.version,
            ),
        )
        .where(
            p.tenant == where.tenant,
            p.app == where.app,
            p.subject.in_(where.subjects),
            p.term.in_(tokens),
            *scope,
        )
    )


def rank(
    connection: Connection,
    where: Filter,
    scope: list[ColumnElement[bool]],
    query: Sequence[Collection[str]],
    top_k: int,
) -> list[tuple[Key, float]]:
    """The top ``k`` versions for ``query`` among the rows ``scope`` selects, with scores."""
    groups = [list(group) for group in query]
    tokens = sorted({token for group in groups for token in group})
    if not tokens:
        return []
    distinct = list(dict.fromkeys(frozenset(group) for group in groups))
    if len(distinct) > _MAX_SQL_GROUPS or any(len(set(g)) != len(g) for g in groups):
        return _rank_in_python(connection, where, scope, groups, tokens, top_k)
    slot = {group: index for index, group in enumerate(distinct)}
    slots = [slot[frozenset(group)] for group in groups]
    multiplicity = [slots.count(index) for index in range(len(distinct))]

    v, p = VERSIONS.c, POSTINGS.c
    # One statement: corpus statistics, per-document counts of each distinct group (used
    # twice, so materialised), document frequencies, and the raw score.
    stats = (
        select(func.count().label("n"), func.coalesce(func.sum(v.length), 0).label("total"))
        .where(*scope)
        .cte("stats")
    )
    docs = (
        _join_scope(where, tokens, scope)
        .with_only_columns(
            p.memory_id,
            p.version,
            v.length,
            v.trust,
            v.recorded_at,
            *(
                func.sum(case((p.term.in_(sorted(group)), p.tf), else_=0)).label(f"tf{i}")
                for i, group in enumerate(distinct)
            ),
            maintain_column_froms=True,
        )
        .group_by(p.memory_id, p.version, v.length, v.trust, v.recorded_at)
        .cte("docs")
    )
    tf = [docs.c[f"tf{i}"] for i in range(len(distinct))]
    dfs = select(
        *(
            func.coalesce(func.sum(case((column > 0, 1), else_=0)), 0).label(f"df{i}")
            for i, column in enumerate(tf)
        )
    ).cte("dfs")

    def real(value: float) -> ColumnElement[Any]:
        return literal(value, Float)

    n = cast(stats.c.n, Float)
    avgdl = case((stats.c.total == 0, real(1.0)), else_=cast(stats.c.total, Float) / n)
    norm = real(BM25_K1) * (real(1.0 - BM25_B) + real(BM25_B) * docs.c.length / avgdl)
    total: ColumnElement[Any] | None = None
    for index, column in enumerate(tf):
        df = dfs.c[f"df{index}"]
        idf = func.ln(real(1.0) + (n - df + real(0.5)) / (df + real(0.5)))
        term = case(
            (
                column > 0,
                real(multiplicity[index]) * idf * (column * real(BM25_K1 + 1.0)) / (column + norm),
            ),
            else_=real(0.0),
        )
        total = term if total is None else total + term
    assert total is not None  # noqa: S101 - there is at least one group
    ranked = (
        select(docs, stats.c.n, stats.c.total, *dfs.c, total.label("raw"))
        .select_from(docs.join(stats, true()).join(dfs, true()))
        .subquery("ranked")
    )
    limit = top_k + _MARGIN
    rows = connection.execute(select(ranked).order_by(ranked.c.raw.desc()).limit(limit)).all()
    if not rows:
        return []
    # Python redoes the arithmetic from the counts, exactly as bm25_rank does.
    first = rows[0]._mapping
    n_docs, total_length = int(first["n"]), int(first["total"])
    avgdl_exact = total_length / n_docs or 1.0
    idf_exact = _idf(n_docs, [int(first[f"df{s}"]) for s in slots])
    ceiling = sum(idf_exact) * (BM25_K1 + 1.0)
    if ceiling <= 0.0:
        return []

    def candidates(found_rows: Sequence[Any]) -> list[_Candidate]:
        found = []
        for row in found_rows:
            values = row._mapping
            counts = [int(values[f"tf{s}"]) for s in slots]
            if any(counts):  # as in bm25_rank, a document with no query term is left out
                found.append(
                    _candidate(
                        (row.memory_id, row.version),
                        counts,
                        row.length,
                        row.trust,
                        row.recorded_at,
                        idf_exact,
                        avgdl_exact,
                        ceiling,
                    )
                )
        return found

    best = _best(candidates(rows), top_k)
    if len(rows) == limit and len(best) == top_k:
        kth = best[-1]
        left_out = min(1.0, float(rows[-1].raw) * (1.0 + _EPSILON) / ceiling)
        if left_out >= kth.score:
            # A left-out document could tie or beat the k-th: fetch all that could.
            threshold = min(kth.raw, ceiling) * (1.0 - _EPSILON)
            rows = connection.execute(select(ranked).where(ranked.c.raw >= real(threshold))).all()
            best = _best(candidates(rows), top_k)
    return [(c.key, c.score) for c in best]


def _rank_in_python(
    connection: Connection,
    where: Filter,
    scope: list[ColumnElement[bool]],
    groups: list[list[str]],
    tokens: list[str],
    top_k: int,
) -> list[tuple[Key, float]]:
    """The plain path: per-token counts of every matching document, ranked in Python."""
    v, p = VERSIONS.c, POSTINGS.c
    n_docs, total_length = connection.execute(
        select(func.count(), func.coalesce(func.sum(v.length), 0)).where(*scope)
    ).one()
    n_docs, total_length = int(n_docs), int(total_length)
    if not n_docs:
        return []
    avgdl = total_length / n_docs or 1.0
    result = connection.execute(
        _join_scope(where, tokens, scope).with_only_columns(
            p.memory_id,
            p.version,
            p.term,
            p.tf,
            v.length,
            v.trust,
            v.recorded_at,
            maintain_column_froms=True,
        )
    )
    docs: dict[Key, tuple[int, str, datetime, dict[str, int]]] = {}
    for memory_id, version, term, tf, length, trust, recorded_at in result:
        doc = docs.setdefault((memory_id, version), (length, trust, recorded_at, {}))
        doc[3][term] = tf
    counted = {
        key: [sum(terms.get(token, 0) for token in group) for group in groups]
        for key, (_length, _trust, _recorded, terms) in docs.items()
    }
    df = [sum(1 for counts in counted.values() if counts[i]) for i in range(len(groups))]
    idf = _idf(n_docs, df)
    ceiling = sum(idf) * (BM25_K1 + 1.0)
    if ceiling <= 0.0:
        return []
    found = [
        _candidate(key, counted[key], length, trust, recorded_at, idf, avgdl, ceiling)
        for key, (length, trust, recorded_at, _terms) in docs.items()
        if any(counted[key])
    ]
    return [(c.key, c.score) for c in _best(found, top_k)]
