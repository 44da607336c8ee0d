"""How shared memory leaves quarantine: the app confirms it, since it reaches everyone.

A shared (``about="tenant"``) memory reaches every person's agents in the tenant, so no one
person may vouch for it (:meth:`PersonMemory.confirm` refuses it). The app confirms it with
:meth:`Memory.confirm_shared`, which sees the shared memory of every session; its next
version is ``confirmed`` with ``confirmed_by`` and ``author`` :data:`APP_CONFIRMER` (ADR 0045).
"""

from __future__ import annotations

import dataclasses

from mainsdk_memory import _validate as validate
from mainsdk_memory._caller import Caller
from mainsdk_memory._errors import InvalidInputError, MemoryNotFound
from mainsdk_memory._integrity import check_versions, written
from mainsdk_memory._records import MemoryRecord, Trust
from mainsdk_memory._sealing import next_place, open_contents, seal, seal_vector, to_record
from mainsdk_memory._services import Services
from mainsdk_memory.drivers import TENANT_SUBJECT

__all__ = ["APP_CONFIRMER", "confirm_shared"]

#: Who confirmed a shared memory the app confirmed (no person or agent name starts with "@").
APP_CONFIRMER = "@app"


def confirm_shared(services: Services, tenant_id: str, memory_id: object) -> MemoryRecord:
    """Confirm the shared memory ``memory_id`` of ``tenant_id`` as the app and return it.

    Its text, kind, labels, data and source stay; confirming a confirmed memory changes
    nothing. A personal memory's id, or an unknown one, raises :class:`MemoryNotFound`.
    """
    if not isinstance(memory_id, str):
        raise InvalidInputError("A memory id is a string like 'mem_…'.")
    if not validate.MEMORY_ID.fullmatch(memory_id):
        raise MemoryNotFound
    app = services.app
    rows = services.store.versions(tenant_id, app, (TENANT_SUBJECT,), memory_id)
    current = rows[-1] if rows else None
    if current is None or current.valid_to is not None or current.subject != TENANT_SUBJECT:
        raise MemoryNotFound
    # The app sees the shared memory of every session (and of none), but not past retention.
    expired = any(
        label in current.labels and current.created_at < cutoff
        for label, cutoff in services.retention_cutoffs()
    )
    if expired:
        raise MemoryNotFound
    caller = Caller(services, tenant_id, APP_CONFIRMER, APP_CONFIRMER, None)
    held = open_contents(caller, current)
    if held.trust is Trust.CONFIRMED:
        return to_record(caller, current, held)
    now = services.now()
    retained = services.settings.retention
    check_versions(rows)
    first = held if len(rows) == 1 else open_contents(caller, rows[0], versions=rows)
    kept = [label for label in first.labels if label in retained and label not in held.labels]
    contents = dataclasses.replace(
        held,
        labels=(*held.labels, *kept),
        trust=Trust.CONFIRMED,
        author=APP_CONFIRMER,
        confirmed_by=APP_CONFIRMER,
        recorded_at=now,
        valid_from=max(now, current.valid_from),
    )
    place = next_place(caller, current)
    row = seal(caller, contents, place)
    child = validate.CHILD_LABEL in contents.labels
    vector = seal_vector(caller, row, place, contents.text, child=child)
    # No clean verdict is recorded: the text was not checked now, so recall screens it.
    services.store.put(row, closes=current.version, vector=vector)
    written(caller, row)
    return to_record(caller, row, contents)
