"""Caller keys and metadata filters: get(key=) and list(where=) against a plaintext table.

Not a test. Issue 17's measure, reported in docs/benchmarks.md. For each store (``local:``,
SQLite, PostgreSQL 16 from pgserver) and size (memories of one person, each remembered with
``key=`` and a numeric ``metadata`` field through the public API), interleaved call by call
in one process:

- ``get(key=k)`` through the blinded tag index;
- what the issue's prototype had to do without it: page ``list()`` until the key turns up
  (the same keys; run on the first few keys only, it is slow by design);
- the plaintext baseline an app would otherwise keep beside us: a SQLite table
  ``(key TEXT PRIMARY KEY, value TEXT)`` on the same disk, ``SELECT value WHERE key = ?``;
- ``list(where={"n": {"$gte": a, "$lt": a + 10}}, limit=10)``: a range filter pushed into
  the driver, against the plaintext table's ``WHERE n >= ? AND n < ?`` with an index on ``n``.

Reports p50 and p95 (ms) and the ratio to the plaintext baseline, with the machine and the
load average before and after.

::

    .venv/bin/python -m benchmarks.caller_keys              # 1,000 and 10,000
    .venv/bin/python -m benchmarks.caller_keys 1000         # one size
    .venv/bin/python -m benchmarks.caller_keys --stores local,SQLite 10000
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.db_recall import postgres
from benchmarks.machine import describe, load_average
from mainsdk_memory import Memory, tenant
from mainsdk_memory.keys import KeyStore

__all__ = ["main"]

LOOKUPS = 300
PAGED = 5  # lookups by paging list(): each reads up to every memory


def _fill(memory: Memory, size: int) -> float:
    started = time.perf_counter()
    with tenant.use("bench"):
        bot = memory.acting_for("ada", agent="bench")
        for n in range(size):
            bot.remember(f"Order {n} was shipped to the customer by courier.",
                         key=f"order-{n}", metadata={"n": n}, formation=False)
    return time.perf_counter() - started


def _plain(folder: Path, size: int) -> sqlite3.Connection:
    connection = sqlite3.connect(folder / "plain.db", isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT, n INTEGER)")
    connection.execute("CREATE INDEX kv_n ON kv (n)")
    connection.executemany(
        "INSERT INTO kv VALUES (?, ?, ?)",
        [(f"order-{n}", json.dumps({"text": f"Order {n}.", "n": n}), n) for n in range(size)],
    )
    return connection


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _paged(memory: Memory, key: str) -> None:
    bot = memory.acting_for("ada", agent="bench")
    cursor = None
    while True:
        page = bot.list(limit=100, cursor=cursor)
        if any(record.key == key for record in page.items) or page.next_cursor is None:
            return
        cursor = page.next_cursor


def _stats(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[max(0, int(len(values) * 0.95) - 1)]


def _measure(memory: Memory, plain: sqlite3.Connection, size: int) -> dict[str, Any]:
    rng = random.Random(size)
    times: dict[str, list[float]] = {"get": [], "plain_get": [], "where": [], "plain_where": [],
                                     "paged": []}
    with tenant.use("bench"):
        bot = memory.acting_for("ada", agent="bench")
        for i in range(LOOKUPS):
            n = rng.randrange(size)
            key = f"order-{n}"
            calls: list[tuple[str, Callable[[], object]]] = [
                ("get", lambda key=key: bot.get(key=key)),
                ("plain_get", lambda key=key: plain.execute(
                    "SELECT value FROM kv WHERE key = ?", (key,)).fetchone()),
                ("where", lambda n=n: bot.list(where={"n": {"$gte": n, "$lt": n + 10}},
                                               limit=10)),
                ("plain_where", lambda n=n: plain.execute(
                    "SELECT value FROM kv WHERE n >= ? AND n < ? ORDER BY n DESC LIMIT 10",
                    (n, n + 10)).fetchall()),
            ]
            if i < PAGED:
                calls.append(("paged", lambda key=key: _paged(memory, key)))
            if i % 2:
                calls.reverse()  # interleaved, in both orders
            for name, call in calls:
                times[name].append(_timed(call))
        assert bot.get(key="order-0").metadata == {"n": 0}
    return {name: _stats(values) for name, values in times.items() if values}


def main(argv: list[str]) -> int:
    stores = ["local", "SQLite", "PostgreSQL"]
    if argv[:1] == ["--stores"]:
        stores, argv = argv[1].split(","), argv[2:]
    sizes = [int(arg) for arg in argv] or [1_000, 10_000]
    print(f"machine: {json.dumps(describe())}")
    print(f"load average before: {load_average()}")
    print(f"{LOOKUPS} lookups per row, interleaved; paging: the first {PAGED} only\n")
    print("| store | memories | fill | get(key) p50 / p95 | ÷ SQLite PK | paging list() p50 "
          "| list(where range) p50 / p95 | ÷ SQLite index |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with postgres() as pg:
        pg_name, new_database = pg
        for size in sizes:
            for name in [pg_name if one == "PostgreSQL" else one for one in stores]:
                with tempfile.TemporaryDirectory(prefix="mainsdk-keys-") as where:
                    folder = Path(where)
                    KeyStore.create(folder / "keys")
                    url = {"local": f"local:{folder / 'store'}",
                           "SQLite": f"sqlite:///{folder / 'store.db'}"}.get(name)
                    if url is None:
                        url = new_database()  # type: ignore[operator]
                    with Memory.open(url, keys=folder / "keys", app="bench",
                                     embedder=None) as memory:
                        filled = _fill(memory, size)
                        plain = _plain(folder, size)
                        result = _measure(memory, plain, size)
                        plain.close()
                    get, plain_get = result["get"], result["plain_get"]
                    ranged, plain_ranged = result["where"], result["plain_where"]
                    print(
                        f"| {name} | {size:,} | {filled:.0f} s | {get[0]:.2f} / {get[1]:.2f} ms"
                        f" | {get[0] / plain_get[0]:.0f}x | {result['paged'][0]:.0f} ms"
                        f" | {ranged[0]:.2f} / {ranged[1]:.2f} ms"
                        f" | {ranged[0] / plain_ranged[0]:.0f}x |",
                        flush=True,
                    )
    print(f"\nload average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
