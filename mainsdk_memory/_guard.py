"""The core's own check of what a driver returns: every row is filtered again before use.

A driver applies the :class:`~mainsdk_memory.drivers.Filter` itself (that is its job, and
its fast path), but a buggy or hostile driver must not be able to hand a caller another
tenant's, person's or session's memory, a quarantined one, an expired one or one outside the
agent's grant. :class:`GuardedStore` wraps the driver the core uses and re-applies the
filter's reference rules (:meth:`Filter.matches`, :meth:`Filter.visible`) to every row of
every read; rows that fail are dropped silently, as if the driver had not returned them.

:meth:`GuardedStore.unit` runs one call's driver operations as one unit of work (the
driver's optional ``unit()``, ADR 0096), with what must wait for its commit
(:meth:`GuardedStore.after_commit`) or undo a step outside the store if it rolls back
(:meth:`GuardedStore.on_rollback`).

A row with a time that is not a timezone-aware ``datetime`` (a hand-edited file, a driver
that drops the offset) is damage, whichever driver returned it (ADR 0046): reads of many
memories leave it out before anything compares its times, and reading its memory raises
:class:`~mainsdk_memory.DamagedMemoryError`. The check is one ``utcoffset()`` per time.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import threading
from collections.abc import (
    Callable,
    Collection,
    Container,
    Hashable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextvars import ContextVar
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from mainsdk_memory._errors import DamagedMemoryError, MemorySDKError
from mainsdk_memory.drivers import (
    Capabilities,
    Driver,
    EraseResult,
    Filter,
    RelationDriver,
    StoredLink,
    StoredRow,
    VectorDriver,
    VectorEntry,
    bm25_rank,
)

__all__ = ["GuardedStore", "StaleSnapshot"]


_Item = TypeVar("_Item")


def _newest_first(row: StoredRow) -> tuple[datetime, str]:
    return (row.created_at, row.memory_id)


def _aware(value: object) -> bool:
    """Whether ``value`` is a timezone-aware datetime (what every stored time must be)."""
    return isinstance(value, datetime) and value.utcoffset() is not None


def _sound(row: StoredRow) -> bool:
    """Whether every time of ``row`` can be compared with the core's (aware) times."""
    return (
        _aware(row.created_at)
        and _aware(row.recorded_at)
        and _aware(row.valid_from)
        and (row.valid_to is None or _aware(row.valid_to))
    )


def _damaged_error(memory_id: str) -> DamagedMemoryError:
    """What a read of a memory with a time without its offset raises: its id, what to do."""
    return DamagedMemoryError(
        memory_id,
        f"Memory {memory_id} is damaged in the store: a stored version of it has a time "
        "without its offset, so it cannot be read; the other memories are not affected. "
        "Restore it from a backup of the store, or erase the memory.",
    )


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


class StaleSnapshot(Exception):
    """Raised inside a read unit of one snapshot by a check that must read again after a
    concurrent writer (a race, not tampering): the caller leaves the unit and runs again
    with plain reads (:func:`~mainsdk_memory._recall.recall`)."""


def _reads_in_units(opener: Callable[..., object]) -> bool:
    """Whether a driver's ``unit`` takes ``write`` (a read unit)."""
    try:
        return "write" in inspect.signature(opener).parameters
    except (TypeError, ValueError):
        return False


class _Pending:
    """What waits for the end of the unit of work bound on this thread."""

    __slots__ = ("atomic", "committed", "memo", "rolled_back", "snapshot", "write")

    def __init__(self, *, write: bool = True) -> None:
        self.write = write
        self.snapshot = False
        """A read unit whose reads all see one snapshot (a re-read inside it learns
        nothing new: :class:`StaleSnapshot`)."""
        self.committed: builtins.list[Callable[[], object]] = []
        self.rolled_back: builtins.list[Callable[[], object]] = []
        self.memo: dict[Hashable, object] = {}
        self.atomic = False
        """Whether the driver's unit really is one transaction (else nothing rolls back, so
        nothing may be undone)."""


class GuardedStore:
    """The driver as the core sees it: writes pass through, reads are filtered again."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        opener: Any = getattr(driver, "unit", None)
        self._read_units = callable(opener) and _reads_in_units(opener)
        self._pending: ContextVar[_Pending | None] = ContextVar(
            f"mainsdk_memory_unit_{id(self)}", default=None
        )
        # (tenant, app, subject) -> ids of memories a read found with a time without its
        # offset: what :meth:`damaged` adds to the driver's own (checked again when asked).
        self._unsound: dict[tuple[str, str, str], set[str]] = {}
        self._lock = threading.Lock()

    def _sound_only(self, rows: Iterable[StoredRow]) -> builtins.list[StoredRow]:
        """``rows`` without the unsound ones, which are remembered for :meth:`damaged`."""
        kept = []
        for row in rows:
            if _sound(row):
                kept.append(row)
            else:
                self._remember(row)
        return kept

    def _remember(self, row: StoredRow) -> None:
        with self._lock:
            self._unsound.setdefault((row.tenant, row.app, row.subject), set()).add(row.memory_id)

    def _scan(self, tenant: str, app: str) -> builtins.list[StoredRow] | None:
        """Every stored version of tenant and app through the driver's optional ``rows``
        (``BaseDriver``'s storage scan, ADR 0025) when a read failed on an unsound row:
        ``None`` if the driver has no such scan or holds no unsound row (the failure was
        something else)."""
        rows_of: Any = getattr(self.driver, "rows", None)
        if not callable(rows_of):
            return None
        rows = [
            row
            for row in rows_of(tenant, app)
            if isinstance(row, StoredRow) and row.tenant == tenant and row.app == app
        ]
        kept = self._sound_only(rows)
        return kept if len(kept) < len(rows) else None

    @property
    def name(self) -> str:
        """The driver's name (receipts, diagnostics)."""
        return self.driver.name

    @property
    def capabilities(self) -> Capabilities:
        """What the driver declares."""
        return self.driver.capabilities

    # -- one call, one unit of work ---------------------------------------------------------

    @contextlib.contextmanager
    def unit(self, *, write: bool = True) -> Iterator[None]:
        """Run the driver operations of the block, on this thread, as one unit of work: the
        driver's ``unit()`` when it has one (the db driver: one transaction), else each
        operation its own atomic step, as always. A unit inside a unit is the outer one.
        ``write=False`` is a read unit (a recall: one snapshot, one transaction on the db
        driver; a driver whose ``unit`` takes no ``write`` runs it as separate reads), in
        which nothing writes: a write unit inside it raises ``ValueError``.

        When the block ends without an error and the driver committed, what was handed to
        :meth:`after_commit` runs, in order, outside the unit; if anything raised, what was
        handed to :meth:`on_rollback` runs (newest first, its SDK errors suppressed) and the
        error goes on.
        """
        outer = self._pending.get()
        if outer is not None:
            if write and not outer.write:
                raise ValueError("a read unit of work does not write; write outside it")
            yield
            return
        pending = _Pending(write=write)
        token = self._pending.set(pending)
        opener: Any = getattr(self.driver, "unit", None)
        if not callable(opener):
            unit: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
        elif write:
            unit = opener()
        else:
            unit = opener(write=False) if self._read_units else contextlib.nullcontext()
        pending.atomic = not isinstance(unit, contextlib.nullcontext)
        try:
            with unit as snapshot:
                pending.snapshot = snapshot is True and not write
                yield
        except BaseException:
            self._pending.reset(token)
            for undo in reversed(pending.rolled_back):
                with contextlib.suppress(MemorySDKError):
                    undo()
            raise
        self._pending.reset(token)
        for then in pending.committed:
            then()

    def after_commit(self, then: Callable[[], object]) -> None:
        """Run ``then`` once the unit of work bound on this thread has committed (now, when
        none is): what must not run before the store holds the call's writes (the anchors'
        count of a new version, links and entities that take the cross-process locks)."""
        pending = self._pending.get()
        if pending is None:
            then()
        else:
            pending.committed.append(then)

    def in_snapshot(self) -> bool:
        """Whether a read unit of one snapshot is bound on this thread: what a read sees
        cannot change before it ends, so a check that must read again after a concurrent
        writer raises :class:`StaleSnapshot` instead, and the call runs again outside it."""
        pending = self._pending.get()
        return pending is not None and pending.snapshot

    def memo(self) -> dict[Hashable, object] | None:
        """What the core notes for the rest of the unit of work bound on this thread (read
        once per call), or ``None`` when none is bound."""
        pending = self._pending.get()
        return None if pending is None else pending.memo

    def on_rollback(self, undo: Callable[[], object]) -> None:
        """Run ``undo`` if the unit of work bound on this thread rolls back (nothing, when no
        unit is, or the driver's unit does nothing: each step then failed, or not, on its
        own, and what it stored stays stored)."""
        pending = self._pending.get()
        if pending is not None and pending.atomic:
            pending.rolled_back.append(undo)

    # -- writes: the driver's own ---------------------------------------------------------

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store ``row`` (``vector`` only when there is one)."""
        if vector is None:
            self.driver.put(row, closes=closes)
        else:
            self.driver.put(row, closes=closes, vector=vector)

    def bulk_put(self, rows: Sequence[StoredRow], vectors: Mapping[tuple[str, int], bytes]) -> None:
        """Store the first versions of many new memories of one tenant, all or none.

        The driver's own ``bulk_put`` when it has one (one transaction, or one sync); else
        ``put`` row by row. If either fails part way (the local driver writes a folder per
        subject; a driver without ``bulk_put`` a row at a time), what was stored of ``rows``
        is erased again before the error goes on.
        """
        bulk: Any = getattr(self.driver, "bulk_put", None)
        try:
            if callable(bulk):
                bulk(rows, vectors=dict(vectors))
            else:
                for row in rows:
                    self.put(row, vector=vectors.get((row.memory_id, row.version)))
        except BaseException:
            for row in rows:
                with contextlib.suppress(MemorySDKError):
                    self.erase(row.tenant, row.app, row.subject, row.memory_id)
            raise

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        """Replace one stored version's sealed embedding."""
        assert isinstance(self.driver, VectorDriver)  # noqa: S101 - checked when opened
        self.driver.put_vector(tenant, app, subject, memory_id, version, sealed)

    def put_links(self, links: Sequence[StoredLink]) -> None:
        """Store links (``relations`` only)."""
        assert isinstance(self.driver, RelationDriver)  # noqa: S101 - the core checks first
        self.driver.put_links(links)

    def delete_links(self, tenant: str, app: str, subject: str, keys: Collection[str]) -> None:
        """Remove links by key (``relations`` only)."""
        assert isinstance(self.driver, RelationDriver)  # noqa: S101 - the core checks first
        self.driver.delete_links(tenant, app, subject, keys)

    def set_pinned(self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool) -> None:
        """Set the pinned flag on the memory's current version."""
        self.driver.set_pinned(tenant, app, subject, memory_id, pinned)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Erase every version of the memory."""
        result = self.driver.erase(tenant, app, subject, memory_id)
        with self._lock:
            self._unsound.get((tenant, app, subject), set()).discard(memory_id)
        return result

    # -- reads: filtered again ------------------------------------------------------------

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> builtins.list[StoredRow]:
        """The versions of ``memory_id`` within ``subjects``, oldest first, one subject only.

        Raises :class:`~mainsdk_memory.DamagedMemoryError` if one of them has a time without
        its offset (the memory is damaged; the driver's own damage raises it there).
        """
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
        if not all(_sound(row) for row in rows):
            self._remember(rows[0])
            raise _damaged_error(memory_id)
        by_version = {row.version: row for row in rows}
        return [by_version[version] for version in sorted(by_version)]

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """Rows matching ``where``, newest first, after the cursor, at most ``limit``; rows
        with a time without its offset are left out and the page filled without them."""
        extra = 0  # unsound rows in the driver's page: asked again for as many more
        while True:
            try:
                found = self.driver.list(where, limit=limit + extra, after=after)
            except TypeError:  # the driver compared an unsound row's time: scanned instead
                scanned = self._scan(where.tenant, where.app)
                if scanned is None:
                    raise
                found = [row for row in scanned if row.subject in where.subjects]
                break
            sound = self._sound_only(found)
            unsound = len(found) - len(sound)
            if unsound <= extra or len(found) < limit + extra:
                found = sound  # as many sound rows as asked for, or the driver has no more
                break
            extra = unsound
        rows = _unique((row for row in found if where.matches(row)), lambda row: row)
        if after is not None:
            rows = [row for row in rows if _newest_first(row) < after]
        rows.sort(key=_newest_first, reverse=True)
        return rows[:limit]

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """The driver's BM25 ranking, without any row ``where`` does not match or with a
        time without its offset (the ranking filled without them)."""
        extra = 0  # unsound hits in the driver's ranking: asked again for as many more
        while True:
            try:
                found = self.driver.search(where, query, top_k=top_k + extra)
            except TypeError:  # the driver compared an unsound row's time: scanned instead
                scanned = self._scan(where.tenant, where.app)
                if scanned is None:
                    raise
                found = bm25_rank((row for row in scanned if where.matches(row)), query, top_k)
                break
            rows = self._sound_only(row for row, _ in found)
            unsound = len(found) - len(rows)
            sound = [hit for hit in found if _sound(hit[0])] if unsound else found
            if unsound <= extra or len(found) < top_k + extra:
                found = sound
                break
            extra = unsound
        matching = (hit for hit in found if where.matches(hit[0]))
        return _unique(matching, lambda hit: hit[0])[:top_k]

    def vector_state(self, where: Filter) -> Hashable | None:
        """The driver's token for what :meth:`vectors` would return for ``where`` (an optional
        driver method; ``None``: it cannot tell, read the vectors)."""
        state = getattr(self.driver, "vector_state", None)
        if state is None:
            return None
        try:
            token: Hashable | None = state(where)
        except TypeError:  # a row's time without its offset: read the vectors instead
            return None
        return token

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        """The sealed embeddings within ``where``'s subjects (rows are checked when read).

        A driver that trips over a row's time without its offset (``TypeError``) is asked
        again with no time in the filter, for its current vectors, and those of the sound
        rows ``where`` matches are kept: the unsound memory is left out, not the recall."""
        assert isinstance(self.driver, VectorDriver)  # noqa: S101 - checked when opened
        try:
            entries = self.driver.vectors(where, known=known)
        except TypeError:
            scanned = self._scan(where.tenant, where.app)
            if scanned is None:
                raise
            allowed = {(r.memory_id, r.version) for r in scanned if _sound(r) and where.matches(r)}
            timeless = replace(where, as_of=None, retention=())
            entries = [
                entry
                for entry in self.driver.vectors(timeless, known=known)
                if (entry.memory_id, entry.version) in allowed
            ]
        return [entry for entry in entries if entry.subject in where.subjects]

    def links(
        self, tenant: str, app: str, subjects: Sequence[str], ids: Collection[str]
    ) -> builtins.list[StoredLink]:
        """The links with an end in ``ids``, within the tenant, app and subjects (a link the
        driver returns from elsewhere is dropped; its seal would not open either)."""
        assert isinstance(self.driver, RelationDriver)  # noqa: S101 - the core checks first
        wanted = set(ids)
        return [
            link
            for link in self.driver.links(tenant, app, subjects, ids)
            if link.tenant == tenant
            and link.app == app
            and link.subject in subjects
            and (link.source in wanted or link.target in wanted)
        ]

    def damaged(self, tenant: str, app: str, subject: str) -> builtins.list[str]:
        """The ids of the subject's memories the driver cannot decode (a driver that says
        nothing of damage: none), and of those a read here found with a time without its
        offset and that still have one, sorted, for an erase that must leave nothing
        (ADR 0046). A person erase lists the subject first, so every unsound current row is
        seen before it asks."""
        find = getattr(self.driver, "damaged", None)
        named = [] if find is None else find(tenant, app, subject)
        found = {memory_id for memory_id in named if isinstance(memory_id, str)}
        with self._lock:
            seen = sorted(self._unsound.get((tenant, app, subject), ()))
        for memory_id in seen:
            if memory_id not in found and self._unsound_memory(tenant, app, subject, memory_id):
                found.add(memory_id)
        return sorted(found)

    def _unsound_memory(self, tenant: str, app: str, subject: str, memory_id: str) -> bool:
        """Whether a stored version of ``memory_id`` has a time without its offset (kept in
        mind if so, forgotten if not); a memory the driver cannot decode is the driver's to
        name, as before."""
        try:
            stored = self.driver.versions(tenant, app, (subject,), memory_id)
        except DamagedMemoryError:
            return False
        unsound = any(
            not _sound(row)
            for row in stored
            if (row.tenant, row.app, row.subject, row.memory_id)
            == (tenant, app, subject, memory_id)
        )
        with self._lock:
            if unsound:
                self._unsound.setdefault((tenant, app, subject), set()).add(memory_id)
            else:
                self._unsound.get((tenant, app, subject), set()).discard(memory_id)
        return unsound

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[tuple[str, str]]:
        """``(subject, memory id)`` the driver says outlived ``retention`` (checked on read),
        without the memories with a time without its offset: a sweep reads each memory it
        erases, and a damaged one is left to the person's forget or erase (ADR 0046)."""
        try:
            found = self.driver.expired(tenant, app, retention)
        except TypeError:  # the driver compared an unsound row's time: scanned instead
            scanned = self._scan(tenant, app)
            if scanned is None:
                raise
            found = sorted(
                {
                    (row.subject, row.memory_id)
                    for row in scanned
                    if row.valid_to is None
                    and any(
                        label in row.labels and row.created_at < cutoff
                        for label, cutoff in retention
                    )
                }
            )
        return [
            (subject, memory_id)
            for subject, memory_id in found
            if not self._unsound_memory(tenant, app, subject, memory_id)
        ]
