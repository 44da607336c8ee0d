"""Bulk write: ``remember_many`` seals and stores many memories a batch at a time.

Each batch goes through the steps of :meth:`~mainsdk_memory.ScopedMemory.remember`, reordered
so that what can fail fails before anything is written (ADR 0095):

1. every item is checked (arguments, labels, keys, metadata, the injection check over its
   text and metadata), then the walls run for each (kill switch, write rate, the cap);
2. under the formation locks of every subject of the batch, formation decides each item
   against what is held (an item repeating an earlier one of the batch word for word is its
   duplicate); the new memories are collected, not written;
3. the new memories are anchored in one key-store transaction (the agent's cap counted for
   them together), sealed, embedded in one call to the embedder, and stored in one driver
   step (``bulk_put``: one transaction, or one sync) — all of them or none;
4. items that revise a memory held before the batch (a supersession, a refinement, a
   caller key's upsert) are then written one by one, decided again; if one fails, the new
   memories of the items after it are erased again, so the store holds exactly the items
   before it (:class:`~mainsdk_memory.BatchError` says which);
5. the new memories' links (to the memory formation compared them with, to the entities
   they mention) are stored.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mainsdk_memory import _validate as validate
from mainsdk_memory._auditing import AuditNote
from mainsdk_memory._errors import (
    BatchError,
    InvalidInputError,
    MemoryConflictError,
    MemoryNotFound,
    MemorySDKError,
)
from mainsdk_memory._guard import StaleSnapshot
from mainsdk_memory._integrity import anchor_new_many, unanchor
from mainsdk_memory._progress import Progress, checked
from mainsdk_memory._records import Formation, MemoryRecord
from mainsdk_memory._sealing import Place, embedding_index, seal, seal_vector, to_record
from mainsdk_memory._signals import count_uses
from mainsdk_memory._walls import check_write, record_clean_verdict
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pydantic import BaseModel

    from mainsdk_memory._formation import Decision
    from mainsdk_memory._forming import Held
    from mainsdk_memory._scoped import _Handle, _New

__all__ = [
    "DEFAULT_BATCH", "DEFERRING", "ITEM_FIELDS", "MAX_BATCH", "Deferred", "Deferring",
    "remember_many",
]

DEFAULT_BATCH = 500
"""Items written in one step unless ``batch=`` says otherwise."""
MAX_BATCH = 10_000
"""The most items one step takes (what one transaction holds, and one embedder call)."""
ITEM_FIELDS = frozenset({
    "text", "kind", "about", "source", "valid_from", "labels", "pinned", "session_only",
    "data", "language", "key", "metadata",
})
"""What an item may hold: ``remember``'s arguments, but ``formation`` (the call's) and
``derived_from`` (an insight is remembered on its own)."""
_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class _Item:
    new: _New
    data: BaseModel | None
    explicit_start: bool
    formation: bool


@dataclass(frozen=True, slots=True)
class _Pending:
    """A new memory formation decided on, to be stored with the batch's others."""

    new: _New
    decision: Decision | None
    held: Held | None
    vector: npt.NDArray[np.float32] | None


@dataclass(slots=True)
class _Batch:
    """What one batch decided: a record per item, once known."""

    records: dict[int, MemoryRecord]
    new: list[tuple[int, _Pending]]  # the new memories, in item order
    revisions: list[int]
    twins: dict[int, int]  # position -> the earlier position it repeats
    uses: list[tuple[MemoryRecord, str]]  # duplicates of held memories: a use each, once stored


@dataclass(slots=True)
class Deferring:
    """A bulk write deciding ``handle``'s writes in this thread: where the handle would
    write, it raises :class:`Deferred` instead, and the uses its duplicates count are kept
    in ``uses`` until the batch is stored."""

    handle: _Handle
    uses: list[tuple[MemoryRecord, str]]


DEFERRING: contextvars.ContextVar[Deferring | None] = contextvars.ContextVar(
    "mainsdk_memory_deferring", default=None
)
"""The bulk write deciding in this thread, if any."""


class Deferred(Exception):
    """Raised where a deferring handle (:data:`DEFERRING`) would write: what writing a new
    memory needs (``new``), or ``new=None`` where it would write a held memory's next
    version. It never leaves the bulk write."""

    def __init__(
        self,
        new: _New | None,
        decision: Decision | None,
        held: Held | None,
        vector: npt.NDArray[np.float32] | None,
    ) -> None:
        super().__init__("a new memory, deferred to the bulk write")
        self.new = new
        self.decision = decision
        self.held = held
        self.vector = vector


def remember_many(
    handle: _Handle,
    items: Iterable[Mapping[str, Any]],
    *,
    batch: int = DEFAULT_BATCH,
    formation: bool | None = None,
    progress: Progress | None = None,
) -> list[MemoryRecord]:
    """See :meth:`~mainsdk_memory.ScopedMemory.remember_many`."""
    progress = checked(progress)
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise InvalidInputError(f"batch is a whole number from 1 to {MAX_BATCH}.")
    if formation is not None and not isinstance(formation, bool):
        raise InvalidInputError("formation is True, False or None (the Memory's option).")
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInputError(
            "items is a list of mappings of remember's arguments, e.g. [{'text': ...}]."
        )
    listed = list(items)
    with handle._begin("remember-many") as note:
        outcomes: Counter[str] = Counter()
        records: list[MemoryRecord] = []
        for start in range(0, len(listed), batch):
            records.extend(
                _write_batch(handle, listed[start : start + batch], start, formation, note,
                             outcomes)
            )
            if progress is not None:
                progress(len(records), len(listed))
        note.count = len(records)
        note.extra.extend((f"formation-{name}", str(count)) for name, count in
                          sorted(outcomes.items()))
        if progress is not None and not listed:
            progress(0, 0)
        return records


def _prepared(
    handle: _Handle, chunk: Sequence[Mapping[str, Any]], start: int, formation: bool | None
) -> list[_Item]:
    """Step 1: every item checked, then the walls for each; nothing written: one read unit
    of work, so the guardian policy and the agent's records are read once per batch."""
    try:
        with handle._caller.services.store.unit(write=False):
            return _checked(handle, chunk, start, formation)
    except StaleSnapshot:  # a record changed meanwhile: checked again, plain reads
        return _checked(handle, chunk, start, formation)


def _checked(
    handle: _Handle, chunk: Sequence[Mapping[str, Any]], start: int, formation: bool | None
) -> list[_Item]:
    prepared = []
    for position, item in enumerate(chunk):
        try:
            if not isinstance(item, Mapping) or "text" not in item:
                raise InvalidInputError(
                    "Each item is a mapping with a 'text' and any of remember's arguments."
                )
            unknown = set(item) - ITEM_FIELDS
            if unknown:
                raise InvalidInputError(
                    "An item holds an argument remember_many does not take: items take "
                    f"{', '.join(sorted(ITEM_FIELDS))} (remember insights with "
                    "derived_from= one at a time)."
                )
            arguments: dict[str, Any] = {
                "kind": "fact", "about": None, "source": None, "valid_from": None,
                "labels": None, "pinned": False, "session_only": False, "data": None,
                "language": None, "key": None, "metadata": None,
            }
            arguments.update({name: value for name, value in item.items() if name != "text"})
            new, data, explicit_start, formed = handle._prepare(
                item["text"], formation=formation, derived_from=None, walls=False, **arguments
            )
            prepared.append(_Item(new, data, explicit_start, formed))
        except MemorySDKError as exc:
            raise BatchError(index=start + position, stored=start, error=exc) from exc
    caller = handle._caller
    for position, one in enumerate(prepared):
        try:
            cap = check_write(caller, new_personal_memory=one.new.subject != TENANT_SUBJECT)
        except MemorySDKError as exc:
            raise BatchError(index=start + position, stored=start, error=exc) from exc
        if cap is not None:
            prepared[position] = dataclasses.replace(
                one, new=dataclasses.replace(one.new, cap=cap)
            )
    return prepared


def _write_batch(
    handle: _Handle,
    chunk: Sequence[Mapping[str, Any]],
    start: int,
    formation: bool | None,
    note: AuditNote,
    outcomes: Counter[str],
) -> list[MemoryRecord]:
    prepared = _prepared(handle, chunk, start, formation)
    caller = handle._caller
    services = caller.services
    subjects = sorted({
        services.anchor_subject(caller.tenant, one.new.subject)
        for one in prepared
        if one.formation or one.new.contents.key is not None
    })
    with services.keys.anchors.formation_locks(services.anchor_scope(caller.tenant), subjects):
        decided = _decide(handle, prepared, start, note, outcomes)
        stored = _store_new(handle, decided, start)
        _revise(handle, prepared, decided, stored, start, note, outcomes)
    if decided.uses:  # each repeat of a held memory counts as one use, as remember counts it
        count_uses(caller, decided.uses, now=services.now())
    for position, deferred in decided.new:
        if deferred.decision is not None:
            record = decided.records[position]
            try:
                handle._linked_new(record, stored[position].subject, deferred.decision,
                                   deferred.held)
            except MemorySDKError as exc:
                # Every memory of the batch is stored; a link that failed is derived data
                # the next write or a consolidation rebuilds.
                raise BatchError(index=start + position, stored=start + len(chunk),
                                 error=exc, reason="links") from exc
    for position, twin in decided.twins.items():
        held = decided.records[twin]
        formed = Formation(outcome="duplicate", target=held.id, reason="same-text-in-batch")
        decided.records[position] = held.model_copy(update={"formation": formed})
        outcomes["duplicate"] += 1
    note.memory_ids.extend(
        dict.fromkeys(decided.records[position].id for position in range(len(chunk)))
    )
    return [decided.records[position] for position in range(len(chunk))]


def _decide(
    handle: _Handle, prepared: list[_Item], start: int, note: AuditNote, outcomes: Counter[str]
) -> _Batch:
    """Step 2: formation decides each item; where it would write, the write is collected."""
    decided = _Batch(records={}, new=[], revisions=[], twins={}, uses=[])
    deferring = Deferring(handle, decided.uses)
    seen_texts: dict[tuple[object, ...], int] = {}
    seen_texts_only: set[tuple[str, str]] = set()
    seen_keys: set[tuple[str, str, str | None]] = set()
    for position, one in enumerate(prepared):
        contents = one.new.contents
        if not one.formation and contents.key is None:
            decided.new.append((position, _Pending(one.new, None, None, None)))
            outcomes["none"] += 1
            continue
        fact = contents.key_term()
        if contents.key is not None or fact is not None:
            # A caller key, or a typed fact's key: one memory each, so a repeat within the
            # batch is decided after the first one is stored.
            key = ("key", contents.key) if contents.key is not None else ("fact", fact)
            if (one.new.subject, *key) in seen_keys:
                decided.revisions.append(position)
                continue
            seen_keys.add((one.new.subject, *key))
        else:
            same = _sameness(one)
            if same in seen_texts:  # the very same memory again: the earlier one's duplicate
                decided.twins[position] = seen_texts[same]
                continue
            if (one.new.subject, contents.text) in seen_texts_only:
                # The same text with another kind, source, labels, data…: formation decides,
                # after the batch's new memories are stored (it sees the earlier one then).
                decided.revisions.append(position)
                continue
            seen_texts[same] = position
            seen_texts_only.add((one.new.subject, contents.text))
        scratch = AuditNote(note.person, ())
        token = DEFERRING.set(deferring)
        try:
            record = handle._formed(one.new, one.data, scratch, one.explicit_start)
        except Deferred as deferred:
            if deferred.new is None:
                decided.revisions.append(position)
            else:
                decided.new.append((position, _Pending(
                    deferred.new, deferred.decision, deferred.held, deferred.vector
                )))
                decision = deferred.decision
                outcomes["novel" if decision is None else decision.outcome] += 1
            continue
        except MemorySDKError as exc:
            raise BatchError(index=start + position, stored=start, error=exc) from exc
        finally:
            DEFERRING.reset(token)
        decided.records[position] = record  # a duplicate of a held memory: nothing to write
        outcomes["duplicate"] += 1
        note.memory_ids.extend(scratch.memory_ids)
    return decided


def _sameness(one: _Item) -> tuple[object, ...]:
    """What makes two items of a batch the very same memory (every field ``remember`` keeps
    but the time it was recorded)."""
    contents, new = one.new.contents, one.new
    return (
        new.subject, contents.text, contents.kind, contents.labels, contents.source,
        contents.trust, contents.session_only, new.pinned, contents.language,
        repr(contents.data), contents.data_type, contents.fact_key,
        repr(contents.metadata), contents.valid_from if one.explicit_start else None,
    )


def _store_new(handle: _Handle, decided: _Batch, start: int) -> dict[int, StoredRow]:
    """Step 3: the batch's new memories anchored, sealed, embedded and stored: all or none."""
    caller = handle._caller
    services = caller.services
    if not decided.new:
        return {}
    ids = {position: validate.new_memory_id() for position, _ in decided.new}
    by_subject: dict[str, list[int]] = {}
    deferred_of = dict(decided.new)
    for position, deferred in decided.new:
        by_subject.setdefault(deferred.new.subject, []).append(position)
    salts: dict[str, bytes] = {}
    try:
        for subject, positions in by_subject.items():
            news = [deferred_of[position].new for position in positions]
            salts.update(anchor_new_many(
                caller,
                subject,
                [(ids[position], new.contents.recorded_at, new.contents.labels)
                 for position, new in zip(positions, news, strict=True)],
                pinned={ids[position] for position, new in zip(positions, news, strict=True)
                        if new.pinned},
                cap=news[0].cap,
            ))
        rows: dict[int, StoredRow] = {}
        places: dict[int, Place] = {}
        for position, deferred in decided.new:
            new = deferred.new
            place = places[position] = Place(ids[position], 1, new.subject, new.pinned,
                                             new.contents.recorded_at, salts[ids[position]])
            rows[position] = seal(caller, new.contents, place)
        vectors = _vectors(handle, decided, rows, places)
        services.store.bulk_put(
            [rows[position] for position, _ in decided.new],
            {(rows[position].memory_id, 1): sealed for position, (sealed, _) in vectors.items()},
        )
    except MemorySDKError as exc:
        for memory_id in salts:
            with contextlib.suppress(MemorySDKError):
                unanchor(caller, memory_id)
        raise BatchError(index=start, stored=start, error=exc, reason="batch") from exc
    except BaseException:
        for memory_id in salts:
            with contextlib.suppress(MemorySDKError):
                unanchor(caller, memory_id)
        raise
    for position, deferred in decided.new:
        row, new = rows[position], deferred.new
        if position in vectors:  # formation's next neighbours know it
            index = embedding_index(caller, child=new.child)
            assert index is not None  # noqa: S101 - it sealed the vector
            index.wrote(row.tenant, row.app, row.subject, row.memory_id, 1, vectors[position][1])
        record_clean_verdict(services, row.tenant, row.memory_id, row.version, new.child)
        decided.records[position] = to_record(caller, row, new.contents)
    return rows


def _vectors(
    handle: _Handle, decided: _Batch, rows: dict[int, StoredRow], places: dict[int, Place]
) -> dict[int, tuple[bytes, npt.NDArray[np.float32]]]:
    """Each new memory's sealed embedding and the embedding (when an embedder applies): the
    texts formation did not embed already, in one call to the embedder."""
    caller = handle._caller
    index = {child: embedding_index(caller, child=child) for child in (False, True)}
    missing = [
        (position, deferred) for position, deferred in decided.new
        if deferred.vector is None and index[deferred.new.child] is not None
    ]
    made = {}
    if missing:
        embedder = index[False]
        assert embedder is not None  # noqa: S101 - a child never has one
        made = dict(zip(
            (position for position, _ in missing),
            embedder.embed_many([deferred.new.contents.text for _, deferred in missing]),
            strict=True,
        ))
    sealed: dict[int, tuple[bytes, npt.NDArray[np.float32]]] = {}
    for position, deferred in decided.new:
        vector = deferred.vector if deferred.vector is not None else made.get(position)
        if vector is None:
            continue
        one = seal_vector(caller, rows[position], places[position],
                          deferred.new.contents.text, child=deferred.new.child, vector=vector)
        if one is not None:
            sealed[position] = (one, vector)
    return sealed


def _revise(
    handle: _Handle,
    prepared: list[_Item],
    decided: _Batch,
    stored: dict[int, StoredRow],
    start: int,
    note: AuditNote,
    outcomes: Counter[str],
) -> None:
    """Step 4: the items that write a held memory's next version, in order, decided again
    (they now see the batch's new memories); if one fails, the batch's new memories after
    it are erased, so the store holds exactly the items before it."""
    for position in decided.revisions:
        # Never joined to a later item's memory: if a revision after this one fails, those
        # are erased again, and this item's result must not go with them.
        later = frozenset(row.memory_id for at, row in stored.items() if at > position)
        one = dataclasses.replace(prepared[position],
                                  new=dataclasses.replace(prepared[position].new,
                                                          leave_out=later))
        scratch = AuditNote(note.person, ())
        try:
            for attempt in range(_ATTEMPTS):
                try:
                    record = handle._formed(one.new, one.data, scratch, one.explicit_start)
                    break
                except (MemoryConflictError, MemoryNotFound):
                    if attempt == _ATTEMPTS - 1:
                        raise
                    scratch = AuditNote(note.person, ())
        except MemorySDKError as exc:
            undone = _undo_after(handle, decided, stored, position)
            raise BatchError(index=start + position, stored=start + position, error=exc,
                             reason="item" if undone else "undo") from exc
        except BaseException:  # the embedder's own, an interrupt: the same undoing
            _undo_after(handle, decided, stored, position)
            raise
        decided.records[position] = record
        outcome = record.formation.outcome if record.formation is not None else "none"
        outcomes[outcome] += 1
        note.memory_ids.extend(scratch.memory_ids)


def _undo_after(
    handle: _Handle, decided: _Batch, stored: dict[int, StoredRow], failed: int
) -> bool:
    """Erase the batch's new memories of the items after ``failed``; whether every erase
    went through."""
    caller = handle._caller
    services = caller.services
    undone = True
    for position, row in stored.items():
        if position > failed:
            try:
                services.erase_memory(caller.tenant, row.subject, row.memory_id,
                                      person=caller.person)
            except MemorySDKError:
                undone = False
            decided.records.pop(position, None)
    return undone
