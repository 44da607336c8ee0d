"""The db driver under stress: hard delete down to the file bytes, crashes mid-write, and
writers racing on one memory, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import dataclasses
import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psycopg
import pytest
from _db_rows import make_row, memory_id
from sqlalchemy import event
from sqlalchemy.engine import make_url

from mainsdk_memory import Memory, MemoryConflictError, StoreError, tenant
from mainsdk_memory._scoped import caller_of
from mainsdk_memory.drivers import TENANT_SUBJECT, Filter, StoredRow
from mainsdk_memory.drivers.db._driver import DbDriver

both = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
on_sqlite = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
on_postgres = pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)


def _chunks(blob: bytes, size: int = 16) -> list[bytes]:
    """Every aligned piece of ``blob``: a partly overwritten copy still shows some."""
    return [blob[i : i + size] for i in range(0, max(len(blob) - size + 1, 1), size)]


def _forget_one_of_several(memory: Memory) -> tuple[list[StoredRow], list[bytes]]:
    """Remember three memories, revise one twice, forget it; return its rows as they were
    stored and the needles that must be gone (blob pieces, its own blind terms, its id)."""
    with tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        ada.remember("Ada keeps bees on the roof of the library.")
        ada.remember("Ada's library card expires in June.")
        secret = ada.remember("Ada's safe combination is hidden in the harpsichord " * 40)
        ada.revise(secret.id, "Ada moved the combination into the xylophone case " * 40)
        ada.revise(secret.id, "Ada memorised the combination instead, zither quokka " * 40)
        subjects = (caller_of(ada).pseudonym(), TENANT_SUBJECT)
        rows = memory.driver.versions("acme", "app", subjects, secret.id)
        others = [
            row
            for row in memory.driver.list(
                Filter(tenant="acme", app="app", subjects=subjects), limit=100
            )
            if row.memory_id != secret.id
        ]
        assert len(rows) == 3 and len(others) == 2
        memory.person("ada").forget(secret.id)  # the person forgets at once
    kept_terms = {term for row in others for term in row.terms}
    needles = [secret.id.encode()]
    for row in rows:
        needles += _chunks(row.sealed)
        needles += [term.encode() for term in row.terms if term not in kept_terms]
    return rows, needles


@on_sqlite
def test_a_forgotten_memory_leaves_no_byte_in_the_sqlite_files(memory: Memory) -> None:
    _rows, needles = _forget_one_of_several(memory)
    assert len(needles) > 3 * 10  # blobs of three long versions, their terms, the id
    path = Path(memory.driver.root)  # type: ignore[attr-defined]
    files = [p for p in path.parent.iterdir() if p.name.startswith(path.name)]
    assert [p.name for p in files] == [path.name]  # no journal or WAL left beside it
    raw = path.read_bytes()
    assert [needle for needle in needles if needle in raw] == []
    # And the driver's own view of everything it stores agrees.
    for where, blob in memory.driver.raw_dump():
        assert [needle for needle in needles if needle in blob] == [], where


@on_sqlite
def test_an_erased_embedding_leaves_no_byte_in_the_sqlite_file(store_url: str) -> None:
    # Embeddings are stored as sealed bytes (about 1.5 KB for 384 dimensions): after the
    # erase neither they nor the memory's id are anywhere in the file, the freed pages
    # included.
    with DbDriver(store_url) as driver:
        kept = os.urandom(1552)
        driver.put(make_row(memory_id=memory_id(1)), vector=kept)
        gone = [os.urandom(1552), os.urandom(1552)]
        secret = make_row(memory_id=memory_id(2), terms={"t_gone": 1})
        driver.put(secret, vector=gone[0])
        driver.put(
            dataclasses.replace(secret, version=2, valid_from=secret.valid_from),
            closes=1,
            vector=gone[1],
        )
        raw = Path(driver.root or "").read_bytes()
        assert all(blob[:16] in raw for blob in gone)  # the check can see them
        driver.erase("acme", "app", "p_ada", memory_id(2))
        raw = Path(driver.root or "").read_bytes()
    needles = [memory_id(2).encode()] + [chunk for blob in gone for chunk in _chunks(blob)]
    assert [needle for needle in needles if needle in raw] == []
    assert kept[:16] in raw


def test_the_byte_check_does_see_what_sqlite_keeps_without_secure_delete(tmp_path: Path) -> None:
    # The check above is only worth something if it can fail: with secure_delete off, SQLite
    # leaves a deleted row's bytes in the free space of its page.
    path = tmp_path / "plain.db"
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA secure_delete = OFF")
        connection.execute("CREATE TABLE t (id TEXT, blob BLOB)")
        connection.execute("INSERT INTO t VALUES ('keep', randomblob(200))")
        blob = os.urandom(300)
        connection.execute("INSERT INTO t VALUES ('gone', ?)", (blob,))
        connection.commit()
        connection.execute("DELETE FROM t WHERE id = 'gone'")
        connection.commit()
    connection.close()
    raw = path.read_bytes()
    assert [chunk for chunk in _chunks(blob) if chunk in raw]


@on_postgres
def test_a_forgotten_memory_leaves_no_row_in_postgresql(memory: Memory) -> None:
    _rows, needles = _forget_one_of_several(memory)
    dump = list(memory.driver.raw_dump())
    assert dump  # schema row, the other two memories and their postings
    for where, blob in dump:
        assert [needle for needle in needles if needle in blob] == [], where


# -- a crash in the middle of a write -----------------------------------------------------

CRASHING_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from datetime import UTC, datetime
    from sqlalchemy import event
    from mainsdk_memory.drivers import StoredRow
    from mainsdk_memory.drivers.db._driver import DbDriver

    url, mode = sys.argv[1], sys.argv[2]
    driver = DbDriver(url)
    now = datetime(2026, 3, 2, tzinfo=UTC)

    def die(conn, cursor, statement, *args):
        if statement.startswith("INSERT INTO") and "memory_postings" in statement:
            os.kill(os.getpid(), signal.SIGKILL)  # the version row is written, not committed

    event.listen(driver.engine, "before_cursor_execute", die)
    row = StoredRow(
        tenant="acme", app="app", subject="p_ada", memory_id="mem_" + "2" * 26,
        version=1 if mode == "new" else 2, kind="fact", labels=("personal",),
        trust="inferred", agent="bot", session=None, session_only=False, pinned=False,
        created_at=now, recorded_at=now, valid_from=now, valid_to=None,
        sealed=b"half-written", terms={"t_half": 1}, length=1)
    driver.put(row, closes=None if mode == "new" else 1)
    print("not killed", flush=True)
    """
)


@on_sqlite
@pytest.mark.parametrize("mode", ["new", "revision"])
def test_a_writer_killed_mid_transaction_leaves_nothing_half_written(
    store_url: str, mode: str
) -> None:
    with DbDriver(store_url) as driver:
        if mode == "revision":
            driver.put(make_row(memory_id="mem_" + "2" * 26))
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, store_url, mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    path = Path(make_url(store_url).database or "")
    assert path.with_name(path.name + "-journal").exists()  # a hot journal: it died mid-write
    with DbDriver(store_url) as driver:
        rows = driver.versions("acme", "app", ("p_ada",), "mem_" + "2" * 26)
        assert [(r.version, r.valid_to, r.sealed) for r in rows] == (
            [] if mode == "new" else [(1, None, b"sealed\x00bytes")]
        )
        dump = b"".join(blob for where, blob in driver.raw_dump() if not where.startswith("file"))
        assert b"half-written" not in dump and b"t_half" not in dump
        check = sqlite3.connect(path)
        try:
            assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            check.close()


@on_postgres
@pytest.mark.parametrize("mode", ["new", "revision"])
def test_a_connection_dropped_mid_transaction_leaves_nothing_half_written(
    store_url: str, mode: str
) -> None:
    admin = make_url(store_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with DbDriver(store_url) as driver:
        first = make_row(memory_id=memory_id(7))
        if mode == "revision":
            driver.put(first)

        def drop_connection(conn: object, cursor: object, statement: str, *args: object) -> None:
            if statement.startswith("INSERT INTO") and "memory_postings" in statement:
                pid = cursor.connection.info.backend_pid  # type: ignore[attr-defined]
                with psycopg.connect(admin, autocommit=True) as other:
                    other.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))

        event.listen(driver.engine, "before_cursor_execute", drop_connection)
        row = dataclasses.replace(first, version=2) if mode == "revision" else first
        with pytest.raises(StoreError, match="connection"):
            driver.put(
                dataclasses.replace(row, terms={"t_half": 1}, sealed=b"half-written"),
                closes=1 if mode == "revision" else None,
            )
        event.remove(driver.engine, "before_cursor_execute", drop_connection)
        rows = driver.versions("acme", "app", ("p_ada",), memory_id(7))  # a new connection
        assert [(r.version, r.valid_to) for r in rows] == ([] if mode == "new" else [(1, None)])
        dump = b"".join(blob for _, blob in driver.raw_dump())
        assert b"half-written" not in dump and b"t_half" not in dump
        driver.put(row, closes=1 if mode == "revision" else None)  # and the store still works
        assert driver.versions("acme", "app", ("p_ada",), memory_id(7))[-1].version == row.version


# -- writers racing ------------------------------------------------------------------------


@both
def test_racing_revisions_of_one_version_have_exactly_one_winner(store_url: str) -> None:
    first = make_row(memory_id=memory_id(1))
    with DbDriver(store_url) as setup:
        setup.put(first)
    writers = 6
    drivers = [DbDriver(store_url) for _ in range(writers)]  # each its own connections
    barrier = threading.Barrier(writers)
    outcomes: list[str] = []
    lock = threading.Lock()

    def revise(n: int) -> None:
        row = dataclasses.replace(
            first,
            version=2,
            sealed=f"writer {n}".encode(),
            valid_from=first.valid_from.replace(microsecond=n),
        )
        barrier.wait()
        try:
            drivers[n].put(row, closes=1)
            outcome = f"won {n}"
        except MemoryConflictError:
            outcome = "conflict"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=revise, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for driver in drivers:
        driver.close()
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1 and outcomes.count("conflict") == writers - 1
    with DbDriver(store_url) as check:
        v1, v2 = check.versions("acme", "app", ("p_ada",), memory_id(1))
    assert v2.sealed == f"writer {winners[0].split()[1]}".encode()
    assert v1.valid_to == v2.valid_from and v2.valid_to is None


RACING_PROCESS = textwrap.dedent(
    """
    import sys
    from mainsdk_memory import Memory, MemoryConflictError, tenant
    url, keys, memory_id, name, rounds = sys.argv[1:6]
    wins = conflicts = 0
    with Memory.open(url, keys=keys, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")  # the agent that wrote it
        for i in range(int(rounds)):
            try:
                ada.revise(memory_id, f"{name} revision {i}")
                wins += 1
            except MemoryConflictError:
                conflicts += 1
    print(wins, conflicts)
    """
)


@both
def test_two_processes_revising_one_memory_keep_the_history_linear(
    store_url: str, keys_path: Path
) -> None:
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        record = memory.acting_for("ada", agent="bot").remember("Ada's first note.")
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                RACING_PROCESS,
                store_url,
                str(keys_path),
                record.id,
                name,
                "25",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("left", "right")
    ]
    wins = 0
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        won, _conflicts = map(int, out.split())
        wins += won
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        history = memory.acting_for("ada", agent="bot").history(record.id)
    assert [r.version for r in history] == list(range(1, wins + 2))  # no version lost
    for older, newer in itertools.pairwise(history):
        assert older.valid_to == newer.valid_from
    assert history[-1].valid_to is None
    assert wins >= 25  # every round of the faster writer sees a version to revise
