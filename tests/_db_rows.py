"""Build StoredRow values and random version histories for the db driver's tests."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from mainsdk_memory.drivers import Driver, StoredRow

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
    driver: Driver, first: StoredRow, revisions: list[dict[str, Any]]
) -> list[StoredRow]:
    """Store ``first`` and then one revision per dict of changes; return the rows as stored
    now (closed versions carry their ``valid_to``)."""
    driver.put(first)
    rows = [first]
    for changes in revisions:
        current = rows[-1]
        nxt = dataclasses.replace(current, version=current.version + 1, **changes)
        driver.put(nxt, closes=current.version)
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
    driver: Driver,
    count: int,
    *,
    tenant: str = "acme",
    vocabulary: list[str] | None = None,
) -> list[StoredRow]:
    """``count`` memories with random scope, trust, session, kind, pin and 1 to 3 versions,
    stored through ``driver``; returns every stored version."""
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
                }
            )
        stored += put_history(driver, first, revisions)
    return stored
