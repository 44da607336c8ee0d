"""remember (formation off) against a plain INSERT of a row of the same size, on one PostgreSQL.

Issue 19's goal: p50 of ``remember(..., formation=False)`` <= 3x a plain insert. Both run in
this process, interleaved call by call, on the same pgserver (or ``MAINSDK_BENCH_POSTGRES_URL``)
database: the plain side is one ``INSERT`` into a table of its own, autocommit, of a row as
large as the sealed version the driver writes (one transaction each, as an app would).

    .venv/bin/python -m benchmarks.remember_insert [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.stores import PostgresServer
from mainsdk_memory import Memory, tenant
from mainsdk_memory.keys import KeyStore


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--embedder", choices=("default", "none"), default="default",
                        help="the default install's embedder (a sealed vector per memory) "
                        "or none (text only)")
    arguments = parser.parse_args()
    calls = arguments.calls
    options = {} if arguments.embedder == "default" else {"embedder": None}
    server = PostgresServer()
    server.start()
    try:
        url = server.new_store()
        import psycopg
        from sqlalchemy.engine import make_url

        database = make_url(url).database
        plain = psycopg.connect(server._libpq(database), autocommit=True)
        plain.execute(
            "CREATE TABLE plain_notes (id bigserial PRIMARY KEY, person text, body bytea, "
            "created_at timestamptz)"
        )
        root = Path(tempfile.mkdtemp(prefix="mainsdk-bench-ri-"))
        KeyStore.create(root / "keys")
        remember: list[float] = []
        insert: list[float] = []
        with (
            Memory.open(url, keys=root / "keys", app="bench", **options) as memory,
            tenant.use("acme"),
        ):
            bot = memory.acting_for("ada", agent="bot")
            for warm in range(20):
                bot.remember(f"Warm-up note {warm} about the depot.", formation=False)
            # The plain row is as large as a sealed version with its embedding.
            (size,) = server.execute(
                "SELECT (avg(octet_length(v.sealed)) + coalesce(avg(octet_length(e.sealed)), 0))"
                "::int FROM mainsdk_memory.memory_versions v LEFT JOIN "
                "mainsdk_memory.memory_embeddings e USING (tenant, app, memory_id, version)",
                database,
            )[0]
            for n in range(calls):
                text = f"Ada's order {n} shipped to dock {n * 7} on pier {n % 13}."
                started = time.perf_counter()
                bot.remember(text, formation=False)
                remember.append(time.perf_counter() - started)
                body = os.urandom(size)
                started = time.perf_counter()
                plain.execute(
                    "INSERT INTO plain_notes (person, body, created_at) VALUES "
                    "(%s, %s, now())",
                    ("p_ada", body),
                )
                insert.append(time.perf_counter() - started)
        plain.close()
        settings = server.settings()
        r50, i50 = statistics.median(remember), statistics.median(insert)
        print(f"PostgreSQL {settings['server_version']} fsync={settings['fsync']} "
              f"synchronous_commit={settings['synchronous_commit']}; {calls} calls each, "
              f"interleaved; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        print(f"remember(formation=False): p50 {r50 * 1e3:.3f} ms, p95 "
              f"{_p(remember, 0.95) * 1e3:.3f} ms")
        print(f"plain INSERT:              p50 {i50 * 1e3:.3f} ms, p95 "
              f"{_p(insert, 0.95) * 1e3:.3f} ms")
        print(f"ratio p50: {r50 / i50:.2f}x (goal <= 3x)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
