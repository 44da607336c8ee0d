"""Links in the real drivers, beyond the conformance suite: the local driver's folder (layout,
a batch cut short by a crash, two processes at once) and the db driver's schema version 3
(a version-2 store is refused, then upgraded, and its links are held by row-level security)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from _db_rows import T0, make_row, memory_id
from sqlalchemy import text

from mainsdk_memory import ConfigurationError, InvalidInputError, MemorySDKError
from mainsdk_memory.drivers import (
    Capabilities,
    Filter,
    RelationDriver,
    StoredLink,
    open_driver,
)
from mainsdk_memory.drivers.db import upgrade
from mainsdk_memory.drivers.db._driver import DbDriver
from mainsdk_memory.drivers.db._engine import PG_SCHEMA
from mainsdk_memory.drivers.db._schema import SCHEMA_VERSION
from mainsdk_memory.drivers.local import LocalDriver
from mainsdk_memory.drivers.local import _links as local_links


def _link(n: int, source: str, target: str, *, subject: str = "p_ada") -> StoredLink:
    return StoredLink(
        tenant="acme",
        app="app",
        subject=subject,
        source=source,
        target=target,
        key=f"{n:032x}",
        sealed=f"sealed link {n}".encode() * 3,
    )


def test_the_shipped_drivers_declare_relations_and_the_default_does_not(tmp_path: Path) -> None:
    assert Capabilities().relations is False
    for url in (f"local:{tmp_path / 'store'}", f"sqlite:///{tmp_path / 'm.db'}"):
        driver = open_driver(url)
        try:
            assert driver.capabilities.relations is True
            assert isinstance(driver, RelationDriver)
        finally:
            driver.close()


# -- the local driver's folder ------------------------------------------------------------


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalDriver]:
    with LocalDriver(tmp_path / "store") as driver:
        yield driver


def _files(driver: LocalDriver) -> set[str]:
    return {where for where, _ in driver.raw_dump() if "/_links/" in f"/{where}"}


def test_local_links_live_in_their_folder_one_file_per_end_and_per_key(
    local: LocalDriver,
) -> None:
    a, b = memory_id(1), memory_id(2)
    local.put(make_row(memory_id=a))
    local.put_links([_link(1, a, b), _link(2, b, "ent_0123456789abcdef01234567")])
    ent = "ent_0123456789abcdef01234567"
    one, two = f"{1:032x}", f"{2:032x}"
    assert _files(local) == {
        "acme/app/_links/.lock",
        f"acme/app/_links/_ids/{a}.subjects",
        f"acme/app/_links/_ids/{b}.subjects",
        f"acme/app/_links/_ids/{ent}.subjects",
        f"acme/app/_links/p_ada/{one}.link",
        f"acme/app/_links/p_ada/{two}.link",
        f"acme/app/_links/p_ada/{a}/{one}",
        f"acme/app/_links/p_ada/{b}/{one}",
        f"acme/app/_links/p_ada/{b}/{two}",
        f"acme/app/_links/p_ada/{ent}/{two}",
    }
    # The links folder is not a subject: the memory reads do not see it.
    assert [row.memory_id for row in local.rows("acme", "app")] == [a]
    assert local.expired("acme", "app", [("personal", T0 + timedelta(days=1))]) == [("p_ada", a)]
    local.erase("acme", "app", "p_ada", a)
    assert _files(local) == {
        "acme/app/_links/.lock",
        f"acme/app/_links/_ids/{b}.subjects",
        f"acme/app/_links/_ids/{ent}.subjects",
        f"acme/app/_links/p_ada/{two}.link",
        f"acme/app/_links/p_ada/{b}/{two}",
        f"acme/app/_links/p_ada/{ent}/{two}",
    }
    assert not (local.root / "acme/app/_links/p_ada" / a).exists()  # its emptied folder too


def test_a_link_to_an_end_with_many_links_writes_a_few_small_files(local: LocalDriver) -> None:
    hub = "ent_0123456789abcdef01234567"  # an entity every memory mentions
    local.put_links([_link(n, memory_id(n), hub) for n in range(1, 301)])
    before = {where: len(data) for where, data in local.raw_dump()}
    local.put_links([_link(301, memory_id(301), hub)])
    after = {where: len(data) for where, data in local.raw_dump()}
    changed = {where for where in after if before.get(where) != after[where]}
    assert changed == {
        f"acme/app/_links/p_ada/{301:032x}.link",
        f"acme/app/_links/p_ada/{memory_id(301)}/{301:032x}",
        f"acme/app/_links/p_ada/{hub}/{301:032x}",
        f"acme/app/_links/_ids/{memory_id(301)}.subjects",
    }
    assert max(after.values()) < 1000
    assert len(local.links("acme", "app", ["p_ada"], [hub])) == 301


def test_an_erase_where_no_link_was_ever_stored_creates_no_links_folder(
    local: LocalDriver,
) -> None:
    local.put(make_row(memory_id=memory_id(1)))
    local.erase("acme", "app", "p_ada", memory_id(1))
    local.delete_links("acme", "app", "p_ada", [f"{1:032x}"])
    assert _files(local) == set()
    assert local.links("acme", "app", ["p_ada"], [memory_id(1)]) == []


def test_a_refused_batch_writes_nothing_and_names_no_value(local: LocalDriver) -> None:
    good = _link(1, memory_id(1), memory_id(2))
    with pytest.raises(InvalidInputError) as refused:
        local.put_links([good, _link(2, memory_id(1), "../../escape")])
    assert "target of link 2" in str(refused.value)
    assert "escape" not in str(refused.value)
    assert _files(local) == set()
    assert local.links("acme", "app", ["p_ada"], ["../../escape", "..", "/"]) == []


class _Crash(BaseException):
    """Stands for the process dying (nothing catches it)."""


def test_a_batch_cut_short_after_its_journal_is_finished_by_the_next_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    a, b, c = memory_id(1), memory_id(2), memory_id(3)
    batch = [_link(1, a, b), _link(2, b, c), _link(3, c, a, subject="tenant")]
    real_apply = local_links._apply

    def crash_after_one_file(
        folder: Path, files: dict[str, bytes | None], emptied: list[str]
    ) -> None:
        real_apply(folder, dict(list(files.items())[:1]), [])
        raise _Crash

    with LocalDriver(root) as driver:
        driver.put_links([_link(9, a, c)])
        monkeypatch.setattr(local_links, "_apply", crash_after_one_file)
        with pytest.raises(_Crash):
            driver.put_links([*batch, _link(9, a, b)])  # replaces link 9, too
        monkeypatch.setattr(local_links, "_apply", real_apply)
    assert (root / "acme/app/_links/.journal").exists()
    with LocalDriver(root) as again:  # a reader finishes the batch before it reads
        found = again.links("acme", "app", ["p_ada", "tenant"], [a, b, c])
        assert found == sorted([*batch, _link(9, a, b)], key=lambda x: (x.subject, x.key))
    assert not (root / "acme/app/_links/.journal").exists()


def test_a_batch_cut_short_before_its_journal_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    a, b = memory_id(1), memory_id(2)

    def crash(path: Path, data: bytes, *, sync_folder: bool = True) -> None:
        raise _Crash

    with LocalDriver(root) as driver:
        driver.put_links([_link(1, a, b)])
        monkeypatch.setattr(local_links, "write_private", crash)
        with pytest.raises(_Crash):
            driver.put_links([_link(1, b, a), _link(2, a, a)])
        monkeypatch.undo()
        assert driver.links("acme", "app", ["p_ada"], [a, b]) == [_link(1, a, b)]


def _write_links(root: str, worker: int, count: int) -> None:  # pragma: no cover - a child
    try:
        with LocalDriver(root) as driver:
            for n in range(count):
                source = memory_id(1000 * worker + n)
                # Every worker links to the same memory: the same files, written at once.
                driver.put_links([_link(1000 * worker + n, source, memory_id(1))])
                driver.put_links([_link(1000 * worker + n, source, memory_id(2))])
    except BaseException:
        os._exit(1)
    os._exit(0)


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork"
)
def test_two_processes_writing_links_at_once_lose_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "store")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_write_links, args=(root, w, 25)) for w in (1, 2, 3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    with LocalDriver(root) as driver:
        found = driver.links("acme", "app", ["p_ada"], [memory_id(2)])
        assert len(found) == 75
        assert {link.target for link in found} == {memory_id(2)}
        assert driver.links("acme", "app", ["p_ada"], [memory_id(1)]) == []
        driver.erase("acme", "app", "p_ada", memory_id(2))
        assert driver.links("acme", "app", ["p_ada"], [memory_id(2)]) == []
    assert not list(Path(root).rglob("*.tmp"))


# -- the db driver's schema version 3 -----------------------------------------------------


def _as_version_2(driver: DbDriver) -> None:
    """Take a current store back to schema version 2: no links table (version 3), no tags
    table (version 4), no statistics, packs nor index of special rows (version 5), no row
    for any of those versions."""
    prefix = "" if driver.dialect == "sqlite" else f"{PG_SCHEMA}."
    with driver.engine.begin() as connection:
        for table in ("memory_tags", "memory_links", "memory_stats", "memory_packs"):
            connection.execute(text(f"DROP TABLE {prefix}{table}"))
        connection.execute(text(f"DROP INDEX {prefix}memory_versions_special"))
        connection.execute(text(f"DELETE FROM {prefix}memory_schema WHERE version >= 3"))  # noqa: S608


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_a_version_2_store_is_refused_then_upgraded_to_hold_links(store_url: str) -> None:
    assert SCHEMA_VERSION == 5
    kept = make_row(memory_id=memory_id(1))
    with DbDriver(store_url) as driver:
        driver.put(kept, vector=b"sealed embedding")
        _as_version_2(driver)
    with pytest.raises(ConfigurationError, match="schema version 2; this version") as error:
        DbDriver(store_url)
    assert "memory db upgrade URL" in str(error.value)
    assert upgrade(store_url) == (2, SCHEMA_VERSION)
    with DbDriver(store_url) as driver:
        assert driver.list(Filter("acme", "app", ("p_ada",)), limit=10) == [kept]
        link = _link(1, kept.memory_id, memory_id(2))
        driver.put_links([link])
        assert driver.links("acme", "app", ["p_ada"], [memory_id(2)]) == [link]
        driver.erase("acme", "app", "p_ada", kept.memory_id)
        assert driver.links("acme", "app", ["p_ada"], [memory_id(2)]) == []
        dumped = b"".join(data for _, data in driver.raw_dump())
        assert link.sealed not in dumped


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_db_put_links_is_one_transaction(store_url: str) -> None:
    with DbDriver(store_url) as driver:
        first = _link(1, memory_id(1), memory_id(2))
        driver.put_links([first])
        with pytest.raises(MemorySDKError):
            driver.put_links([_link(1, memory_id(3), memory_id(4)), _link(2, "", memory_id(1))])
        assert driver.links("acme", "app", ["p_ada"], [memory_id(n) for n in range(5)]) == [first]
        many = [_link(n, memory_id(n), memory_id(0)) for n in range(10, 1210)]  # past one chunk
        driver.put_links(many)
        found = driver.links("acme", "app", ["p_ada"], [memory_id(0)])
        assert found == sorted(many, key=lambda x: x.key)
        driver.delete_links("acme", "app", "p_ada", [link.key for link in many[:700]])
        assert driver.links("acme", "app", ["p_ada"], [memory_id(0)]) == many[700:]
