"""Shared fixtures: a fresh key store per test, and a memory store on every driver under test.

Behaviour tests take the ``memory`` fixture and so run on every driver in ``STORES``; a
driver is added to the whole suite by adding a store factory here, never by copying tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _postgres import (
    TestPostgres,
    postgres_store,
    release_store,
    session_postgres,
    stop_session_postgres,
)

from mainsdk_memory import Memory, tenant
from mainsdk_memory.audit import MemorySink
from mainsdk_memory.keys import KeyStore


def _local_store(tmp_path: Path) -> str:
    return f"local:{tmp_path / 'store'}"


def _sqlite_store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


def _postgresql_store(tmp_path: Path) -> str:
    return postgres_store()  # a new database on the session's PostgreSQL


#: Store factories by driver name: each takes a fresh temporary folder and returns a URL.
STORES: dict[str, Callable[[Path], str]] = {
    "local": _local_store,
    "sqlite": _sqlite_store,
    "postgresql": _postgresql_store,
}


@pytest.fixture
def keys_path(tmp_path: Path) -> Path:
    """A new project key store, generated for this test only."""
    path = tmp_path / "keys"
    KeyStore.create(path)
    return path


@pytest.fixture(params=sorted(STORES))
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty store URL on each driver under test (dropped afterwards if a database)."""
    url = STORES[request.param](tmp_path)
    yield url
    release_store(url)


@pytest.fixture(scope="session")
def postgres() -> TestPostgres:
    """The session's real PostgreSQL (started once, on first use)."""
    return session_postgres()


@pytest.fixture(scope="session", autouse=True)
def _stop_postgres_after_the_session() -> Iterator[None]:
    yield
    stop_session_postgres()


@pytest.fixture
def memory(store_url: str, keys_path: Path) -> Iterator[Memory]:
    """A Memory on each driver under test, app ``app``."""
    with Memory.open(store_url, keys=keys_path, app="app") as opened:
        yield opened


@pytest.fixture
def sink() -> MemorySink:
    """The audit events of the test's audited Memory."""
    return MemorySink()


@pytest.fixture
def audited(store_url: str, keys_path: Path, sink: MemorySink) -> Iterator[Memory]:
    """A Memory on each driver under test, app ``app``, its audit events in ``sink``."""
    with Memory.open(store_url, keys=keys_path, app="app", audit=sink) as opened:
        yield opened


@pytest.fixture
def acme() -> Iterator[str]:
    """Run the test inside tenant ``acme``."""
    with tenant.use("acme") as tenant_id:
        yield tenant_id
