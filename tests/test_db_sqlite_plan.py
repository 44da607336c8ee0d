"""The db driver's SQLite plans: right without statistics (SQLite only; PostgreSQL plans its
own way, and its speed is measured by the benchmarks)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from _db_rows import make_row, memory_id, random_terms
from sqlalchemy import event

from mainsdk_memory.drivers import Filter
from mainsdk_memory.drivers.db._driver import DbDriver

pytestmark = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


@pytest.fixture
def driver(store_url: str) -> Iterator[DbDriver]:
    with DbDriver(store_url) as opened:
        yield opened


def test_sqlite_ranks_from_the_covering_index_and_term_ranges_without_statistics(
    driver: DbDriver,
) -> None:
    # The driver never runs ANALYZE on SQLite, so the plan must be right without statistics:
    # the scope from memory_versions_cover alone, each query term's postings as one range of
    # the primary key (never a seek per scope id), and no read of the wide version rows except
    # the few candidates' tie keys, by rowid.
    rng = random.Random(8)
    for n in range(300):
        terms, length = random_terms(rng, [f"t_{i}" for i in range(6)], 6)
        driver.put(make_row(memory_id=memory_id(n), terms=terms, length=length))
    captured: list[tuple[str, object]] = []

    def record(
        _conn: object, _cursor: object, statement: str, parameters: object, *_: object
    ) -> None:
        captured.append((statement, parameters))

    event.listen(driver.engine, "before_cursor_execute", record)
    try:
        # A kind rule: the SQL ranking (the live set's packed path is the next test).
        where = Filter(
            tenant="acme", app="app", subjects=("p_ada", "tenant"), kinds=frozenset({"fact"})
        )
        assert driver.search(where, [{"t_1"}, {"t_2", "t_3"}], top_k=5)
    finally:
        event.remove(driver.engine, "before_cursor_execute", record)
    statement, parameters = next((s, p) for s, p in captured if "raw" in s)
    with driver.engine.connect() as connection:
        plan = [
            row[3]
            for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
        ]
    reads = [line for line in plan if line.startswith(("SCAN main.", "SEARCH main."))]
    assert reads == [
        "SEARCH main.memory_postings USING PRIMARY KEY "
        "(tenant=? AND app=? AND subject=? AND term=?)",
        "SEARCH main.memory_versions USING COVERING INDEX memory_versions_cover "
        "(tenant=? AND app=? AND subject=? AND valid_to=?)",
        "SEARCH main.memory_versions USING INTEGER PRIMARY KEY (rowid=?)",
    ], plan


def test_the_packed_path_reads_by_index_only_whatever_the_subjects_size(
    driver: DbDriver,
) -> None:
    # The live set's path: statistics, chunks and tail by primary key, the session's special
    # rows from memory_versions_special, rows past retention from a range of the covering
    # index; never a scan, and never the subject's entries of memory_versions_cover whole.
    rng = random.Random(8)
    rows = []
    for n in range(300):
        terms, length = random_terms(rng, [f"t_{i}" for i in range(6)], 6)
        rows.append(make_row(memory_id=memory_id(n), terms=terms, length=length))
    driver.bulk_put(rows)
    for n in range(5):  # a tail, and the session's own special rows
        driver.put(make_row(memory_id=memory_id(1000 + n), terms={"t_1": 1}, length=1))
        driver.put(
            make_row(
                memory_id=memory_id(2000 + n),
                session="s1",
                session_only=True,
                terms={"t_2": 1},
                length=1,
            )
        )
    captured: list[tuple[str, object]] = []

    def record(
        _conn: object, _cursor: object, statement: str, parameters: object, *_: object
    ) -> None:
        captured.append((statement, parameters))

    where = Filter(
        tenant="acme",
        app="app",
        subjects=("p_ada", "tenant"),
        session="s1",
        retention=(("personal", rows[0].created_at),),
    )
    event.listen(driver.engine, "before_cursor_execute", record)
    try:
        assert driver.search(where, [{"t_1"}, {"t_2", "t_3"}], top_k=5)
    finally:
        event.remove(driver.engine, "before_cursor_execute", record)
    reads: set[str] = set()
    with driver.engine.connect() as connection:
        for statement, parameters in captured:
            if not statement.lstrip().startswith("SELECT"):
                continue
            plan = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
            reads |= {row[3] for row in plan if row[3].startswith(("SCAN", "SEARCH"))}
    assert not [line for line in reads if line.startswith("SCAN")], reads
    assert {
        "SEARCH main.memory_stats USING PRIMARY KEY (tenant=? AND app=? AND subject=?)",
        "SEARCH main.memory_packs USING PRIMARY KEY "
        "(tenant=? AND app=? AND subject=? AND agent=? AND term=?)",
        "SEARCH main.memory_postings USING PRIMARY KEY "
        "(tenant=? AND app=? AND subject=? AND term=? AND doc=?)",
        "SEARCH memory_versions USING INDEX memory_versions_special "
        "(tenant=? AND app=? AND subject=? AND session=?)",
        "SEARCH main.memory_versions USING COVERING INDEX memory_versions_cover "
        "(tenant=? AND app=? AND subject=? AND valid_to=? AND created_at<?)",
    } <= reads, reads


def test_sqlite_finds_a_memory_by_one_tag_from_the_tag_index_not_the_subjects_rows(
    driver: DbDriver,
) -> None:
    # The core finds a memory by its caller key with list(tags=({key},), limit=2): the plan
    # must start from that tag's range of memory_tags and seek each of its versions by rowid,
    # never scan the subject's entries of memory_versions_cover (ADR 0092; issue 17).
    rows = [
        make_row(memory_id=memory_id(n), tags=frozenset({f"{n:032x}", "f" * 32}))
        for n in range(300)
    ]
    driver.bulk_put(rows)
    captured: list[tuple[str, object]] = []

    def record(
        _conn: object, _cursor: object, statement: str, parameters: object, *_: object
    ) -> None:
        captured.append((statement, parameters))

    key = frozenset({f"{123:032x}"})
    by_key = Filter(tenant="acme", app="app", subjects=("p_ada", "tenant"), tags=(key,))
    absent = Filter(
        tenant="acme",
        app="app",
        subjects=("p_ada",),
        tags=(key | {f"{7:032x}"}, frozenset({"f" * 32})),
        tags_absent=frozenset({f"{7:032x}"}),
    )
    event.listen(driver.engine, "before_cursor_execute", record)
    try:
        assert driver.list(by_key, limit=2) == [rows[123]]
        assert driver.list(absent, limit=2) == [rows[123]]
        assert [row for row, _ in driver.search(by_key, [{"t_a"}], top_k=2)] == [rows[123]]
    finally:
        event.remove(driver.engine, "before_cursor_execute", record)
    pages = [(s, p) for s, p in captured if "LIMIT" in s and "memory_tags" in s]
    assert len(pages) == 3  # the two lists and the search's candidates
    tag_range = (
        "SEARCH main.memory_tags USING PRIMARY KEY (tenant=? AND app=? AND subject=? AND tag=?)"
    )
    with driver.engine.connect() as connection:
        for statement, parameters in pages:
            plan = [
                row[3]
                for row in connection.exec_driver_sql(
                    "EXPLAIN QUERY PLAN " + statement, parameters
                )
            ]
            reads = [line for line in plan if line.startswith(("SCAN main.", "SEARCH main."))]
            assert tag_range in reads, plan
            versions = [line for line in reads if "memory_versions" in line]
            assert versions, plan
            # Every read of memory_versions is a seek by rowid: no range of the covering index.
            assert all("INTEGER PRIMARY KEY (rowid=?)" in line for line in versions), plan
