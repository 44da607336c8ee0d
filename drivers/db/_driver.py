"""The ``db`` driver: memory versions as rows in SQLite or PostgreSQL, BM25 over postings in SQL.

Each method is one transaction (:func:`~mainsdk_memory.drivers.db._engine.transaction`), or
part of the one transaction of a unit of work (:meth:`DbDriver.unit`, ADR 0096): the core
runs a call's operations in one.
Search computes BM25 in the database over a postings table and re-scores the few best
candidates with the BM25 kernel that :func:`bm25_rank` runs (:mod:`._search`), then loads
whole rows only for the top ``k``. Nothing ranks by loading every row of a person. Sealed embeddings
are opaque bytes in their own table, written with their version and erased with it;
:meth:`DbDriver.vectors` sends only those the caller does not hold yet. A version's blinded
tags are rows of ``memory_tags`` keyed like its postings, written in the transaction that
writes it and erased with it; every read's scope applies the filter's tag clauses through
that table's primary key (:mod:`._scope`). Links (``relations``)
are rows of ``memory_links``: a batch is one transaction of upserts, and erasing a memory
deletes every link with it at either end in the transaction that deletes its versions.

A stored row that cannot be decoded (:mod:`._damage`) affects only its memory: ``list``,
``search``, ``expired`` and ``rows`` leave it out (a list page is filled from the rows after
it), ``versions`` of it raises :class:`~mainsdk_memory.StoreError` naming the memory, ``erase``
removes it as any other, and :meth:`DbDriver.damaged` names a subject's damaged memories.
"""

from __future__ import annotations

import bisect
import builtins  # the method `list` shadows the builtin in annotations
import contextlib
import dataclasses
import functools
import hashlib
import json
import secrets
from collections import OrderedDict
from collections.abc import Collection, Container, Hashable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Connection,
    Engine,
    Integer,
    Row,
    Select,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from mainsdk_memory._errors import ConfigurationError, MemoryConflictError, StoreError
from mainsdk_memory._progress import Progress
from mainsdk_memory.drivers._base import BaseDriver
from mainsdk_memory.drivers._links import checked_links
from mainsdk_memory.drivers._protocol import (
    QUARANTINED_TRUST,
    Capabilities,
    EraseResult,
    Filter,
    StoredLink,
    StoredRow,
    VectorEntry,
)
from mainsdk_memory.drivers._tags import check_rows_tags, checked_tags
from mainsdk_memory.drivers.db import _packs
from mainsdk_memory.drivers.db._damage import DECODE_ERRORS, DamagedRow, damaged_error, fetch_each
from mainsdk_memory.drivers.db._engine import (
    APP_ROLE,
    PG_SCHEMA,
    Dialect,
    Target,
    make_engine,
    parse_url,
    translated,
)
from mainsdk_memory.drivers.db._engine import transaction as _own_transaction
from mainsdk_memory.drivers.db._schema import (
    CONTROL,
    EMBEDDINGS,
    LINKS,
    METADATA,
    POSTINGS,
    SCHEMA,
    STATS,
    TAGS,
    TENANT_TABLES,
    VERSIONS,
    UtcTimestamp,
    apply_migrations,
    check_version,
    stored_version,
)
from mainsdk_memory.drivers.db._scope import (
    ScopeShape,
    has_label,
    same_tenant,
    scope_clauses,
    scope_params,
    scope_shape,
)
from mainsdk_memory.drivers.db._search import rank

__all__ = ["CONTROL_GENERATION", "DbDriver", "upgrade"]

#: The control record the driver rewrites, with 16 fresh random bytes, in the transaction of
#: every other control record's write (ADR 0096): the core's sign that the control records it
#: opened may have changed. It holds nothing else; control_get and control_list never show it.
CONTROL_GENERATION = "$generation"

_UNIQUE_VIOLATIONS = {"23505", "SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE"}
_UPGRADE_LOCK = 0x6D61696E  # pg_advisory_xact_lock key serialising upgrades ("main")
_CHUNK = 500  # ids per IN list: far below SQLite's and PostgreSQL's parameter limits


class _Unit:
    """One call of the core's driver operations as one transaction (:meth:`DbDriver.unit`):
    begun by the first operation inside it, with that operation's tenant."""

    __slots__ = ("connection", "dialect", "engine", "failed", "stack", "tenant", "write")

    def __init__(
        self,
        engine: Engine,
        dialect: Dialect,
        stack: contextlib.ExitStack[bool | None],
        *,
        write: bool = True,
    ) -> None:
        self.engine = engine
        self.dialect = dialect
        self.stack = stack
        self.write = write
        self.connection: Connection | None = None
        self.tenant: str | None = None
        self.failed = False

    @property
    def snapshot(self) -> bool:
        """Whether the unit is one snapshot: a write unit, or a read unit on PostgreSQL (on
        SQLite a read transaction held for a whole call would hold the shared lock that every
        writer's commit waits for, through the call's embedder and in-process locks, so there
        each read of a read unit stays its own transaction)."""
        return self.write or self.dialect == "postgresql"

    def join(self, tenant: str | None, *, write: bool) -> Connection:
        """The unit's connection, its transaction begun as ``tenant`` by the first caller."""
        if write and not self.write:
            # Never a second transaction beside it: on SQLite its commit would wait for
            # this unit's own shared lock.
            raise ValueError("a read unit of work does not write; write outside it")
        if self.failed:
            raise StoreError(
                "An earlier step of this call failed in the database store, so the call's "
                "transaction is rolled back; nothing of it was stored. Retry the call."
            )
        if self.connection is None:
            self.tenant = tenant
            # A write unit is a write transaction from its start: on SQLite BEGIN IMMEDIATE
            # (a read upgraded to a write later could fail on a lock). A read unit is one
            # snapshot (PostgreSQL: REPEATABLE READ, read only). On PostgreSQL the role and
            # the tenant are set for it exactly as for a call of its own.
            self.connection = self.stack.enter_context(
                _own_transaction(self.engine, self.dialect, tenant=tenant, write=self.write)
            )
        elif tenant != self.tenant:
            raise ValueError("one unit of work runs as one tenant")
        return self.connection


#: The unit of work bound on this thread (or task), if any; each thread has its own.
_UNIT: ContextVar[_Unit | None] = ContextVar("mainsdk_memory_db_unit", default=None)


@contextlib.contextmanager
def transaction(
    engine: Engine, dialect: Dialect, *, tenant: str | None, write: bool
) -> Iterator[Connection]:
    """The transaction of one driver operation: the unit's, when one is bound on this thread
    for this engine (:meth:`DbDriver.unit`), else its own
    (:func:`~mainsdk_memory.drivers.db._engine.transaction`).

    Inside a unit, an operation that raises a database error, or a write that raises at
    all, marks the unit failed: what it did may be half done, so the whole unit rolls back.
    """
    unit = _UNIT.get()
    if unit is not None and not (write or unit.snapshot):
        unit = None  # a read in a SQLite read unit: a transaction of its own, as outside one
    if unit is None or unit.engine is not engine:
        with _own_transaction(engine, dialect, tenant=tenant, write=write) as connection:
            yield connection
        return
    connection = unit.join(tenant, write=write)
    try:
        yield connection
    except BaseException as exc:
        if write or isinstance(exc, SQLAlchemyError):
            unit.failed = True
        raise


def _is_unique_violation(exc: IntegrityError) -> bool:
    orig = exc.orig
    code = getattr(orig, "sqlstate", None) or getattr(orig, "sqlite_errorname", None)
    return code in _UNIQUE_VIOLATIONS


def _row_values(row: StoredRow) -> dict[str, Any]:
    return {
        "tenant": row.tenant,
        "app": row.app,
        "memory_id": row.memory_id,
        "version": row.version,
        "subject": row.subject,
        "kind": row.kind,
        "labels": json.dumps(list(row.labels)),
        "trust": row.trust,
        "agent": row.agent,
        "session": row.session,
        "session_only": row.session_only,
        "pinned": row.pinned,
        "created_at": row.created_at,
        "recorded_at": row.recorded_at,
        "valid_from": row.valid_from,
        "valid_to": row.valid_to,
        "sealed": row.sealed,
        "length": row.length,
    }


def _gone(found: Row[Any], *, current: bool) -> _packs.Gone:
    """A version leaving the live set, from its ``doc``, ``length``, ``session_only`` and
    ``trust`` cells (``current``: it had no ``valid_to``)."""
    live = current and not found.session_only and found.trust != QUARANTINED_TRUST
    return _packs.Gone(
        doc=int(found.doc), length=int(found.length), live=bool(live), agent=str(found.agent)
    )


def _stored_row(
    found: Row[Any], terms: Mapping[str, int], tags: Collection[str] = ()
) -> StoredRow:
    """The version a fetched row holds; :class:`DamagedRow` if a cell cannot be decoded.

    Each cell is checked for its type as well (SQLite keeps any value in any column), so a
    damaged row never reaches the core, or the ranking, as a half-valid one.
    """
    try:
        labels = json.loads(found.labels)
        session = found.session
        if not (
            type(labels) is list
            and all(type(label) is str for label in labels)
            and all(
                type(value) is str
                for value in (
                    found.tenant, found.app, found.subject, found.memory_id, found.kind,
                    found.trust, found.agent,
                )
            )
            and (session is None or type(session) is str)
            and type(found.version) is int
            and type(found.length) is int
            and isinstance(found.sealed, bytes | bytearray | memoryview)
            and all(
                isinstance(moment, datetime)
                for moment in (found.created_at, found.recorded_at, found.valid_from)
            )
            and (found.valid_to is None or isinstance(found.valid_to, datetime))
            and all(type(term) is str and type(tf) is int for term, tf in terms.items())
            and all(type(tag) is str for tag in tags)
        ):
            raise TypeError("a cell of the wrong type")
        return StoredRow(
            tenant=found.tenant,
            app=found.app,
            subject=found.subject,
            memory_id=found.memory_id,
            version=found.version,
            kind=found.kind,
            labels=tuple(labels),
            trust=found.trust,
            agent=found.agent,
            session=session,
            session_only=bool(found.session_only),
            pinned=bool(found.pinned),
            created_at=found.created_at,
            recorded_at=found.recorded_at,
            valid_from=found.valid_from,
            valid_to=found.valid_to,
            sealed=bytes(found.sealed),
            terms=dict(terms),
            length=found.length,
            tags=frozenset(tags),
        )
    except DECODE_ERRORS as exc:
        raise DamagedRow(found.doc) from exc


@functools.lru_cache(maxsize=128)
def _list_statement(dialect: str, shape: ScopeShape, paged: bool) -> Select[Any]:
    """A page's document ids, newest first, from the covering index alone."""
    v = VERSIONS.c
    clauses = scope_clauses(shape, dialect)
    if paged:
        created: BindParameter[datetime] = bindparam("after_created")
        memory_id: BindParameter[str] = bindparam("after_id")
        clauses.append(
            or_(v.created_at < created, and_(v.created_at == created, v.memory_id < memory_id))
        )
    return (
        select(v.doc)
        .where(*clauses)
        .order_by(v.created_at.desc(), v.memory_id.desc())
        .limit(bindparam("limit", type_=Integer()))
    )


@functools.lru_cache(maxsize=128)
def _vector_keys_statement(dialect: str, shape: ScopeShape) -> Select[Any]:
    """The keys of a scope's rows that have an embedding, from the covering index alone."""
    v = VERSIONS.c
    return select(v.subject, v.memory_id, v.version).where(
        *scope_clauses(shape, dialect), v.embedded.is_(True)
    )


def _memory_clauses(
    tenant: str, app: str, subject: str, memory_id: str
) -> tuple[ColumnElement[bool], ...]:
    """The versions of one memory of one subject, in one tenant and app."""
    v = VERSIONS.c
    return (v.tenant == tenant, v.app == app, v.subject == subject, v.memory_id == memory_id)


@functools.lru_cache(maxsize=32)
def _labelled_statement(dialect: str, shape: ScopeShape) -> Select[Any]:
    """The creation times of the rows with an embedding that the scope would hold without
    its retention rules and that carry the label ``:label``."""
    v = VERSIONS.c
    return select(v.created_at).where(
        *scope_clauses(dataclasses.replace(shape, retention=0), dialect),
        v.embedded.is_(True),
        has_label(dialect, bindparam("label")),
    )


@functools.lru_cache(maxsize=4)
def _rows_statement(dialect: str) -> Select[Any]:
    """Whole versions by document id."""
    return select(VERSIONS).where(
        same_tenant(dialect, bindparam("tenant")),
        VERSIONS.c.doc.in_(bindparam("docs", expanding=True)),
    )


@functools.lru_cache(maxsize=1)
def _terms_statement() -> Select[Any]:
    """The postings of versions, by document id."""
    p = POSTINGS.c
    return select(p.doc, p.term, p.tf).where(
        p.tenant == bindparam("tenant"), p.doc.in_(bindparam("docs", expanding=True))
    )


@functools.lru_cache(maxsize=1)
def _tags_statement() -> Select[Any]:
    """The tags of versions, by document id (memory_tags_doc)."""
    t = TAGS.c
    return select(t.doc, t.tag).where(
        t.tenant == bindparam("tenant"), t.doc.in_(bindparam("docs", expanding=True))
    )


def _tag_values(row: StoredRow, doc: int) -> builtins.list[dict[str, Any]]:
    """The memory_tags rows of ``row``, stored as document ``doc``."""
    return [
        {"tenant": row.tenant, "app": row.app, "subject": row.subject, "tag": tag, "doc": doc}
        for tag in sorted(row.tags)
    ]


class DbDriver(BaseDriver):
    """Stores memories in a SQLite file or a PostgreSQL database (module docstring).

    A :class:`~mainsdk_memory.drivers.BaseDriver` whose reads (search, list, vectors,
    expired) and pinning are overridden by SQL, equal to the inherited reference behaviour.
    """

    name = "db"
    capabilities = Capabilities(
        text_search=True,
        time_travel=True,
        vectors=True,
        relations=True,
        erase="hard",
        regions=(),
        concurrent_writers=True,
        tags=True,
    )

    def __init__(self, url: str, *, pool_size: int = 5) -> None:
        """Open the store at ``url`` and check its schema version.

        A SQLite file with no tables yet gets the current schema here (ADR 0011); every
        other database must already hold it (``memory db upgrade URL``).
        """
        self._target: Target = parse_url(url)
        self.dialect = self._target.dialect
        """``"sqlite"`` or ``"postgresql"``."""
        self.root: Path | None = self._target.path
        """The SQLite database file (``Memory.open`` keeps the key store outside it)."""
        self._engine: Engine = make_engine(self._target, pool_size=pool_size)
        self._labelled: OrderedDict[Hashable, tuple[builtins.list[datetime], ...]] = OrderedDict()
        """Per filter digest and subject counters, the sorted creation times of the rows with
        an embedding that carry each retention label (:meth:`vector_state`)."""
        try:
            self._check_schema()
        except BaseException:
            self._engine.dispose()
            raise

    @classmethod
    def from_url(cls, url: str) -> DbDriver:
        """Open ``sqlite:///PATH`` or ``postgresql+psycopg://…``."""
        return cls(url)

    def __repr__(self) -> str:
        return f"<DbDriver {self._target.safe()}>"

    def close(self) -> None:
        """Close every pooled connection."""
        self._engine.dispose()

    @contextlib.contextmanager
    def unit(self, *, write: bool = True) -> Iterator[bool | None]:
        """Run every operation of this driver made inside the block, on this thread, in one
        transaction (the driver protocol's optional unit of work).

        The transaction begins with the first operation, as that operation's tenant (on
        PostgreSQL the role and tenant settings of row-level security are set for it as for
        any transaction; every operation inside must be of that tenant), and commits when
        the block ends; if the block raises, or an operation inside it failed, everything
        of the block is rolled back. A unit inside a unit is the outer one. Other threads,
        and other drivers, are not affected.

        ``write=False`` is a read unit: a write inside it raises ``ValueError``, as does a
        write unit inside it. On PostgreSQL its reads are one transaction, one snapshot
        (REPEATABLE READ, read only: a recall's control records, statistics, postings and
        rows); on SQLite each read stays its own transaction (see :attr:`_Unit.snapshot`).
        The block gets ``True`` (``with driver.unit() as snapshot``) when its reads see one
        snapshot, else ``None``.
        """
        current = _UNIT.get()
        if current is not None and current.engine is self._engine:
            if write and not current.write:
                raise ValueError("a read unit of work does not write; write outside it")
            yield True if current.snapshot else None
            return
        with translated("committing a call"), contextlib.ExitStack() as stack:
            unit = _Unit(self._engine, self.dialect, stack, write=write)
            token = _UNIT.set(unit)
            try:
                yield True if unit.snapshot else None
                if unit.failed:
                    raise StoreError(
                        "A step of this call failed in the database store, so the call's "
                        "transaction was rolled back; nothing of it was stored. Retry the call."
                    )
            finally:
                _UNIT.reset(token)

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for tests and operators; the driver owns its lifecycle)."""
        return self._engine

    # -- opening ------------------------------------------------------------------------

    def _check_schema(self) -> None:
        safe = self._target.safe()
        if self.dialect == "postgresql":
            with (
                translated("opening the store", connecting=True),
                transaction(self._engine, self.dialect, tenant=None, write=False) as connection,
            ):
                # The schema's name is in the catalog, visible without any privilege.
                if connection.execute(select(func.to_regnamespace(PG_SCHEMA))).scalar_one() is None:
                    check_version(0, safe)
                self._check_role(connection)
            # Read the version as the app role, the only way the driver reads anything.
            with (
                translated("opening the store", connecting=True),
                transaction(self._engine, self.dialect, tenant="", write=False) as connection,
            ):
                check_version(stored_version(connection), safe)
            return
        with (
            translated("opening the store", connecting=True),
            transaction(self._engine, self.dialect, tenant=None, write=False) as connection,
        ):
            found = stored_version(connection)
        if found is None:
            # A brand-new embedded file: create the schema under the write lock, re-reading
            # the version there in case another process created it meanwhile.
            with (
                translated("creating the store's schema"),
                transaction(self._engine, self.dialect, tenant=None, write=True) as connection,
            ):
                found = stored_version(connection)
                if found is None:
                    found = apply_migrations(connection, 0, now=datetime.now(UTC))
        check_version(found, safe)

    def _check_role(self, connection: Connection) -> None:
        role = connection.execute(
            text(
                "SELECT r.rolsuper, r.rolbypassrls, pg_has_role(current_user, r.oid, 'MEMBER') "
                "AS member FROM pg_roles r WHERE r.rolname = :role"
            ),
            {"role": APP_ROLE},
        ).first()
        if role is None:
            raise ConfigurationError(
                f"The database has no role {APP_ROLE}, so it has no mainsdk-memory schema "
                "yet. Create it with: memory db upgrade URL."
            )
        if role.rolsuper or role.rolbypassrls:
            raise ConfigurationError(
                f"The role {APP_ROLE} has SUPERUSER or BYPASSRLS, so row-level security would "
                f"not hold. Run: ALTER ROLE {APP_ROLE} NOSUPERUSER NOBYPASSRLS;"
            )
        if not role.member:
            user = connection.execute(text("SELECT current_user")).scalar_one()
            raise ConfigurationError(
                f"The database user {user!r} may not act as {APP_ROLE}, which every "
                f"transaction runs as. Run as an administrator: GRANT {APP_ROLE} TO "
                f'"{user}";'
            )

    # -- helpers ------------------------------------------------------------------------

    def _terms(
        self, connection: Connection, tenant: str, docs: Collection[int]
    ) -> dict[int, dict[str, int]]:
        """The blind terms of the given versions, by document id."""
        found: dict[int, dict[str, int]] = {doc: {} for doc in docs}
        ordered = sorted(found)
        for start in range(0, len(ordered), _CHUNK):
            result = connection.execute(
                _terms_statement(), {"tenant": tenant, "docs": ordered[start : start + _CHUNK]}
            )
            for doc, term, tf in result:
                found[doc][term] = tf
        return found

    def _tags(
        self, connection: Connection, tenant: str, docs: Collection[int]
    ) -> dict[int, builtins.list[str]]:
        """The blinded tags of the given versions, by document id."""
        found: dict[int, builtins.list[str]] = {doc: [] for doc in docs}
        ordered = sorted(found)
        for start in range(0, len(ordered), _CHUNK):
            result = connection.execute(
                _tags_statement(), {"tenant": tenant, "docs": ordered[start : start + _CHUNK]}
            )
            for doc, tag in result:
                found[doc].append(tag)
        return found

    def _full_rows(
        self, connection: Connection, tenant: str, found: Sequence[Row[Any]]
    ) -> tuple[dict[int, StoredRow], set[int]]:
        """The fetched rows decoded, with their terms and tags, by document id, and the
        documents that cannot be."""
        docs = [r.doc for r in found]
        terms = self._terms(connection, tenant, docs)
        tags = self._tags(connection, tenant, docs)
        decoded: dict[int, StoredRow] = {}
        broken: set[int] = set()
        for r in found:
            try:
                decoded[r.doc] = _stored_row(r, terms[r.doc], tags[r.doc])
            except DamagedRow as exc:
                broken.add(exc.doc)
        return decoded, broken

    def _load(
        self, connection: Connection, tenant: str, docs: Sequence[int]
    ) -> tuple[dict[int, StoredRow], set[int]]:
        """The versions ``docs`` whole, by document id, and the documents that are damaged
        (left out)."""
        found, broken = fetch_each(
            connection, _rows_statement(self.dialect), {"tenant": tenant}, docs
        )
        decoded, undecoded = self._full_rows(connection, tenant, found)
        return decoded, broken | undecoded

    def _damaged_among(
        self, connection: Connection, tenant: str, app: str, memory_ids: Collection[str]
    ) -> set[str]:
        """Which of these memories have a version that cannot be decoded (one read of their
        versions when none is damaged)."""
        v = VERSIONS.c
        ids: dict[int, str] = {}
        ordered = sorted({m for m in memory_ids if type(m) is str})  # (SQLite keeps anything)
        for start in range(0, len(ordered), _CHUNK):
            for doc, memory_id in connection.execute(
                select(v.doc, v.memory_id).where(
                    v.tenant == tenant,
                    v.app == app,
                    v.memory_id.in_(ordered[start : start + _CHUNK]),
                )
            ):
                ids[doc] = memory_id
        found, broken = fetch_each(
            connection, _rows_statement(self.dialect), {"tenant": tenant}, builtins.list(ids)
        )
        _, undecoded = self._full_rows(connection, tenant, found)  # postings included
        return {ids[doc] for doc in broken | undecoded if doc in ids}

    # -- the protocol -------------------------------------------------------------------

    def put(
        self, row: StoredRow, *, closes: int | None = None, vector: bytes | None = None
    ) -> None:
        """Store a new memory, or version ``closes + 1`` closing version ``closes``, atomically,
        with its postings, its tags and, if given, its sealed embedding ``vector``.

        Tags that are not well-formed (:mod:`mainsdk_memory.drivers._tags`) raise
        :class:`~mainsdk_memory.InvalidInputError` before anything is written.

        The close is ``UPDATE … WHERE version = closes AND valid_to IS NULL``: if it touches
        no row, another writer revised the memory first and nothing changes. A second writer
        of the same version also collides on the primary key.
        """
        v = VERSIONS.c
        if vector is not None and not isinstance(vector, bytes | bytearray | memoryview):
            raise TypeError("vector must be bytes (the sealed embedding) or None")
        checked_tags(row.tags)
        with translated("storing a memory"):
            try:
                with transaction(
                    self._engine, self.dialect, tenant=row.tenant, write=True
                ) as connection:
                    # The subject's statistics row first, locked until the commit: document
                    # ids of one subject are then given in the order its writes pack them
                    # (ADR 0099), and every write of a subject takes its locks in one order.
                    _packs.touch(connection, row.tenant, row.app, row.subject)
                    revised: _packs.Gone | None = None
                    if closes is not None:
                        if row.version != closes + 1:
                            raise MemoryConflictError
                        closed = connection.execute(
                            update(VERSIONS)
                            .where(
                                v.tenant == row.tenant,
                                v.app == row.app,
                                v.subject == row.subject,
                                v.memory_id == row.memory_id,
                                v.version == closes,
                                v.valid_to.is_(None),
                            )
                            .values(valid_to=row.valid_from)
                            .returning(v.doc, v.length, v.session_only, v.trust, v.agent)
                        ).all()
                        if len(closed) != 1:
                            raise MemoryConflictError
                        revised = _gone(closed[0], current=True)
                    doc = connection.execute(
                        insert(VERSIONS).returning(v.doc),
                        {**_row_values(row), "embedded": vector is not None},
                    ).scalar_one()
                    postings = [
                        {
                            "tenant": row.tenant,
                            "app": row.app,
                            "subject": row.subject,
                            "term": term,
                            "doc": doc,
                            "tf": tf,
                            "length": row.length,
                        }
                        for term, tf in row.terms.items()
                    ]
                    if postings:
                        connection.execute(insert(POSTINGS), postings)
                    _packs.put_one(connection, row, doc, revised)
                    if row.tags:
                        connection.execute(insert(TAGS), _tag_values(row, doc))
                    if vector is not None:
                        connection.execute(
                            insert(EMBEDDINGS),
                            {
                                "tenant": row.tenant,
                                "app": row.app,
                                "memory_id": row.memory_id,
                                "version": row.version,
                                "subject": row.subject,
                                "sealed": bytes(vector),
                            },
                        )
            except IntegrityError as exc:
                if not _is_unique_violation(exc):
                    raise
                if closes is None:
                    raise MemoryConflictError(
                        "A memory with this id already exists; nothing was changed."
                    ) from exc
                raise MemoryConflictError from exc

    def bulk_put(
        self, rows: Sequence[StoredRow], *, vectors: Mapping[tuple[str, int], bytes] | None = None
    ) -> None:
        """Insert many stored rows in one transaction: a bulk load (benchmarks, imports), not
        a write path of the SDK.

        Each row goes in as it is, closed versions with their ``valid_to``; nothing checks
        revisions, so load every version of a memory here or none. ``vectors`` maps
        ``(memory_id, version)`` to that version's sealed embedding. All rows must belong to
        one tenant (one transaction runs as one tenant on PostgreSQL). A row whose version
        exists already raises :class:`~mainsdk_memory.MemoryConflictError`, and a row whose
        tags are not well-formed :class:`~mainsdk_memory.InvalidInputError`; either loads
        nothing.
        """
        if not rows:
            return
        check_rows_tags(rows)
        tenant = rows[0].tenant
        if any(row.tenant != tenant for row in rows):
            raise ValueError("bulk_put loads the rows of one tenant at a time")
        vectors = vectors or {}
        with translated("loading memories"):
            try:
                with transaction(
                    self._engine, self.dialect, tenant=tenant, write=True
                ) as connection:
                    # Every subject's statistics row first, in one order (as put does).
                    for app, subject in sorted({(row.app, row.subject) for row in rows}):
                        _packs.touch(connection, tenant, app, subject)
                    loaded: builtins.list[tuple[StoredRow, int]] = []
                    for start in range(0, len(rows), _CHUNK):
                        chunk = rows[start : start + _CHUNK]
                        connection.execute(
                            insert(VERSIONS),
                            [
                                {
                                    **_row_values(row),
                                    "embedded": (row.memory_id, row.version) in vectors,
                                }
                                for row in chunk
                            ],
                        )
                        docs = self._docs(connection, tenant, chunk)
                        postings = [
                            {
                                "tenant": row.tenant,
                                "app": row.app,
                                "subject": row.subject,
                                "term": term,
                                "doc": docs[(row.app, row.memory_id, row.version)],
                                "tf": tf,
                                "length": row.length,
                            }
                            for row in chunk
                            for term, tf in row.terms.items()
                        ]
                        if postings:
                            connection.execute(insert(POSTINGS), postings)
                        loaded += [
                            (row, docs[(row.app, row.memory_id, row.version)]) for row in chunk
                        ]
                        tags = [
                            tag
                            for row in chunk
                            if row.tags
                            for tag in _tag_values(
                                row, docs[(row.app, row.memory_id, row.version)]
                            )
                        ]
                        for begin in range(0, len(tags), _CHUNK * 4):
                            connection.execute(insert(TAGS), tags[begin : begin + _CHUNK * 4])
                        embeddings = [
                            {
                                "tenant": row.tenant,
                                "app": row.app,
                                "memory_id": row.memory_id,
                                "version": row.version,
                                "subject": row.subject,
                                "sealed": bytes(vectors[(row.memory_id, row.version)]),
                            }
                            for row in chunk
                            if (row.memory_id, row.version) in vectors
                        ]
                        if embeddings:
                            connection.execute(insert(EMBEDDINGS), embeddings)
                    _packs.put_many(connection, loaded)
            except IntegrityError as exc:
                if not _is_unique_violation(exc):
                    raise
                raise MemoryConflictError(
                    "A memory version being loaded exists already; nothing was loaded."
                ) from exc

    def _docs(
        self, connection: Connection, tenant: str, rows: Sequence[StoredRow]
    ) -> dict[tuple[str, str, int], int]:
        """The document ids of just-inserted ``rows``, by (app, memory id, version)."""
        v = VERSIONS.c
        found: dict[tuple[str, str, int], int] = {}
        wanted = {(row.app, row.memory_id, row.version) for row in rows}
        for app, memory_id, version, doc in connection.execute(
            select(v.app, v.memory_id, v.version, v.doc).where(
                v.tenant == tenant,
                v.app.in_(sorted({row.app for row in rows})),
                v.memory_id.in_(sorted({row.memory_id for row in rows})),
            )
        ):
            if (app, memory_id, version) in wanted:
                found[(app, memory_id, version)] = doc
        return found

    def versions(
        self, tenant: str, app: str, subjects: Sequence[str], memory_id: str
    ) -> list[StoredRow]:
        """Every version of ``memory_id`` within ``subjects``, oldest first; a memory with a
        version that cannot be decoded raises :class:`StoreError` naming it."""
        v = VERSIONS.c
        with (
            translated("reading a memory"),
            transaction(self._engine, self.dialect, tenant=tenant, write=False) as connection,
        ):
            result = connection.execute(
                select(VERSIONS)
                .where(
                    v.tenant == tenant,
                    v.app == app,
                    v.subject.in_(subjects),
                    v.memory_id == memory_id,
                )
                .order_by(v.version)
            )
            try:
                found = result.all()
            except DECODE_ERRORS as exc:
                raise damaged_error(memory_id) from exc
            decoded, broken = self._full_rows(connection, tenant, found)
            if broken:
                raise damaged_error(memory_id)
            return [decoded[r.doc] for r in found]

    def damaged(self, tenant: str, app: str, subject: str) -> builtins.list[str]:
        """The ids of the subject's memories with a version that cannot be decoded, sorted.

        Reads leave them out, so a caller that lists a subject's memories to erase them
        (a person's erase) erases these too by id: :meth:`erase` removes them as any other.
        Reads every version of the subject: for erasure and repair, not for a read path.
        """
        v = VERSIONS.c
        with (
            translated("finding damaged memories"),
            transaction(self._engine, self.dialect, tenant=tenant, write=False) as connection,
        ):
            ids = connection.execute(
                select(v.memory_id).where(v.tenant == tenant, v.app == app, v.subject == subject)
            ).scalars()
            damaged = self._damaged_among(connection, tenant, app, set(ids))
        return sorted(damaged)

    def rows(self, tenant: str, app: str) -> builtins.list[StoredRow]:
        """Every stored version of tenant and app, any subject (one snapshot; the reference
        scan, which this driver's own reads never need)."""
        v = VERSIONS.c
        with (
            translated("reading memories"),
            transaction(self._engine, self.dialect, tenant=tenant, write=False) as connection,
        ):
            result = connection.execute(
                select(VERSIONS)
                .where(v.tenant == tenant, v.app == app)
                .order_by(v.subject, v.memory_id, v.version)
            )
            try:
                found = result.all()
            except DECODE_ERRORS:  # a damaged row: the others one by one, without it
                docs = connection.execute(
                    select(v.doc).where(v.tenant == tenant, v.app == app)
                ).scalars().all()
                found, _ = fetch_each(
                    connection, _rows_statement(self.dialect), {"tenant": tenant}, docs
                )
            decoded, _broken = self._full_rows(connection, tenant, found)
            return builtins.list(decoded.values())

    def set_pinned(self, tenant: str, app: str, subject: str, memory_id: str, pinned: bool) -> None:
        """Set the pinned flag of the current version (no new version)."""
        v = VERSIONS.c
        with (
            translated("pinning a memory"),
            transaction(self._engine, self.dialect, tenant=tenant, write=True) as connection,
        ):
            changed = connection.execute(
                update(VERSIONS)
                .where(
                    *_memory_clauses(tenant, app, subject, memory_id),
                    v.valid_to.is_(None),
                )
                .values(pinned=pinned)
            )
            if changed.rowcount != 1:
                raise MemoryConflictError
            _packs.touch(connection, tenant, app, subject)  # a pinned filter sees it

    def put_vector(
        self, tenant: str, app: str, subject: str, memory_id: str, version: int, sealed: bytes
    ) -> None:
        """Replace the sealed embedding of one stored version, in one transaction (under the
        tenant's row-level security, as every write); :class:`MemoryConflictError` and
        nothing changed if that version is not stored."""
        v, e = VERSIONS.c, EMBEDDINGS.c
        if not isinstance(sealed, bytes | bytearray | memoryview):
            raise TypeError("sealed must be bytes (the sealed embedding)")
        with (
            translated("storing an embedding"),
            transaction(self._engine, self.dialect, tenant=tenant, write=True) as connection,
        ):
            marked = connection.execute(
                update(VERSIONS)
                .where(
                    *_memory_clauses(tenant, app, subject, memory_id),
                    v.version == version,
                )
                .values(embedded=True)
            )
            if marked.rowcount != 1:
                raise MemoryConflictError("This version is not stored; nothing was changed.")
            connection.execute(
                delete(EMBEDDINGS).where(
                    e.tenant == tenant,
                    e.app == app,
                    e.memory_id == memory_id,
                    e.version == version,
                )
            )
            connection.execute(
                insert(EMBEDDINGS),
                {
                    "tenant": tenant,
                    "app": app,
                    "memory_id": memory_id,
                    "version": version,
                    "subject": subject,
                    "sealed": bytes(sealed),
                },
            )
            _packs.touch(connection, tenant, app, subject)

    def list(
        self, where: Filter, *, limit: int, after: tuple[datetime, str] | None = None
    ) -> list[StoredRow]:
        """Matching rows, newest ``created_at`` first (then greater memory id); damaged rows
        are left out and the page is filled from the rows after them."""
        if limit <= 0:
            return []
        statement = _list_statement(self.dialect, scope_shape(where), after is not None)
        params = {**scope_params(where), "limit": limit}
        if after is not None:
            params["after_created"], params["after_id"] = after
        with (
            translated("listing memories"),
            transaction(self._engine, self.dialect, tenant=where.tenant, write=False) as connection,
        ):
            while True:
                # The page's ids first, from the covering index alone; then those rows whole.
                docs = connection.execute(statement, params).scalars().all()
                loaded, _broken = self._load(connection, where.tenant, docs)
                rows = [loaded[doc] for doc in docs if doc in loaded]
                if len(rows) >= limit or len(docs) < params["limit"]:
                    return rows[:limit]
                # Rows were left out: as many more ids as rows are missing (same snapshot).
                params["limit"] = len(docs) + limit - len(rows)

    def search(
        self, where: Filter, query: Sequence[Collection[str]], *, top_k: int
    ) -> builtins.list[tuple[StoredRow, float]]:
        """BM25 over the rows matching ``where``, equal to :func:`bm25_rank` in scores and order.

        The database computes N, the length total, document frequencies and the scores,
        and returns the best candidates; they are re-scored with the reference's own
        arithmetic (see :mod:`._search`), and only the top ``k`` rows are loaded whole. A
        damaged row is left out of the result (it still counts in the corpus statistics).
        """
        if not query or top_k <= 0:
            return []
        with (
            translated("searching memories"),
            transaction(self._engine, self.dialect, tenant=where.tenant, write=False) as connection,
        ):
            skip: set[int] = set()
            while True:
                ranked = rank(connection, where, query, top_k, skip=skip)
                loaded, broken = self._load(connection, where.tenant, [doc for doc, _ in ranked])
                if not broken:
                    break
                skip |= broken  # ranked again without them (they still count in N and df)
        return [(loaded[doc], score) for doc, score in ranked if doc in loaded]

    def vector_state(self, where: Filter) -> Hashable | None:
        """A token that stays equal while :meth:`vectors` for ``where`` would return the same
        entries, on both dialects: each subject's change counter (``memory_stats.changes``,
        bumped in the transaction of every write that can change what a filter over the
        subject returns, and never reset) with a digest of the filter itself, so two filters
        never share a token. One primary-key read.

        Retention cutoffs move with the clock, so a filter with them adds, per rule, how
        many of the rows it would otherwise see carry the label and were created before the
        cutoff: with the counters unchanged those rows are the first of that label by
        creation time, so the count fixes which. The labelled rows' creation times are read
        once per counters and kept (the counters are read again after them, and a write in
        between gives ``None``: the caller then reads the vectors)."""
        subjects = tuple(where.subjects)
        named = [
            where.tenant,
            where.app,
            subjects,
            where.session,
            None if where.kinds is None else sorted(where.kinds),
            None if where.as_of is None else where.as_of.isoformat(),
            where.pinned,
            where.written_by,
            where.any_session,
            None if where.memory_ids is None else sorted(where.memory_ids),
            [sorted(clause) for clause in where.tags],
            sorted(where.tags_absent),
            [label for label, _ in where.retention],
        ]
        digest = hashlib.blake2b(json.dumps(named).encode("utf-8"), digest_size=16).hexdigest()
        s = STATS.c
        counters = select(s.subject, s.changes).where(
            s.tenant == where.tenant,
            s.app == where.app,
            s.subject.in_(sorted(set(subjects))),
            s.agent == "",  # the subject's own row: every write of the subject raises it
        )
        with (
            translated("reading embeddings"),
            transaction(self._engine, self.dialect, tenant=where.tenant, write=False) as connection,
        ):
            changes = {str(row[0]): int(row[1]) for row in connection.execute(counters)}
            token = (digest, *(changes.get(subject, 0) for subject in subjects))
            if not where.retention:
                return token
            labelled = self._labelled.get(token)
            if labelled is None:
                statement = _labelled_statement(self.dialect, scope_shape(where))
                params = scope_params(where)
                labelled = tuple(
                    sorted(
                        connection.execute(
                            statement, {**params, "label": params[f"retention_label_{index}"]}
                        ).scalars()
                    )
                    for index in range(len(where.retention))
                )
                if {str(row[0]): int(row[1]) for row in connection.execute(counters)} != changes:
                    return None  # a write between the two reads: read the vectors
                self._labelled[token] = labelled
                while len(self._labelled) > 64:
                    self._labelled.popitem(last=False)
        return (
            *token,
            *(
                bisect.bisect_left(times, cutoff)
                for times, (_, cutoff) in zip(labelled, where.retention, strict=True)
            ),
        )

    def vectors(
        self, where: Filter, *, known: Container[tuple[str, int]] = frozenset()
    ) -> builtins.list[VectorEntry]:
        """The sealed embedding of every row matching ``where`` that has one, sorted by
        subject, memory id and version; ``sealed=None`` for the ``(memory_id, version)``
        pairs in ``known``.

        One snapshot, two steps: the keys of the matching rows that have an embedding (an
        index-only scan of the filter's scope: ``embedded`` is in the covering index), then
        the bytes of only the pairs the caller does not know, in chunks.
        """
        e = EMBEDDINGS.c
        with (
            translated("reading embeddings"),
            transaction(self._engine, self.dialect, tenant=where.tenant, write=False) as connection,
        ):
            found = connection.execute(
                _vector_keys_statement(self.dialect, scope_shape(where)), scope_params(where)
            ).all()
            # Sorted here, in code-point order (a database collation may order text
            # otherwise); entries are tuples, so the sort compares in C.
            entries = [VectorEntry(subject, m, n, None) for subject, m, n in found]
            entries.sort()
            missing = [
                (entry[1], entry[2]) for entry in entries if (entry[1], entry[2]) not in known
            ]
            sealed: dict[tuple[str, int], bytes] = {}
            for start in range(0, len(missing), _CHUNK):
                chunk = missing[start : start + _CHUNK]
                for memory_id, version, blob in connection.execute(
                    select(e.memory_id, e.version, e.sealed).where(
                        e.tenant == where.tenant,
                        e.app == where.app,
                        # The ids seek the primary key; the pairs then pick the versions.
                        e.memory_id.in_(sorted({m for m, _ in chunk})),
                        tuple_(e.memory_id, e.version).in_(chunk),
                    )
                ):
                    sealed[(memory_id, version)] = bytes(blob)
        if not sealed:
            return entries
        return [
            entry._replace(sealed=sealed[(entry[1], entry[2])])
            if (entry[1], entry[2]) in sealed
            else entry
            for entry in entries
        ]

    def erase(self, tenant: str, app: str, subject: str, memory_id: str) -> EraseResult:
        """DELETE every version, posting, tag and embedding of the memory, and every link with
        it at either end (any subject), in one transaction, then commit."""
        v, p, e, n, t = VERSIONS.c, POSTINGS.c, EMBEDDINGS.c, LINKS.c, TAGS.c
        with (
            translated("erasing a memory"),
            transaction(self._engine, self.dialect, tenant=tenant, write=True) as connection,
        ):
            _packs.touch(connection, tenant, app, subject)  # locks first, as put takes them
            erased = connection.execute(
                select(
                    v.version,
                    v.doc,
                    v.length,
                    v.session_only,
                    v.trust,
                    v.agent,
                    v.valid_to.is_(None).label("current"),
                )
                .where(
                    *_memory_clauses(tenant, app, subject, memory_id),
                )
                .order_by(v.version)
                .with_for_update()
            ).all()
            docs = [found.doc for found in erased]
            _packs.forget(
                connection,
                tenant,
                app,
                subject,
                [_gone(found, current=bool(found.current)) for found in erased],
            )
            if docs:
                connection.execute(delete(POSTINGS).where(p.tenant == tenant, p.doc.in_(docs)))
                connection.execute(delete(TAGS).where(t.tenant == tenant, t.doc.in_(docs)))
            connection.execute(
                delete(EMBEDDINGS).where(
                    e.tenant == tenant, e.app == app, e.subject == subject, e.memory_id == memory_id
                )
            )
            connection.execute(
                delete(LINKS).where(
                    n.tenant == tenant,
                    n.app == app,
                    or_(n.source == memory_id, n.target == memory_id),
                )
            )
            if docs:
                connection.execute(delete(VERSIONS).where(v.tenant == tenant, v.doc.in_(docs)))
        return EraseResult(
            memory_id=memory_id, versions=tuple(found.version for found in erased), mode="hard"
        )

    def expired(
        self, tenant: str, app: str, retention: Sequence[tuple[str, datetime]]
    ) -> builtins.list[tuple[str, str]]:
        """``(subject, memory_id)`` of memories whose current version carries a label of
        ``retention`` and that were created before the label's cutoff, sorted; a damaged
        memory is left out (the sweep that reads each one would fail on it)."""
        if not retention:
            return []
        v = VERSIONS.c
        past = or_(
            *(
                and_(has_label(self.dialect, json.dumps(label)), v.created_at < cutoff)
                for label, cutoff in retention
            )
        )
        with (
            translated("finding expired memories"),
            transaction(self._engine, self.dialect, tenant=tenant, write=False) as connection,
        ):
            found = connection.execute(
                select(v.subject, v.memory_id).where(
                    v.tenant == tenant, v.app == app, v.valid_to.is_(None), past
                )
            ).all()
            damaged = self._damaged_among(connection, tenant, app, [m for _, m in found])
        return sorted((s, memory_id) for s, memory_id in found if memory_id not in damaged)

    def put_links(self, links: Sequence[StoredLink]) -> None:
        """Insert or replace (by tenant, app, subject and key) a batch of links in one
        transaction."""
        n = LINKS.c
        batch = checked_links(links)
        if not batch:
            return
        first = next(iter(batch.values()))
        upsert = (sqlite_insert if self.dialect == "sqlite" else postgresql_insert)(LINKS)
        upsert = upsert.on_conflict_do_update(
            index_elements=[n.tenant, n.app, n.subject, n.key],
            set_={
                "source": upsert.excluded.source,
                "target": upsert.excluded.target,
                "sealed": upsert.excluded.sealed,
            },
        )
        values = [
            {
                "tenant": link.tenant,
                "app": link.app,
                "subject": link.subject,
                "key": link.key,
                "source": link.source,
                "target": link.target,
                "sealed": bytes(link.sealed),
            }
            for link in batch.values()
        ]
        with (
            translated("storing links"),
            transaction(self._engine, self.dialect, tenant=first.tenant, write=True) as connection,
        ):
            for start in range(0, len(values), _CHUNK):
                connection.execute(upsert, values[start : start + _CHUNK])

    def links(
        self, tenant: str, app: str, subjects: Sequence[str], ids: Collection[str]
    ) -> builtins.list[StoredLink]:
        """Every link of these subjects with one of ``ids`` at an end, sorted by (subject,
        key) in code-point order; each end's index finds them."""
        n = LINKS.c
        wanted = sorted({i for i in ids if type(i) is str})
        if not wanted or not subjects:
            return []
        found: dict[tuple[str, str], StoredLink] = {}
        with (
            translated("reading links"),
            transaction(self._engine, self.dialect, tenant=tenant, write=False) as connection,
        ):
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                for row in connection.execute(
                    select(n.subject, n.source, n.target, n.key, n.sealed).where(
                        n.tenant == tenant,
                        n.app == app,
                        n.subject.in_(builtins.list(dict.fromkeys(subjects))),
                        or_(n.source.in_(chunk), n.target.in_(chunk)),
                    )
                ):
                    found[(row.subject, row.key)] = StoredLink(
                        tenant=tenant,
                        app=app,
                        subject=row.subject,
                        source=row.source,
                        target=row.target,
                        key=row.key,
                        sealed=bytes(row.sealed),
                    )
        # Sorted here, in code-point order (a database collation may order text otherwise).
        return [found[position] for position in sorted(found)]

    def delete_links(self, tenant: str, app: str, subject: str, keys: Collection[str]) -> None:
        """DELETE these links of ``subject`` in one transaction (unknown keys: nothing)."""
        n = LINKS.c
        wanted = sorted({key for key in keys if type(key) is str})
        if not wanted:
            return
        with (
            translated("deleting links"),
            transaction(self._engine, self.dialect, tenant=tenant, write=True) as connection,
        ):
            for start in range(0, len(wanted), _CHUNK):
                connection.execute(
                    delete(LINKS).where(
                        n.tenant == tenant,
                        n.app == app,
                        n.subject == subject,
                        n.key.in_(wanted[start : start + _CHUNK]),
                    )
                )

    def _upsert_control(
        self, connection: Connection, tenant: str, app: str, key: str, value: bytes
    ) -> None:
        c = CONTROL.c
        upsert = (sqlite_insert if self.dialect == "sqlite" else postgresql_insert)(CONTROL)
        connection.execute(
            upsert.values(tenant=tenant, app=app, key=key, value=value).on_conflict_do_update(
                index_elements=[c.tenant, c.app, c.key], set_={"value": value}
            )
        )

    def control_put(self, tenant: str, app: str, key: str, value: bytes | None) -> None:
        """Insert or replace the control record ``key``; ``None`` DELETEs it. The same
        transaction gives :data:`CONTROL_GENERATION` of tenant and app new random bytes."""
        c = CONTROL.c
        if key == CONTROL_GENERATION:
            raise ValueError(f"the control key {CONTROL_GENERATION!r} is the driver's own")
        with (
            translated("writing a control record"),
            transaction(self._engine, self.dialect, tenant=tenant, write=True) as connection,
        ):
            if value is None:
                connection.execute(
                    delete(CONTROL).where(c.tenant == tenant, c.app == app, c.key == key)
                )
            else:
                self._upsert_control(connection, tenant, app, key, value)
            self._upsert_control(
                connection, tenant, app, CONTROL_GENERATION, secrets.token_bytes(16)
            )

    def control_generation(self, tenant: str, app: str) -> bytes | None:
        """Bytes that change with every control record written of tenant and app (``None``:
        none was written yet): while they are equal, no control record changed through this
        driver (ADR 0096)."""
        c = CONTROL.c
        with (
            translated("reading a control record"),
            transaction(self._engine, self.dialect, tenant=tenant, write=False) as connection,
        ):
            found = connection.execute(
                select(c.value).where(
                    c.tenant == tenant, c.app == app, c.key == CONTROL_GENERATION
                )
            ).scalar_one_or_none()
        return None if found is None else bytes(found)

    def control_get(self, tenant: str, app: str, key: str) -> bytes | None:
        """The control record ``key``, or ``None``."""
        c = CONTROL.c
        if key == CONTROL_GENERATION:
            return None
        with (
            translated("reading a control record"),
            transaction(self._engine, self.dialect, tenant=tenant, write=False) as connection,
        ):
            found = connection.execute(
                select(c.value).where(c.tenant == tenant, c.app == app, c.key == key)
            ).scalar_one_or_none()
        return None if found is None else bytes(found)

    def control_list(self, tenant: str, app: str, prefix: str) -> builtins.list[tuple[str, bytes]]:
        """Every control record whose key starts with ``prefix``, sorted by key (code points)."""
        c = CONTROL.c
        with (
            translated("listing control records"),
            transaction(self._engine, self.dialect, tenant=tenant, write=False) as connection,
        ):
            # substr, not LIKE: SQLite's LIKE ignores case, and either would need escaping.
            found = connection.execute(
                select(c.key, c.value).where(
                    c.tenant == tenant,
                    c.app == app,
                    func.substr(c.key, 1, len(prefix)) == prefix,
                )
            ).all()
        return sorted((key, bytes(value)) for key, value in found if key != CONTROL_GENERATION)

    def raw_dump(self) -> Iterator[tuple[str, bytes]]:
        """Every row of every table, sealed blobs raw; for SQLite also the database files.

        On PostgreSQL this needs a URL whose user bypasses row-level security (a superuser
        or BYPASSRLS): as anyone else, the policies would hide every row.
        """
        dumped: list[tuple[str, bytes]] = []
        with (
            translated("dumping the store"),
            transaction(self._engine, self.dialect, tenant=None, write=False) as connection,
        ):
            if self.dialect == "postgresql":
                bypass = connection.execute(
                    text(
                        "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
                    )
                ).scalar_one()
                if not bypass:
                    raise ConfigurationError(
                        "raw_dump on PostgreSQL needs a superuser or BYPASSRLS URL: row-level "
                        "security hides every row from anyone else."
                    )
            # Every table of the schema, so a new one is never left out of the dump.
            for table in (SCHEMA, *(METADATA.tables[f"{PG_SCHEMA}.{n}"] for n in TENANT_TABLES)):
                order = list(table.primary_key.columns)
                result = connection.execute(select(table).order_by(*order))
                try:
                    rows = result.all()
                except DECODE_ERRORS:  # a damaged timestamp: the timestamps as the database's text
                    columns = [
                        cast(c, Text).label(c.name) if isinstance(c.type, UtcTimestamp) else c
                        for c in table.columns
                    ]
                    rows = connection.execute(select(*columns).order_by(*order)).all()
                for index, found in enumerate(rows):
                    dumped.append((f"{table.name}[{index}]", _serialise(found)))
        yield from dumped
        if self._target.path is not None:
            path = self._target.path
            for name in (path, *(path.with_name(path.name + s) for s in ("-journal", "-wal"))):
                try:
                    yield f"file:{name.name}", name.read_bytes()
                except FileNotFoundError:
                    continue


def _serialise(found: Row[Any]) -> bytes:
    parts: list[bytes] = []
    for value in found:
        if isinstance(value, bytes | bytearray | memoryview):
            parts.append(bytes(value))
        elif value is None:
            parts.append(b"")
        elif isinstance(value, datetime):
            parts.append(value.isoformat().encode())
        else:
            parts.append(str(value).encode("utf-8"))
    return b"\x1f".join(parts)


def upgrade(url: str, *, progress: Progress | None = None) -> tuple[int, int]:
    """Create or upgrade the schema at ``url``; return (version before, version after).

    One transaction: on PostgreSQL an advisory lock serialises concurrent upgrades, on
    SQLite the write lock does. A database whose schema is newer than this code is refused.
    ``progress(done, total)`` is called after each migration applied (all commit together).
    """
    target = parse_url(url)
    engine = make_engine(target, pool_size=1)
    try:
        with (
            translated("upgrading the schema", connecting=True),
            transaction(engine, target.dialect, tenant=None, write=True) as connection,
        ):
            if target.dialect == "postgresql":
                connection.execute(select(func.pg_advisory_xact_lock(_UPGRADE_LOCK)))
            before = stored_version(connection) or 0
            after = apply_migrations(
                connection, before, now=datetime.now(UTC), progress=progress
            )
        return before, after
    finally:
        engine.dispose()
