"""A bulk load (``bulk_put``, the local and db drivers) stores what ``put`` stores: rows,
their index and their embeddings, as every read returns them; a memory that exists already
loads nothing."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import pytest
from _db_rows import expected_vectors, instant, make_row, memory_id, random_rows

from mainsdk_memory import InvalidInputError, MemoryConflictError
from mainsdk_memory.drivers import MAX_TAGS, Filter, bm25_rank, open_driver


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


def _tag(n: int) -> str:
    return f"{n:032x}"


def test_bulk_put_stores_tags_as_put_does(driver: Any) -> None:
    loaded = [
        make_row(memory_id=memory_id(n), tags=frozenset({_tag(n), _tag(100 + n % 2)}))
        for n in range(6)
    ]
    driver.bulk_put(loaded)
    put = make_row(memory_id=memory_id(50), tags=frozenset({_tag(100)}))
    driver.put(put)
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    assert driver.list(dataclasses.replace(where, tags=(frozenset({_tag(3)}),)), limit=5) == [
        loaded[3]
    ]
    evens = [put, *(row for row in reversed(loaded) if _tag(100) in row.tags)]
    assert driver.list(dataclasses.replace(where, tags=(frozenset({_tag(100)}),)), limit=9) == evens
    assert driver.versions("acme", "app", ("p_ada",), memory_id(4)) == [loaded[4]]


@pytest.mark.parametrize(
    ("tags", "says"),
    [
        (frozenset({"A" * 32}), "32 lowercase hex"),
        (frozenset({"0" * 31}), "32 lowercase hex"),
        (frozenset({"0" * 32, "0" * 33}), "32 lowercase hex"),
        (frozenset(_tag(n) for n in range(MAX_TAGS + 1)), f"more than {MAX_TAGS}"),
        ("0" * 32, "not a set"),
    ],
    ids=["upper-case", "short", "one-long", "too-many", "a-string"],
)
def test_a_row_whose_tags_are_malformed_is_refused_and_nothing_is_written(
    driver: Any, tags: Any, says: str
) -> None:
    before = list(driver.raw_dump())
    good = make_row(memory_id=memory_id(1), tags=frozenset({_tag(1)}))
    bad = make_row(memory_id=memory_id(2), tags=tags)
    for attempt in (lambda: driver.put(bad), lambda: driver.bulk_put([good, bad])):
        with pytest.raises(InvalidInputError, match=says) as refused:
            attempt()
        assert "0" * 31 not in str(refused.value)  # no tag value in the message
    assert list(driver.raw_dump()) == before
    driver.put(good)
    revision = dataclasses.replace(good, version=2, tags=tags, valid_from=instant(random.Random(2)))
    with pytest.raises(InvalidInputError):
        driver.put(revision, closes=1)
    assert driver.versions("acme", "app", ("p_ada",), memory_id(1)) == [good]
