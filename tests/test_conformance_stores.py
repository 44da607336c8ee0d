"""Every real driver in conftest.STORES passes the conformance suite (CI certifies them all).

A driver joins by adding its store factory to ``STORES``; nothing here names a driver. Each
check gets a fresh folder, and the store factory turns it into a URL once, so opening the
same folder again (as the concurrency checks do) reaches the same store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mainsdk_memory.conformance import Status, run_suite
from mainsdk_memory.drivers import Driver, open_driver
from tests import conftest
from tests.conftest import STORES


@pytest.mark.parametrize("store", sorted(STORES))
def test_every_store_driver_does_what_it_declares(store: str) -> None:
    urls: dict[Path, str] = {}

    def factory(folder: Path) -> Driver:
        if folder not in urls:
            urls[folder] = STORES[store](folder)
        return open_driver(urls[folder])

    try:
        report = run_suite(factory, name=f"conftest.STORES[{store!r}]")
    finally:
        release = getattr(conftest, "release_store", None)  # drops test databases, if any
        if callable(release):
            for url in urls.values():
                release(url)
    assert report.passed, report.summary()
    assert urls, "the suite opened no store"
    for name in ("protocol", "round_trip", "versions", "isolation", "pagination", "erase"):
        assert report[name].status is Status.PASSED, name
    ran = [c for r in report.capabilities for c in r.checks if c.status is Status.PASSED]
    assert len(ran) >= 15, report.summary()
