"""Every real driver in conftest.STORES passes the conformance suite (CI certifies them all).

A driver joins by adding its store factory to ``STORES``; nothing here names a driver. The
checks share one store per driver: each works in tenants and apps of its own (random names
from its own seed), so they cannot see each other, and a busy store is the realistic case. It
also keeps database creation (seconds on PostgreSQL) out of the loop.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mainsdk_memory.conformance import Status, run_suite
from mainsdk_memory.drivers import Driver, open_driver
from tests import conftest
from tests.conftest import STORES


@pytest.mark.parametrize("store", sorted(STORES))
def test_every_store_driver_does_what_it_declares(store: str, tmp_path: Path) -> None:
    url = STORES[store](tmp_path)
    opened: list[Path] = []

    def factory(folder: Path) -> Driver:
        opened.append(folder)
        return open_driver(url)

    try:
        report = run_suite(factory, name=f"conftest.STORES[{store!r}]")
    finally:
        release = getattr(conftest, "release_store", None)  # drops a test database, if any
        if callable(release):
            release(url)
    assert report.passed, report.summary()
    assert len(set(opened)) > 30, "every check opens its own driver"
    for name in ("protocol", "round_trip", "versions", "isolation", "pagination", "erase"):
        assert report[name].status is Status.PASSED, name
    ran = [c for r in report.capabilities for c in r.checks if c.status is Status.PASSED]
    assert len(ran) >= 20, report.summary()
