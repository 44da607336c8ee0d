"""Context assembly: the pinned memories first, then the recalled ones, as one escaped block.

``context()`` hands an app one untrusted-data block for a *user* message; this module picks
what goes in it and in what order, and :mod:`mainsdk_memory._context` renders it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mainsdk_memory import _validate as validate
from mainsdk_memory._caller import Caller
from mainsdk_memory._context import ContextEntry, render_context
from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory._integrity import leave_out_tampered
from mainsdk_memory._records import Hit, MemoryRecord
from mainsdk_memory._sealing import open_record
from mainsdk_memory._walls import screen

__all__ = ["assemble", "check_max_chars", "pinned_records"]


def check_max_chars(max_chars: object) -> int | None:
    """``max_chars`` if it is ``None`` or a positive whole number."""
    if max_chars is not None and (
        not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1
    ):
        raise InvalidInputError("max_chars must be a positive whole number.")
    return max_chars


def pinned_records(caller: Caller) -> list[MemoryRecord]:
    """The caller's pinned memories (newest first), screened by the injection check."""
    where = caller.filter(pinned=True)
    rows = caller.services.store.list(where, limit=validate.MAX_PINNED_IN_CONTEXT)
    return screen(caller, leave_out_tampered(caller, rows, lambda row: open_record(caller, row)))


def entry(record: MemoryRecord, contradicts: Sequence[str] = ()) -> ContextEntry:
    """How one memory appears in the block (``contradicts``: the ids of those in the block
    it contradicts)."""
    return ContextEntry(
        id=record.id,
        kind=record.kind.value,
        text=record.text,
        recorded_at=record.recorded_at,
        valid_from=record.valid_from,
        valid_to=record.valid_to,
        trust=record.trust.value,
        source=record.source.kind,
        pinned=record.pinned,
        status=None if record.status == "active" else record.status,
        contradicts=tuple(contradicts),
    )


def assemble(
    pinned: Sequence[MemoryRecord],
    hits: Sequence[Hit],
    *,
    max_chars: int | None,
    contradictions: Mapping[str, Sequence[MemoryRecord]] | None = None,
) -> tuple[str, list[str]]:
    """The block of ``pinned`` then ``hits`` (each memory once), and the ids it holds.

    ``contradictions`` maps a memory's id to the memories that contradict it: each follows
    it in the block (side by side, whether or not it matched), and both carry a
    ``contradicts`` mark naming the other, so the model sees the disagreement."""
    records = list(pinned)
    seen = {record.id for record in records}
    records += [hit.record for hit in hits if hit.record.id not in seen]
    against = contradictions or {}
    placed: list[MemoryRecord] = []
    seen = set()
    for record in records:
        for one in (record, *against.get(record.id, ())):
            if one.id not in seen:
                seen.add(one.id)
                placed.append(one)
    marks: dict[str, list[str]] = {}
    for record_id, others in against.items():
        for other in others:
            if record_id in seen and other.id in seen:
                marks.setdefault(record_id, []).append(other.id)
                marks.setdefault(other.id, []).append(record_id)
    entries = [
        entry(record, sorted(set(marks.get(record.id, ())))) for record in placed
    ]
    try:
        block = render_context(entries, max_chars=max_chars)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    return block, [item.id for item in entries]
