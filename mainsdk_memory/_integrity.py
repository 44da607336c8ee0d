"""Integrity against whoever can write the memory store: every row checked against its anchor.

The key store's anchors (:mod:`mainsdk_memory.keys._anchors`, ADR 0047) hold, per live
memory, the highest version written, the pinned flag, the creation time and the salt of the
memory's seal key. Every row the core opens is checked here first: a current row older than
the anchor (a rollback), a creation time or pinned flag that is not the anchored one, or a
memory with no anchor (forgotten, or never written by this key store) is an
:class:`IntegrityError`; nothing older is ever returned in its place.

A write anchors before and after the store's change, so an interrupted write leaves a state
the next read accepts: a first version's anchor exists before its row does; a version the
anchor has not counted yet is newer, never older, and only a writer with the key can make it;
a pin change accepts either flag until it completes.
"""

from __future__ import annotations

from datetime import datetime

from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import IntegrityError, LimitExceededError
from mainsdk_memory.drivers import StoredRow
from mainsdk_memory.keys._anchors import PIN_CHANGING, CapReached, MemoryAnchor

__all__ = ["anchor_new", "anchor_of", "pin_changed", "pin_changing", "written"]


def anchor_new(
    caller: Caller,
    subject: str,
    memory_id: str,
    *,
    pinned: bool,
    created_at: datetime,
    cap: int | None,
) -> bytes:
    """Anchor a memory about to be written; return its salt.

    ``cap`` is the agent's memories-per-person limit (counted with the insert, atomically
    across processes); :class:`LimitExceededError` when it is reached.
    """
    services = caller.services
    try:
        return services.keys.anchors.create(
            services.anchor_scope(caller.tenant),
            memory_id,
            services.anchor_subject(caller.tenant, subject),
            agent=caller.agent,
            pinned=pinned,
            created_at=created_at,
            cap=cap,
        )
    except CapReached:
        raise LimitExceededError(
            f"The agent already holds {cap} memories about this person, its limit; "
            "nothing was stored. Forget or revise old ones, or raise the limit."
        ) from None


def anchor_of(caller: Caller, row: StoredRow) -> MemoryAnchor:
    """The anchor of ``row``'s memory, once ``row`` agrees with it; else :class:`IntegrityError`.

    A current row (``valid_to`` unset) must be at least the anchored version and carry the
    anchored pinned flag; every row carries the anchored creation time and subject.
    """
    services = caller.services
    anchor = services.keys.anchors.memory(services.anchor_scope(caller.tenant), row.memory_id)
    if anchor is None:
        raise IntegrityError(row.memory_id)
    subject = services.anchor_subject(caller.tenant, caller.subject_of(row))
    agrees = anchor.subject == subject and anchor.created_at == row.created_at
    if agrees and row.valid_to is None:
        agrees = anchor.pinned in (PIN_CHANGING, row.pinned) and (
            row.version >= anchor.version or _superseded(caller, row, anchor.version)
        )
    if not agrees:
        raise IntegrityError(row.memory_id)
    return anchor


def _superseded(caller: Caller, row: StoredRow, version: int) -> bool:
    """Whether ``row`` was current when it was read and a newer version was written since (a
    read that raced a revision), rather than brought back: the store now holds a current
    version at least as new as the anchor's."""
    rows = caller.services.store.versions(caller.tenant, caller.app, (row.subject,), row.memory_id)
    return any(other.valid_to is None and other.version >= version for other in rows)


def written(caller: Caller, row: StoredRow) -> None:
    """Count ``row``'s version as written, once the store holds it (a first version needs no
    count: there is nothing older to roll back to)."""
    if row.version > 1:
        services = caller.services
        services.keys.anchors.advance(
            services.anchor_scope(caller.tenant), row.memory_id, row.version
        )


def pin_changing(caller: Caller, memory_id: str) -> None:
    """Before the store's pinned flag changes: accept either flag."""
    services = caller.services
    services.keys.anchors.set_pinned(services.anchor_scope(caller.tenant), memory_id, PIN_CHANGING)


def pin_changed(caller: Caller, memory_id: str, pinned: bool) -> None:
    """After the store's pinned flag changed: accept only ``pinned``."""
    services = caller.services
    services.keys.anchors.set_pinned(
        services.anchor_scope(caller.tenant), memory_id, int(pinned)
    )

