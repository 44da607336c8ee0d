"""Backfilling embeddings: give every stored version this store's embedder's sealed vector.

A store written before an embedder was configured (or under another one) holds versions with
no vector, or with a vector recall leaves out as foreign. :func:`reindex` walks the memories
of one tenant and app, opens each version that lacks this embedder's vector, embeds its text
and stores the sealed vector with :meth:`VectorDriver.put_vector` (ADR 0070, issue 14).

Which memories: the key store's anchors list every live memory of the tenant and app with the
pseudonym its rows carry (ADR 0047), whatever its session or quarantine. Shared memories (the
tenant's) are always reached. A person's memories are sealed with associated data that names
the person, and neither the store nor the key store can turn a pseudonym back into a person's
id (on purpose), so a person's memories are reached only when the caller names the person;
the memories of pseudonyms nobody named are counted as ``unreached``, never opened.

Resumable and idempotent: a version whose stored vector opens as this embedder's is left
alone, so a second run embeds nothing and an interrupted run continues where it stopped. A
memory that fails its integrity check, or whose rows are damaged, is skipped and counted. A
child's memories stay text only, whatever the embedder: they are skipped and counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from mainsdk_memory import _validate as validate
from mainsdk_memory._caller import PERSON_AGENT, Caller
from mainsdk_memory._errors import (
    DamagedMemoryError,
    MemoryConflictError,
    SealError,
)
from mainsdk_memory._progress import Progress, checked
from mainsdk_memory._sealing import open_contents, open_vector, vector_ad
from mainsdk_memory._services import Services
from mainsdk_memory._vectors import VectorIndex, pack
from mainsdk_memory.drivers import TENANT_SUBJECT, Filter, StoredRow, VectorEntry

__all__ = ["ReindexReport", "reindex"]

#: The caller's person on the pass over shared memories (never a person's id: ids cannot
#: start with "@", and a shared row is opened with the tenant's keys).
_SHARED = "@tenant"


@dataclass(slots=True)
class ReindexReport:
    """What one :meth:`Memory.reindex` did in one tenant (counts only; filled in as it runs)."""

    tenant: str
    embedder: str
    memories: int = 0
    """Memories walked (the tenant's shared ones and the named people's)."""
    scanned: int = 0
    """Versions looked at."""
    embedded: int = 0
    """Versions given this embedder's vector now (``replaced`` included)."""
    replaced: int = 0
    """Of ``embedded``: versions whose vector was another embedder's."""
    current: int = 0
    """Versions that already had this embedder's vector (left alone)."""
    skipped_damaged: int = 0
    """Versions not embedded because their memory failed its integrity check, or was erased
    meanwhile; a memory whose rows cannot be read at all (damaged) counts once."""
    skipped_child: int = 0
    """Versions not embedded: about a child (a child's memories stay text only)."""
    skipped_unseen: int = 0
    """Versions no read can see (a shared memory quarantined outside any session)."""
    unreached: int = 0
    """Memories of people nobody named (a pseudonym cannot be turned back into a person)."""

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return asdict(self)


def _seeing(row: StoredRow, person: bool) -> Filter | None:
    """A filter whose ``vectors()`` returns exactly ``row``'s entry, or ``None`` if no read
    can see the row (a shared, quarantined row written outside any session)."""
    where = Filter(
        tenant=row.tenant,
        app=row.app,
        subjects=(row.subject,),
        session=None if person else row.session,
        as_of=None if row.valid_to is None else row.valid_from,
        any_session=person,
    )
    return where if where.matches(row) else None


def reindex(
    services: Services,
    index: VectorIndex,
    tenant_id: str,
    people: Iterable[str],
    *,
    batch: int,
    progress: Progress | None,
) -> ReindexReport:
    """Backfill ``tenant_id``'s shared memories and those of ``people`` (see the module);
    ``progress(done, total)`` after each batch, in memories."""
    progress = checked(progress)
    named = sorted({validate.person(person) for person in people})
    callers: dict[str, Caller] = {
        TENANT_SUBJECT: Caller(services, tenant_id, _SHARED, PERSON_AGENT, None)
    }
    for person in named:
        caller = Caller(services, tenant_id, person, PERSON_AGENT, None)
        callers[caller.pseudonym()] = caller
    found = services.keys.anchors.memories(services.anchor_scope(tenant_id))
    work = [(subject, memory_id) for subject, memory_id in found if subject in callers]
    counts = ReindexReport(tenant=tenant_id, embedder=index.name, unreached=len(found) - len(work))
    total = len(work)
    children: dict[str, bool] = {}
    for start in range(0, total, batch):
        chunk = work[start : start + batch]
        by_subject: dict[str, list[str]] = {}
        for subject, memory_id in chunk:
            by_subject.setdefault(subject, []).append(memory_id)
        for subject, ids in by_subject.items():
            caller = callers[subject]
            if subject != TENANT_SUBJECT and subject not in children:
                children[subject] = caller.is_child()
            child = children.get(subject, False)
            _subject_batch(services, index, caller, subject, ids, child=child, counts=counts)
        if progress is not None:
            progress(start + len(chunk), total)
    return counts


def _subject_batch(
    services: Services,
    index: VectorIndex,
    caller: Caller,
    subject: str,
    ids: list[str],
    *,
    child: bool,
    counts: ReindexReport,
) -> None:
    """Embed what ``ids`` (memories of one row subject) lack."""
    store, app, tenant_id = services.store, services.app, caller.tenant
    person = subject != TENANT_SUBJECT
    memories: dict[str, list[StoredRow]] = {}
    for memory_id in ids:
        counts.memories += 1
        try:
            rows = store.versions(tenant_id, app, (subject,), memory_id)
        except DamagedMemoryError:
            counts.skipped_damaged += 1
            continue
        memories[memory_id] = rows
    # Which versions hold a vector already: one vectors() call per distinct view.
    views: dict[Filter, list[StoredRow]] = {}
    for rows in memories.values():
        for row in rows:
            counts.scanned += 1
            where = _seeing(row, person)
            if where is None:
                counts.skipped_unseen += 1
            else:
                views.setdefault(where, []).append(row)
    stored: dict[tuple[str, int], VectorEntry] = {}
    for where, rows in views.items():
        wanted = {(row.memory_id, row.version) for row in rows}
        for entry in store.vectors(where):
            if (entry.memory_id, entry.version) in wanted:
                stored[(entry.memory_id, entry.version)] = entry
    todo: list[tuple[StoredRow, str, bool]] = []  # row, text, whether it replaces a vector
    for rows in views.values():
        for row in rows:
            held = stored.get((row.memory_id, row.version))
            replacing = held is not None
            if held is not None:
                try:
                    if index.is_current(open_vector(caller, held)):
                        counts.current += 1
                        continue
                except SealError:
                    pass  # an unopenable vector is replaced if the memory itself opens
            if child:
                counts.skipped_child += 1
                continue
            try:
                contents = open_contents(caller, row, versions=memories[row.memory_id])
            except (SealError, DamagedMemoryError):  # IntegrityError is a SealError
                counts.skipped_damaged += 1
                continue
            todo.append((row, contents.text, replacing))
    if not todo:
        return
    vectors = index.embed_many([text for _row, text, _replacing in todo])
    scope = services.anchor_scope(tenant_id)
    core_subject = TENANT_SUBJECT if not person else caller.person
    keys = services.subject_keys(tenant_id, core_subject, create=False)
    for (row, _text, replacing), vector in zip(todo, vectors, strict=True):
        anchor = services.keys.anchors.memory(scope, row.memory_id)
        if keys is None or anchor is None:
            counts.skipped_damaged += 1  # erased meanwhile
            continue
        sealed = keys.seal_memory(
            anchor.salt,
            pack(index.name, vector),
            vector_ad(caller, core_subject, row.memory_id, row.version),
        )
        try:
            store.put_vector(tenant_id, app, subject, row.memory_id, row.version, sealed)
        except (MemoryConflictError, DamagedMemoryError):
            counts.skipped_damaged += 1  # the version was erased, or damaged, meanwhile
            continue
        counts.embedded += 1
        counts.replaced += int(replacing)
        # This process may hold the old (foreign) verdict of that version: forget it.
        index.discard(tenant_id, app, subject, row.memory_id)
