"""A bulk load (``bulk_put``, the local and db drivers) stores what ``put`` stores: rows,
their index and their embeddings, as every read returns them; a memory that exists already
loads nothing."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from _db_rows import expected_vectors, instant, make_row, memory_id, random_rows

from mainsdk_memory import MemoryConflictError
from mainsdk_memory.drivers import Filter, bm25_rank, open_driver


@pytest.fixture
def driver(store_url: str) -> Iterator[Any]:
    opened = open_driver(store_url)
    assert hasattr(opened, "bulk_put")
    yield opened
    opened.close()


def test_bulk_put_stores_rows_postings_and_embeddings_as_put_does(driver: Any) -> None:
    rng = random.Random(31)
    vectors: dict[tuple[str, int], bytes] = {}
    rows = random_rows(rng, None, 40, vectors=vectors)  # built, not stored
    driver.bulk_put(rows, vectors=vectors)
    for _ in range(20):
        where = Filter(
            tenant="acme",
            app=rng.choice(["app", "other"]),
            subjects=("p_ada", "p_bob", "tenant"),
            session=rng.choice([None, "s1"]),
            as_of=rng.choice([None, instant(rng)]),
        )
        matching = [r for r in rows if where.matches(r)]
        assert driver.list(where, limit=100) == sorted(
            matching, key=lambda r: (r.created_at, r.memory_id), reverse=True
        )
        assert driver.vectors(where) == expected_vectors(rows, vectors, where)
        query = [{"t_1"}, {"t_2", "t_3"}]
        got = driver.search(where, query, top_k=5)
        want = bm25_rank(matching, query, 5)
        assert [(r, round(s, 9)) for r, s in got] == [(r, round(s, 9)) for r, s in want]
    # A memory that exists already: nothing of the batch is loaded (the batch is one folder,
    # or one transaction).
    first = rows[0]
    new = make_row(memory_id=memory_id(1000), subject=first.subject, app=first.app)
    with pytest.raises(MemoryConflictError):
        driver.bulk_put([new, first])
    assert driver.versions("acme", first.app, (first.subject,), memory_id(1000)) == []
