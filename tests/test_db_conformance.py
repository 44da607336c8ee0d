"""The db driver passes the driver conformance suite on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from _postgres import TestPostgres

from mainsdk_memory.conformance import Report, Status, run_suite
from mainsdk_memory.drivers.db._driver import DbDriver

DECLARED = {"text_search", "time_travel", "concurrent_writers", "erase"}


def _assert_passes(report: Report) -> None:
    assert report.passed, report.summary()
    for name in DECLARED:
        assert report[name].status is Status.PASSED, name
    assert report.driver == "db"


def test_sqlite_passes_every_declared_capability() -> None:
    _assert_passes(run_suite(lambda folder: DbDriver(f"sqlite:///{Path(folder) / 'm.db'}")))


def test_postgresql_passes_every_declared_capability(postgres: TestPostgres) -> None:
    _assert_passes(run_suite(lambda folder: DbDriver(postgres.database_for(Path(folder)))))
