"""Formation in the store: the memories a candidate is compared with, and typed-fact keys.

:func:`neighbours` finds the memories closest to a text about to be remembered — the same
subject, what the writer may see (its sessions, its grant), current versions only — with
the blinded text search and the sealed vectors recall uses, and opens them for
:func:`mainsdk_memory._formation.classify`. :func:`keyed` finds the memory that holds a
typed fact's key (``data=`` of a model that declares ``fact_key``) exactly: its key term
(:func:`mainsdk_memory._sealing.key_term`) is blinded like any term, held by every version
of the memory, counted in no document length, and never produced by a query's words.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import DamagedMemoryError, IntegrityError, InvalidInputError
from mainsdk_memory._formation import Neighbour, WordSimilarity
from mainsdk_memory._integrity import leave_out_tampered
from mainsdk_memory._recall import opened_vector, query_groups
from mainsdk_memory._records import MemoryRecord
from mainsdk_memory._sealing import open_record, sealed_data
from mainsdk_memory._tags import key_tag
from mainsdk_memory._vectors import VectorIndex
from mainsdk_memory._walls import screen
from mainsdk_memory.drivers import TENANT_SUBJECT, Filter, StoredRow

__all__ = [
    "NEIGHBOURS",
    "Held",
    "by_key",
    "fact_key",
    "keyed",
    "neighbours",
    "scope_filter",
    "word_similarity",
]

#: How many memories a candidate is compared with: the best of each ranking.
NEIGHBOURS: Final = 5
# How many rows with one caller key are read: one per agent that wrote it, and the
# quarantined and session-only memories beside them (a person's handle sees every session's).
_KEYED: Final = 100


@dataclass(frozen=True, slots=True)
class Held:
    """A neighbour as formation compares it, and what a write against it needs."""

    neighbour: Neighbour
    record: MemoryRecord
    row: StoredRow


def word_similarity(index: VectorIndex) -> WordSimilarity:
    """The cosine of two words' embeddings under the store's embedder, each word embedded
    once per call of formation (for :func:`classify`'s paraphrase rule)."""
    embedded: dict[str, npt.NDArray[np.float32]] = {}

    def vector(word: str) -> npt.NDArray[np.float32]:
        found = embedded.get(word)
        if found is None:
            found = embedded[word] = index.embed(word)
        return found

    return lambda one, other: float(vector(one) @ vector(other))


def scope_filter(caller: Caller, subject: str) -> Filter:
    """What the writer may see of ``subject`` (the person or the tenant), current only."""
    where = caller.filter()
    row_subject = TENANT_SUBJECT if subject == TENANT_SUBJECT else caller.pseudonym()
    return dataclasses.replace(where, subjects=(row_subject,))


def fact_key(data: BaseModel) -> tuple[str, ...] | None:
    """The fields that identify ``data``'s fact (its model's ``fact_key``), checked, or
    ``None`` when the model declares none."""
    declared = getattr(type(data), "fact_key", None)
    if declared is None:
        return None
    fields = type(data).model_fields
    if (
        not isinstance(declared, tuple)
        or not declared
        or not all(isinstance(name, str) and name in fields for name in declared)
    ):
        raise InvalidInputError(
            "fact_key is a non-empty tuple of field names of the model (for example "
            "fact_key: ClassVar[tuple[str, ...]] = ('subject', 'attribute')); nothing was "
            "stored."
        )
    return declared


def keyed(
    caller: Caller, subject: str, term: str, data: BaseModel,
    leave_out: frozenset[str] = frozenset(),
) -> Held | None:
    """The current memory of ``subject`` holding the fact key ``term``, if the writer may
    see one (its opened data must name the same key: a hash collision is no match), and it
    is not one of ``leave_out``."""
    store = caller.services.store
    if not store.capabilities.text_search:
        return None
    where = scope_filter(caller, subject)
    keys = caller.services.subject_keys(caller.tenant, subject, create=False)
    if keys is None:
        return None
    found = store.search(where, [{keys.blind(term)}], top_k=NEIGHBOURS)
    wanted = data.model_dump(mode="json")
    names = fact_key(data) or ()
    for held in _opened(caller, [row for row, _ in found], {}):
        record = held.record
        if record.id in leave_out:
            continue
        stored = sealed_data(record.data)
        same_type = isinstance(record.data, BaseModel) and type(record.data) is type(data)
        if same_type and isinstance(stored, dict) and all(
            stored.get(name) == wanted[name] for name in names
        ):
            return held
    return None


def by_key(caller: Caller, subject: str, key: str) -> list[Held]:
    """The current memories of ``subject`` with caller key ``key`` the caller may see, its
    own agent's first, then newest first, found through the store's tag index. Opened, not
    screened (``get`` by id is not either: a flagged memory is still the key's memory, and
    a write to it is checked); a row whose opened key is another is no match (a collision,
    or a tag moved by someone who can write the store)."""
    keys = caller.services.subject_keys(caller.tenant, subject, create=False)
    if keys is None:
        return []
    tag = frozenset({key_tag(keys.blind, key)})
    where = dataclasses.replace(scope_filter(caller, subject), tags=(tag,))
    rows = caller.services.store.list(where, limit=_KEYED)
    opened = leave_out_tampered(caller, rows, lambda row: (row, open_record(caller, row)))
    for row, record in opened:
        if record.key != key:  # the index names a memory sealed with another key
            raise IntegrityError(row.memory_id)
    found = [
        Held(Neighbour(record.id, record.text, None, record.language), record, row)
        for row, record in opened
    ]
    return sorted(found, key=lambda held: held.row.agent != caller.agent)  # stable: newest


def neighbours(
    caller: Caller,
    subject: str,
    text: str,
    language: str,
    vector: npt.NDArray[np.float32] | None,
    *,
    leave_out: frozenset[str] = frozenset(),
) -> list[Held]:
    """The memories of ``subject`` closest to ``text``, closest first (by cosine when the
    store has vectors, else by BM25), opened; those the writer may not see, that fail a
    check or the injection screen, and those in ``leave_out`` are not among them."""
    services = caller.services
    store = services.store
    where = scope_filter(caller, subject)
    rows: dict[str, StoredRow] = {}
    order: list[str] = []
    if store.capabilities.text_search:
        groups = query_groups(caller, text, language)
        if groups:
            for row, _ in store.search(where, groups, top_k=NEIGHBOURS):
                rows[row.memory_id] = row
                order.append(row.memory_id)
    cosines: dict[str, float] = {}
    index = services.vectors
    if vector is not None and index is not None:
        ranked = index.nearest(
            store, where, vector, NEIGHBOURS, lambda entry: opened_vector(caller, entry)
        )
        for (row_subject, memory_id, version), score in ranked.hits:
            cosines[memory_id] = float(score)
            if memory_id in rows:
                continue
            try:
                stored = store.versions(caller.tenant, caller.app, (row_subject,), memory_id)
            except DamagedMemoryError as damaged:
                if damaged.memory_id != memory_id:
                    raise
                continue
            match = [row for row in stored if row.version == version and where.matches(row)]
            if match:
                rows[memory_id] = match[0]
                order.append(memory_id)
    chosen = [rows[memory_id] for memory_id in order if memory_id not in leave_out]
    held = _opened(caller, chosen, cosines)
    if cosines:
        held.sort(key=lambda one: -(one.neighbour.cosine or 0.0))
    return held


def _opened(caller: Caller, rows: Sequence[StoredRow], cosines: dict[str, float]) -> list[Held]:
    opened = leave_out_tampered(caller, list(rows), lambda row: (row, open_record(caller, row)))
    kept = {record.id for record in screen(caller, [record for _, record in opened])}
    return [
        Held(
            Neighbour(record.id, record.text, cosines.get(record.id), record.language),
            record,
            row,
        )
        for row, record in opened
        if record.id in kept
    ]
