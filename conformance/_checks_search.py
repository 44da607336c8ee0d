"""Ranking checks: search() must equal :func:`bm25_rank` over the filtered rows, exactly."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import replace

from mainsdk_memory.drivers import TENANT_SUBJECT, Filter, StoredRow, bm25_rank

from ._compare import expect_same_row, label
from ._model import CheckFailed
from ._registry import CheckContext, check
from ._rows import Scope

__all__: list[str] = []

#: Scores may differ from the reference by float rounding only (a driver may sum in SQL).
SCORE_TOLERANCE = 1e-9

Query = Sequence[Collection[str]]


def _score_problem(hits: list[tuple[StoredRow, float]]) -> str | None:
    for position, hit in enumerate(hits, 1):
        if not isinstance(hit, tuple) or len(hit) != 2:
            return f"hit {position} is not a (row, score) pair"
        score = hit[1]
        if isinstance(score, bool) or not isinstance(score, float | int):
            return f"the score of hit {position} is a {type(score).__name__}, not a float"
        if math.isnan(score) or not 0.0 <= score <= 1.0:
            return f"the score of hit {position} is {score!r}, outside [0, 1]"
    return None


def _expect_well_formed(hits: list[tuple[StoredRow, float]], what: str, top_k: int) -> None:
    """Fail unless ``hits`` are at most ``top_k`` pairs with scores in [0, 1], best first."""
    problem = _score_problem(hits)
    if problem is not None:
        raise CheckFailed(f"search() for {what}: {problem}")
    if len(hits) > top_k:
        raise CheckFailed(f"search() for {what} returned {len(hits)} hits for top_k={top_k}")
    scores = [score for _, score in hits]
    if scores != sorted(scores, reverse=True):
        raise CheckFailed(f"search() for {what} returned hits unsorted: scores must not increase")


def _expect_reference(
    ctx: CheckContext, where: Filter, stored: list[StoredRow], query: Query, top_k: int, what: str
) -> int:
    """Fail unless search() equals bm25_rank over the stored rows ``where`` matches."""
    want = bm25_rank([row for row in stored if where.matches(row)], query, top_k)
    got = ctx.driver.search(where, query, top_k=top_k)
    _expect_well_formed(got, what, top_k)
    wanted_ids = {row.memory_id for row, _ in want}
    for position, ((row, score), (ref, ref_score)) in enumerate(zip(got, want, strict=False), 1):
        if row.memory_id != ref.memory_id:
            if row.memory_id not in wanted_ids:
                reason = (
                    "a row without any query term"
                    if not any(row.terms.get(t) for group in query for t in group)
                    else "a row bm25_rank does not rank that high"
                )
                raise CheckFailed(
                    f"search() for {what} returned {label(row)} at position {position}: {reason}"
                )
            raise CheckFailed(
                f"search() for {what} ranks {label(row)} at position {position} where "
                f"bm25_rank puts {label(ref)} (order differs from the reference)"
            )
        if abs(score - ref_score) > SCORE_TOLERANCE:
            raise CheckFailed(
                f"search() for {what} scores {label(row)} {score!r}; bm25_rank gives {ref_score!r}"
            )
        expect_same_row(row, ref, f"search() for {what}")
    if len(got) > len(want):
        row = got[len(want)][0]
        reason = (
            "a row without any query term"
            if not any(row.terms.get(t) for group in query for t in group)
            else "bm25_rank returns fewer hits"
        )
        raise CheckFailed(
            f"search() for {what} returned {label(row)} at position {len(want) + 1}: {reason}"
        )
    if len(got) < len(want):
        raise CheckFailed(
            f"search() for {what} returned {len(got)} hits; bm25_rank returns {len(want)} "
            f"(first missing: {label(want[len(got)][0])})"
        )
    return len(want)


def _corpus(
    ctx: CheckContext, people: int = 24, shared_rows: int = 8, strangers: int = 8
) -> tuple[Scope, list[StoredRow], list[list[str]]]:
    """A person's rows and the tenant's rows, with two vocabularies of the same words, plus
    rows the filter must leave out of the corpus (another subject's; other kinds)."""
    rng = ctx.rows.rng
    scope = ctx.scope()
    words = 10
    person_vocab = [ctx.rows.term() for _ in range(words)]
    tenant_vocab = [ctx.rows.term() for _ in range(words)]
    weights = [1.0 / (rank + 1) for rank in range(words)]  # Zipf-like: idf varies

    def terms_from(vocab: list[str]) -> dict[str, int]:
        chosen: dict[str, int] = {}
        for word in rng.choices(range(words), weights=weights, k=rng.randint(1, 6)):
            chosen[vocab[word]] = chosen.get(vocab[word], 0) + 1
        for _ in range(rng.randint(0, 8)):
            chosen[ctx.rows.term()] = rng.randint(1, 2)  # filler: changes document length
        return chosen

    stored: list[StoredRow] = []
    for _ in range(people):
        stored.append(ctx.rows.row(scope, terms=terms_from(person_vocab)))
    shared = Scope(scope.tenant, scope.app, TENANT_SUBJECT)
    for _ in range(shared_rows):
        stored.append(ctx.rows.row(shared, terms=terms_from(tenant_vocab)))
    stranger = ctx.scope(tenant=scope.tenant, app=scope.app)
    for _ in range(strangers):  # same tokens, another subject: must not count in N or df
        stored.append(ctx.rows.row(stranger, terms=terms_from(person_vocab)))
    tie_terms = {person_vocab[0]: 1, person_vocab[1]: 1}
    stored += [ctx.rows.row(scope, terms=dict(tie_terms)) for _ in range(3)]  # equal scores
    ctx.put_all(stored)
    revised = ctx.rows.revision(stored[0], terms=terms_from(person_vocab))
    ctx.driver.put(revised, closes=1)  # the closed version must not be ranked
    stored[0] = replace(stored[0], valid_to=revised.valid_from)
    stored.append(revised)
    groups = [[p, t] for p, t in zip(person_vocab, tenant_vocab, strict=True)]
    return scope, stored, groups


def memory_id_filters(
    ctx: CheckContext, scope: Scope, stored: list[StoredRow]
) -> list[tuple[Filter, str]]:
    """Filters of ``_corpus``'s person and shared rows that name some of their memories
    (none, all, a revised one, another subject's, an unknown id), with what each names."""
    rng = ctx.rows.rng
    mine = sorted({r.memory_id for r in stored if r.subject in (scope.subject, TENANT_SUBJECT)})
    strangers = sorted({r.memory_id for r in stored} - set(mine))
    revised = next(r for r in stored if r.version == 2)  # _corpus revises one memory
    base = Filter(tenant=scope.tenant, app=scope.app, subjects=(scope.subject, TENANT_SUBJECT))
    half = frozenset(rng.sample(mine, len(mine) // 2))
    chosen: list[tuple[frozenset[str], str]] = [
        (half, "half the memories"),
        (frozenset(rng.sample(mine, 3)), "three memories"),
        (frozenset({revised.memory_id}), "one revised memory"),
        (frozenset(), "no memory"),
        (frozenset(mine), "every memory"),
        (
            frozenset([*rng.sample(mine, 4), strangers[0], ctx.rows.memory_id()]),
            "four memories, another subject's and an unknown id",
        ),
    ]
    filters = [(replace(base, memory_ids=ids), what) for ids, what in chosen]
    kinds = frozenset({"fact", "note"})
    filters.append((replace(base, memory_ids=half, kinds=kinds), "half, kinds fact and note"))
    return filters


@check("text_search")
def check_matches_reference(ctx: CheckContext) -> str | None:
    """search() returns the rows, order and scores of bm25_rank over the filtered rows."""
    scope, stored, groups = _corpus(ctx)
    rng = ctx.rows.rng
    base = Filter(tenant=scope.tenant, app=scope.app, subjects=(scope.subject, TENANT_SUBJECT))
    queries: list[tuple[Query, str]] = [
        ([set(groups[0])], "one common term"),
        ([set(groups[9])], "one rare term"),
        ([set(groups[2]), set(groups[5]), set(groups[7])], "three terms"),
        ([set(groups[3]), set(groups[3])], "a repeated term"),
        ([set(groups[1]), {ctx.rows.term()}], "a term no row has"),
        ([{groups[4][0]}], "one vocabulary only"),
    ]
    for _ in range(4):
        picked = rng.sample(range(len(groups)), rng.randint(1, 4))
        queries.append(([set(groups[i]) for i in picked], f"random terms {picked}"))
    compared = 0
    for query, what in queries:
        for top_k in (3, 100):  # check_top_k covers the other cuts
            compared += _expect_reference(ctx, base, stored, query, top_k, f"{what}, top_k={top_k}")
    for where, what in (
        (replace(base, subjects=(scope.subject,)), "the person only"),
        (replace(base, kinds=frozenset({"fact", "note"})), "kinds fact and note"),
    ):
        _expect_reference(ctx, where, stored, [set(groups[0]), set(groups[2])], 20, what)
    return f"{len(queries)} queries, {compared} hits compared"


@check("text_search")
def check_scores_in_range(ctx: CheckContext) -> str | None:
    """Every score search() returns is a float in [0, 1]."""
    scope, _stored, groups = _corpus(ctx, people=10, shared_rows=4, strangers=0)
    where = Filter(tenant=scope.tenant, app=scope.app, subjects=(scope.subject, TENANT_SUBJECT))
    for picked in ([0], [9], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [3, 3, 3]):
        hits = ctx.driver.search(where, [set(groups[i]) for i in picked], top_k=100)
        problem = _score_problem(hits)
        if problem is not None:
            raise CheckFailed(f"search() for terms {picked}: {problem}")
    single = ctx.scope()
    term = ctx.rows.term()
    ctx.driver.put(ctx.rows.row(single, terms={term: 1}))
    hits = ctx.driver.search(single.where(), [{term}], top_k=1)
    problem = _score_problem(hits)
    if problem is not None:
        raise CheckFailed(f"search() over a single row: {problem}")
    ctx.driver.put(ctx.rows.row(single, terms={term: 1000}))  # near the ceiling of 1
    hits = ctx.driver.search(single.where(), [{term}, {term}], top_k=2)
    problem = _score_problem(hits)
    if problem is not None:
        raise CheckFailed(f"search() for a saturated term: {problem}")
    return None


@check("text_search")
def check_order_and_ties(ctx: CheckContext) -> str | None:
    """Higher scores first; equal scores in bm25_rank's tie order (newer, then greater id)."""
    scope = ctx.scope()
    term, other = ctx.rows.term(), ctx.rows.term()
    same = {term: 1, other: 1}
    older = ctx.rows.row(scope, terms=dict(same), trust="inferred")
    newer = ctx.rows.row(scope, terms=dict(same), trust="inferred")
    moment = ctx.rows.moment()
    twins = [ctx.rows.row(scope, terms=dict(same), at=moment, trust="inferred") for _ in range(3)]
    trusted = ctx.rows.row(scope, terms=dict(same), at=moment, trust="confirmed")
    best = ctx.rows.row(scope, terms={term: 3, other: 1}, at=older.recorded_at)
    stored = [twins[1], older, best, trusted, twins[0], newer, twins[2]]
    ctx.put_all(stored)
    query = [{term}, {other}]
    want = bm25_rank(stored, query, 10)
    if len({score for _, score in want[1:]}) != 1:  # pragma: no cover - the suite's own premise
        raise RuntimeError("order_and_ties needs rows with equal scores")
    got = ctx.driver.search(scope.where(), query, top_k=10)
    _expect_well_formed(got, "rows with equal scores", 10)
    order = [row.memory_id for row, _ in got]
    if order != [row.memory_id for row, _ in want]:
        if order and order[0] != best.memory_id:
            raise CheckFailed("search() did not put the highest score first")
        raise CheckFailed(
            "search() orders equal scores differently from bm25_rank (ties: newer "
            "recorded_at first, then the greater memory id, after any rule bm25_rank applies "
            "first)"
        )
    if len({score for _, score in got[1:]}) != 1:
        raise CheckFailed("search() gave different scores to rows with identical terms")
    top = ctx.driver.search(scope.where(), query, top_k=3)
    if [row.memory_id for row, _ in top] != order[:3]:
        raise CheckFailed("search(top_k=3) is not the first 3 hits of the full ranking")
    return None


@check("text_search")
def check_rows_without_terms_left_out(ctx: CheckContext) -> str | None:
    """Rows with none of the query's terms are not returned; unknown terms find nothing."""
    scope = ctx.scope()
    term = ctx.rows.term()
    with_term = [ctx.rows.row(scope, terms={term: 1, ctx.rows.term(): 2}) for _ in range(3)]
    without = [ctx.rows.row(scope) for _ in range(5)]
    ctx.put_all(with_term + without)
    hits = ctx.driver.search(scope.where(), [{term}], top_k=100)
    returned = {row.memory_id for row, _ in hits}
    strays = returned - {row.memory_id for row in with_term}
    if strays:
        raise CheckFailed(f"search() returned {len(strays)} rows without any query term")
    if len(returned) != len(with_term):
        raise CheckFailed(
            f"search() returned {len(returned)} of the {len(with_term)} rows with the term"
        )
    if ctx.driver.search(scope.where(), [{ctx.rows.term()}], top_k=100):
        raise CheckFailed("search() for a term no row has returned rows")
    if ctx.driver.search(scope.where(), [], top_k=100):
        raise CheckFailed("search() for an empty query returned rows")
    return None


@check("text_search")
def check_top_k(ctx: CheckContext) -> str | None:
    """search() returns at most top_k hits, and exactly min(top_k, matches)."""
    scope = ctx.scope()
    term = ctx.rows.term()
    rows = [ctx.rows.row(scope, terms={term: 1 + i % 3, ctx.rows.term(): 1}) for i in range(12)]
    ctx.put_all(rows)
    for top_k in (1, 2, 5, 12, 13, 100):
        hits = ctx.driver.search(scope.where(), [{term}], top_k=top_k)
        if len(hits) != min(top_k, len(rows)):
            raise CheckFailed(
                f"search(top_k={top_k}) returned {len(hits)} hits; {min(top_k, len(rows))} match"
            )
    return None


@check("text_search")
def check_memory_ids(ctx: CheckContext) -> str | None:
    """search() with Filter.memory_ids equals bm25_rank over those memories' rows alone."""
    scope, stored, groups = _corpus(ctx, people=16, shared_rows=6, strangers=6)
    filters = memory_id_filters(ctx, scope, stored)
    compared = 0
    for where, what in filters:
        # The ids change the corpus: N, the mean length and each term's df are theirs.
        for picked in ([0], [1, 4], [2, 5, 7], [9]):
            query = [set(groups[i]) for i in picked]
            for top_k in (3, 100):
                compared += _expect_reference(
                    ctx, where, stored, query, top_k, f"memory_ids: {what}, top_k={top_k}"
                )
    return f"{len(filters)} filters, {compared} hits compared with bm25_rank"
