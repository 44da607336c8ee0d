"""Drivers with one lie each, built on the real local driver, so the suite is seen to fail.

Each class changes one thing about :class:`LocalDriver` and keeps everything else. The suite
must fail each one on exactly the capability it lies about, and pass the honest ones. A lie
is told through the local driver's public methods and its documented file layout where it
can be, so the liars outlive a rewrite of its internals (only the lost update needs its lock).

The vector liars change one thing about :class:`LocalVectorsDriver`, the local driver with
honest vectors kept in memory beside it. Liars about anything else declare ``vectors=False``
(when their lie would also reach vectors), and liars whose lie the tag checks would also see
(they read through list, search, vectors and raw_dump) declare ``tags=False``, so the suite
blames only their lie. The relation
liars change one thing about the local driver's links, read through its public methods and
its documented ``_links`` folder (one folder per subject with links).
"""

from __future__ import annotations

import builtins
import os
import shutil
import threading
import time
import zlib
from collections.abc import Collection, Container, Hashable, Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from mainsdk_memory import MemoryConflictError, StoreError
from mainsdk_memory.drivers import (
    Driver,
    EraseResult,
    Filter,
    StoredLink,
    StoredRow,
    VectorEntry,
    bm25_rank,
)
from mainsdk_memory.drivers._regions import RegionRouter
from mainsdk_memory.drivers.local import LocalDriver

#: The local driver's declaration, without vectors: for liars whose lie is about another
#: capability but would reach vectors too, since the local driver keeps them in its files.
NO_VECTORS = replace(LocalDriver.capabilities, vectors=False)

READ_ALL = 1 << 30  # a list() limit above any store the suite writes


class SoftDeletingDriver(LocalDriver):
    """Lie: declares hard erase, but erase() keeps the memory's file aside and hides it."""

    name = "soft-deleting"
    MODE = "hard"
    capabilities = replace(NO_VECTORS, tags=False)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Hide the memory: keep its file in ``.trash/``, where reads never look."""
        kept = self.versions(tenant, app, [subject], memory_id)
        folder = self.root / tenant / app / subject  # the local driver's documented layout
        if kept:
            (folder / ".trash").mkdir(exist_ok=True)
            name = f"{memory_id}.json"
            shutil.copyfile(folder / name, folder / ".trash" / name)
        super().erase(tenant, app, subject, memory_id)
        return EraseResult(memory_id, tuple(row.version for row in kept), self.MODE)


class HonestSoftEraseDriver(SoftDeletingDriver):
    """No lie: soft-deletes like :class:`SoftDeletingDriver` and declares erase='soft'."""

    name = "soft-erase"
    MODE = "soft"
    capabilities = replace(NO_VECTORS, erase="soft")

    @classmethod
    def from_url(cls, url: str) -> HonestSoftEraseDriver:
        """Open ``softlocal:PATH`` (registered as an entry point by the policy tests)."""
        return cls(url.partition(":")[2])


class OverwritingDriver(LocalDriver):
    """Lie: declares time travel, but a revision overwrites the version it closes.

    It does not declare concurrent writers: the overwrite is two steps (erase, then put).
    """

    name = "overwriting"
    capabilities = replace(NO_VECTORS, concurrent_writers=False, tags=False)

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store a new memory, or replace the current version with the next (no history)."""
        if closes is None:
            super().put(row)
            return
        rows = self.versions(row.tenant, row.app, [row.subject], row.memory_id)
        if (
            not rows
            or rows[-1].version != closes
            or rows[-1].valid_to is not None
            or row.version != closes + 1
        ):
            raise MemoryConflictError
        super().erase(row.tenant, row.app, row.subject, row.memory_id)
        super().put(row)


def _page(
    rows: Iterable[StoredRow], limit: int, after: tuple[datetime, str] | None
) -> list[StoredRow]:
    """``rows`` as list() returns them: newest first, after ``after``, at most ``limit``."""
    found = [row for row in rows if after is None or (row.created_at, row.memory_id) < after]
    found.sort(key=lambda row: (row.created_at, row.memory_id), reverse=True)
    return found[:limit]


class TenantLeakingDriver(LocalDriver):
    """Lie: list() and search() ignore the tenant (they read the app and subject everywhere)."""

    name = "tenant-leaking"
    capabilities = NO_VECTORS

    def _everywhere(self, where: Filter) -> builtins.list[StoredRow]:
        tenants = [p.name for p in self.root.iterdir() if p.is_dir()] if self.root.exists() else []
        found: builtins.list[StoredRow] = []
        for tenant in tenants:
            found += super().list(replace(where, tenant=tenant), limit=READ_ALL)
        return found

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """The filter's rows in every tenant."""
        return _page(self._everywhere(where), limit, after)

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """BM25 over the filter's rows in every tenant."""
        return bm25_rank(self._everywhere(where), query, top_k)


class SessionLeakingDriver(LocalDriver):
    """Lie: list() and search() show every session's session-only and quarantined rows."""

    name = "session-leaking"
    capabilities = replace(NO_VECTORS, tags=False)

    def _leaky(self, where: Filter) -> builtins.list[StoredRow]:
        every = super().list(replace(where, any_session=True), limit=READ_ALL)
        return [
            row
            for row in every
            if where.matches(row) or replace(where, session=row.session).matches(row)
        ]

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """The filter's rows, and the session-only and quarantined rows of every session."""
        return _page(self._leaky(where), limit, after)

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """BM25 over the same rows."""
        return bm25_rank(self._leaky(where), query, top_k)


class UnsortedScoresDriver(LocalDriver):
    """Lie: search() returns the right hits with the right scores, in reverse order."""

    name = "unsorted-scores"
    capabilities = replace(LocalDriver.capabilities, tags=False)

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> list[tuple[StoredRow, float]]:
        """The reference ranking, reversed."""
        return list(reversed(super().search(where, query, top_k=top_k)))


class OutOfRangeScoresDriver(LocalDriver):
    """Lie: search() ranks right, but returns raw, unnormalized scores (above 1)."""

    name = "out-of-range-scores"
    capabilities = replace(LocalDriver.capabilities, tags=False)

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> list[tuple[StoredRow, float]]:
        """The reference ranking, with every score scaled by the number of query terms + 1."""
        return [
            (row, score * (len(query) + 1.5))
            for row, score in super().search(where, query, top_k=top_k)
        ]


class HiddenStorageDriver(LocalDriver):
    """Lie: raw_dump() shows nothing, so no claim about erasure can be checked (its lie
    would reach the links' erase too: it does not declare relations)."""

    name = "hidden-storage"
    capabilities = replace(NO_VECTORS, relations=False, tags=False)

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """Nothing."""
        return iter(())


class LostUpdateDriver(LocalDriver):
    """Lie: declares concurrent writers, but takes no lock, so racing revisions both win."""

    name = "lost-update"
    capabilities = NO_VECTORS

    def _writing(self, folder: Path):  # type: ignore[no-untyped-def]
        return _Unlocked(self, folder)

    def _write_file(self, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.002)  # widen the read-check-write window, so the race shows every run
        super()._write_file(*args, **kwargs)


class _Unlocked:
    """A no-op stand-in for the local driver's flock: creates the folder, locks nothing."""

    def __init__(self, driver: LocalDriver, folder: Path) -> None:
        self.driver, self.folder = driver, folder

    def __enter__(self) -> None:
        self.driver._ensure_store()
        self.folder.mkdir(parents=True, exist_ok=True)

    def __exit__(self, *exc_info: object) -> None:
        return None


class ControlLeakingDriver(LocalDriver):
    """Lie: control records (grants, kill switches) are kept per app, shared by all tenants."""

    name = "control-leaking"

    def _control_dir(self, tenant: str, app: str) -> Path:
        return self.root / "_control" / app


class NoSearchDriver(LocalDriver):
    """No lie: declares neither text search nor time travel (and is not asked for them)."""

    name = "no-search"
    capabilities = replace(LocalDriver.capabilities, text_search=False, time_travel=False)


class NoTimeTravelDriver(LocalDriver):
    """No lie: declares text search but not time travel."""

    name = "no-time-travel"
    capabilities = replace(LocalDriver.capabilities, time_travel=False)


class BadRegionsDriver(LocalDriver):
    """Lie: declares a region that is not a region name."""

    name = "bad-regions"
    capabilities = replace(LocalDriver.capabilities, regions=("EU West",))


class LocalVectorsDriver(LocalDriver):
    """No lie: the local driver, with vectors kept in a dict beside its files.

    Keeping vectors apart from the rows makes each vector lie one small change. They are not
    shared with another driver on the same folder, which no vector check asks of it.
    """

    name = "local-vectors"
    capabilities = replace(LocalDriver.capabilities, vectors=True)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._vectors_lock = threading.Lock()
        self._vectors: dict[tuple[str, str, str, str, int], bytes] = {}

    def vector_state(self, where: Filter) -> Hashable | None:
        """None: its vectors live beside the index the local token is made from, so it
        cannot tell when they change (honest: recall reads them every time)."""
        return None

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store the row, then its vector (only if the row was stored)."""
        with self._vectors_lock:
            super().put(row, closes=closes)
            if vector is not None:
                key = (row.tenant, row.app, row.subject, row.memory_id, row.version)
                self._vectors[key] = bytes(vector)

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        """Replace a stored version's vector (MemoryConflictError if it is not stored)."""
        with self._vectors_lock:
            stored = LocalDriver.versions(self, tenant, app, [subject], memory_id)
            if version not in {row.version for row in stored}:
                raise MemoryConflictError
            self._vectors[(tenant, app, subject, memory_id, version)] = bytes(sealed)

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> list[VectorEntry]:
        """The vector of every row the filter matches that has one, sorted."""
        with self._vectors_lock:
            stored = dict(self._vectors)
        found = []
        for row in self._rows_matching(where):
            vector = stored.get((row.tenant, row.app, row.subject, row.memory_id, row.version))
            if vector is not None:
                sealed = None if (row.memory_id, row.version) in known else vector
                found.append(VectorEntry(row.subject, row.memory_id, row.version, sealed))
        return sorted(found)

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Erase the rows, then every vector of the memory."""
        with self._vectors_lock:
            result = super().erase(tenant, app, subject, memory_id)
            self._drop_vectors(tenant, app, subject, memory_id)
        return result

    def _rows_matching(self, where: Filter) -> list[StoredRow]:
        # The local driver's public list(), so nothing here hangs on its internals.
        return LocalDriver.list(self, where, limit=READ_ALL)

    def _drop_vectors(self, tenant: str, app: str, subject: str, memory_id: str) -> None:
        for key in [k for k in self._vectors if k[:4] == (tenant, app, subject, memory_id)]:
            del self._vectors[key]

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """The local driver's files, and every vector held."""
        yield from super().raw_dump()
        with self._vectors_lock:
            stored = list(self._vectors.items())
        for key, vector in stored:
            yield "vectors/" + "/".join(map(str, key)), vector


class VectorsWithoutHistoryDriver(LocalVectorsDriver):
    """No lie: vectors without time travel, and an erase declared (and reported) soft."""

    name = "vectors-without-history"
    capabilities = replace(LocalVectorsDriver.capabilities, time_travel=False, erase="soft")

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Erase as the local driver does, and say 'soft', as declared."""
        return replace(super().erase(tenant, app, subject, memory_id), mode="soft")


class VectorClaimDriver(LocalDriver):
    """Lie: declares vectors, but has no vectors() method (it is no VectorDriver)."""

    name = "vector-claim"
    capabilities = replace(LocalDriver.capabilities, vectors=True, tags=False)
    vectors = None  # not even once the local driver has the method


class StaleVectorStateDriver(LocalVectorsDriver):
    """Lie: offers vector_state() and keeps one token whatever happens to the vectors (a
    recall would go on ranking what it stacked first)."""

    name = "stale-vector-state"
    capabilities = replace(LocalVectorsDriver.capabilities, tags=False)

    def vector_state(self, where: Filter) -> Hashable | None:
        """The same token, always."""
        return ("unchanged",)


class SessionBlindVectorsDriver(LocalVectorsDriver):
    """Lie: vectors() keeps to tenant, app, subjects and time, but ignores the session rules,
    kinds, pin, writer and retention (quarantined embeddings reach every session)."""

    name = "session-blind-vectors"
    capabilities = replace(LocalVectorsDriver.capabilities, tags=False)

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> list[VectorEntry]:
        """Every vector in the filter's scope and time."""
        scope_only = Filter(
            where.tenant, where.app, where.subjects, as_of=where.as_of, any_session=True
        )
        return super().vectors(scope_only, known=known)


class VectorKeepingEraseDriver(LocalVectorsDriver):
    """Lie: declares hard erase, but erase() removes the rows and keeps their vectors (which
    no read returns any more: only raw storage shows them)."""

    name = "vector-keeping-erase"

    def _drop_vectors(self, tenant: str, app: str, subject: str, memory_id: str) -> None:
        return None


class MemoryKeyedVectorsDriver(LocalVectorsDriver):
    """Lie: keeps one vector per memory, not per version: a revision's vector replaces the
    closed version's, and a revision without one keeps the old."""

    name = "memory-keyed-vectors"
    capabilities = replace(LocalVectorsDriver.capabilities, tags=False)

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store the row; its vector goes to version 1's slot, whatever the version."""
        with self._vectors_lock:
            LocalDriver.put(self, row, closes=closes)
            if vector is not None:
                self._vectors[(row.tenant, row.app, row.subject, row.memory_id, 1)] = vector

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> list[VectorEntry]:
        """The memory's one vector, for whichever version the filter matches."""
        with self._vectors_lock:
            stored = dict(self._vectors)
        found = []
        for row in self._rows_matching(where):
            vector = stored.get((row.tenant, row.app, row.subject, row.memory_id, 1))
            if vector is not None:
                sealed = None if (row.memory_id, row.version) in known else vector
                found.append(VectorEntry(row.subject, row.memory_id, row.version, sealed))
        return sorted(found)


class KnownIgnoringVectorsDriver(LocalVectorsDriver):
    """Lie: vectors() ignores known and sends every vector's bytes on every call."""

    name = "known-ignoring-vectors"

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> list[VectorEntry]:
        """Every entry with its bytes."""
        return super().vectors(where)


def _link_subjects(driver: LocalDriver, tenant: str, app: str) -> list[str]:
    """The subjects with links in tenant and app: the local driver's documented layout,
    ``<tenant>/<app>/_links/<subject>/`` (a subject is a plain name, never ``_…``)."""
    folder = driver.root / tenant / app / "_links"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name[0].isalnum())


class LinkKeepingEraseDriver(LocalDriver):
    """Lie: erase() removes the memory and the links it is the source of, but keeps the links
    where it is the target (a memory that pointed at the forgotten one still does)."""

    name = "link-keeping-erase"

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Erase, then put back the links that pointed at the memory."""
        subjects = _link_subjects(self, tenant, app)
        kept = [
            link
            for link in self.links(tenant, app, subjects, [memory_id])
            if link.target == memory_id and link.source != memory_id
        ]
        result = super().erase(tenant, app, subject, memory_id)
        if kept:
            self.put_links(kept)
        return result


class SubjectBlindLinksDriver(LocalDriver):
    """Lie: links() ignores the subjects it is given and reads every subject of the tenant
    and app (one person's links reach another's reads)."""

    name = "subject-blind-links"

    def links(
        self, tenant: str, app: str, subjects: Sequence[str], ids: Collection[str]
    ) -> builtins.list[StoredLink]:
        """The links of every subject with links."""
        return super().links(tenant, app, _link_subjects(self, tenant, app), ids)


class DuplicatingLinksDriver(LocalDriver):
    """Lie: put_links() appends, so a key put again is held twice (the old link and the new).

    Links are kept in a list beside the local driver's own (which refuses what it refuses),
    and read from that list; a delete and an erase drop from it what they should.
    """

    name = "duplicating-links"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._appended_lock = threading.Lock()
        self._appended: list[StoredLink] = []

    def put_links(self, links: Sequence[StoredLink]) -> None:
        """Store the batch, and append every link of it to the list."""
        super().put_links(links)
        with self._appended_lock:
            self._appended += links

    def links(
        self, tenant: str, app: str, subjects: Sequence[str], ids: Collection[str]
    ) -> builtins.list[StoredLink]:
        """Every appended link of those subjects with one of ``ids`` at an end."""
        with self._appended_lock:
            found = [
                link
                for link in self._appended
                if (link.tenant, link.app) == (tenant, app)
                and link.subject in subjects
                and (link.source in ids or link.target in ids)
            ]
        return sorted(found, key=lambda link: (link.subject, link.key))

    def delete_links(self, tenant: str, app: str, subject: str, keys: Collection[str]) -> None:
        """Delete them, from the list too."""
        super().delete_links(tenant, app, subject, keys)
        with self._appended_lock:
            self._appended = [
                link
                for link in self._appended
                if not ((link.tenant, link.app, link.subject) == (tenant, app, subject)
                        and link.key in keys)
            ]

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """Erase, and drop the memory's links from the list."""
        result = super().erase(tenant, app, subject, memory_id)
        with self._appended_lock:
            self._appended = [
                link
                for link in self._appended
                if not ((link.tenant, link.app) == (tenant, app)
                        and memory_id in (link.source, link.target))
            ]
        return result

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """The local driver's files, and every appended link."""
        yield from super().raw_dump()
        with self._appended_lock:
            appended = list(self._appended)
        for index, link in enumerate(appended):
            yield f"appended/{index}/{link.key}", bytes(link.sealed)


class RelationClaimDriver(LocalDriver):
    """Lie: declares relations, but has none of the relation methods (it is no
    RelationDriver)."""

    name = "relation-claim"
    put_links = None
    links = None
    delete_links = None  # none of them, though the local driver has them all


class IdFilterIgnoringDriver(LocalDriver):
    """Lie: search() ignores Filter.memory_ids (it ranks every row the rest of the filter
    matches; list() and vectors() keep to the ids)."""

    name = "id-filter-ignoring"
    capabilities = replace(LocalDriver.capabilities, tags=False)

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """The ranking without the filter's memory ids."""
        return super().search(replace(where, memory_ids=None), query, top_k=top_k)


class RaisingFactoryError(StoreError):
    """What the broken factory raises."""


def broken_factory(folder: Path) -> LocalDriver:
    """A factory that cannot open a store."""
    raise RaisingFactoryError("no store here")


def no_driver_factory(folder: Path) -> object:
    """A factory that returns something that is not a driver."""
    return {"folder": str(folder)}


class TagBlindDriver(LocalDriver):
    """Lie: declares tags and stores them, but every read ignores Filter.tags and
    Filter.tags_absent (a lookup by caller key returns the subject's every memory)."""

    name = "tag-blind"

    @staticmethod
    def _untagged(where: Filter) -> Filter:
        return replace(where, tags=(), tags_absent=frozenset())

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> builtins.list[StoredRow]:
        """The page without the filter's tag clauses."""
        return super().list(self._untagged(where), limit=limit, after=after)

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """The ranking without the filter's tag clauses."""
        return super().search(self._untagged(where), query, top_k=top_k)

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        """The embeddings without the filter's tag clauses."""
        return super().vectors(self._untagged(where), known=known)


def hash_placement(tenant: str) -> str | None:
    """The suite's tenants by a hash of the name, half in ``eu``, half in ``us``; names
    ``unplaced-…`` nowhere (what the regions check looks for to see a refusal)."""
    if tenant.startswith("unplaced-"):
        return None
    return ("eu", "us")[zlib.crc32(tenant.encode()) % 2]


class LocalRegionsDriver(RegionRouter):
    """No lie: the region router over two local drivers (``eu/`` and ``us/`` in the folder),
    tenants placed by :func:`hash_placement`."""

    def __init__(self, folder: Path) -> None:
        super().__init__(
            {"eu": LocalDriver(Path(folder) / "eu"), "us": LocalDriver(Path(folder) / "us")},
            hash_placement,
        )


class MirroringControlRegionsDriver(LocalRegionsDriver):
    """Lie: declares regions, but writes every control record into every region (a
    "replicated" configuration), while reading it from the tenant's own."""

    name = "mirroring-control"

    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        """Write (or delete) the record in every region."""
        self.region_of(tenant)  # a placed tenant only, as the honest router
        super().control_put(tenant, app, key, value)
        for region in self.capabilities.regions:
            if region != self.region_of(tenant):
                self.region_driver(region).control_put(tenant, app, key, value)


class DefaultRegionDriver(LocalRegionsDriver):
    """Lie: says a tenant ``unplaced-…`` is placed nowhere, yet stores its writes in ``eu``
    instead of refusing them."""

    name = "default-region"

    def _for(self, tenant: str) -> Driver:
        """The tenant's region's driver; ``eu``'s for a tenant placed nowhere."""
        region = self.region_of(tenant)
        return self.region_driver("eu" if region is None else region)
