"""Audit events: one per write, recall, forget, confirm, grant and approval — ids only.

An :class:`AuditEvent` names who (agent, person id), what (operation, memory ids, outcome),
when, and where (tenant, app). It never holds memory content, a query or a search term: its
fields are ids, names and counts, and :meth:`AuditEvent.to_dict` is all a sink ever sees.

Sinks: :class:`JsonlFileSink` appends one JSON line per event; :class:`LoggingSink` sends
each event to a :mod:`logging` logger (``mainsdk_memory.audit`` by default, silent unless the
app configures logging); :class:`MemorySink` keeps events in a list (tests, short scripts).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["AuditEvent", "AuditSink", "JsonlFileSink", "LoggingSink", "MemorySink"]


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One audited operation. Ids, names and counts only."""

    at: datetime
    tenant: str
    app: str
    operation: str
    """``remember``, ``remember-many``, ``revise``, ``recall``, ``context``, ``get``, ``list``,
    ``history``, ``pin``, ``unpin``, ``feedback``, ``forget``, ``forget-request``, ``approve``,
    ``reject``, ``confirm``, ``grant``, ``revoke``, ``kill``, ``revive``, ``omit`` (a recalled
    memory left out), ``learn``, ``model`` (one call of the model port), ``consolidate``,
    ``fork``, ``import``, and the working memory's and episodic ledger's calls."""
    outcome: str
    """``ok``, ``pending``, ``refused``, ``not-found``, ``conflict``, ``error``."""
    actor: str
    """``agent:<name>``, ``person``, or ``app`` (administrative calls)."""
    person: str | None = None
    """The person id the call was for, if any."""
    memory_ids: tuple[str, ...] = ()
    code: str | None = None
    """The error or rule code when refused (e.g. an injection rule id)."""
    count: int | None = None
    """How many memories a read returned."""
    extra: tuple[tuple[str, str], ...] = field(default=())
    """Further ids (e.g. ``("request", "fgr_…")``), never content."""

    def to_dict(self) -> dict[str, Any]:
        """The event as plain JSON-ready data."""
        data: dict[str, Any] = {
            "at": self.at.isoformat(),
            "tenant": self.tenant,
            "app": self.app,
            "operation": self.operation,
            "outcome": self.outcome,
            "actor": self.actor,
            "person": self.person,
            "memory_ids": list(self.memory_ids),
        }
        if self.code is not None:
            data["code"] = self.code
        if self.count is not None:
            data["count"] = self.count
        for key, value in self.extra:
            data[key] = value
        return data


@runtime_checkable
class AuditSink(Protocol):
    """Receives audit events. ``emit`` must not raise for ordinary I/O hiccups it can absorb."""

    def emit(self, event: AuditEvent) -> None:
        """Record one event."""
        ...


class JsonlFileSink:
    """Appends each event as one JSON line to a file (0600), flushed and fsynced."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._lock = threading.Lock()

    def emit(self, event: AuditEvent) -> None:
        """Append ``event`` as one line."""
        line = json.dumps(event.to_dict(), sort_keys=True).encode() + b"\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line)
                if self._fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)


class LoggingSink:
    """Sends each event to a :mod:`logging` logger as one JSON message at INFO."""

    def __init__(self, logger: logging.Logger | str = "mainsdk_memory.audit") -> None:
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger

    def emit(self, event: AuditEvent) -> None:
        """Log ``event``."""
        if self.logger.isEnabledFor(logging.INFO):
            self.logger.info("%s", json.dumps(event.to_dict(), sort_keys=True))


class MemorySink:
    """Keeps events in :attr:`events` (for tests and short scripts)."""

    def __init__(self) -> None:
        self.events: list[AuditEvent] = []
        self._lock = threading.Lock()

    def emit(self, event: AuditEvent) -> None:
        """Keep ``event``."""
        with self._lock:
            self.events.append(event)

    def operations(self) -> Sequence[tuple[str, str]]:
        """``(operation, outcome)`` of every event so far, in order."""
        return [(event.operation, event.outcome) for event in self.events]
