"""The two handles: an agent acting for a person (``ScopedMemory``), and the person themself.

Each public call resolves the tenant, checks its input before anything changes, and emits one
audit event (ids only). The handle composes the core's parts: who is calling
(:mod:`._caller`), one version in and out of its seal (:mod:`._sealing`), the walls
(:mod:`._walls`), the recall pipeline (:mod:`._recall`) and context assembly
(:mod:`._assembly`).
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import dataclasses
import enum
import json
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from mainsdk_memory import _validate as validate
from mainsdk_memory import receipts as _receipts
from mainsdk_memory._assembly import assemble, check_max_chars, pinned_records
from mainsdk_memory._auditing import AuditNote
from mainsdk_memory._bulk import DEFAULT_BATCH, DEFERRING, Deferred, remember_many
from mainsdk_memory._caller import PERSON_AGENT, Caller, requests_prefix
from mainsdk_memory._entities import (
    LinkSpec,
    drop_unmentioned,
    entities_of,
    mention_links,
    mentioned,
    resolve,
)
from mainsdk_memory._errors import (
    DamagedMemoryError,
    InvalidInputError,
    MemoryCapabilityError,
    MemoryConflictError,
    MemoryNotFound,
    MemorySDKError,
    RequestNotFound,
    ScopeError,
)
from mainsdk_memory._formation import Decision, classify, refined_text
from mainsdk_memory._forming import (
    Held,
    by_key,
    fact_key,
    keyed,
    neighbours,
    word_similarity,
)
from mainsdk_memory._integrity import (
    check_versions,
    leave_out_tampered,
    pin_changed,
    pin_changing,
    unanchor,
    written,
)
from mainsdk_memory._recall import Ranking, RecallMode, recall
from mainsdk_memory._records import (
    Entity,
    ForgetRequest,
    Formation,
    FormationOutcome,
    Hit,
    Kind,
    Link,
    LinkKind,
    MemoryRecord,
    MemoryStatus,
    Page,
    Revision,
    Source,
    Trust,
)
from mainsdk_memory._relations import (
    add_links,
    derived_closure,
    links_of,
    relation_store,
    require_relations,
    stored_links,
)
from mainsdk_memory._sealing import (
    Contents,
    Place,
    data_fields,
    embedding_index,
    first_place,
    next_place,
    open_contents,
    open_record,
    seal,
    seal_vector,
    sealed_data,
    to_record,
)
from mainsdk_memory._signals import count_uses, feedback_value
from mainsdk_memory._signals import feedback as add_feedback
from mainsdk_memory._tags import by_tags, check_key, check_metadata, matches, require_tags
from mainsdk_memory._text import check_language
from mainsdk_memory._walls import (
    check_injection,
    check_write,
    checked_text,
    record_clean_verdict,
    revised_trust,
    screen,
    trust_of,
)
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredLink, StoredRow

if TYPE_CHECKING:
    from mainsdk_memory._consolidation import ConsolidationReport
    from mainsdk_memory._episodes import Episodes
    from mainsdk_memory._fork import Fork
    from mainsdk_memory._working import WorkingMemory

__all__ = ["PersonMemory", "ScopedMemory", "caller_of"]


class _Keep(enum.Enum):
    """A next version keeps the current one's metadata."""

    KEEP = enum.auto()


_KEEP = _Keep.KEEP


class _Handle:
    """What both handles share: reads, writes, recall and context."""

    def __init__(self, caller: Caller) -> None:
        self._caller = caller
        self._services = caller.services

    def __repr__(self) -> str:
        return f"<{type(self).__name__} agent={self.agent!r} session={self.session!r}>"

    @property
    def person(self) -> str:
        """The person this handle acts for."""
        return self._caller.person

    @property
    def agent(self) -> str:
        """The agent calling (``"@person"`` on the person's own handle)."""
        return self._caller.agent

    @property
    def session(self) -> str | None:
        """The session of this handle, if any."""
        return self._caller.session

    # -- helpers --------------------------------------------------------------------------

    def _begin(
        self, operation: str, memory_ids: Iterable[object] = ()
    ) -> AbstractContextManager[AuditNote]:
        """Resolve the tenant, then audit the call (the kill switch is checked inside)."""
        ids = [memory_id for memory_id in memory_ids if isinstance(memory_id, str)]
        return self._caller.audited(operation, ids)

    def _language(self, language: object) -> str:
        """``language``, checked, or the Memory's when it is ``None``."""
        return self._services.settings.language if language is None else check_language(language)

    def _current_row(self, memory_id: object) -> tuple[builtins.list[StoredRow], StoredRow]:
        if not isinstance(memory_id, str):
            raise InvalidInputError("A memory id is a string like 'mem_…'.")
        if not validate.MEMORY_ID.fullmatch(memory_id):
            raise MemoryNotFound
        caller = self._caller
        where = caller.filter()
        rows = self._services.store.versions(caller.tenant, caller.app, where.subjects, memory_id)
        current = rows[-1] if rows else None
        if current is None or current.valid_to is not None or not where.visible(current):
            raise MemoryNotFound
        return rows, current

    def _history_rows(self, memory_id: object) -> builtins.list[StoredRow]:
        """The rows of a memory this handle may see: current, or ended by a retraction (a
        last version sealed closed: :func:`open_contents` checks that it says so)."""
        try:
            return self._current_row(memory_id)[0]
        except MemoryNotFound:
            caller = self._caller
            assert isinstance(memory_id, str)  # noqa: S101 - _current_row checked it
            where = caller.filter()
            rows = self._services.store.versions(
                caller.tenant, caller.app, where.subjects, memory_id
            )
            if not rows or not where.visible(rows[-1]) or rows[-1].valid_to is None:
                raise
            if open_contents(caller, rows[-1], versions=rows).status != "retracted":
                raise
            return rows

    def _put_version(
        self,
        row: StoredRow,
        place: Place,
        contents: Contents,
        *,
        child: bool,
        closes: int | None = None,
        vector: npt.NDArray[np.float32] | None = None,
    ) -> MemoryRecord:
        """Put ``row`` (closing version ``closes``) with its sealed embedding, if any, and
        return its record, built from the plaintext in hand (nothing is opened again).

        ``vector`` is the text's embedding when it was made already (formation made it).
        The text passed the injection check just now, so recalls in this process need not
        check this version again.
        """
        index = embedding_index(self._caller, child=child) if row.valid_to is None else None
        if index is not None and vector is None:
            vector = index.embed(contents.text)
        sealed = seal_vector(self._caller, row, place, contents.text, child=child, vector=vector)
        store = self._services.store
        store.put(row, closes=closes, vector=sealed)
        if index is not None and vector is not None:  # formation's next neighbours know it
            known = vector
            store.after_commit(
                lambda: index.wrote(
                    row.tenant, row.app, row.subject, row.memory_id, row.version, known
                )
            )
        # The anchors count the version once the store holds it: after the call's commit.
        store.after_commit(lambda: written(self._caller, row))
        record_clean_verdict(self._services, row.tenant, row.memory_id, row.version, child)
        return to_record(self._caller, row, contents)

    def _default_source(self) -> Source:
        caller = self._caller
        return Source.person(caller.person) if caller.is_person else Source.agent(caller.agent)

    def _source(self, source: Source | None) -> Source:
        return self._default_source() if source is None else validate.source(source)

    def _allowed_labels(self, labels: tuple[str, ...]) -> tuple[str, ...]:
        allowed = self._services.settings.labels
        if allowed is not None and not set(labels) <= allowed:
            raise InvalidInputError(
                f"This store holds only the labels {sorted(allowed)}; nothing was stored."
            )
        return labels

    def _keep_policy_labels(
        self, labels: tuple[str, ...], first: tuple[str, ...], current: StoredRow
    ) -> tuple[str, ...]:
        """``labels`` with every policy label the memory must keep whatever a caller asks.

        Policy labels come from the person's status and the memory's first version: ``child``
        (the person is a child now, or the memory was ever written as a child's), and every
        label of the first version that carries a retention. No revision, confirmation or
        other path removes them.
        """
        retained = self._services.settings.retention
        policy = [label for label in first if label in retained]
        child = validate.CHILD_LABEL in first or validate.CHILD_LABEL in current.labels
        if child or (current.subject != TENANT_SUBJECT and self._caller.is_child()):
            policy.append(validate.CHILD_LABEL)
        missing = [label for label in dict.fromkeys(policy) if label not in labels]
        return (*labels, *missing)

    def _data_fields(self, data: BaseModel | None) -> tuple[dict[str, Any] | None, str | None]:
        """``data`` as sealed, its model registered so it comes back as that model."""
        if data is not None:
            self._services.register_schema(type(data))
        return data_fields(data)

    def _confirmed_by(self, trust: Trust) -> str | None:
        caller = self._caller
        return caller.person if caller.is_person and trust is Trust.CONFIRMED else None

    # -- writes ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        about: str | None = None,
        source: Source | None = None,
        valid_from: datetime | None = None,
        labels: Sequence[str] | None = None,
        pinned: bool = False,
        session_only: bool = False,
        data: BaseModel | None = None,
        language: str | None = None,
        formation: bool | None = None,
        derived_from: Sequence[str] | None = None,
        key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryRecord:
        """Remember ``text``: formation decides how it joins what is held, and the memory
        it wrote or found is returned.

        Formation (docs/concepts.md) compares the text with the closest memories of the same
        subject this handle may see, with no model, and sets ``record.formation``: a
        ``duplicate`` stores nothing (the held memory is returned, and counts as used); a
        ``supersession`` or ``refinement`` is the held memory's next version (same id,
        version + 1); a ``contradiction`` or ``related`` text is a new memory linked to the
        one it was compared with; a ``novel`` one is a new memory (version 1, id ``mem_…``).
        A typed fact (``data=`` of a model with a ``fact_key``) supersedes the memory holding
        the same key exactly. ``formation=False`` stores the text as it is (default: the
        Memory's ``formation`` option, on unless it was opened with ``formation=False``).

        ``about`` defaults to the person acted for; ``"tenant"`` stores shared memory.
        ``source`` defaults to this agent (trust ``inferred``; the person's own handle:
        ``confirmed``). Only the person's own handle confirms: ``Source.person(...)`` from an
        agent records the agent's claim that the person said it, as ``inferred``. A tool,
        MCP, web or import source makes the memory ``untrusted`` and quarantined: only this
        session sees it until the person confirms it (shared memory: until the app confirms
        it with ``memory.confirm_shared``); it never replaces a memory that is not. A session
        is this person's and this agent's: the same name opened by anyone else is another
        session. ``session_only`` memories are seen only in this session. ``data`` is a
        pydantic model instance kept with the text and returned as that model.
        ``derived_from`` names the memories an insight was derived from (needs the
        ``relations`` capability): forgetting any of them forgets it too. ``language``
        (default: the Memory's, English unless opened with ``language=``) is the one its
        words are stemmed in.

        ``key`` is the caller's own id for the memory (1 to 512 characters), sealed, and
        found again by :meth:`get` (``key=``) through a blinded tag: when a current memory
        of the subject with that key is visible to this handle, this write is its next
        version (kind, labels, metadata, data and source from this call; formation
        ``supersession``, reason ``same-key``), an identical one writes nothing
        (``duplicate``, ``same-key-same-value``), else a new memory (``novel``,
        ``new-key``); formation against other memories is skipped. Upserts of one key are
        serialised in every process, so concurrent ones leave one memory with a linear
        history. Text from a tool, MCP server, web page or import never replaces a keyed
        memory that is not quarantined (nor the reverse, nor across ``session_only``): it
        becomes a memory of its own with the same key, ``related`` to it; an upsert goes to
        the one it may replace (this agent's first, then the newest), and ``get`` returns
        this agent's, else the newest. ``pinned`` applies when the key makes a new memory
        (:meth:`pin` and :meth:`unpin` change a held one).

        ``metadata`` is a JSON object (at most 1 MiB) sealed with the memory and kept by
        :meth:`revise`; its top-level strings, numbers, booleans and nulls can be filtered
        on (``recall(where=...)``, ``list(where=...)``); it is not searched as text and not
        shown in :meth:`context`.

        The injection check runs first, over the text and every string of the metadata; a
        flagged memory raises :class:`MemoryInjectionError` and nothing is stored.
        """
        services = self._services
        # One unit of work per call (ADR 0096), on the db drivers one transaction: the whole
        # call as it is, or each formation attempt, begun under the formation lock (never
        # the other way round), its checks before the lock on their own.
        plain = key is None and (services.settings.formation if formation is None
                                 else formation) is False
        with self._begin("remember") as note, (
            services.store.unit() if plain else contextlib.nullcontext()
        ):
            new, data, explicit_start, formation = self._prepare(
                text, kind=kind, about=about, source=source, valid_from=valid_from,
                labels=labels, pinned=pinned, session_only=session_only, data=data,
                language=language, formation=formation, derived_from=derived_from, key=key,
                metadata=metadata,
            )
            if not formation and new.contents.key is None:
                return self._write_new(new, note, None, None)
            lock = services.keys.anchors.formation_lock(
                services.anchor_scope(self._caller.tenant),
                services.anchor_subject(self._caller.tenant, new.subject),
            )
            with lock:
                for attempt in range(_FORMATION_ATTEMPTS):
                    try:
                        with services.store.unit():
                            return self._formed(new, data, note, explicit_start)
                    except (MemoryConflictError, MemoryNotFound):
                        # Another writer revised, retracted or forgot the memory it was formed
                        # against: decide again, from what is held now.
                        if attempt == _FORMATION_ATTEMPTS - 1:
                            raise
                        note.extra.clear()
                        note.memory_ids.clear()
            raise AssertionError("unreachable")  # pragma: no cover

    def remember_many(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        batch: int = DEFAULT_BATCH,
        formation: bool | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> builtins.list[MemoryRecord]:
        """Remember many texts, ``batch`` at a time (default 500, at most 10,000): one
        record per item, in order — the memory written or found, as :meth:`remember` returns.

        Each item is a mapping of :meth:`remember`'s arguments (``text`` and any of ``kind``,
        ``about``, ``source``, ``valid_from``, ``labels``, ``pinned``, ``session_only``,
        ``data``, ``language``, ``key``, ``metadata``); ``formation`` is the call's (default:
        the Memory's option). A batch meets the walls of :meth:`remember` — every item is
        checked, injection check included, and the kill switch, write rate and cap counted
        for each — before anything of it is written, and its new memories are anchored,
        sealed, embedded and stored in one step (one transaction on the db driver, one sync on
        the local one): a batch is stored whole or not at all. Formation compares each item
        with what was held before the batch (an item repeating an earlier one of the batch
        is its ``duplicate``); items revising a memory held before (supersession, refinement,
        a caller key's upsert) are written after the batch's new memories, each decided again.

        If an item is refused, or the store fails, :class:`BatchError` says which item
        (``index``), with its typed error (``error``), and how many items from the start are
        stored (``stored``: exactly ``items[:stored]``); call again with ``items[stored:]``
        once it is fixed. ``progress(done, total)`` is called after each batch (``done`` is
        how many items are stored). An exception that is not the SDK's (from the embedder the
        Memory was opened with, or from ``progress``) goes on as it is, after the undoing a
        :class:`BatchError` would have had: the store holds a prefix of the items — every
        batch before the one it interrupted, and of that one at most the items before the
        one it interrupted (list the person's memories to know which). One audit event, with
        ids and formation counts only.
        """
        return remember_many(self, items, batch=batch, formation=formation, progress=progress)

    def _prepare(
        self,
        text: str,
        *,
        kind: str,
        about: str | None,
        source: Source | None,
        valid_from: datetime | None,
        labels: Sequence[str] | None,
        pinned: bool,
        session_only: bool,
        data: BaseModel | None,
        language: str | None,
        formation: bool | None,
        derived_from: Sequence[str] | None,
        key: str | None,
        metadata: Mapping[str, Any] | None,
        walls: bool = True,
    ) -> tuple[_New, BaseModel | None, bool, bool]:
        """Check one text to remember, before anything changes: the new memory it would be,
        its typed data, whether its start was given, and whether formation applies.

        The injection check runs here; with ``walls`` (else the caller runs them, once for
        many texts: :mod:`._bulk`), the agent's kill switch and write rate too.
        """
        caller, services = self._caller, self._services
        text = validate.text(text, services.settings.max_text_chars)
        checked_language = self._language(language)
        checked_kind = validate.kind(kind)
        subject = caller.about(about)
        source = self._source(source)
        checked_labels = self._allowed_labels(validate.labels(labels))
        if formation is None:
            formation = services.settings.formation
        if not all(isinstance(flag, bool) for flag in (pinned, session_only, formation)):
            raise InvalidInputError("pinned, session_only and formation are True or False.")
        if session_only and caller.session is None:
            raise InvalidInputError(
                "session_only needs a session: use memory.acting_for(..., session=...)."
            )
        data = validate.data(data)
        key_names = () if data is None else (fact_key(data) or ())  # checked here, early
        checked_key = None if key is None else check_key(key)
        checked_metadata = check_metadata(metadata)
        if checked_key is not None:
            require_tags(caller, "A caller key")  # before anything is anchored
            if derived_from is not None:
                raise InvalidInputError(
                    "A memory with a key is not an insight: remember it without key= "
                    "or without derived_from=; nothing was stored."
                )
        start = None if valid_from is None else validate.aware(valid_from, "valid_from")
        sources, oldest, inherited = self._derived_sources(derived_from, subject)
        checked_labels = _inherit_labels(
            checked_labels, inherited, services.settings.retention
        )
        child = subject != TENANT_SUBJECT and self._caller.child_write()
        if child:
            checked_labels = tuple(dict.fromkeys((*checked_labels, validate.CHILD_LABEL)))
        check_injection(services, checked_text(text, checked_metadata), child=child)
        cap = check_write(caller, new_personal_memory=subject != TENANT_SUBJECT) if walls else None
        now = services.now()
        fields, data_type = self._data_fields(data)
        trust = trust_of(caller, source)
        contents = Contents(
            text=text,
            kind=checked_kind,
            labels=checked_labels,
            source=source,
            trust=trust,
            agent=caller.agent,
            author=caller.agent,
            confirmed_by=self._confirmed_by(trust),
            data=fields,
            data_type=data_type,
            session=caller.session,
            session_token=caller.session_token(),
            session_only=session_only,
            valid_from=now if start is None else start,
            recorded_at=now,
            language=checked_language,
            derived_from=tuple(memory_id for _, memory_id in sources),
            fact_key=key_names,
            key=checked_key,
            metadata=checked_metadata,
        )
        new = _New(subject, contents, pinned, cap, child, sources, oldest)
        return new, data, start is not None, formation

    def _formed(
        self, new: _New, data: BaseModel | None, note: AuditNote, explicit_start: bool
    ) -> MemoryRecord:
        """``new`` joined to what is held: a caller key's upsert, else formation (under the
        subject's formation lock)."""
        if new.contents.key is not None:
            return self._upsert(new, note, explicit_start=explicit_start)
        return self._form(new, data, note, explicit_start=explicit_start)

    def _derived_sources(
        self, derived_from: Sequence[str] | None, subject: str
    ) -> tuple[builtins.list[tuple[str, str]], datetime | None, tuple[str, ...]]:
        """``(row subject, id)`` of each memory ``derived_from`` names: current, visible to
        this handle, and (for shared memory) shared too: an insight everyone reads is never
        derived from one person's memories. Also the oldest source's creation time and the
        sources' labels, which the insight inherits so no retention keeps it longer than
        any of them."""
        if derived_from is None:
            return [], None, ()
        if isinstance(derived_from, str) or not isinstance(derived_from, Sequence):
            raise InvalidInputError("derived_from is a list of memory ids.")
        require_relations(self._caller, "derived_from")
        found: dict[str, str] = {}
        oldest: datetime | None = None
        labels: dict[str, None] = {}
        for memory_id in derived_from:
            _, current = self._current_row(memory_id)
            oldest = current.created_at if oldest is None else min(oldest, current.created_at)
            labels.update(dict.fromkeys(current.labels))
            if (subject == TENANT_SUBJECT) != (current.subject == TENANT_SUBJECT):
                raise ScopeError(
                    "An insight is derived from memories of its own subject: a shared insight "
                    "from shared memories, a person's from that person's (forgetting a source "
                    "must reach it); nothing was stored."
                )
            found[current.memory_id] = current.subject
        if len(found) > _MAX_DERIVED_FROM:
            raise InvalidInputError(
                f"derived_from names at most {_MAX_DERIVED_FROM} memories; nothing was stored."
            )
        pairs = [(row_subject, memory_id) for memory_id, row_subject in found.items()]
        return pairs, oldest, tuple(labels)

    def _upsert(self, new: _New, note: AuditNote, *, explicit_start: bool) -> MemoryRecord:
        """Write ``new`` as the next version of the memory holding its caller key that it may
        replace (this agent's first, then the newest), or as a new memory: ``related`` to
        the one it may not replace, ``novel`` when this handle sees none (under the
        subject's formation lock)."""
        contents = new.contents
        assert contents.key is not None  # noqa: S101 - only keyed writes come here
        helds = by_key(self._caller, new.subject, contents.key)
        held = next(
            (one for one in helds if _may_replace(contents, one.row, explicit_start)), None
        )
        if held is None:
            if not helds:
                return self._write_new(new, note, Decision("novel", None, "new-key"), None)
            decision = Decision("related", helds[0].record.id, "not-allowed")
            return self._write_new(new, note, decision, helds[0])
        current, record = held.row, held.record
        same = (
            record.text == contents.text
            and record.kind is contents.kind
            and record.labels == contents.labels
            and record.source == contents.source
            and record.metadata == contents.metadata
            and sealed_data(record.data) == contents.data
        )
        if same:
            decision = Decision("duplicate", record.id, "same-key-same-value")
            return self._duplicate(decision, held, note, reinforce=False)
        note.memory_ids.append(current.memory_id)
        note.extra.append(("formation", "supersession"))
        revised = self._next_version(
            current.memory_id,
            contents.text,
            kind=contents.kind,
            source=contents.source,
            start=contents.valid_from if explicit_start else None,
            labels=contents.labels,
            data=(contents.data, contents.data_type),
            language=contents.language,
            formation=Formation(outcome="supersession", target=record.id, reason="same-key"),
            fact_key_names=contents.fact_key,
            metadata=contents.metadata,
            expected=current.version,
        )
        self._link(revised, current.subject)
        return revised

    def _form(
        self, new: _New, data: BaseModel | None, note: AuditNote, *, explicit_start: bool
    ) -> MemoryRecord:
        """Decide how ``new`` joins the memories held, and write what the outcome says."""
        caller = self._caller
        contents = new.contents
        vector = None
        similar = None
        index = embedding_index(caller, child=new.child)
        if index is not None:  # never for a child: their words reach no embedder
            vector = index.embed(contents.text)
            similar = word_similarity(index)
        leave_out = new.leave_out | {memory_id for _, memory_id in new.sources}
        helds: builtins.list[Held]
        key_term = contents.key_term()
        if key_term is not None and data is not None:
            keyed_held = keyed(caller, new.subject, key_term, data, leave_out)
            if keyed_held is not None:
                same = keyed_held.record.data == data and keyed_held.record.text == contents.text
                outcome: FormationOutcome = "duplicate" if same else "supersession"
                reason = "same-key-same-value" if same else "same-key"
                decision = Decision(outcome, keyed_held.record.id, reason)
                return self._apply(new, decision, keyed_held, note, vector, explicit_start)
            helds = neighbours(caller, new.subject, contents.text, contents.language, vector,
                               leave_out=leave_out)
            decision = classify(contents.text, [held.neighbour for held in helds],
                                language=contents.language, similar=similar)
            if decision.outcome in ("duplicate", "supersession", "refinement"):
                # Another key is another fact: it can only be related to this one.
                decision = Decision("related", decision.target, "not-allowed")
        else:
            helds = neighbours(caller, new.subject, contents.text, contents.language, vector,
                               leave_out=leave_out)
            decision = classify(contents.text, [held.neighbour for held in helds],
                                language=contents.language, similar=similar)
        held = next((one for one in helds if one.record.id == decision.target), None)
        return self._apply(new, decision, held, note, vector, explicit_start)

    def _apply(
        self,
        new: _New,
        decision: Decision,
        held: Held | None,
        note: AuditNote,
        vector: npt.NDArray[np.float32] | None,
        explicit_start: bool,
    ) -> MemoryRecord:
        """Write what ``decision`` says; an outcome the walls forbid becomes ``related``."""
        contents = new.contents
        if held is None or decision.outcome == "novel":
            return self._write_new(new, note, Decision("novel", None, decision.reason), None,
                                   vector=vector)
        current = held.row
        changes = decision.outcome in ("duplicate", "supersession", "refinement")
        untrusted = contents.trust is Trust.UNTRUSTED
        allowed = (
            _may_replace(contents, current, explicit_start)
            and contents.kind.value == current.kind
            # An insight names its sources: it is never folded into a memory that does not.
            and not new.sources
        )
        if changes and not allowed:
            if decision.outcome == "duplicate" and untrusted and not new.sources:
                return self._duplicate(decision, held, note, reinforce=False)
            decision = Decision("related", decision.target, "not-allowed")
        if decision.outcome == "duplicate":
            return self._duplicate(decision, held, note, reinforce=True)
        formed = Formation(outcome=decision.outcome, target=held.record.id,
                           reason=decision.reason)
        if decision.outcome in ("supersession", "refinement"):
            text = contents.text
            if decision.outcome == "refinement":
                text = refined_text(held.record.text, contents.text, contents.language)
            note.memory_ids.append(current.memory_id)
            note.extra.append(("formation", decision.outcome))
            record = self._next_version(
                current.memory_id,
                text,
                kind=contents.kind,
                source=contents.source,
                start=contents.valid_from if explicit_start else None,
                labels=contents.labels,
                data=(contents.data, contents.data_type),
                language=contents.language,
                formation=formed,
                fact_key_names=contents.fact_key,
                vector=vector if text == contents.text else None,
                expected=current.version,
            )
            subject = current.subject
            _then_in_unit(self, lambda: self._link(record, subject))  # as in _write_new
            return record
        return self._write_new(new, note, decision, held, vector=vector)

    def _duplicate(
        self, decision: Decision, held: Held, note: AuditNote, *, reinforce: bool
    ) -> MemoryRecord:
        caller = self._caller
        note.memory_ids.append(held.record.id)
        note.extra.append(("formation", "duplicate"))
        if reinforce:  # the repeat counts as one use, as a recall that returned it would
            deferring = DEFERRING.get()
            if deferring is not None and deferring.handle is self:
                deferring.uses.append((held.record, held.row.subject))  # once it is stored
            else:  # the signals take the cross-process control lock: after the commit
                used = [(held.record, held.row.subject)]
                now = self._services.now()
                self._services.store.after_commit(lambda: count_uses(caller, used, now=now))
        formed = Formation(outcome="duplicate", target=held.record.id, reason=decision.reason)
        return held.record.model_copy(update={"formation": formed})

    def _write_new(
        self,
        new: _New,
        note: AuditNote,
        decision: Decision | None,
        held: Held | None,
        *,
        vector: npt.NDArray[np.float32] | None = None,
    ) -> MemoryRecord:
        """Store ``new`` as a new memory (version 1), linked as ``decision`` says."""
        caller = self._caller
        contents = new.contents
        if decision is not None:
            formed = Formation(outcome=decision.outcome, target=decision.target,
                               reason=decision.reason)
            contents = dataclasses.replace(contents, formation=formed)
            note.extra.append(("formation", decision.outcome))
            if decision.target is not None:
                note.memory_ids.append(decision.target)
        if _deferring(self):
            raise Deferred(dataclasses.replace(new, contents=contents), decision, held, vector)
        place = first_place(
            caller,
            new.subject,
            pinned=new.pinned,
            created_at=contents.recorded_at if new.created_at is None else new.created_at,
            labels=contents.labels,
            cap=new.cap,
        )
        note.memory_ids.insert(0, place.memory_id)
        row_subject = TENANT_SUBJECT if new.subject == TENANT_SUBJECT else caller.pseudonym()
        sources: builtins.list[StoredLink] = []
        try:
            if new.sources:  # before the row: an insight is never stored unlinked
                sources = add_links(
                    caller,
                    [(place.memory_id, source, row_subject, "derived_from", None)
                     for _, source in new.sources],
                    subjects={},
                    now=contents.recorded_at,
                )
            row = seal(caller, contents, place)
            record = self._put_version(row, place, contents, child=new.child, vector=vector)
            # Should the call's unit of work roll back after this, the anchor goes too.
            self._services.store.on_rollback(lambda: unanchor(caller, place.memory_id))
        except BaseException:
            # Nothing was stored (or, if the store failed after its commit, a row nobody
            # can open): the anchor goes, so it holds no count against the agent's cap,
            # and so do the links written for it (best effort: a forget of a source would
            # otherwise name a memory that never was).
            unanchor(caller, place.memory_id)
            store = relation_store(caller)
            if sources and store is not None:
                with contextlib.suppress(MemorySDKError):
                    store.delete_links(caller.tenant, caller.app, row_subject,
                                       [link.key for link in sources])
            raise
        if decision is None:
            return record  # formation=False: the text as it is, no links, no entities
        # Entities take the cross-process control lock: after the call's commit (a unit of
        # their own, begun under that lock), never while its transaction holds the store.
        _then_in_unit(self, lambda: self._linked_new(record, row_subject, decision, held))
        return record

    def _linked_new(
        self, record: MemoryRecord, row_subject: str, decision: Decision, held: Held | None
    ) -> None:
        """A new memory's links once it is stored: to the memory formation compared it with
        (``related``, ``contradicts``) and to the entities it mentions."""
        links: builtins.list[LinkSpec] = []
        if held is not None and relation_store(self._caller) is not None:
            kind: LinkKind = "contradicts" if decision.outcome == "contradiction" else "related"
            links.append((record.id, held.record.id, row_subject, kind, None))
        self._link(record, row_subject, links, back={held.record.id: held.row.subject}
                   if held is not None else {})

    def _link(
        self,
        record: MemoryRecord,
        row_subject: str,
        links: builtins.list[LinkSpec] | None = None,
        *,
        back: dict[str, str] | None = None,
    ) -> None:
        """Store ``links`` and the entities ``record`` mentions (:mod:`._entities`), in one
        step; nothing on a driver without ``relations``."""
        caller = self._caller
        if relation_store(caller) is None:
            return
        # Names come only from text everyone who sees the entities may see: not from a tool's
        # or web page's text, a session-only memory or a child's.
        named = (
            record.trust is not Trust.UNTRUSTED
            and not record.session_only
            and validate.CHILD_LABEL not in record.labels
        )
        every = [*(links or []), *(mention_links(caller, record, row_subject) if named else [])]
        if every:
            add_links(caller, every, subjects=back or {}, now=record.recorded_at)

    def revise(
        self,
        memory_id: str,
        text: str,
        *,
        kind: str | None = None,
        source: Source | None = None,
        valid_from: datetime | None = None,
        labels: Sequence[str] | None = None,
        data: BaseModel | None = None,
        language: str | None = None,
    ) -> MemoryRecord:
        """Write the memory's next version and close the current one at ``valid_from``.

        Unset arguments keep the current version's kind, labels and language; ``data``
        belongs to the text it comes with, so it is not carried over. A revision never raises
        trust above the current version's unless the person's own handle writes it, and it
        ends a dispute (``status`` is ``active`` again). Raises :class:`MemoryConflictError`
        if another writer revised it first.
        """
        with self._begin("revise", [memory_id]):
            text = validate.text(text, self._services.settings.max_text_chars)
            given_language = None if language is None else self._language(language)
            checked_kind = None if kind is None else validate.kind(kind)
            checked_labels = None if labels is None else validate.labels(labels)
            source = self._source(source)
            data = validate.data(data)
            start = None if valid_from is None else validate.aware(valid_from, "valid_from")
            record = self._next_version(
                memory_id,
                text,
                kind=checked_kind,
                source=source,
                start=start,
                labels=checked_labels,
                data=self._data_fields(data),
                language=given_language,
                fact_key_names=(fact_key(data) or ()) if data is not None else (),
            )
            self._link(record, caller_row_subject(self._caller, record))
            return record

    def _next_version(
        self,
        memory_id: str,
        text: str,
        *,
        kind: Kind | None,
        source: Source,
        start: datetime | None,
        labels: tuple[str, ...] | None,
        data: tuple[dict[str, Any] | None, str | None],
        language: str | None,
        formation: Formation | None = None,
        fact_key_names: tuple[str, ...] = (),
        vector: npt.NDArray[np.float32] | None = None,
        expected: int | None = None,
        metadata: dict[str, Any] | _Keep | None = _KEEP,
    ) -> MemoryRecord:
        """Write the memory's next version (``revise``, formation's supersessions and
        refinements, a keyed upsert): checked as ``revise`` documents, closing the current
        one; the key stays, and so does the metadata unless ``metadata`` replaces it.
        ``expected`` is the version formation decided against: if another version landed
        since, :class:`MemoryConflictError` (formation decides again)."""
        if _deferring(self):
            raise Deferred(None, None, None, None)
        caller, services = self._caller, self._services
        rows, current = self._current_row(memory_id)
        if expected is not None and current.version != expected:
            raise MemoryConflictError
        held = open_contents(caller, current)  # its columns are checked before they count
        check_versions(rows)
        first = held if len(rows) == 1 else open_contents(caller, rows[0], versions=rows)
        checked_kind = Kind(current.kind) if kind is None else kind
        checked_labels = self._keep_policy_labels(
            self._allowed_labels(current.labels if labels is None else labels),
            first.labels,
            current,
        )
        if start is not None and start < current.valid_from:
            raise InvalidInputError(
                "valid_from of a revision cannot be before the current version's valid_from."
            )
        trust = revised_trust(
            caller, source, current.trust, shared=current.subject == TENANT_SUBJECT
        )
        if trust is Trust.UNTRUSTED and current.trust != Trust.UNTRUSTED.value:
            # The version would be quarantined in the session of the memory's writer, not
            # the reviser's, and hide the text everyone sees: text from a tool, MCP
            # server, web page or import never replaces a memory others rely on.
            raise ScopeError(
                "Text from a tool, MCP server, web page or import cannot replace a memory "
                "that is not quarantined; nothing was changed. Remember it as a new memory "
                "(quarantined in this session) instead."
            )
        child = validate.CHILD_LABEL in checked_labels
        kept_metadata = held.metadata if isinstance(metadata, _Keep) else metadata
        check_injection(services, checked_text(text, kept_metadata), child=child)
        check_write(caller, new_personal_memory=False)
        now = services.now()
        if start is None:
            start = max(now, current.valid_from)  # a future-dated version closes later
        fields, data_type = data
        contents = Contents(
            text=text,
            kind=checked_kind,
            labels=checked_labels,
            source=source,
            trust=trust,
            agent=current.agent,
            author=caller.agent,
            confirmed_by=self._confirmed_by(trust),
            data=fields,
            data_type=data_type,
            session=held.session,
            session_token=current.session,
            session_only=current.session_only,
            valid_from=start,
            recorded_at=now,
            language=held.language if language is None else language,
            formation=formation,
            derived_from=held.derived_from,
            forked_from=held.forked_from,
            fact_key=fact_key_names,
            key=held.key,
            metadata=kept_metadata,
        )
        place = next_place(caller, current)
        row = seal(caller, contents, place)
        return self._put_version(
            row, place, contents, child=child, closes=current.version, vector=vector
        )

    def _set_pinned(self, operation: str, memory_id: str, pinned: bool) -> MemoryRecord:
        with self._begin(operation, [memory_id]):
            caller = self._caller
            _, current = self._current_row(memory_id)
            open_contents(caller, current)  # a row that disagrees with its anchor stays as is
            check_write(caller, new_personal_memory=False)
            pin_changing(caller, current.memory_id)
            try:
                self._services.store.set_pinned(
                    caller.tenant, caller.app, current.subject, current.memory_id, pinned
                )
            except BaseException:
                # The store refused: the flag it holds is the old one (if it changed anyway,
                # the memory fails closed until pinned or unpinned again).
                pin_changed(caller, current.memory_id, current.pinned)
                raise
            pin_changed(caller, current.memory_id, pinned)
            _rows, current = self._current_row(memory_id)
            if current.pinned != pinned:
                # A revision landed meanwhile with the flag it had read: give the new version
                # the flag now anchored (the revision's own check could not, mid-change).
                self._services.store.set_pinned(
                    caller.tenant, caller.app, current.subject, current.memory_id, pinned
                )
                _rows, current = self._current_row(memory_id)
            return open_record(caller, current)

    def pin(self, memory_id: str) -> MemoryRecord:
        """Pin the memory: ``context()`` always puts it first."""
        return self._set_pinned("pin", memory_id, True)

    def unpin(self, memory_id: str) -> MemoryRecord:
        """Unpin the memory."""
        return self._set_pinned("unpin", memory_id, False)

    def _erase(self, current: StoredRow, *, request: ForgetRequest | None) -> _receipts.Receipt:
        return self._erase_memory(current.subject, current.memory_id, request=request)

    def _erase_memory(
        self, subject: str, memory_id: str, *, request: ForgetRequest | None
    ) -> _receipts.Receipt:
        """Erase the memory, every insight derived from it (transitively), every link to or
        from them and every entity only they named; one receipt lists it all."""
        caller, services = self._caller, self._services
        tenant_id = caller.tenant
        derived = derived_closure(caller, memory_id)
        erased = [(subject, memory_id), *derived]
        ids = [one for _, one in erased]
        links = sorted({link.key for link, _ in stored_links(caller, ids)})
        named = {one: mentioned(caller, one) for one in ids}
        version_ids: builtins.list[str] = []
        mode = "hard"
        # The derived ones first, deepest first, the source last: an erase interrupted midway
        # leaves the source, and forgetting it again finds what is left of the rest.
        for row_subject, one in reversed(erased):
            result = services.erase_memory(tenant_id, row_subject, one, person=caller.person)
            version_ids += [f"{one}.v{v}" for v in result.versions]
            mode = "soft" if result.mode == "soft" else mode
        entities: builtins.list[str] = []
        for row_subject, one in erased:
            entities += drop_unmentioned(caller, row_subject, named[one])
        # Pending requests about the erased memories go too: no id of them stays behind.
        # They are filed under the person the asking agent acted for (shared: anyone's).
        prefix = "forget/" if subject == TENANT_SUBJECT else requests_prefix(caller.pseudonym())
        for key, document in services.control.list(tenant_id, prefix):
            if document.get("memory_id") in ids:
                services.control.put(tenant_id, key, None)
        claims: dict[str, Any] = {
            "op": "forget",
            "tenant": tenant_id,
            "app": caller.app,
            "about": TENANT_SUBJECT if subject == TENANT_SUBJECT else caller.person,
            "agent": caller.agent if request is None else request.agent,
            "memory_id": memory_id,
            "version_ids": version_ids,
            "driver": services.driver.name,
            "erase": mode,
            "copies": "unopenable",
        }
        if relation_store(caller) is not None:
            claims["derived_ids"] = [one for _, one in derived]
            claims["link_keys"] = links
            claims["entity_ids"] = sorted(set(entities))
        if request is not None:
            claims["request"] = request.id
            claims["approved_by"] = PERSON_AGENT
        return services.issue_receipt(tenant_id, claims)

    # -- revision operations ----------------------------------------------------------------

    def _rewrite(
        self,
        memory_id: str,
        *,
        status: MemoryStatus,
        revision: Revision,
        text: str | None = None,
        derived_from: tuple[str, ...] | None = None,
    ) -> MemoryRecord:
        """Write the memory's next version with what it says unchanged but ``status`` and
        ``revision`` (and ``text``, for a merge); a retraction is written closed."""
        caller, services = self._caller, self._services
        rows, current = self._current_row(memory_id)
        held = open_contents(caller, current)
        check_versions(rows)
        first = held if len(rows) == 1 else open_contents(caller, rows[0], versions=rows)
        if text is not None:
            check_injection(services, text, child=validate.CHILD_LABEL in held.labels)
        check_write(caller, new_personal_memory=False)
        now = services.now()
        contents = dataclasses.replace(
            held,
            text=held.text if text is None else text,
            labels=self._keep_policy_labels(held.labels, first.labels, current),
            author=caller.agent,
            recorded_at=now,
            valid_from=max(now, current.valid_from),
            formation=None,
            status=status,
            revision=revision,
            confirmed_by=held.confirmed_by if text is None else None,
            derived_from=held.derived_from if derived_from is None else derived_from,
        )
        if text is not None and contents.trust is Trust.CONFIRMED and not caller.is_person:
            contents = dataclasses.replace(contents, trust=Trust.INFERRED)
        place = next_place(caller, current)
        row = seal(caller, contents, place)
        child = validate.CHILD_LABEL in contents.labels
        return self._put_version(row, place, contents, child=child, closes=current.version)

    def contest(self, memory_id: str) -> MemoryRecord:
        """Mark the memory disputed: its next version says the same with ``status
        "disputed"``, recall and context show it so, until a revision or a confirmation."""
        with self._begin("contest", [memory_id]):
            return self._rewrite(memory_id, status="disputed", revision=Revision(op="contest"))

    def retract(self, memory_id: str) -> MemoryRecord:
        """Close the memory with no successor: a last version, ``status "retracted"``,
        closed as it is written. Reads leave it out from now on (``as_of`` before it still
        sees what was held then); ``history`` shows every version, and the person can still
        forget it. Returns the retracting version."""
        with self._begin("retract", [memory_id]):
            return self._rewrite(memory_id, status="retracted", revision=Revision(op="retract"))

    def merge(
        self, memory_id: str, others: Sequence[str], *, text: str | None = None
    ) -> MemoryRecord:
        """Merge ``others`` into ``memory_id``: its next version holds ``text`` (default:
        its text and theirs, joined) and names them (``revision.memories``), a
        ``supersedes`` link goes to each, and each of them is retracted with a last version
        that names ``memory_id``. All must be memories of one subject this handle may see."""
        with self._begin("merge", [memory_id]) as note:
            caller = self._caller
            if isinstance(others, str) or not isinstance(others, Sequence) or not others:
                raise InvalidInputError("others is a non-empty list of memory ids.")
            _, survivor = self._current_row(memory_id)
            absorbed: dict[str, tuple[StoredRow, Contents]] = {}
            for other in others:
                _, row = self._current_row(other)
                if row.memory_id == survivor.memory_id:
                    raise InvalidInputError("A memory cannot be merged into itself.")
                if row.subject != survivor.subject:
                    raise ScopeError(
                        "Only memories about the same person (or all shared) merge; nothing "
                        "was changed."
                    )
                if (
                    (row.trust == Trust.UNTRUSTED.value)
                    != (survivor.trust == Trust.UNTRUSTED.value)
                    or row.session_only != survivor.session_only
                    or (row.session_only and row.session != survivor.session)
                ):
                    # Its text would reach whoever sees the survivor: quarantined or
                    # session-only text only merges with memories seen exactly as widely.
                    raise ScopeError(
                        "Only memories seen by the same callers merge (all quarantined or none, "
                        "all session-only in one session or none); nothing was changed."
                    )
                absorbed[row.memory_id] = (row, open_contents(caller, row))
            held = open_contents(caller, survivor)
            merged = text
            if merged is None:
                parts = [held.text, *(contents.text for _, contents in absorbed.values())]
                merged = " ".join(part.strip() for part in parts)
            merged = validate.text(merged, self._services.settings.max_text_chars)
            require_relations(caller, "merge")
            # Every check before any write: the merged text, and the agent's kill switch and rate.
            check_injection(
                self._services, merged, child=validate.CHILD_LABEL in held.labels
            )
            check_write(caller, new_personal_memory=False)
            sources = tuple(dict.fromkeys(
                [*held.derived_from, *(one for _, c in absorbed.values() for one in c.derived_from)]
            ))
            note.memory_ids.extend(absorbed)
            record = self._rewrite(
                memory_id,
                status="active",
                revision=Revision(op="merge", memories=tuple(absorbed)),
                text=merged,
                derived_from=sources,
            )
            # The lineage, and what the absorbed ones were derived from (forgetting a source
            # of theirs reaches the merged text).
            add_links(
                caller,
                [
                    *((survivor.memory_id, other, survivor.subject, "supersedes", None)
                      for other in absorbed),
                    *((survivor.memory_id, source, survivor.subject, "derived_from", None)
                      for source in sources if source not in held.derived_from),
                ],
                subjects={},
                now=self._services.now(),
            )
            for other in absorbed:
                self._rewrite(
                    other,
                    status="retracted",
                    revision=Revision(op="merge", memories=(survivor.memory_id,)),
                )
            self._link(record, survivor.subject)
            return record

    def links(self, memory_id: str) -> builtins.list[Link]:
        """The memory's relations (:class:`Link`): what it was derived from and what was
        derived from it, what it is related to or contradicts, what it absorbed and the
        entities it mentions; only links whose other memory this handle may see. Needs
        the ``relations`` capability."""
        with self._begin("links", [memory_id]) as note:
            caller = self._caller
            require_relations(caller, "links")
            _, current = self._current_row(memory_id)
            found = links_of(caller, current.memory_id)
            others = sorted(
                {link.target for link in found if link.target.startswith("mem_")}
            )
            visible = {row.memory_id for row in self._visible_rows(others, current=False)}
            kept = [
                link for link in found if not link.target.startswith("mem_")
                or link.target in visible
            ]
            note.count = len(kept)
            return kept

    def _contradictions(
        self, records: Sequence[MemoryRecord]
    ) -> dict[str, builtins.list[MemoryRecord]]:
        """For each of ``records``, the current memories this handle may see that
        contradict it (opened, screened like every recalled memory)."""
        caller = self._caller
        if relation_store(caller) is None or not records:
            return {}
        ids = [record.id for record in records]
        pairs = [
            (link.source, link.target)
            for link, kind in stored_links(caller, ids)
            if kind == "contradicts" and link.source in ids
        ]
        if not pairs:
            return {}
        held = {record.id: record for record in records}
        wanted = sorted({target for _, target in pairs if target not in held})
        held.update(self._open_visible(wanted))
        out: dict[str, builtins.list[MemoryRecord]] = {}
        for source, target in pairs:
            if target in held:
                out.setdefault(source, []).append(held[target])
        return out

    def _open_visible(self, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The current versions of ``memory_ids`` this handle may see, opened and screened."""
        caller = self._caller
        rows = self._visible_rows(memory_ids)
        opened = leave_out_tampered(caller, rows, lambda row: open_record(caller, row))
        return {record.id: record for record in screen(caller, opened)}

    def _mentioning(self, entity: object) -> frozenset[str]:
        """The ids of the memories that mention ``entity`` (resolved in the caller's scopes)."""
        caller = self._caller
        require_relations(caller, "recall(entity=...)")
        ids = resolve(caller, entity)
        return frozenset(
            link.source for link, kind in stored_links(caller, ids)
            if kind == "mentions" and link.target in ids
        )

    def _visible_rows(
        self, memory_ids: Sequence[str], *, current: bool = True
    ) -> builtins.list[StoredRow]:
        """The last rows of ``memory_ids`` this handle may see (unopened): current ones, or
        with ``current=False`` also the last of one closed since (retracted, merged)."""
        caller = self._caller
        where = caller.filter()
        rows: builtins.list[StoredRow] = []
        for memory_id in memory_ids:
            try:
                stored = self._services.store.versions(
                    caller.tenant, caller.app, where.subjects, memory_id
                )
            except DamagedMemoryError:
                continue
            if stored and (where.matches if current else where.visible)(stored[-1]):
                rows.append(stored[-1])
        return rows

    def entities(self) -> builtins.list[Entity]:
        """The entities the memories this handle may see mention: people, places,
        organisations, projects and tools, each with its canonical name, aliases and how many
        of those memories mention it, most mentioned first. Needs ``relations``."""
        with self._begin("entities") as note:
            caller = self._caller
            require_relations(caller, "entities")
            where = caller.filter()
            texts: dict[str, str] = {}
            after: tuple[datetime, str] | None = None
            while True:
                rows = self._services.store.list(where, limit=500, after=after)
                opened = leave_out_tampered(caller, rows, lambda row: open_record(caller, row))
                texts.update((record.id, record.text) for record in opened)
                if len(rows) < 500:
                    break
                after = (rows[-1].created_at, rows[-1].memory_id)
            found = entities_of(caller, where.subjects, texts)
            note.count = len(found)
            return found

    # -- reads ----------------------------------------------------------------------------

    def get(
        self, memory_id: str | None = None, *, key: str | None = None, about: str | None = None
    ) -> MemoryRecord:
        """The memory's current version: by id, or by the caller key it was remembered with
        (``key=``; ``about``, default the person acted for, or ``"tenant"``), found through
        the store's blinded tag index, never by paging. With a key, the current memory with
        it this handle sees: its own agent's if there is one, else the newest
        (:class:`MemoryNotFound` when there is none)."""
        if (memory_id is None) == (key is None):
            raise InvalidInputError("get takes a memory id or key=, exactly one of them.")
        if about is not None and key is None:
            raise InvalidInputError("about= goes with key= (a memory id names its subject).")
        if memory_id is not None:
            with self._begin("get", [memory_id]):
                _, current = self._current_row(memory_id)
                return open_record(self._caller, current)
        with self._begin("get") as note:
            require_tags(self._caller, "A caller key")
            helds = by_key(self._caller, self._caller.about(about), check_key(key))
            if not helds:
                raise MemoryNotFound(
                    "No memory with that key exists, or it is outside this handle's scope "
                    "(another person, tenant, session, or an agent under read: own)."
                )
            note.memory_ids.append(helds[0].record.id)
            return helds[0].record

    def history(self, memory_id: str) -> builtins.list[MemoryRecord]:
        """Every version of the memory this caller may see, oldest first.

        A version outside the caller's scope is left out, as every read leaves it out: another
        session never sees a quarantined version nobody confirmed (ADR 0045).
        """
        with self._begin("history", [memory_id]) as note:
            if not self._services.store.capabilities.time_travel:
                raise MemoryCapabilityError("time_travel")
            rows = self._history_rows(memory_id)
            where = self._caller.filter()
            check_versions(rows)
            visible = [row for row in rows if where.visible(row)]
            note.count = len(visible)
            return [open_record(self._caller, row, versions=rows) for row in visible]

    def list(
        self,
        *,
        kinds: Iterable[str] | None = None,
        limit: int = 20,
        cursor: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> Page:
        """Current memories in scope, newest first, ``limit`` at a time; ``where`` filters
        on metadata as :meth:`recall` does, in the store (every page holds only matches)."""
        with self._begin("list") as note:
            caller = self._caller
            checked_kinds = validate.kinds(kinds)
            limit = validate.top_k(limit, "limit")
            after = None if cursor is None else _decode_cursor(cursor)
            scope = by_tags(caller, caller.filter(kinds=checked_kinds), where)
            rows = self._services.store.list(scope, limit=limit + 1, after=after)
            more = len(rows) > limit
            rows = rows[:limit]
            next_cursor = _encode_cursor(rows[-1]) if more and rows else None
            items = leave_out_tampered(caller, rows, lambda row: open_record(caller, row))
            if where is not None:  # the store's tags, checked against what was sealed
                items = [record for record in items if matches(where, record.metadata)]
            note.memory_ids.extend(record.id for record in items)
            note.count = len(items)
            return Page(items=items, next_cursor=next_cursor)

    def feedback(self, memory_id: str, value: int) -> None:
        """Raise (``+1``) or lower (``-1``) how the memory ranks in later recalls.

        The memory is one this handle may see (else :class:`MemoryNotFound`, as ``get``
        raises); ``value`` is exactly ``1`` or ``-1``. A memory's feedback is summed
        (clamped to ±10) and moves its recall score by at most ``feedback_weight`` of the
        ranking signals (docs/concepts.md); it is sealed with the person's memories and goes
        with forget, erase and export. An agent's feedback counts as one of its writes (kill
        switch, rate). Audited with the memory id only.
        """
        with self._begin("feedback", [memory_id]):
            caller = self._caller
            checked = feedback_value(value)
            _, current = self._current_row(memory_id)
            open_contents(caller, current)  # a row that disagrees with its anchor is not rated
            check_write(caller, new_personal_memory=False)
            add_feedback(caller, current.memory_id, current.subject, checked)

    def recall(
        self,
        query: str,
        *,
        top_k: int = 5,
        kinds: Iterable[str] | None = None,
        as_of: datetime | None = None,
        mode: RecallMode = "auto",
        ranking: Ranking = "signals",
        language: str | None = None,
        entity: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """The memories that best match ``query``, best first, each with a score in [0, 1].

        With ``as_of``, the versions valid at that time answer ("where did she live in
        September?"). ``mode`` picks the candidates: ``"text"`` is BM25 over blind terms (a
        query of only stopwords matches nothing); ``"vector"`` ranks the sealed embeddings
        by cosine similarity (negative cosines score 0); ``"hybrid"`` fuses both
        (``0.65 · bm25' + 0.35 · cosine'`` over each ranking's min-max-normalised top 50),
        then checks the best 10 (or ``2 · top_k``) in a second pass that leaves out those
        only the vectors found and that do not answer it (the rest keep their order);
        ``"auto"``, the default, is hybrid when the memory has an embedder (the default one,
        unless opened with ``embedder=None``) and text otherwise (docs/concepts.md). Vector
        and hybrid recall without an embedder raise :class:`MemoryCapabilityError`.
        ``ranking="signals"`` (the default) lets kind and age, past use, pins and
        :meth:`feedback` move a memory up or down a little; ``"relevance"`` turns every
        signal off. Each returned memory counts as used (``context`` does not count).
        ``language`` (default: the Memory's) is the one the query's words are stemmed in; it
        finds the memories written in it. ``entity`` (a name, an alias or an ``ent_…`` id;
        needs ``relations``) narrows the recall to the memories that mention it. Memories
        the injection check flags are left out (and audited by id).

        ``where`` filters on metadata (``remember(metadata=...)``) inside the store, before
        any ranking cuts: ``{"field": value}`` (JSON equality: ``1`` equals ``1.0``, ``True``
        is not ``1``), or per field a dict of operators, all of which must hold: ``$eq``,
        ``$ne`` (also matches memories without the field, as in MongoDB), ``$in`` (a list),
        and the ranges ``$gt``, ``$gte``, ``$lt``, ``$lte``, which compare numbers (a float,
        or a whole number within ±2**53). Only top-level strings, numbers, booleans and
        nulls are filterable.
        """
        with self._begin("recall") as note:
            narrowed = None if entity is None else self._mentioning(entity)
            if narrowed is not None and not narrowed:
                note.count = 0
                return []
            hits = recall(
                self._caller,
                query,
                top_k=top_k,
                kinds=kinds,
                as_of=as_of,
                mode=mode,
                ranking=ranking,
                count_uses=True,
                language=self._language(language),
                note=note,
                memory_ids=narrowed,
                matching=where,
            )
            note.memory_ids.extend(hit.record.id for hit in hits)
            note.count = len(hits)
            return hits

    def context(
        self,
        query: str,
        *,
        top_k: int = 5,
        max_chars: int | None = None,
        language: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> str:
        """One untrusted-data block for a user message: pinned memories first, then matches
        (``where`` narrows the matches by metadata, as in :meth:`recall`).

        Every memory's text is escaped so nothing inside it can close the block or forge an
        entry; with ``max_chars`` whole entries are dropped from the end to fit. A memory that
        contradicts one in the block follows it, and both are marked (``contradicts="…"``),
        so the model sees the disagreement instead of one side; a contested memory is marked
        ``status="disputed"``.
        """
        with self._begin("context") as note:
            max_chars = check_max_chars(max_chars)
            hits = recall(
                self._caller,
                query,
                top_k=top_k,
                kinds=None,
                as_of=None,
                language=self._language(language),
                note=note,
                matching=where,
            )
            pinned = pinned_records(self._caller)
            shown = [*pinned, *(hit.record for hit in hits)]
            block, ids = assemble(
                pinned, hits, max_chars=max_chars, contradictions=self._contradictions(shown)
            )
            note.memory_ids.extend(ids)
            note.count = len(ids)
            return block


    # -- learning, working memory, episodes (issue 16) -------------------------------------

    def learn(
        self,
        messages: Iterable[Any],
        *,
        at: datetime | None = None,
        extractor: str = "auto",
        identifiers: Sequence[str] = (),
    ) -> builtins.list[MemoryRecord]:
        """Learn the durable facts about the person from a conversation (docs/concepts.md,
        "Learning from conversations"): each one is remembered through formation, and the
        records written or found are returned with their ``formation`` outcome.

        ``messages`` are ``{"role": ..., "content": ...}`` dicts (OpenAI and Anthropic
        shapes), ``(role, text)`` pairs or :class:`~mainsdk_memory.Episode` entries; roles
        ``user``, ``assistant`` and ``tool``. ``at`` (timezone-aware; default now) is when the
        conversation happened: relative dates are resolved against it. ``extractor`` is
        ``"rules"`` (offline, no model), ``"model"`` (the Memory's ``model``, through the
        redacting port) or ``"auto"`` (the model when one is configured and the person is not
        a child, else the rules). ``identifiers`` are more of the person's own identifiers
        (names, account numbers) the port replaces before any model call.
        """
        from mainsdk_memory._learning import learn

        return learn(self, messages, at=at, extractor=extractor, identifiers=identifiers)

    @property
    def working(self) -> WorkingMemory:
        """This agent's working memory about the person: sealed JSON values under blinded keys."""
        from mainsdk_memory._working import WorkingMemory

        return WorkingMemory(self._caller)

    @property
    def episodes(self) -> Episodes:
        """The append-only, sealed ledger of what happened with the person, per session."""
        from mainsdk_memory._episodes import Episodes

        return Episodes(self._caller)

    def consolidate(
        self, *, progress: Callable[[int, int], None] | None = None
    ) -> ConsolidationReport:
        """Promote repeated evidence into insights and merge near-duplicates (idempotent)."""
        from mainsdk_memory._consolidation import consolidate

        return consolidate(self, progress=progress)


class ScopedMemory(_Handle):
    """Memory calls as one agent, for one person, in one tenant (and optionally one session)."""

    def fork(self, *, agent: str, session: str | None = None) -> Fork:
        """An independent copy of this agent's working memory and memories about the person
        for ``agent`` (in ``session``): source, trust, lineage and quarantine kept."""
        from mainsdk_memory._fork import fork

        return fork(self, agent=agent, session=session)

    def forget(self, memory_id: str) -> ForgetRequest:
        """Ask to forget the memory: the person approves or rejects the request.

        An agent cannot erase on its own; the returned request is ``pending`` until the
        person's handle (:meth:`Memory.person`) calls ``approve`` (the erase runs and a
        receipt is returned) or ``reject``. Asking again for the same memory returns the same
        pending request.
        """
        with self._begin("forget-request", [memory_id]) as note:
            caller, services = self._caller, self._services
            _, current = self._current_row(memory_id)
            check_write(caller, new_personal_memory=False)
            prefix = requests_prefix(caller.pseudonym())
            for _, document in services.control.list(caller.tenant, prefix):
                if document["memory_id"] == current.memory_id and document["agent"] == caller.agent:
                    note.outcome = "pending"
                    note.extra.append(("request", document["id"]))
                    return ForgetRequest.model_validate(document)  # asking twice is one request
            request = ForgetRequest(
                id="fgr_" + secrets.token_hex(12),
                memory_id=current.memory_id,
                person=caller.person,
                agent=caller.agent,
                requested_at=services.now(),
            )
            services.control.put(
                caller.tenant, f"{prefix}{request.id}", request.model_dump(mode="json")
            )
            note.outcome = "pending"
            note.extra.append(("request", request.id))
            return request


class PersonMemory(_Handle):
    """The person themself: sees everything held about them, confirms, approves, forgets.

    Writes default to ``Source.person(<person>)`` (trust ``confirmed``). Give this handle to
    the person's own interface, never to an agent: an agent cannot confirm or approve.
    """

    def confirm(self, memory_id: str) -> MemoryRecord:
        """Confirm a memory: its next version is ``confirmed`` and leaves quarantine.

        The text, kind, labels, data and source stay as they were; ``confirmed_by`` names the
        person. Confirming a confirmed memory changes nothing. Shared memory (``about=
        "tenant"``) reaches everyone, so no person confirms it: :class:`ScopeError`; the app
        does, with :meth:`Memory.confirm_shared` (ADR 0045).
        """
        with self._begin("confirm", [memory_id]):
            caller, services = self._caller, self._services
            rows, current = self._current_row(memory_id)
            if current.subject == TENANT_SUBJECT:
                raise ScopeError(
                    "Shared memory reaches everyone in the tenant, so no person confirms it; "
                    "the app does, with memory.confirm_shared(memory_id). Nothing was changed."
                )
            held = open_contents(caller, current)
            if held.trust is Trust.CONFIRMED:
                return to_record(caller, current, held)
            check_versions(rows)
            first = held if len(rows) == 1 else open_contents(caller, rows[0], versions=rows)
            now = services.now()
            contents = dataclasses.replace(
                held,
                labels=self._keep_policy_labels(held.labels, first.labels, current),
                trust=Trust.CONFIRMED,
                author=caller.agent,
                confirmed_by=caller.person,
                recorded_at=now,
                valid_from=max(now, current.valid_from),
                status="active",  # a confirmation ends a dispute
                revision=None,
                formation=None,
            )
            place = next_place(caller, current)
            row = seal(caller, contents, place)
            child = validate.CHILD_LABEL in contents.labels
            return self._put_version(row, place, contents, child=child, closes=current.version)

    def forget(self, memory_id: str) -> _receipts.Receipt:
        """Hard-delete every version of the memory at once and return a signed receipt."""
        with self._begin("forget", [memory_id]):
            try:
                _, current = self._current_row(memory_id)
            except DamagedMemoryError:
                # A memory of theirs the store cannot decode is still theirs to forget.
                pseudonym = self._caller.pseudonym()
                damaged = self._services.store.damaged(self._caller.tenant, self._caller.app,
                                                       pseudonym)
                if memory_id not in damaged:
                    raise
                return self._erase_memory(pseudonym, memory_id, request=None)
            except MemoryNotFound:
                # A memory of theirs whose rows someone hid in the store (deleted, or closed
                # with no successor) still has its anchor: forgetting drops it, so no copy of
                # the rows opens again (ADR 0047).
                hidden = self._hidden_memory(memory_id)
                if hidden is None:
                    raise
                return self._erase_memory(hidden, memory_id, request=None)
            return self._erase(current, request=None)

    def _hidden_memory(self, memory_id: str) -> str | None:
        """The store's subject of one of this person's anchored memories, else ``None``."""
        caller, services = self._caller, self._services
        anchor = services.keys.anchors.memory(services.anchor_scope(caller.tenant), memory_id)
        if anchor is None or anchor.subject != services.anchor_subject(
            caller.tenant, caller.person
        ):
            return None
        return anchor.row_subject

    def pending(self) -> builtins.list[ForgetRequest]:
        """Agents' forget requests about this person that wait for an answer, oldest first."""
        with self._begin("pending") as note:
            caller = self._caller
            found = [
                request
                for request in (
                    ForgetRequest.model_validate(document)
                    for _, document in self._services.control.list(
                        caller.tenant, requests_prefix(caller.pseudonym())
                    )
                )
                if request.person == caller.person  # a store that ignored the prefix
            ]
            found.sort(key=lambda request: (request.requested_at, request.id))
            note.count = len(found)
            return found

    def _request(self, request_id: object) -> tuple[str, ForgetRequest]:
        caller = self._caller
        if not isinstance(request_id, str) or not request_id.startswith("fgr_"):
            raise RequestNotFound
        key = requests_prefix(caller.pseudonym()) + request_id
        document = self._services.control.get(caller.tenant, key)
        if document is None:
            raise RequestNotFound
        request = ForgetRequest.model_validate(document)
        if request.person != caller.person:
            raise RequestNotFound
        return key, request

    def approve(self, request_id: str) -> _receipts.Receipt:
        """Approve an agent's forget request: the erase runs and its receipt is returned."""
        with self._begin("approve") as note:
            key, request = self._request(request_id)
            note.memory_ids.append(request.memory_id)
            note.extra.append(("request", request.id))
            try:
                _, current = self._current_row(request.memory_id)
            except MemoryNotFound:
                self._services.control.put(self._caller.tenant, key, None)
                raise
            return self._erase(current, request=request)

    def reject(self, request_id: str) -> ForgetRequest:
        """Reject an agent's forget request: the memory stays."""
        with self._begin("reject") as note:
            key, request = self._request(request_id)
            note.memory_ids.append(request.memory_id)
            note.extra.append(("request", request.id))
            self._services.control.put(self._caller.tenant, key, None)
            return request.model_copy(update={"status": "rejected"})


#: The most memories one insight is derived from.
_MAX_DERIVED_FROM = 64
#: How many times formation decides again when another writer revised its target meanwhile.
_FORMATION_ATTEMPTS = 3


def _may_replace(contents: Contents, current: StoredRow, explicit_start: bool) -> bool:
    """Whether a write of ``contents`` may become ``current``'s next version: text from a
    tool or the web never changes what others rely on, text others rely on is never folded
    into a quarantined memory (it would be quarantined too), a memory kept to one session is
    not changed from outside it, and no version starts before the one it closes."""
    return (
        (contents.trust is Trust.UNTRUSTED) == (current.trust == Trust.UNTRUSTED.value)
        and contents.session_only == current.session_only
        and (not explicit_start or contents.valid_from >= current.valid_from)
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _New:
    """A checked text about to be remembered, and what writing it as a new memory needs."""

    subject: str
    contents: Contents
    pinned: bool
    cap: int | None
    child: bool
    sources: builtins.list[tuple[str, str]]
    created_at: datetime | None = None
    """An insight's: its oldest source's (retention counts from there), else now."""
    leave_out: frozenset[str] = frozenset()
    """Memories formation does not compare it with (a bulk write's later items')."""


def _inherit_labels(
    own: tuple[str, ...], inherited: tuple[str, ...], retention: Mapping[str, object]
) -> tuple[str, ...]:
    """``own`` labels and the sources' (those with a retention first), at most the limit of
    labels a memory holds: derived data is held no longer than what it was derived from."""
    merged = tuple(dict.fromkeys((*own, *inherited)))
    if len(merged) <= validate.MAX_LABELS:
        return merged
    # Too many to keep all: those a retention applies to first, then its own, then the rest.
    kept = sorted(merged, key=lambda label: (label not in retention, label not in own))
    if sum(label in retention for label in merged) > validate.MAX_LABELS:
        raise InvalidInputError(
            f"An insight keeps its sources' labels that have a retention, and these come to "
            f"more than {validate.MAX_LABELS}; derive it from fewer memories. Nothing was "
            "stored."
        )
    chosen = set(kept[: validate.MAX_LABELS])
    return tuple(label for label in merged if label in chosen)


def caller_row_subject(caller: Caller, record: MemoryRecord) -> str:
    """The subject the store keeps ``record`` under: the caller's pseudonym, or the tenant."""
    return TENANT_SUBJECT if record.scope.about == TENANT_SUBJECT else caller.pseudonym()


def caller_of(handle: ScopedMemory | PersonMemory) -> Caller:
    """Who ``handle`` calls as: for the project's own tests and benchmarks only."""
    return handle._caller


def _encode_cursor(row: StoredRow) -> str:
    raw = json.dumps([row.created_at.isoformat(), row.memory_id]).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(cursor: object) -> tuple[datetime, str]:
    try:
        if not isinstance(cursor, str):
            raise TypeError
        created, memory_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        when = datetime.fromisoformat(created)
        if when.tzinfo is None or not validate.MEMORY_ID.fullmatch(memory_id):
            raise ValueError
    except (TypeError, ValueError, UnicodeError):
        raise InvalidInputError(
            "The cursor is not one that list() returned; pass next_cursor back unchanged."
        ) from None
    return when, memory_id


def _then_in_unit(handle: _Handle, then: Callable[[], None]) -> None:
    """Run ``then`` once the call's unit of work has committed, as a unit of its own."""
    store = handle._caller.services.store

    def run() -> None:
        with store.unit():
            then()

    store.after_commit(run)


def _deferring(handle: _Handle) -> bool:
    """Whether a bulk write is deciding ``handle``'s writes in this thread (:mod:`._bulk`)."""
    deferring = DEFERRING.get()
    return deferring is not None and deferring.handle is handle
