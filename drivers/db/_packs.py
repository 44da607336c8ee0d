"""Packed postings of each subject's live versions, and their statistics: the db driver's fast BM25.

A version is *live* when it is current (no ``valid_to``), not ``session_only`` and not
quarantined (trust ``untrusted``): the rows every recall of the subject may see. Most recalls
filter by nothing else (their session, their retention rules), so their corpus is the live
set, give or take a few rows. Two tables keep what ranking the live set needs, written in
the same transaction as the versions (schema version 5, ADR 0099):

``memory_stats``, one row per subject
    ``docs`` and ``total``: how many live versions, and their summed length (BM25's N and
    total length, exact at every commit); ``tail``: the live versions not packed yet;
    ``dead``: packed versions that are no longer live (closed by a revision). Both are lists
    of document ids written ``,12,40,`` (text, so a put appends to it in the same single
    ``INSERT … ON CONFLICT DO UPDATE`` on either database).
``memory_packs``, the postings of packed versions
    One row per subject, blind term and *chunk*: up to :data:`CHUNK` ``(doc, tf, length)``
    records (little-endian ``int64, int32, int32``) in document order, keyed by the chunk's
    greatest document id (``upto``). A term's chunks cover disjoint, increasing ranges, so the
    chunk that holds a document is the first whose ``upto`` is at least it.

A put appends the new version to ``tail``; when :data:`TAIL` versions are waiting, the same
put packs them (their postings read by document id, merged into each term's last chunk). A
revision moves the closed version out of ``tail``, or into ``dead``. An erase removes the
version from ``tail``, ``dead`` and every chunk that holds it, so no byte of it stays.

A search whose filter asks for the live set plus the rules of sessions, quarantine and
retention (:func:`eligible`) reads the subjects' statistics, the chunks of the query's terms,
the postings of the tail by document id, and (only when the filter names a session or lifts
the session rules) the special rows it may see, less the rows past their retention: a few
index reads whatever the subject's size. Numpy counts each term group per document and
scores every document with the BM25 kernel's operations in the kernel's order; the best
candidates are re-scored by the kernel itself (:mod:`mainsdk_memory.drivers._bm25`) with
their tie keys, and a document left out that could tie the k-th is fetched too, as in
:mod:`._search`, so the result equals :func:`~mainsdk_memory.drivers.bm25_rank`.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Executable,
    Integer,
    Select,
    and_,
    bindparam,
    delete,
    func,
    insert,
    not_,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import distinct_on

from mainsdk_memory.drivers import _bm25 as bm25
from mainsdk_memory.drivers._protocol import QUARANTINED_TRUST, TENANT_SUBJECT, Filter, StoredRow
from mainsdk_memory.drivers.db._damage import fetch_each
from mainsdk_memory.drivers.db._schema import PACKS, POSTINGS, STATS, VERSIONS, UtcTimestamp
from mainsdk_memory.drivers.db._scope import ScopeShape, has_label, scope_shape

__all__ = [
    "CHUNK",
    "TAIL",
    "Gone",
    "eligible",
    "forget",
    "is_live",
    "live_clause",
    "put_many",
    "put_one",
    "rank",
    "rebuild",
    "special_clause",
    "touch",
]

#: The most postings one chunk of ``memory_packs`` holds.
CHUNK = 4096
#: How many live versions of a subject wait in ``tail`` before a put packs them.
TAIL = 128

_RECORD = np.dtype([("doc", "<i8"), ("tf", "<i4"), ("length", "<i4")])
_EMPTY = ","
_MARGIN = 16
_EPSILON = 1e-9
_SMALL = 256  # candidates re-scored all at once rather than the best k + _MARGIN

Doc = int


def is_live(row: StoredRow) -> bool:
    """Whether a stored row is in its subject's live set."""
    return row.valid_to is None and not row.session_only and row.trust != QUARANTINED_TRUST


def special_clause() -> ColumnElement[bool]:
    """A current version that is session-only or quarantined (``memory_versions_special``'s
    predicate, written exactly as the index is, so SQLite's planner can prove it)."""
    return text("(memory_versions.session_only OR memory_versions.trust = 'untrusted')")  # type: ignore[return-value]


def live_clause() -> ColumnElement[bool]:
    """A version in its subject's live set."""
    v = VERSIONS.c
    return and_(
        v.valid_to.is_(None), v.session_only.is_(False), v.trust != QUARANTINED_TRUST
    )


def eligible(where: Filter) -> bool:
    """Whether ``where``'s corpus is its subjects' live sets (of one writing agent, or all),
    plus the special rows its session may see, less the rows past retention: no kind, pin,
    memory, tag or time rule."""
    shape = scope_shape(where)
    return _eligible_shape(shape)


def _eligible_shape(shape: ScopeShape) -> bool:
    return (
        shape.kinds is None
        and not shape.as_of
        and shape.pinned is None
        and shape.memory_ids is None
        and shape.tags == 0
        and not shape.tags_absent
    )


# -- the lists in memory_stats -------------------------------------------------------------


def _docs(listed: str | None) -> NDArray[np.int64]:
    if not listed or len(listed) <= 1:
        return np.empty(0, dtype=np.int64)
    return np.array(listed[1:-1].split(","), dtype=np.int64)


def _listed(docs: Iterable[int]) -> str:
    ordered = sorted(set(docs))
    return "," + "".join(f"{doc}," for doc in ordered) if ordered else _EMPTY


def _records(blob: bytes) -> NDArray[Any]:
    return np.frombuffer(blob, dtype=_RECORD)


# -- writes ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Gone:
    """A version leaving its subject's live set, or the store: its id, length and whether it
    was live."""

    doc: Doc
    length: int
    live: bool
    agent: str = ""
    """The version's writing agent (its live set is the subject's and the agent's)."""


def _upsert(
    connection: Connection,
    tenant: str,
    app: str,
    subject: str,
    agent: str,
    *,
    docs: int,
    total: int,
    tail: str,
    waiting: int,
) -> int:
    """Add to the subject's statistics (creating them): counts added, ``tail`` appended.
    Returns how many versions now wait in ``tail``. The subject's ``changes`` goes up by one.
    """
    statement = text(
        f"INSERT INTO {_table(connection, 'memory_stats')} "  # noqa: S608 - constant names
        "(tenant, app, subject, agent, docs, total, tail, waiting, dead, changes) "
        "VALUES (:tenant, :app, :subject, :agent, :docs, :total, :tail, :waiting, ',', 1) "
        "ON CONFLICT (tenant, app, subject, agent) DO UPDATE SET "
        "changes = memory_stats.changes + 1, "
        "docs = memory_stats.docs + excluded.docs, "
        "total = memory_stats.total + excluded.total, "
        "tail = memory_stats.tail || substr(excluded.tail, 2), "
        "waiting = memory_stats.waiting + excluded.waiting "
        "RETURNING waiting"
    )
    return int(
        connection.execute(
            statement,
            {
                "tenant": tenant,
                "app": app,
                "subject": subject,
                "agent": agent,
                "docs": docs,
                "total": total,
                "tail": tail,
                "waiting": waiting,
            },
        ).scalar_one()
    )


def _table(connection: Connection, name: str) -> str:
    return name if connection.dialect.name == "sqlite" else f"mainsdk_memory.{name}"


def put_one(
    connection: Connection, row: StoredRow, doc: Doc, closed: Gone | None
) -> None:
    """Keep the statistics and packs of ``row``'s subject as ``put`` changes them: version
    ``doc`` added, and ``closed`` (the version it revises, if any) closed."""
    if closed is not None and closed.live:
        _leave(
            connection, row.tenant, row.app, row.subject, closed.agent, [closed], erased=False
        )
    live = is_live(row)
    if not live:
        return
    waiting = _upsert(
        connection,
        row.tenant,
        row.app,
        row.subject,
        row.agent,
        docs=1 if live else 0,
        total=row.length if live else 0,
        tail=f",{doc}," if live else _EMPTY,
        waiting=1 if live else 0,
    )
    if waiting >= TAIL:
        _pack(connection, row.tenant, row.app, row.subject, row.agent)


def put_many(connection: Connection, rows: Sequence[tuple[StoredRow, Doc]]) -> None:
    """The same for a bulk load of ``(row, doc)`` pairs (no revisions: rows go in as they
    are); every subject with :data:`TAIL` versions waiting is packed."""
    by_subject: dict[tuple[str, str, str, str], list[tuple[StoredRow, Doc]]] = {}
    for row, doc in rows:
        if is_live(row):
            key = (row.tenant, row.app, row.subject, row.agent)
            by_subject.setdefault(key, []).append((row, doc))
    for (tenant, app, subject, agent), live in sorted(by_subject.items()):
        waiting = _upsert(
            connection,
            tenant,
            app,
            subject,
            agent,
            docs=len(live),
            total=sum(row.length for row, _ in live),
            tail=_listed(doc for _, doc in live),
            waiting=len(live),
        )
        if waiting >= TAIL:
            _pack(connection, tenant, app, subject, agent, {doc: row for row, doc in live})


def forget(
    connection: Connection, tenant: str, app: str, subject: str, gone: Sequence[Gone]
) -> None:
    """Keep the statistics and packs as an erase changes them: every version in ``gone``
    leaves the store, and no chunk keeps a posting of it. Call it before the postings are
    deleted (it reads them to find the chunks)."""
    by_agent: dict[str, list[Gone]] = {}
    for version in gone:
        by_agent.setdefault(version.agent, []).append(version)
    for agent, versions in sorted(by_agent.items()):
        _leave(connection, tenant, app, subject, agent, versions, erased=True)
    if gone:
        touch(connection, tenant, app, subject)


def touch(connection: Connection, tenant: str, app: str, subject: str) -> None:
    """Count one change to the subject's rows (``memory_stats.changes``), creating its
    statistics row if it has none yet: every write that can change what ``vectors()`` or
    a filter over the subject returns calls this, in its transaction, first (it is the
    subject's lock row: agent ``""``, which holds no versions)."""
    _upsert(connection, tenant, app, subject, "", docs=0, total=0, tail=_EMPTY, waiting=0)


def _stats_row(
    connection: Connection, tenant: str, app: str, subject: str, agent: str
) -> tuple[str, str] | None:
    """The subject's ``tail`` and ``dead``, locked for this transaction (PostgreSQL)."""
    s = STATS.c
    statement = select(s.tail, s.dead).where(
        s.tenant == tenant, s.app == app, s.subject == subject, s.agent == agent
    )
    if connection.dialect.name == "postgresql":
        statement = statement.with_for_update()
    found = connection.execute(statement).first()
    return None if found is None else (str(found.tail), str(found.dead))


def _leave(
    connection: Connection,
    tenant: str,
    app: str,
    subject: str,
    agent: str,
    gone: Sequence[Gone],
    *,
    erased: bool,
) -> None:
    """Versions leave the live set (a close) or the store (an erase, ``erased``)."""
    s = STATS.c
    found = _stats_row(connection, tenant, app, subject, agent)
    if found is None:  # a store loaded before its statistics (never by this driver)
        return
    tail, dead = (set(_docs(listed).tolist()) for listed in found)
    live = [g for g in gone if g.live]
    packed = [g.doc for g in gone if g.doc not in tail]
    if erased:
        # Every chunk that holds an erased version is rewritten without it.
        _unpack(connection, tenant, app, subject, agent, packed)
        dead -= {g.doc for g in gone}
    else:
        dead |= {g.doc for g in live if g.doc not in tail}
    waiting_gone = sum(1 for g in live if g.doc in tail)
    tail -= {g.doc for g in gone}
    connection.execute(
        update(STATS)
        .where(s.tenant == tenant, s.app == app, s.subject == subject, s.agent == agent)
        .values(
            docs=s.docs - len(live),
            total=s.total - sum(g.length for g in live),
            tail=_listed(tail),
            waiting=s.waiting - waiting_gone,
            dead=_listed(dead),
        )
    )


def _unpack(
    connection: Connection, tenant: str, app: str, subject: str, agent: str, docs: Sequence[Doc]
) -> None:
    """Rewrite every chunk holding a posting of ``docs`` without it (a chunk left empty is
    deleted)."""
    if not docs:
        return
    p, k = POSTINGS.c, PACKS.c
    terms = connection.execute(
        select(p.term, p.doc).where(p.tenant == tenant, p.doc.in_(sorted(docs)))
    ).all()
    chunks: dict[tuple[str, int], set[Doc]] = {}
    for term, doc in terms:
        upto = connection.execute(
            select(func.min(k.upto)).where(
                k.tenant == tenant,
                k.app == app,
                k.subject == subject,
                k.agent == agent,
                k.term == term,
                k.upto >= doc,
            )
        ).scalar_one()
        if upto is not None:
            chunks.setdefault((term, int(upto)), set()).add(doc)
    for (term, upto), leaving in sorted(chunks.items()):
        key = and_(
            k.tenant == tenant,
            k.app == app,
            k.subject == subject,
            k.agent == agent,
            k.term == term,
            k.upto == upto,
        )
        blob = connection.execute(select(k.postings).where(key)).scalar_one()
        records = _records(bytes(blob))
        kept = records[~np.isin(records["doc"], np.array(sorted(leaving), dtype=np.int64))]
        connection.execute(delete(PACKS).where(key))
        if len(kept):
            connection.execute(
                insert(PACKS),
                {
                    "tenant": tenant,
                    "app": app,
                    "subject": subject,
                    "agent": agent,
                    "term": term,
                    "upto": int(kept["doc"][-1]),
                    "postings": kept.tobytes(),
                },
            )


Posting = tuple[str, int, int, int]
"""``(term, doc, tf, length)``."""


def _postings_of_docs(
    connection: Connection, tenant: str, app: str, subject: str, docs: Sequence[Doc]
) -> list[Posting]:
    """The postings of a few ``docs`` of one subject (by primary key, in lists)."""
    p = POSTINGS.c
    ordered = sorted(docs)
    found: list[Posting] = []
    for start in range(0, len(ordered), 500):
        found += [
            (row.term, row.doc, row.tf, row.length)
            for row in connection.execute(
                select(p.term, p.doc, p.tf, p.length).where(
                    p.tenant == tenant,
                    p.app == app,
                    p.subject == subject,
                    p.doc.in_(ordered[start : start + 500]),
                )
            )
        ]
    return found


def _pack(
    connection: Connection,
    tenant: str,
    app: str,
    subject: str,
    agent: str,
    known: Mapping[Doc, StoredRow] | None = None,
) -> None:
    """Move the subject's tail into its chunks. The postings of documents in ``known`` (rows
    being loaded) come from there, the others' from ``memory_postings``. A tail of a few
    puts or a bulk load is merged into each term's last chunk where it has room."""
    found = _stats_row(connection, tenant, app, subject, agent)
    if found is None:
        return
    tail = _docs(found[0]).tolist()
    if not tail:
        return
    known = known or {}
    postings: list[Posting] = [
        (term, doc, tf, known[doc].length)
        for doc in tail
        if doc in known
        for term, tf in known[doc].terms.items()
    ]
    postings += _postings_of_docs(
        connection, tenant, app, subject, [doc for doc in tail if doc not in known]
    )
    _write_chunks(connection, tenant, app, subject, agent, postings, merge=True)
    s = STATS.c
    connection.execute(
        update(STATS)
        .where(s.tenant == tenant, s.app == app, s.subject == subject, s.agent == agent)
        .values(tail=_EMPTY, waiting=0)
    )


def _write_chunks(
    connection: Connection,
    tenant: str,
    app: str,
    subject: str,
    agent: str,
    postings: Iterable[Posting],
    *,
    merge: bool,
) -> None:
    """Add ``postings`` (of documents newer than every packed one) to the subject's chunks:
    with ``merge``, into each term's last chunk (one seek per term), else as new chunks."""
    k = PACKS.c
    new: dict[str, list[tuple[int, int, int]]] = {}
    for term, doc, tf, length in sorted(postings):
        new.setdefault(term, []).append((doc, tf, length))
    mine = [k.tenant == tenant, k.app == app, k.subject == subject, k.agent == agent]
    merged = (
        _small_last_chunks(connection, tenant, app, subject, agent, sorted(new)) if merge else {}
    )
    removed: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []
    for term, records in new.items():
        fresh = np.array(records, dtype=_RECORD)
        if term in merged:
            upto, blob = merged[term]
            removed.append({"term": term, "upto": upto})
            fresh = np.concatenate([_records(blob), fresh])
        for begin in range(0, len(fresh), CHUNK):
            chunk = fresh[begin : begin + CHUNK]
            added.append(
                {
                    "tenant": tenant,
                    "app": app,
                    "subject": subject,
                    "agent": agent,
                    "term": term,
                    "upto": int(chunk["doc"][-1]),
                    "postings": chunk.tobytes(),
                }
            )
    if removed:
        connection.execute(
            delete(PACKS).where(*mine, k.term == bindparam("term"), k.upto == bindparam("upto")),
            removed,
        )
    for begin in range(0, len(added), 2000):
        connection.execute(insert(PACKS), added[begin : begin + 2000])


def _small_last_chunks(
    connection: Connection, tenant: str, app: str, subject: str, agent: str, terms: Sequence[str]
) -> dict[str, tuple[int, bytes]]:
    """The last chunk of each of ``terms`` that has room left: ``(upto, postings)``. Two
    statements per 1,000 terms: the last chunks' keys and sizes, then the small ones."""
    k = PACKS.c
    mine = [k.tenant == tenant, k.app == app, k.subject == subject, k.agent == agent]
    size = func.length(k.postings)
    found: dict[str, tuple[int, bytes]] = {}
    for start in range(0, len(terms), 1000):
        some = terms[start : start + 1000]
        if connection.dialect.name == "postgresql":
            lasts = (
                select(k.term, k.upto, size.label("size"))
                .where(*mine, k.term.in_(some))
                .order_by(k.term, k.upto.desc())
                .ext(distinct_on(k.term))
            )
        else:  # SQLite: the bare columns come from the row holding max(upto)
            lasts = (
                select(k.term, func.max(k.upto).label("upto"), size.label("size"))
                .where(*mine, k.term.in_(some))
                .group_by(k.term)
            )
        small = [
            (row.term, int(row.upto))
            for row in connection.execute(lasts)
            if int(row.size) < CHUNK * _RECORD.itemsize
        ]
        if small:
            for term, upto, blob in connection.execute(
                select(k.term, k.upto, k.postings).where(
                    *mine, tuple_(k.term, k.upto).in_(small)
                )
            ):
                found[term] = (int(upto), bytes(blob))
    return found


def rebuild(connection: Connection) -> None:
    """Compute every subject's statistics and packs from the versions and postings (the
    schema version 5 migration; the caller's transaction sees every tenant)."""
    v, p = VERSIONS.c, POSTINGS.c
    subjects = connection.execute(
        select(v.tenant, v.app, v.subject, v.agent, func.count(), func.sum(v.length))
        .where(live_clause())
        .group_by(v.tenant, v.app, v.subject, v.agent)
    ).all()
    for tenant, app, subject, agent, count, total in subjects:
        connection.execute(
            insert(STATS),
            {
                "tenant": tenant,
                "app": app,
                "subject": subject,
                "agent": agent,
                "docs": int(count),
                "total": int(total or 0),
                "tail": _EMPTY,
                "waiting": 0,
                "dead": _EMPTY,
            },
        )
        live = (
            select(v.doc)
            .where(
                v.tenant == tenant,
                v.app == app,
                v.subject == subject,
                v.agent == agent,
                live_clause(),
            )
            .scalar_subquery()
        )
        postings = connection.execute(
            select(p.term, p.doc, p.tf, p.length).where(
                p.tenant == tenant, p.app == app, p.subject == subject, p.doc.in_(live)
            )
        )
        _write_chunks(
            connection,
            tenant,
            app,
            subject,
            agent,
            ((row.term, row.doc, row.tf, row.length) for row in postings),
            merge=False,
        )


# -- search ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Corpus:
    """The postings of the query's tokens in a filter's corpus, and its N and total length."""

    n: int
    total: int
    docs: NDArray[np.int64]
    tfs: NDArray[np.int64]
    lengths: NDArray[np.int64]
    tokens: NDArray[np.int64]
    """Each posting's token, as an index into the sorted tokens."""


@functools.lru_cache(maxsize=4)
def _stats_statement(dialect: str, written_by: bool) -> Select[Any]:
    """The statistics rows of the subjects (of one writing agent, with ``written_by``; the
    subjects' lock rows, agent ``""``, always: their ``changes`` move with every write)."""
    s = STATS.c
    clauses = [
        s.tenant == bindparam("tenant"),
        s.app == bindparam("app"),
        s.subject.in_(bindparam("subjects", expanding=True)),
    ]
    if written_by:
        clauses.append(s.agent.in_([bindparam("written_by"), ""]))
    return select(s.subject, s.agent, s.docs, s.total, s.tail, s.dead, s.changes).where(*clauses)


@functools.lru_cache(maxsize=4)
def _chunks_statement(dialect: str) -> Select[Any]:
    k = PACKS.c
    return select(k.term, k.postings).where(
        k.tenant == bindparam("tenant"),
        k.app == bindparam("app"),
        k.subject.in_(bindparam("subjects", expanding=True)),
        k.agent.in_(bindparam("agents", expanding=True)),
        k.term.in_(bindparam("tokens", expanding=True)),
    )


@functools.lru_cache(maxsize=4)
def _postings_of_statement(dialect: str) -> Select[Any]:
    """The postings of some documents for some tokens (by ``(tenant, doc)``)."""
    p = POSTINGS.c
    # Every column of the primary key: one seek per subject, token and document.
    return select(p.term, p.doc, p.tf, p.length).where(
        p.tenant == bindparam("tenant"),
        p.app == bindparam("app"),
        p.subject.in_(bindparam("subjects", expanding=True)),
        p.term.in_(bindparam("tokens", expanding=True)),
        p.doc.in_(bindparam("docs", expanding=True)),
    )


def _exempt_sql(shape: ScopeShape) -> list[str]:
    exempt = []
    if shape.any_session:
        exempt.append(f"subject != '{TENANT_SUBJECT}'")
    if shape.session:
        exempt.append("session = :session")
    return exempt


def _expired_clauses(dialect: str, shape: ScopeShape) -> list[ColumnElement[bool]]:
    v = VERSIONS.c
    return [
        and_(
            has_label(dialect, bindparam(f"retention_label_{index}")),
            v.created_at < bindparam(f"retention_cutoff_{index}"),
        )
        for index in range(shape.retention)
    ]


@functools.lru_cache(maxsize=64)
def _special_statement(dialect: str, shape: ScopeShape) -> Executable | None:
    """The special rows (session-only, quarantined) the filter sees, unless past retention:
    ``doc, length`` from ``memory_versions_special``. ``None`` when it sees none (no session
    named, the session rules not lifted)."""
    v = VERSIONS.c
    if not (shape.session or shape.any_session):
        return None
    if dialect == "sqlite":
        # Named: without statistics SQLite would take memory_versions_cover's subject range.
        find = "instr"
        expired = [
            f"({find}(labels, :retention_label_{index}) > 0 "
            f"AND created_at < :retention_cutoff_{index})"
            for index in range(shape.retention)
        ]
        # Constant text and bind parameters only.
        sql = (
            "SELECT doc, length FROM memory_versions INDEXED BY memory_versions_special "  # noqa: S608
            "WHERE tenant = :tenant AND app = :app AND subject IN :subjects "
            "AND valid_to IS NULL AND (session_only OR trust = 'untrusted') "
            f"AND ({' OR '.join(_exempt_sql(shape))})"
        )
        if shape.written_by:
            sql += " AND agent = :written_by"
        if expired:
            sql += f" AND NOT ({' OR '.join(expired)})"
        return (
            text(sql)
            .bindparams(
                bindparam("subjects", expanding=True),
                *(
                    bindparam(f"retention_cutoff_{index}", type_=UtcTimestamp())
                    for index in range(shape.retention)
                ),
            )
            .columns(doc=BigInteger(), length=Integer())
        )
    exempt: list[ColumnElement[bool]] = []
    if shape.any_session:
        exempt.append(v.subject != TENANT_SUBJECT)
    if shape.session:
        exempt.append(v.session == bindparam("session"))
    clauses = [
        v.tenant == bindparam("tenant"),
        v.app == bindparam("app"),
        v.subject.in_(bindparam("subjects", expanding=True)),
        v.valid_to.is_(None),
        special_clause(),
        or_(*exempt),
    ]
    if shape.written_by:
        clauses.append(v.agent == bindparam("written_by"))
    expired_clauses = _expired_clauses(dialect, shape)
    if expired_clauses:
        clauses.append(not_(or_(*expired_clauses)))
    return select(v.doc, v.length).where(*clauses)


@functools.lru_cache(maxsize=64)
def _expired_statement(dialect: str, shape: ScopeShape) -> Select[Any] | None:
    """The live rows past retention (``doc, length``): a range of the covering index per
    rule. ``None`` without retention rules."""
    v = VERSIONS.c
    expired = _expired_clauses(dialect, shape)
    if not expired:
        return None
    mine = [v.agent == bindparam("written_by")] if shape.written_by else []
    return select(v.doc, v.length).where(
        v.tenant == bindparam("tenant"),
        v.app == bindparam("app"),
        v.subject.in_(bindparam("subjects", expanding=True)),
        *mine,
        v.valid_to.is_(None),
        v.session_only.is_(False),
        v.trust != QUARANTINED_TRUST,
        or_(*expired),
    )


def _corpus(
    connection: Connection,
    where: Filter,
    params: Mapping[str, Any],
    tokens: Sequence[str],
) -> _Corpus:
    """The corpus of an eligible filter, as of one committed state of its subjects.

    A plain read runs in one snapshot. A search inside a unit of work on PostgreSQL runs at
    READ COMMITTED, one snapshot per statement: every write of a subject raises its
    ``changes``, so the statistics are read again at the end, and the corpus again if a write
    of these subjects committed meanwhile."""
    consistent = connection.dialect.name == "sqlite" or connection.get_execution_options().get(
        "postgresql_readonly", False
    )
    while True:
        corpus, seen = _corpus_once(connection, where, params, tokens)
        if consistent:
            return corpus
        again = {
            (row.subject, row.agent, int(row.changes))
            for row in connection.execute(
                _stats_statement(connection.dialect.name, where.written_by is not None),
                params,
            )
        }
        if again == set(seen):
            return corpus


def _corpus_once(
    connection: Connection,
    where: Filter,
    params: Mapping[str, Any],
    tokens: Sequence[str],
) -> tuple[_Corpus, list[tuple[str, str, int]]]:
    dialect = connection.dialect.name
    shape = scope_shape(where)
    n = total = 0
    tail: list[int] = []
    dead_parts: list[NDArray[np.int64]] = []
    base = params  # scope_params(where): tenant, app, subjects, written_by among them
    seen: list[tuple[str, str, int]] = []
    agents: set[str] = set()
    for subject, agent, docs, subject_total, waiting, dead, changes in connection.execute(
        _stats_statement(dialect, where.written_by is not None), base
    ):
        seen.append((subject, agent, int(changes)))
        if agent:
            agents.add(agent)
        n += int(docs)
        total += int(subject_total)
        tail += _docs(waiting).tolist()
        dead_parts.append(_docs(dead))
    index = {token: position for position, token in enumerate(tokens)}
    doc_parts: list[NDArray[np.int64]] = []
    tf_parts: list[NDArray[np.int64]] = []
    length_parts: list[NDArray[np.int64]] = []
    token_parts: list[NDArray[np.int64]] = []
    chunks = (
        connection.execute(
            _chunks_statement(dialect), {**base, "agents": sorted(agents), "tokens": tokens}
        )
        if agents
        else ()
    )
    for term, blob in chunks:
        records = _records(bytes(blob))
        doc_parts.append(records["doc"])
        tf_parts.append(records["tf"].astype(np.int64))
        length_parts.append(records["length"].astype(np.int64))
        token_parts.append(np.full(len(records), index[term], dtype=np.int64))
    removed = [part for part in dead_parts if len(part)]

    def keep_out(docs: Collection[int]) -> None:
        if docs:
            removed.append(np.array(sorted(docs), dtype=np.int64))

    extra: list[int] = list(tail)
    special = _special_statement(dialect, shape)
    if special is not None:
        for doc, length in connection.execute(special, params):
            n += 1
            total += int(length)
            extra.append(int(doc))
    expired_rows = _expired_statement(dialect, shape)
    if expired_rows is not None:
        expired: list[int] = []
        for doc, length in connection.execute(expired_rows, params):
            n -= 1
            total -= int(length)
            expired.append(int(doc))
        keep_out(expired)
    if extra:
        found, _broken = fetch_each(
            connection,
            _postings_of_statement(dialect),
            {**base, "tokens": list(tokens)},
            extra,
        )
        if found:
            doc_parts.append(np.array([row.doc for row in found], dtype=np.int64))
            tf_parts.append(np.array([row.tf for row in found], dtype=np.int64))
            length_parts.append(np.array([row.length for row in found], dtype=np.int64))
            token_parts.append(np.array([index[row.term] for row in found], dtype=np.int64))
    if not doc_parts:
        empty = np.empty(0, dtype=np.int64)
        return _Corpus(n, total, empty, empty, empty, empty), seen
    docs = np.concatenate(doc_parts)
    tfs = np.concatenate(tf_parts)
    lengths = np.concatenate(length_parts)
    token_of = np.concatenate(token_parts)
    if removed:
        keep = ~np.isin(docs, np.concatenate(removed))
        docs, tfs, lengths, token_of = docs[keep], tfs[keep], lengths[keep], token_of[keep]
    return _Corpus(n, total, docs, tfs, lengths, token_of), seen


def rank(
    connection: Connection,
    where: Filter,
    params: Mapping[str, Any],
    query: Sequence[Collection[str]],
    top_k: int,
    skip: Collection[Doc],
    tie_keys: Select[Any],
) -> tuple[list[tuple[Doc, float]], set[Doc]]:
    """The top ``k`` documents of an :func:`eligible` filter without ``skip``, with scores,
    and the documents whose tie keys could not be decoded."""
    groups = [Counter(group) for group in query]
    tokens = sorted({token for group in groups for token in group})
    corpus = _corpus(connection, where, params, tokens)
    if corpus.n <= 0 or not len(corpus.docs):
        return [], set()
    unique, position = np.unique(corpus.docs, return_inverse=True)
    lengths = np.zeros(len(unique), dtype=np.int64)
    lengths[position] = corpus.lengths
    counts = np.zeros((len(groups), len(unique)), dtype=np.int64)
    for g, group in enumerate(groups):
        repeats = np.zeros(len(tokens), dtype=np.int64)
        for token, repeat in group.items():
            repeats[tokens.index(token)] = repeat
        weight = repeats[corpus.tokens] * corpus.tfs
        # Exact: integer sums far below 2**53.
        counts[g] = np.bincount(position, weights=weight, minlength=len(unique)).astype(np.int64)
    df = [int(np.count_nonzero(row)) for row in counts]
    weights = bm25.weights(corpus.n, corpus.total, df)
    if weights is None:
        return [], set()
    # The kernel's arithmetic, operation for operation, per document (bm25.raw_score).
    norm = bm25.BM25_K1 * (0.25 + bm25.BM25_B * lengths / weights.avgdl)
    raw = np.zeros(len(unique), dtype=np.float64)
    for g in range(len(groups)):
        tf = counts[g].astype(np.float64)
        term = weights.idf[g] * (tf * 2.5) / (tf + norm)
        raw = np.where(counts[g] > 0, raw + term, raw)
    if skip:
        raw = np.where(np.isin(unique, np.array(sorted(skip), dtype=np.int64)), -1.0, raw)
    any_term = counts.any(axis=0) & (raw >= 0.0)
    candidates = np.flatnonzero(any_term)
    if not len(candidates):
        return [], set()
    limit = top_k + _MARGIN
    if len(candidates) > max(limit, _SMALL):
        chosen = candidates[np.argpartition(-raw[candidates], limit - 1)[:limit]]
    else:  # a small corpus: every candidate at once, no second round
        chosen = candidates
    damaged: set[Doc] = set()

    def exact(positions: NDArray[np.intp]) -> list[tuple[float, bm25.OrderKey, int, Doc]]:
        keys, broken = fetch_each(
            connection, tie_keys, {"tenant": where.tenant}, unique[positions].tolist()
        )
        damaged.update(broken)
        at = {int(unique[p]): int(p) for p in positions}
        found = []
        for key in keys:
            doc = int(key.doc)
            if not (
                type(key.memory_id) is str
                and type(key.trust) is str
                and isinstance(key.recorded_at, datetime)
            ):
                damaged.add(doc)
                continue
            p = at[doc]
            raw_exact = bm25.raw_score(
                weights, [int(counts[g][p]) for g in range(len(groups))], int(lengths[p])
            )
            found.append(
                (
                    bm25.normalised(weights, raw_exact),
                    bm25.order_key(key.trust, key.recorded_at, key.memory_id),
                    p,
                    doc,
                )
            )
        return found

    def best(found: list[tuple[float, bm25.OrderKey, int, Doc]]) -> list[tuple[Doc, float]]:
        scored = [(score, order_key, i) for i, (score, order_key, _p, _d) in enumerate(found)]
        return [(found[i][3], found[i][0]) for _s, _o, i in bm25.best(scored, top_k)]

    found = exact(chosen)
    result = best(found)
    if len(chosen) < len(candidates) and len(result) == top_k:
        kth = result[-1][1]
        lowest = float(raw[chosen].min())
        if min(1.0, lowest * (1.0 + _EPSILON) / weights.ceiling) >= kth:
            # A document left out could tie or beat the k-th: re-score all that could.
            threshold = min(kth * weights.ceiling, weights.ceiling) * (1.0 - _EPSILON)
            found = exact(candidates[raw[candidates] >= threshold])
            result = best(found)
    return result, damaged

