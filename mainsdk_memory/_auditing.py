"""One audit event per call: the note a call fills in as it runs, and the scope that emits it.

Events carry ids, counts and codes only (never content); the outcome of a call that raised
comes from its error's type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from mainsdk_memory._errors import (
    AuditError,
    ConfigurationError,
    IntegrityError,
    KeyStoreError,
    MemoryConflictError,
    MemoryNotFound,
    MemorySDKError,
    ModelError,
    SealError,
    StoreError,
)
from mainsdk_memory.audit import AuditEvent, AuditSink

__all__ = ["AuditNote", "Auditor"]

_REPORTED: ContextVar[set[str] | None] = ContextVar("integrity_reported", default=None)
"""The memories whose integrity event the current call has emitted (``None``: no call)."""


class AuditNote:
    """What an audited call found out, filled in as it runs."""

    __slots__ = ("count", "extra", "memory_ids", "outcome", "person")

    def __init__(self, person: str | None, memory_ids: Iterable[str]) -> None:
        self.person = person
        self.memory_ids = list(memory_ids)
        self.outcome = "ok"
        self.count: int | None = None
        self.extra: list[tuple[str, str]] = []


def _outcome_of(error: MemorySDKError) -> str:
    if isinstance(error, MemoryNotFound):
        return "not-found"
    if isinstance(error, MemoryConflictError):
        return "conflict"
    if isinstance(
        error, ConfigurationError | StoreError | SealError | KeyStoreError | ModelError
    ):
        return "error"
    return "refused"


class Auditor:
    """Emits the audit events of one app to its sink."""

    def __init__(self, sink: AuditSink, app: str, now: Callable[[], datetime]) -> None:
        self.sink = sink
        self._app = app
        self._now = now

    def emit(self, event: AuditEvent) -> None:
        """Hand ``event`` to the sink; a failing sink is an :class:`AuditError` (ids only)."""
        self._record(event.operation, event.outcome, event)

    def _record(self, operation: str, outcome: str, event: AuditEvent) -> None:
        try:
            self.sink.emit(event)
        except Exception as exc:
            raise AuditError(operation, outcome, event.memory_ids) from exc

    def _one(
        self, tenant: str, operation: str, outcome: str, actor: str, person: str,
        memory_id: str | None, code: str,
    ) -> None:
        self.emit(
            AuditEvent(
                at=self._now(),
                tenant=tenant,
                app=self._app,
                operation=operation,
                outcome=outcome,
                actor=actor,
                person=person,
                memory_ids=() if memory_id is None else (memory_id,),
                code=code,
            )
        )

    def omitted(self, tenant: str, actor: str, person: str, memory_id: str, rules: str) -> None:
        """The event of a recalled memory the injection check left out."""
        self._one(tenant, "omit", "refused", actor, person, memory_id, rules)

    def integrity(self, tenant: str, actor: str, person: str, memory_id: str | None) -> None:
        """The event of a memory left out of a listing or recall because it disagrees with
        the key store's anchors (ADR 0047); once per memory in one call, however many of its
        parts (its row, its vector) the call opened."""
        reported = _REPORTED.get()
        if reported is not None and memory_id is not None:  # unknown ids are not one memory
            if memory_id in reported:
                return
            reported.add(memory_id)
        self._one(tenant, "integrity", "error", actor, person, memory_id, IntegrityError.code)

    @contextmanager
    def call(
        self,
        tenant_id: str,
        operation: str,
        *,
        actor: str,
        person: str | None = None,
        memory_ids: Iterable[str] = (),
    ) -> Iterator[AuditNote]:
        """Emit one audit event for the enclosed call: its outcome, ids and counts only."""
        note = AuditNote(person, memory_ids)
        reported = _REPORTED.set(set())

        def event(outcome: str, *, code: str | None = None, count: int | None = None) -> None:
            self._record(
                operation,
                outcome,
                AuditEvent(
                    at=self._now(),
                    tenant=tenant_id,
                    app=self._app,
                    operation=operation,
                    outcome=outcome,
                    actor=actor,
                    person=note.person,
                    memory_ids=tuple(note.memory_ids),
                    code=code,
                    count=count,
                    extra=tuple(note.extra),
                ),
            )

        try:
            yield note
        except MemorySDKError as error:
            event(_outcome_of(error), code=",".join(getattr(error, "rules", ())) or error.code)
            raise
        finally:
            _REPORTED.reset(reported)
        event(note.outcome, count=note.count)
