"""Fork: another agent gets an independent copy of what one agent knows about a person.

:func:`fork` is ``ScopedMemory.fork``. It copies the calling agent's working memory
(:func:`~mainsdk_memory._working.copy_working`) and the current memories about the person
that its handle may see (its own, and every agent's when
its grant reads ``"all"``; never the tenant's shared memory, which is shared already)
to ``agent``, and returns that agent's handle. Each copy is a new memory (new id, version 1)
owned by the new agent, written through the handle's own write path with formation off, so
sealing, the blind index, vectors, entities and the new agent's limits apply as to any write:

- what it says is kept: text, kind, labels, typed data, source, trust (copied, never
  raised), ``valid_from``, language, pin and status; ``forked_from`` (sealed) names the
  original, and the creation time stays the original's, so retention is not restarted;
- lineage is kept: an insight's ``derived_from`` names the copies of its sources (with the
  links written, so forgetting a copied source forgets the copied insight); a source that
  was not copied stays named, so forgetting it still reaches every insight derived from it;
- quarantine is kept: a quarantined (untrusted) or session-only memory, and a working-memory
  value of this handle's session, is copied only into the fork's ``session``; with no
  session it is left out and counted in the report;
- the walls stand: a killed agent on either side is refused, a child's memories need the
  guardian's consent as a write does (and their copies stay text only), the injection check
  runs on every text, and the new agent's memories-per-person cap counts every copy. A fork
  refused or failing midway erases the memory copies it wrote and takes back every
  working-memory value it wrote (a value of the new agent's it had replaced is put back),
  so it copies everything or nothing.

After a fork the two sides share nothing but the person: a revision, pin or forget on one
never reaches the other, and erasing the person erases both. One audit event (``fork``)
names the copies' ids and the counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from mainsdk_memory import _validate as validate
from mainsdk_memory._auditing import AuditNote
from mainsdk_memory._caller import Caller
from mainsdk_memory._entities import drop_unmentioned, mentioned
from mainsdk_memory._errors import InvalidInputError, MemoryInjectionError, MemorySDKError
from mainsdk_memory._integrity import leave_out_tampered
from mainsdk_memory._records import Trust
from mainsdk_memory._relations import add_links, relation_store
from mainsdk_memory._scoped import ScopedMemory, caller_of
from mainsdk_memory._sealing import Contents, first_place, open_contents, seal
from mainsdk_memory._walls import check_injection, check_write, checked_text
from mainsdk_memory._working import Journal, copy_working, undo_working
from mainsdk_memory.drivers import StoredRow

__all__ = ["Fork", "fork"]

#: Rows read from the store per page while collecting what to copy.
_PAGE = 500


class Fork(BaseModel):
    """What :meth:`ScopedMemory.fork` did: the new agent's handle and what was copied."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    handle: ScopedMemory
    """The new agent's handle for the person, in the fork's session."""
    memories: int
    """Memories copied."""
    working: int
    """Working-memory values copied."""
    working_left: int = 0
    """Working-memory values of this handle's session left out: they stay in one session,
    and the fork has none (they are never made person-wide)."""
    quarantined_left: int = 0
    """Quarantined memories left out: they stay in one session, and the fork has none."""
    session_only_left: int = 0
    """Session-only memories left out, for the same reason."""
    flagged_left: int = 0
    """Memories the injection check flags now, left out (each audited as an ``omit``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Original:
    """A memory to copy: its current row and what it says."""

    row: StoredRow
    contents: Contents


def fork(handle: ScopedMemory, *, agent: str, session: str | None = None) -> Fork:
    """``ScopedMemory.fork``: see the module docstring and docs/concepts.md, "Fork"."""
    with handle._begin("fork") as note:
        source = caller_of(handle)
        services = source.services
        target_agent = validate.name(agent, "agent")
        target_session = None if session is None else validate.name(session, "session")
        if target_agent == source.agent:
            raise InvalidInputError(
                "A fork gives another agent a copy: name an agent other than this handle's; "
                "nothing was copied."
            )
        target = Caller(services, source.tenant, source.person, target_agent, target_session)
        forked = ScopedMemory(target)
        note.extra.append(("target_agent", target_agent))
        originals = _visible_originals(source)  # this handle's kill switch is checked here
        # The new agent's walls, before anything is written.
        child = caller_of(forked).child_write()  # a child's memories before consent: refused
        cap = check_write(target, new_personal_memory=True)  # its kill switch, rate and cap
        quarantined_left = session_only_left = flagged_left = 0
        chosen: list[_Original] = []
        for original in originals:
            contents = original.contents
            if target_session is None and contents.trust is Trust.UNTRUSTED:
                quarantined_left += 1
            elif target_session is None and contents.session_only:
                session_only_left += 1
            elif not _clean(source, original, child=child):
                flagged_left += 1
            else:
                chosen.append(original)
        copies: dict[str, str] = {}
        written: list[str] = []
        journal: Journal = []
        try:
            for original in _sources_first(chosen):
                copies[original.row.memory_id] = _copy(
                    forked, original, copies, written, note, child=child, cap=cap
                )
            working = working_left = 0
            if services.driver.capabilities.person_records:  # else there is none to copy
                working, working_left = copy_working(source, target, journal, child=child)
        except BaseException:
            undo_working(target, journal)
            _undo(target, written)
            note.memory_ids.clear()
            raise
        note.count = len(copies)
        note.extra.extend(
            [
                ("working", str(working)),
                ("working_left", str(working_left)),
                ("quarantined_left", str(quarantined_left)),
                ("session_only_left", str(session_only_left)),
                ("flagged_left", str(flagged_left)),
            ]
        )
        return Fork(
            handle=forked,
            memories=len(copies),
            working=working,
            working_left=working_left,
            quarantined_left=quarantined_left,
            session_only_left=session_only_left,
            flagged_left=flagged_left,
        )


def _visible_originals(source: Caller) -> list[_Original]:
    """The current memories about the person ``source`` may see (not shared ones), opened;
    a memory that fails its integrity check is left out (and audited), as a listing does."""
    where = dataclasses.replace(source.filter(), subjects=(source.pseudonym(),))
    store = source.services.store
    found: list[_Original] = []
    after: tuple[datetime, str] | None = None
    while True:
        rows = store.list(where, limit=_PAGE, after=after)
        found += leave_out_tampered(
            source, rows, lambda row: _Original(row, open_contents(source, row))
        )
        if len(rows) < _PAGE:
            return found
        after = (rows[-1].created_at, rows[-1].memory_id)


def _clean(source: Caller, original: _Original, *, child: bool) -> bool:
    """Whether the injection check passes the text now (a child's: the model-free one);
    a flagged one is audited as a recall's omission is."""
    labels = original.contents.labels
    try:
        contents = original.contents
        check_injection(
            source.services,
            checked_text(contents.text, contents.metadata),
            child=child or validate.CHILD_LABEL in labels,
        )
    except MemoryInjectionError as error:
        source.services.audit.omitted(
            source.tenant, source.actor, source.person, original.row.memory_id,
            ",".join(error.rules),
        )
        return False
    return True


def _sources_first(originals: Sequence[_Original]) -> list[_Original]:
    """``originals`` ordered so each insight comes after the memories it was derived from
    that are copied too (a cycle, which a merge can leave, is broken in listing order)."""
    waiting = list(originals)
    ordered: list[_Original] = []
    done: set[str] = set()
    while waiting:
        pending = {one.row.memory_id for one in waiting}
        ready = [
            one for one in waiting
            if not any(s in pending and s != one.row.memory_id
                       for s in one.contents.derived_from)
        ] or waiting[:1]
        for one in ready:
            ordered.append(one)
            done.add(one.row.memory_id)
        waiting = [one for one in waiting if one.row.memory_id not in done]
    return ordered


def _copy(
    forked: ScopedMemory,
    original: _Original,
    copies: dict[str, str],
    written: list[str],
    note: AuditNote,
    *,
    child: bool,
    cap: int | None,
) -> str:
    """Write ``original``'s copy as ``forked``'s agent, as a new memory's first version is
    written (anchored under the agent's cap, linked to its sources before its row exists,
    sealed, embedded, its entities named); its id. ``written`` gets the id once anchored."""
    target = caller_of(forked)
    held, row = original.contents, original.row
    labels = held.labels
    if child and validate.CHILD_LABEL not in labels:
        labels = (*labels, validate.CHILD_LABEL)
    derived: tuple[str, ...] = ()
    if relation_store(target) is not None:  # only a driver with relations holds insights
        derived = tuple(dict.fromkeys(
            copies.get(one, one) for one in held.derived_from if one != row.memory_id
        ))
    now = target.services.now()
    contents = dataclasses.replace(
        held,
        labels=labels,
        agent=target.agent,
        author=target.agent,
        session=target.session,
        session_token=target.session_token(),
        recorded_at=now,
        formation=None,
        revision=None,
        derived_from=derived,
        forked_from=row.memory_id,
    )
    # The original's creation time: retention counts from it, so a fork never extends it.
    place = first_place(target, target.person, pinned=row.pinned, created_at=row.created_at,
                        labels=labels, cap=cap)
    written.append(place.memory_id)
    note.memory_ids.append(place.memory_id)
    pseudonym = target.pseudonym()
    if derived:  # before the row: an insight is never stored unlinked
        add_links(target, [(place.memory_id, one, pseudonym, "derived_from", None)
                           for one in derived], subjects={}, now=now)
    sealed = seal(target, contents, place)
    record = forked._put_version(
        sealed, place, contents, child=validate.CHILD_LABEL in labels
    )
    forked._link(record, pseudonym)  # the entities its text names, as formation does
    return record.id


def _undo(target: Caller, copies: list[str]) -> None:
    """Erase what a refused fork wrote (anchors, rows, links, entities), newest first; best
    effort: a copy that cannot be erased now is the new agent's, and the person can forget it."""
    services = target.services
    pseudonym = target.pseudonym()
    for memory_id in reversed(copies):
        with contextlib.suppress(MemorySDKError):
            named = mentioned(target, memory_id) if relation_store(target) is not None else []
            services.erase_memory(target.tenant, pseudonym, memory_id, person=target.person)
            drop_unmentioned(target, pseudonym, named)
