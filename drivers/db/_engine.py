"""Connections for the db driver: URL checks, SQLite settings, and one scoped transaction per call.

Every call of the driver runs in exactly one database transaction (:func:`transaction`).

- SQLite: the driver emits ``BEGIN IMMEDIATE`` itself for writes (the write lock is taken up
  front, so two writers queue instead of failing on a lock upgrade) and ``BEGIN`` for reads,
  so a read sees one snapshot. Every connection gets ``PRAGMA secure_delete = ON`` (deleted
  cells and freed pages are overwritten with zeros), the rollback journal (``journal_mode =
  DELETE``: no write-ahead log keeps old page images after a forget) and ``synchronous = FULL``.
- PostgreSQL: every transaction starts with ``SET LOCAL ROLE mainsdk_memory_app`` (a role
  without BYPASSRLS, set as ``set_config('role', …, true)``) and ``set_config('mainsdk.tenant',
  <tenant>, true)``, in one statement; both end with the
  transaction, so a pooled connection never carries one call's tenant into the next.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, Engine, create_engine, event, func, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

from mainsdk_memory._errors import ConfigurationError, StoreError

__all__ = [
    "APP_ROLE",
    "PG_SCHEMA",
    "TENANT_SETTING",
    "Target",
    "make_engine",
    "parse_url",
    "transaction",
    "translated",
]

#: The PostgreSQL schema that holds the driver's tables.
PG_SCHEMA = "mainsdk_memory"
#: The PostgreSQL role every transaction runs as: NOLOGIN, no BYPASSRLS, no SUPERUSER.
APP_ROLE = "mainsdk_memory_app"
#: The transaction-local setting the row-level security policies compare ``tenant`` with.
TENANT_SETTING = "mainsdk.tenant"

_WRITE = "mainsdk_write"  # execution option read by the SQLite BEGIN hook
_SQLITE_BUSY_SECONDS = 30.0
_SQLITE_MINIMUM = (3, 35, 0)

Dialect = Literal["sqlite", "postgresql"]

_URL_HELP = (
    "Use 'sqlite:///relative/path.db', 'sqlite:////absolute/path.db' or "
    "'postgresql+psycopg://user@host:5432/database'."
)


@dataclass(frozen=True, slots=True)
class Target:
    """A checked store URL: which database, and for SQLite the file."""

    url: URL
    dialect: Dialect
    path: Path | None
    """The SQLite database file; ``None`` for PostgreSQL."""

    def safe(self) -> str:
        """The URL with its password hidden, for messages."""
        return self.url.render_as_string(hide_password=True)


def parse_url(raw: str) -> Target:
    """Check a store URL and normalise it; raise :class:`ConfigurationError` if it is unusable.

    ``postgresql://`` means ``postgresql+psycopg://`` (psycopg 3 is the only PostgreSQL
    DBAPI the driver supports). SQLite needs a file: an in-memory database has no durable
    erase and vanishes with its connection.
    """
    if not isinstance(raw, str):
        raise ConfigurationError(f"A database store URL is a string. {_URL_HELP}")
    try:
        url = make_url(raw)
    except (ArgumentError, ValueError) as exc:
        raise ConfigurationError(f"The store URL is not a valid database URL. {_URL_HELP}") from exc
    backend, _, dbapi = url.drivername.partition("+")
    if backend == "sqlite":
        if dbapi not in ("", "pysqlite"):
            raise ConfigurationError(
                f"The SQLite DBAPI {dbapi!r} is not supported; use 'sqlite:///path.db'."
            )
        database = url.database or ""
        if not database or database == ":memory:" or database.startswith("file:"):
            raise ConfigurationError(
                "A SQLite store needs a database file, for example 'sqlite:///memories.db'; "
                "in-memory and URI-style databases are not supported."
            )
        if url.query:
            raise ConfigurationError("A SQLite store URL takes no query options.")
        path = Path(database).expanduser().absolute()
        if not path.parent.is_dir():
            raise ConfigurationError(
                f"The folder of the SQLite store {path} does not exist; create it first."
            )
        return Target(
            url=url.set(drivername="sqlite+pysqlite", database=str(path)),
            dialect="sqlite",
            path=path,
        )
    if backend in ("postgresql", "postgres"):
        if dbapi not in ("", "psycopg"):
            raise ConfigurationError(
                f"The PostgreSQL DBAPI {dbapi!r} is not supported; use "
                "'postgresql+psycopg://…' (psycopg 3)."
            )
        if not url.database:
            raise ConfigurationError(f"The PostgreSQL store URL names no database. {_URL_HELP}")
        return Target(url=url.set(drivername="postgresql+psycopg"), dialect="postgresql", path=None)
    raise ConfigurationError(f"The db driver does not handle {backend!r} URLs. {_URL_HELP}")


def _create_sqlite_file(path: Path) -> None:
    # Created 0600 before SQLite opens it; SQLite gives its journal the same mode.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise ConfigurationError(
            f"The SQLite store {path} cannot be created: {exc.strerror}."
        ) from exc
    os.close(fd)


def _check_sqlite_version() -> None:
    # RETURNING (the new version's document id) and AS MATERIALIZED (search) need 3.35.
    import sqlite3

    if sqlite3.sqlite_version_info < _SQLITE_MINIMUM:
        raise ConfigurationError(
            f"The db driver needs SQLite {'.'.join(map(str, _SQLITE_MINIMUM))} or newer; this "
            f"Python's sqlite3 module uses SQLite {sqlite3.sqlite_version}. Use a newer Python "
            "build, or PostgreSQL."
        )


def make_engine(target: Target, *, pool_size: int = 5) -> Engine:
    """An engine for ``target``, with the per-connection settings the driver relies on.

    Parameters are hidden from SQLAlchemy's error messages and logs (``hide_parameters``):
    they are sealed blobs, blind terms and pseudonyms, which have no place in a log either.
    """
    try:
        if target.dialect == "sqlite":
            assert target.path is not None  # noqa: S101 - parse_url sets it for SQLite
            _check_sqlite_version()
            _create_sqlite_file(target.path)
            engine = create_engine(
                target.url,
                hide_parameters=True,
                pool_size=pool_size,
                connect_args={"timeout": _SQLITE_BUSY_SECONDS, "check_same_thread": False},
                execution_options={"schema_translate_map": {PG_SCHEMA: None}},
            )
            event.listen(engine, "connect", _sqlite_connect)
            event.listen(engine, "begin", _sqlite_begin)
            return engine
        return create_engine(
            target.url,
            hide_parameters=True,
            pool_size=pool_size,
            pool_pre_ping=True,
            # No automatic server-side prepared statements: after a few runs PostgreSQL may
            # switch a prepared search to a generic plan, blind to the tenant and the terms,
            # which was measured at 100x slower than the custom plan.
            connect_args={"application_name": "mainsdk-memory", "prepare_threshold": None},
        )
    except (ImportError, NoSuchModuleError) as exc:
        raise ConfigurationError(
            "The db driver's database library is not installed: pip install 'mainsdk-memory[db]'."
        ) from exc
    except (ArgumentError, TypeError) as exc:
        raise ConfigurationError(
            f"The store URL has options the database refuses. {_URL_HELP}"
        ) from exc


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Transactions are begun by _sqlite_begin, not by the sqlite3 module's implicit BEGIN
    # (which begins only before writes, so reads would not see one snapshot).
    dbapi_connection.isolation_level = None
    # ln() for BM25's idf in SQL, the same function Python's arithmetic uses.
    dbapi_connection.create_function("ln", 1, math.log, deterministic=True)
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA secure_delete = ON")
        cursor.execute("PRAGMA synchronous = FULL")
        mode = cursor.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
        secure = cursor.execute("PRAGMA secure_delete").fetchone()[0]
    finally:
        cursor.close()
    if str(mode).lower() != "delete" or secure != 1:
        raise ConfigurationError(
            "The SQLite store could not be switched to secure delete with a rollback journal "
            "(another process may hold it in WAL mode); close other users of the file."
        )


def _sqlite_begin(connection: Connection) -> None:
    write = connection.get_execution_options().get(_WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


@contextmanager
def transaction(
    engine: Engine, dialect: Dialect, *, tenant: str | None, write: bool
) -> Iterator[Connection]:
    """One transaction, committed when the block ends, rolled back if it raises.

    On PostgreSQL the transaction runs as :data:`APP_ROLE` with the tenant setting set to
    ``tenant``; ``tenant=None`` runs as the URL's own user with no tenant (schema checks,
    upgrades, dumps). Reads run at REPEATABLE READ, read only, so a search's statistics and
    postings come from one snapshot.
    """
    with engine.connect() as connection:
        if dialect == "sqlite":
            connection.execution_options(**{_WRITE: write})
        elif not write:
            connection.execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True
            )
        with connection.begin():
            if dialect == "postgresql" and tenant is not None:
                # One round trip: set_config('role', ..., true) is SET LOCAL ROLE.
                connection.execute(
                    select(
                        func.set_config("role", APP_ROLE, True),
                        func.set_config(TENANT_SETTING, tenant, True),
                    )
                )
            yield connection


def _describe(exc: SQLAlchemyError) -> str:
    """The error's class and database code, never its message (it may quote row values)."""
    orig = getattr(exc, "orig", None)
    kind = type(orig if orig is not None else exc).__name__
    code = getattr(orig, "sqlstate", None) or getattr(orig, "sqlite_errorname", None)
    return f"{kind} {code}" if code else kind


@contextmanager
def translated(action: str, *, connecting: bool = False) -> Iterator[None]:
    """Turn SQLAlchemy and DBAPI errors raised inside the block into :class:`StoreError`.

    The message names the action and the error's class and code. With ``connecting``, it
    also carries the first line of the database's message, which at that stage is about
    the server, the user or the database, never about stored rows.
    """
    try:
        yield
    except SQLAlchemyError as exc:
        what = _describe(exc)
        if connecting:
            orig = getattr(exc, "orig", None)
            first = str(orig if orig is not None else exc).strip().splitlines()
            if first:
                what = f"{what}: {first[0][:300]}"
        if isinstance(exc, DBAPIError) and exc.connection_invalidated:
            what = f"the connection was lost ({what})"
        advice = (
            "Check the URL, that the database server is running and that this user may connect."
            if connecting
            else "Each call is one transaction: a call that failed before its commit "
            "changed nothing. Check the database and retry."
        )
        raise StoreError(f"The database store failed while {action} ({what}). {advice}") from exc
