"""Retention checks: ``Filter.retention`` hides memories past their label's cutoff, and
``expired()`` lists exactly those memories, in one tenant and app, sorted."""

from __future__ import annotations

from datetime import datetime, timedelta

from mainsdk_memory.drivers import TENANT_SUBJECT, StoredRow

from ._compare import expect_rows
from ._model import CheckFailed
from ._registry import READ_ALL, CheckContext, check
from ._rows import Scope

__all__: list[str] = []

Retention = tuple[tuple[str, datetime], ...]


def _past(row: StoredRow, retention: Retention) -> bool:
    """The protocol's rule: a label of ``retention`` and created before that label's cutoff."""
    return any(label in row.labels and row.created_at < cutoff for label, cutoff in retention)


def _labelled_rows(ctx: CheckContext, scope: Scope, term: str, count: int = 15) -> list[StoredRow]:
    labels = [("personal",), ("health", "personal"), ("none",), ("health",), ("billing",)]
    rows = []
    for index in range(count):
        rows.append(ctx.rows.row(scope, labels=labels[index % len(labels)], terms={term: 1}))
    rows.append(
        ctx.rows.row(scope, labels=("personal",), terms={term: 1}, session="s1", session_only=True)
    )
    return rows


@check("retention")
def check_filter_hides_expired(ctx: CheckContext) -> str | None:
    """Filter.retention leaves out rows past their label's cutoff, in list() and search()."""
    scope = ctx.scope()
    term = ctx.rows.term()
    rows = _labelled_rows(ctx, scope, term)
    ctx.put_all(rows)
    middle = rows[len(rows) // 2].created_at
    cases: list[Retention] = [
        (),
        (("personal", middle),),
        (("health", rows[3].created_at), ("personal", rows[10].created_at)),
        (("billing", rows[-1].created_at + timedelta(days=1)),),
        (("unused", middle),),
    ]
    for retention in cases:
        where = scope.where(retention=retention, session="s1")
        want = [row for row in rows if where.matches(row)]
        what = f"retention {[label for label, _ in retention]}"
        got = ctx.driver.list(where, limit=READ_ALL)
        for row in got:
            if isinstance(row, StoredRow) and _past(row, retention):
                raise CheckFailed(f"list() with {what} returned a memory past its retention")
        expect_rows(got, want, f"list() with {what}")
        if ctx.capabilities.text_search:
            hits = ctx.driver.search(where, [{term}], top_k=100)
            expect_rows([row for row, _ in hits], want, f"search() with {what}")
    return None


@check("retention")
def check_expired_lists_exactly_the_expired(ctx: CheckContext) -> str | None:
    """expired() lists, sorted, every memory of one tenant and app past a label's cutoff."""
    scope = ctx.scope()
    shared = Scope(scope.tenant, scope.app, TENANT_SUBJECT)
    neighbour = ctx.scope(tenant=scope.tenant, app=scope.app)
    term = ctx.rows.term()
    rows = _labelled_rows(ctx, scope, term) + _labelled_rows(ctx, shared, term, 8)
    rows += _labelled_rows(ctx, neighbour, term, 5)
    rows.append(ctx.rows.row(scope, labels=("personal",), session="s2", trust="untrusted"))
    ctx.put_all(rows)
    revised = ctx.rows.revision(rows[0])  # one memory, two versions: listed once
    ctx.driver.put(revised, closes=1)
    rows[0] = revised
    elsewhere = []
    for other in (
        ctx.scope(),
        ctx.scope(app=scope.app),
        ctx.scope(tenant=scope.tenant),
        Scope(scope.tenant + "0", scope.app, scope.subject),
        Scope(scope.tenant, scope.app + "0", scope.subject),
    ):
        elsewhere += _labelled_rows(ctx, other, term, 3)
    ctx.put_all(elsewhere)
    latest = max(row.created_at for row in rows + elsewhere) + timedelta(seconds=1)
    cases: list[Retention] = [
        (),
        (("personal", rows[8].created_at),),
        (("health", rows[20].created_at), ("personal", rows[5].created_at)),
        (("none", latest), ("billing", latest)),
        (("unused", latest),),
    ]
    for retention in cases:
        want = sorted({(row.subject, row.memory_id) for row in rows if _past(row, retention)})
        got = ctx.driver.expired(scope.tenant, scope.app, retention)
        what = f"expired() for {[label for label, _ in retention]}"
        if not isinstance(got, list) or not all(
            isinstance(item, tuple) and len(item) == 2 for item in got
        ):
            raise CheckFailed(f"{what} did not return a list of (subject, memory_id) tuples")
        foreign = {memory_id for _, memory_id in got} & {row.memory_id for row in elsewhere}
        if foreign:
            raise CheckFailed(f"{what} listed a memory of another tenant or app")
        if sorted(got) != want:
            missing, extra = set(want) - set(got), set(got) - set(want)
            raise CheckFailed(
                f"{what} listed {len(got)} memories; {len(want)} are past their cutoff "
                f"({len(missing)} left out, {len(extra)} not expired)"
            )
        if got != want:
            raise CheckFailed(f"{what} is not sorted")
    return f"{len(cases)} retention rules over {len(rows)} memories in 3 subjects"
