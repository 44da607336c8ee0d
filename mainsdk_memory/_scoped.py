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
import dataclasses
import json
import secrets
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from mainsdk_memory import _validate as validate
from mainsdk_memory import receipts as _receipts
from mainsdk_memory._assembly import assemble, check_max_chars, pinned_records
from mainsdk_memory._auditing import AuditNote
from mainsdk_memory._caller import PERSON_AGENT, Caller, requests_prefix
from mainsdk_memory._errors import (
    ConsentRequiredError,
    DamagedMemoryError,
    InvalidInputError,
    MemoryCapabilityError,
    MemoryNotFound,
    RequestNotFound,
    ScopeError,
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
from mainsdk_memory._records import ForgetRequest, Hit, Kind, MemoryRecord, Page, Source, Trust
from mainsdk_memory._sealing import (
    Contents,
    Place,
    data_fields,
    first_place,
    next_place,
    open_contents,
    open_record,
    seal,
    seal_vector,
    to_record,
)
from mainsdk_memory._signals import feedback as add_feedback
from mainsdk_memory._signals import feedback_value
from mainsdk_memory._text import check_language
from mainsdk_memory._walls import (
    check_injection,
    check_write,
    record_clean_verdict,
    revised_trust,
    trust_of,
)
from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow

__all__ = ["PersonMemory", "ScopedMemory", "caller_of"]


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
        caller = self._caller
        tenant_id = caller.tenant_id()
        ids = [memory_id for memory_id in memory_ids if isinstance(memory_id, str)]
        return self._services.audit.call(
            tenant_id, operation, actor=caller.actor, person=caller.person, memory_ids=ids
        )

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

    def _put_version(
        self,
        row: StoredRow,
        place: Place,
        contents: Contents,
        *,
        child: bool,
        closes: int | None = None,
    ) -> MemoryRecord:
        """Put ``row`` (closing version ``closes``) with its sealed embedding, if any, and
        return its record, built from the plaintext in hand (nothing is opened again).

        The text passed the injection check just now, so recalls in this process need not
        check this version again.
        """
        vector = seal_vector(self._caller, row, place, contents.text, child=child)
        self._services.store.put(row, closes=closes, vector=vector)
        written(self._caller, row)
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

    def _child_write(self) -> bool:
        """Whether the person is a child; refuses a child's write before consent."""
        policy = self._caller.guardian_policy()
        if policy is None:
            return False
        if policy.get("consent") is None:
            raise ConsentRequiredError
        return True

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
    ) -> MemoryRecord:
        """Store a new memory and return it (version 1, id ``mem_…``).

        ``about`` defaults to the person acted for; ``"tenant"`` stores shared memory.
        ``source`` defaults to this agent (trust ``inferred``; the person's own handle:
        ``confirmed``). Only the person's own handle confirms: ``Source.person(...)`` from an
        agent records the agent's claim that the person said it, as ``inferred``. A tool,
        MCP, web or import source makes the memory ``untrusted`` and quarantined: only this
        session sees it until the person confirms it (shared memory: until the app confirms
        it with ``memory.confirm_shared``). A session is this person's and this agent's: the
        same name opened by anyone else is another session.
        ``session_only`` memories are seen only in this session. ``data`` is a pydantic model
        instance kept with the text and returned as that model. ``language`` (default: the
        Memory's, English unless opened with ``language=``) is the one its words are stemmed
        in, so recall in that language finds inflected and partial forms. The injection check
        runs first; a flagged text raises :class:`MemoryInjectionError` and nothing is stored.
        """
        with self._begin("remember") as note:
            caller, services = self._caller, self._services
            text = validate.text(text, services.settings.max_text_chars)
            checked_language = self._language(language)
            checked_kind = validate.kind(kind)
            subject = caller.about(about)
            source = self._source(source)
            checked_labels = self._allowed_labels(validate.labels(labels))
            if not isinstance(pinned, bool) or not isinstance(session_only, bool):
                raise InvalidInputError("pinned and session_only are True or False.")
            if session_only and caller.session is None:
                raise InvalidInputError(
                    "session_only needs a session: use memory.acting_for(..., session=...)."
                )
            data = validate.data(data)
            start = None if valid_from is None else validate.aware(valid_from, "valid_from")
            child = subject != TENANT_SUBJECT and self._child_write()
            if child:
                checked_labels = (*checked_labels, validate.CHILD_LABEL)
            check_injection(services, text, child=child)
            cap = check_write(caller, new_personal_memory=subject != TENANT_SUBJECT)
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
            )
            place = first_place(
                caller, subject, pinned=pinned, created_at=now, labels=checked_labels, cap=cap
            )
            note.memory_ids.append(place.memory_id)
            try:
                row = seal(caller, contents, place)
                return self._put_version(row, place, contents, child=child)
            except BaseException:
                # Nothing was stored (or, if the store failed after its commit, a row nobody
                # can open): the anchor goes, so it holds no count against the agent's cap.
                unanchor(caller, place.memory_id)
                raise

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
        trust above the current version's unless the person's own handle writes it. Raises
        :class:`MemoryConflictError` if another writer revised it first.
        """
        with self._begin("revise", [memory_id]):
            caller, services = self._caller, self._services
            text = validate.text(text, services.settings.max_text_chars)
            given_language = None if language is None else self._language(language)
            rows, current = self._current_row(memory_id)
            held = open_contents(caller, current)  # its columns are checked before they count
            check_versions(rows)
            first = held if len(rows) == 1 else open_contents(caller, rows[0], versions=rows)
            checked_kind = Kind(current.kind) if kind is None else validate.kind(kind)
            checked_labels = self._keep_policy_labels(
                self._allowed_labels(current.labels if labels is None else validate.labels(labels)),
                first.labels,
                current,
            )
            source = self._source(source)
            data = validate.data(data)
            start = None if valid_from is None else validate.aware(valid_from, "valid_from")
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
            check_injection(services, text, child=child)
            check_write(caller, new_personal_memory=False)
            now = services.now()
            if start is None:
                start = max(now, current.valid_from)  # a future-dated version closes later
            fields, data_type = self._data_fields(data)
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
                language=held.language if given_language is None else given_language,
            )
            place = next_place(caller, current)
            row = seal(caller, contents, place)
            return self._put_version(row, place, contents, child=child, closes=current.version)

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
        caller, services = self._caller, self._services
        tenant_id = caller.tenant
        result = services.erase_memory(tenant_id, subject, memory_id, person=caller.person)
        # Pending requests about the erased memory go too: no id of it stays behind. They are
        # filed under the person the asking agent acted for (shared memory: anyone's).
        prefix = "forget/" if subject == TENANT_SUBJECT else requests_prefix(caller.pseudonym())
        for key, document in services.control.list(tenant_id, prefix):
            if document.get("memory_id") == memory_id:
                services.control.put(tenant_id, key, None)
        claims: dict[str, Any] = {
            "op": "forget",
            "tenant": tenant_id,
            "app": caller.app,
            "about": TENANT_SUBJECT if subject == TENANT_SUBJECT else caller.person,
            "agent": caller.agent if request is None else request.agent,
            "memory_id": memory_id,
            "version_ids": [f"{memory_id}.v{v}" for v in result.versions],
            "driver": services.driver.name,
            "erase": result.mode,
            "copies": "unopenable",
        }
        if request is not None:
            claims["request"] = request.id
            claims["approved_by"] = PERSON_AGENT
        return services.issue_receipt(tenant_id, claims)

    # -- reads ----------------------------------------------------------------------------

    def get(self, memory_id: str) -> MemoryRecord:
        """The memory's current version."""
        with self._begin("get", [memory_id]):
            _, current = self._current_row(memory_id)
            return open_record(self._caller, current)

    def history(self, memory_id: str) -> builtins.list[MemoryRecord]:
        """Every version of the memory this caller may see, oldest first.

        A version outside the caller's scope is left out, as every read leaves it out: another
        session never sees a quarantined version nobody confirmed (ADR 0045).
        """
        with self._begin("history", [memory_id]) as note:
            if not self._services.store.capabilities.time_travel:
                raise MemoryCapabilityError("time_travel")
            rows, _ = self._current_row(memory_id)
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
    ) -> Page:
        """Current memories in scope, newest first, ``limit`` at a time."""
        with self._begin("list") as note:
            caller = self._caller
            checked_kinds = validate.kinds(kinds)
            limit = validate.top_k(limit, "limit")
            after = None if cursor is None else _decode_cursor(cursor)
            where = caller.filter(kinds=checked_kinds)
            rows = self._services.store.list(where, limit=limit + 1, after=after)
            more = len(rows) > limit
            rows = rows[:limit]
            next_cursor = _encode_cursor(rows[-1]) if more and rows else None
            items = leave_out_tampered(caller, rows, lambda row: open_record(caller, row))
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
        finds the memories written in it. Memories the injection check flags are left out
        (and audited by id).
        """
        with self._begin("recall") as note:
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
    ) -> str:
        """One untrusted-data block for a user message: pinned memories first, then matches.

        Every memory's text is escaped so nothing inside it can close the block or forge an
        entry; with ``max_chars`` whole entries are dropped from the end to fit.
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
            )
            block, ids = assemble(pinned_records(self._caller), hits, max_chars=max_chars)
            note.memory_ids.extend(ids)
            note.count = len(ids)
            return block


class ScopedMemory(_Handle):
    """Memory calls as one agent, for one person, in one tenant (and optionally one session)."""

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
