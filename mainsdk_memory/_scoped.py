"""The scoped handles: an agent acting for a person, and the person themself.

Every call checks its input before anything changes, seals content under the subject's own
key, blinds search terms, runs the injection check at write and at recall, enforces the
agent's grant, kill switch and limits, and emits one audit event (ids only).
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from mainsdk_memory import _fusion
from mainsdk_memory import _validate as check
from mainsdk_memory import receipts as _receipts
from mainsdk_memory import tenant as _tenant
from mainsdk_memory._context import ContextEntry, render_context
from mainsdk_memory._errors import (
    AgentDisabledError,
    ConsentRequiredError,
    InvalidInputError,
    LimitExceededError,
    MemoryCapabilityError,
    MemoryInjectionError,
    MemoryNotFound,
    RequestNotFound,
    ScopeError,
    SealError,
    TenantMismatchError,
)
from mainsdk_memory._records import (
    ForgetRequest,
    Hit,
    Kind,
    MemoryRecord,
    Page,
    Scope,
    Source,
    Trust,
)
from mainsdk_memory._text import index_terms
from mainsdk_memory._vectors import CANDIDATES, VectorIndex
from mainsdk_memory.audit import AuditEvent
from mainsdk_memory.drivers import (
    TENANT_SUBJECT,
    TRUST_RANK,
    Filter,
    StoredRow,
    VectorDriver,
    VectorEntry,
)
from mainsdk_memory.keys import associated_data

if TYPE_CHECKING:
    from mainsdk_memory._memory import Memory, _AuditNote

__all__ = ["PERSON_AGENT", "PersonMemory", "RecallMode", "ScopedMemory"]

RecallMode = Literal["auto", "text", "vector", "hybrid"]
"""How recall ranks: ``text`` (BM25 over blind terms), ``vector`` (sealed embeddings),
``hybrid`` (both, fused), or ``auto`` (hybrid when the memory has an embedder, else text)."""
_MODES = ("auto", "text", "vector", "hybrid")

#: The agent name recorded when the person themself writes (no agent name can start with "@").
PERSON_AGENT = "@person"
MAX_PINNED_IN_CONTEXT = 20


class _Handle:
    """What both handles share: scope, sealing, the walls, reads and writes."""

    def __init__(
        self,
        memory: Memory,
        tenant_id: str,
        person: str,
        agent: str | None,
        session: str | None,
    ) -> None:
        self._memory = memory
        self._tenant = tenant_id
        self.person = person
        self.agent = agent if agent is not None else PERSON_AGENT
        self.session = session

    def __repr__(self) -> str:
        return f"<{type(self).__name__} agent={self.agent!r} session={self.session!r}>"

    # -- who is calling -------------------------------------------------------------------

    @property
    def _is_person(self) -> bool:
        return self.agent == PERSON_AGENT

    @property
    def _actor(self) -> str:
        return "person" if self._is_person else f"agent:{self.agent}"

    def _tenant_id(self) -> str:
        if _tenant.current() != self._tenant:
            raise TenantMismatchError
        return self._tenant

    def _begin(
        self, operation: str, memory_ids: Iterable[object] = ()
    ) -> AbstractContextManager[_AuditNote]:
        """Resolve the tenant, then audit the call (the kill switch is checked inside)."""
        tenant_id = self._tenant_id()
        ids = [memory_id for memory_id in memory_ids if isinstance(memory_id, str)]
        return self._memory._audited(
            tenant_id, operation, actor=self._actor, person=self.person, memory_ids=ids
        )

    def _allowed(
        self, tenant_id: str, records: dict[str, dict[str, Any]] | None = None
    ) -> str | None:
        """The ``written_by`` restriction of this caller; refuses a killed agent."""
        if self._is_person:
            return None
        if records is None:
            records = self._memory._agent_records(tenant_id, self.agent)
        if "kill" in records:
            raise AgentDisabledError
        policy = self._memory._read_policy(tenant_id, self.agent, records)
        return None if policy == "all" else self.agent

    # -- scope ----------------------------------------------------------------------------

    def _pseudonym(self, tenant_id: str) -> str:
        keys = self._memory._subject_keys(tenant_id, TENANT_SUBJECT, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        return keys.pseudonym(self.person)

    def _subject_of(self, row: StoredRow) -> str:
        return TENANT_SUBJECT if row.subject == TENANT_SUBJECT else self.person

    def _filter(
        self,
        tenant_id: str,
        *,
        kinds: frozenset[str] | None = None,
        as_of: datetime | None = None,
        pinned: bool | None = None,
    ) -> Filter:
        return Filter(
            tenant=tenant_id,
            app=self._memory.app,
            subjects=(self._pseudonym(tenant_id), TENANT_SUBJECT),
            session=self.session,
            kinds=kinds,
            as_of=as_of,
            pinned=pinned,
            written_by=self._allowed(tenant_id),
            any_session=self._is_person,
            retention=self._memory._retention_cutoffs(),
        )

    def _about(self, about: str | None) -> str:
        if about is None or about == self.person:
            return self.person
        if about == TENANT_SUBJECT:
            return TENANT_SUBJECT
        raise ScopeError(
            "A handle writes about the person it acts for, or about='tenant' for shared "
            "memory. Use memory.acting_for(<that person>) to write about someone else."
        )

    # -- sealing --------------------------------------------------------------------------

    def _ad(self, tenant_id: str, subject: str, memory_id: str, version: int) -> bytes:
        return associated_data(
            "mainsdk-memory/v1/memory", tenant_id, self._memory.app, subject, memory_id, version
        )

    def _vector_ad(self, tenant_id: str, subject: str, memory_id: str, version: int) -> bytes:
        return associated_data(
            "mainsdk-memory/v1/vector", tenant_id, self._memory.app, subject, memory_id, version
        )

    def _embedding_for(self, *, child: bool) -> VectorIndex | None:
        """The memory's vector index, unless there is none or a child's text would reach a
        model through it (no model ever reads a child's memories)."""
        index = self._memory._vectors
        if index is None or (child and index.embedder.uses_model):
            return None
        return index

    def _sealed_vector(self, row: StoredRow, text: str, *, child: bool) -> bytes | None:
        """``text``'s embedding sealed for ``row``'s version, or ``None`` without one."""
        index = self._embedding_for(child=child)
        if index is None:
            return None
        subject = self._subject_of(row)
        keys = self._memory._subject_keys(row.tenant, subject, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        ad = self._vector_ad(row.tenant, subject, row.memory_id, row.version)
        return index.seal(index.embed(text), lambda plain: keys.seal(plain, ad))

    def _store(self, row: StoredRow, text: str, *, child: bool, closes: int | None = None) -> None:
        """Put ``row`` (closing version ``closes``) with its sealed embedding, if any.

        The text passed the injection check just now, so recalls in this process need not
        check this version again.
        """
        vector = self._sealed_vector(row, text, child=child)
        if vector is None:
            self._memory._driver.put(row, closes=closes)
        else:
            self._memory._driver.put(row, closes=closes, vector=vector)
        self._memory._verdicts.put((row.tenant, row.app, row.memory_id, row.version, child), ())

    def _open_vector(self, entry: VectorEntry) -> bytes:
        subject = TENANT_SUBJECT if entry.subject == TENANT_SUBJECT else self.person
        keys = self._memory._subject_keys(self._tenant, subject, create=False)
        if keys is None or entry.sealed is None:
            raise SealError
        return keys.open(
            entry.sealed, self._vector_ad(self._tenant, subject, entry.memory_id, entry.version)
        )

    def _seal_row(
        self,
        tenant_id: str,
        *,
        subject: str,
        memory_id: str,
        version: int,
        text: str,
        kind: Kind,
        labels: tuple[str, ...],
        source: Source,
        trust: Trust,
        owner: str,
        confirmed_by: str | None,
        data: BaseModel | dict[str, Any] | None,
        data_type: str | None,
        session_only: bool,
        session: str | None,
        pinned: bool,
        created_at: datetime,
        recorded_at: datetime,
        valid_from: datetime,
    ) -> StoredRow:
        keys = self._memory._subject_keys(tenant_id, subject, create=True)
        assert keys is not None  # noqa: S101 - create=True always returns keys
        if isinstance(data, BaseModel):
            data_type, data = check.type_name(type(data)), data.model_dump(mode="json")
        payload = {
            "text": text,
            "kind": kind.value,
            "labels": list(labels),
            "trust": trust.value,
            "confirmed_by": confirmed_by,
            "source": source.model_dump(mode="json"),
            "agent": owner,
            "author": self.agent,
            "session": session,
            "session_only": session_only,
            "valid_from": valid_from.isoformat(),
            "recorded_at": recorded_at.isoformat(),
            "data": data,
            "data_type": data_type if data is not None else None,
        }
        sealed = keys.seal(
            json.dumps(payload, ensure_ascii=False).encode("utf-8"),
            self._ad(tenant_id, subject, memory_id, version),
        )
        counts: dict[str, int] = {}
        terms = index_terms(text)
        for term in terms:
            token = keys.blind(term)
            counts[token] = counts.get(token, 0) + 1
        return StoredRow(
            tenant=tenant_id,
            app=self._memory.app,
            subject=TENANT_SUBJECT if subject == TENANT_SUBJECT else self._pseudonym(tenant_id),
            memory_id=memory_id,
            version=version,
            kind=kind.value,
            labels=labels,
            trust=trust.value,
            agent=owner,
            session=session,
            session_only=session_only,
            pinned=pinned,
            created_at=created_at,
            recorded_at=recorded_at,
            valid_from=valid_from,
            valid_to=None,
            sealed=sealed,
            terms=counts,
            length=len(terms),
        )

    def _unseal(self, row: StoredRow) -> dict[str, Any]:
        subject = self._subject_of(row)
        keys = self._memory._subject_keys(row.tenant, subject, create=False)
        if keys is None:
            raise SealError(
                "This memory's key does not exist: its person was erased (the key destroyed), "
                "or this store does not belong to this key store. It cannot be opened."
            )
        plain = keys.open(row.sealed, self._ad(row.tenant, subject, row.memory_id, row.version))
        try:
            payload = json.loads(plain)
            consistent = (
                payload["kind"] == row.kind
                and tuple(payload["labels"]) == row.labels
                and payload["trust"] == row.trust
                and payload["agent"] == row.agent
                and payload["session"] == row.session
                and payload["session_only"] == row.session_only
                and datetime.fromisoformat(payload["valid_from"]) == row.valid_from
                and datetime.fromisoformat(payload["recorded_at"]) == row.recorded_at
            )
        except (KeyError, TypeError, ValueError):
            raise SealError from None
        if not consistent:
            # The driver's plain columns disagree with what was sealed: someone edited them.
            raise SealError
        return dict(payload)

    def _open_row(self, row: StoredRow) -> MemoryRecord:
        payload = self._unseal(row)
        try:
            source = Source.model_validate(payload["source"])
        except ValidationError:
            raise SealError from None
        data: Any = payload["data"]
        if data is not None and payload["data_type"]:
            model = self._memory._data_model(payload["data_type"])
            if model is not None:
                try:
                    data = model.model_validate(data)
                except ValidationError:
                    data = payload["data"]  # the schema changed since; keep the stored fields
        return MemoryRecord(
            id=row.memory_id,
            version=row.version,
            kind=Kind(row.kind),
            text=payload["text"],
            data=data,
            source=source,
            trust=Trust(row.trust),
            labels=row.labels,
            pinned=row.pinned,
            session_only=row.session_only,
            scope=Scope(
                tenant=row.tenant,
                app=row.app,
                about=self._subject_of(row),
                agent=row.agent,
                session=row.session,
            ),
            valid_from=datetime.fromisoformat(payload["valid_from"]),
            valid_to=row.valid_to,
            recorded_at=datetime.fromisoformat(payload["recorded_at"]),
            created_at=row.created_at,
            confirmed_by=payload.get("confirmed_by"),
            author=payload.get("author", row.agent),
        )

    def _current_row(self, tenant_id: str, memory_id: object) -> tuple[list[StoredRow], StoredRow]:
        if not isinstance(memory_id, str):
            raise InvalidInputError("A memory id is a string like 'mem_…'.")
        if not check.MEMORY_ID.fullmatch(memory_id):
            raise MemoryNotFound
        where = self._filter(tenant_id)
        rows = self._memory._driver.versions(tenant_id, self._memory.app, where.subjects, memory_id)
        current = rows[-1] if rows else None
        if current is None or current.valid_to is not None or not where.visible(current):
            raise MemoryNotFound
        return rows, current

    # -- the walls on writes ----------------------------------------------------------------

    def _check_injection(self, text: str, *, child: bool = False) -> None:
        detector = self._memory._child_detector if child else self._memory.detector
        findings = detector.check(text)
        if findings:
            raise MemoryInjectionError(tuple(sorted({finding.rule for finding in findings})))

    def _check_write(self, tenant_id: str, *, new_personal_memory: bool) -> None:
        if self._is_person:
            return
        records = self._memory._agent_records(tenant_id, self.agent)
        self._allowed(tenant_id, records)  # the kill switch
        limits = self._memory._limits(tenant_id, self.agent, records)
        if new_personal_memory and limits.memories_per_person is not None:
            mine = Filter(
                tenant=tenant_id,
                app=self._memory.app,
                subjects=(self._pseudonym(tenant_id),),
                written_by=self.agent,
                any_session=True,
            )
            cap = limits.memories_per_person
            if len(self._memory._driver.list(mine, limit=cap + 1)) >= cap:
                raise LimitExceededError(
                    f"The agent already holds {cap} memories about this person, its limit; "
                    "nothing was stored. Forget or revise old ones, or raise the limit."
                )
        self._memory._count_write(tenant_id, self.agent, limits.writes_per_minute)

    def _screen(self, tenant_id: str, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """Leave out recalled memories the injection check flags, and audit each omission."""
        kept = []
        verdicts = self._memory._verdicts
        for record in records:
            child = check.CHILD_LABEL in record.labels
            key = (tenant_id, self._memory.app, record.id, record.version, child)
            rules = verdicts.get(key)
            if rules is None:
                detector = self._memory._child_detector if child else self._memory.detector
                rules = tuple(sorted({finding.rule for finding in detector.check(record.text)}))
                verdicts.put(key, rules)
            if not rules:
                kept.append(record)
                continue
            self._memory._emit(
                AuditEvent(
                    at=self._memory._now(),
                    tenant=tenant_id,
                    app=self._memory.app,
                    operation="omit",
                    outcome="refused",
                    actor=self._actor,
                    person=self.person,
                    memory_ids=(record.id,),
                    code=",".join(rules),
                )
            )
        return kept

    # -- writes ---------------------------------------------------------------------------

    def _default_source(self) -> Source:
        return Source.person(self.person) if self._is_person else Source.agent(self.agent)

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
    ) -> MemoryRecord:
        """Store a new memory and return it (version 1, id ``mem_…``).

        ``about`` defaults to the person acted for; ``"tenant"`` stores shared memory.
        ``source`` defaults to this agent (trust ``inferred``; the person's own handle:
        ``confirmed``). A tool, MCP, web or import source makes the memory ``untrusted`` and
        quarantined: only this session sees it until the person confirms it.
        ``session_only`` memories are seen only in this session. ``data`` is a pydantic model
        instance kept with the text and returned as that model. The injection check runs
        first; a flagged text raises :class:`MemoryInjectionError` and nothing is stored.
        """
        with self._begin("remember") as note:
            tenant_id = self._tenant
            text = check.text(text, self._memory._max_text)
            checked_kind = check.kind(kind)
            subject = self._about(about)
            if source is None:
                source = self._default_source()
            elif not isinstance(source, Source):
                raise InvalidInputError("source must be a Source, for example Source.person(id).")
            checked_labels = self._memory_labels(check.labels(labels))
            if not isinstance(pinned, bool) or not isinstance(session_only, bool):
                raise InvalidInputError("pinned and session_only are True or False.")
            if session_only and self.session is None:
                raise InvalidInputError(
                    "session_only needs a session: use memory.acting_for(..., session=...)."
                )
            if data is not None and not isinstance(data, BaseModel):
                raise InvalidInputError("data must be a pydantic model instance.")
            if source.at is not None:
                check.aware(source.at, "source.at")
            start = None if valid_from is None else check.aware(valid_from, "valid_from")
            child = subject != TENANT_SUBJECT and self._is_child(tenant_id)
            if child:
                checked_labels = (*checked_labels, check.CHILD_LABEL)
            self._check_injection(text, child=child)
            self._check_write(tenant_id, new_personal_memory=subject != TENANT_SUBJECT)
            now = self._memory._now()
            if data is not None:
                self._memory.register_schema(type(data))
            trust = source.trust
            row = self._seal_row(
                tenant_id,
                subject=subject,
                memory_id=check.new_memory_id(),
                version=1,
                text=text,
                kind=checked_kind,
                labels=checked_labels,
                source=source,
                trust=trust,
                owner=self.agent,
                confirmed_by=self.person if self._is_person and trust is Trust.CONFIRMED else None,
                data=data,
                data_type=None,
                session_only=session_only,
                session=self.session,
                pinned=pinned,
                created_at=now,
                recorded_at=now,
                valid_from=now if start is None else start,
            )
            note.memory_ids.append(row.memory_id)
            self._store(row, text, child=child)
            return self._open_row(row)

    def _is_child(self, tenant_id: str) -> bool:
        """Whether the person is a child; refuses a child's write before consent."""
        policy = self._memory._control.get(tenant_id, f"child/{self._pseudonym(tenant_id)}")
        if policy is None:
            return False
        if policy.get("consent") is None:
            raise ConsentRequiredError
        return True

    def _memory_labels(self, labels: tuple[str, ...]) -> tuple[str, ...]:
        allowed = self._memory.labels
        if allowed is not None and not set(labels) <= allowed:
            raise InvalidInputError(
                f"This store holds only the labels {sorted(allowed)}; nothing was stored."
            )
        return labels

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
    ) -> MemoryRecord:
        """Write the memory's next version and close the current one at ``valid_from``.

        Unset arguments keep the current version's kind and labels; ``data`` belongs to the
        text it comes with, so it is not carried over. A revision never raises trust above the
        current version's unless a person is its source. Raises
        :class:`MemoryConflictError` if another writer revised it first.
        """
        with self._begin("revise", [memory_id]):
            tenant_id = self._tenant
            text = check.text(text, self._memory._max_text)
            rows, current = self._current_row(tenant_id, memory_id)
            checked_kind = Kind(current.kind) if kind is None else check.kind(kind)
            checked_labels = self._memory_labels(
                current.labels if labels is None else check.labels(labels)
            )
            if source is None:
                source = self._default_source()
            elif not isinstance(source, Source):
                raise InvalidInputError("source must be a Source, for example Source.person(id).")
            if data is not None and not isinstance(data, BaseModel):
                raise InvalidInputError("data must be a pydantic model instance.")
            start = None if valid_from is None else check.aware(valid_from, "valid_from")
            if start is not None and start < current.valid_from:
                raise InvalidInputError(
                    "valid_from of a revision cannot be before the current version's valid_from."
                )
            child = check.CHILD_LABEL in current.labels
            self._check_injection(text, child=child)
            self._check_write(tenant_id, new_personal_memory=False)
            now = self._memory._now()
            if start is None:
                start = max(now, current.valid_from)  # a future-dated version closes later
            trust = source.trust
            if source.kind != "person" and TRUST_RANK[current.trust] < TRUST_RANK[trust]:
                trust = Trust(current.trust)  # revising cannot launder an untrusted memory
            if data is not None:
                self._memory.register_schema(type(data))
            row = self._seal_row(
                tenant_id,
                subject=self._subject_of(current),
                memory_id=current.memory_id,
                version=current.version + 1,
                text=text,
                kind=checked_kind,
                labels=checked_labels,
                source=source,
                trust=trust,
                owner=current.agent,
                confirmed_by=self.person if self._is_person and trust is Trust.CONFIRMED else None,
                data=data,
                data_type=None,
                session_only=current.session_only,
                session=current.session,
                pinned=current.pinned,
                created_at=rows[0].created_at,
                recorded_at=now,
                valid_from=start,
            )
            self._store(row, text, child=child, closes=current.version)
            return self._open_row(row)

    def _set_pinned(self, operation: str, memory_id: str, pinned: bool) -> MemoryRecord:
        with self._begin(operation, [memory_id]):
            tenant_id = self._tenant
            _, current = self._current_row(tenant_id, memory_id)
            self._check_write(tenant_id, new_personal_memory=False)
            self._memory._driver.set_pinned(
                tenant_id, self._memory.app, current.subject, current.memory_id, pinned
            )
            _rows, current = self._current_row(tenant_id, memory_id)
            return self._open_row(current)

    def pin(self, memory_id: str) -> MemoryRecord:
        """Pin the memory: ``context()`` always puts it first."""
        return self._set_pinned("pin", memory_id, True)

    def unpin(self, memory_id: str) -> MemoryRecord:
        """Unpin the memory."""
        return self._set_pinned("unpin", memory_id, False)

    def _erase(
        self, tenant_id: str, current: StoredRow, *, request: ForgetRequest | None
    ) -> _receipts.Receipt:
        driver = self._memory._driver
        result = driver.erase(tenant_id, self._memory.app, current.subject, current.memory_id)
        if self._memory._vectors is not None:
            self._memory._vectors.discard(
                tenant_id, self._memory.app, current.subject, current.memory_id
            )
        # Pending requests about the erased memory go too: no id of it stays behind.
        for key, document in self._memory._control.list(tenant_id, "forget/"):
            if document.get("memory_id") == current.memory_id:
                self._memory._control.put(tenant_id, key, None)
        claims: dict[str, Any] = {
            "op": "forget",
            "tenant": tenant_id,
            "app": self._memory.app,
            "about": self._subject_of(current),
            "agent": self.agent if request is None else request.agent,
            "memory_id": current.memory_id,
            "version_ids": [f"{current.memory_id}.v{v}" for v in result.versions],
            "driver": driver.name,
            "erase": result.mode,
        }
        if request is not None:
            claims["request"] = request.id
            claims["approved_by"] = PERSON_AGENT
        receipt = _receipts.issue(claims, self._memory._keys.signing_key, now=self._memory._now())
        self._memory._log_receipt(tenant_id, receipt)
        return receipt

    # -- reads ----------------------------------------------------------------------------

    def get(self, memory_id: str) -> MemoryRecord:
        """The memory's current version."""
        with self._begin("get", [memory_id]):
            _, current = self._current_row(self._tenant, memory_id)
            return self._open_row(current)

    def history(self, memory_id: str) -> list[MemoryRecord]:
        """Every version of the memory, oldest first."""
        with self._begin("history", [memory_id]) as note:
            if not self._memory.capabilities.time_travel:
                raise MemoryCapabilityError("time_travel")
            rows, _ = self._current_row(self._tenant, memory_id)
            note.count = len(rows)
            return [self._open_row(row) for row in rows]

    def list(
        self,
        *,
        kinds: Iterable[str] | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> Page:
        """Current memories in scope, newest first, ``limit`` at a time."""
        with self._begin("list") as note:
            tenant_id = self._tenant
            checked_kinds = check.kinds(kinds)
            limit = check.top_k(limit, "limit")
            after = None if cursor is None else _decode_cursor(cursor)
            where = self._filter(tenant_id, kinds=checked_kinds)
            rows = self._memory._driver.list(where, limit=limit + 1, after=after)
            more = len(rows) > limit
            rows = rows[:limit]
            next_cursor = _encode_cursor(rows[-1]) if more and rows else None
            note.memory_ids.extend(row.memory_id for row in rows)
            note.count = len(rows)
            return Page(items=[self._open_row(row) for row in rows], next_cursor=next_cursor)

    def _query_groups(self, tenant_id: str, query: str) -> list[set[str]]:
        vocabularies = [
            keys
            for keys in (
                self._memory._subject_keys(tenant_id, self.person, create=False),
                self._memory._subject_keys(tenant_id, TENANT_SUBJECT, create=True),
            )
            if keys is not None
        ]
        return [{keys.blind(term) for keys in vocabularies} for term in index_terms(query)]

    def _reads_child(self, tenant_id: str) -> bool:
        """Whether the person acted for is a child (no model may read their text)."""
        pseudonym = self._pseudonym(tenant_id)
        return self._memory._control.get(tenant_id, f"child/{pseudonym}") is not None

    def _recall(
        self,
        tenant_id: str,
        query: str,
        *,
        top_k: int,
        kinds: Iterable[str] | None,
        as_of: datetime | None,
        mode: str = "auto",
        note: _AuditNote | None = None,
    ) -> list[Hit]:
        query = check.text(query, self._memory._max_text, "query")
        top_k = check.top_k(top_k)
        checked_kinds = check.kinds(kinds)
        when = None if as_of is None else check.aware(as_of, "as_of")
        if mode not in _MODES:
            raise InvalidInputError("mode is 'auto', 'text', 'vector' or 'hybrid'.")
        capabilities = self._memory.capabilities
        index = self._memory._vectors
        if mode in ("vector", "hybrid") and index is None:
            raise MemoryCapabilityError(
                "vectors",
                f"mode={mode!r} needs an embedder, and this memory was opened without one. "
                "Open it with Memory.open(..., embedder=...), or recall with mode='text'.",
            )
        if (
            index is not None
            and mode != "text"
            and index.embedder.uses_model
            and self._reads_child(tenant_id)
        ):
            if mode != "auto":
                raise MemoryCapabilityError(
                    "vectors",
                    "This person is a child: no model may read their memories or queries, "
                    "so vector recall is off for them. Recall with mode='text' or 'auto'.",
                )
            index = None
        use_vectors = index is not None and mode != "text"
        use_text = mode in ("text", "hybrid") or (mode == "auto" and capabilities.text_search)
        if use_text and not capabilities.text_search:
            raise MemoryCapabilityError("text_search")
        if not (use_text or use_vectors):
            raise MemoryCapabilityError("text_search")
        if when is not None and not capabilities.time_travel:
            raise MemoryCapabilityError("time_travel")
        where = self._filter(tenant_id, kinds=checked_kinds, as_of=when)
        driver = self._memory._driver
        depth = max(CANDIDATES, top_k) if use_text and use_vectors else top_k
        found: list[tuple[StoredRow, float]] = []
        if use_text:
            groups = self._query_groups(tenant_id, query)
            if groups:
                found = driver.search(where, groups, top_k=depth)
        rows = {row.memory_id: row for row, _ in found}
        ranking = [(row.memory_id, score) for row, score in found]
        if use_vectors:
            assert index is not None  # noqa: S101 - use_vectors implies an index
            assert isinstance(driver, VectorDriver)  # noqa: S101 - checked when opened
            ranked = index.rank(driver, where, index.embed(query), depth, self._open_vector)
            if note is not None and ranked.foreign:
                note.extra.append(("vectors_of_another_embedder", str(ranked.foreign)))
            nearest = [(key[1], max(0.0, score)) for key, score in ranked.hits]
            if nearest and ranking:
                ranking = _fusion.fuse(ranking, nearest)
            elif nearest:
                ranking = nearest  # one ranker found candidates: its own scores stand
            versions = {key[1]: key for key, _ in ranked.hits}
            for memory_id, _ in ranking[:top_k]:
                if memory_id not in rows:
                    subject, _, version = versions[memory_id]
                    stored = driver.versions(tenant_id, self._memory.app, (subject,), memory_id)
                    match = [row for row in stored if row.version == version]
                    if match:  # erased meanwhile: left out
                        rows[memory_id] = match[0]
        best = [(rows[key], score) for key, score in ranking[:top_k] if key in rows]
        records = self._screen(tenant_id, [self._open_row(row) for row, _ in best])
        kept = {record.id: record for record in records}
        return [
            Hit(record=kept[row.memory_id], score=score)
            for row, score in best
            if row.memory_id in kept
        ]

    def recall(
        self,
        query: str,
        *,
        top_k: int = 5,
        kinds: Iterable[str] | None = None,
        as_of: datetime | None = None,
        mode: RecallMode = "auto",
    ) -> list[Hit]:
        """The memories that best match ``query``, best first, each with a score in [0, 1].

        With ``as_of``, the versions valid at that time answer ("where did she live in
        September?"). ``mode`` picks the ranking: ``"text"`` is BM25 over blind terms (a
        query of only stopwords matches nothing); ``"vector"`` ranks the sealed embeddings
        by cosine similarity (negative cosines score 0); ``"hybrid"`` fuses both
        (``0.65 · bm25' + 0.35 · cosine'`` over each ranking's min-max-normalised top 50,
        docs/concepts.md); ``"auto"``, the default, is hybrid when the memory was opened
        with an embedder and text otherwise. Vector and hybrid recall without an embedder
        raise :class:`MemoryCapabilityError`. Memories the injection check flags are left
        out (and audited by id).
        """
        with self._begin("recall") as note:
            hits = self._recall(
                self._tenant, query, top_k=top_k, kinds=kinds, as_of=as_of, mode=mode, note=note
            )
            note.memory_ids.extend(hit.record.id for hit in hits)
            note.count = len(hits)
            return hits

    def context(self, query: str, *, top_k: int = 5, max_chars: int | None = None) -> str:
        """One untrusted-data block for a user message: pinned memories first, then matches.

        Every memory's text is escaped so nothing inside it can close the block or forge an
        entry; with ``max_chars`` whole entries are dropped from the end to fit.
        """
        with self._begin("context") as note:
            tenant_id = self._tenant
            if max_chars is not None and (
                not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1
            ):
                raise InvalidInputError("max_chars must be a positive whole number.")
            hits = self._recall(tenant_id, query, top_k=top_k, kinds=None, as_of=None, note=note)
            pinned_rows = self._memory._driver.list(
                self._filter(tenant_id, pinned=True), limit=MAX_PINNED_IN_CONTEXT
            )
            records = self._screen(tenant_id, [self._open_row(row) for row in pinned_rows])
            seen = {record.id for record in records}
            records += [hit.record for hit in hits if hit.record.id not in seen]
            entries = [
                ContextEntry(
                    id=record.id,
                    kind=record.kind.value,
                    text=record.text,
                    recorded_at=record.recorded_at,
                    valid_from=record.valid_from,
                    valid_to=record.valid_to,
                    trust=record.trust.value,
                    source=record.source.kind,
                    pinned=record.pinned,
                )
                for record in records
            ]
            try:
                block = render_context(entries, max_chars=max_chars)
            except ValueError as exc:
                raise InvalidInputError(str(exc)) from None
            note.memory_ids.extend(entry.id for entry in entries)
            note.count = len(entries)
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
            tenant_id = self._tenant
            _, current = self._current_row(tenant_id, memory_id)
            self._check_write(tenant_id, new_personal_memory=False)
            prefix = f"forget/{self._pseudonym(tenant_id)}/"
            for _, document in self._memory._control.list(tenant_id, prefix):
                if document["memory_id"] == current.memory_id and document["agent"] == self.agent:
                    note.outcome = "pending"
                    note.extra.append(("request", document["id"]))
                    return ForgetRequest.model_validate(document)  # asking twice is one request
            request = ForgetRequest(
                id="fgr_" + secrets.token_hex(12),
                memory_id=current.memory_id,
                person=self.person,
                agent=self.agent,
                requested_at=self._memory._now(),
            )
            self._memory._control.put(
                tenant_id, f"{prefix}{request.id}", request.model_dump(mode="json")
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
        person. Confirming a confirmed memory changes nothing.
        """
        with self._begin("confirm", [memory_id]):
            tenant_id = self._tenant
            rows, current = self._current_row(tenant_id, memory_id)
            record = self._open_row(current)
            if record.trust is Trust.CONFIRMED:
                return record
            payload = self._unseal(current)
            now = self._memory._now()
            row = self._seal_row(
                tenant_id,
                subject=self._subject_of(current),
                memory_id=current.memory_id,
                version=current.version + 1,
                text=record.text,
                kind=record.kind,
                labels=record.labels,
                source=record.source,
                trust=Trust.CONFIRMED,
                owner=current.agent,
                confirmed_by=self.person,
                data=payload["data"],
                data_type=payload["data_type"],
                session_only=current.session_only,
                session=current.session,
                pinned=current.pinned,
                created_at=rows[0].created_at,
                recorded_at=now,
                valid_from=max(now, current.valid_from),
            )
            child = check.CHILD_LABEL in current.labels
            self._store(row, record.text, child=child, closes=current.version)
            return self._open_row(row)

    def forget(self, memory_id: str) -> _receipts.Receipt:
        """Hard-delete every version of the memory at once and return a signed receipt."""
        with self._begin("forget", [memory_id]):
            tenant_id = self._tenant
            _, current = self._current_row(tenant_id, memory_id)
            return self._erase(tenant_id, current, request=None)

    def pending(self) -> list[ForgetRequest]:
        """Agents' forget requests about this person that wait for an answer, oldest first."""
        with self._begin("pending") as note:
            tenant_id = self._tenant
            found = [
                ForgetRequest.model_validate(document)
                for _, document in self._memory._control.list(
                    tenant_id, f"forget/{self._pseudonym(tenant_id)}/"
                )
            ]
            found.sort(key=lambda request: (request.requested_at, request.id))
            note.count = len(found)
            return found

    def _request(self, tenant_id: str, request_id: object) -> tuple[str, ForgetRequest]:
        if not isinstance(request_id, str) or not request_id.startswith("fgr_"):
            raise RequestNotFound
        key = f"forget/{self._pseudonym(tenant_id)}/{request_id}"
        document = self._memory._control.get(tenant_id, key)
        if document is None:
            raise RequestNotFound
        request = ForgetRequest.model_validate(document)
        if request.person != self.person:
            raise RequestNotFound
        return key, request

    def approve(self, request_id: str) -> _receipts.Receipt:
        """Approve an agent's forget request: the erase runs and its receipt is returned."""
        with self._begin("approve") as note:
            tenant_id = self._tenant
            key, request = self._request(tenant_id, request_id)
            note.memory_ids.append(request.memory_id)
            note.extra.append(("request", request.id))
            try:
                _, current = self._current_row(tenant_id, request.memory_id)
            except MemoryNotFound:
                self._memory._control.put(tenant_id, key, None)
                raise
            return self._erase(tenant_id, current, request=request)

    def reject(self, request_id: str) -> ForgetRequest:
        """Reject an agent's forget request: the memory stays."""
        with self._begin("reject") as note:
            tenant_id = self._tenant
            key, request = self._request(tenant_id, request_id)
            note.memory_ids.append(request.memory_id)
            note.extra.append(("request", request.id))
            self._memory._control.put(tenant_id, key, None)
            return request.model_copy(update={"status": "rejected"})


def _encode_cursor(row: StoredRow) -> str:
    raw = json.dumps([row.created_at.isoformat(), row.memory_id]).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(cursor: object) -> tuple[datetime, str]:
    try:
        if not isinstance(cursor, str):
            raise TypeError
        created, memory_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        when = datetime.fromisoformat(created)
        if when.tzinfo is None or not check.MEMORY_ID.fullmatch(memory_id):
            raise ValueError
    except (TypeError, ValueError, UnicodeError):
        raise InvalidInputError(
            "The cursor is not one that list() returned; pass next_cursor back unchanged."
        ) from None
    return when, memory_id
