"""Recall latency of the db driver at 1,000 / 10,000 / 100,000 memories per person.

Not a test: run it by hand and copy the table into docs/scaling.md::

    .venv/bin/python benchmarks/db_recall.py                 # 1,000 and 10,000
    .venv/bin/python benchmarks/db_recall.py 1000 10000 100000
    .venv/bin/python benchmarks/db_recall.py --queries 50 100000   # fewer queries, sooner

What it measures: ``DbDriver.search`` (the SQL corpus statistics, the postings of the query
terms among the person's current memories, the BM25 arithmetic and loading the top 5 rows
whole) for one person, on SQLite (a file) and PostgreSQL 16 (pgserver in a temporary folder,
or ``MAINSDK_BENCH_POSTGRES_URL``, a superuser URL). The SDK's own part of a ``recall`` (HMAC
blinding of the query terms and opening five sealed rows) adds well under a millisecond.

Rows are built directly, not through ``Memory``, so a store of 100,000 fills in seconds:
random sealed bytes (200 to 600), 8 to 30 blind terms each drawn from a Zipf-like vocabulary
of 20,000 terms, 5% of memories revised once (a closed version each), and 200 shared tenant
memories with their own vocabulary. Queries have 1 to 4 terms drawn from the same
distribution, each term a group of two tokens (the person's and the tenant's), as the SDK
sends them.
"""

from __future__ import annotations

import bisect
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url

from mainsdk_memory.drivers import TENANT_SUBJECT, Filter, StoredRow
from mainsdk_memory.drivers.db import upgrade
from mainsdk_memory.drivers.db._driver import DbDriver

TENANT, APP, PERSON = "acme", "app", "p_" + "a" * 32
VOCABULARY = 20_000
QUERIES = 200
WARMUP = 20
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def machine() -> str:
    """CPU, cores, memory, OS, Python and library versions, for the results table."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        memory_kb = next(
            int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
        memory = f"{memory_kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        memory = "unknown memory"
    versions = ", ".join(
        f"{name} {metadata.version(name)}" for name in ("sqlalchemy", "psycopg")
    )
    return (f"{cpu}, {os.cpu_count()} cores, {memory}, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}, {versions}")


class Zipf:
    """Draws term ranks with probability proportional to 1 / rank (a natural-language shape)."""

    def __init__(self, size: int, rng: random.Random) -> None:
        self._rng = rng
        self._cumulative: list[float] = []
        total = 0.0
        for rank in range(1, size + 1):
            total += 1.0 / rank
            self._cumulative.append(total)

    def draw(self) -> int:
        """One rank, 0-based."""
        return bisect.bisect_left(self._cumulative, self._rng.random() * self._cumulative[-1])


def _token(vocabulary: str, rank: int) -> str:
    return f"{vocabulary}{rank:031x}"[:32]  # the shape of a blind term: 32 hex-like chars


def fill(driver: DbDriver, count: int, rng: random.Random) -> None:
    """Bulk-insert ``count`` current memories for PERSON (5% revised) and 200 tenant ones."""
    zipf = Zipf(VOCABULARY, rng)
    rows: list[StoredRow] = []

    def add(subject: str, vocabulary: str, n: int, version: int, valid_to: datetime | None,
            when: datetime) -> None:
        terms: dict[str, int] = {}
        length = rng.randint(8, 30)
        for _ in range(length):
            token = _token(vocabulary, zipf.draw())
            terms[token] = terms.get(token, 0) + 1
        rows.append(StoredRow(
            tenant=TENANT, app=APP, subject=subject, memory_id=f"mem_{n:026d}",
            version=version, kind="fact", labels=("personal",), trust="inferred", agent="bot",
            session=None, session_only=False, pinned=False, created_at=when, recorded_at=when,
            valid_from=when, valid_to=valid_to, sealed=rng.randbytes(rng.randint(200, 600)),
            terms=terms, length=length,
        ))

    for n in range(count):
        when = T0 + timedelta(seconds=n)
        if rng.random() < 0.05:
            later = when + timedelta(microseconds=1)
            add(PERSON, "p", n, 1, later, when)
            add(PERSON, "p", n, 2, None, later)
        else:
            add(PERSON, "p", n, 1, None, when)
    for n in range(count, count + 200):
        add(TENANT_SUBJECT, "t", n, 1, None, T0)
    # Setup only: the driver's bulk_put (its own rows and postings, many per transaction).
    for start in range(0, len(rows), 5_000):
        driver.bulk_put(rows[start : start + 5_000])
    with driver.engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        connection.execute(text("VACUUM ANALYZE" if driver.dialect == "postgresql" else "ANALYZE"))


def measure(driver: DbDriver, rng: random.Random) -> tuple[float, float, float]:
    """p50 and p95 of search latency in ms, and the mean number of hits."""
    zipf = Zipf(VOCABULARY, rng)
    where = Filter(tenant=TENANT, app=APP, subjects=(PERSON, TENANT_SUBJECT))
    timings: list[float] = []
    hits = 0
    for i in range(WARMUP + QUERIES):
        query = [
            {_token("p", rank), _token("t", rank)}
            for rank in (zipf.draw() for _ in range(rng.randint(1, 4)))
        ]
        started = time.perf_counter()
        found = driver.search(where, query, top_k=5)
        elapsed = (time.perf_counter() - started) * 1000
        if i >= WARMUP:
            timings.append(elapsed)
            hits += len(found)
    timings.sort()
    return (statistics.median(timings), timings[int(len(timings) * 0.95) - 1],
            hits / QUERIES)


@contextmanager
def postgres() -> Iterator[tuple[str, object]]:
    """A superuser URL (``postgresql+psycopg://``) and a callable making fresh databases."""
    import psycopg

    configured = os.environ.get("MAINSDK_BENCH_POSTGRES_URL")
    folder = None
    server = None
    if configured:
        admin = make_url(configured).set(drivername="postgresql+psycopg")
    else:
        folder = Path(tempfile.mkdtemp(prefix="mainsdk-bench-pg-"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            server = pgserver.get_server(folder / "data", cleanup_mode="delete")
        admin = make_url(server.get_uri()).set(drivername="postgresql+psycopg")
    libpq = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    made: list[str] = []

    def new_database() -> str:
        name = f"mainsdk_bench_{os.getpid()}_{len(made)}"
        with psycopg.connect(libpq, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}"'.encode())
            connection.execute(f'CREATE DATABASE "{name}"'.encode())
        made.append(name)
        url = admin.set(database=name).render_as_string(hide_password=False)
        upgrade(url)
        return url

    try:
        with psycopg.connect(libpq) as connection:
            version = connection.execute("SHOW server_version").fetchone()
        yield f"PostgreSQL {version[0] if version else '?'}", new_database
    finally:
        with psycopg.connect(libpq, autocommit=True) as connection:
            for name in made:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())
        if server is not None:
            server.cleanup()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def calibration() -> float:
    """Seconds for a fixed pure-Python loop: shows how much CPU this run really had (an idle
    core of a current x86 server does it in about 0.5 s; twice that means a shared core)."""
    started = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    """Print one row per database and size: p50, p95, mean hits, fill time."""
    global QUERIES
    if argv[:1] == ["--queries"]:
        QUERIES, argv = int(argv[1]), argv[2:]
    sizes = [int(arg) for arg in argv] or [1_000, 10_000]
    print(f"machine: {machine()}")
    print(f"calibration loop before: {calibration():.2f} s")
    print(f"{QUERIES} queries of 1-4 terms after {WARMUP} warm-up queries, top_k=5\n")
    print("| database | memories per person | recall p50 | recall p95 | hits | fill |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="mainsdk-bench-") as folder, postgres() as pg:
        pg_name, new_pg_database = pg
        for size in sizes:
            for name, url in (
                (f"SQLite {sqlite3.sqlite_version}",
                 f"sqlite:///{Path(folder) / f'bench-{size}.db'}"),
                (pg_name, new_pg_database()),  # type: ignore[operator]
            ):
                rng = random.Random(size)
                with DbDriver(url) as driver:
                    started = time.perf_counter()
                    fill(driver, size, rng)
                    filled = time.perf_counter() - started
                    p50, p95, hits = measure(driver, random.Random(1))
                print(f"| {name} | {size:,} | {p50:.1f} ms | {p95:.1f} ms | {hits:.1f} | "
                      f"{filled:.0f} s |", flush=True)
    print(f"\ncalibration loop after: {calibration():.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
