"""Bulk write: ``remember_many`` against a loop of ``remember`` and a plaintext bulk insert.

Not a test. Issue 18's measure of the public bulk write (issue 19 sets its target), reported
in docs/benchmarks.md. For each store (``local:``, SQLite, PostgreSQL 16 from pgserver), one
person's memories written through the public API with the default embedder, in one process:

- ``remember`` in a loop (what a migration did before), formation off and on, on the same
  number of texts (formation's cost grows with what the person holds);
- ``remember_many`` with formation off (the migration path) and with formation on (each
  text compared with what is held), in batches of 500;
- the plaintext baseline a user would otherwise load: ``executemany`` of the same texts into
  a SQLite table with an FTS5 index, on the same disk, one transaction.

The texts are distinct sentences (numbers varied), so formation finds mostly novel or
related texts. Reports memories per second and the ratios, with the machine and the load.

::

    .venv/bin/python -m benchmarks.bulk_write              # 5,000 per store
    .venv/bin/python -m benchmarks.bulk_write 20000
    .venv/bin/python -m benchmarks.bulk_write --stores local,SQLite 5000
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.db_recall import postgres
from benchmarks.machine import describe, load_average
from mainsdk_memory import Memory, tenant
from mainsdk_memory.keys import KeyStore

__all__ = ["main"]

BATCH = 500
_PLACES = ["Lisbon", "Porto", "Faro", "Braga", "Sines", "Évora", "Coimbra", "Aveiro"]
_THINGS = ["order", "parcel", "invoice", "ticket", "booking", "refund", "visit", "call"]


def _texts(n: int, offset: int = 0) -> list[str]:
    return [
        f"Ada's {_THINGS[i % 8]} {i + offset} went to {_PLACES[(i // 8) % 8]} on day "
        f"{(i * 37) % 365} with {i % 11} items."
        for i in range(n)
    ]


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def _plain(folder: Path, texts: list[str]) -> float:
    connection = sqlite3.connect(folder / "plain.db", isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE VIRTUAL TABLE memories USING fts5(text)")
    started = time.perf_counter()
    connection.execute("BEGIN")
    connection.executemany("INSERT INTO memories (text) VALUES (?)", [(t,) for t in texts])
    connection.execute("COMMIT")
    elapsed = time.perf_counter() - started
    connection.close()
    return _rate(len(texts), elapsed)


def _run(url: str, keys: Path, size: int) -> dict[str, float]:
    """Memories per second of each way of writing ``size`` memories of a person, each way
    into a person of its own."""
    rates: dict[str, float] = {}
    with Memory.open(url, keys=keys, app="bench") as memory, tenant.use("bench"):
        for name, person, formation in (("remember loop, formation off", "loop", False),
                                        ("remember loop, formation on", "loop-on", True)):
            loop = memory.acting_for(person, agent="bench")
            started = time.perf_counter()
            for text in _texts(size):
                loop.remember(text, formation=formation)
            rates[name] = _rate(size, time.perf_counter() - started)
        for name, person, formation in (("remember_many, formation off", "bob", False),
                                        ("remember_many, formation on", "cy", True)):
            handle = memory.acting_for(person, agent="bench")
            texts = [{"text": text} for text in _texts(size)]
            started = time.perf_counter()
            records = handle.remember_many(texts, batch=BATCH, formation=formation)
            rates[name] = _rate(size, time.perf_counter() - started)
            assert len(records) == size
    return rates


def main(argv: list[str]) -> int:
    stores = ["local", "SQLite", "PostgreSQL"]
    if argv[:1] == ["--stores"]:
        stores, argv = argv[1].split(","), argv[2:]
    size = int(argv[0]) if argv else 5_000
    print(f"machine: {json.dumps(describe())}")
    print(f"load average before: {load_average()}")
    print(f"{size:,} memories per row (each way into a person of its own), batches of "
          f"{BATCH}\n")
    print("| store | formation | remember loop | remember_many | ÷ loop | plaintext FTS5 ÷ "
          "remember_many |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    with postgres() as pg:
        pg_name, new_database = pg
        for name in [pg_name if one == "PostgreSQL" else one for one in stores]:
            with tempfile.TemporaryDirectory(prefix="mainsdk-bulk-") as where:
                folder = Path(where)
                KeyStore.create(folder / "keys")
                url = {"local": f"local:{folder / 'store'}",
                       "SQLite": f"sqlite:///{folder / 'store.db'}"}.get(name)
                if url is None:
                    url = new_database()  # type: ignore[operator]
                rates = _run(url, folder / "keys", size)
                plain = _plain(folder, _texts(size))
                for formation in ("off", "on"):
                    loop = rates[f"remember loop, formation {formation}"]
                    bulk = rates[f"remember_many, formation {formation}"]
                    print(
                        f"| {name} | {formation} | {loop:,.0f}/s | {bulk:,.0f}/s"
                        f" | {bulk / loop:.1f}x | {plain / bulk:.0f}x |",
                        flush=True,
                    )
    print(f"\nload average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
