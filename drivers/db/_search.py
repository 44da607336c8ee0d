"""BM25 for the db driver, computed in the database and equal to :func:`bm25_rank`.

A search runs in one read transaction (one snapshot):

1. One statement reads the filter's scope once, from the covering index of
   ``memory_versions`` (document ids and lengths; materialised, as it is read twice): N and
   the summed length come from it, and it is the set the postings of the query's blind terms
   are kept to. The postings carry each version's length, so the per-document counts of each
   query term group (materialised, also read twice) need no other table; then each group's
   document frequency, the idf and average length once (materialised), and every matching
   document's BM25 raw score. The best ``k + 16`` documents are joined to their versions for
   the tie keys and returned with their counts and the statistics.
2. The candidates are re-scored in Python by the BM25 kernel
   (:mod:`mainsdk_memory.drivers._bm25`, the code the reference ranking runs) and ordered by
   its tie key (trust, ``recorded_at``, memory id). If a document left out by the ``LIMIT``
   could still tie with or beat the k-th (its SQL score within a relative 1e-9 of it, the
   bound on how far the database's float arithmetic may stray), every document scoring that
   high is fetched and re-scored too, so the result is exact, never approximately right.

Only document ids, term counts, lengths and tie keys cross the wire; the caller loads the
final ``k`` rows whole. A candidate whose tie key cannot be decoded (a damaged row,
:mod:`._damage`) is left out: only then are the candidates fetched again without tie keys,
and the keys one document at a time; documents the caller found damaged are left out too
(``skip``). A token repeated in a group counts once per repetition, as in the
reference. Queries with more than 64 distinct term groups take the plain path: per-token
counts of every matching document, ranked in Python (still nothing but counts leaves the
database).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    Integer,
    Select,
    and_,
    bindparam,
    case,
    cast,
    func,
    literal,
    select,
    true,
)

from mainsdk_memory.drivers import _bm25 as bm25
from mainsdk_memory.drivers._bm25 import BM25_B, BM25_K1
from mainsdk_memory.drivers._protocol import Filter
from mainsdk_memory.drivers.db import _packs
from mainsdk_memory.drivers.db._damage import DECODE_ERRORS, fetch_each
from mainsdk_memory.drivers.db._schema import POSTINGS, VERSIONS
from mainsdk_memory.drivers.db._scope import (
    ScopeShape,
    same_tenant,
    scope_clauses,
    scope_params,
    scope_shape,
)

__all__ = ["rank"]

_MAX_SQL_GROUPS = 64
_MARGIN = 16
_EPSILON = 1e-9

Doc = int
"""A version's document id (``memory_versions.doc``)."""


@dataclass(frozen=True, slots=True)
class _Candidate:
    doc: Doc
    score: float
    raw: float
    order: bm25.OrderKey


def _candidate(
    doc: Doc,
    memory_id: str,
    counts: Sequence[int],
    length: int,
    trust: str,
    recorded_at: datetime,
    weights: bm25.Weights,
) -> _Candidate | None:
    """The candidate, or ``None`` if its tie keys are damaged (cells of the wrong type)."""
    if not (
        type(memory_id) is str and type(trust) is str and isinstance(recorded_at, datetime)
    ):
        return None
    raw = bm25.raw_score(weights, counts, length)
    return _Candidate(
        doc=doc,
        score=bm25.normalised(weights, raw),
        raw=raw,
        order=bm25.order_key(trust, recorded_at, memory_id),
    )


def _best(candidates: list[_Candidate], top_k: int) -> list[_Candidate]:
    # The kernel's order: score, then trust, recorded_at and memory id, all descending.
    scored = [(c.score, c.order, position) for position, c in enumerate(candidates)]
    return [candidates[position] for _score, _order, position in bm25.best(scored, top_k)]


def _real(value: float) -> ColumnElement[Any]:
    return literal(value, Float)


GroupShape = tuple[int, ...]
"""The repetition counts a query group's tokens have (ascending, distinct): ``(1,)`` for a
group whose tokens appear once each."""


def _in_scope(dialect: str, scope_docs: Any) -> ColumnElement[bool]:
    """Postings whose version is one of ``scope_docs`` (a one-column select of doc ids)."""
    doc: ColumnElement[Any] = POSTINGS.c.doc
    if dialect == "sqlite":
        # An expression, not the column: SQLite would otherwise seek the primary key once per
        # scope id, term and subject; this way it reads each term's postings in one range and
        # probes the scope's ids.
        doc = doc + 0
    return doc.in_(scope_docs)


@functools.lru_cache(maxsize=4)
def _tie_keys_statement(dialect: str) -> Select[Any]:
    """The tie keys of versions, by document id."""
    v = VERSIONS.c
    return select(v.doc, v.memory_id, v.trust, v.recorded_at).where(
        same_tenant(dialect, bindparam("tenant")), v.doc.in_(bindparam("docs", expanding=True))
    )


@dataclass(frozen=True, slots=True)
class _Ranking:
    """The statements of one shape of filter and query, with and without tie keys."""

    top: Select[Any]
    """The best ``:limit`` documents, with their tie keys."""
    block: Select[Any]
    """Every document whose SQL score is at least ``:threshold``, with their tie keys."""
    top_plain: Select[Any]
    block_plain: Select[Any]
    """The same without tie keys (read only when a tie key cannot be decoded)."""


def _fetch(
    connection: Connection,
    tied: Select[Any],
    plain: Select[Any],
    params: Mapping[str, Any],
) -> tuple[list[Mapping[Any, Any]], set[Doc]]:
    """The rows of ``tied``, and the documents left out of them: if a tie key cannot be
    decoded, the rows of ``plain`` with the tie keys read one document at a time, without the
    documents whose keys are damaged."""
    result = connection.execute(tied, params)
    try:
        return [row._mapping for row in result.all()], set()
    except DECODE_ERRORS:
        pass
    found = connection.execute(plain, params).all()
    keys, broken = fetch_each(
        connection,
        _tie_keys_statement(connection.dialect.name),
        {"tenant": params["tenant"]},
        [row.doc for row in found],
    )
    by_doc = {key.doc: key._mapping for key in keys}
    return [{**row._mapping, **by_doc[row.doc]} for row in found if row.doc in by_doc], broken


@functools.lru_cache(maxsize=256)
def _statements(dialect: str, shape: ScopeShape, groups: tuple[GroupShape, ...]) -> _Ranking:
    """The ranking statement (best ``:limit``) and the tie-block statement (every document
    whose SQL score is at least ``:threshold``) for one shape of filter and query.

    Every value is a bind parameter (:func:`_params`), so a statement is built once per shape
    and only executed afterwards.
    """
    v, p = VERSIONS.c, POSTINGS.c
    # The filter's scope, once: an index-only scan of memory_versions_cover.
    scoped = (
        select(v.doc, v.length)
        .where(*scope_clauses(shape, dialect))
        .cte("scoped")
        .prefix_with("MATERIALIZED")
    )
    stats = select(
        func.count().label("n"), func.coalesce(func.sum(scoped.c.length), 0).label("total")
    ).cte("stats")
    postings: Any = POSTINGS
    in_scope = [_in_scope(dialect, select(scoped.c.doc))]
    if dialect != "sqlite":
        # A join, not IN: PostgreSQL need not make the scope's ids unique first.
        postings = POSTINGS.join(scoped, scoped.c.doc == p.doc)
        in_scope = []

    def count_of(index: int, repeats: GroupShape) -> ColumnElement[Any]:
        # A posting's count towards the group: its tf times its token's repetitions there.
        whens = [
            (
                p.term.in_(bindparam(f"group_{index}_{repeat}", expanding=True)),
                p.tf if repeat == 1 else p.tf * repeat,
            )
            for repeat in repeats
        ]
        return func.sum(case(*whens, else_=0))

    docs = (
        select(
            p.doc,
            p.length,
            *(count_of(index, repeats).label(f"tf{index}") for index, repeats in enumerate(groups)),
        )
        .select_from(postings)
        .where(
            p.tenant == bindparam("tenant"),
            p.app == bindparam("app"),
            p.subject.in_(bindparam("subjects", expanding=True)),
            p.term.in_(bindparam("tokens", expanding=True)),
            *in_scope,
        )
        .group_by(p.doc, p.length)
        .cte("docs")
        .prefix_with("MATERIALIZED")
    )
    tf = [docs.c[f"tf{i}"] for i in range(len(groups))]
    dfs = select(
        *(
            func.coalesce(func.sum(case((count > 0, 1), else_=0)), 0).label(f"df{i}")
            for i, count in enumerate(tf)
        )
    ).cte("dfs")
    n = cast(stats.c.n, Float)
    # The idf of each group and the average length, computed once, not once per document.
    weights = (
        select(
            stats.c.n,
            stats.c.total,
            *dfs.c,
            case((stats.c.total == 0, _real(1.0)), else_=cast(stats.c.total, Float) / n).label(
                "avgdl"
            ),
            *(
                func.ln(
                    _real(1.0) + (n - dfs.c[f"df{i}"] + _real(0.5)) / (dfs.c[f"df{i}"] + _real(0.5))
                ).label(f"idf{i}")
                for i in range(len(groups))
            ),
        )
        .select_from(stats.join(dfs, true()))
        .cte("weights")
        .prefix_with("MATERIALIZED")
    )
    w = weights.c
    norm = _real(BM25_K1) * (_real(1.0 - BM25_B) + _real(BM25_B) * docs.c.length / w.avgdl)
    total: ColumnElement[Any] | None = None
    for index, count in enumerate(tf):
        term = case(
            (
                count > 0,
                bindparam(f"times_{index}", type_=Float())
                * w[f"idf{index}"]
                * (count * _real(BM25_K1 + 1.0))
                / (count + norm),
            ),
            else_=_real(0.0),
        )
        total = term if total is None else total + term
    assert total is not None  # noqa: S101 - there is at least one group
    ranked = (
        select(docs, w.n, w.total, *(w[f"df{i}"] for i in range(len(groups))), total.label("raw"))
        .select_from(docs.join(weights, true()))
        .subquery("ranked")
    )

    def with_tie_keys(chosen: Any) -> Select[Any]:
        # The tie keys of the few chosen documents, from their versions (by tenant and doc).
        return select(chosen, v.memory_id, v.trust, v.recorded_at).select_from(
            chosen.join(VERSIONS, and_(v.tenant == bindparam("tenant"), v.doc == chosen.c.doc))
        )

    top = (
        select(ranked)
        .order_by(ranked.c.raw.desc())
        .limit(bindparam("limit", type_=Integer()))
        .subquery("top")
    )
    block = (
        select(ranked)
        .where(ranked.c.raw >= bindparam("threshold", type_=Float()))
        .subquery("block")
    )
    return _Ranking(with_tie_keys(top), with_tie_keys(block), select(top), select(block))


def rank(
    connection: Connection,
    where: Filter,
    query: Sequence[Collection[str]],
    top_k: int,
    *,
    skip: Collection[Doc] = frozenset(),
) -> list[tuple[Doc, float]]:
    """The top ``k`` documents for ``query`` among the rows ``where`` selects, with scores,
    without the documents in ``skip`` nor those whose tie keys are damaged (a damaged row
    still counts in N and the document frequencies: it is in the store)."""
    groups = [Counter(group) for group in query]
    tokens = sorted({token for group in groups for token in group})
    if not tokens:
        return []
    dialect = connection.dialect.name
    shape = scope_shape(where)
    params = dict(scope_params(where))
    distinct = list(dict.fromkeys(tuple(sorted(group.items())) for group in groups))
    ranking: Callable[[set[Doc]], tuple[list[tuple[Doc, float]], set[Doc]]]
    if _packs.eligible(where):
        ranking = functools.partial(
            _packs.rank,
            connection,
            where,
            params,
            query,
            top_k,
            tie_keys=_tie_keys_statement(dialect),
        )
    elif len(distinct) > _MAX_SQL_GROUPS:
        ranking = functools.partial(
            _rank_in_python, connection, dialect, shape, params, groups, tokens, top_k
        )
    else:
        slot = {group: index for index, group in enumerate(distinct)}
        slots = [slot[tuple(sorted(group.items()))] for group in groups]
        group_shapes: list[GroupShape] = []
        for index, group in enumerate(distinct):
            by_repeat: dict[int, list[str]] = {}
            for token, repeat in group:
                by_repeat.setdefault(repeat, []).append(token)
            group_shapes.append(tuple(sorted(by_repeat)))
            for repeat, members in by_repeat.items():
                params[f"group_{index}_{repeat}"] = sorted(members)
            params[f"times_{index}"] = float(slots.count(index))
        params["tokens"] = tokens
        statements = _statements(dialect, shape, tuple(group_shapes))
        ranking = functools.partial(_rank_in_sql, connection, statements, params, slots, top_k)
    skipped = set(skip)
    while True:
        ranked, damaged = ranking(skipped)
        if damaged <= skipped:
            return ranked
        skipped |= damaged  # ranked again without them: each round leaves out new ones


def _rank_in_sql(
    connection: Connection,
    statements: _Ranking,
    params: Mapping[str, Any],
    slots: Sequence[int],
    top_k: int,
    skip: Collection[Doc],
) -> tuple[list[tuple[Doc, float]], set[Doc]]:
    """The top ``k`` without ``skip``, and the documents found damaged on the way."""
    limit = top_k + _MARGIN + len(skip)  # a skipped document leaves room for the next
    rows, damaged = _fetch(
        connection, statements.top, statements.top_plain, {**params, "limit": limit}
    )
    if not rows:
        return [], damaged
    # Python redoes the arithmetic from the counts with the BM25 kernel, as bm25_rank does.
    first = rows[0]
    weights = bm25.weights(
        int(first["n"]), int(first["total"]), [int(first[f"df{s}"]) for s in slots]
    )
    if weights is None:
        return [], damaged
    ceiling = weights.ceiling

    def candidates(found_rows: Sequence[Mapping[Any, Any]]) -> list[_Candidate]:
        found = []
        for values in found_rows:
            counts = [int(values[f"tf{s}"]) for s in slots]
            # As in bm25_rank, a document with no query term is left out.
            if any(counts) and values["doc"] not in skip:
                candidate = _candidate(
                    values["doc"],
                    values["memory_id"],
                    counts,
                    values["length"],
                    values["trust"],
                    values["recorded_at"],
                    weights,
                )
                if candidate is None:
                    damaged.add(values["doc"])
                else:
                    found.append(candidate)
        return found

    best = _best(candidates(rows), top_k)
    if len(rows) + len(damaged) == limit and len(best) == top_k:
        kth = best[-1]
        lowest = min(float(row["raw"]) for row in rows)
        left_out = min(1.0, lowest * (1.0 + _EPSILON) / ceiling)
        if left_out >= kth.score:
            # A left-out document could tie or beat the k-th: fetch all that could.
            threshold = min(kth.raw, ceiling) * (1.0 - _EPSILON)
            rows, broken = _fetch(
                connection,
                statements.block,
                statements.block_plain,
                {**params, "threshold": threshold},
            )
            damaged |= broken
            best = _best(candidates(rows), top_k)
    return [(c.doc, c.score) for c in best], damaged


def _rank_in_python(
    connection: Connection,
    dialect: str,
    shape: ScopeShape,
    params: dict[str, Any],
    groups: list[Counter[str]],
    tokens: list[str],
    top_k: int,
    skip: Collection[Doc],
) -> tuple[list[tuple[Doc, float]], set[Doc]]:
    """The plain path: per-token counts of every matching document, ranked in Python; the
    top ``k`` without ``skip``, and the documents found damaged."""
    v, p = VERSIONS.c, POSTINGS.c
    scope = scope_clauses(shape, dialect)
    n_docs, total_length = connection.execute(
        select(func.count(), func.coalesce(func.sum(v.length), 0)).where(*scope), params
    ).one()
    n_docs, total_length = int(n_docs), int(total_length)
    if not n_docs:
        return [], set()
    result = connection.execute(
        select(p.doc, p.term, p.tf, p.length).where(
            p.tenant == bindparam("tenant"),
            p.app == bindparam("app"),
            p.subject.in_(bindparam("subjects", expanding=True)),
            p.term.in_(tokens),
            _in_scope(dialect, select(v.doc).where(*scope)),
        ),
        params,
    )
    docs: dict[Doc, tuple[int, dict[str, int]]] = {}
    for doc, term, tf, length in result:
        docs.setdefault(doc, (length, {}))[1][term] = tf
    counted = {
        doc: [sum(terms.get(token, 0) * repeat for token, repeat in g.items()) for g in groups]
        for doc, (_length, terms) in docs.items()
    }
    weights = bm25.weights(
        n_docs, total_length, bm25.document_frequencies(counted.values(), len(groups))
    )
    if weights is None:
        return [], set()
    scores = {
        doc: bm25.score(weights, counts, docs[doc][0])
        for doc, counts in counted.items()
        if any(counts)
    }
    if not scores:
        return [], set()
    # Only documents scoring at least the k-th best (skipped ones aside) can be in the
    # result: read their tie keys.
    scores = {doc: score for doc, score in scores.items() if doc not in skip}
    if not scores:
        return [], set()
    cut = sorted(scores.values(), reverse=True)[: max(top_k, 1)][-1]
    contenders = sorted(doc for doc, score in scores.items() if score >= cut)
    keys, damaged = fetch_each(
        connection, _tie_keys_statement(dialect), {"tenant": params["tenant"]}, contenders
    )
    found: list[_Candidate] = []
    for key in keys:
        doc = key.doc
        candidate = _candidate(
            doc, key.memory_id, counted[doc], docs[doc][0], key.trust, key.recorded_at, weights
        )
        if candidate is None:
            damaged.add(doc)
        else:
            found.append(candidate)
    return [(c.doc, c.score) for c in _best(found, top_k)], damaged
