"""A :class:`Filter` as SQL over ``memory_versions``: the same rows :meth:`Filter.matches` accepts.

The clauses are built from the filter's *shape* (which rules apply: a session or none, a
writing agent, how many retention labels, kinds, pin, memory ids, a point in time) with named
bind parameters, and the values come separately (:func:`scope_params`). Statements built on a
shape are cached by the modules that use them, so a call pays for binding values, not for
building and keying a new SQLAlchemy expression tree (which cost more than the query itself
on a small store). ``Filter.memory_ids`` is one clause of the scope like the others, so every
read built on it (list, search's corpus and statistics, vectors, vector state) keeps to
those memories; so are the tag clauses (``Filter.tags``, ``Filter.tags_absent``): each is
``doc IN`` (or ``NOT IN``) the documents that ``memory_tags``'s primary key holds for its tags,
one range per tag, so a read by a tag starts from the tag's few documents instead of the
subject's rows. A shape counts the clauses; each clause's tags are one bind parameter
(an array on PostgreSQL, an expanding ``IN`` on SQLite), so clauses of any size share it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ARRAY,
    BindParameter,
    ColumnElement,
    Text,
    and_,
    any_,
    bindparam,
    false,
    func,
    not_,
    or_,
    select,
)

from mainsdk_memory.drivers._protocol import QUARANTINED_TRUST, TENANT_SUBJECT, Filter
from mainsdk_memory.drivers.db._schema import TAGS, VERSIONS

__all__ = [
    "ScopeShape",
    "has_label",
    "same_tenant",
    "scope_clauses",
    "scope_params",
    "scope_shape",
]


@dataclass(frozen=True, slots=True)
class ScopeShape:
    """Which rules of a filter apply; filters of one shape share their SQL."""

    session: bool
    """A session is named (its own session-only and quarantined rows are visible)."""
    any_session: bool
    written_by: bool
    retention: int
    """How many ``(label, cutoff)`` rules."""
    kinds: int | None
    """``None``: any kind; ``0``: no kind at all; else how many kinds."""
    pinned: bool | None
    as_of: bool
    memory_ids: bool | None = None
    """``None``: any memory; ``True``: the memories named (one bind parameter); ``False``:
    none (an empty set)."""
    tags: int = 0
    """How many tag clauses (one bind parameter each); ``-1``: one is empty, which no row
    meets."""
    tags_absent: bool = False
    """Tags no row may carry are named (one bind parameter)."""


def scope_shape(where: Filter) -> ScopeShape:
    """The shape of ``where``."""
    kinds = where.kinds
    memory_ids = getattr(where, "memory_ids", None)
    clauses = tuple(getattr(where, "tags", ()))
    return ScopeShape(
        session=where.session is not None,
        any_session=bool(getattr(where, "any_session", False)),
        written_by=where.written_by is not None,
        retention=len(getattr(where, "retention", ())),
        kinds=None if kinds is None else len(kinds),
        pinned=where.pinned,
        as_of=where.as_of is not None,
        memory_ids=None if memory_ids is None else bool(memory_ids),
        tags=-1 if not all(clauses) else len(clauses),
        tags_absent=bool(getattr(where, "tags_absent", frozenset())),
    )


def has_label(dialect: str, label: Any) -> ColumnElement[bool]:
    """Whether a row's labels (a JSON array) hold ``label`` (a label's JSON string, quotes
    included, or a bind parameter for one): an exact substring test, since labels never
    contain a quote or ``", "``."""
    find = func.instr if dialect == "sqlite" else func.strpos
    return find(VERSIONS.c.labels, label) > 0


def scope_clauses(shape: ScopeShape, dialect: str) -> list[ColumnElement[bool]]:
    """The clauses of ``shape`` over :data:`VERSIONS`, with the bind parameters that
    :func:`scope_params` fills."""
    v = VERSIONS.c
    # On SQLite a tag clause drives the read: its documents, one range of memory_tags per
    # tag, are sought by rowid. The tenant test as an expression keeps the planner (which has
    # no statistics) from scanning the subject's entries of the covering index instead.
    tenant: BindParameter[str] = bindparam("tenant")
    tag_driven = dialect == "sqlite" and shape.tags > 0
    clauses: list[ColumnElement[bool]] = [
        same_tenant(dialect, tenant) if tag_driven else v.tenant == tenant,
        v.app == bindparam("app"),
        v.subject.in_(bindparam("subjects", expanding=True)),
    ]
    # A session_only row, and a quarantined (untrusted) row, show only in its own session
    # (unless the filter lifts the session rules: a person's view of everything about them,
    # which never lifts them for shared rows).
    exempt: list[ColumnElement[bool]] = []
    if shape.any_session:
        exempt.append(v.subject != TENANT_SUBJECT)
    if shape.session:
        exempt.append(v.session == bindparam("session"))
    clauses.append(or_(v.session_only.is_(False), *exempt))
    clauses.append(or_(v.trust != QUARANTINED_TRUST, *exempt))
    if shape.written_by:
        clauses.append(v.agent == bindparam("written_by"))
    for index in range(shape.retention):
        # Past its label's retention a memory is not returned, even before a sweep.
        label: BindParameter[str] = bindparam(f"retention_label_{index}")
        clauses.append(
            not_(
                and_(
                    has_label(dialect, label),
                    v.created_at < bindparam(f"retention_cutoff_{index}"),
                )
            )
        )
    if shape.kinds is not None:
        clauses.append(v.kind.in_(bindparam("kinds", expanding=True)) if shape.kinds else false())
    if shape.memory_ids is not None:
        clauses.append(_among_memories(dialect) if shape.memory_ids else false())
    if shape.tags < 0:
        clauses.append(false())
    for index in range(shape.tags):
        clauses.append(v.doc.in_(_tagged(dialect, f"tags_{index}")))
    if shape.tags_absent:
        clauses.append(v.doc.not_in(_tagged(dialect, "tags_absent")))
    if shape.pinned is not None:
        clauses.append(v.pinned.is_(shape.pinned))
    if not shape.as_of:
        clauses.append(v.valid_to.is_(None))
    else:
        clauses.append(v.valid_from <= bindparam("as_of"))
        clauses.append(or_(v.valid_to.is_(None), v.valid_to > bindparam("as_of")))
    return clauses


def _among_memories(dialect: str) -> ColumnElement[bool]:
    """``memory_id`` is one of the bind parameter ``memory_ids``: ``= ANY(array)`` on
    PostgreSQL (one parameter however many ids), an expanding ``IN`` on SQLite (one parameter
    per id, as for subjects)."""
    memory_id: ColumnElement[str] = VERSIONS.c.memory_id
    if dialect == "postgresql":
        among: ColumnElement[bool] = memory_id == any_(
            bindparam("memory_ids", type_=ARRAY(Text()))
        )
        return among
    return memory_id.in_(bindparam("memory_ids", expanding=True))


def _tagged(dialect: str, name: str) -> Any:
    """The documents of the filter's subjects that carry one of the tags in the bind
    parameter ``name``: one range of ``memory_tags``'s primary key per subject and tag."""
    t = TAGS.c
    tag: ColumnElement[str] = t.tag
    among: ColumnElement[bool] = (
        tag == any_(bindparam(name, type_=ARRAY(Text())))
        if dialect == "postgresql"
        else tag.in_(bindparam(name, expanding=True))
    )
    return select(t.doc).where(
        t.tenant == bindparam("tenant"),
        t.app == bindparam("app"),
        t.subject.in_(bindparam("subjects", expanding=True)),
        among,
    )


def scope_params(where: Filter) -> Mapping[str, Any]:
    """The values of ``where`` for :func:`scope_clauses` of its shape."""
    params: dict[str, Any] = {
        "tenant": where.tenant,
        "app": where.app,
        "subjects": list(where.subjects),
    }
    if where.session is not None:
        params["session"] = where.session
    if where.written_by is not None:
        params["written_by"] = where.written_by
    for index, (label, cutoff) in enumerate(getattr(where, "retention", ())):
        params[f"retention_label_{index}"] = json.dumps(label)
        params[f"retention_cutoff_{index}"] = cutoff
    if where.kinds:
        params["kinds"] = sorted(where.kinds)
    memory_ids = getattr(where, "memory_ids", None)
    if memory_ids:
        params["memory_ids"] = sorted(memory_ids)
    clauses = tuple(getattr(where, "tags", ()))
    if all(clauses):
        for index, clause in enumerate(clauses):
            params[f"tags_{index}"] = sorted(clause)
    absent: frozenset[str] = getattr(where, "tags_absent", frozenset())
    if absent:
        params["tags_absent"] = sorted(absent)
    if where.as_of is not None:
        params["as_of"] = where.as_of
    return params


def same_tenant(dialect: str, tenant: Any) -> ColumnElement[bool]:
    """``memory_versions.tenant = tenant`` where rows are then picked by document id.

    On SQLite doc is the rowid: as an expression no index serves, the tenant test keeps the
    planner (which has no statistics) from scanning the tenant's entries of an index instead
    of seeking each rowid.
    """
    column: ColumnElement[Any] = VERSIONS.c.tenant
    if dialect == "sqlite":
        column = column + ""
    same: ColumnElement[bool] = column == tenant
    return same
