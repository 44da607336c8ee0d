"""Sealed embeddings in the db driver, on SQLite and PostgreSQL: stored with their version in
one transaction, returned for exactly the rows a filter matches, sent only when the caller
does not hold them, and erased with the memory."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import pytest
from _db_rows import (
    T0,
    expected_vectors,
    instant,
    make_row,
    memory_id,
    random_rows,
    recorded_statements,
)

from mainsdk_memory import MemoryConflictError
from mainsdk_memory.drivers import Filter, VectorDriver, VectorEntry
from mainsdk_memory.drivers.db._driver import DbDriver

pytestmark = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def driver(store_url: str) -> Iterator[DbDriver]:
    with DbDriver(store_url) as opened:
        yield opened


def test_the_driver_declares_vectors_and_implements_them(driver: DbDriver) -> None:
    assert driver.capabilities.vectors is True
    assert isinstance(driver, VectorDriver)


def test_vectors_are_exactly_those_of_the_rows_the_filter_matches(driver: DbDriver) -> None:
    rng = random.Random(23)
    vectors: dict[tuple[str, int], bytes] = {}
    rows = random_rows(rng, driver, 60, vectors=vectors)
    assert 0 < len(vectors) < len(rows)  # some versions have no embedding
    for _ in range(80):
        where = Filter(
            tenant="acme",
            app=rng.choice(["app", "other"]),
            subjects=tuple(rng.sample(["p_ada", "p_bob", "tenant"], rng.randint(0, 3))),
            session=rng.choice([None, "s1", "s2"]),
            kinds=rng.choice(
                [None, frozenset(), frozenset({"fact"}), frozenset({"event", "note"})]
            ),
            as_of=rng.choice([None, None, instant(rng)]),
            pinned=rng.choice([None, True, False]),
            written_by=rng.choice([None, None, "bot", "helper"]),
            any_session=rng.random() < 0.2,
            retention=rng.choice([(), (("health", instant(rng)),), (("personal", T0),)]),
        )
        want = expected_vectors(rows, vectors, where)
        assert driver.vectors(where) == want
        # The caller's known pairs come back without bytes; the others with theirs.
        known = {(e.memory_id, e.version) for e in want if rng.random() < 0.5}
        assert driver.vectors(where, known=known) == [
            e._replace(sealed=None) if (e.memory_id, e.version) in known else e for e in want
        ]
    assert driver.vectors(Filter(tenant="globex", app="app", subjects=("p_ada",))) == []


def test_a_recall_moves_only_the_embeddings_the_caller_does_not_hold(driver: DbDriver) -> None:
    vectors = {}
    for n in range(40):
        row = make_row(memory_id=memory_id(n), terms={"t_a": 1})
        vectors[(row.memory_id, 1)] = bytes([n]) * 32
        driver.put(row, vector=vectors[(row.memory_id, 1)])
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    all_known = set(vectors)
    missing = [(memory_id(7), 1), (memory_id(30), 1)]

    class Known:  # any Container works; each pair is asked about once
        def __init__(self) -> None:
            self.asked: list[object] = []

        def __contains__(self, pair: object) -> bool:
            self.asked.append(pair)
            return pair in all_known and pair not in missing

    with recorded_statements(driver) as seen:
        assert all(e.sealed is None for e in driver.vectors(where, known=all_known))
        reads_when_known = list(seen)
        seen.clear()
        known = Known()
        got = driver.vectors(where, known=known)
    # Knowing everything: one read of keys, and no statement reads an embedding's bytes.
    assert not any("memory_embeddings.sealed" in s for s in reads_when_known)
    assert sorted(known.asked) == sorted(all_known)
    assert [(e.memory_id, e.sealed) for e in got if e.sealed is not None] == [
        (m, vectors[(m, v)]) for m, v in missing
    ]
    blob_reads = [s for s in seen if "memory_embeddings.sealed" in s]
    assert len(blob_reads) == 1 and blob_reads[0].count("?") + blob_reads[0].count("%(") < 12


def test_an_embedding_is_written_in_the_same_transaction_as_its_version(
    driver: DbDriver,
) -> None:
    first = make_row(memory_id=memory_id(1))
    driver.put(first, vector=b"v1 sealed")
    second = dataclasses.replace(first, version=2, valid_from=instant(random.Random(1)))
    with pytest.raises(MemoryConflictError):  # closes a version that is not the current one
        driver.put(dataclasses.replace(second, version=3), closes=2, vector=b"lost")
    with pytest.raises(MemoryConflictError):  # the same version twice: nothing of it is kept
        driver.put(first, vector=b"dup")
    driver.put(second, closes=1, vector=b"v2 sealed")
    everything = Filter(tenant="acme", app="app", subjects=("p_ada",), any_session=True)
    assert driver.vectors(everything) == [VectorEntry("p_ada", memory_id(1), 2, b"v2 sealed")]
    past = dataclasses.replace(everything, as_of=first.valid_from)
    assert driver.vectors(past) == [VectorEntry("p_ada", memory_id(1), 1, b"v1 sealed")]
    # A version stored without an embedding has none; the row itself is still there.
    driver.put(make_row(memory_id=memory_id(2)))
    assert [e.memory_id for e in driver.vectors(everything)] == [memory_id(1)]
    assert {r.memory_id for r in driver.list(everything, limit=10)} == {
        memory_id(1),
        memory_id(2),
    }


def test_erase_removes_every_embedding_of_the_memory_and_raw_dump_shows_them(
    driver: DbDriver,
) -> None:
    keep = make_row(memory_id=memory_id(1))
    gone = make_row(memory_id=memory_id(2), terms={"t_gone": 2}, length=2)
    driver.put(keep, vector=b"kept embedding \x00\x01" * 4)
    driver.put(gone, vector=b"erased embedding, version one" * 4)
    driver.put(
        dataclasses.replace(gone, version=2, valid_from=instant(random.Random(5))),
        closes=1,
        vector=b"erased embedding, version two" * 4,
    )
    dump = b"".join(blob for _, blob in driver.raw_dump())  # the tests' URL bypasses RLS
    assert b"erased embedding, version one" * 4 in dump
    assert b"erased embedding, version two" * 4 in dump
    result = driver.erase("acme", "app", "p_ada", memory_id(2))
    assert result.versions == (1, 2)
    everything = Filter(tenant="acme", app="app", subjects=("p_ada",), any_session=True)
    assert [e.memory_id for e in driver.vectors(everything)] == [memory_id(1)]
    for where, blob in driver.raw_dump():
        assert b"erased embedding" not in blob, where
    assert any(b"kept embedding" in blob for _, blob in driver.raw_dump())


def test_a_vector_must_be_bytes(driver: DbDriver) -> None:
    with pytest.raises(TypeError, match="bytes"):
        driver.put(make_row(), vector="not bytes")  # type: ignore[arg-type]
    assert driver.versions("acme", "app", ("p_ada",), memory_id(1)) == []
