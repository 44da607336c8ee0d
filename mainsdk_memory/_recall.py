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

from mainsdk_memory import _fusion
from mainsdk_memory import _validate as validate
from mainsdk_memory._auditing import AuditNote
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import DamagedMemoryError, InvalidInputError, MemoryCapabilityError
from mainsdk_memory._integrity import leave_out_tampered
from mainsdk_memory._records import Hit
from mainsdk_memory._sealing import open_record, open_vector
from mainsdk_memory._text import index_terms
from mainsdk_memory._vectors import CANDIDATES
from mainsdk_memory._walls import screen
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow, VectorEntry

__all__ = ["MODES", "RecallMode", "recall"]

RecallMode = Literal["auto", "text", "vector", "hybrid"]
"""How recall ranks: ``text`` (BM25 over blind terms), ``vector`` (sealed embeddings),
``hybrid`` (both, fused), or ``auto`` (hybrid when the memory has an embedder, else text)."""
MODES: tuple[RecallMode, ...] = ("auto", "text", "vector", "hybrid")


def query_groups(caller: Caller, query: str) -> list[set[str]]:
    """One group per query term: its blind tokens under the person's and the tenant's keys."""
    services = caller.services
    vocabularies = [
        keys
        for keys in (
            services.subject_keys(caller.tenant, caller.person, create=False),
            services.subject_keys(caller.tenant, TENANT_SUBJECT, create=True),
        )
        if keys is not None
    ]
    return [{keys.blind(term) for keys in vocabularies} for term in index_terms(query)]


def recall(
    caller: Caller,
    query: str,
    *,
    top_k: int,
    kinds: Iterable[str] | None,
    as_of: datetime | None,
    mode: str = "auto",
    note: AuditNote | None = None,
) -> list[Hit]:
    """The best ``top_k`` memories for ``query`` the caller may see (see ``recall()``)."""
    services = caller.services
    query = validate.text(query, services.settings.max_text_chars, "query")
    top_k = validate.top_k(top_k)
    checked_kinds = validate.kinds(kinds)
    when = None if as_of is None else validate.aware(as_of, "as_of")
    if mode not in MODES:
        raise InvalidInputError("mode is 'auto', 'text', 'vector' or 'hybrid'.")
    capabilities = services.store.capabilities
    index = services.vectors
    if mode in ("vector", "hybrid") and index is None:
        raise MemoryCapabilityError(
            "vectors",
            f"mode={mode!r} needs an embedder, and this memory was opened without one. "
            "Open it with Memory.open(..., embedder=...), or recall with mode='text'.",
        )
    if index is not None and mode != "text" and index.embedder.uses_model and caller.is_child():
        if mode != "auto":
            raise MemoryCapabilityError(
                "vectors",
                "This person is a child: no model may read their memories or queries, "
                "so vector recall is off for them. Recall with mode='text' or 'auto'.",
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
    depth = max(CANDIDATES, top_k) if use_text and use_vectors else top_k
    found: list[tuple[StoredRow, float]] = []
    if use_text:
        groups = query_groups(caller, query)
        if groups:
            found = store.search(where, groups, top_k=depth)
    rows = {row.memory_id: row for row, _ in found}
    ranking = [(row.memory_id, score) for row, score in found]
    if use_vectors:
        assert index is not None  # noqa: S101 - use_vectors implies an index
        ranked = index.rank(
            store, where, index.embed(query), depth, lambda entry: _open_vector(caller, entry)
        )
        if note is not None and ranked.foreign:
            note.extra.append(("vectors_of_another_embedder", str(ranked.foreign)))
        nearest = [(key[1], max(0.0, score)) for key, score in ranked.hits]
        if nearest and ranking:
            ranking = _fusion.fuse(ranking, nearest)
        elif nearest:
            ranking = nearest  # one ranker found candidates: its own scores stand
        versions = {key[1]: key for key, _ in ranked.hits}
        for memory_id, _ in ranking[:top_k]:
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
    best = [(rows[key], score) for key, score in ranking[:top_k] if key in rows]
    records = screen(
        caller, leave_out_tampered(caller, best, lambda hit: open_record(caller, hit[0]))
    )
    kept = {record.id: record for record in records}
    return [
        Hit(record=kept[row.memory_id], score=score) for row, score in best if row.memory_id in kept
    ]


def _open_vector(caller: Caller, entry: VectorEntry) -> bytes | None:
    """One stored embedding, or ``None`` (audited) if its memory fails its integrity check."""
    opened = leave_out_tampered(caller, [entry], lambda one: open_vector(caller, one))
    return opened[0] if opened else None
