"""The recall pipeline: blinded text search, sealed vectors, fusion, then the injection screen.

:func:`recall` checks the query and the mode, ranks with the driver's BM25 over blinded
terms and/or the sealed embeddings opened in process, fuses the two rankings (ADR 0070),
opens the best rows and leaves out what the injection check flags. A child's query and
memories never reach an embedder that runs a model.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal

from mainsdk_memory import _fusion, _rerank, _signals
from mainsdk_memory import _validate as validate
from mainsdk_memory._auditing import AuditNote
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import DamagedMemoryError, InvalidInputError, MemoryCapabilityError
from mainsdk_memory._integrity import leave_out_tampered
from mainsdk_memory._records import Hit, MemoryRecord
from mainsdk_memory._sealing import open_record, open_vector
from mainsdk_memory._text import DEFAULT_LANGUAGE, index_terms, query_terms
from mainsdk_memory._vectors import CANDIDATES
from mainsdk_memory._walls import screen
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow, VectorEntry
from mainsdk_memory.drivers._bm25 import order_key

__all__ = ["MODES", "RANKINGS", "Ranking", "RecallMode", "recall"]

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
    services = caller.services
    vocabularies = [
        keys
        for keys in (
            services.subject_keys(caller.tenant, caller.person, create=False),
            services.subject_keys(caller.tenant, TENANT_SUBJECT, create=True),
        )
        if keys is not None
    ]
    return [
        {keys.blind(term) for keys in vocabularies for term in group}
        for group in query_terms(query, language)
    ]


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
) -> list[Hit]:
    """The best ``top_k`` memories for ``query`` the caller may see (see ``recall()``).

    ``count_uses`` records each returned memory as used (a handle's ``recall``, not
    ``context``); ``ranking="relevance"`` leaves the signals of :mod:`._signals` out.
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
    where = caller.filter(kinds=checked_kinds, as_of=when)
    store = services.store
    model = None
    if use_text and use_vectors:
        assert index is not None  # noqa: S101 - use_vectors implies an index
        model = _rerank.model_for(index.name)
    signals = ranking == "signals"
    # How many candidates are opened: the second pass and the signals re-order a pool
    # deeper than top_k; plain relevance without a model opens exactly what it returns.
    pool = max(_rerank.DEPTH, top_k) if (model is not None or signals) else top_k
    depth = max(CANDIDATES, pool) if use_text and use_vectors else pool
    found: list[tuple[StoredRow, float]] = []
    asked: list[frozenset[str]] = []
    if use_text:
        asked = query_terms(query, language)
        groups = query_groups(caller, query, language)
        if groups:
            found = store.search(where, groups, top_k=depth)
    rows = {row.memory_id: row for row, _ in found}
    bm25 = {row.memory_id: score for row, score in found}
    candidates = [(row.memory_id, score) for row, score in found]
    cosines: dict[str, float] = {}
    if use_vectors:
        assert index is not None  # noqa: S101 - use_vectors implies an index
        ranked = index.rank(
            store, where, index.embed(query), depth, lambda entry: _open_vector(caller, entry)
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
        versions = {key[1]: key for key, _ in ranked.hits}
        for memory_id, _ in candidates[:pool]:
            if memory_id not in rows:
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
    best = [(rows[key], score) for key, score in candidates[:pool] if key in rows]
    records = screen(
        caller, leave_out_tampered(caller, best, lambda hit: open_record(caller, hit[0]))
    )
    kept = {record.id: record for record in records}
    scored = [
        (kept[row.memory_id], row.subject, score) for row, score in best if row.memory_id in kept
    ]
    if model is not None:
        scored = _second_pass(model, scored, asked, bm25, cosines)
    if signals:
        scored = _signals.rank(caller, scored, now=services.now())
    scored = _ordered(scored)[:top_k]
    if count_uses and scored:
        used = [(record, subject) for record, subject, _ in scored]
        _signals.count_uses(caller, used, now=services.now())
    return [Hit(record=record, score=score) for record, _, score in scored]


Scored = list[tuple[MemoryRecord, str, float]]
"""Opened candidates: the record, its row's subject, its score in [0, 1]."""


def _ordered(scored: Scored) -> Scored:
    """Best first: the higher score, then the drivers' tie order (:func:`order_key`: the more
    trusted, then the newer, then the greater id), as BM25 alone orders its ties."""
    ties = sorted(
        scored,
        key=lambda item: order_key(item[0].trust.value, item[0].recorded_at, item[0].id),
        reverse=True,
    )
    return sorted(ties, key=lambda item: -item[2])  # stable: equal scores keep the tie order


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


def _open_vector(caller: Caller, entry: VectorEntry) -> bytes | None:
    """One stored embedding, or ``None`` (audited) if its memory fails its integrity check."""
    opened = leave_out_tampered(caller, [entry], lambda one: open_vector(caller, one))
    return opened[0] if opened else None
