"""The db driver's packed live postings: exact BM25 through every write, nothing left by erase.

Chunks and tails are made tiny here (a tail of 3 versions, chunks of 4 postings, the
candidates cut at k + 16 however few) so a few
dozen writes pack, merge, split, close and erase many times; every search is compared with
:func:`bm25_rank` over the rows the test knows are stored, and the statistics with a count
of the live versions.
"""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Iterator
from datetime import timedelta

import numpy as np
import pytest
from _db_rows import T0, TRUSTS, instant, make_row, memory_id, random_terms, recorded_statements
from sqlalchemy import select

from mainsdk_memory.drivers import Filter, StoredRow, bm25_rank
from mainsdk_memory.drivers.db import _packs, upgrade
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.drivers.db._engine import transaction
from mainsdk_memory.drivers.db._schema import PACKS, STATS, VERSIONS

pytestmark = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_packs, "TAIL", 3)
    monkeypatch.setattr(_packs, "CHUNK", 4)
    monkeypatch.setattr(_packs, "_SMALL", 0)  # the candidates' cut at k + 16, even here


@pytest.fixture
def driver(store_url: str) -> Iterator[DbDriver]:
    with DbDriver(store_url) as opened:
        yield opened


def _same(got: list[tuple[StoredRow, float]], want: list[tuple[StoredRow, float]]) -> None:
    assert [(r.memory_id, r.version) for r, _ in got] == [(r.memory_id, r.version) for r, _ in want]
    for (_, score), (_, expected) in zip(got, want, strict=True):
        assert abs(score - expected) <= 1e-9
    assert [row for row, _ in got] == [row for row, _ in want]


def _packed(driver: DbDriver, tenant: str) -> dict[tuple[str, str], list[int]]:
    """Every chunk's documents, by (subject, term), as stored."""
    k = PACKS.c
    found: dict[tuple[str, str, str], list[int]] = {}
    with transaction(driver.engine, driver.dialect, tenant=tenant, write=False) as connection:
        for subject, agent, term, upto, blob in connection.execute(
            select(k.subject, k.agent, k.term, k.upto, k.postings)
            .where(k.tenant == tenant)
            .order_by(k.subject, k.agent, k.term, k.upto)
        ):
            docs = np.frombuffer(bytes(blob), dtype=_packs._RECORD)["doc"].tolist()
            assert docs == sorted(docs) and docs[-1] == upto  # ordered, keyed by the last
            assert len(docs) <= _packs.CHUNK
            found.setdefault((subject, agent, term), []).extend(docs)
    by_term: dict[tuple[str, str], list[int]] = {}
    for (subject, _agent, term), docs in found.items():
        assert docs == sorted(set(docs))  # a term's chunks cover disjoint, rising ranges
        by_term.setdefault((subject, term), []).extend(docs)
    return {key: sorted(docs) for key, docs in by_term.items()}


def _stats(driver: DbDriver, tenant: str) -> dict[tuple[str, str], tuple[int, int]]:
    s = STATS.c
    stats: dict[tuple[str, str], tuple[int, int]] = {}
    with transaction(driver.engine, driver.dialect, tenant=tenant, write=False) as connection:
        for app, subject, docs, total in connection.execute(
            select(s.app, s.subject, s.docs, s.total).where(s.tenant == tenant)
        ):
            if docs or total:
                before = stats.get((app, subject), (0, 0))
                stats[(app, subject)] = (before[0] + int(docs), before[1] + int(total))
    return stats


def _doc_ids(driver: DbDriver, tenant: str) -> set[int]:
    v = VERSIONS.c
    with transaction(driver.engine, driver.dialect, tenant=tenant, write=False) as connection:
        return set(connection.execute(select(v.doc).where(v.tenant == tenant)).scalars())


def _live_stats(rows: dict[tuple[str, int], StoredRow]) -> dict[tuple[str, str], tuple[int, int]]:
    stats: dict[tuple[str, str], tuple[int, int]] = {}
    for row in rows.values():
        if _packs.is_live(row):
            docs, total = stats.get((row.app, row.subject), (0, 0))
            stats[(row.app, row.subject)] = (docs + 1, total + row.length)
    return stats


def _filters(rng: random.Random, tenant: str) -> list[Filter]:
    """Filters the packed path answers: sessions, the person's view, retention rules."""
    subjects = rng.choice([("p_ada", "tenant"), ("p_ada",), ("p_bob", "tenant")])
    return [
        Filter(tenant=tenant, app="app", subjects=subjects),
        Filter(tenant=tenant, app="app", subjects=subjects, written_by=rng.choice(["bot", "aide"])),
        Filter(
            tenant=tenant,
            app="app",
            subjects=subjects,
            session="s2",
            written_by="aide",
            retention=(("personal", instant(rng)),),
        ),
        Filter(tenant=tenant, app="app", subjects=subjects, session=rng.choice(["s1", "s2"])),
        Filter(tenant=tenant, app="app", subjects=subjects, any_session=True),
        Filter(
            tenant=tenant,
            app="app",
            subjects=subjects,
            session="s1",
            retention=(("health", instant(rng)), ("personal", instant(rng))),
        ),
    ]


def test_search_stays_exact_through_puts_revisions_and_erases(
    small: None, driver: DbDriver
) -> None:
    rng = random.Random(20261202)
    vocabulary = [f"t_{i}" for i in range(8)]
    tenant = "acme"
    stored: dict[tuple[str, int], StoredRow] = {}  # (memory id, version) -> row
    current: dict[str, StoredRow] = {}
    serial = 0
    for step in range(90):
        action = rng.random()
        if action < 0.55 or not current:
            serial += 1
            terms, length = random_terms(rng, vocabulary, rng.randint(1, 6))
            start = instant(rng)
            session = rng.choice([None, None, "s1", "s2"])
            row = make_row(
                tenant=tenant,
                subject=rng.choice(["p_ada", "p_ada", "p_bob", "tenant"]),
                memory_id=memory_id(serial),
                labels=rng.choice([("personal",), ("none",), ("personal", "health")]),
                trust=rng.choice(TRUSTS),
                agent=rng.choice(["bot", "bot", "aide"]),
                session=session,
                session_only=session is not None and rng.random() < 0.4,
                created_at=start,
                recorded_at=start,
                valid_from=start,
                terms=terms,
                length=length,
            )
            driver.put(row)
            stored[(row.memory_id, 1)] = current[row.memory_id] = row
        elif action < 0.8:
            old = current[rng.choice(sorted(current))]
            terms, length = random_terms(rng, vocabulary, rng.randint(1, 6))
            when = old.valid_from + timedelta(seconds=1)
            new = dataclasses.replace(
                old,
                version=old.version + 1,
                valid_from=when,
                recorded_at=when,
                trust=rng.choice(TRUSTS),
                agent=rng.choice([old.agent, old.agent, "aide"]),  # another agent revises
                terms=terms,
                length=length,
            )
            driver.put(new, closes=old.version)
            stored[(old.memory_id, old.version)] = dataclasses.replace(old, valid_to=when)
            stored[(new.memory_id, new.version)] = current[new.memory_id] = new
        else:
            gone = current.pop(rng.choice(sorted(current)))
            driver.erase(tenant, gone.app, gone.subject, gone.memory_id)
            for key in [key for key in stored if key[0] == gone.memory_id]:
                del stored[key]
        if step % 6 == 5:
            assert _stats(driver, tenant) == _live_stats(stored)
            packed = _packed(driver, tenant)
            alive = _doc_ids(driver, tenant)
            assert {doc for docs in packed.values() for doc in docs} <= alive  # erased: gone
            for where in _filters(rng, tenant):
                query = [set(rng.sample(vocabulary, rng.choice([1, 2]))) for _ in range(2)]
                top_k = rng.choice([1, 3, 50])
                want = bm25_rank([r for r in stored.values() if where.matches(r)], query, top_k)
                _same(driver.search(where, query, top_k=top_k), want)
    assert any(len(docs) > _packs.CHUNK for docs in _packed(driver, tenant).values())  # split


def test_ties_across_the_candidates_cut_are_ranked_exactly(small: None, driver: DbDriver) -> None:
    # 40 documents tie; the cut at top_k + 16 candidates falls inside the tie.
    rng = random.Random(9)
    rows = [
        make_row(
            memory_id=memory_id(n),
            trust=rng.choice(TRUSTS[:2]),
            recorded_at=T0 + timedelta(microseconds=rng.randint(0, 4)),
            terms={"t_x": 1, "t_pad": 2},
            length=3,
        )
        for n in range(40)
    ]
    rows += [make_row(memory_id=memory_id(100 + n), terms={"t_pad": 1}, length=1) for n in range(9)]
    for row in rows:
        driver.put(row)
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    with recorded_statements(driver) as seen:
        got = driver.search(where, [{"t_x"}], top_k=5)
    _same(got, bm25_rank(rows, [{"t_x"}], 5))
    assert not any("raw" in statement for statement in seen)  # the packed path, not SQL's
    assert len(_packed(driver, "acme")[("p_ada", "t_x")]) > 30  # most of it packed


def test_an_erase_leaves_no_posting_of_the_memory_in_any_chunk(
    small: None, driver: DbDriver
) -> None:
    for n in range(12):
        driver.put(make_row(memory_id=memory_id(n), terms={"t_a": 1, f"t_{n}": 2}, length=3))
    first = make_row(memory_id=memory_id(0), terms={"t_a": 1, "t_0": 2}, length=3)
    driver.put(
        dataclasses.replace(first, version=2, valid_from=T0 + timedelta(seconds=1)), closes=1
    )
    with transaction(driver.engine, driver.dialect, tenant="acme", write=False) as connection:
        erased_docs = set(
            connection.execute(
                select(VERSIONS.c.doc).where(VERSIONS.c.memory_id.in_([memory_id(0), memory_id(5)]))
            ).scalars()
        )
    assert len(erased_docs) == 3  # both versions of memory 0, and memory 5
    assert erased_docs & {doc for docs in _packed(driver, "acme").values() for doc in docs}
    driver.erase("acme", "app", "p_ada", memory_id(0))
    driver.erase("acme", "app", "p_ada", memory_id(5))
    packed = _packed(driver, "acme")
    assert not erased_docs & {doc for docs in packed.values() for doc in docs}
    assert ("p_ada", "t_0") not in packed and ("p_ada", "t_5") not in packed
    s = STATS.c
    with transaction(driver.engine, driver.dialect, tenant="acme", write=False) as connection:
        tail, dead = connection.execute(
            select(s.tail, s.dead).where(s.subject == "p_ada", s.agent == "bot")
        ).one()
    assert not {str(doc) for doc in erased_docs} & set(f"{tail}{dead}".split(","))
    assert _stats(driver, "acme") == {("app", "p_ada"): (10, 30)}


def test_a_bulk_load_is_packed_and_ranks_exactly(small: None, driver: DbDriver) -> None:
    rng = random.Random(3)
    vocabulary = [f"t_{i}" for i in range(6)]
    rows = []
    for n in range(30):
        terms, length = random_terms(rng, vocabulary, rng.randint(1, 5))
        rows.append(make_row(memory_id=memory_id(n), terms=terms, length=length))
    driver.bulk_put(rows[:20])
    driver.bulk_put(rows[20:])
    assert _stats(driver, "acme") == _live_stats({(r.memory_id, 1): r for r in rows})
    packed = _packed(driver, "acme")
    assert sum(len(docs) for docs in packed.values()) == sum(len(r.terms) for r in rows)
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    for query in ([{"t_1"}], [{"t_2"}, {"t_3", "t_4"}]):
        _same(driver.search(where, query, top_k=7), bm25_rank(rows, query, 7))


def test_an_upgraded_store_gets_the_statistics_and_packs_of_its_live_rows(
    store_url: str, driver: DbDriver
) -> None:
    rng = random.Random(12)
    rows = []
    for n in range(40):
        terms, length = random_terms(rng, ["t_a", "t_b", "t_c"], rng.randint(1, 4))
        rows.append(
            make_row(
                memory_id=memory_id(n),
                subject=rng.choice(["p_ada", "tenant"]),
                trust=rng.choice(TRUSTS),
                terms=terms,
                length=length,
            )
        )
    driver.bulk_put(rows)
    # Drop what version 5 keeps, as a version-4 store lacks it, and let the migration build it.
    with transaction(driver.engine, driver.dialect, tenant=None, write=True) as connection:
        for table in ("memory_stats", "memory_packs"):
            name = table if driver.dialect == "sqlite" else f"mainsdk_memory.{table}"
            connection.exec_driver_sql(f"DELETE FROM {name}")  # noqa: S608 - constant names
    with transaction(driver.engine, driver.dialect, tenant=None, write=True) as connection:
        _packs.rebuild(connection)
    assert _stats(driver, "acme") == _live_stats({(r.memory_id, 1): r for r in rows})
    where = Filter(tenant="acme", app="app", subjects=("p_ada", "tenant"))
    _same(driver.search(where, [{"t_a"}, {"t_c"}], top_k=9),
          bm25_rank([r for r in rows if where.matches(r)], [{"t_a"}, {"t_c"}], 9))
    assert upgrade(store_url) == (5, 5)  # already current: nothing to do


def test_a_put_racing_a_bulk_load_of_its_subject_waits_and_keeps_the_packs_ordered(
    small: None, driver: DbDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On PostgreSQL a document id is given at INSERT; were the statistics row locked only
    # later, a put between a bulk load's INSERTs and its packing would pack a lower id after a
    # higher one, and an erase could no longer find it. Every write locks the row first.
    monkeypatch.setattr(_packs, "TAIL", 1)
    loading, put_done = threading.Event(), threading.Event()
    overlapped: list[bool] = []
    pack = _packs.put_many

    def slow_pack(connection: object, rows: object) -> None:
        loading.set()
        overlapped.append(put_done.wait(timeout=1.0))  # the put must not get through now
        pack(connection, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(_packs, "put_many", slow_pack)
    rows = [make_row(memory_id=memory_id(n), terms={"t_a": 1}, length=1) for n in range(1, 6)]
    late = make_row(memory_id=memory_id(9), terms={"t_a": 1}, length=1)
    loader = threading.Thread(target=driver.bulk_put, args=(rows,))
    loader.start()
    assert loading.wait(timeout=30)

    def put_late() -> None:
        driver.put(late)
        put_done.set()

    writer = threading.Thread(target=put_late)
    writer.start()
    loader.join(timeout=60)
    writer.join(timeout=60)
    assert overlapped == [False] and put_done.is_set()
    _packed(driver, "acme")  # every chunk ordered, ranges disjoint
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    _same(driver.search(where, [{"t_a"}], top_k=10), bm25_rank([*rows, late], [{"t_a"}], 10))
    driver.erase("acme", "app", "p_ada", late.memory_id)
    assert len(_doc_ids(driver, "acme")) == 5
    assert {doc for docs in _packed(driver, "acme").values() for doc in docs} == _doc_ids(
        driver, "acme"
    )
    _same(driver.search(where, [{"t_a"}], top_k=10), bm25_rank(rows, [{"t_a"}], 10))
