"""Opening a db store: URLs, the versioned schema, ``memory db upgrade``, and clear errors."""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from _db_rows import instant, make_row, make_v1_store, memory_id, random_rows
from _postgres import LazyServer, TestPostgres
from sqlalchemy.engine import make_url

from mainsdk_memory import ConfigurationError, Memory, StoreError, tenant
from mainsdk_memory._cli import main
from mainsdk_memory.drivers import Filter, VectorEntry, bm25_rank, open_driver
from mainsdk_memory.drivers.db import upgrade
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.drivers.db._engine import PG_SCHEMA
from mainsdk_memory.drivers.db._schema import PACKS, SCHEMA, SCHEMA_VERSION, STATS, TAGS


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("sqlite://", "needs a database file"),
        ("sqlite:///:memory:", "needs a database file"),
        ("sqlite+aiosqlite:///x.db", "not supported"),
        ("sqlite:////no/such/folder/x.db", "does not exist"),
        ("sqlite:///x.db?mode=ro", "no query options"),
        ("postgresql+psycopg2://u@h/db", "psycopg 3"),
        ("postgresql+asyncpg://u@h/db", "psycopg 3"),
        ("postgresql+psycopg://u@h", "names no database"),
        ("postgresql+psycopg://u@h:notaport/db", "not a valid database URL"),
    ],
)
def test_bad_urls_say_what_a_good_one_looks_like(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        open_driver(url)


def test_an_unreachable_server_is_a_store_error_that_names_the_problem() -> None:
    with pytest.raises(StoreError) as error:
        open_driver("postgresql+psycopg://nobody:secret-pw@127.0.0.1:1/db?connect_timeout=2")
    message = str(error.value)
    assert "Check the URL" in message and "refused" in message.lower()
    assert "secret-pw" not in message


def test_a_new_sqlite_file_gets_the_schema_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with DbDriver(f"sqlite:///{path}"):
        pass
    assert path.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT max(version) FROM memory_schema").fetchone() == (
            SCHEMA_VERSION,
        )
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    connection.close()
    assert upgrade(f"sqlite:///{path}") == (SCHEMA_VERSION, SCHEMA_VERSION)


def test_a_sqlite_database_with_other_tables_needs_an_explicit_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    connection.close()
    url = f"sqlite:///{path}"
    with pytest.raises(ConfigurationError, match="memory db upgrade URL"):
        DbDriver(url)
    with sqlite3.connect(path) as connection:  # nothing was created on the way
        names = {n for (n,) in connection.execute("SELECT name FROM sqlite_master")}
    connection.close()
    assert names == {"orders"}
    assert main(["db", "upgrade", url]) == 0
    with DbDriver(url) as driver:
        assert driver.dialect == "sqlite"


def test_postgresql_needs_memory_db_upgrade_and_never_runs_ddl_on_open(
    postgres: TestPostgres, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres.new_database(schema=False)
    try:
        with pytest.raises(ConfigurationError, match="memory db upgrade URL"):
            DbDriver(url)
        with psycopg.connect(postgres.conninfo(make_url(url).database), autocommit=True) as c:
            assert c.execute("SELECT to_regnamespace(%s)", (PG_SCHEMA,)).fetchone() == (None,)
        assert main(["db", "upgrade", url]) == 0
        created = f"Created the mainsdk-memory schema, version {SCHEMA_VERSION}."
        assert created in capsys.readouterr().out
        assert main(["db", "upgrade", url]) == 0
        assert "nothing to do" in capsys.readouterr().out
        with DbDriver(url) as driver:
            assert driver.dialect == "postgresql"
    finally:
        postgres.drop(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def bare_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with no mainsdk-memory schema at all (a new SQLite file, a new database)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    postgres: TestPostgres = request.getfixturevalue("postgres")
    url = postgres.new_database(schema=False)
    try:
        yield url
    finally:
        postgres.drop(url)


def test_a_version_1_store_is_refused_then_upgraded_in_place_with_its_rows(
    bare_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(41)
    vocabulary = [f"t_{i}" for i in range(8)]
    rows = random_rows(rng, None, 40, vocabulary=vocabulary)
    rows += random_rows(rng, None, 10, tenant="globex", vocabulary=vocabulary)
    make_v1_store(bare_url, rows)
    with pytest.raises(ConfigurationError, match="schema version 1; this version") as error:
        DbDriver(bare_url)
    assert "memory db upgrade URL" in str(error.value)
    assert main(["db", "upgrade", bare_url]) == 0
    assert f"from version 1 to {SCHEMA_VERSION}" in capsys.readouterr().out
    assert upgrade(bare_url) == (SCHEMA_VERSION, SCHEMA_VERSION)
    with DbDriver(bare_url) as driver:
        for tenant in ("acme", "globex"):
            mine = [row for row in rows if row.tenant == tenant]
            for session, as_of in ((None, None), ("s1", None), (None, instant(rng))):
                where = Filter(
                    tenant=tenant,
                    app="app",
                    subjects=("p_ada", "p_bob", "tenant"),
                    session=session,
                    as_of=as_of,
                )
                matching = [row for row in mine if where.matches(row)]
                want = sorted(matching, key=lambda r: (r.created_at, r.memory_id), reverse=True)
                assert driver.list(where, limit=100) == want
                query = [{"t_1"}, {"t_2", "t_3"}]
                found = driver.search(where, query, top_k=10)
                expected = bm25_rank(matching, query, 10)
                assert [(r, round(x, 9)) for r, x in found] == [
                    (r, round(x, 9)) for r, x in expected
                ]
                assert driver.vectors(where) == []
            some = mine[0]
            assert driver.versions(tenant, some.app, (some.subject,), some.memory_id) == [
                row for row in mine if row.memory_id == some.memory_id
            ]
        # The upgraded store takes new memories, with embeddings, next to the old ones.
        new = make_row(memory_id=memory_id(10_000), terms={"t_1": 9}, length=9)
        driver.put(new, vector=b"sealed embedding")
        where = Filter(tenant="acme", app="app", subjects=("p_ada",))
        assert driver.search(where, [{"t_1"}], top_k=1)[0][0] == new
        assert driver.vectors(where) == [
            VectorEntry("p_ada", new.memory_id, 1, b"sealed embedding")
        ]
        erased = next(row for row in rows if row.tenant == "acme" and row.version == 2)
        driver.erase("acme", erased.app, erased.subject, erased.memory_id)
        assert driver.versions("acme", erased.app, (erased.subject,), erased.memory_id) == []
        needle = f"acme\x1f{erased.app}\x1f{erased.memory_id}".encode()  # globex reuses ids
        assert [where for where, blob in driver.raw_dump() if needle in blob] == []


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_a_version_3_store_gets_the_tags_table_and_its_rows_no_tags(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        make_row(memory_id=memory_id(n), terms={"t_x": n + 1}, length=n + 1) for n in range(3)
    ]
    with DbDriver(store_url) as driver:
        for row in rows:
            driver.put(row)
        # Back to version 3 as that release left it: version 4 only added memory_tags,
        # version 5 the live statistics, the packs and the index of special rows.
        with driver.engine.begin() as connection:
            TAGS.drop(connection)
            STATS.drop(connection)
            PACKS.drop(connection)
            schema = "" if driver.dialect == "sqlite" else "mainsdk_memory."
            connection.exec_driver_sql(f"DROP INDEX {schema}memory_versions_special")
            connection.execute(SCHEMA.delete().where(SCHEMA.c.version >= 4))
    with pytest.raises(ConfigurationError, match="schema version 3; this version"):
        DbDriver(store_url)
    assert main(["db", "upgrade", store_url]) == 0
    assert f"from version 3 to {SCHEMA_VERSION}" in capsys.readouterr().out
    key = "c0ffee" + "0" * 26
    with DbDriver(store_url) as driver:
        where = Filter(tenant="acme", app="app", subjects=("p_ada",))
        old = sorted(rows, key=lambda r: r.memory_id, reverse=True)
        assert driver.list(where, limit=10) == old  # every field, and no tags
        assert all(row.tags == frozenset() for row in driver.list(where, limit=10))
        tagged = make_row(memory_id=memory_id(9), tags=frozenset({key}), terms={"t_x": 1})
        driver.put(tagged)
        by_key = dataclasses.replace(where, tags=(frozenset({key}),))
        assert driver.list(by_key, limit=2) == [tagged]
        assert driver.list(dataclasses.replace(where, tags_absent=frozenset({key})), limit=9) == old
        assert [row for row, _ in driver.search(by_key, [{"t_x"}], top_k=5)] == [tagged]
        # Version 5 counted the old rows: the packed path ranks them as the reference does.
        assert driver.search(where, [{"t_x"}], top_k=5) == bm25_rank([*rows, tagged], [{"t_x"}], 5)
        driver.erase("acme", "app", "p_ada", tagged.memory_id)
        assert [where for where, blob in driver.raw_dump() if key.encode() in blob] == []


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_a_newer_schema_is_refused_with_what_to_do(store_url: str) -> None:
    DbDriver(store_url).close()  # SQLite: creates the file's schema
    with DbDriver(store_url) as driver, driver.engine.begin() as connection:
        connection.execute(
            SCHEMA.insert().values(
                version=SCHEMA_VERSION + 1,
                description="from the future",
                applied_at=datetime.now(UTC),
            )
        )
    with pytest.raises(ConfigurationError, match="newer than this version"):
        DbDriver(store_url)
    with pytest.raises(ConfigurationError, match="newer than this version"):
        upgrade(store_url)
    assert main(["db", "upgrade", store_url]) == 1


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_the_database_holds_nothing_of_the_key_store(store_url: str, keys_path: Path) -> None:
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        memory.acting_for("ada", agent="bot").remember("Ada's locker code is in her notes.")
        memory.acting_for("bob", agent="bot").remember("Bob's locker is next to Ada's.")
        dump = b"".join(blob for _, blob in memory.driver.raw_dump())
    secrets: set[bytes] = set()
    for path in keys_path.rglob("*.json"):
        document = json.loads(path.read_bytes())
        stack = [document]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, str) and len(item) >= 16:
                secrets.add(item.encode())
    assert secrets
    assert [s for s in secrets if s in dump] == []
    for path in keys_path.rglob("*"):
        if path.is_file():
            assert path.name.encode() not in dump


def test_import_works_without_the_db_dependencies_and_opening_says_what_to_install(
    tmp_path: Path,
) -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["sqlalchemy"] = None  # as if SQLAlchemy were not installed
        import mainsdk_memory
        from mainsdk_memory import ConfigurationError
        from mainsdk_memory.drivers import Filter, VectorEntry, bm25_rank, open_driver
        try:
            open_driver(sys.argv[1])
        except ConfigurationError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, f"sqlite:///{tmp_path / 'x.db'}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "pip install 'mainsdk-memory[db]'" in done.stdout
    assert not (tmp_path / "x.db").exists()


def test_a_postgresql_that_cannot_start_fails_under_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    attempts = []

    def broken() -> TestPostgres:
        attempts.append(1)
        raise OSError("no server binary")

    server = LazyServer(broken)
    monkeypatch.setenv("CI", "true")
    for _ in range(2):
        with pytest.raises(pytest.fail.Exception, match="could not start: OSError"):
            server.get()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no server binary"):
        server.get()
    assert attempts == [1]  # tried once per session, not once per test
