"""Time-travel checks: closed versions are kept; ``Filter.as_of`` reads the version valid then."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from mainsdk_memory.drivers import StoredRow

from ._compare import expect_rows, expect_same_row
from ._model import CheckFailed
from ._registry import READ_ALL, CheckContext, check
from ._rows import Scope

__all__: list[str] = []


def _three_versions(ctx: CheckContext, scope: Scope) -> list[StoredRow]:
    """A memory with three versions, as the driver should store them (closed ones closed)."""
    first = ctx.rows.row(scope)
    ctx.driver.put(first)
    second = ctx.rows.revision(first)
    ctx.driver.put(second, closes=1)
    third = ctx.rows.revision(second)
    ctx.driver.put(third, closes=2)
    return [
        replace(first, valid_to=second.valid_from),
        replace(second, valid_to=third.valid_from),
        third,
    ]


@check("time_travel")
def check_closed_versions_kept(ctx: CheckContext) -> str | None:
    """versions() returns every version, oldest first, each closed when the next began."""
    scope = ctx.scope()
    expected = _three_versions(ctx, scope)
    other = _three_versions(ctx, scope)
    for versions in (expected, other):
        memory_id = versions[0].memory_id
        stored = ctx.driver.versions(scope.tenant, scope.app, [scope.subject], memory_id)
        if len(stored) != len(versions):
            raise CheckFailed(
                f"time_travel is declared, but versions() returned {len(stored)} version(s) "
                f"after 2 revisions: closed versions were overwritten, not kept"
            )
        if [row.version for row in stored] != [1, 2, 3]:
            raise CheckFailed(
                "time_travel is declared, but versions() did not return versions 1, 2, 3 "
                "oldest first"
            )
        for got, want in zip(stored, versions, strict=True):
            expect_same_row(got, want, "versions() (time travel)")
    return None


@check("time_travel")
def check_as_of_selects_version(ctx: CheckContext) -> str | None:
    """list() with Filter.as_of returns the version valid at that time, and nothing before v1."""
    scope = ctx.scope()
    versions = _three_versions(ctx, scope)
    steady = ctx.rows.row(scope)  # valid since before version 1, recorded after version 3
    steady = replace(steady, valid_from=versions[0].valid_from - timedelta(hours=1))
    ctx.driver.put(steady)
    rows = [*versions, steady]
    tick = timedelta(microseconds=1)
    v1, v2, v3 = versions
    if v1.valid_to is None or v2.valid_to is None:  # pragma: no cover - built closed above
        raise RuntimeError("_three_versions returned open versions")
    cases = [
        (steady.valid_from - tick, None, "before anything was valid"),
        (v1.valid_from - tick, None, "before version 1 began"),
        (v1.valid_from, 1, "the instant version 1 began"),
        (v1.valid_to - tick, 1, "the last microsecond of version 1"),
        (v2.valid_from, 2, "the instant version 2 began (version 1 closed then)"),
        (v2.valid_to - tick, 2, "the last microsecond of version 2"),
        (v3.valid_from, 3, "the instant version 3 began"),
        (v3.valid_from + timedelta(days=3650), 3, "far in the future"),
    ]
    for when, version, what in cases:
        where = scope.where(as_of=when)
        got = ctx.driver.list(where, limit=READ_ALL)
        seen = [row.version for row in got if row.memory_id == v1.memory_id]
        if seen != ([] if version is None else [version]):
            raise CheckFailed(
                f"time_travel is declared, but list(as_of={what}) returned version(s) "
                f"{seen} of a revised memory instead of {[] if version is None else [version]}"
            )
        expect_rows(got, [row for row in rows if where.matches(row)], f"list(as_of={what})")
    return f"{len(cases)} instants, boundaries to the microsecond"


@check("time_travel", needs=("text_search",))
def check_as_of_search(ctx: CheckContext) -> str | None:
    """search() with Filter.as_of ranks the versions valid then, by their own terms."""
    scope = ctx.scope()
    old_term, new_term = ctx.rows.term(), ctx.rows.term()
    first = ctx.rows.row(scope, terms={old_term: 1})
    ctx.driver.put(first)
    second = ctx.rows.revision(first, terms={new_term: 1})
    ctx.driver.put(second, closes=1)
    closed = replace(first, valid_to=second.valid_from)
    between = second.valid_from - timedelta(microseconds=1)
    cases = [
        (between, old_term, [closed], "the old term, as of version 1"),
        (between, new_term, [], "the new term, as of version 1"),
        (None, old_term, [], "the old term, now"),
        (None, new_term, [second], "the new term, now"),
    ]
    for when, term, want, what in cases:
        hits = ctx.driver.search(scope.where(as_of=when), [{term}], top_k=10)
        got = [row for row, _ in hits]
        if [r.version for r in got] != [r.version for r in want]:
            raise CheckFailed(
                f"time_travel is declared, but search() for {what} returned version(s) "
                f"{[r.version for r in got]} instead of {[r.version for r in want]}"
            )
        for row, wanted in zip(got, want, strict=True):
            expect_same_row(row, wanted, f"search() for {what}")
    return None
