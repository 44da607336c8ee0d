"""Shared fixtures: a fresh key store per test, and a memory store on every driver under test.

Behaviour tests take the ``memory`` fixture and so run on every driver in ``STORES``; a
driver is added to the whole suite by adding a store factory here, never by copying tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mainsdk_memory import Memory, tenant
from mainsdk_memory.keys import KeyStore


def _local_store(tmp_path: Path) -> str:
    return f"local:{tmp_path / 'store'}"


#: Store factories by driver name: each takes a fresh temporary folder and returns a URL.
STORES: dict[str, Callable[[Path], str]] = {
    "local": _local_store,
}


@pytest.fixture
def keys_path(tmp_path: Path) -> Path:
    """A new project key store, generated for this test only."""
    path = tmp_path / "keys"
    KeyStore.create(path)
    return path


@pytest.fixture(params=sorted(STORES))
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store URL on each driver under test."""
    return STORES[request.param](tmp_path)


@pytest.fixture
def memory(store_url: str, keys_path: Path) -> Iterator[Memory]:
    """A Memory on each driver under test, app ``app``."""
    with Memory.open(store_url, keys=keys_path, app="app") as opened:
        yield opened


@pytest.fixture
def acme() -> Iterator[str]:
    """Run the test inside tenant ``acme``."""
    with tenant.use("acme") as tenant_id:
        yield tenant_id
