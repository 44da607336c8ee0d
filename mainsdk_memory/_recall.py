"""The recall pipeline: blinded text search, sealed vectors, fusion, then the injection screen.

:func:`recall` checks the query and the mode, ranks with the driver's BM25 over blinded
terms and/or the sealed embeddings opened in process, fuses the two rankings (ADR 0070),
opens the best rows and leaves out what the injection check flags. A child's query and
memories never reach an embedder that runs a model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Literal

from mainsdk_memory import _fusion, _rerank, _signals
from mainsdk_memory import _validate as validate
from mainsdk_memory._auditing import AuditNote
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import DamagedMemoryError, InvalidInputError, MemoryCapabilityError
from mainsdk_memory._guard import StaleSnapshot
from mainsdk_memory._integrity import leave_out_tampered
from mainsdk_memory._records import Hit, MemoryRecord
from mainsdk_memory._sealing import open_record, open_vector
from mainsdk_memory._tags import by_tags, matches
from mainsdk_memory._text import DEFAULT_LANGUAGE, index_terms, query_terms
from mainsdk_memory._vectors import CANDIDATES
from mainsdk_memory._walls import screen
from mainsdk_memory.drivers import Filter, StoredRow, VectorEntry
from mainsdk_memory.drivers._bm25 import TRUST_RANK, order_key

__all__ = ["MODES", "RANKINGS", "Ranking", "RecallMode", "opened_vector", "query_groups", "recall"]

RecallMode = Literal["auto", "text", "vector", "hybrid"]
"""How recall ranks: ``text`` (BM25 over blind terms), ``vector`` (sealed embeddings),
``hybrid`` (both, fused), or ``auto`` (hybrid when the memory has an embedder, else text)."""
MODES: tuple[RecallMode, ...] = ("auto", "text", "vector", "hybrid")

Ranking = Literal["signals", "relevance"]
"""``signals`` (the default): relevance adjusted by kind and age, use, pin and feedback
(:mod:`._signals`); ``relevance``: how well each memory answers the query, nothing else."""
RANKINGS: tuple[Ranking, ...] = ("signals", "relevance")


def query_groups(caller: Caller, query: str, language: str = DEFAULT_LANGUAGE) -> list[set[str]]:
    """One group per query word: the blind tokens of its terms (:func:`query_terms`: its
    stem and, outside English, its prefixes) under the person's and the tenant's keys."""
    return _blinded(caller, query_terms(query, language))


def _blinded(caller: Caller, asked: list[frozenset[str]]) -> list[set[str]]:
    """Each group of terms as the blind tokens of them under the person's and the tenant's
    keys (the index holds both)."""
    blinds = caller.blinds()
    return [{blind(term) for blind in blinds for term in group} for group in asked]


def recall(
    caller: Caller,
    query: str,
    *,
    top_k: int,
    kinds: Iterable[str] | None,
    as_of: datetime | None,
    mode: str = "auto",
    ranking: str = "signals",
    count_uses: bool = False,
    language: str = DEFAULT_LANGUAGE,
    note: AuditNote | None = None,
    memory_ids: frozenset[str] | None = None,
    matching: Mapping[str, Any] | None = None,
) -> list[Hit]:
    """The best ``top_k`` memories for ``query`` the caller may see (see ``recall()``).

    ``count_uses`` records each returned memory as used (a handle's ``recall``, not
    ``context``); ``ranking="relevance"`` leaves the signals of :mod:`._signals` out;
    ``memory_ids`` narrows every ranking to those memories (the driver filters, so no
    match is lost to a top-k cut); so does ``matching``, a metadata filter
    (``recall(where=...)``, :mod:`._tags`).
    """
    services = caller.services
    query = validate.text(query, services.settings.max_text_chars, "query")
    top_k = validate.top_k(top_k)
    checked_kinds = validate.kinds(kinds)
    when = None if as_of is None else validate.aware(as_of, "as_of")
    if mode not in MODES:
        raise InvalidInputError("mode is 'auto', 'text', 'vector' or 'hybrid'.")
    if ranking not in RANKINGS:
        raise InvalidInputError("ranking is 'signals' or 'relevance'.")
    capabilities = services.store.capabilities
    index = services.vectors
    if mode in ("vector", "hybrid") and index is None:
        raise MemoryCapabilityError(
            "vectors",
            f"mode={mode!r} needs an embedder, and this memory was opened with embedder=None "
            "(or on a driver that stores no vectors). Open it with an embedder, or recall "
            "with mode='text'.",
        )
    if index is not None and mode != "text" and caller.is_child():
        if mode != "auto":
            raise MemoryCapabilityError(
                "vectors",
                "This person is a child: their memories and queries stay text only, so "
                "vector recall is off for them. Recall with mode='text' or 'auto'.",
            )
        index = None
    use_vectors = index is not None and mode != "text"
    use_text = mode in ("text", "hybrid") or (mode == "auto" and capabilities.text_search)
    if use_text and not capabilities.text_search:
        raise MemoryCapabilityError("text_search")
    if not (use_text or use_vectors):
        raise MemoryCapabilityError("text_search")
    if when is not None and not capabilities.time_travel:
        raise MemoryCapabilityError("time_travel")
    # The query's embedding first, outside any transaction (an embedder may be slow or
    # remote); then one snapshot of the store for the whole ranking on PostgreSQL (one read
    # transaction: control records, statistics, postings, rows; ADR 0101). A check inside it
    # that must read again after a concurrent writer runs the ranking again, plain reads.
    # The uses are written after it, never inside it.
    asked_vector = index.embed(query) if index is not None and use_vectors else None

    def ranked() -> Scored:
        where = caller.filter(kinds=checked_kinds, as_of=when)
        if memory_ids is not None:
            where = dataclasses.replace(where, memory_ids=memory_ids)
        where = by_tags(caller, where, matching)
        store = services.store
        model = None
        if use_text and use_vectors:
            assert index is not None  # noqa: S101 - use_vectors implies an index
            model = _rerank.model_for(index.name)
        signals = ranking == "signals"
        # How many candidates are opened at a time: the signals re-order, and the second pass
        # thins, a pool deeper than top_k; plain relevance without a model opens what it returns.
        pool = max(_rerank.DEPTH, 2 * top_k) if (model is not None or signals) else top_k
        depth = max(CANDIDATES, pool) if use_text and use_vectors else pool
        found: list[tuple[StoredRow, float]] = []
        asked: list[frozenset[str]] = []
        if use_text:
            asked = query_terms(query, language)
            groups = _blinded(caller, asked)
            if groups:
                found = store.search(where, groups, top_k=depth)
        rows = {row.memory_id: row for row, _ in found}
        bm25 = {row.memory_id: score for row, score in found}
        candidates = [(row.memory_id, score) for row, score in found]
        cosines: dict[str, float] = {}
        if use_vectors:
            assert index is not None  # noqa: S101 - use_vectors implies an index
            assert asked_vector is not None  # noqa: S101 - embedded when use_vectors
            ranked = index.rank(
                store, where, asked_vector, depth, lambda entry: opened_vector(caller, entry)
            )
            if note is not None and ranked.foreign:
                note.extra.append(("vectors_of_another_embedder", str(ranked.foreign)))
            # To 6 decimals: the same text's float32 cosines differ in their last bits from one
            # row of a matrix to the next, and equal texts must tie (then trust orders them).
            cosines = {key[1]: round(score, 6) for key, score in ranked.hits}
            nearest = [(memory_id, max(0.0, score)) for memory_id, score in cosines.items()]
            if nearest and candidates:
                candidates = _fusion.fuse(candidates, nearest)
            elif nearest:
                candidates = nearest  # one ranker found candidates: its own scores stand
        versions = {key[1]: key for key, _ in ranked.hits} if use_vectors else {}
        # Opened a pool at a time: the second pass may leave vector-only candidates out, and the
        # next ones take their places, so a memory that shares a word is never crowded out.
        scored: Scored = []
        start = 0
        while len(scored) < pool and start < len(candidates):
            batch = candidates[start : start + pool]
            start += pool
            opened = _open(caller, where, batch, rows, versions)
            if matching is not None:  # the store's tags, checked against what was sealed
                opened = [one for one in opened if matches(matching, one[0].metadata)]
            if model is not None:
                opened = _second_pass(model, opened, asked, bm25, cosines)
            scored += opened
            if model is None:
                break  # nothing is left out: one pool is all there is to open
        if signals:
            relevance = {record.id: score for record, _, score in scored}
            scored = _trust_first(relevance, _signals.rank(caller, scored, now=services.now()))
        scored = _ordered(scored, TIE if use_vectors else 0.0)[:top_k]
        return scored

    try:
        with services.store.unit(write=False):
            scored = ranked()
    except StaleSnapshot:
        scored = ranked()
    if count_uses and scored:
        used = [(record, subject) for record, subject, _ in scored]
        _signals.count_uses(caller, used, now=services.now())
    return [Hit(record=record, score=score) for record, _, score in scored]


Scored = list[tuple[MemoryRecord, str, float]]
"""Opened candidates: the record, its row's subject, its score in [0, 1]."""


#: Scores closer than this are equal: the same text's float32 cosines differ in their last
#: bits from one row of a matrix to the next.
TIE: Final = 1e-6


def _ordered(scored: Scored, tie: float) -> Scored:
    """Best first: the higher score, then the drivers' tie order (:func:`order_key`: the more
    trusted, then the newer, then the greater id), as BM25 alone orders its ties; scores
    within ``tie`` of the next one are ties (:data:`TIE` where cosines count; 0 for BM25
    alone, whose scores are exact)."""
    by_score = sorted(scored, key=lambda item: -item[2])
    out: Scored = []
    run: Scored = []
    for item in by_score:
        if run and run[-1][2] - item[2] > tie:
            out += _tie_order(run)
            run = []
        run.append(item)
    return out + _tie_order(run)


def _tie_order(run: Scored) -> Scored:
    return sorted(
        run,
        key=lambda item: order_key(item[0].trust.value, item[0].recorded_at, item[0].id),
        reverse=True,
    )


def _trust_first(relevance: dict[str, float], scored: Scored) -> Scored:
    """``scored`` with no memory above a more trusted one of the same relevance: the signals
    (a newer copy's age boost, an agent's uses and feedback) re-order memories of one
    relevance, but a web page's copy never climbs over what the person said."""
    groups: dict[float, list[int]] = {}
    for place, (record, _, _) in enumerate(scored):
        groups.setdefault(round(relevance[record.id], 6), []).append(place)
    out = list(scored)
    for places in groups.values():
        if len(places) < 2:
            continue
        by_trust: dict[int, list[int]] = {}
        for place in places:
            by_trust.setdefault(TRUST_RANK.get(out[place][0].trust.value, 0), []).append(place)
        ceiling = 1.0
        for level in sorted(by_trust, reverse=True):
            members = by_trust[level]
            for place in members:
                record, subject, score = out[place]
                out[place] = (record, subject, min(score, ceiling))
            ceiling = min(out[place][2] for place in members)
    return out


def _second_pass(
    model: _rerank.Model,
    scored: Scored,
    asked: list[frozenset[str]],
    bm25: dict[str, float],
    cosines: dict[str, float],
) -> Scored:
    """The candidates the re-ranker keeps, with their first-pass scores: one only the vectors
    found is left out when its relevance is under the model's floor (ADR 0085: re-ordering by
    the relevance itself lost recall on LoCoMo, so the first pass's order stands)."""
    out: Scored = []
    for record, subject, fused in scored:
        features = _features(record, fused, asked, bm25, cosines)
        vector_only = record.id not in bm25 and features.coverage == 0.0
        if vector_only and model.relevance(features) < model.floor:
            continue  # only the vectors found it, and it is not close enough to count
        out.append((record, subject, fused))
    return out


def _features(
    record: MemoryRecord,
    fused: float,
    asked: list[frozenset[str]],
    bm25: dict[str, float],
    cosines: dict[str, float],
) -> _rerank.Features:
    """What the second pass knows of one candidate (:class:`_rerank.Features`)."""
    best_bm25 = max(bm25.values(), default=0.0)
    cosine = cosines.get(record.id, min(cosines.values(), default=0.0))
    return _rerank.Features(
        bm25=bm25.get(record.id, 0.0) / best_bm25 if best_bm25 > 0 else 0.0,
        cosine=cosine,
        cosine_gap=cosine - max(cosines.values(), default=0.0),
        coverage=_rerank.coverage(asked, index_terms(record.text, record.language)),
        fused=fused,
    )


def _open(
    caller: Caller,
    where: Filter,
    batch: Sequence[tuple[str, float]],
    rows: dict[str, StoredRow],
    versions: dict[str, tuple[str, str, int]],
) -> Scored:
    """The candidates of ``batch`` opened (their rows read first where only the vectors
    found them), without those that fail a check or the injection screen."""
    store = caller.services.store
    for memory_id, _ in batch:
        if memory_id in rows:
            continue
        subject, _, version = versions[memory_id]
        try:
            stored = store.versions(caller.tenant, caller.app, (subject,), memory_id)
        except DamagedMemoryError as damaged:
            if damaged.memory_id != memory_id:
                raise
            continue  # its row cannot be decoded: left out (ADR 0046), the rest stand
        match = [row for row in stored if row.version == version and where.matches(row)]
        if match:  # erased meanwhile, or outside the filter: left out
            rows[memory_id] = match[0]
    best = [(rows[key], score) for key, score in batch if key in rows]
    records = screen(
        caller, leave_out_tampered(caller, best, lambda hit: open_record(caller, hit[0]))
    )
    kept = {record.id: record for record in records}
    return [
        (kept[row.memory_id], row.subject, score) for row, score in best if row.memory_id in kept
    ]


def opened_vector(caller: Caller, entry: VectorEntry) -> bytes | None:
    """One stored embedding, or ``None`` (audited) if its memory fails its integrity check."""
    opened = leave_out_tampered(caller, [entry], lambda one: open_vector(caller, one))
    return opened[0] if opened else None
