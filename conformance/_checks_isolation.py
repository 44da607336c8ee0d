"""Isolation checks: reads and writes in one scope never see or touch another tenant's rows,
another app's, another subject's, or another session's session-only rows."""

from __future__ import annotations

from dataclasses import replace

from mainsdk_memory import MemorySDKError
from mainsdk_memory.drivers import TENANT_SUBJECT, EraseResult, Filter, StoredRow

from ._compare import expect_rows, expect_same_row, label
from ._model import CheckFailed
from ._registry import READ_ALL, CheckContext, check
from ._rows import Scope

__all__: list[str] = []


def _leak(where: str, row: StoredRow, mine: Scope, what: str) -> CheckFailed:
    return CheckFailed(
        f"{where} for {what} {getattr(mine, what)!r} returned {label(row)} of {what} "
        f"{getattr(row, what)!r}: rows leak across {what}s"
    )


def _expect_only(
    got: list[StoredRow], allowed: list[StoredRow], mine: Scope, what: str, where: str
) -> None:
    keys = {(row.memory_id, row.version) for row in allowed}
    for row in got:
        if (
            isinstance(row, StoredRow)
            and (row.memory_id, row.version) not in keys
            and getattr(row, what) != getattr(mine, what)
        ):
            raise _leak(where, row, mine, what)
    expect_rows(got, allowed, where)


def _cross_scope(ctx: CheckContext, mine: Scope, other: Scope, what: str) -> None:
    """Rows in ``mine`` and ``other`` share terms; nothing done in one may reach the other."""
    shared = ctx.rows.term()
    mine_rows = [ctx.rows.row(mine, terms={shared: 1 + i}) for i in range(3)]
    other_rows = [ctx.rows.row(other, terms={shared: 1 + i}) for i in range(3)]
    ctx.put_all(mine_rows + other_rows)

    for scope, rows in ((mine, mine_rows), (other, other_rows)):
        _expect_only(ctx.read_scope(scope), rows, scope, what, "list()")
        if ctx.capabilities.text_search:
            hits = ctx.driver.search(scope.where(), [{shared}], top_k=100)
            _expect_only([row for row, _ in hits], rows, scope, what, "search()")
    for row in mine_rows:
        found = ctx.driver.versions(other.tenant, other.app, [other.subject], row.memory_id)
        if found:
            raise CheckFailed(
                f"versions() for {what} {getattr(other, what)!r} returned {label(row)} of {what} "
                f"{getattr(mine, what)!r}: rows leak across {what}s"
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
            "put(closes=1)",
            lambda: ctx.driver.put(
                replace(
                    ctx.rows.revision(target),
                    tenant=other.tenant,
                    app=other.app,
                    subject=other.subject,
                ),
                closes=1,
            ),
        ),
    )
    for name, attempt in attempts:
        try:
            result = attempt()
        except MemorySDKError:
            result = None
        if isinstance(result, EraseResult) and result.versions:
            raise CheckFailed(
                f"erase() in another {what} reported removing versions of {label(target)}: "
                f"writes cross {what}s"
            )
        stored = ctx.driver.versions(mine.tenant, mine.app, [mine.subject], target.memory_id)
        if len(stored) != 1:
            raise CheckFailed(
                f"{name} in another {what} changed {label(target)} "
                f"({len(stored)} versions left): writes cross {what}s"
            )
        problem_where = f"versions() after {name} in another {what}"
        try:
            expect_same_row(stored[0], target, problem_where)
        except CheckFailed as exc:
            raise CheckFailed(f"{exc}: writes cross {what}s") from None


@check("isolation")
def check_tenants(ctx: CheckContext) -> str | None:
    """No read, erase, pin or revision in one tenant reaches another tenant's rows."""
    base = ctx.scope()
    # A prefix of the name and the same name in other letter case are different tenants.
    for other_tenant in (ctx.rows.tenant(), base.tenant + "0", base.tenant.upper()):
        mine = ctx.scope(tenant=base.tenant, app=base.app)
        _cross_scope(ctx, mine, replace(mine, tenant=other_tenant), "tenant")
    shared_mine = Scope(base.tenant, base.app, TENANT_SUBJECT)
    shared_other = Scope(base.tenant + "-b", base.app, TENANT_SUBJECT)
    _cross_scope(ctx, shared_mine, shared_other, "tenant")
    return "other names, prefixes, letter case, and the shared 'tenant' subject"


@check("isolation")
def check_apps(ctx: CheckContext) -> str | None:
    """No read, erase, pin or revision in one app reaches another app's rows."""
    base = ctx.scope()
    for other_app in (ctx.rows.app(), base.app + "0", base.app.upper()):
        mine = ctx.scope(tenant=base.tenant, app=base.app)
        _cross_scope(ctx, mine, replace(mine, app=other_app), "app")
    return None


@check("isolation")
def check_subjects(ctx: CheckContext) -> str | None:
    """A filter's subjects bound every read; no write for one subject reaches another's rows."""
    base = ctx.scope()
    near = base.subject[:-1] + ("0" if base.subject[-1] != "0" else "1")
    _cross_scope(ctx, base, Scope(base.tenant, base.app, near), "subject")
    _cross_scope(
        ctx,
        Scope(base.tenant, base.app, TENANT_SUBJECT),
        ctx.scope(tenant=base.tenant, app=base.app),
        "subject",
    )
    both = Filter(tenant=base.tenant, app=base.app, subjects=(base.subject, TENANT_SUBJECT))
    everything = ctx.driver.list(both, limit=READ_ALL)
    subjects = {row.subject for row in everything}
    if subjects != {base.subject, TENANT_SUBJECT}:
        raise CheckFailed(
            "list() with two subjects did not return exactly the rows of both subjects"
        )
    return None


@check("isolation")
def check_sessions(ctx: CheckContext) -> str | None:
    """Session-only and quarantined (untrusted) rows are read only in their own session."""
    scope = ctx.scope()
    term = ctx.rows.term()
    rows = [
        ctx.rows.row(scope, terms={term: 1}),
        ctx.rows.row(scope, terms={term: 1}, session="s1"),
        ctx.rows.row(scope, terms={term: 2}, session="s1", session_only=True),
        ctx.rows.row(scope, terms={term: 3}, session="s2", session_only=True),
        ctx.rows.row(scope, terms={term: 1}, session="s10", session_only=True),
        ctx.rows.row(scope, terms={term: 2}, session="s1", trust="untrusted"),
        ctx.rows.row(scope, terms={term: 1}, session="s2", trust="untrusted", pinned=True),
    ]
    ctx.put_all(rows)
    for session, everything in (
        (None, False),
        ("s1", False),
        ("s2", False),
        ("s3", False),
        (None, True),
    ):
        where = scope.where(session=session, any_session=everything)
        seen_as = "any session" if everything else f"session {session!r}"
        allowed = [row for row in rows if where.matches(row)]
        got = ctx.driver.list(where, limit=READ_ALL)
        calls = [("list()", got)]
        if ctx.capabilities.text_search:
            hits = ctx.driver.search(where, [{term}], top_k=100)
            calls.append(("search()", [row for row, _ in hits]))
        for call, found in calls:
            for row in found:
                if (
                    isinstance(row, StoredRow)
                    and not where.matches(row)
                    and replace(where, session=row.session).matches(row)
                ):
                    kind = "session-only" if row.session_only else "quarantined"
                    raise CheckFailed(
                        f"{call} in {seen_as} returned {label(row)}, a {kind} row "
                        f"of session {row.session!r}: rows leak across sessions"
                    )
            expect_rows(found, allowed, f"{call} in {seen_as}")
    return "session-only rows and quarantined rows"
