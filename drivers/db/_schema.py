"""The db driver's tables and their versioned, explicit migrations (``memory db upgrade URL``).

Schema version 5 (the current one)::

    memory_versions   one row per version of a memory                  (tenant data, RLS)
        UNIQUE (tenant, app, memory_id, version)   the optimistic-concurrency key (the
                                                   primary key on PostgreSQL)
        doc                                        a compact integer id of the version, never
                                                   reused while the version exists (SQLite:
                                                   the rowid; PostgreSQL: an identity column,
                                                   unique per tenant)
        embedded                                   whether memory_embeddings holds the
                                                   version's embedding (written with it)
        tenant app subject memory_id version kind labels trust agent session session_only
        pinned created_at recorded_at valid_from valid_to sealed length
        memory_versions_cover  (tenant, app, subject, valid_to, created_at, memory_id) and
                               every other column a Filter reads, plus version, length,
                               embedded and doc: list order, the scope of a read, the BM25
                               corpus statistics and the keys of a scope's embeddings without
                               touching the table (index-only)
    memory_postings   one row per blind term of a version: BM25 in SQL (tenant data, RLS)
        PK (tenant, app, subject, term, doc)   a term's documents, in doc order
        tf length                              the term's count in that version, and the
                                               version's length (copied: versions never
                                               change); both in the key's index (SQLite
                                               WITHOUT ROWID, PostgreSQL INCLUDE)
        memory_postings_doc  (tenant, doc): a version's postings, for loading rows and erase
    memory_embeddings the sealed embedding of a version, opaque bytes  (tenant data, RLS)
        PK (tenant, app, memory_id, version)   as memory_versions
        subject sealed
    memory_control    small sealed control records: grants, kill switches (tenant data, RLS)
        PK (tenant, app, key)
        value                                  sealed by the SDK
    memory_links      one row per link from a memory to a memory or an entity
                                                                       (tenant data, RLS)
        PK (tenant, app, subject, key)         the link's key, unique in its subject
        source target                          memory or entity ids, its two ends
        sealed                                 kind, weight and time, sealed by the SDK
        memory_links_source  (tenant, app, source)   a read, or an erase, by either end
        memory_links_target  (tenant, app, target)
    memory_tags       one row per blinded tag of a version: caller keys, metadata
                                                                       (tenant data, RLS)
        PK (tenant, app, subject, tag, doc)    a tag's documents, in doc order: a filter's
                                               tag clause as one range (SQLite WITHOUT ROWID)
        memory_tags_doc  (tenant, doc): a version's tags, for loading rows and erase
    memory_stats      one row per subject and writing agent: the live versions' count and
                      summed length, those not packed yet and the packed ones no longer
                      live; agent "" is the subject's own row (its lock, taken first by
                      every write, and its change counter)   (tenant data, RLS)
        PK (tenant, app, subject, agent)
        changes                                raised by every write of the row's subject
    memory_packs      one row per subject, blind term and chunk of packed postings of
                      live versions: (doc, tf, length) records   (tenant data, RLS)
        PK (tenant, app, subject, agent, term, upto)  upto: the chunk's greatest doc
    memory_versions_special  partial index of current session-only or quarantined versions
                             by (tenant, app, subject, session)
    memory_schema     one row per applied schema version               (no tenant data)

Version 1 had memory_postings keyed by (tenant, app, subject, term, memory_id, version), no
``doc`` and no embeddings table; :func:`_migrate_v2` rewrites a version-1 store in place.
Version 2 had no memory_links; :func:`_migrate_v3` adds it (and nothing else), empty, with
the same grants, policy and forced row-level security as the other tenant tables. Version 3
had no memory_tags; :func:`_migrate_v4` adds it the same way (existing versions get no tags).
Version 4 had no memory_stats, memory_packs nor memory_versions_special; :func:`_migrate_v5`
adds them and fills the first two from the live versions (drivers/db/_packs.py, ADR 0099).

On PostgreSQL the tables live in the schema ``mainsdk_memory``; on SQLite in the main
database. Every primary key and unique index leads with ``tenant``, the distribution key for
partitioning or Citus (docs/scaling.md). Keys live in the key store, never here.

A migration's DDL is frozen once released: :func:`tables_v1` builds version 1's tables,
:func:`_migrate_v2` to :func:`_migrate_v5` hold versions 2's to 5's DDL
as written; the driver reads and writes through :func:`tables_v5`. A brand-new database runs
every migration in order, so it ends with the same tables as an upgraded one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    DateTime,
    Dialect,
    FetchedValue,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    false,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.types import TypeDecorator, TypeEngine

from mainsdk_memory._errors import ConfigurationError
from mainsdk_memory._progress import Progress
from mainsdk_memory.drivers.db._engine import APP_ROLE, PG_SCHEMA, TENANT_SETTING

__all__ = [
    "CONTROL",
    "EMBEDDINGS",
    "LINKS",
    "METADATA",
    "MIGRATIONS",
    "PACKS",
    "POSTINGS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "STATS",
    "TAGS",
    "TENANT_TABLES",
    "VERSIONS",
    "Migration",
    "UtcTimestamp",
    "apply_migrations",
    "check_version",
    "stored_version",
    "tables_v1",
    "tables_v2",
    "tables_v3",
    "tables_v4",
    "tables_v5",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class UtcTimestamp(TypeDecorator[datetime]):
    """A timezone-aware instant, exact to the microsecond, read back in UTC.

    PostgreSQL stores ``timestamptz``; SQLite stores integer microseconds since the Unix
    epoch (SQLite has no timestamp type, and an integer compares and sorts exactly).
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        """BIGINT microseconds on SQLite, ``timestamptz`` elsewhere."""
        impl: TypeEngine[Any] = (
            BigInteger() if dialect.name == "sqlite" else DateTime(timezone=True)
        )
        return dialect.type_descriptor(impl)

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> object:
        """Refuse naive datetimes; convert aware ones for the database."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("the db driver stores timezone-aware datetimes only")
        if dialect.name == "sqlite":
            return (value - _EPOCH) // _MICROSECOND
        return value.astimezone(UTC)

    def process_result_value(self, value: object, dialect: Dialect) -> datetime | None:
        """An aware UTC datetime."""
        if value is None:
            return None
        if isinstance(value, int):
            return _EPOCH + timedelta(microseconds=value)
        if isinstance(value, datetime):
            return value.astimezone(UTC)
        raise TypeError("unexpected timestamp value from the database")


def tables_v1(metadata: MetaData) -> tuple[Table, Table, Table, Table]:
    """Schema version 1's tables (frozen): versions, postings, control, schema."""
    versions = Table(
        "memory_versions",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("memory_id", Text, nullable=False),
        Column("version", Integer, nullable=False),
        Column("subject", Text, nullable=False),
        Column("kind", Text, nullable=False),
        Column("labels", Text, nullable=False),  # a JSON array of label names
        Column("trust", Text, nullable=False),
        Column("agent", Text, nullable=False),
        Column("session", Text, nullable=True),
        Column("session_only", Boolean, nullable=False),
        Column("pinned", Boolean, nullable=False),
        Column("created_at", UtcTimestamp, nullable=False),
        Column("recorded_at", UtcTimestamp, nullable=False),
        Column("valid_from", UtcTimestamp, nullable=False),
        Column("valid_to", UtcTimestamp, nullable=True),
        Column("sealed", LargeBinary, nullable=False),
        Column("length", Integer, nullable=False),  # index terms in the text: BM25 doc length
        PrimaryKeyConstraint("tenant", "app", "memory_id", "version", name="memory_versions_pkey"),
    )
    # A subject's rows, current first-class: list order and the BM25 corpus statistics.
    Index(
        "memory_versions_scope",
        versions.c.tenant,
        versions.c.app,
        versions.c.subject,
        versions.c.valid_to,
        versions.c.created_at,
        versions.c.memory_id,
    )
    postings = Table(
        "memory_postings",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("subject", Text, nullable=False),
        Column("term", Text, nullable=False),
        Column("memory_id", Text, nullable=False),
        Column("version", Integer, nullable=False),
        Column("tf", Integer, nullable=False),
        PrimaryKeyConstraint(
            "tenant", "app", "subject", "term", "memory_id", "version", name="memory_postings_pkey"
        ),
    )
    # Erase and row loading find a version's postings by memory id (random, so selective).
    # It leads with memory_id, not tenant, so no planner mistakes it for a way to search a
    # tenant's postings; the table's primary key, which does lead with tenant, serves search.
    Index("memory_postings_memory", postings.c.memory_id, postings.c.version)
    control = Table(
        "memory_control",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("key", Text, nullable=False),
        Column("value", LargeBinary, nullable=False),
        PrimaryKeyConstraint("tenant", "app", "key", name="memory_control_pkey"),
    )
    schema = Table(
        "memory_schema",
        metadata,
        Column("version", Integer, primary_key=True, autoincrement=False),
        Column("description", Text, nullable=False),
        Column("applied_at", UtcTimestamp, nullable=False),
    )
    return versions, postings, control, schema


def tables_v2(metadata: MetaData) -> tuple[Table, Table, Table, Table, Table]:
    """Schema version 2's tables as the driver reads and writes them: versions, postings,
    embeddings, control, schema. (Their DDL is :func:`_migrate_v2`'s, per dialect.)"""
    versions = Table(
        "memory_versions",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("memory_id", Text, nullable=False),
        Column("version", Integer, nullable=False),
        Column("subject", Text, nullable=False),
        Column("kind", Text, nullable=False),
        Column("labels", Text, nullable=False),  # a JSON array of label names
        Column("trust", Text, nullable=False),
        Column("agent", Text, nullable=False),
        Column("session", Text, nullable=True),
        Column("session_only", Boolean, nullable=False),
        Column("pinned", Boolean, nullable=False),
        Column("created_at", UtcTimestamp, nullable=False),
        Column("recorded_at", UtcTimestamp, nullable=False),
        Column("valid_from", UtcTimestamp, nullable=False),
        Column("valid_to", UtcTimestamp, nullable=True),
        Column("sealed", LargeBinary, nullable=False),
        Column("length", Integer, nullable=False),  # index terms in the text: BM25 doc length
        # Assigned by the database at INSERT (SQLite rowid, PostgreSQL identity).
        Column("doc", BigInteger, FetchedValue(), nullable=False),
        # Whether the version has its sealed embedding in memory_embeddings: set with it, in
        # the same transaction (by put, or by put_vector when a reindex adds one later), so
        # which rows of a scope have one is read from the covering index alone.
        Column("embedded", Boolean, server_default=false(), nullable=False),
        PrimaryKeyConstraint("tenant", "app", "memory_id", "version", name="memory_versions_pkey"),
    )
    postings = Table(
        "memory_postings",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("subject", Text, nullable=False),
        Column("term", Text, nullable=False),
        Column("doc", BigInteger, nullable=False),
        Column("tf", Integer, nullable=False),
        # The version's document length, copied from memory_versions (a version never
        # changes): ranking reads postings and the covering index, never the table.
        Column("length", Integer, nullable=False),
        PrimaryKeyConstraint(
            "tenant", "app", "subject", "term", "doc", name="memory_postings_pkey"
        ),
    )
    embeddings = Table(
        "memory_embeddings",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("memory_id", Text, nullable=False),
        Column("version", Integer, nullable=False),
        Column("subject", Text, nullable=False),
        Column("sealed", LargeBinary, nullable=False),  # opaque: sealed by the SDK
        PrimaryKeyConstraint(
            "tenant", "app", "memory_id", "version", name="memory_embeddings_pkey"
        ),
    )
    _versions, _postings, control, schema = tables_v1(MetaData(schema=metadata.schema))
    return (
        versions,
        postings,
        embeddings,
        control.to_metadata(metadata),
        schema.to_metadata(metadata),
    )


def tables_v3(
    metadata: MetaData,
) -> tuple[Table, Table, Table, Table, Table, Table]:
    """Schema version 3's tables as the driver reads and writes them: version 2's and links
    (versions, postings, embeddings, control, links, schema). (The links table's DDL is
    :func:`_migrate_v3`'s.)"""
    versions, postings, embeddings, control, schema = tables_v2(metadata)
    links = Table(
        "memory_links",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("subject", Text, nullable=False),
        Column("key", Text, nullable=False),
        Column("source", Text, nullable=False),
        Column("target", Text, nullable=False),
        Column("sealed", LargeBinary, nullable=False),  # opaque: sealed by the SDK
        PrimaryKeyConstraint("tenant", "app", "subject", "key", name="memory_links_pkey"),
    )
    return versions, postings, embeddings, control, links, schema


def tables_v4(
    metadata: MetaData,
) -> tuple[Table, Table, Table, Table, Table, Table, Table]:
    """Schema version 4's tables as the driver reads and writes them: version 3's and tags
    (versions, postings, embeddings, control, links, tags, schema). (The tags table's DDL is
    :func:`_migrate_v4`'s.)"""
    versions, postings, embeddings, control, links, schema = tables_v3(metadata)
    tags = Table(
        "memory_tags",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("subject", Text, nullable=False),
        Column("tag", Text, nullable=False),  # blinded: 32 hex digits of a keyed HMAC
        Column("doc", BigInteger, nullable=False),
        PrimaryKeyConstraint("tenant", "app", "subject", "tag", "doc", name="memory_tags_pkey"),
    )
    return versions, postings, embeddings, control, links, tags, schema


def tables_v5(metadata: MetaData) -> tuple[Table, ...]:
    """Schema version 5's tables as the driver reads and writes them: version 4's and each
    subject's live statistics and packed postings (versions, postings, embeddings, control,
    links, tags, stats, packs, schema). (Their DDL is :func:`_migrate_v5`'s.)"""
    versions, postings, embeddings, control, links, tags, schema = tables_v4(metadata)
    stats = Table(
        "memory_stats",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("subject", Text, nullable=False),
        Column("agent", Text, nullable=False),  # "": the subject's own row (lock, changes)
        Column("docs", BigInteger, nullable=False),
        Column("total", BigInteger, nullable=False),
        Column("tail", Text, nullable=False),
        Column("waiting", Integer, nullable=False),
        Column("dead", Text, nullable=False),
        # Bumped by every write that can change what the subject's vectors or a filter over
        # it return (never reset: a row is never deleted), so a vector state built on it is
        # never equal across a change.
        Column("changes", BigInteger, nullable=False, server_default="0"),
        PrimaryKeyConstraint("tenant", "app", "subject", "agent", name="memory_stats_pkey"),
    )
    packs = Table(
        "memory_packs",
        metadata,
        Column("tenant", Text, nullable=False),
        Column("app", Text, nullable=False),
        Column("subject", Text, nullable=False),
        Column("agent", Text, nullable=False),
        Column("term", Text, nullable=False),
        Column("upto", BigInteger, nullable=False),
        Column("postings", LargeBinary, nullable=False),
        PrimaryKeyConstraint(
            "tenant", "app", "subject", "agent", "term", "upto", name="memory_packs_pkey"
        ),
    )
    return versions, postings, embeddings, control, links, tags, stats, packs, schema


METADATA = MetaData(schema=PG_SCHEMA)
VERSIONS, POSTINGS, EMBEDDINGS, CONTROL, LINKS, TAGS, STATS, PACKS, SCHEMA = tables_v5(METADATA)
#: Tables that hold tenant data: each has row-level security on PostgreSQL.
TENANT_TABLES = (
    VERSIONS.name,
    POSTINGS.name,
    EMBEDDINGS.name,
    CONTROL.name,
    LINKS.name,
    TAGS.name,
    STATS.name,
    PACKS.name,
)

_TENANT_TABLES_V1 = ("memory_versions", "memory_postings", "memory_control")


def _secure_postgres_table(connection: Connection, table: str) -> None:
    """Grants to the app role, row-level security enabled and forced, the tenant policy."""
    name = f"{PG_SCHEMA}.{table}"
    connection.execute(text(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {name} TO {APP_ROLE}"))
    connection.execute(text(f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY"))
    connection.execute(text(f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY"))
    # current_setting(..., true) is NULL or '' when no tenant is set: no row matches.
    connection.execute(
        text(
            f"CREATE POLICY tenant_isolation ON {name} "
            f"USING (tenant = current_setting('{TENANT_SETTING}', true)) "
            f"WITH CHECK (tenant = current_setting('{TENANT_SETTING}', true))"
        )
    )


def _postgres_v1(connection: Connection) -> None:
    """Role, grants and row-level security for version 1 (PostgreSQL only)."""
    role = connection.execute(
        text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = :role"),
        {"role": APP_ROLE},
    ).first()
    if role is None:
        connection.execute(
            text(f"CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE")
        )
    elif role.rolsuper or role.rolbypassrls:
        raise ConfigurationError(
            f"The role {APP_ROLE} exists with SUPERUSER or BYPASSRLS, so row-level security "
            f"would not hold. Run: ALTER ROLE {APP_ROLE} NOSUPERUSER NOBYPASSRLS; then retry."
        )
    me = connection.execute(
        text(
            "SELECT rolsuper, pg_has_role(current_user, :role, 'MEMBER') AS member "
            "FROM pg_roles WHERE rolname = current_user"
        ),
        {"role": APP_ROLE},
    ).one()
    if not me.rolsuper and not me.member:
        # The driver runs every transaction as the app role, so the URL's user must be
        # allowed to SET ROLE to it. Only the role's creator (or an admin) may grant that.
        try:
            with connection.begin_nested():
                connection.execute(text(f"GRANT {APP_ROLE} TO CURRENT_USER"))
        except DBAPIError as exc:
            user = connection.execute(text("SELECT current_user")).scalar_one()
            raise ConfigurationError(
                f"The database user {user!r} may not act as {APP_ROLE}, which every "
                f"transaction of the driver runs as. Run as an administrator: GRANT {APP_ROLE} "
                f'TO "{user}"; then retry the upgrade.'
            ) from exc
    connection.execute(text(f"GRANT USAGE ON SCHEMA {PG_SCHEMA} TO {APP_ROLE}"))
    connection.execute(text(f"GRANT SELECT ON {PG_SCHEMA}.memory_schema TO {APP_ROLE}"))
    for table in _TENANT_TABLES_V1:
        _secure_postgres_table(connection, table)


def _migrate_v1(connection: Connection) -> None:
    postgres = connection.dialect.name == "postgresql"
    if postgres:
        connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}"))
    MetaData_v1 = MetaData(schema=PG_SCHEMA)  # noqa: N806 - a frozen copy, named like the class
    tables_v1(MetaData_v1)
    MetaData_v1.create_all(connection, checkfirst=False)
    if postgres:
        _postgres_v1(connection)


# Version 2's DDL, frozen. Columns a Filter reads ride along in the covering index, so the
# scope of a read (and N and the total length for BM25) never touches the wide table rows.
_SQLITE_V2 = (
    "DROP INDEX memory_versions_scope",
    "ALTER TABLE memory_versions RENAME TO memory_versions_v1",
    """CREATE TABLE memory_versions (
        doc INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL, app TEXT NOT NULL, memory_id TEXT NOT NULL,
        version INTEGER NOT NULL, subject TEXT NOT NULL, kind TEXT NOT NULL,
        labels TEXT NOT NULL, trust TEXT NOT NULL, agent TEXT NOT NULL, session TEXT,
        session_only BOOLEAN NOT NULL, pinned BOOLEAN NOT NULL, created_at BIGINT NOT NULL,
        recorded_at BIGINT NOT NULL, valid_from BIGINT NOT NULL, valid_to BIGINT,
        sealed BLOB NOT NULL, length INTEGER NOT NULL,
        embedded BOOLEAN NOT NULL DEFAULT 0)""",
    """INSERT INTO memory_versions (tenant, app, memory_id, version, subject, kind, labels,
        trust, agent, session, session_only, pinned, created_at, recorded_at, valid_from,
        valid_to, sealed, length)
    SELECT tenant, app, memory_id, version, subject, kind, labels, trust, agent, session,
        session_only, pinned, created_at, recorded_at, valid_from, valid_to, sealed, length
    FROM memory_versions_v1 ORDER BY tenant, app, memory_id, version""",
    "DROP TABLE memory_versions_v1",
    """CREATE UNIQUE INDEX memory_versions_key
    ON memory_versions (tenant, app, memory_id, version)""",
    # Every index entry ends with the rowid, which is doc: the index covers doc too.
    """CREATE INDEX memory_versions_cover ON memory_versions (tenant, app, subject, valid_to,
        created_at, memory_id, version, length, session_only, session, trust, agent, kind,
        pinned, labels, valid_from, embedded)""",
    "DROP INDEX memory_postings_memory",
    "ALTER TABLE memory_postings RENAME TO memory_postings_v1",
    """CREATE TABLE memory_postings (
        tenant TEXT NOT NULL, app TEXT NOT NULL, subject TEXT NOT NULL, term TEXT NOT NULL,
        doc INTEGER NOT NULL, tf INTEGER NOT NULL, length INTEGER NOT NULL,
        CONSTRAINT memory_postings_pkey PRIMARY KEY (tenant, app, subject, term, doc)
    ) WITHOUT ROWID""",
    """INSERT INTO memory_postings (tenant, app, subject, term, doc, tf, length)
    SELECT p.tenant, p.app, p.subject, p.term, v.doc, p.tf, v.length
    FROM memory_postings_v1 p JOIN memory_versions v
      ON v.tenant = p.tenant AND v.app = p.app AND v.memory_id = p.memory_id
     AND v.version = p.version""",
    "DROP TABLE memory_postings_v1",
    # A version's postings (row loading, erase); with tf, so SQLite needs no other b-tree.
    "CREATE INDEX memory_postings_doc ON memory_postings (tenant, doc, tf)",
    """CREATE TABLE memory_embeddings (
        tenant TEXT NOT NULL, app TEXT NOT NULL, memory_id TEXT NOT NULL,
        version INTEGER NOT NULL, subject TEXT NOT NULL, sealed BLOB NOT NULL,
        CONSTRAINT memory_embeddings_pkey PRIMARY KEY (tenant, app, memory_id, version))""",
)

_POSTGRES_V2_BEFORE_COPY = (
    f"""ALTER TABLE {PG_SCHEMA}.memory_versions
        ADD COLUMN doc bigint GENERATED ALWAYS AS IDENTITY""",
    f"""ALTER TABLE {PG_SCHEMA}.memory_versions
        ADD COLUMN embedded boolean NOT NULL DEFAULT false""",
    f"""CREATE UNIQUE INDEX memory_versions_doc ON {PG_SCHEMA}.memory_versions (tenant, doc)""",
    f"DROP INDEX {PG_SCHEMA}.memory_versions_scope",
    f"""CREATE INDEX memory_versions_cover ON {PG_SCHEMA}.memory_versions
        (tenant, app, subject, valid_to, created_at, memory_id)
        INCLUDE (version, length, session_only, session, trust, agent, kind, pinned, labels,
                 valid_from, embedded, doc)""",
    f"DROP INDEX {PG_SCHEMA}.memory_postings_memory",
    f"ALTER TABLE {PG_SCHEMA}.memory_postings RENAME TO memory_postings_v1",
    f"""ALTER TABLE {PG_SCHEMA}.memory_postings_v1
        RENAME CONSTRAINT memory_postings_pkey TO memory_postings_v1_pkey""",
    f"""CREATE TABLE {PG_SCHEMA}.memory_postings (
        tenant text NOT NULL, app text NOT NULL, subject text NOT NULL, term text NOT NULL,
        doc bigint NOT NULL, tf integer NOT NULL, length integer NOT NULL,
        CONSTRAINT memory_postings_pkey PRIMARY KEY (tenant, app, subject, term, doc)
            INCLUDE (tf, length))""",
    # The copy reads tenant tables as the upgrading user, and a table owner is held by
    # FORCEd row-level security like everyone else: lift it for this transaction only (DDL
    # is transactional, and other sessions wait on the table locks until the commit).
    f"ALTER TABLE {PG_SCHEMA}.memory_versions NO FORCE ROW LEVEL SECURITY",
    f"ALTER TABLE {PG_SCHEMA}.memory_postings_v1 NO FORCE ROW LEVEL SECURITY",
)
_POSTGRES_V2_COPY = f"""INSERT INTO {PG_SCHEMA}.memory_postings (tenant, app, subject, term,
        doc, tf, length)
    SELECT p.tenant, p.app, p.subject, p.term, v.doc, p.tf, v.length
    FROM {PG_SCHEMA}.memory_postings_v1 p JOIN {PG_SCHEMA}.memory_versions v
      ON v.tenant = p.tenant AND v.app = p.app AND v.memory_id = p.memory_id
     AND v.version = p.version"""  # noqa: S608 - a constant schema name
_POSTGRES_V2_AFTER_COPY = (
    f"ALTER TABLE {PG_SCHEMA}.memory_versions FORCE ROW LEVEL SECURITY",
    f"DROP TABLE {PG_SCHEMA}.memory_postings_v1",
    f"CREATE INDEX memory_postings_doc ON {PG_SCHEMA}.memory_postings (tenant, doc)",
    f"""CREATE TABLE {PG_SCHEMA}.memory_embeddings (
        tenant text NOT NULL, app text NOT NULL, memory_id text NOT NULL,
        version integer NOT NULL, subject text NOT NULL, sealed bytea NOT NULL,
        CONSTRAINT memory_embeddings_pkey PRIMARY KEY (tenant, app, memory_id, version))""",
    # Sealed bytes do not compress: keep them out of line without trying.
    f"ALTER TABLE {PG_SCHEMA}.memory_embeddings ALTER COLUMN sealed SET STORAGE EXTERNAL",
)


def _migrate_v2(connection: Connection) -> None:
    if connection.dialect.name != "postgresql":
        for statement in _SQLITE_V2:
            connection.execute(text(statement))
        return
    for statement in _POSTGRES_V2_BEFORE_COPY:
        connection.execute(text(statement))
    before = connection.execute(
        text(f"SELECT count(*) FROM {PG_SCHEMA}.memory_postings_v1")  # noqa: S608 - constant
    ).scalar_one()
    copied = connection.execute(text(_POSTGRES_V2_COPY)).rowcount
    if copied != before:  # a posting without its version: v1 never wrote one
        raise ConfigurationError(
            f"Upgrading to schema version 2 found {before} postings but could copy only "
            f"{copied} (postings without their version). Nothing was changed."
        )
    for statement in _POSTGRES_V2_AFTER_COPY:
        connection.execute(text(statement))
    for table in ("memory_postings", "memory_embeddings"):
        _secure_postgres_table(connection, table)


# Version 3's DDL, frozen: the links table and its two lookups by end. The primary key leads
# with tenant, like every other; each end's index serves links() and erase() by that end.
_SQLITE_V3 = (
    """CREATE TABLE memory_links (
        tenant TEXT NOT NULL, app TEXT NOT NULL, subject TEXT NOT NULL, key TEXT NOT NULL,
        source TEXT NOT NULL, target TEXT NOT NULL, sealed BLOB NOT NULL,
        CONSTRAINT memory_links_pkey PRIMARY KEY (tenant, app, subject, key))""",
    "CREATE INDEX memory_links_source ON memory_links (tenant, app, source)",
    "CREATE INDEX memory_links_target ON memory_links (tenant, app, target)",
)
_POSTGRES_V3 = (
    f"""CREATE TABLE {PG_SCHEMA}.memory_links (
        tenant text NOT NULL, app text NOT NULL, subject text NOT NULL, key text NOT NULL,
        source text NOT NULL, target text NOT NULL, sealed bytea NOT NULL,
        CONSTRAINT memory_links_pkey PRIMARY KEY (tenant, app, subject, key))""",
    f"CREATE INDEX memory_links_source ON {PG_SCHEMA}.memory_links (tenant, app, source)",
    f"CREATE INDEX memory_links_target ON {PG_SCHEMA}.memory_links (tenant, app, target)",
)


def _migrate_v3(connection: Connection) -> None:
    postgres = connection.dialect.name == "postgresql"
    for statement in _POSTGRES_V3 if postgres else _SQLITE_V3:
        connection.execute(text(statement))
    if postgres:
        _secure_postgres_table(connection, "memory_links")


# Version 4's DDL, frozen: a version's blinded tags, keyed like its postings. The primary key
# leads with tenant and holds each tag's documents in order, so a filter by a tag reads one
# range of it; the index by document serves row loading and erase.
_SQLITE_V4 = (
    """CREATE TABLE memory_tags (
        tenant TEXT NOT NULL, app TEXT NOT NULL, subject TEXT NOT NULL, tag TEXT NOT NULL,
        doc INTEGER NOT NULL,
        CONSTRAINT memory_tags_pkey PRIMARY KEY (tenant, app, subject, tag, doc)
    ) WITHOUT ROWID""",
    # Every entry ends with the primary key's columns: the index covers the tag too.
    "CREATE INDEX memory_tags_doc ON memory_tags (tenant, doc)",
)
_POSTGRES_V4 = (
    f"""CREATE TABLE {PG_SCHEMA}.memory_tags (
        tenant text NOT NULL, app text NOT NULL, subject text NOT NULL, tag text NOT NULL,
        doc bigint NOT NULL,
        CONSTRAINT memory_tags_pkey PRIMARY KEY (tenant, app, subject, tag, doc))""",
    f"CREATE INDEX memory_tags_doc ON {PG_SCHEMA}.memory_tags (tenant, doc) INCLUDE (tag)",
)


def _migrate_v4(connection: Connection) -> None:
    postgres = connection.dialect.name == "postgresql"
    for statement in _POSTGRES_V4 if postgres else _SQLITE_V4:
        connection.execute(text(statement))
    if postgres:
        _secure_postgres_table(connection, "memory_tags")


# Version 5's DDL, frozen: each subject's live statistics and packed postings (read by
# drivers/db/_packs.py), and the current special rows (session-only or quarantined) by
# session, the few a search adds to the live set. The index's predicate is written exactly as
# _packs.special_clause() writes it, so SQLite's planner can prove a query implies it.
_SPECIAL = "valid_to IS NULL AND (session_only OR trust = 'untrusted')"
_SQLITE_V5 = (
    """CREATE TABLE memory_stats (
        tenant TEXT NOT NULL, app TEXT NOT NULL, subject TEXT NOT NULL, agent TEXT NOT NULL,
        docs INTEGER NOT NULL, total INTEGER NOT NULL, tail TEXT NOT NULL,
        waiting INTEGER NOT NULL, dead TEXT NOT NULL, changes INTEGER NOT NULL DEFAULT 0,
        CONSTRAINT memory_stats_pkey PRIMARY KEY (tenant, app, subject, agent)
    ) WITHOUT ROWID""",
    """CREATE TABLE memory_packs (
        tenant TEXT NOT NULL, app TEXT NOT NULL, subject TEXT NOT NULL, agent TEXT NOT NULL,
        term TEXT NOT NULL,
        upto INTEGER NOT NULL, postings BLOB NOT NULL,
        CONSTRAINT memory_packs_pkey PRIMARY KEY (tenant, app, subject, agent, term, upto)
    ) WITHOUT ROWID""",
    # Covering (doc is the rowid): the planner prefers it to memory_versions_cover.
    "CREATE INDEX memory_versions_special ON memory_versions "
    f"(tenant, app, subject, session, length, created_at, labels) WHERE {_SPECIAL}",
)
_POSTGRES_V5 = (
    f"""CREATE TABLE {PG_SCHEMA}.memory_stats (
        tenant text NOT NULL, app text NOT NULL, subject text NOT NULL, agent text NOT NULL,
        docs bigint NOT NULL, total bigint NOT NULL, tail text NOT NULL,
        waiting integer NOT NULL, dead text NOT NULL, changes bigint NOT NULL DEFAULT 0,
        CONSTRAINT memory_stats_pkey PRIMARY KEY (tenant, app, subject, agent))""",
    f"""CREATE TABLE {PG_SCHEMA}.memory_packs (
        tenant text NOT NULL, app text NOT NULL, subject text NOT NULL, agent text NOT NULL,
        term text NOT NULL,
        upto bigint NOT NULL, postings bytea NOT NULL,
        CONSTRAINT memory_packs_pkey PRIMARY KEY (tenant, app, subject, agent, term, upto))""",
    # Stored as it is: chunks are numpy records, already dense.
    f"ALTER TABLE {PG_SCHEMA}.memory_packs ALTER COLUMN postings SET STORAGE EXTERNAL",
    f"CREATE INDEX memory_versions_special ON {PG_SCHEMA}.memory_versions "
    f"(tenant, app, subject, session) INCLUDE (doc, length, created_at, labels) "
    f"WHERE {_SPECIAL}",
)


def _migrate_v5(connection: Connection) -> None:
    from mainsdk_memory.drivers.db import _packs  # it imports this module

    postgres = connection.dialect.name == "postgresql"
    for statement in _POSTGRES_V5 if postgres else _SQLITE_V5:
        connection.execute(text(statement))
    read = ("memory_versions", "memory_postings")
    if postgres:
        # As in version 2: the owner reads every tenant's rows for this transaction only.
        for table in read:
            connection.execute(text(f"ALTER TABLE {PG_SCHEMA}.{table} NO FORCE ROW LEVEL SECURITY"))
    _packs.rebuild(connection)
    if postgres:
        for table in read:
            connection.execute(text(f"ALTER TABLE {PG_SCHEMA}.{table} FORCE ROW LEVEL SECURITY"))
        for table in ("memory_stats", "memory_packs"):
            _secure_postgres_table(connection, table)


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema version: its number, what it does, and the DDL that gets there."""

    version: int
    description: str
    apply: Callable[[Connection], None]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "memory versions, postings and control records; "
        "PostgreSQL: app role, grants, row-level security",
        _migrate_v1,
    ),
    Migration(
        2,
        "integer document ids, postings keyed by them, a covering index for a read's scope; "
        "sealed embeddings (memory_embeddings, with row-level security on PostgreSQL)",
        _migrate_v2,
    ),
    Migration(
        3,
        "links between memories (memory_links, with row-level security on PostgreSQL)",
        _migrate_v3,
    ),
    Migration(
        4,
        "blinded tags of versions: caller keys and filterable fields (memory_tags, with "
        "row-level security on PostgreSQL)",
        _migrate_v4,
    ),
    Migration(
        5,
        "each subject's live statistics and packed postings, kept with every write, and an "
        "index of current session-only and quarantined rows: BM25 without a scan of the "
        "subject (memory_stats, memory_packs, with row-level security on PostgreSQL)",
        _migrate_v5,
    ),
)
#: The schema version this code reads and writes.
SCHEMA_VERSION = MIGRATIONS[-1].version


def stored_version(connection: Connection) -> int | None:
    """The database's schema version: ``None`` if it has no tables at all, ``0`` if it has
    tables but none of ours (a database you share with your app)."""
    if connection.dialect.name == "postgresql":
        found = connection.execute(
            select(func.to_regclass(f"{PG_SCHEMA}.{SCHEMA.name}").is_not(None))
        ).scalar_one()
        if not found:
            return 0
    else:
        names = set(
            connection.execute(
                text("SELECT name FROM sqlite_master WHERE type = 'table'")
            ).scalars()
        )
        if not names:
            return None
        if SCHEMA.name not in names:
            return 0
    return int(
        connection.execute(select(func.coalesce(func.max(SCHEMA.c.version), 0))).scalar_one()
    )


def check_version(found: int | None, safe_url: str) -> None:
    """Raise a :class:`ConfigurationError` that says what to do unless ``found`` is current."""
    if found is None or found == 0:
        raise ConfigurationError(
            f"The database at {safe_url} has no mainsdk-memory schema. Create it with: "
            f"memory db upgrade URL (schema version {SCHEMA_VERSION})."
        )
    if found < SCHEMA_VERSION:
        raise ConfigurationError(
            f"The database at {safe_url} has mainsdk-memory schema version {found}; this "
            f"version of mainsdk-memory needs {SCHEMA_VERSION}. Upgrade it with: "
            "memory db upgrade URL."
        )
    if found > SCHEMA_VERSION:
        raise ConfigurationError(
            f"The database at {safe_url} has mainsdk-memory schema version {found}, newer than "
            f"this version of mainsdk-memory knows ({SCHEMA_VERSION}). Upgrade the "
            "mainsdk-memory package; never downgrade a store."
        )


def apply_migrations(
    connection: Connection, found: int, *, now: datetime, progress: Progress | None = None
) -> int:
    """Apply every migration after ``found`` inside the caller's transaction; return the new
    version. The caller holds the lock that serialises upgrades. ``progress(done, total)`` is
    called after each migration applied (``(0, 0)`` when none is due)."""
    if found > SCHEMA_VERSION:
        check_version(found, "this URL")
    due = [migration for migration in MIGRATIONS if migration.version > found]
    for done, migration in enumerate(due, start=1):
        migration.apply(connection)
        connection.execute(
            insert(SCHEMA).values(
                version=migration.version, description=migration.description, applied_at=now
            )
        )
        if progress is not None:
            progress(done, len(due))
    if progress is not None and not due:
        progress(0, 0)
    return SCHEMA_VERSION
