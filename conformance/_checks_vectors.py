"""Vector checks: each version's sealed embedding is kept exactly and returned by ``vectors()``.

A driver that declares ``vectors`` stores the bytes given to ``put(vector=...)`` with that
version, and ``vectors(where, known=...)`` returns one :class:`VectorEntry` per row that
``where.matches`` and that has a vector, sorted by subject, memory id and version, with
``sealed=None`` for the ``(memory_id, version)`` pairs in ``known``. The expected entries come
from a reference of what was put (rows, versions, pins, erases) and :meth:`Filter.matches`,
as for every other read (ADR 0023, ADR 0024). Vectors are synthetic random bytes, so a vector
left in raw storage after a hard erase is found exactly as a sealed blob is.
"""

from __future__ import annotations

import contextlib
import inspect
import random
from collections.abc import Container, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from mainsdk_memory import MemoryConflictError, MemorySDKError
from mainsdk_memory.drivers import (
    QUARANTINED_TRUST,
    TENANT_SUBJECT,
    EraseResult,
    Filter,
    StoredRow,
    VectorDriver,
    VectorEntry,
)

from ._checks_erase import _blob_needles, _find, _haystacks, _Needle
from ._compare import expect_same_row, label
from ._model import CheckFailed
from ._registry import CheckContext, check
from ._rows import Scope

__all__: list[str] = []

#: Bytes of a sealed all-MiniLM-L6-v2 embedding: 384 float32 values, a 12-byte nonce and a
#: 16-byte tag (ADR 0070).
SEALED_MINILM = 384 * 4 + 12 + 16

Key = tuple[str, str, str, str]  # tenant, app, subject, memory id
EntryKey = tuple[str, str, int]  # subject, memory id, version


@dataclass
class _Stored:
    """One version as the driver should hold it, and the vector put with it."""

    row: StoredRow
    vector: bytes | None


@dataclass
class _Reference:
    """What the driver should hold after the check's writes: the reference for vectors()."""

    ctx: CheckContext
    memories: dict[Key, list[_Stored]] = field(default_factory=dict)

    @staticmethod
    def key(row: StoredRow) -> Key:
        return (row.tenant, row.app, row.subject, row.memory_id)

    def put(self, row: StoredRow, vector: bytes | None = None) -> StoredRow:
        """Store ``row`` as version 1 of a new memory, with ``vector`` (or with none)."""
        if vector is None and self.ctx.rows.rng.random() < 0.5:
            self.ctx.driver.put(row)  # no vector given at all, or given as None: the same
        else:
            self.ctx.driver.put(row, vector=vector)
        self.memories[self.key(row)] = [_Stored(row, vector)]
        return row

    def revise(self, current: StoredRow, vector: bytes | None = None) -> StoredRow:
        """Store the next version of ``current``'s memory, with ``vector`` (or with none)."""
        versions = self.memories[self.key(current)]
        latest = versions[-1].row
        revision = self.ctx.rows.revision(latest)
        self.ctx.driver.put(revision, closes=latest.version, vector=vector)
        versions[-1].row = replace(latest, valid_to=revision.valid_from)
        versions.append(_Stored(revision, vector))
        return revision

    def pin(self, row: StoredRow, pinned: bool) -> None:
        """Set the pinned flag of the memory's current version."""
        self.ctx.driver.set_pinned(row.tenant, row.app, row.subject, row.memory_id, pinned)
        current = self.memories[self.key(row)][-1]
        current.row = replace(current.row, pinned=pinned)

    def erase(self, row: StoredRow) -> None:
        """Erase the memory and check what erase() reports."""
        versions = self.memories.pop(self.key(row))
        result = self.ctx.driver.erase(row.tenant, row.app, row.subject, row.memory_id)
        if not isinstance(result, EraseResult) or sorted(result.versions) != sorted(
            stored.row.version for stored in versions
        ):
            raise CheckFailed(
                f"erase() of {row.memory_id}, a memory with {len(versions)} version(s) and "
                "their vectors, did not report every version removed"
            )

    def current(self, row: StoredRow) -> StoredRow:
        """The memory's current version as the driver should hold it."""
        return self.memories[self.key(row)][-1].row

    def stored(self) -> list[_Stored]:
        """Every version of every memory."""
        return [stored for versions in self.memories.values() for stored in versions]

    def vectors(self) -> dict[EntryKey, bytes]:
        """Every vector put, by subject, memory id and version."""
        return {
            (s.row.subject, s.row.memory_id, s.row.version): s.vector
            for s in self.stored()
            if s.vector is not None
        }

    def expected(
        self, where: Filter, known: Container[tuple[str, int]] = frozenset()
    ) -> list[VectorEntry]:
        """The entries vectors(where, known=known) must return, in order."""
        return sorted(
            VectorEntry(
                s.row.subject,
                s.row.memory_id,
                s.row.version,
                None if (s.row.memory_id, s.row.version) in known else s.vector,
            )
            for s in self.stored()
            if s.vector is not None and where.matches(s.row)
        )

    def row_of(self, subject: str, memory_id: str, version: int) -> _Stored | None:
        """The stored version with that subject, memory id and version, in any scope."""
        for (_tenant, _app, stored_subject, stored_id), versions in self.memories.items():
            if (stored_subject, stored_id) == (subject, memory_id):
                for stored in versions:
                    if stored.row.version == version:
                        return stored
        return None


class _OnlyContains(Container[tuple[str, int]]):
    """A ``known`` that answers ``in`` and nothing else (the protocol types it Container)."""

    def __init__(self, keys: Iterable[tuple[str, int]]) -> None:
        self._keys = frozenset(keys)

    def __contains__(self, item: object) -> bool:
        return item in self._keys


def _entry_name(entry: EntryKey) -> str:
    return f"{entry[1]} v{entry[2]}"


def _described(where: Filter) -> str:
    """The filter's non-default fields, in words, for a reason (no contents, no dates)."""
    parts = [f"{len(where.subjects)} subject(s)"]
    if where.any_session:
        parts.append("any session")
    else:
        parts.append("no session" if where.session is None else f"session {where.session!r}")
    if where.kinds is not None:
        parts.append(f"kinds {sorted(where.kinds)}")
    if where.pinned is not None:
        parts.append("pinned" if where.pinned else "unpinned")
    if where.written_by is not None:
        parts.append(f"written_by {where.written_by!r}")
    if where.retention:
        parts.append(f"retention {[name for name, _ in where.retention]}")
    if where.memory_ids is not None:
        parts.append(f"memory_ids of {len(where.memory_ids)}")
    if where.as_of is not None:
        parts.append("as_of")
    return ", ".join(parts)


def _left_out_because(where: Filter, row: StoredRow) -> str:
    """Why ``where`` does not match ``row``: the first rule that leaves it out."""
    if row.tenant != where.tenant or row.app != where.app:
        return "a row of another tenant or app"
    if row.subject not in where.subjects:
        return "a row of a subject the filter does not name"
    if not where.visible(row) and replace(where, any_session=True).visible(row):
        kind = "session-only" if row.session_only else "quarantined (untrusted)"
        return f"a {kind} row of session {row.session!r}"
    for name, relaxed in (
        ("kinds", replace(where, kinds=None)),
        ("pinned", replace(where, pinned=None)),
        ("written_by", replace(where, written_by=None)),
        ("retention", replace(where, retention=())),
        ("memory_ids", replace(where, memory_ids=None)),
    ):
        if not where.visible(row) and relaxed.visible(row):
            return f"a row Filter.{name} leaves out"
    if where.visible(row) and not where.in_time(row):
        if where.as_of is None:
            return "a closed version (the current view has only current versions)"
        return "a version not valid at as_of"
    return "a row the filter leaves out"


def _expect_entries(
    got: object,
    want: list[VectorEntry],
    what: str,
    reference: _Reference,
    where: Filter | None = None,
) -> None:
    """Fail unless ``got`` is exactly ``want``: same entries, same bytes, same order."""
    call = f"vectors({what})"
    if not isinstance(got, list):
        raise CheckFailed(f"{call} returned a {type(got).__name__}, not a list of VectorEntry")
    wanted = {(e.subject, e.memory_id, e.version): e for e in want}
    seen: set[EntryKey] = set()
    for item in got:
        if not isinstance(item, VectorEntry):
            raise CheckFailed(f"{call} returned a {type(item).__name__}, not a VectorEntry")
        subject, memory_id, version, sealed = item
        if not (isinstance(subject, str) and isinstance(memory_id, str)):
            raise CheckFailed(f"{call} returned an entry whose subject or memory id is no str")
        if type(version) is not int:
            raise CheckFailed(
                f"{call} returned an entry whose version is a {type(version).__name__}, not an int"
            )
        if sealed is not None and type(sealed) is not bytes:
            raise CheckFailed(
                f"{call} returned the vector of {memory_id} v{version} as a "
                f"{type(sealed).__name__}, not bytes"
            )
        entry: EntryKey = (subject, memory_id, version)
        if entry in seen:
            raise CheckFailed(f"{call} returned {_entry_name(entry)} twice")
        seen.add(entry)
        if entry not in wanted:
            stored = reference.row_of(*entry)
            if stored is None:
                why = "which was never stored there (erased, or of another tenant or app)"
            elif stored.vector is None:
                why = "a version put without a vector"
            elif where is not None and not where.matches(stored.row):
                why = _left_out_because(where, stored.row)
            else:
                why = "which it should not have"
            raise CheckFailed(f"{call} returned {_entry_name(entry)}, {why}")
        expected = wanted[entry].sealed
        if expected is None and sealed is not None:
            raise CheckFailed(
                f"{call} returned the bytes of {_entry_name(entry)}, which is in known: an "
                "entry the caller knows must carry sealed=None"
            )
        if expected is not None and sealed is None:
            raise CheckFailed(
                f"{call} returned sealed=None for {_entry_name(entry)}, which is not in known"
            )
        if expected is not None and sealed != expected:
            others = [
                _entry_name(key)
                for key, vector in reference.vectors().items()
                if vector == sealed and key != entry
            ]
            instead = f"the vector of {others[0]}" if others else f"{len(sealed or b'')} bytes"
            raise CheckFailed(
                f"{call} returned {instead} for {_entry_name(entry)}, not the {len(expected)} "
                "bytes put with that version"
            )
    missing = [key for key in wanted if key not in seen]
    if missing:
        first = reference.row_of(*missing[0])
        note = ""
        if first is not None and first.row.valid_to is not None:
            note = ", a closed version"
        elif first is not None and first.row.pinned:
            note = ", a pinned version"
        raise CheckFailed(
            f"{call} left out {len(missing)} of {len(wanted)} entries it should return "
            f"(first: {_entry_name(missing[0])}{note})"
        )
    order = [(e.subject, e.memory_id, e.version) for e in got]
    if order != sorted(order):
        raise CheckFailed(f"{call} is not sorted by subject, memory id and version")


def _read(
    ctx: CheckContext,
    reference: _Reference,
    where: Filter,
    what: str,
    known: Container[tuple[str, int]] | None = None,
) -> None:
    """Call vectors(where[, known]) and compare with the reference."""
    if known is None:
        got = _driver(ctx).vectors(where)
        want = reference.expected(where)
    else:
        got = _driver(ctx).vectors(where, known=known)
        want = reference.expected(where, known)
    _expect_entries(got, want, what, reference, where)


def _driver(ctx: CheckContext) -> VectorDriver:
    """The driver, as the VectorDriver it must be when it declares vectors."""
    driver = ctx.driver
    if not isinstance(driver, VectorDriver) or not callable(driver.vectors):
        raise CheckFailed(
            "vectors is declared, but the driver has no vectors() method: a driver that "
            "declares vectors is a VectorDriver"
        )
    return driver


def _expect_vector_methods(ctx: CheckContext) -> None:
    """Fail unless the driver is a VectorDriver: vectors(), and a put() that takes ``vector``."""
    _driver(ctx)
    try:
        signature = inspect.signature(ctx.driver.put)
    except (TypeError, ValueError):  # pragma: no cover - a builtin: let the calls tell
        return
    try:
        signature.bind(ctx.rows.row(ctx.scope()), closes=None, vector=b"")
    except TypeError:
        raise CheckFailed(
            "vectors is declared, but put() takes no `vector` keyword argument"
        ) from None


def _vector(ctx: CheckContext, size: int | None = None) -> bytes:
    """Distinctive random bytes standing in for a sealed embedding."""
    return ctx.rows.sealed(ctx.rows.rng.randint(40, 400) if size is None else size)


@check("vectors")
def check_round_trip(ctx: CheckContext) -> str | None:
    """vectors() returns exactly the bytes put(vector=) stored; rows put without one have none."""
    _expect_vector_methods(ctx)
    reference = _Reference(ctx)
    scope = ctx.scope()
    if _driver(ctx).vectors(scope.where()):
        raise CheckFailed("vectors() on a fresh store returned entries")
    all_bytes = bytes(range(256)) * 6
    sizes = [
        _vector(ctx, 1),
        _vector(ctx, 4),
        all_bytes,
        _vector(ctx, SEALED_MINILM),
        _vector(ctx, 4 * 1024 * 4 + 28),  # a 4,096-dimension embedding, sealed
        b"\x00" * 64 + b"'\"\\;--%_" + b"\xff" * 64,
    ]
    rows = [reference.put(ctx.rows.row(scope), vector) for vector in sizes]
    rows += [reference.put(ctx.rows.row(scope)) for _ in range(3)]  # no vector
    shared = Scope(scope.tenant, scope.app, TENANT_SUBJECT)
    rows.append(reference.put(ctx.rows.row(shared), _vector(ctx)))
    rows.append(reference.put(ctx.rows.row(shared)))
    for row in rows:
        stored = ctx.driver.versions(row.tenant, row.app, [row.subject], row.memory_id)
        if len(stored) != 1:
            raise CheckFailed(f"versions() returned {len(stored)} rows for new memory {label(row)}")
        expect_same_row(stored[0], row, "versions() after put(vector=...)")
    _read(ctx, reference, scope.where(), "the person")
    both = Filter(tenant=scope.tenant, app=scope.app, subjects=(scope.subject, TENANT_SUBJECT))
    _read(ctx, reference, both, "the person and the tenant")
    _read(ctx, reference, shared.where(), "the tenant")
    return f"{len(sizes) + 1} vectors of 1 to {max(len(v) for v in sizes)} bytes, 4 rows without"


@check("vectors")
def check_revisions(ctx: CheckContext) -> str | None:
    """A new version has its own vector; the closed version keeps its own (seen with as_of)."""
    _expect_vector_methods(ctx)
    reference = _Reference(ctx)
    scope = ctx.scope()
    first = reference.put(ctx.rows.row(scope), _vector(ctx))
    bystander = reference.put(ctx.rows.row(scope), _vector(ctx))
    steps = [
        ("a revision with its own vector", _vector(ctx)),
        ("a revision without a vector", None),
        ("a revision with a vector after one without", _vector(ctx)),
    ]
    for what, vector in steps:
        reference.revise(first, vector)
        _read(ctx, reference, scope.where(), f"the current view, after {what}")
        if ctx.capabilities.time_travel:
            for stored in reference.memories[reference.key(first)]:
                row = stored.row
                instants = [row.valid_from]
                if row.valid_to is not None:
                    instants.append(row.valid_to - timedelta(microseconds=1))
                for when in instants:
                    where = scope.where(as_of=when)
                    _read(ctx, reference, where, f"as_of v{row.version}, after {what}")

    # A rejected put stores neither its row nor its vector.
    current = reference.current(first)
    stale = replace(ctx.rows.revision(current), version=2)
    duplicate = replace(bystander, sealed=ctx.rows.sealed(), recorded_at=ctx.rows.moment())
    for attempt, row, closes in (
        ("put(closes=1, vector=...) when version 4 is current", stale, 1),
        ("put(vector=...) of version 1 of an existing memory", duplicate, None),
    ):
        try:
            ctx.driver.put(row, closes=closes, vector=_vector(ctx))
        except MemoryConflictError:
            pass
        except MemorySDKError:
            if closes is not None:
                raise CheckFailed(
                    f"{attempt} raised another error than MemoryConflictError"
                ) from None
        else:
            raise CheckFailed(f"{attempt} was accepted; it must raise MemoryConflictError")
    _read(ctx, reference, scope.where(), "the current view, after rejected puts")
    if ctx.capabilities.time_travel:
        for stored in reference.memories[reference.key(first)]:
            where = scope.where(as_of=stored.row.valid_from)
            _read(ctx, reference, where, f"as_of v{stored.row.version}, after rejected puts")
        return "4 versions, each read current and as_of its first and last microsecond"
    return "4 versions, current view only (time_travel is not declared)"


def _corpus(ctx: CheckContext, reference: _Reference) -> tuple[Scope, list[str], list[str]]:
    """Rows in three subjects of one tenant and app, varying every field a filter reads, with
    and without vectors, some revised and pinned; plus a stranger with the same subject in
    another tenant and another app. Returns the person's scope, the subjects and the agents."""
    rng = ctx.rows.rng
    scope = ctx.scope()
    other = ctx.scope(tenant=scope.tenant, app=scope.app)
    shared = Scope(scope.tenant, scope.app, TENANT_SUBJECT)
    agents = [f"agent-{ctx.rows.hex(6)}" for _ in range(3)]
    labels = [("personal",), ("health", "personal"), ("none",), ("billing",)]
    kinds = ["fact", "preference", "event"]
    for where, count in ((scope, 30), (other, 10), (shared, 10)):
        for _ in range(count):
            session = rng.choice([None, "s1", "s2", "s10"])
            row = replace(
                ctx.rows.row(where),
                kind=rng.choice(kinds),
                agent=rng.choice(agents),
                labels=rng.choice(labels),
                session=session,
                session_only=session is not None and rng.random() < 0.4,
            )
            if session is not None and rng.random() < 0.3:
                row = replace(row, trust=QUARANTINED_TRUST)
            vector = _vector(ctx) if rng.random() < 0.75 else None
            reference.put(row, vector)
    for stranger in (
        Scope(scope.tenant + "0", scope.app, scope.subject),
        Scope(scope.tenant, scope.app + "0", scope.subject),
    ):
        for _ in range(3):
            reference.put(ctx.rows.row(stranger), _vector(ctx))
    mine = [
        s.row for s in reference.stored() if s.row.tenant == scope.tenant and s.row.app == scope.app
    ]
    for row in rng.sample(mine, 18):
        reference.revise(row, _vector(ctx) if rng.random() < 0.7 else None)
        if rng.random() < 0.3:
            reference.revise(row, _vector(ctx) if rng.random() < 0.7 else None)
    for row in rng.sample(mine, 16):
        reference.pin(row, True)
    for row in rng.sample(mine, 5):
        reference.pin(row, False)
    subjects = [scope.subject, other.subject, TENANT_SUBJECT, ctx.rows.subject()]
    return scope, subjects, agents


def _instants(reference: _Reference, rng: random.Random) -> list[datetime]:
    tick = timedelta(microseconds=1)
    found: list[datetime] = []
    for stored in reference.stored():
        found += [stored.row.valid_from, stored.row.valid_from - tick]
        if stored.row.valid_to is not None:
            found += [stored.row.valid_to - tick]
    return rng.sample(found, min(len(found), 40))


@check("vectors")
def check_matches_filter(ctx: CheckContext) -> str | None:
    """vectors(where) returns exactly the rows where.matches selects that have a vector."""
    _expect_vector_methods(ctx)
    reference = _Reference(ctx)
    scope, subjects, agents = _corpus(ctx, reference)
    rng = ctx.rows.rng
    created = sorted(s.row.created_at for s in reference.stored())
    instants = _instants(reference, rng) if ctx.capabilities.time_travel else []
    base = Filter(tenant=scope.tenant, app=scope.app, subjects=tuple(subjects[:3]))
    ids = sorted({s.row.memory_id for s in reference.stored()})
    filters: list[Filter] = [
        base,
        replace(base, any_session=True),
        *(replace(base, session=session) for session in ("s1", "s2", "s3")),
        replace(base, kinds=frozenset({"fact"})),
        replace(base, pinned=True),
        replace(base, pinned=False),
        replace(base, written_by=agents[0]),
        replace(base, retention=(("health", created[len(created) // 2]),)),
        *(replace(base, as_of=when) for when in instants[:3]),
        replace(base, memory_ids=frozenset(rng.sample(ids, len(ids) // 3))),
        replace(base, memory_ids=frozenset()),
    ]
    for _ in range(60):
        chosen = rng.sample(subjects, rng.randint(1, len(subjects)))
        options: dict[str, object] = {"session": rng.choice([None, "s1", "s2", "s3"])}
        if rng.random() < 0.2:
            options["any_session"] = True
        if rng.random() < 0.4:
            options["kinds"] = frozenset(
                rng.sample(["fact", "preference", "event", "note"], rng.randint(1, 3))
            )
        options["pinned"] = rng.choice([None, None, True, False])
        if rng.random() < 0.3:
            options["written_by"] = rng.choice([*agents, "agent-nobody"])
        if rng.random() < 0.3:
            options["retention"] = tuple(
                (name, rng.choice(created))
                for name in rng.sample(["personal", "health", "none", "billing"], rng.randint(1, 2))
            )
        if instants and rng.random() < 0.5:
            options["as_of"] = rng.choice(instants)
        if rng.random() < 0.25:  # ids of every scope: strangers' too, which stay out
            options["memory_ids"] = frozenset(rng.sample(ids, rng.randint(1, 12)))
        filters.append(replace(base, subjects=tuple(chosen), **options))  # type: ignore[arg-type]
    compared = 0
    for where in filters:
        _read(ctx, reference, where, _described(where))
        compared += len(reference.expected(where))
    time = "with as_of" if instants else "current versions only (time_travel is not declared)"
    return f"{len(filters)} filters, {compared} entries compared, {time}"


@check("vectors")
def check_known(ctx: CheckContext) -> str | None:
    """Entries whose (memory id, version) is in known come back with sealed=None, others bytes."""
    _expect_vector_methods(ctx)
    reference = _Reference(ctx)
    rng = ctx.rows.rng
    scope = ctx.scope()
    rows = [reference.put(ctx.rows.row(scope), _vector(ctx)) for _ in range(10)]
    rows.append(reference.put(ctx.rows.row(scope)))
    revised = [reference.revise(row, _vector(ctx)) for row in rows[:3]]
    stranger = ctx.scope()
    foreign = reference.put(ctx.rows.row(stranger), _vector(ctx))
    current = [
        (s.row.memory_id, s.row.version)
        for s in reference.stored()
        if s.row.valid_to is None and s.row.subject == scope.subject
    ]
    some = set(rng.sample(current, len(current) // 2))
    some |= {(rows[0].memory_id, 1), (rows[1].memory_id, 2)}  # a closed version; a current one
    some |= {
        (ctx.rows.memory_id(), 1),
        (foreign.memory_id, foreign.version),
        (rows[2].memory_id, 9),
    }
    cases: list[tuple[Container[tuple[str, int]], str]] = [
        (frozenset(), "known empty"),
        (frozenset(some), "known a frozenset"),
        (set(some), "known a set"),
        (dict.fromkeys(some, b""), "known a dict"),
        (_OnlyContains(some), "known a Container that only answers `in`"),
        (frozenset(current), "every entry known"),
        (frozenset((memory_id, version + 1) for memory_id, version in current), "other versions"),
    ]
    for known, what in cases:
        try:
            _read(ctx, reference, scope.where(), what, known)
        except TypeError as exc:
            raise CheckFailed(
                f"vectors({what}) raised TypeError ({exc}): known is a Container, so a driver "
                "may only ask `in` of it"
            ) from None
    if ctx.capabilities.time_travel:
        where = scope.where(as_of=revised[0].valid_from - timedelta(microseconds=1))
        _read(ctx, reference, where, "as_of, a closed version known", frozenset(some))
    return f"{len(cases)} kinds of known, {len(current)} current entries"


def _cross_scope(
    ctx: CheckContext, reference: _Reference, mine: Scope, other: Scope, what: str
) -> None:
    """Vectors in ``mine`` and ``other``; nothing read or written in one reaches the other."""
    mine_rows = [reference.put(ctx.rows.row(mine), _vector(ctx)) for _ in range(3)]
    other_rows = [reference.put(ctx.rows.row(other), _vector(ctx)) for _ in range(3)]
    for scope, rows in ((mine, mine_rows), (other, other_rows)):
        got = _driver(ctx).vectors(scope.where(any_session=True))
        if isinstance(got, list):
            ids = {row.memory_id for row in rows}
            for entry in got:
                if isinstance(entry, tuple) and len(entry) == 4 and entry[1] not in ids:
                    raise CheckFailed(
                        f"vectors() for one {what} returned {entry[1]} v{entry[2]} of another "
                        f"{what}: vectors leak across {what}s"
                    )
        _expect_entries(
            got, reference.expected(scope.where(any_session=True)), f"one {what}", reference
        )
    target = mine_rows[0]
    attempts = (
        (
            "erase()",
            lambda: ctx.driver.erase(other.tenant, other.app, other.subject, target.memory_id),
        ),
        (
            "set_pinned()",
            lambda: ctx.driver.set_pinned(
                other.tenant, other.app, other.subject, target.memory_id, True
            ),
        ),
        (
            "put(closes=1, vector=...)",
            lambda: ctx.driver.put(
                replace(
                    ctx.rows.revision(target),
                    tenant=other.tenant,
                    app=other.app,
                    subject=other.subject,
                ),
                closes=1,
                vector=_vector(ctx),
            ),
        ),
    )
    for name, attempt in attempts:
        with contextlib.suppress(MemorySDKError):
            attempt()
        got = _driver(ctx).vectors(mine.where(any_session=True))
        try:
            _expect_entries(
                got, reference.expected(mine.where(any_session=True)), f"one {what}", reference
            )
        except CheckFailed as exc:
            raise CheckFailed(
                f"after {name} in another {what}, {exc}: writes cross {what}s"
            ) from None
    # The same memory id in both scopes, if the driver takes it: each keeps its own vector.
    twin = replace(
        target, tenant=other.tenant, app=other.app, subject=other.subject, sealed=ctx.rows.sealed()
    )
    try:
        reference.put(twin, _vector(ctx))
    except MemorySDKError:
        return
    for scope in (mine, other):
        got = _driver(ctx).vectors(scope.where(any_session=True))
        try:
            _expect_entries(
                got, reference.expected(scope.where(any_session=True)), f"one {what}", reference
            )
        except CheckFailed as exc:
            raise CheckFailed(
                f"with the same memory id in two {what}s, {exc}: vectors must be kept per "
                f"{what}, not by memory id alone"
            ) from None


@check("vectors")
def check_isolation(ctx: CheckContext) -> str | None:
    """No vector is read, erased or replaced across a tenant, app or subject."""
    _expect_vector_methods(ctx)
    reference = _Reference(ctx)
    base = ctx.scope()
    for other_tenant in (ctx.rows.tenant(), base.tenant + "0", base.tenant.upper()):
        mine = ctx.scope(tenant=base.tenant, app=base.app)
        _cross_scope(ctx, reference, mine, replace(mine, tenant=other_tenant), "tenant")
    for other_app in (ctx.rows.app(), base.app + "0", base.app.upper()):
        mine = ctx.scope(tenant=base.tenant, app=base.app)
        _cross_scope(ctx, reference, mine, replace(mine, app=other_app), "app")
    near = base.subject[:-1] + ("0" if base.subject[-1] != "0" else "1")
    _cross_scope(ctx, reference, base, Scope(base.tenant, base.app, near), "subject")
    _cross_scope(
        ctx,
        reference,
        Scope(base.tenant, base.app, TENANT_SUBJECT),
        ctx.scope(tenant=base.tenant, app=base.app),
        "subject",
    )
    return "other tenants and apps (names, prefixes, letter case), subjects, the tenant subject"


def _erased_memory(
    ctx: CheckContext, reference: _Reference, scope: Scope, size: int | None = None
) -> StoredRow:
    """A memory of three versions, two with a vector, among bystanders with vectors."""
    first = reference.put(ctx.rows.row(scope), _vector(ctx, size))
    reference.revise(first, None)
    reference.revise(first, _vector(ctx, size))
    for _ in range(3):
        reference.put(ctx.rows.row(scope), _vector(ctx, size))
    shared = Scope(scope.tenant, scope.app, TENANT_SUBJECT)
    reference.put(ctx.rows.row(shared), _vector(ctx, size))
    survivor = reference.put(ctx.rows.row(scope), _vector(ctx, size))
    reference.revise(survivor, _vector(ctx, size))
    return first


@check("vectors")
def check_erase_removes_vectors(ctx: CheckContext) -> str | None:
    """After erase(), vectors() has no entry of the memory, in any view; others keep theirs."""
    _expect_vector_methods(ctx)
    reference = _Reference(ctx)
    scope = ctx.scope()
    target = _erased_memory(ctx, reference, scope)
    versions = [s.row for s in reference.memories[reference.key(target)]]
    reference.erase(target)
    both = Filter(tenant=scope.tenant, app=scope.app, subjects=(scope.subject, TENANT_SUBJECT))
    views = [(both, "the current view"), (replace(both, any_session=True), "any session")]
    if ctx.capabilities.time_travel:
        views += [
            (replace(both, as_of=row.valid_from), f"as_of v{row.version}") for row in versions
        ]
    for where, what in views:
        got = _driver(ctx).vectors(where)
        if isinstance(got, list) and any(
            isinstance(entry, tuple) and len(entry) == 4 and entry[1] == target.memory_id
            for entry in got
        ):
            raise CheckFailed(
                f"vectors({what}) still returns a vector of {target.memory_id} after erase()"
            )
        _read(ctx, reference, where, f"{what}, after erase()")
    return None


@check("vectors", needs=("hard_erase",))
def check_erase_leaves_no_vector_bytes(ctx: CheckContext) -> str | None:
    """For erase='hard': no byte of an erased memory's vectors is left in raw_dump()."""
    _expect_vector_methods(ctx)
    reference = _Reference(ctx)
    scope = ctx.scope()
    target = _erased_memory(ctx, reference, scope, SEALED_MINILM)
    erased = [s for s in reference.memories[reference.key(target)] if s.vector is not None]
    reference.erase(target)
    haystacks = _haystacks(ctx.driver.raw_dump())
    for stored in reference.stored():
        if stored.vector is None or stored.row.valid_to is not None:
            continue  # a driver without time travel may drop closed versions
        if not any(_find(needle, haystacks) for needle in _blob_needles(stored.vector, "")):
            raise CheckFailed(
                "erase is declared 'hard', but raw_dump() does not show the vector of "
                f"{label(stored.row)}, a memory that was not erased, in any form (raw, hex, "
                "base64): it does not cover where the driver keeps vectors, so their erasure "
                "cannot be verified"
            )
    needles: list[_Needle] = []
    for stored in erased:
        if stored.vector is not None:
            needles += _blob_needles(stored.vector, f"the vector of {label(stored.row)}")
    needles.append(_Needle("the memory id", (target.memory_id.encode(),)))
    for needle in needles:
        where = _find(needle, haystacks)
        if where is not None:
            raise CheckFailed(
                f"erase is declared 'hard', but after erase() {needle.what} of the forgotten "
                f"memory is still in raw storage, at {where!r}"
            )
    return f"{len(needles)} traces of {len(erased)} vectors looked for in {len(haystacks)} places"


@check("vectors")
def check_pinning_keeps_vectors(ctx: CheckContext) -> str | None:
    """set_pinned keeps every version's vector, and adds none to a version put without one."""
    _expect_vector_methods(ctx)
    reference = _Reference(ctx)
    scope = ctx.scope()
    revised = reference.put(ctx.rows.row(scope), _vector(ctx))
    reference.revise(revised, _vector(ctx))
    flipped = reference.put(ctx.rows.row(scope), _vector(ctx))
    bare = reference.put(ctx.rows.row(scope))
    plain = reference.put(ctx.rows.row(scope), _vector(ctx))
    reference.pin(revised, True)
    reference.pin(flipped, True)
    reference.pin(flipped, False)
    reference.pin(bare, True)
    for pinned, what in ((None, "after set_pinned"), (True, "pinned"), (False, "unpinned")):
        _read(ctx, reference, scope.where(pinned=pinned), what)
    if ctx.capabilities.time_travel:
        first = reference.memories[reference.key(revised)][0].row
        _read(ctx, reference, scope.where(as_of=first.valid_from), "as_of v1, after set_pinned")
    reference.pin(plain, True)
    reference.pin(revised, False)
    _read(ctx, reference, scope.where(), "after set_pinned again")
    return None


@check("vectors")
def check_put_vector(ctx: CheckContext) -> str | None:
    """put_vector() gives a stored version its vector or replaces it, and changes nothing else.

    A version that is not stored (never, another subject's, erased) raises
    MemoryConflictError and changes nothing."""
    _expect_vector_methods(ctx)
    driver = _driver(ctx)
    if not callable(getattr(driver, "put_vector", None)):
        raise CheckFailed("vectors is declared, but the driver has no put_vector() method")
    reference = _Reference(ctx)
    scope = ctx.scope()
    shared = Scope(scope.tenant, scope.app, TENANT_SUBJECT)
    revised = reference.put(ctx.rows.row(scope))
    reference.revise(revised)
    held = reference.put(ctx.rows.row(scope), _vector(ctx))
    bare = reference.put(ctx.rows.row(scope))
    common = reference.put(ctx.rows.row(shared))
    bystander = reference.put(ctx.rows.row(scope), _vector(ctx))

    def put_vector(row: StoredRow, version: int) -> None:
        vector = _vector(ctx)
        driver.put_vector(row.tenant, row.app, row.subject, row.memory_id, version, vector)
        for stored in reference.memories[reference.key(row)]:
            if stored.row.version == version:
                stored.vector = vector

    put_vector(revised, 1)  # a closed version
    put_vector(revised, 2)
    put_vector(held, 1)  # replaces the vector put with it
    put_vector(bare, 1)
    put_vector(bare, 1)  # and again
    put_vector(common, 1)
    _read(ctx, reference, scope.where(), "the person, after put_vector")
    _read(ctx, reference, shared.where(), "the tenant, after put_vector")
    if ctx.capabilities.time_travel:
        first = reference.memories[reference.key(revised)][0].row
        _read(ctx, reference, scope.where(as_of=first.valid_from), "as_of v1, after put_vector")
    for versions in reference.memories.values():
        for stored in versions:
            row = stored.row
            got = [
                r
                for r in ctx.driver.versions(row.tenant, row.app, [row.subject], row.memory_id)
                if r.version == row.version
            ]
            if len(got) != 1:
                raise CheckFailed(f"put_vector() changed the versions of {label(row)}")
            expect_same_row(got[0], row, "versions() after put_vector()")

    def refused(what: str, subject: str, memory_id: str, version: int) -> None:
        try:
            driver.put_vector(scope.tenant, scope.app, subject, memory_id, version, _vector(ctx))
        except MemoryConflictError:
            return
        except MemorySDKError:
            raise CheckFailed(
                f"put_vector() of {what} raised another error than MemoryConflictError"
            ) from None
        raise CheckFailed(
            f"put_vector() of {what} was accepted; it must raise MemoryConflictError"
        )

    refused("a version that was never stored", held.subject, held.memory_id, 2)
    refused("a memory that was never stored", held.subject, ctx.rows.memory_id(), 1)
    refused("another subject's memory", ctx.rows.subject(), bystander.memory_id, 1)
    _read(ctx, reference, scope.where(), "the person, after rejected put_vector calls")
    reference.erase(bare)
    refused("an erased memory", bare.subject, bare.memory_id, 1)
    _read(ctx, reference, scope.where(), "the person, after put_vector of an erased memory")
    if ctx.driver.versions(bare.tenant, bare.app, [bare.subject], bare.memory_id):
        raise CheckFailed("put_vector() of an erased memory brought a version back")
    return "6 calls on current, closed, shared and bare versions; 4 refused"


@check("vectors")
def check_vector_state(ctx: CheckContext) -> str | None:
    """vector_state(where), where a driver offers it, changes whenever vectors(where) does.

    The token is optional (``None``: the driver cannot tell, recall reads the vectors); a
    driver that offers one and keeps it while its vectors change would serve stale vector
    candidates. Checked after each write that moves ``vectors()``: put with and without a
    vector, a revision, put_vector, an erase; and between two reads with no write, the
    entries must be the same whenever the token is, also for filters that differ only in
    ``Filter.memory_ids``."""
    _expect_vector_methods(ctx)
    driver = _driver(ctx)
    state = getattr(driver, "vector_state", None)
    if state is None:
        return "no vector_state(): nothing to check (recall reads the vectors every time)"
    reference = _Reference(ctx)
    scope = ctx.scope()
    where = scope.where()
    seen: list[tuple[object, list[VectorEntry]]] = []

    def look(what: str) -> None:
        token = state(where)
        entries = driver.vectors(where)
        _expect_entries(entries, reference.expected(where), what, reference, where)
        if token is not None and state(where) != token:
            raise CheckFailed(f"vector_state() changed with no write ({what})")
        for earlier, earlier_entries in seen:
            if token is not None and earlier == token and earlier_entries != entries:
                raise CheckFailed(
                    f"vector_state() gave the same token while vectors() changed ({what})"
                )
        seen.append((token, entries))

    look("at the start")
    first = reference.put(ctx.rows.row(scope), _vector(ctx))
    look("after put with a vector")
    bare = reference.put(ctx.rows.row(scope))
    look("after put without a vector")
    reference.revise(first, _vector(ctx))
    look("after a revision")
    vector = _vector(ctx)
    driver.put_vector(bare.tenant, bare.app, bare.subject, bare.memory_id, 1, vector)
    for stored in reference.memories[reference.key(bare)]:
        stored.vector = vector
    look("after put_vector")
    reference.erase(first)
    look("after an erase")
    for _ in range(3):
        reference.put(ctx.rows.row(scope), _vector(ctx))
    look("after three more puts")
    # Filters that differ only in Filter.memory_ids: one token for one result, as above
    # (whether the entries are right for the ids is vectors.matches_filter's to say).
    ids = sorted({s.row.memory_id for s in reference.stored()})
    restricted: list[tuple[frozenset[str], object, list[VectorEntry]]] = []
    for chosen in ([], ids[:1], ids[1:2], ids[:2], ids[1:], ids, [*ids[:1], "mem_unknown"]):
        where_ids = scope.where(memory_ids=frozenset(chosen))
        token, entries = state(where_ids), driver.vectors(where_ids)
        what = f"memory_ids of {len(chosen)}"
        if token is not None and state(where_ids) != token:
            raise CheckFailed(f"vector_state() changed with no write ({what})")
        for earlier_ids, earlier, earlier_entries in restricted:
            if token is not None and earlier == token and earlier_entries != entries:
                raise CheckFailed(
                    f"vector_state() gave the same token for memory_ids of {len(earlier_ids)} "
                    f"and of {len(chosen)}, while vectors() differ"
                )
        restricted.append((frozenset(chosen), token, entries))
    tokens = [token for token, _ in seen] + [token for _, token, _ in restricted]
    if all(token is None for token in tokens):
        return "vector_state() returns None: recall reads the vectors every time"
    return f"{len(tokens)} states over 6 writes and 7 sets of memory ids"
