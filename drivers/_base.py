"""BaseDriver: a driver implements storage only and inherits search, list, expiry and pinning.

A subclass stores and returns :class:`StoredRow` values (the abstract methods below) and
declares ``name`` and ``capabilities``; every rule of visibility, order and ranking comes from
the reference implementations here: :meth:`Filter.matches` for what a read returns and the
BM25 kernel, through :func:`bm25_rank`, for ranking. A driver with a faster way (an index,
SQL) overrides a method and must return exactly what the inherited one does; the
conformance suite checks it (docs/drivers.md, ADR 0025).

The inherited methods read :meth:`BaseDriver.rows`, every stored version of one tenant and
app, on each call: right for small stores and for a first driver; override ``search`` and
``list`` before a store grows large.
"""

from __future__ import annotations

import abc
import builtins
import contextlib
import dataclasses
from collections.abc import Collection, Container, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Self

from mainsdk_memory._errors import MemoryCapabilityError, MemoryConflictError
from mainsdk_memory.drivers._protocol import (
    Capabilities,
    EraseResult,
    Filter,
    StoredRow,
    VectorEntry,
    bm25_rank,
)

if TYPE_CHECKING:
    from mainsdk_memory.drivers._protocol import Driver, VectorDriver

__all__ = ["BaseDriver"]


class BaseDriver(abc.ABC):
    """A storage driver that implements storage and inherits the reference behaviour.

    Implement: :meth:`put`, :meth:`versions`, :meth:`rows`, :meth:`erase`,
    :meth:`control_put`, :meth:`control_get`, :meth:`control_list` and :meth:`raw_dump`, and
    set the class attributes ``name`` and ``capabilities``. Then either implement the hook
    :meth:`replace` or override :meth:`set_pinned`; with ``vectors`` declared, implement
    :meth:`stored_vector` (or override :meth:`vectors`) and keep the ``vector`` given to
    :meth:`put`. Inherited: :meth:`search`, :meth:`list`, :meth:`expired`,
    :meth:`set_pinned`, :meth:`vectors`, :meth:`close` (nothing to release) and the context
    manager; every inherited read applies the whole :class:`Filter`, ``memory_ids`` included.
    Each contract is the one of :class:`~mainsdk_memory.drivers.Driver`.

    Relations are not inherited: the base class does not know where a subclass would keep
    links. A subclass that declares ``relations`` implements ``put_links``, ``links`` and
    ``delete_links`` (:class:`~mainsdk_memory.drivers.RelationDriver`), and its
    :meth:`erase` and :meth:`raw_dump` cover the links too.
    """

    name: str
    """A short name for receipts and diagnostics, e.g. ``"dict"``."""
    capabilities: Capabilities
    """What the driver does; declare only what passes the conformance suite."""

    # -- storage: what a subclass implements ------------------------------------------------

    @abc.abstractmethod
    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store ``row`` as version 1 of a new memory (``closes=None``), or as version
        ``closes + 1`` closing version ``closes`` in one atomic step; raise
        :class:`~mainsdk_memory.MemoryConflictError` and change nothing if the memory exists
        (new) or ``closes`` is not its current open version. Keep ``vector`` with the
        version if ``vectors`` is declared (:meth:`Driver.put`)."""

    @abc.abstractmethod
    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> builtins.list[StoredRow]:
        """Every stored version of ``memory_id`` within those subjects, oldest first."""

    @abc.abstractmethod
    def rows(self, tenant: str, app: str) -> Iterable[StoredRow]:
        """Every stored version, open or closed, of every subject in ``tenant`` and ``app``.

        The scan the inherited reads filter: read once per call, so return a snapshot (a
        list built under the driver's lock, say) if writes may run meanwhile. Order does not
        matter.
        """

    @abc.abstractmethod
    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Remove every version, index entry and embedding of the memory (and, with
        ``relations`` declared, every link with the memory at either end, in any subject);
        return once it is durable."""

    @abc.abstractmethod
    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        """Set the control record ``key``; ``None`` deletes it for good."""

    @abc.abstractmethod
    def control_get(self, tenant: str, app: str, key: str) -> bytes | None:
        """The control record ``key``, or ``None``."""

    @abc.abstractmethod
    def control_list(self, tenant: str, app: str, prefix: str) -> builtins.list[tuple[str, bytes]]:
        """Every control record whose key starts with ``prefix``, sorted by key."""

    @abc.abstractmethod
    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """Everything the driver stores, as ``(where, bytes)`` pairs, covering every place
        it writes to (the conformance suite reads it)."""

    # -- hooks: implement one, or override the method that uses it -------------------------

    def replace(self, row: StoredRow) -> None:
        """Overwrite, in place and atomically, the stored version with ``row``'s tenant, app,
        subject, memory id and version by ``row`` (:meth:`set_pinned` uses it).

        Raise :class:`~mainsdk_memory.MemoryConflictError` and change nothing if that version
        is not stored or is no longer the memory's current open version (a revision closed
        it meanwhile).
        """
        raise NotImplementedError(
            f"{type(self).__name__} implements neither replace(row) nor set_pinned(); "
            "BaseDriver.set_pinned needs one of them"
        )

    def stored_vector(self, row: StoredRow) -> bytes | None:
        """The sealed embedding stored with this version by ``put(vector=...)``, or ``None``
        (:meth:`vectors` uses it; only drivers that declare ``vectors``)."""
        raise NotImplementedError(
            f"{type(self).__name__} declares vectors but implements neither "
            "stored_vector(row) nor vectors(); BaseDriver.vectors needs one of them"
        )

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        """Replace the sealed embedding of one stored version (:meth:`VectorDriver.put_vector`;
        only drivers that declare ``vectors``, which override it: the base class does not know
        where a subclass keeps the vectors given to :meth:`put`)."""
        if not self.capabilities.vectors:
            raise MemoryCapabilityError("vectors")
        raise NotImplementedError(
            f"{type(self).__name__} declares vectors but does not implement put_vector(); "
            "a reindex (Memory.reindex) needs it"
        )

    # -- the reference behaviour: inherited -------------------------------------------------

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """The rows ``where`` matches, ranked by :func:`bm25_rank` (the BM25 kernel)."""
        if not query or top_k <= 0:
            return []
        return bm25_rank(_matching(self, where), query, top_k)

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """The rows ``where`` matches, newest ``created_at`` first (then greater memory id),
        after the ``(created_at, memory_id)`` of the previous page's last row, at most
        ``limit``."""
        if limit <= 0:
            return []
        found = _matching(self, where)
        if after is not None:
            found = [row for row in found if (row.created_at, row.memory_id) < after]
        found.sort(key=lambda row: (row.created_at, row.memory_id), reverse=True)
        return found[:limit]

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[tuple[str, str]]:
        """``(subject, memory_id)`` of every memory in tenant and app whose current version
        carries a label of ``retention`` and that was created before that label's cutoff,
        sorted."""
        if not retention:
            return []
        return sorted(
            {
                (row.subject, row.memory_id)
                for row in self.rows(tenant, app)
                if row.tenant == tenant
                and row.app == app
                and row.valid_to is None
                and any(
                    label in row.labels and row.created_at < cutoff for label, cutoff in retention
                )
            }
        )

    def set_pinned(self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool) -> None:
        """Set the pinned flag on the memory's current version, through :meth:`replace`.

        Raises :class:`~mainsdk_memory.MemoryConflictError` if the memory has no current
        version.
        """
        stored = self.versions(tenant, app, [subject], memory_id)
        current = stored[-1] if stored else None
        if current is None or current.valid_to is not None:
            raise MemoryConflictError
        self.replace(dataclasses.replace(current, pinned=pinned))

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        """The sealed embedding (:meth:`stored_vector`) of every row matching ``where`` that
        has one, sorted by subject, memory id and version; ``sealed=None`` for the
        ``(memory_id, version)`` pairs in ``known``."""
        if not self.capabilities.vectors:
            raise MemoryCapabilityError("vectors")
        found: builtins.list[VectorEntry] = []
        for row in _matching(self, where):
            sealed = self.stored_vector(row)
            if sealed is not None:
                sent = None if (row.memory_id, row.version) in known else sealed
                found.append(VectorEntry(row.subject, row.memory_id, row.version, sent))
        found.sort(key=lambda entry: (entry.subject, entry.memory_id, entry.version))
        return found

    def close(self) -> None:
        """Release files, connections and locks (nothing, unless overridden)."""
        return

    def unit(self, *, write: bool = True) -> contextlib.AbstractContextManager[bool | None]:
        """The optional unit of work of :class:`~mainsdk_memory.drivers.Driver` (ADR 0096):
        here nothing, so each method stays its own atomic step. A driver whose storage has
        transactions overrides it to run a block's methods as one (``write=False``: reads
        only, of one snapshot)."""
        return contextlib.nullcontext()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _matching(driver: BaseDriver, where: Filter) -> builtins.list[StoredRow]:
    """The rows a read with ``where`` returns, from the driver's scan (module-level, so a
    subclass's own helpers cannot shadow it)."""
    return [row for row in driver.rows(where.tenant, where.app) if where.matches(row)]


if TYPE_CHECKING:
    # BaseDriver is a Driver and a VectorDriver, checked by mypy rather than by inheritance
    # (a Protocol's bodies are `...`; inheriting them would hide a missing method).
    def _is_a_driver(driver: BaseDriver) -> tuple[Driver, VectorDriver]:
        return driver, driver
