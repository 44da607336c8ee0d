"""Build StoredRow values and random version histories for the db driver's tests."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event

from mainsdk_memory.drivers import Driver, Filter, StoredRow, VectorEntry

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
TRUSTS = ("confirmed", "inferred", "untrusted")
KINDS = ("fact", "preference", "event", "note")


def memory_id(n: int) -> str:
    """A well-formed memory id for ``n``."""
    return f"mem_{n:026d}"


def make_row(**fields: Any) -> StoredRow:
    """A version-1 row with plain defaults, overridden by ``fields``."""
    values: dict[str, Any] = {
        "tenant": "acme",
        "app": "app",
        "subject": "p_ada",
        "memory_id": memory_id(1),
        "version": 1,
        "kind": "fact",
        "labels": ("personal",),
        "trust": "inferred",
        "agent": "bot",
        "session": None,
        "session_only": False,
        "pinned": False,
        "created_at": T0,
        "recorded_at": T0,
        "valid_from": T0,
        "valid_to": None,
        "sealed": b"sealed\x00bytes",
        "terms": {"t_a": 1},
        "length": 1,
    }
    values.update(fields)
    return StoredRow(**values)


def put_history(
    driver: Driver | None,
    first: StoredRow,
    revisions: list[dict[str, Any]],
    *,
    vectors: Mapping[tuple[str, int], bytes] | None = None,
) -> list[StoredRow]:
    """Store ``first`` and then one revision per dict of changes, each version with its
    embedding in ``vectors`` if it has one; return the rows as stored now (closed versions
    carry their ``valid_to``). With ``driver=None`` the rows are only built."""
    vectors = vectors or {}
    if driver is not None:
        driver.put(first, vector=vectors.get((first.memory_id, first.version)))
    rows = [first]
    for changes in revisions:
        current = rows[-1]
        nxt = dataclasses.replace(current, version=current.version + 1, **changes)
        if driver is not None:
            driver.put(
                nxt, closes=current.version, vector=vectors.get((nxt.memory_id, nxt.version))
            )
        rows[-1] = dataclasses.replace(current, valid_to=nxt.valid_from)
        rows.append(nxt)
    return rows


def random_terms(
    rng: random.Random, vocabulary: list[str], size: int
) -> tuple[dict[str, int], int]:
    """Random blind-term counts and the document length."""
    words = rng.choices(vocabulary, k=size)
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts, len(words)


def instant(rng: random.Random) -> datetime:
    """One of a few close instants, microseconds apart, so time comparisons hit their edges."""
    return T0 + timedelta(microseconds=rng.choice([0, 1, 2, 999_999, 1_000_000, 86_400_000_000]))


def random_rows(
    rng: random.Random,
    driver: Driver | None,
    count: int,
    *,
    tenant: str = "acme",
    vocabulary: list[str] | None = None,
    vectors: dict[tuple[str, int], bytes] | None = None,
    tags: list[str] | None = None,
) -> list[StoredRow]:
    """``count`` memories with random scope, trust, session, kind, pin and 1 to 3 versions,
    stored through ``driver`` (only built with ``driver=None``); returns every version as
    stored.

    With a ``vectors`` dict, about two versions in three also get a random sealed embedding,
    stored with them and added to the dict by ``(memory_id, version)``. With ``tags``, each
    version carries 0 to 2 of them (a revision its own draw).
    """
    vocabulary = vocabulary or [f"t_{i}" for i in range(12)]
    stored: list[StoredRow] = []
    for n in range(count):
        terms, length = random_terms(rng, vocabulary, rng.randint(1, 8))
        start = instant(rng)
        first = make_row(
            tenant=tenant,
            app=rng.choice(["app", "app", "other"]),
            subject=rng.choice(["p_ada", "p_ada", "p_bob", "tenant"]),
            memory_id=memory_id(n),
            kind=rng.choice(KINDS),
            labels=rng.choice([("personal",), ("none",), ("personal", "health")]),
            trust=rng.choice(TRUSTS),
            agent=rng.choice(["bot", "bot", "helper"]),
            session=rng.choice([None, "s1", "s2"]),
            pinned=rng.random() < 0.3,
            created_at=start,
            recorded_at=start + timedelta(microseconds=rng.randint(0, 3)),
            valid_from=start,
            sealed=rng.randbytes(rng.randint(1, 64)),
            terms=terms,
            length=length,
        )
        if first.session is not None and rng.random() < 0.4:
            first = dataclasses.replace(first, session_only=True)
        if tags:
            first = dataclasses.replace(first, tags=frozenset(rng.sample(tags, rng.randint(0, 2))))
        revisions = []
        when = first.valid_from
        for _ in range(rng.choice([0, 0, 1, 2])):
            when = when + timedelta(microseconds=rng.choice([1, 2, 1_000_000]))
            terms, length = random_terms(rng, vocabulary, rng.randint(1, 8))
            revisions.append(
                {
                    "valid_from": when,
                    "recorded_at": when,
                    "terms": terms,
                    "length": length,
                    "trust": rng.choice(TRUSTS),
                    "sealed": rng.randbytes(rng.randint(1, 64)),
                    **(
                        {"tags": frozenset(rng.sample(tags, rng.randint(0, 2)))} if tags else {}
                    ),
                }
            )
        if vectors is not None:
            for version in range(1, len(revisions) + 2):
                if rng.random() < 0.67:
                    vectors[(first.memory_id, version)] = rng.randbytes(rng.randint(1, 48))
        stored += put_history(driver, first, revisions, vectors=vectors)
    return stored


def make_v1_store(url: str, rows: list[StoredRow]) -> None:
    """A store as schema version 1 left it: version 1's tables (``memory db upgrade`` of an
    older release) holding ``rows`` and their postings, written as that release wrote them
    (each tenant's rows in a transaction of its own, as the app role on PostgreSQL)."""
    from sqlalchemy import MetaData, insert

    from mainsdk_memory.drivers.db._driver import _row_values
    from mainsdk_memory.drivers.db._engine import PG_SCHEMA, make_engine, parse_url, transaction
    from mainsdk_memory.drivers.db._schema import MIGRATIONS, SCHEMA, tables_v1

    target = parse_url(url)
    engine = make_engine(target, pool_size=1)
    try:
        with transaction(engine, target.dialect, tenant=None, write=True) as connection:
            MIGRATIONS[0].apply(connection)
            connection.execute(
                insert(SCHEMA).values(
                    version=1, description=MIGRATIONS[0].description, applied_at=T0
                )
            )
        versions, postings, _control, _schema = tables_v1(MetaData(schema=PG_SCHEMA))
        for tenant in sorted({row.tenant for row in rows}):
            mine = [row for row in rows if row.tenant == tenant]
            with transaction(engine, target.dialect, tenant=tenant, write=True) as connection:
                connection.execute(insert(versions), [_row_values(row) for row in mine])
                connection.execute(
                    insert(postings),
                    [
                        {
                            "tenant": row.tenant,
                            "app": row.app,
                            "subject": row.subject,
                            "term": term,
                            "memory_id": row.memory_id,
                            "version": row.version,
                            "tf": tf,
                        }
                        for row in mine
                        for term, tf in row.terms.items()
                    ],
                )
    finally:
        engine.dispose()


@contextmanager
def recorded_statements(driver: Any) -> Iterator[list[str]]:
    """The SQL statements ``driver`` (a db driver) runs inside the block, whitespace folded."""
    seen: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(" ".join(statement.split()))

    event.listen(driver.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(driver.engine, "before_cursor_execute", record)


def expected_vectors(
    rows: list[StoredRow], vectors: Mapping[tuple[str, int], bytes], where: Filter
) -> list[VectorEntry]:
    """The entries ``vectors(where)`` must return for ``rows`` with these sealed vectors."""
    return sorted(
        VectorEntry(r.subject, r.memory_id, r.version, vectors[(r.memory_id, r.version)])
        for r in rows
        if where.matches(r) and (r.memory_id, r.version) in vectors
    )
