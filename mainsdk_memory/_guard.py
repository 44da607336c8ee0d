"""The core's own check of what a driver returns: every row is filtered again before use.

A driver applies the :class:`~mainsdk_memory.drivers.Filter` itself (that is its job, and
its fast path), but a buggy or hostile driver must not be able to hand a caller another
tenant's, person's or session's memory, a quarantined one, an expired one or one outside the
agent's grant. :class:`GuardedStore` wraps the driver the core uses and re-applies the
filter's reference rules (:meth:`Filter.matches`, :meth:`Filter.visible`) to every row of
every read; rows that fail are dropped silently, as if the driver had not returned them.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Container, Iterable, Sequence
from datetime import datetime
from typing import TypeVar

from mainsdk_memory.drivers import (
    Capabilities,
    Driver,
    EraseResult,
    Filter,
    StoredRow,
    VectorDriver,
    VectorEntry,
)

__all__ = ["GuardedStore"]


_Item = TypeVar("_Item")


def _newest_first(row: StoredRow) -> tuple[datetime, str]:
    return (row.created_at, row.memory_id)


def _unique(items: Iterable[_Item], row_of: Callable[[_Item], StoredRow]) -> builtins.list[_Item]:
    """``items`` with each memory once (the first item of it returned)."""
    seen: set[str] = set()
    kept = []
    for item in items:
        memory_id = row_of(item).memory_id
        if memory_id not in seen:
            seen.add(memory_id)
            kept.append(item)
    return kept


class GuardedStore:
    """The driver as the core sees it: writes pass through, reads are filtered again."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver

    @property
    def name(self) -> str:
        """The driver's name (receipts, diagnostics)."""
        return self.driver.name

    @property
    def capabilities(self) -> Capabilities:
        """What the driver declares."""
        return self.driver.capabilities

    # -- writes: the driver's own ---------------------------------------------------------

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store ``row`` (``vector`` only when there is one)."""
        if vector is None:
            self.driver.put(row, closes=closes)
        else:
            self.driver.put(row, closes=closes, vector=vector)

    def set_pinned(self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool) -> None:
        """Set the pinned flag on the memory's current version."""
        self.driver.set_pinned(tenant, app, subject, memory_id, pinned)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Erase every version of the memory."""
        return self.driver.erase(tenant, app, subject, memory_id)

    # -- reads: filtered again ------------------------------------------------------------

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> builtins.list[StoredRow]:
        """The versions of ``memory_id`` within ``subjects``, oldest first, one subject only."""
        rows = [
            row
            for row in self.driver.versions(tenant, app, tuple(subjects), memory_id)
            if row.tenant == tenant
            and row.app == app
            and row.subject in subjects
            and row.memory_id == memory_id
        ]
        if len({row.subject for row in rows}) > 1:
            return []  # one memory id under two subjects: not something a store can hold
        by_version = {row.version: row for row in rows}
        return [by_version[version] for version in sorted(by_version)]

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """Rows matching ``where``, newest first, after the cursor, at most ``limit``."""
        found = self.driver.list(where, limit=limit, after=after)
        rows = _unique((row for row in found if where.matches(row)), lambda row: row)
        if after is not None:
            rows = [row for row in rows if _newest_first(row) < after]
        rows.sort(key=_newest_first, reverse=True)
        return rows[:limit]

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """The driver's BM25 ranking, without any row ``where`` does not match."""
        found = self.driver.search(where, query, top_k=top_k)
        matching = (hit for hit in found if where.matches(hit[0]))
        return _unique(matching, lambda hit: hit[0])[:top_k]

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        """The sealed embeddings within ``where``'s subjects (rows are checked when read)."""
        assert isinstance(self.driver, VectorDriver)  # noqa: S101 - checked when opened
        return [
            entry
            for entry in self.driver.vectors(where, known=known)
            if entry.subject in where.subjects
        ]

    def damaged(self, tenant: str, app: str, subject: str) -> builtins.list[str]:
        """The ids of the subject's memories the driver cannot decode (a driver that says
        nothing of damage: none), for an erase that must leave nothing (ADR 0046)."""
        find = getattr(self.driver, "damaged", None)
        if find is None:
            return []
        return [memory_id for memory_id in find(tenant, app, subject) if isinstance(memory_id, str)]

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[tuple[str, str]]:
        """``(subject, memory id)`` the driver says outlived ``retention`` (checked on read)."""
        return self.driver.expired(tenant, app, retention)
