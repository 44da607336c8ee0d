"""The db driver's vector state: a per-subject change counter, never equal across a change.

``vector_state(where)`` is what lets a warm recall skip reading every vector: the core keeps
its stacked matrix while the token is unchanged. So an equal token with different
``vectors(where)`` would serve a stale (or erased) vector. Every write kind is tried here on
both dialects (put, revision, erase, put_vector, set_pinned, bulk_put), with filters of every
shape the token covers (pin, session, memory ids, as_of, several subjects, retention cutoffs
that move both ways), and every pair of observations with equal tokens must have equal
vectors; a write from a second process must change the token too.
"""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from _db_rows import T0, make_row, memory_id
from sqlalchemy import delete

from mainsdk_memory.drivers import Filter, StoredRow
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.drivers.db._engine import transaction
from mainsdk_memory.drivers.db._schema import STATS

pytestmark = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)

SUBJECTS = ("p_ada", "p_bob", "tenant")


@pytest.fixture
def driver(store_url: str) -> Iterator[DbDriver]:
    with DbDriver(store_url) as opened:
        yield opened


def _filters(rng: random.Random, ids: list[str]) -> list[Filter]:
    base = {"tenant": "acme", "app": "app"}
    some = frozenset(rng.sample(ids, min(len(ids), 3))) if ids else frozenset()
    cutoff = T0 + timedelta(seconds=rng.randint(-2, 40))
    return [
        Filter(**base, subjects=("p_ada",)),
        Filter(**base, subjects=("p_ada", "tenant")),
        Filter(**base, subjects=("p_bob",), session="s1"),
        Filter(**base, subjects=("p_ada",), pinned=True),
        Filter(**base, subjects=("p_ada",), pinned=False),
        Filter(**base, subjects=("p_ada", "p_bob"), any_session=True),
        Filter(**base, subjects=("p_ada",), memory_ids=some),
        Filter(**base, subjects=("p_ada",), as_of=T0 + timedelta(seconds=rng.randint(0, 40))),
        # Retention cutoffs that move forward and back between observations.
        Filter(**base, subjects=("p_ada", "tenant"), retention=(("health", cutoff),)),
        Filter(
            **base,
            subjects=("p_ada",),
            retention=(("health", cutoff), ("personal", cutoff - timedelta(seconds=5))),
        ),
    ]


def _row(rng: random.Random, serial: int) -> StoredRow:
    when = T0 + timedelta(seconds=serial)
    session = rng.choice([None, "s1", "s2"])
    return make_row(
        subject=rng.choice(SUBJECTS),
        memory_id=memory_id(serial),
        labels=rng.choice([("personal",), ("health",), ("personal", "health"), ()]),
        session=session,
        session_only=session is not None and rng.random() < 0.5,
        trust=rng.choice(["inferred", "untrusted", "confirmed"]),
        created_at=when,
        recorded_at=when,
        valid_from=when,
    )


def test_an_equal_token_always_means_equal_vectors(driver: DbDriver) -> None:
    rng = random.Random(20260419)
    current: dict[str, StoredRow] = {}
    seen: dict[object, tuple[Filter, list[object]]] = {}
    serial = 0
    kinds: set[str] = set()
    everyone = Filter(tenant="acme", app="app", subjects=SUBJECTS, any_session=True)

    def observe() -> None:
        for where in _filters(rng, sorted(current)):
            token = driver.vector_state(where)
            entries = list(driver.vectors(where))
            assert token is not None  # nothing writes between the reads here
            assert hash(token) is not None
            if token in seen:
                assert seen[token][1] == entries, (kinds, where)
            seen[token] = (where, entries)

    observe()
    for _ in range(70):
        action = rng.random()
        before = driver.vector_state(everyone)
        if action < 0.3 or not current:
            serial += 1
            row = _row(rng, serial)
            vector = rng.choice([None, f"v{serial}".encode()])
            driver.put(row, vector=vector)
            current[row.memory_id] = row
            kinds.add("put")
        elif action < 0.45:
            old = current[rng.choice(sorted(current))]
            when = old.valid_from + timedelta(seconds=1)
            new = dataclasses.replace(
                old, version=old.version + 1, valid_from=when, recorded_at=when
            )
            driver.put(new, closes=old.version, vector=rng.choice([None, b"revised"]))
            current[new.memory_id] = new
            kinds.add("revise")
        elif action < 0.6:
            gone = current.pop(rng.choice(sorted(current)))
            driver.erase("acme", gone.app, gone.subject, gone.memory_id)
            kinds.add("erase")
        elif action < 0.72:
            row = current[rng.choice(sorted(current))]
            driver.put_vector(
                "acme", row.app, row.subject, row.memory_id, row.version, f"r{serial}".encode()
            )
            kinds.add("put_vector")
        elif action < 0.87:
            row = current[rng.choice(sorted(current))]
            pinned = not row.pinned
            driver.set_pinned("acme", row.app, row.subject, row.memory_id, pinned)
            current[row.memory_id] = dataclasses.replace(row, pinned=pinned)
            kinds.add("set_pinned")
        else:
            rows = []
            vectors = {}
            for _ in range(rng.randint(1, 4)):
                serial += 1
                row = _row(rng, serial)
                rows.append(row)
                current[row.memory_id] = row
                if rng.random() < 0.7:
                    vectors[(row.memory_id, 1)] = f"b{serial}".encode()
            driver.bulk_put(rows, vectors=vectors)
            kinds.add("bulk_put")
        observe()
        assert driver.vector_state(everyone) != before  # every write moved its subject's
    assert kinds == {"put", "revise", "erase", "put_vector", "set_pinned", "bulk_put"}


def test_every_write_kind_moves_the_counter_of_its_subject(driver: DbDriver) -> None:
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    tokens = [driver.vector_state(where)]
    row = make_row()
    driver.put(row, vector=b"one")
    tokens.append(driver.vector_state(where))
    driver.put_vector("acme", "app", "p_ada", row.memory_id, 1, b"two")
    tokens.append(driver.vector_state(where))
    driver.set_pinned("acme", "app", "p_ada", row.memory_id, True)
    tokens.append(driver.vector_state(where))
    later = dataclasses.replace(row, version=2, valid_from=T0 + timedelta(seconds=1))
    driver.put(later, closes=1, vector=b"three")
    tokens.append(driver.vector_state(where))
    driver.erase("acme", "app", "p_ada", row.memory_id)
    tokens.append(driver.vector_state(where))
    driver.bulk_put([make_row(memory_id=memory_id(2))], vectors={(memory_id(2), 1): b"four"})
    tokens.append(driver.vector_state(where))
    assert len(set(tokens)) == len(tokens)
    # Another subject's writes leave it alone: its recall keeps its matrix.
    driver.put(make_row(subject="p_bob", memory_id=memory_id(3)), vector=b"bob")
    assert driver.vector_state(where) == tokens[-1]


def test_a_reused_rowid_does_not_give_the_old_token(driver: DbDriver) -> None:
    # SQLite gives the newest rowid again after it is deleted: count, max and sum of the
    # documents would all repeat here; the counter does not.
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    driver.put(make_row(memory_id=memory_id(1)), vector=b"first")
    driver.put(make_row(memory_id=memory_id(2)), vector=b"second")
    token, entries = driver.vector_state(where), driver.vectors(where)
    driver.erase("acme", "app", "p_ada", memory_id(2))
    driver.put(make_row(memory_id=memory_id(3)), vector=b"third")
    assert driver.vectors(where) != entries
    assert driver.vector_state(where) != token


def test_a_subject_without_statistics_still_counts_its_changes(driver: DbDriver) -> None:
    # A store migrated to version 5 has no statistics row for a subject with no live
    # version; its first write of any kind must still move the token.
    where = Filter(tenant="acme", app="app", subjects=("p_ada",))
    row = make_row()
    driver.put(row, vector=b"one")
    for write in ("set_pinned", "put_vector", "erase"):
        s = STATS.c
        with transaction(driver.engine, driver.dialect, tenant="acme", write=True) as connection:
            connection.execute(delete(STATS).where(s.tenant == "acme", s.subject == "p_ada"))
        token, entries = driver.vector_state(where), driver.vectors(where)
        if write == "set_pinned":
            driver.set_pinned("acme", "app", "p_ada", row.memory_id, True)
        elif write == "put_vector":
            driver.put_vector("acme", "app", "p_ada", row.memory_id, 1, b"two")
        else:
            driver.erase("acme", "app", "p_ada", row.memory_id)
        assert driver.vectors(where) != entries or write == "set_pinned"
        assert driver.vector_state(where) != token


def test_a_retention_cutoff_that_moves_past_a_row_changes_the_token(driver: DbDriver) -> None:
    for n, labels in enumerate([("health",), ("personal",), ("health",)]):
        when = T0 + timedelta(seconds=10 * n)
        driver.put(
            make_row(memory_id=memory_id(n), labels=labels, created_at=when, valid_from=when),
            vector=f"v{n}".encode(),
        )
    states = {}
    for seconds in (-1, 5, 9, 15, 25, 21, 5, -1):
        where = Filter(
            tenant="acme",
            app="app",
            subjects=("p_ada",),
            retention=(("health", T0 + timedelta(seconds=seconds)),),
        )
        token, ids = driver.vector_state(where), [e.memory_id for e in driver.vectors(where)]
        assert states.setdefault(token, ids) == ids
    assert len(states) == 3  # nothing hidden, the first health row, both health rows


_WRITER = """
import sys
from datetime import timedelta
from _db_rows import T0, make_row, memory_id
from mainsdk_memory.drivers.db._driver import DbDriver

url, kind = sys.argv[1], sys.argv[2]
with DbDriver(url) as driver:
    if kind == "put":
        driver.put(make_row(memory_id=memory_id(7)), vector=b"elsewhere")
    elif kind == "put_vector":
        driver.put_vector("acme", "app", "p_ada", memory_id(7), 1, b"again")
    elif kind == "set_pinned":
        driver.set_pinned("acme", "app", "p_ada", memory_id(7), True)
    elif kind == "revise":
        when = T0 + timedelta(seconds=1)
        driver.put(make_row(memory_id=memory_id(7), version=2, valid_from=when), closes=1,
                   vector=b"revised")
    elif kind == "erase":
        driver.erase("acme", "app", "p_ada", memory_id(7))
"""


def test_a_write_in_another_process_changes_the_token(driver: DbDriver, store_url: str) -> None:
    tests = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])}
    where = Filter(tenant="acme", app="app", subjects=("p_ada",), pinned=None)
    driver.put(make_row(memory_id=memory_id(1)), vector=b"here")
    seen = [driver.vector_state(where)]
    for kind in ("put", "put_vector", "set_pinned", "revise", "erase"):
        subprocess.run(  # our own interpreter and script
            [sys.executable, "-c", _WRITER, store_url, kind], check=True, env=env, timeout=120
        )
        seen.append(driver.vector_state(where))
    assert len(set(seen)) == len(seen)
