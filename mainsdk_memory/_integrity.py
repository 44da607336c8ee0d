"""Integrity against whoever can write the memory store: every row checked against its anchor.

The key store's anchors (:mod:`mainsdk_memory.keys._anchors`, ADR 0047) hold, per live
memory, the highest version written, its labels, the pinned flag, the creation time and the
salt of the memory's seal key. Every row the core opens is checked here first: a current row
older than the anchor (a rollback), a creation time or pinned flag that is not the anchored
one, or a memory with no anchor (forgotten, or never written by this key store) is an
:class:`IntegrityError`; nothing older is ever returned in its place. A closed version's end
is checked against the next version's sealed start in :mod:`mainsdk_memory._sealing`.

A write anchors before and after the store's change, so an interrupted write leaves a state
the next read accepts: a first version's anchor exists before its row does; a version the
anchor has not counted yet is newer, never older, and only a writer with the key can make it;
a pin change accepts either flag until it completes. A reader that raced a writer reads the
store once more before it calls anything a rollback.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import TypeVar

from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import IntegrityError, LimitExceededError, MemoryConflictError
from mainsdk_memory._guard import StaleSnapshot
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow
from mainsdk_memory.keys._anchors import PIN_CHANGING, CapReached, MemoryAnchor

__all__ = [
    "anchor_new",
    "anchor_new_many",
    "anchor_of",
    "anchored_pin",
    "check_versions",
    "leave_out_tampered",
    "pin_changed",
    "pin_changing",
    "unanchor",
    "written",
]

_Item = TypeVar("_Item")
_Opened = TypeVar("_Opened")


def anchor_new(
    caller: Caller,
    subject: str,
    memory_id: str,
    *,
    pinned: bool,
    created_at: datetime,
    labels: tuple[str, ...],
    cap: int | None,
) -> bytes:
    """Anchor a memory about to be written; return its salt.

    ``cap`` is the agent's memories-per-person limit (counted with the insert, atomically
    across processes); :class:`LimitExceededError` when it is reached.
    """
    services = caller.services
    try:
        return services.keys.anchors.anchor(
            services.anchor_scope(caller.tenant),
            memory_id,
            services.anchor_subject(caller.tenant, subject),
            TENANT_SUBJECT if subject == TENANT_SUBJECT else caller.pseudonym(),
            agent=caller.agent,
            pinned=pinned,
            created_at=created_at,
            labels=labels,
            cap=cap,
        )
    except CapReached:
        raise LimitExceededError(
            f"The agent already holds {cap} memories about this person, its limit; "
            "nothing was stored. Forget or revise old ones, or raise the limit."
        ) from None


def anchor_new_many(
    caller: Caller,
    subject: str,
    entries: Sequence[tuple[str, datetime, tuple[str, ...]]],
    *,
    pinned: Collection[str],
    cap: int | None,
) -> dict[str, bytes]:
    """Anchor many memories of ``subject`` about to be written, ``(id, created_at, labels)``
    each, in one transaction; return their salts. ``cap`` as :func:`anchor_new` (none of
    them is anchored if they would pass it together)."""
    services = caller.services
    name = services.anchor_subject(caller.tenant, subject)
    row_subject = TENANT_SUBJECT if subject == TENANT_SUBJECT else caller.pseudonym()
    try:
        return services.keys.anchors.anchor_many(
            services.anchor_scope(caller.tenant),
            [(memory_id, name, row_subject, caller.agent, created_at, labels)
             for memory_id, created_at, labels in entries],
            pinned=pinned,
            cap=cap,
        )
    except CapReached:
        raise LimitExceededError(
            f"These memories would take the agent past {cap} memories about this person, "
            "its limit; nothing of this batch was stored. Forget or revise old ones, or "
            "raise the limit."
        ) from None


def unanchor(caller: Caller, memory_id: str) -> None:
    """Drop the anchor of a memory whose first write failed (it holds no row)."""
    services = caller.services
    services.keys.anchors.drop(services.anchor_scope(caller.tenant), memory_id)


def anchor_of(caller: Caller, row: StoredRow) -> MemoryAnchor:
    """The anchor of ``row``'s memory, once ``row`` agrees with it; else :class:`IntegrityError`.

    Every row carries the anchored subject and creation time; a current row (``valid_to``
    unset) is at least the anchored version and carries the anchored pinned flag. One that
    was current when it was read and has been replaced since (a reader that raced a writer,
    checked by reading the store again) raises :class:`MemoryConflictError`: it is never
    served, since a store's writer could stage the same picture.
    """
    services = caller.services
    anchor = services.keys.anchors.memory(services.anchor_scope(caller.tenant), row.memory_id)
    if anchor is None:
        raise IntegrityError(row.memory_id)
    subject = services.anchor_subject(caller.tenant, caller.subject_of(row))
    agrees = anchor.subject == subject and anchor.created_at == row.created_at
    if agrees and row.valid_to is None:
        current = row.version >= anchor.version and anchor.pinned in (PIN_CHANGING, row.pinned)
        if not current and _raced(caller, row, anchor):
            # What was read is no longer the memory's state: never serve it (a store's
            # writer could stage exactly this). The caller reads again, or leaves it out.
            raise MemoryConflictError(
                "The memory changed while it was read (a revision or a pin in another call); "
                "nothing was returned. Read it again."
            )
        agrees = current
    if not agrees:
        raise IntegrityError(row.memory_id)
    return anchor


def check_versions(rows: Sequence[StoredRow]) -> None:
    """:class:`IntegrityError` unless ``rows`` are one memory's versions 1, 2, … with none
    missing (a store's writer who deleted old versions would otherwise go unnoticed)."""
    if rows and [row.version for row in rows] != list(range(1, len(rows) + 1)):
        raise IntegrityError(rows[0].memory_id)


def _raced(caller: Caller, row: StoredRow, anchor: MemoryAnchor) -> bool:
    """Whether ``row`` disagrees with ``anchor`` only because a writer changed the memory
    between the read and the check: read again, the same version is now closed and a newer one
    is current (a revision), or the current version now carries the anchored flag (a pin)."""
    if caller.services.store.in_snapshot():
        raise StaleSnapshot  # the same snapshot would say the same: read again outside it
    rows = caller.services.store.versions(caller.tenant, caller.app, (row.subject,), row.memory_id)
    again = {other.version: other for other in rows}
    same = again.get(row.version)
    if same is None:
        return False
    if same.valid_to is not None:  # revised since: the newer version must be there
        return any(
            other.valid_to is None and other.version >= anchor.version for other in rows
        )
    fresh = caller.services.keys.anchors.memory(
        caller.services.anchor_scope(caller.tenant), row.memory_id
    )
    return (
        fresh is not None
        and row.version >= fresh.version
        and fresh.pinned in (PIN_CHANGING, same.pinned)
        and same.pinned != row.pinned  # the flag did move between the two reads
    )


def anchored_pin(anchor: MemoryAnchor, row: StoredRow) -> bool:
    """The pinned flag a new version of ``row``'s memory carries: the anchored one (the row's
    while a pin change is under way)."""
    return row.pinned if anchor.pinned == PIN_CHANGING else bool(anchor.pinned)


def written(caller: Caller, row: StoredRow) -> None:
    """Count ``row``'s version (and its labels) as written, once the store holds it (a first
    version needs no count: there is nothing older to roll back to).

    A pin that completed while the version was being written left the new row with the old
    flag: the store is given the anchored one.
    """
    if row.version == 1:
        return
    services = caller.services
    scope = services.anchor_scope(caller.tenant)
    services.keys.anchors.advance(scope, row.memory_id, row.version, row.labels)
    anchor = services.keys.anchors.memory(scope, row.memory_id)
    if anchor is not None and anchor.pinned not in (PIN_CHANGING, row.pinned):
        services.store.set_pinned(
            caller.tenant, caller.app, row.subject, row.memory_id, bool(anchor.pinned)
        )


def pin_changing(caller: Caller, memory_id: str) -> None:
    """Before the store's pinned flag changes: accept either flag."""
    services = caller.services
    services.keys.anchors.set_pinned(services.anchor_scope(caller.tenant), memory_id, PIN_CHANGING)


def pin_changed(caller: Caller, memory_id: str, pinned: bool) -> None:
    """After the store's pinned flag changed (or failed to: the old flag): accept only
    ``pinned``."""
    services = caller.services
    services.keys.anchors.set_pinned(
        services.anchor_scope(caller.tenant), memory_id, int(pinned)
    )


def leave_out_tampered(
    caller: Caller, items: Iterable[_Item], open_one: Callable[[_Item], _Opened]
) -> list[_Opened]:
    """``open_one`` of each of ``items``, without those whose memory fails its integrity
    check (:class:`IntegrityError`), each left out with an audit event that names it (ADR
    0047: a listing or a recall is not refused whole for one memory someone edited)."""
    opened = []
    for item in items:
        try:
            opened.append(open_one(item))
        except MemoryConflictError:
            continue  # changed while read: this listing leaves it out, the next has it
        except IntegrityError as error:
            if error.memory_id is not None and _forgotten(caller, error.memory_id):
                continue  # forgotten between the read and the check: nothing to report
            caller.services.audit.integrity(
                caller.tenant, caller.actor, caller.person, error.memory_id
            )
    return opened


def _forgotten(caller: Caller, memory_id: str) -> bool:
    """Whether the memory has neither an anchor nor a row left (a forget ran meanwhile)."""
    services = caller.services
    if services.store.in_snapshot():
        raise StaleSnapshot  # its rows may be gone since the snapshot: read again outside it
    if services.keys.anchors.memory(services.anchor_scope(caller.tenant), memory_id):
        return False
    subjects = caller.filter().subjects
    return not services.store.versions(caller.tenant, caller.app, subjects, memory_id)
