"""Checks of the contract every driver keeps: shape, round trip, versions, filters, pages, dump."""

from __future__ import annotations

from dataclasses import replace

from mainsdk_memory import MemoryConflictError, MemorySDKError
from mainsdk_memory.drivers import TENANT_SUBJECT, Capabilities, Driver, StoredRow

from ._checks_search import _corpus, memory_id_filters
from ._compare import expect_rows, expect_same_row, label
from ._model import CheckFailed
from ._registry import READ_ALL, CheckContext, check, missing_members
from ._rows import Scope

__all__: list[str] = []


# -- protocol -------------------------------------------------------------------------------


@check("protocol")
def check_driver_shape(ctx: CheckContext) -> str | None:
    """The driver has every protocol method, a name, and a Capabilities with valid values."""
    driver = ctx.driver
    missing = missing_members(driver)
    if missing or not isinstance(driver, Driver):
        raise CheckFailed(
            f"the factory returned a {type(driver).__name__}, which is not a Driver "
            f"(missing: {', '.join(missing) or 'a protocol member'})"
        )
    if not isinstance(driver.name, str) or not driver.name:
        raise CheckFailed("the driver's name is not a non-empty string")
    caps = driver.capabilities
    if not isinstance(caps, Capabilities):
        raise CheckFailed("driver.capabilities is not a mainsdk_memory.Capabilities")
    for flag in ("text_search", "time_travel", "vectors", "relations"):
        if not isinstance(getattr(caps, flag), bool):
            raise CheckFailed(f"capabilities.{flag} is not True or False")
    for flag in ("concurrent_writers", "person_records"):
        if not isinstance(getattr(caps, flag), bool):
            raise CheckFailed(f"capabilities.{flag} is not True or False")
    if caps.erase not in ("hard", "soft"):
        raise CheckFailed("capabilities.erase is neither 'hard' nor 'soft'")
    if not isinstance(caps.regions, tuple):
        raise CheckFailed("capabilities.regions is not a tuple")
    return None


@check("protocol")
def check_empty_store(ctx: CheckContext) -> str | None:
    """A fresh store reads as empty: no versions, no rows, no hits."""
    scope = ctx.scope()
    if ctx.driver.versions(scope.tenant, scope.app, [scope.subject], ctx.rows.memory_id()):
        raise CheckFailed("versions() on a fresh store returned rows")
    if ctx.driver.list(scope.where(), limit=10):
        raise CheckFailed("list() on a fresh store returned rows")
    if ctx.capabilities.text_search and ctx.driver.search(
        scope.where(), [{ctx.rows.term()}], top_k=10
    ):
        raise CheckFailed("search() on a fresh store returned hits")
    return None


# -- round trip -----------------------------------------------------------------------------


def _assorted_rows(ctx: CheckContext) -> tuple[Scope, list[StoredRow]]:
    """Rows in one scope that vary every field a driver might mangle."""
    rows = ctx.rows
    scope = ctx.scope()
    all_bytes = bytes(range(256)) * 3
    return scope, [
        rows.row(scope),
        rows.row(scope, sealed=all_bytes, labels=("personal", "health", "x-1")),
        rows.row(scope, sealed=rows.sealed(1), terms={}, kind="note"),
        rows.row(scope, sealed=rows.sealed(48_000), terms=rows.terms(40)),
        rows.row(scope, session="s-1", session_only=True, pinned=True),
        rows.row(scope, session="s-1", trust="untrusted"),
        rows.row(scope, session="session.2:@x", session_only=False, labels=("none",)),
        rows.row(scope, sealed=b"\x00" * 64 + b"'\"\\;--%_" + b"\xff" * 64, kind="procedure"),
        rows.row(scope, terms={rows.term(): 1000, rows.term(): 1}, length=5000),
    ]


@check("round_trip")
def check_every_field(ctx: CheckContext) -> str | None:
    """versions() and list() return every field exactly: bytes, tuples, aware microseconds."""
    scope, rows = _assorted_rows(ctx)
    ctx.put_all(rows)
    for row in rows:
        got = ctx.driver.versions(row.tenant, row.app, [row.subject], row.memory_id)
        if len(got) != 1:
            raise CheckFailed(f"versions() returned {len(got)} rows for new memory {label(row)}")
        expect_same_row(got[0], row, "versions()")
    where = scope.where(session="s-1")
    listed = ctx.driver.list(where, limit=READ_ALL)
    expect_rows(listed, [row for row in rows if where.matches(row)], "list()")
    return f"{len(rows)} rows, sealed blobs of 1 to 48000 bytes"


@check("round_trip", needs=("text_search",))
def check_search_returns_stored_rows(ctx: CheckContext) -> str | None:
    """Rows that search() returns are the stored rows, exactly."""
    scope = ctx.scope()
    shared = ctx.rows.term()
    rows = [ctx.rows.row(scope, terms={shared: 1, **ctx.rows.terms()}) for _ in range(5)]
    ctx.put_all(rows)
    hits = ctx.driver.search(scope.where(), [{shared}], top_k=10)
    expect_rows([row for row, _score in hits], rows, "search()")
    return None


# -- versions -------------------------------------------------------------------------------


@check("versions")
def check_revision_replaces_current(ctx: CheckContext) -> str | None:
    """put(closes=n) makes version n+1 the current version and closes version n."""
    scope = ctx.scope()
    first = ctx.rows.row(scope)
    bystander = ctx.rows.row(scope)
    ctx.put_all([first, bystander])
    second = ctx.rows.revision(first)
    ctx.driver.put(second, closes=1)
    stored = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], first.memory_id)
    if not stored:
        raise CheckFailed("versions() returned nothing after put(closes=1)")
    expect_same_row(stored[-1], second, "versions() (last, the current version)")
    if [row.version for row in stored] != sorted(row.version for row in stored):
        raise CheckFailed("versions() did not return versions oldest first")
    for row in stored[:-1]:
        if row.version == 1:
            expect_same_row(row, replace(first, valid_to=second.valid_from), "versions() (v1)")
    expect_rows(ctx.read_scope(scope), [second, bystander], "list() after a revision")
    third = ctx.rows.revision(second)
    ctx.driver.put(third, closes=2)
    expect_rows(ctx.read_scope(scope), [third, bystander], "list() after two revisions")
    return None


def _expect_conflict(ctx: CheckContext, row: StoredRow, closes: int | None, what: str) -> None:
    try:
        ctx.driver.put(row, closes=closes)
    except MemoryConflictError:
        return
    except MemorySDKError as exc:
        if closes is None:
            return  # a duplicate version 1: any SDK error will do, as long as nothing changes
        raise CheckFailed(f"{what} raised {type(exc).__name__}, not MemoryConflictError") from None
    raise CheckFailed(f"{what} was accepted; it must raise MemoryConflictError")


@check("versions")
def check_conflict_changes_nothing(ctx: CheckContext) -> str | None:
    """Closing a version that is not current raises MemoryConflictError and changes nothing."""
    scope = ctx.scope()
    first = ctx.rows.row(scope)
    ctx.driver.put(first)
    second = ctx.rows.revision(first)
    ctx.driver.put(second, closes=1)
    before = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], first.memory_id)
    listed_before = ctx.read_scope(scope)

    _expect_conflict(ctx, ctx.rows.revision(first), 1, "put(closes=1) when version 2 is current")
    _expect_conflict(ctx, ctx.rows.revision(second, version=6), 5, "put(closes=5) of version 2")
    duplicate = replace(first, sealed=ctx.rows.sealed(), recorded_at=ctx.rows.moment())
    _expect_conflict(ctx, duplicate, None, "put() of version 1 of an existing memory")

    after = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], first.memory_id)
    if len(after) != len(before):
        raise CheckFailed(
            f"a rejected put changed the stored versions ({len(before)} before, {len(after)} after)"
        )
    for got, want in zip(after, before, strict=True):
        expect_same_row(got, want, "versions() after a rejected put")
    listed_after = ctx.read_scope(scope)
    expect_rows(listed_after, [r for r in listed_before], "list() after a rejected put")

    ghost = ctx.rows.row(scope, version=2)
    _expect_conflict(ctx, ghost, 1, "put(closes=1) of a memory that does not exist")
    if ctx.driver.versions(scope.tenant, scope.app, [scope.subject], ghost.memory_id):
        raise CheckFailed("a rejected put(closes=1) of an unknown memory stored a row")
    return None


# -- filters --------------------------------------------------------------------------------


@check("filters")
def check_kinds(ctx: CheckContext) -> str | None:
    """Filter.kinds keeps exactly the rows of those kinds."""
    scope = ctx.scope()
    rows = [ctx.rows.row(scope, kind=kind) for kind in ("fact", "event", "note", "fact")]
    ctx.put_all(rows)
    for kinds in ({"fact"}, {"event", "note"}, {"insight"}):
        got = ctx.driver.list(scope.where(kinds=frozenset(kinds)), limit=READ_ALL)
        expect_rows(got, [r for r in rows if r.kind in kinds], f"list(kinds={sorted(kinds)})")
    if ctx.capabilities.text_search:
        term = ctx.rows.term()
        tagged = [ctx.rows.row(scope, kind=k, terms={term: 1}) for k in ("fact", "note")]
        ctx.put_all(tagged)
        hits = ctx.driver.search(scope.where(kinds=frozenset({"note"})), [{term}], top_k=10)
        expect_rows([r for r, _ in hits], [tagged[1]], "search(kinds=['note'])")
    return None


@check("filters")
def check_pinned(ctx: CheckContext) -> str | None:
    """set_pinned flips the current version's flag without a new version; Filter.pinned obeys."""
    scope = ctx.scope()
    rows = [ctx.rows.row(scope) for _ in range(4)]
    ctx.put_all(rows)
    ctx.driver.set_pinned(scope.tenant, scope.app, scope.subject, rows[1].memory_id, True)
    ctx.driver.set_pinned(scope.tenant, scope.app, scope.subject, rows[2].memory_id, True)
    ctx.driver.set_pinned(scope.tenant, scope.app, scope.subject, rows[2].memory_id, False)
    pinned = replace(rows[1], pinned=True)
    stored = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], rows[1].memory_id)
    if len(stored) != 1:
        raise CheckFailed(f"set_pinned made {len(stored)} versions; it must change no version")
    expect_same_row(stored[0], pinned, "versions() after set_pinned")
    others = [rows[0], rows[2], rows[3]]
    expect_rows(ctx.driver.list(scope.where(pinned=True), limit=10), [pinned], "list(pinned)")
    expect_rows(ctx.driver.list(scope.where(pinned=False), limit=10), others, "list(unpinned)")
    expect_rows(ctx.read_scope(scope), [pinned, *others], "list() after set_pinned")
    return None


@check("filters")
def check_written_by(ctx: CheckContext) -> str | None:
    """Filter.written_by keeps exactly the rows that agent wrote, in list() and search()."""
    scope = ctx.scope()
    term = ctx.rows.term()
    agents = ("agent-a", "agent-b", "agent-a0")  # a prefix is another agent
    rows = [ctx.rows.row(scope, agent=agents[i % 3], terms={term: 1 + i % 2}) for i in range(9)]
    ctx.put_all(rows)
    for agent in (*agents, "agent-c", None):
        where = scope.where(written_by=agent)
        want = [row for row in rows if where.matches(row)]
        expect_rows(ctx.driver.list(where, limit=READ_ALL), want, f"list(written_by={agent!r})")
        if ctx.capabilities.text_search:
            hits = ctx.driver.search(where, [{term}], top_k=100)
            expect_rows([r for r, _ in hits], want, f"search(written_by={agent!r})")
    return None


@check("filters")
def check_memory_ids(ctx: CheckContext) -> str | None:
    """Filter.memory_ids keeps exactly the rows of those memories in list()."""
    scope, stored, _groups = _corpus(ctx, people=16, shared_rows=6, strangers=6)
    filters = memory_id_filters(ctx, scope, stored)
    for where, what in filters:
        want = [row for row in stored if where.matches(row)]
        expect_rows(ctx.driver.list(where, limit=READ_ALL), want, f"list(memory_ids: {what})")
    return f"{len(filters)} filters"


# -- pagination -----------------------------------------------------------------------------


@check("pagination")
def check_pages(ctx: CheckContext) -> str | None:
    """list() pages newest created_at first (then greater id), with no duplicate and no gap."""
    scope = ctx.scope()
    rows: list[StoredRow] = []
    for _ in range(13):
        rows.append(ctx.rows.row(scope))
    tie = ctx.rows.moment()
    rows += [ctx.rows.row(scope, at=tie) for _ in range(5)]  # same created_at: id decides
    rows.append(ctx.rows.row(scope, created_at=tie - (tie - rows[0].created_at) / 2))
    ctx.put_all(rows)
    for index in (0, 14):  # revised memories keep their created_at and list once
        revised = ctx.rows.revision(rows[index])
        ctx.driver.put(revised, closes=1)
        rows[index] = revised
    expected = sorted(rows, key=lambda r: (r.created_at, r.memory_id), reverse=True)
    for limit in (1, 4, len(rows), len(rows) + 5):
        pages: list[list[StoredRow]] = []
        after = None
        while True:
            page = ctx.driver.list(scope.where(), limit=limit, after=after)
            if len(page) > limit:
                raise CheckFailed(f"list(limit={limit}) returned {len(page)} rows")
            if not page:
                break
            pages.append(page)
            if len(pages) > len(rows) + 1:
                raise CheckFailed(f"list(limit={limit}) never reached the end: `after` is ignored")
            after = (page[-1].created_at, page[-1].memory_id)
        got = [row for page in pages for row in page]
        ids = [row.memory_id for row in got]
        if len(set(ids)) != len(ids):
            raise CheckFailed(f"paging with limit={limit} returned a memory twice")
        if ids != [row.memory_id for row in expected]:
            missing = len({r.memory_id for r in expected} - set(ids))
            if missing:
                raise CheckFailed(f"paging with limit={limit} skipped {missing} memories")
            raise CheckFailed(
                f"list(limit={limit}) is not ordered newest created_at first, then greater "
                "memory id"
            )
        for page in pages[:-1]:
            if len(page) != limit:
                raise CheckFailed(f"list(limit={limit}) returned a short page before the end")
        for got_row, want in zip(got, expected, strict=True):
            expect_same_row(got_row, want, f"list(limit={limit})")
    return f"{len(rows)} memories, 5 with the same created_at"


# -- raw storage ----------------------------------------------------------------------------


@check("raw_storage")
def check_dump_shows_writes(ctx: CheckContext) -> str | None:
    """raw_dump() yields (where, bytes) pairs, and grows when rows are written."""
    before = list(ctx.driver.raw_dump())
    rows = [ctx.rows.row(ctx.scope()) for _ in range(3)]
    rows.append(ctx.rows.row(ctx.scope(), subject=TENANT_SUBJECT))
    ctx.put_all(rows)
    after = list(ctx.driver.raw_dump())
    for item in after:
        if (
            not isinstance(item, tuple)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not isinstance(item[1], bytes | bytearray)
        ):
            raise CheckFailed("raw_dump() must yield (where: str, data: bytes) pairs")
    size_before = sum(len(data) for _, data in before)
    size_after = sum(len(data) for _, data in after)
    if not after or size_after == 0:
        raise CheckFailed(
            "raw_dump() is empty after writes: the driver hides its storage, so nothing it "
            "claims about erasure can be verified"
        )
    if size_after <= size_before:
        raise CheckFailed("raw_dump() did not grow when rows were written: it misses the rows")
    return f"{len(after)} places, {size_after} bytes"
