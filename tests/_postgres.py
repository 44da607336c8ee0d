"""A real PostgreSQL for the test session, and a fresh database for each test that asks.

The server is ``pgserver`` (PostgreSQL 16 with pgvector, from PyPI) in a temporary folder,
started once per session on first use; or, when ``MAINSDK_TEST_POSTGRES_URL`` is set, the
server at that URL (its user must be a superuser: the tests create databases and check
row-level security from outside the app role). Each store is a new database cloned from a
template that ``memory db upgrade`` prepared once, so a test pays for a file copy, not DDL.

Under ``CI=true`` a server that cannot start fails the tests; elsewhere it skips them with
the reason.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import URL, make_url

__all__ = ["LazyServer", "TestPostgres", "postgres_store", "release_store",
           "second_postgres", "session_postgres", "stop_session_postgres"]

ENV_URL = "MAINSDK_TEST_POSTGRES_URL"


class TestPostgres:
    """A PostgreSQL server the tests may create and drop databases on."""

    __test__ = False  # not a test class, despite the name

    def __init__(
        self, admin: URL, *, server: Any = None, folder: Path | None = None, tag: str = ""
    ) -> None:
        self.admin = admin.set(drivername="postgresql+psycopg")
        self._server = server
        self._folder = folder
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._prefix = f"mainsdk_t{os.getpid()}{tag}"
        self._ours: set[str] = set()
        self.template = f"{self._prefix}_template"
        if server is not None:
            # A throwaway test server needs no crash safety: skip fsyncs so each test's
            # database copy is quick.
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                self._execute(f"ALTER SYSTEM SET {setting} = off")
            self._execute("SELECT pg_reload_conf()")
        self._execute(f'DROP DATABASE IF EXISTS "{self.template}" WITH (FORCE)')
        self._execute(f'CREATE DATABASE "{self.template}"')
        from mainsdk_memory.drivers.db import upgrade

        upgrade(self.url(self.template))
        self._ours.add(self.template)

    @classmethod
    def start(cls, tag: str = "") -> TestPostgres:
        """Use ``MAINSDK_TEST_POSTGRES_URL``, or start pgserver in a temporary folder.

        ``tag`` names a second server's databases apart (with ``MAINSDK_TEST_POSTGRES_URL``
        both are that one server, in databases of their own)."""
        configured = os.environ.get(ENV_URL)
        if configured:
            return cls(make_url(configured), tag=tag)
        folder = Path(tempfile.mkdtemp(prefix="mainsdk-pg-"))
        with warnings.catch_warnings():
            # pgserver keeps its lock under XDG_RUNTIME_DIR and warns when it is unset.
            warnings.simplefilter("ignore")
            import pgserver

            server = pgserver.get_server(folder / "data", cleanup_mode="delete")
        return cls(make_url(server.get_uri()), server=server, folder=folder, tag=tag)

    def url(self, database: str) -> str:
        """A store URL (``postgresql+psycopg://…``) for ``database`` on this server."""
        return self.admin.set(database=database).render_as_string(hide_password=False)

    def conninfo(self, database: str | None = None) -> str:
        """A libpq URL for psycopg, to ``database`` or the admin database."""
        url = self.admin.set(drivername="postgresql")
        if database is not None:
            url = url.set(database=database)
        return url.render_as_string(hide_password=False)

    def _execute(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.conninfo(), autocommit=True) as connection:
            connection.execute(statement.encode())

    def new_database(self, *, schema: bool = True) -> str:
        """A new, empty database: with the current schema (from the template) or bare."""
        with self._lock:
            name = f"{self._prefix}_{next(self._names)}"
            self._ours.add(name)
        if schema:
            self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}" '
                          "STRATEGY FILE_COPY")
        else:
            self._execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop the test database behind ``url`` if this object made it."""
        name = make_url(url).database
        if name in self._ours and name != self.template:
            self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            self._ours.discard(name)

    def stop(self) -> None:
        """Drop every database made here; stop and delete a pgserver this object started."""
        if self._server is None:
            for name in sorted(self._ours):
                self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        else:
            self._server.cleanup()
        self._ours.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


class LazyServer:
    """Starts a server on first use, once; remembers a failure instead of retrying it.

    When the server cannot start, every later use fails the test under ``CI=true`` and
    skips it elsewhere, with the reason.
    """

    def __init__(self, start: Callable[[], TestPostgres]) -> None:
        self._start = start
        self._lock = threading.Lock()
        self.server: TestPostgres | None = None
        self._failure: str | None = None

    def get(self) -> TestPostgres:
        """The server, started if it was not."""
        with self._lock:
            if self.server is None and self._failure is None:
                try:
                    self.server = self._start()
                except Exception as exc:
                    self._failure = (
                        f"PostgreSQL for the tests could not start: {type(exc).__name__}: {exc}"
                    )
            if self.server is not None:
                return self.server
        assert self._failure is not None
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(self._failure)
        pytest.skip(self._failure)

    def stop(self) -> None:
        """Stop the server if it was started."""
        with self._lock:
            if self.server is not None:
                self.server.stop()
                self.server = None


_SESSION = LazyServer(TestPostgres.start)
#: A second server, for the residency tests' second region (started only if they run).
_SECOND = LazyServer(lambda: TestPostgres.start(tag="b"))


def session_postgres() -> TestPostgres:
    """The session's PostgreSQL, started on first use; fails under CI if it cannot start."""
    return _SESSION.get()


def second_postgres() -> TestPostgres:
    """A second PostgreSQL server (its own pgserver and data folder), started on first use."""
    return _SECOND.get()


def stop_session_postgres() -> None:
    """Stop the session's PostgreSQL servers that were started."""
    try:
        _SESSION.stop()
    finally:
        _SECOND.stop()


def postgres_store() -> str:
    """A fresh PostgreSQL store URL with the current schema."""
    return session_postgres().new_database()


def release_store(url: str) -> None:
    """Drop a test database made by :func:`postgres_store`; other URLs are left alone."""
    if _SESSION.server is not None and url.startswith("postgresql"):
        _SESSION.server.drop(url)
